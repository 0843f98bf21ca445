// What answers on the Redis port may not be Redis running Sluice's script (a proxy, another
// server): a reply of another shape fails the call, and the log says so (only the degraded
// metric showed it), in redis and in cluster mode; a server that drops each connection after
// answering on it is not reconnected to at once each time, nor logged each time.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "store/redis/cluster_store.h"
#include "store/redis/redis_store.h"
#include "store/redis/server_pool.h"
#include "support/captured_log.h"
#include "support/specs.h"

namespace sluice {
namespace {

// A server on a loopback port that answers "+OK" to every command (RESP arrays of bulk
// strings) but CLUSTER SLOTS, on a thread of its own, until it goes away; or, `then_close`, to
// the first command of each connection, which it then closes. To CLUSTER SLOTS it names itself
// the master of every slot, so a cluster store sends it everything. Bounded: it polls in 50 ms
// steps.
class AnswersOkToEverything {
 public:
  explicit AnswersOkToEverything(bool then_close = false) : then_close_(then_close) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      ADD_FAILURE() << "no listener";
    }
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~AnswersOkToEverything() {
    stop_ = true;
    thread_.join();
    for (const Client& client : clients_) ::close(client.fd);
    ::close(listener_);
  }
  AnswersOkToEverything(const AnswersOkToEverything&) = delete;
  AnswersOkToEverything& operator=(const AnswersOkToEverything&) = delete;
  [[nodiscard]] std::uint16_t port() const { return port_; }
  [[nodiscard]] std::size_t accepted() const { return accepted_.load(); }

 private:
  struct Client {
    int fd;
    std::string pending;  // bytes of a command not yet whole
    bool done = false;    // closed by the peer, or by then_close
  };

  void serve() {
    while (!stop_) {
      std::vector<pollfd> watched{{.fd = listener_, .events = POLLIN, .revents = 0}};
      for (const Client& client : clients_) watched.push_back({client.fd, POLLIN, 0});
      if (::poll(watched.data(), watched.size(), 50) <= 0) continue;
      if (watched[0].revents & POLLIN) {
        clients_.push_back({::accept(listener_, nullptr, nullptr), ""});
        ++accepted_;
      }
      for (std::size_t i = 1; i < watched.size(); ++i) {
        if (!(watched[i].revents & (POLLIN | POLLHUP))) continue;
        char chunk[4096];
        Client& client = clients_[i - 1];
        const ssize_t got = ::read(watched[i].fd, chunk, sizeof chunk);
        if (got <= 0) {
          client.done = true;
          continue;
        }
        client.pending.append(chunk, static_cast<std::size_t>(got));
        for (std::size_t whole = commandLength(client.pending); whole > 0;
             whole = commandLength(client.pending)) {
          const std::string reply = replyTo(std::string_view(client.pending).substr(0, whole));
          client.pending.erase(0, whole);
          (void)::write(client.fd, reply.data(), reply.size());
          if (then_close_) {
            client.done = true;
            break;
          }
        }
      }
      // Closed here, not watched again: a socket at its end is always readable.
      std::erase_if(clients_, [](const Client& client) {
        if (client.done) ::close(client.fd);
        return client.done;
      });
    }
  }

  [[nodiscard]] std::string replyTo(std::string_view command) const {
    if (command.find("$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n") == std::string_view::npos) {
      return "+OK\r\n";
    }
    return "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:" + std::to_string(port_) +
           "\r\n";
  }

  // The length of the whole command at the start of `bytes`, or 0 while it is incomplete.
  static std::size_t commandLength(const std::string& bytes) {
    std::size_t at = 0;
    const auto number = [&](char type) -> long {
      if (at >= bytes.size() || bytes[at] != type) return -1;
      const std::size_t end = bytes.find("\r\n", at);
      if (end == std::string::npos) return -1;
      long value = -1;
      std::from_chars(bytes.data() + at + 1, bytes.data() + end, value);
      at = end + 2;
      return value;
    };
    const long arguments = number('*');
    for (long i = 0; i < arguments; ++i) {
      const long length = number('$');
      if (length < 0 || at + static_cast<std::size_t>(length) + 2 > bytes.size()) return 0;
      at += static_cast<std::size_t>(length) + 2;
    }
    return arguments < 0 ? 0 : at;
  }

  bool then_close_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::vector<Client> clients_;
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> accepted_{0};
  std::thread thread_;
};

TEST(NotRedisServerTest, AReplyOfAnotherShapeIsUnavailableAndLogged) {
  const testing::CapturedLog log;
  AnswersOkToEverything server;
  RedisStoreOptions options;
  options.port = server.port();
  options.timeout_us = 2 * kMicrosPerSecond;
  RedisStore store(options);
  const LimitSpec per_day = testing::spec(Algorithm::kFixedWindow, "5/day");
  const LimitCheck check{"k", &per_day, 1};
  const SystemClock clock;
  // Until the connection is up, calls fail unsent; then on the reply. Bounded: 200 calls.
  constexpr std::string_view kLine = "a script call's reply cannot be read";
  int replies_seen = 0;
  for (int i = 0; i < 200 && replies_seen < 3; ++i) {
    Outcome outcome;
    EXPECT_EQ(store.apply(std::span(&check, 1), clock, std::span(&outcome, 1)),
              StoreStatus::kUnavailable);
    if (testing::countOf(log.text(), std::string(kLine)) > 0) {
      ++replies_seen;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling a connecting client
    }
  }
  EXPECT_EQ(replies_seen, 3) << log.text();
  EXPECT_EQ(testing::countOf(log.text(), std::string(kLine)), 1u)
      << log.text();  // once, for the three: the log is throttled
}

// The same through the cluster store, whose decide replies its routing hands on: the master
// that gave one it cannot read is named in the log, once for several. (Only the degraded metric
// showed it.)
TEST(NotRedisServerTest, AClusterMastersReplyOfAnotherShapeIsLogged) {
  const testing::CapturedLog log;
  AnswersOkToEverything server;
  const std::string address = "127.0.0.1:" + std::to_string(server.port());
  RedisClusterStore store(RedisClusterStoreOptions{
      .seeds = {address}, .connections = 1, .timeout_us = 2 * kMicrosPerSecond});
  for (int i = 0; i < 400 && !store.ready(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling for the slot table
  }
  ASSERT_TRUE(store.ready()) << log.text();
  const LimitSpec per_day = testing::spec(Algorithm::kFixedWindow, "5/day");
  const LimitCheck check{"k", &per_day, 1};
  const SystemClock clock;
  for (int i = 0; i < 3; ++i) {
    Outcome outcome;
    EXPECT_EQ(store.apply(std::span(&check, 1), clock, std::span(&outcome, 1)),
              StoreStatus::kUnavailable);
  }
  const std::string line = "redis " + address + ": a script call's reply cannot be read";
  EXPECT_EQ(testing::countOf(log.text(), line), 1u) << log.text();
}

// A server that answers, then drops the connection, over and over: the backoff grows as for a
// server that drops every connection unanswered, and the log tells the first outage, not each.
// (Each answer reset the backoff to its first 20 ms, and each cycle logged two lines: about 75
// a second.)
TEST(NotRedisServerTest, AServerThatAnswersThenDropsIsNotHammered) {
  const testing::CapturedLog log;
  AnswersOkToEverything server(/*then_close=*/true);
  boost::asio::io_context io;
  redis::ServerPool pool(io, "127.0.0.1", server.port(), 1);
  pool.start();
  io.run_for(std::chrono::milliseconds(1500));
  const std::string text = log.text();
  // 20, 40, 80, 160, then 250 ms between connects, each halved at most by jitter: 10, 30, 70,
  // 150, then every 125 ms or more, 15 connects at most in the 1.5 s; reconnected to 20 ms
  // after each answer, it made about a hundred.
  EXPECT_LE(server.accepted(), 16u);
  EXPECT_GE(server.accepted(), 3u);  // it did answer and drop, more than once
  EXPECT_EQ(testing::countOf(text, "unreachable"), 1u) << text;
  EXPECT_LE(testing::countOf(text, "connected again"), 1u) << text;
}

}  // namespace
}  // namespace sluice
