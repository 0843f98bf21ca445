// ServerPool's deadline against a real redis-server, on an io_context the test runs by hand so
// it can choose which handlers run in which order; and its connections on a path that goes
// silent, through a proxy that black-holes them, against a Redis that is frozen.
#include "store/redis/server_pool.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>

#include "support/captured_log.h"
#include "support/frozen_redis.h"
#include "support/redis_server.h"
#include "support/specs.h"
#include "support/tcp_proxy.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

// Runs `io` until `done()` or about two seconds pass.
template <typename Done>
bool runUntil(boost::asio::io_context& io, Done done) {
  for (int turn = 0; turn < 200 && !done(); ++turn) io.run_one_for(10ms);
  return done();
}

// A PING over the pool, answered with the reply's text or "failed: <why>".
void ping(redis::ServerPool& pool, std::chrono::microseconds timeout,
          std::optional<std::string>& answer) {
  pool.command({"PING"}, timeout, [&answer](const redisReply* reply, std::string_view error) {
    answer =
        reply != nullptr ? std::string(reply->str, reply->len) : "failed: " + std::string(error);
  });
}

// A decide call of one check on `key` (a daily limit, so nothing refills during a test).
std::shared_ptr<const redis::ScriptCall> decideCall(std::string_view key) {
  static const LimitSpec day = testing::spec(Algorithm::kFixedWindow, "100/day");
  const LimitCheck check{key, &day, 1, {}};
  return std::make_shared<const redis::ScriptCall>(
      redis::ScriptCall::make("decide", "test:", {&check, 1}, std::nullopt));
}

// Starts `pool` and waits for a PING sent behind its script load, so that both are answered.
bool startAndWarmUp(boost::asio::io_context& io, redis::ServerPool& pool) {
  pool.start();
  if (!runUntil(io, [&] { return pool.connected(); })) return false;
  std::optional<std::string> warm_up;
  ping(pool, 2s, warm_up);
  return runUntil(io, [&] { return warm_up.has_value(); }) && warm_up == "PONG";
}

// The loop ran late: the deadline's handler is queued to run, and Redis's reply reaches the
// socket before it runs. The reply came no later than the loop could look, so it counts. (Under
// CPU pressure this is common: treating it as a timeout denied good decisions and tripped the
// circuit breaker.) The order of handlers below is Boost 1.81's scheduler's: a posted handler
// runs before the timer handler that the next reactor pass queues.
TEST(ServerPoolTest, AReplyReceivedBeforeTheDeadlineRunsIsOnTime) {
  testing::RedisServer server;
  testing::RedisConnection barrier = server.connect();
  boost::asio::io_context io;
  redis::ServerPool pool(io, "127.0.0.1", static_cast<std::uint16_t>(server.port()), 1);
  ASSERT_TRUE(startAndWarmUp(io, pool));

  testing::Frozen frozen(testing::redisPid(server));
  std::optional<std::string> answer;
  const auto timeout = 20ms;
  const auto sent_at = std::chrono::steady_clock::now();
  ping(pool, timeout, answer);
  io.poll();  // writes the PING; a stopped Redis cannot answer it
  ASSERT_FALSE(answer.has_value());
  // Waiting out the deadline (not timing anything): the next loop turn finds its timer due.
  std::this_thread::sleep_until(sent_at + timeout + 5ms);
  // Queued ahead of that turn's handlers: while it runs, Redis wakes up and answers. The
  // barrier's replies come after Redis has written the PING's (it answers in order of rounds).
  boost::asio::post(io, [&] {
    frozen.thaw();
    for (int i = 0; i < 3; ++i) barrier.command({"PING"});
  });
  io.poll();
  EXPECT_EQ(answer, "PONG");
}

// Starts a pool of two connections through `proxy` and waits until both are up and answered.
bool startThroughProxy(boost::asio::io_context& io, redis::ServerPool& pool,
                       const testing::TcpProxy& proxy) {
  if (!startAndWarmUp(io, pool)) return false;
  return runUntil(io, [&] { return proxy.accepted() == 2; });
}

// Sends PINGs that each time out after 20 ms, one after another, until one is answered PONG or
// `stop()` says so (at most `tries` of them, or 20 seconds). Says whether one was answered.
template <typename Stop>
bool pingUntilAnswered(boost::asio::io_context& io, redis::ServerPool& pool, int tries, Stop stop) {
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  for (int attempt = 0; attempt < tries && !stop(); ++attempt) {
    if (std::chrono::steady_clock::now() > give_up) break;
    std::optional<std::string> answer;
    ping(pool, 20ms, answer);
    runUntil(io, [&] { return answer.has_value(); });
    if (answer == "PONG") return true;
    io.run_for(5ms);  // a connection dropped just now reconnects meanwhile
  }
  return false;
}

// The connections a pool has through a black-holed path (no FIN, no RST: everything sent on
// them vanishes) stay "connected" until the kernel gives up on them, and every call on them
// times out. A fresh connection's PING is answered, so the pool drops them and reconnects.
TEST(ServerPoolTest, ConnectionsOnASilentPathAreReplaced) {
  testing::RedisServer server;
  testing::TcpProxy proxy(server.port());
  boost::asio::io_context io;
  redis::ServerPool pool(io, "127.0.0.1", proxy.port(), 2);
  ASSERT_TRUE(startThroughProxy(io, pool, proxy));

  proxy.blackHole();
  EXPECT_TRUE(pingUntilAnswered(io, pool, 300, [] { return false; }));
  // The probe's connection and the new ones, made through the proxy after the black hole.
  EXPECT_GT(proxy.accepted(), 2u);
}

// The ids of the clients connected to `server` now, but for `admin`'s own.
std::set<std::string> clientIds(testing::RedisConnection& admin) {
  const std::string own = std::to_string(admin.command({"CLIENT", "ID"}).integer);
  std::istringstream lines(admin.command({"CLIENT", "LIST"}).text);
  std::set<std::string> ids;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("id=", 0) != 0) continue;
    const std::string id = line.substr(3, line.find(' ') - 3);
    if (id != own) ids.insert(id);
  }
  return ids;
}

// A frozen Redis (a slow command, a paused VM) is silent too, but a fresh connection's PING is
// not answered either: the pool keeps its connections, so the calls queued on them run when
// Redis resumes, and their late replies come (for the caller to refund).
TEST(ServerPoolTest, AFrozenRedisKeepsItsConnections) {
  testing::RedisServer server;
  testing::RedisConnection admin = server.connect();
  const pid_t pid = testing::redisPid(server);
  const std::set<std::string> before = clientIds(admin);
  testing::TcpProxy proxy(server.port());
  boost::asio::io_context io;
  redis::ServerPool pool(io, "127.0.0.1", proxy.port(), 2);
  ASSERT_TRUE(startThroughProxy(io, pool, proxy));
  std::set<std::string> pool_clients;
  for (const std::string& id : clientIds(admin)) {
    if (!before.contains(id)) pool_clients.insert(id);
  }
  ASSERT_EQ(pool_clients.size(), 2u);

  const auto decide = decideCall("frozen");
  int sent = 0;
  int late = 0;
  {
    testing::Frozen frozen(pid);
    // Calls time out one after another for longer than the silence limit: past its first
    // second a probe is opened. Then none for longer than the probe's timeout, so that it has
    // gone unanswered, and no other is running, when Redis resumes.
    const auto frozen_at = std::chrono::steady_clock::now();
    for (int attempt = 0; attempt < 200 && std::chrono::steady_clock::now() < frozen_at + 1500ms;
         ++attempt) {
      std::optional<std::string> failed;
      pool.call(
          decide, 20ms,
          [&failed](const redisReply* reply, std::string_view error) {
            failed = reply == nullptr ? std::string(error) : "answered";
          },
          [&late](const redisReply*) { ++late; });
      ++sent;
      runUntil(io, [&] { return failed.has_value(); });
      EXPECT_EQ(failed, "timed out");
    }
    EXPECT_GT(proxy.accepted(), 2u) << "no probe was opened";
    io.run_until(frozen_at + 2800ms);
  }
  // Every call queued while Redis was frozen runs now, on the connections it was sent on.
  runUntil(io, [&] { return late == sent; });
  EXPECT_EQ(late, sent);
  const std::set<std::string> after = clientIds(admin);
  for (const std::string& id : pool_clients) EXPECT_TRUE(after.contains(id)) << "client " << id;
}

// A call that timed out lets go of its handler at once, though the connection keeps the call
// until Redis answers: the handler holds the caller's request (in `sluice serve`, the client's
// session). Kept, a hung Redis held every session that asked meanwhile, clients long gone:
// they counted against max_connections, memory grew per request, and a SIGTERM's drain waited
// for Redis to wake.
TEST(ServerPoolTest, ATimedOutCallReleasesItsHandlerBeforeRedisAnswers) {
  testing::RedisServer server;
  boost::asio::io_context io;
  redis::ServerPool pool(io, "127.0.0.1", static_cast<std::uint16_t>(server.port()), 1);
  ASSERT_TRUE(startAndWarmUp(io, pool));
  const auto decide = decideCall("held");
  auto session = std::make_shared<int>(0);  // what the handler holds
  bool late = false;
  {
    testing::Frozen frozen(testing::redisPid(server));
    std::optional<std::string> failed;
    pool.call(
        decide, 20ms,
        [&failed, session](const redisReply*, std::string_view error) {
          failed = std::string(error);
        },
        [&late](const redisReply*) { late = true; });
    ASSERT_TRUE(runUntil(io, [&] { return failed.has_value(); }));
    EXPECT_EQ(failed, "timed out");
    EXPECT_EQ(session.use_count(), 1) << "the timed-out call still holds its handler";
  }
  // The late reply still reaches the late handler (which refunds what it consumed).
  EXPECT_TRUE(runUntil(io, [&] { return late; }));
}

// Each I/O thread has its own pool: when the server stalls, the calls of all of them time out
// together, and the log says so once for the server, not once per thread.
TEST(ServerPoolTest, TimeoutsAreLoggedOncePerServerAcrossPools) {
  testing::RedisServer server;
  boost::asio::io_context first_io;
  boost::asio::io_context second_io;
  const auto port = static_cast<std::uint16_t>(server.port());
  redis::ServerPool first(first_io, "127.0.0.1", port, 1);
  redis::ServerPool second(second_io, "127.0.0.1", port, 1);
  ASSERT_TRUE(startAndWarmUp(first_io, first));
  ASSERT_TRUE(startAndWarmUp(second_io, second));
  const auto decide = decideCall("two-pools");
  const testing::CapturedLog log;
  {
    testing::Frozen frozen(testing::redisPid(server));
    for (auto [io, pool] : {std::pair{&first_io, &first}, std::pair{&second_io, &second}}) {
      std::optional<std::string> failed;
      pool->call(
          decide, 20ms,
          [&failed](const redisReply*, std::string_view error) { failed = std::string(error); },
          [](const redisReply*) {});
      ASSERT_TRUE(runUntil(*io, [&] { return failed.has_value(); }));
      EXPECT_EQ(failed, "timed out");
    }
  }
  EXPECT_EQ(testing::countOf(log.text(), "no answer within 20 ms"), 1u) << log.text();
}

// While Redis answers nothing, calls that timed out stay out for their late replies. Past
// kMaxUnansweredCalls a call that may leave one fails at once, so that memory stays bounded
// however long Redis is frozen and whatever the circuit breaker is set to; refunds (no late
// reply to wait for) still go out, and once Redis answers, calls go out again.
TEST(ServerPoolTest, CallsFailAtOnceWhileTooManyAreUnanswered) {
  testing::RedisServer server;
  boost::asio::io_context io;
  redis::ServerPool pool(io, "127.0.0.1", static_cast<std::uint16_t>(server.port()), 1);
  ASSERT_TRUE(startAndWarmUp(io, pool));
  const auto decide = decideCall("unanswered");
  const std::string refusal =
      "too many calls unanswered by 127.0.0.1:" + std::to_string(server.port());
  const testing::CapturedLog log;
  std::optional<std::string> again;   // these outlive the block: calls sent in it are
  std::optional<std::string> refund;  // answered after it
  {
    testing::Frozen frozen(testing::redisPid(server));
    // A refusal is answered at once, inside call(): the loop stops at the first. (The warm-up's
    // call may still count: its deadline's cancelled handler has not run.)
    std::size_t sent = 0;
    std::size_t timed_out = 0;
    std::optional<std::string> refused;
    while (!refused && sent < redis::ServerPool::kMaxUnansweredCalls + 8) {
      pool.call(
          decide, 20ms,
          [&timed_out, &refused](const redisReply*, std::string_view error) {
            if (error == "timed out") {
              ++timed_out;
            } else {
              refused = std::string(error);
            }
          },
          [](const redisReply*) {});
      ++sent;
    }
    EXPECT_EQ(refused, refusal);
    EXPECT_GE(sent, redis::ServerPool::kMaxUnansweredCalls - 1);
    // Those sent time out.
    for (int turn = 0; turn < 200 && timed_out < sent - 1; ++turn) io.run_for(10ms);
    ASSERT_EQ(timed_out, sent - 1);
    // Timed out, they still count while Redis answers nothing (the warm-up's call has gone by
    // now, so one more may go out).
    for (int extra = 0; extra < 2 && !again; ++extra) {
      pool.call(
          decide, 20ms,
          [&again](const redisReply*, std::string_view error) {
            if (error != "timed out") again = std::string(error);
          },
          [](const redisReply*) {});
    }
    EXPECT_EQ(again, refusal);
    EXPECT_EQ(testing::countOf(log.text(), "calls unanswered; further calls fail at once"), 1u)
        << log.text();
    // A refund is sent all the same (here it times out, Redis being frozen).
    pool.call(decide, 20ms, [&refund](const redisReply*, std::string_view error) {
      refund = std::string(error);
    });
    EXPECT_TRUE(runUntil(io, [&] { return refund.has_value(); }));
    EXPECT_EQ(refund, "timed out");
  }
  // Redis answers the backlog; a PING then goes out and is answered.
  std::optional<std::string> answer;
  for (int attempt = 0; attempt < 100 && answer != "PONG"; ++attempt) {
    answer.reset();
    ping(pool, 2s, answer);
    runUntil(io, [&] { return answer.has_value(); });
    if (answer != "PONG") io.run_for(20ms);
  }
  EXPECT_EQ(answer, "PONG");
}

// A script call Redis refuses (here out of memory under maxmemory) fails, and says why in the
// log, once for a burst of them: it was seen only as degraded decisions.
TEST(ServerPoolTest, RefusedCallsAreLoggedOnceForABurst) {
  testing::RedisServer server;
  testing::RedisConnection admin = server.connect();
  boost::asio::io_context io;
  redis::ServerPool pool(io, "127.0.0.1", static_cast<std::uint16_t>(server.port()), 1);
  ASSERT_TRUE(startAndWarmUp(io, pool));
  const auto decide = decideCall("refused");
  ASSERT_EQ(admin.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"}).text, "OK");
  ASSERT_EQ(admin.command({"CONFIG", "SET", "maxmemory", "1"}).text, "OK");
  const testing::CapturedLog log;
  int answered = 0;
  std::string refusal;
  for (int i = 0; i < 20; ++i) {
    pool.call(
        decide, 2s,
        [&](const redisReply* reply, std::string_view) {
          ++answered;
          if (reply != nullptr && reply->type == REDIS_REPLY_ERROR) refusal = reply->str;
        },
        [](const redisReply*) {});
  }
  ASSERT_TRUE(runUntil(io, [&] { return answered == 20; }));
  ASSERT_EQ(admin.command({"CONFIG", "SET", "maxmemory", "0"}).text, "OK");
  EXPECT_TRUE(refusal.starts_with("OOM")) << refusal;
  const std::string text = log.text();
  EXPECT_EQ(testing::countOf(text, "refused a script call: OOM"), 1u) << text;
}

// The most a loopback connection's two socket buffers can hold in one direction: the largest
// send buffer plus the largest receive buffer the kernel grows them to (Linux's defaults: 4 MB
// and 6 MB), or 16 MB when /proc does not say.
std::size_t socketBufferBytes() {
  std::size_t total = 0;
  for (const char* path : {"/proc/sys/net/ipv4/tcp_wmem", "/proc/sys/net/ipv4/tcp_rmem"}) {
    std::ifstream file(path);
    std::size_t least = 0, initial = 0, most = 0;
    if (!(file >> least >> initial >> most)) return std::size_t{16} << 20;
    total += most;
  }
  return total;
}

// Commands queued faster than the socket takes them: with Redis frozen, the writes fill the
// kernel's buffers, the rest waits for the socket to drain (not a loop that retries at once),
// and every command arrives whole once Redis runs again. ECHOs of 512 KB, at least 48 of them
// (24 MB) and more than the socket buffers can ever hold, so some must wait in hiredis.
TEST(ServerPoolTest, CommandsBeyondTheSocketBuffersWaitForRoomThenArriveWhole) {
  testing::RedisServer server;
  boost::asio::io_context io;
  redis::ServerPool pool(io, "127.0.0.1", static_cast<std::uint16_t>(server.port()), 1);
  ASSERT_TRUE(startAndWarmUp(io, pool));

  const std::string payload(512 * 1024, 'x');
  const int kCommands =
      static_cast<int>(std::max<std::size_t>(48, socketBufferBytes() / payload.size() + 1));
  std::vector<std::optional<std::string>> echoes(kCommands);
  {
    testing::Frozen frozen(testing::redisPid(server));
    for (int i = 0; i < kCommands; ++i) {
      std::string argument = payload;
      argument.replace(0, std::to_string(i).size(), std::to_string(i));  // each one its own
      pool.command({"ECHO", argument}, 20s,
                   [&echo = echoes[i]](const redisReply* reply, std::string_view error) {
                     echo = reply != nullptr ? std::string(reply->str, reply->len)
                                             : "failed: " + std::string(error);
                   });
    }
    // Writes until the socket is full, then waits for it: the loop runs out of ready handlers.
    bool idle = false;
    for (int handler = 0; handler < 10'000 && !idle; ++handler) idle = io.poll_one() == 0;
    EXPECT_TRUE(idle) << "the loop kept running handlers while the socket was full";
  }
  // About 1,500 reads of 16 KB each way: run whole turns, not one handler at a time.
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  const auto all_answered = [&] {
    for (const auto& echo : echoes) {
      if (!echo.has_value()) return false;
    }
    return true;
  };
  while (!all_answered() && std::chrono::steady_clock::now() < give_up) io.run_for(10ms);
  for (int i = 0; i < kCommands; ++i) {
    ASSERT_TRUE(echoes[i].has_value()) << "no answer to ECHO " << i;
    EXPECT_EQ(echoes[i]->size(), payload.size())
        << "ECHO " << i << ": " << echoes[i]->substr(0, 80);
    EXPECT_EQ(echoes[i]->substr(0, 3), std::to_string(i).append("xx").substr(0, 3)) << "ECHO " << i;
  }
}

// A server that accepts each connection and closes it at once, before answering anything (as
// Redis at maxclients does after its error, or a proxy whose backend is down): the reconnect
// backoff keeps growing to its cap, instead of starting again at each successful TCP connect.
TEST(RedisConnectionTest, BackoffGrowsAgainstAServerThatDropsEveryConnection) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor closer(
      io, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  int accepted = 0;
  std::function<void()> accept = [&] {
    closer.async_accept([&](boost::system::error_code ec, boost::asio::ip::tcp::socket socket) {
      if (ec) return;
      ++accepted;
      socket.close();
      accept();
    });
  };
  accept();
  redis::ConnectionOptions options;
  options.port = closer.local_endpoint().port();
  options.on_connect = [](redis::RedisConnection& connection) {
    const std::string_view ping[] = {"PING"};
    connection.send(ping, [](const redisReply*, std::string_view) {});
  };
  const auto connection = redis::RedisConnection::create(io, options);
  connection->start();
  // 20 + 40 + 80 + 160 ms of backoff at most before the fifth connect, plus jitter's savings.
  ASSERT_TRUE(runUntil(io, [&] { return accepted >= 5; })) << accepted << " connects";
  EXPECT_EQ(connection->retryDelay(), options.last_retry);
  connection->close();
}

}  // namespace
}  // namespace sluice
