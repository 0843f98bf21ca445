// What the stores send first on every connection: AUTH with the password (and an ACL user's
// name), and SELECT of a database. A refusal of either leaves calls unavailable, never hanging,
// and the connection keeps retrying, so fixing the server needs no restart of Sluice.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "store/redis/synced_store.h"
#include "store/redis_store_fixture.h"

namespace sluice {
namespace {

using testing::kShortTimeoutUs;
using testing::RedisStoreTest;

// Syncs until a sync succeeds (the first fail while the node connects); false after 3 s.
bool syncUntilOk(SyncedStore& node) {
  for (const auto deadline = testing::SteadyClock::now() + std::chrono::seconds(3);
       testing::SteadyClock::now() < deadline;) {
    if (node.syncNow()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling, not timing
  }
  return false;
}

class RedisAuthTest : public RedisStoreTest {
 protected:
  // A store on the fixture's server with these credentials, not waited for: it may never be
  // let in.
  std::unique_ptr<RedisStore> storeWith(redis::RedisAuth auth, int database = 0,
                                        const testing::RedisServer* server = nullptr) {
    RedisStoreOptions options;
    options.port = static_cast<std::uint16_t>((server != nullptr ? server : &server_)->port());
    options.timeout_us = kShortTimeoutUs;
    options.auth = std::move(auth);
    options.database = database;
    return std::make_unique<RedisStore>(options);
  }

  // Commands to the server on a connection made before any password was set: it stays let in.
  testing::RedisConnection admin_ = server_.connect();
};

TEST_F(RedisAuthTest, DecidesWithThePassword) {
  ASSERT_EQ(admin_.command({"CONFIG", "SET", "requirepass", "s3cret"}).text, "OK");
  auto store = storeWith({.username = "", .password = "s3cret"});
  ASSERT_TRUE(waitUntilDeciding(*store));
  EXPECT_EQ(applyOne(*store, five_per_day_, "k", 1).remaining, 4u);
  EXPECT_EQ(applyOne(*store, five_per_day_, "k", 1).remaining, 3u);

  auto without = storeWith({});  // NOAUTH for every command
  EXPECT_FALSE(waitUntilDeciding(*without, std::chrono::milliseconds(500)));
  ASSERT_TRUE(callIsUnavailable(without, "k"));
}

TEST_F(RedisAuthTest, AWrongPasswordIsUnavailableUntilTheServerTakesIt) {
  ASSERT_EQ(admin_.command({"CONFIG", "SET", "requirepass", "s3cret"}).text, "OK");
  auto store = storeWith({.username = "", .password = "rotated"});
  EXPECT_FALSE(waitUntilDeciding(*store, std::chrono::milliseconds(500)));
  ASSERT_TRUE(callIsUnavailable(store, "k"));
  // The operator rotates the server's password to the one Sluice was given.
  ASSERT_EQ(admin_.command({"CONFIG", "SET", "requirepass", "rotated"}).text, "OK");
  ASSERT_TRUE(waitUntilDeciding(*store, std::chrono::seconds(3)));
  EXPECT_EQ(applyOne(*store, five_per_day_, "k", 1).remaining, 4u);
}

TEST_F(RedisAuthTest, DecidesAsAnAclUser) {
  ASSERT_FALSE(admin_.command({"ACL", "SETUSER", "limiter", "on", ">pw", "~*", "+@all"}).isError());
  ASSERT_EQ(admin_.command({"CONFIG", "SET", "requirepass", "other"}).text, "OK");
  auto store = storeWith({.username = "limiter", .password = "pw"});
  ASSERT_TRUE(waitUntilDeciding(*store));
  EXPECT_EQ(applyOne(*store, five_per_day_, "k", 1).remaining, 4u);
  // The same password as the default user is not the limiter's: refused.
  auto as_default = storeWith({.username = "", .password = "pw"});
  EXPECT_FALSE(waitUntilDeciding(*as_default, std::chrono::milliseconds(500)));
}

TEST_F(RedisAuthTest, SyncedStoreSyncsWithThePassword) {
  ASSERT_EQ(admin_.command({"CONFIG", "SET", "requirepass", "s3cret"}).text, "OK");
  SyncedStore store(SyncedStoreOptions{.host = "127.0.0.1",
                                       .port = static_cast<std::uint16_t>(server_.port()),
                                       .timeout_us = kShortTimeoutUs,
                                       .key_prefix = "sluice:",
                                       .auth = {.username = "", .password = "s3cret"},
                                       .sync_interval_us = 10'000});
  EXPECT_TRUE(applyOne(store, five_per_day_, "k", 2).allowed);
  ASSERT_TRUE(syncUntilOk(store));
  EXPECT_EQ(admin_.command({"KEYS", "*sluice:k|*"}).elements.size(), 1u);  // pushed
}

// A password given for a Redis that has none is refused by Redis (as by lyft's client): the
// store says unavailable rather than quietly running without the AUTH it was told to use.
TEST_F(RedisAuthTest, APasswordForARedisWithoutOneIsRefused) {
  auto store = storeWith({.username = "", .password = "s3cret"});
  EXPECT_FALSE(waitUntilDeciding(*store, std::chrono::milliseconds(500)));
  ASSERT_TRUE(callIsUnavailable(store, "k"));
}

// store.database: the keys live in the database SELECTed, after AUTH.
TEST_F(RedisAuthTest, SelectsTheDatabase) {
  const testing::RedisServer four_databases("/usr/bin/redis-server", 4);
  testing::RedisConnection admin = four_databases.connect();
  ASSERT_EQ(admin.command({"CONFIG", "SET", "requirepass", "s3cret"}).text, "OK");
  auto store = storeWith({.username = "", .password = "s3cret"}, 2, &four_databases);
  ASSERT_TRUE(waitUntilDeciding(*store));
  EXPECT_EQ(applyOne(*store, five_per_day_, "k", 1).remaining, 4u);
  ASSERT_EQ(admin.command({"SELECT", "2"}).text, "OK");
  EXPECT_EQ(admin.command({"KEYS", "*sluice:k*"}).elements.size(), 1u);
  ASSERT_EQ(admin.command({"SELECT", "0"}).text, "OK");
  EXPECT_TRUE(admin.command({"KEYS", "*sluice:k*"}).elements.empty());
}

// A Unix socket (a host that is a path): the redis and synced stores decide through it.
TEST_F(RedisAuthTest, DecidesThroughAUnixSocket) {
  const testing::RedisServer server("/usr/bin/redis-server", 1, /*unix_socket=*/true);
  RedisStoreOptions options;
  options.host = server.socketPath();
  options.port = 0;
  options.timeout_us = kShortTimeoutUs;
  RedisStore store(options);
  ASSERT_TRUE(waitUntilDeciding(store));
  EXPECT_EQ(applyOne(store, five_per_day_, "k", 1).remaining, 4u);
  EXPECT_EQ(applyOne(store, five_per_day_, "k", 1).remaining, 3u);

  SyncedStore synced(SyncedStoreOptions{.host = server.socketPath(),
                                        .port = 0,
                                        .timeout_us = kShortTimeoutUs,
                                        .key_prefix = "synced:",
                                        .sync_interval_us = 10'000});
  EXPECT_TRUE(applyOne(synced, five_per_day_, "k", 1).allowed);
  EXPECT_TRUE(syncUntilOk(synced));
}

// A server that takes the TCP connection and never answers the AUTH or SELECT (a path gone silent
// right after the connect, a proxy holding it): the connect deadline covers the setup, so the
// connection is dropped and made again rather than left setting up for good, unused.
TEST_F(RedisAuthTest, ASetupWithoutAnAnswerIsRetried) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener, 16), 0);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);

  RedisStoreOptions options;
  options.port = ntohs(address.sin_port);
  options.connections = 1;
  options.database = 1;  // a setup command to wait on
  options.timeout_us = kShortTimeoutUs;
  auto store = std::make_unique<RedisStore>(options);
  // Accepts (and keeps, unanswered) what connects, until a second connection comes: bounded.
  std::vector<int> accepted;
  const auto deadline = testing::SteadyClock::now() + std::chrono::seconds(10);
  while (accepted.size() < 2 && testing::SteadyClock::now() < deadline) {
    pollfd readable{.fd = listener, .events = POLLIN, .revents = 0};
    if (::poll(&readable, 1, 100) == 1) accepted.push_back(::accept(listener, nullptr, nullptr));
  }
  EXPECT_GE(accepted.size(), 2u) << "the unanswered connection was never made again";
  store.reset();
  for (const int fd : accepted) ::close(fd);
  ::close(listener);
}

// A database the server does not have: unavailable, as for a refused AUTH.
TEST_F(RedisAuthTest, ADatabaseOutOfRangeIsUnavailable) {
  auto store = storeWith({}, 3);  // the fixture's server has one database
  EXPECT_FALSE(waitUntilDeciding(*store, std::chrono::milliseconds(500)));
  ASSERT_TRUE(callIsUnavailable(store, "k"));
}

}  // namespace
}  // namespace sluice
