// RedisStore's request loops (RedisStoreOptions::request_loops): a call made on one of a
// server's event loops is decided there, by that loop's own connections, and answered on the
// same thread; callers on other threads share the store's loop thread. All of them count
// against the same limits in Redis. Against a real redis-server.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "store/failover_store.h"
#include "store/redis/redis_store.h"
#include "store/redis_store_fixture.h"
#include "support/frozen_redis.h"
#include "support/stop_first.h"

namespace sluice {
namespace {

using testing::Frozen;
using testing::kHangAfter;
using testing::kRelaxedTimeoutUs;
using testing::redisPid;
using testing::RedisStoreTest;
using testing::spec;
using testing::SteadyClock;
using testing::StopFirst;

// Event loops as a server has them: made first, run on a thread each once the store exists,
// stopped before the store goes.
class RequestLoops {
 public:
  explicit RequestLoops(std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
      loops_.push_back(std::make_unique<boost::asio::io_context>(1));
    }
  }
  ~RequestLoops() { stop(); }

  [[nodiscard]] std::vector<boost::asio::io_context*> pointers() const {
    std::vector<boost::asio::io_context*> pointers;
    for (const auto& loop : loops_) pointers.push_back(loop.get());
    return pointers;
  }
  boost::asio::io_context& operator[](std::size_t index) { return *loops_[index]; }

  void start() {
    for (const auto& loop : loops_) {
      guards_.emplace_back(loop->get_executor());
      threads_.emplace_back([io = loop.get()] { io->run(); });
    }
  }
  void stop() {
    guards_.clear();
    for (const auto& loop : loops_) loop->stop();
    for (std::thread& thread : threads_) thread.join();
    threads_.clear();
  }

 private:
  using Guard = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;
  std::vector<std::unique_ptr<boost::asio::io_context>> loops_;
  std::vector<Guard> guards_;
  std::vector<std::thread> threads_;
};

// One asynchronous request and what its callback saw.
struct AsyncRequest {
  std::string key;
  LimitCheck check;
  Outcome outcome;
  StoreStatus status = StoreStatus::kUnavailable;
  bool answered_on_callers_loop = false;
  std::atomic<int> answers{0};
};

class RedisStoreLanesTest : public RedisStoreTest {
 protected:
  std::unique_ptr<RedisStore> makeLaneStore(const RequestLoops& loops) {
    RedisStoreOptions options;
    options.port = static_cast<std::uint16_t>(server_.port());
    options.timeout_us = kRelaxedTimeoutUs;
    options.request_loops = loops.pointers();
    return std::make_unique<RedisStore>(options);
  }

  // Sends `request` from `loop`'s thread; the callback records where it ran. The request lives
  // until its answer, however late that comes.
  void sendOn(boost::asio::io_context& loop, RedisStore& store,
              const std::shared_ptr<AsyncRequest>& request) {
    boost::asio::post(loop, [&loop, &store, request, this] {
      store.applyAsync(std::span(&request->check, 1), clock_, std::span(&request->outcome, 1),
                       [&loop, request](StoreStatus status) {
                         request->status = status;
                         request->answered_on_callers_loop =
                             loop.get_executor().running_in_this_thread();
                         ++request->answers;
                       });
    });
  }

  // Polls peeks sent from `loop` until its lane is connected and deciding; false past 2 s.
  bool waitUntilLaneDecides(boost::asio::io_context& loop, RedisStore& store) {
    const auto deadline = SteadyClock::now() + std::chrono::seconds(2);
    while (SteadyClock::now() < deadline) {
      auto peek = std::make_shared<AsyncRequest>();
      peek->check = LimitCheck{"probe", &probe_, 0};
      sendOn(loop, store, peek);
      while (peek->answers.load() == 0 && SteadyClock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // polling, not timing
      }
      if (peek->answers.load() == 1 && peek->status == StoreStatus::kOk) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the lane still connects
    }
    return false;
  }

  static bool waitForAnswers(const std::vector<std::shared_ptr<AsyncRequest>>& requests) {
    const auto deadline = SteadyClock::now() + kHangAfter;
    for (const auto& request : requests) {
      while (request->answers.load() == 0) {
        if (SteadyClock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // polling, not timing
      }
    }
    return true;
  }
};

// Requests from two request loops and blocking calls from a thread of no loop, all on one key,
// admit exactly the limit; each loop's answers come back on that loop's own thread.
TEST_F(RedisStoreLanesTest, LoopsAndOtherThreadsShareOneExactLimit) {
  constexpr int kPerLoop = 300;
  constexpr int kBlocking = 100;
  const LimitSpec limit = spec(Algorithm::kFixedWindow, "250/day");
  RequestLoops loops(2);
  auto store = makeLaneStore(loops);
  const StopFirst stop_first(loops);
  loops.start();
  ASSERT_TRUE(waitUntilLaneDecides(loops[0], *store));
  ASSERT_TRUE(waitUntilLaneDecides(loops[1], *store));

  std::vector<std::shared_ptr<AsyncRequest>> requests;
  for (int i = 0; i < 2 * kPerLoop; ++i) {
    requests.push_back(std::make_shared<AsyncRequest>());
    requests.back()->check = LimitCheck{"shared", &limit, 1};
  }
  for (int i = 0; i < 2 * kPerLoop; ++i) sendOn(loops[i % 2], *store, requests[i]);
  int admitted = 0;
  for (int i = 0; i < kBlocking; ++i) {
    admitted += applyOne(*store, limit, "shared", 1).allowed ? 1 : 0;
  }
  ASSERT_TRUE(waitForAnswers(requests)) << "an asynchronous request was never answered";
  loops.stop();

  for (const auto& request : requests) {
    EXPECT_EQ(request->answers.load(), 1);
    EXPECT_EQ(request->status, StoreStatus::kOk);
    EXPECT_TRUE(request->answered_on_callers_loop);
    admitted += request->outcome.allowed ? 1 : 0;
  }
  EXPECT_EQ(admitted, 250);
}

// The blocking apply() on a request loop would wait for an answer that only that loop can
// deliver: it answers unavailable at once instead of hanging.
TEST_F(RedisStoreLanesTest, BlockingApplyOnARequestLoopIsUnavailable) {
  RequestLoops loops(1);
  auto store = makeLaneStore(loops);
  const StopFirst stop_first(loops);
  loops.start();
  ASSERT_TRUE(waitUntilLaneDecides(loops[0], *store));
  std::promise<StoreStatus> status;
  boost::asio::post(loops[0], [&] {
    const LimitCheck check{"key", &five_per_day_, 1};
    Outcome outcome;
    status.set_value(store->apply(std::span(&check, 1), clock_, std::span(&outcome, 1)));
  });
  std::future<StoreStatus> answered = status.get_future();
  ASSERT_EQ(answered.wait_for(kHangAfter), std::future_status::ready);
  EXPECT_EQ(answered.get(), StoreStatus::kUnavailable);
}

// Destroying the store after its request loops stopped answers every call still waiting on
// Redis (frozen, so they stay there) exactly once, unavailable.
TEST_F(RedisStoreLanesTest, DestroyingTheStoreAnswersCallsInFlight) {
  constexpr int kRequests = 20;
  RequestLoops loops(1);
  auto store = makeLaneStore(loops);
  const StopFirst stop_first(loops);
  loops.start();
  ASSERT_TRUE(waitUntilLaneDecides(loops[0], *store));

  Frozen frozen(redisPid(server_));
  std::vector<std::shared_ptr<AsyncRequest>> requests;
  for (int i = 0; i < kRequests; ++i) {
    requests.push_back(std::make_shared<AsyncRequest>());
    requests.back()->key = "held:" + std::to_string(i);
    requests.back()->check = LimitCheck{requests.back()->key, &five_per_day_, 1};
    sendOn(loops[0], *store, requests.back());
  }
  std::promise<void> sent;
  boost::asio::post(loops[0], [&sent] { sent.set_value(); });  // after every request's post
  ASSERT_EQ(sent.get_future().wait_for(kHangAfter), std::future_status::ready);
  loops.stop();
  for (const auto& request : requests) EXPECT_EQ(request->answers.load(), 0);

  store.reset();
  for (const auto& request : requests) {
    EXPECT_EQ(request->answers.load(), 1);
    EXPECT_EQ(request->status, StoreStatus::kUnavailable);
  }
}

// The same through the failure policy, as `sluice serve` has it: the calls answered by the
// destruction are settled by on_error: local, and each callback asks for one more decision (as
// a shadow pass does), which is answered too, once.
TEST_F(RedisStoreLanesTest, DestroyingAFailoverStoreSettlesCallsAndFollowUps) {
  constexpr int kRequests = 20;
  RequestLoops loops(1);
  RedisStoreOptions options;
  options.port = static_cast<std::uint16_t>(server_.port());
  options.timeout_us = kRelaxedTimeoutUs;
  options.request_loops = loops.pointers();
  auto redis = std::make_unique<RedisStore>(options);
  RedisStore& shared = *redis;
  auto store = std::make_unique<FailoverStore>(std::move(redis), FailoverOptions{});
  // The callbacks reach the store as an engine does, by reference: unique_ptr::reset() empties
  // the pointer before it destroys the store.
  FailoverStore& failover = *store;
  const StopFirst stop_first(loops);
  loops.start();
  ASSERT_TRUE(waitUntilLaneDecides(loops[0], shared));

  Frozen frozen(redisPid(server_));
  std::vector<std::shared_ptr<AsyncRequest>> requests;
  std::vector<std::shared_ptr<AsyncRequest>> follow_ups;
  for (int i = 0; i < kRequests; ++i) {
    requests.push_back(std::make_shared<AsyncRequest>());
    follow_ups.push_back(std::make_shared<AsyncRequest>());
  }
  for (int i = 0; i < kRequests; ++i) {
    const auto request = requests[i];
    const auto follow_up = follow_ups[i];
    request->key = "held:" + std::to_string(i);
    request->check = LimitCheck{request->key, &five_per_day_, 1, {}, OnStoreError::kLocal};
    follow_up->check = request->check;
    boost::asio::post(loops[0], [&, request, follow_up] {
      failover.applyAsync(std::span(&request->check, 1), clock_, std::span(&request->outcome, 1),
                          [&, request, follow_up](StoreStatus status) {
                            request->status = status;
                            ++request->answers;
                            failover.applyAsync(std::span(&follow_up->check, 1), clock_,
                                                std::span(&follow_up->outcome, 1),
                                                [follow_up](StoreStatus again) {
                                                  follow_up->status = again;
                                                  ++follow_up->answers;
                                                });
                          });
    });
  }
  std::promise<void> sent;
  boost::asio::post(loops[0], [&sent] { sent.set_value(); });
  ASSERT_EQ(sent.get_future().wait_for(kHangAfter), std::future_status::ready);
  loops.stop();

  store.reset();
  for (int i = 0; i < kRequests; ++i) {
    EXPECT_EQ(requests[i]->answers.load(), 1) << i;
    EXPECT_EQ(requests[i]->status, StoreStatus::kDegraded) << i;  // decided by on_error: local
    EXPECT_TRUE(requests[i]->outcome.allowed) << i;
    EXPECT_EQ(follow_ups[i]->answers.load(), 1) << i;
    EXPECT_EQ(follow_ups[i]->status, StoreStatus::kDegraded) << i;
  }
}

}  // namespace
}  // namespace sluice
