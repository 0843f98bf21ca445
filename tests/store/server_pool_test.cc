// ServerPool's deadline against a real redis-server, on an io_context the test runs by hand so
// it can choose which handlers run in which order.
#include "store/redis/server_pool.h"

#include <hiredis/hiredis.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "support/frozen_redis.h"
#include "support/redis_server.h"

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
  pool.start();
  ASSERT_TRUE(runUntil(io, [&] { return pool.connected(); }));
  std::optional<std::string> warm_up;  // behind the script load, so both are answered
  ping(pool, 2s, warm_up);
  ASSERT_TRUE(runUntil(io, [&] { return warm_up.has_value(); }));
  ASSERT_EQ(*warm_up, "PONG");

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

}  // namespace
}  // namespace sluice
