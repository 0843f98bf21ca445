// RedisStore when Redis fails: down, restarted, without its script, frozen (SIGSTOP), or
// destroyed with calls in flight; and calls that time out, which must not count once Redis runs
// them late.
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "store/redis/script_call.h"
#include "store/redis_store_fixture.h"
#include "support/frozen_redis.h"

namespace sluice {
namespace {

using testing::Frozen;
using testing::kHangAfter;
using testing::kShortTimeoutUs;
using testing::redisPid;
using testing::RedisStoreTest;
using testing::spec;
using testing::SteadyClock;

// With Redis gone, every call returns kUnavailable (nothing hangs), and decisions resume on
// their own once a new Redis listens on the same port, with the script loaded again.
TEST_F(RedisStoreTest, RedisDownIsUnavailableThenResumesAfterRestart) {
  auto store = makeStore(kShortTimeoutUs, false);
  EXPECT_TRUE(applyOne(*store, five_per_day_, "k", 1).allowed);
  server_.stop();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(callIsUnavailable(store, "k")) << "call " << i;
  // An async call fails too, and calls back once.
  {
    const LimitCheck check{"k", &five_per_day_, 1};
    Outcome outcome;
    std::promise<StoreStatus> status;
    store->applyAsync(std::span(&check, 1), clock_, std::span(&outcome, 1),
                      [&status](StoreStatus got) { status.set_value(got); });
    auto future = status.get_future();
    ASSERT_EQ(future.wait_for(kHangAfter), std::future_status::ready);
    EXPECT_EQ(future.get(), StoreStatus::kUnavailable);
  }

  server_.restart();
  ASSERT_TRUE(waitUntilDeciding(*store, std::chrono::seconds(2)));
  // The restarted Redis is empty: a fresh count.
  EXPECT_EQ(applyOne(*store, five_per_day_, "k", 1).remaining, 4u);
  const testing::RedisReply exists =
      server_.connect().command({"SCRIPT", "EXISTS", redis::sluiceLuaScript().sha1});
  ASSERT_EQ(exists.elements.size(), 1u);
  EXPECT_EQ(exists.elements[0].integer, 1);
}

// After SCRIPT FLUSH the next call meets NOSCRIPT, sends the script's text, and succeeds;
// the calls after it find the script loaded again.
TEST_F(RedisStoreTest, RecoversFromScriptFlush) {
  EXPECT_TRUE(applyOne(*store_, five_per_day_, "k", 1).allowed);
  testing::RedisConnection admin = server_.connect();
  ASSERT_EQ(admin.command({"SCRIPT", "FLUSH"}).text, "OK");
  ASSERT_EQ(admin.command({"SCRIPT", "EXISTS", redis::sluiceLuaScript().sha1}).elements[0].integer,
            0);
  EXPECT_EQ(applyOne(*store_, five_per_day_, "k", 1).remaining, 3u);
  EXPECT_EQ(admin.command({"SCRIPT", "EXISTS", redis::sluiceLuaScript().sha1}).elements[0].integer,
            1);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(applyOne(*store_, five_per_day_, "k", 1).allowed);
  EXPECT_FALSE(applyOne(*store_, five_per_day_, "k", 1).allowed);
}

// A frozen Redis (SIGSTOP) keeps its connections open but answers nothing: calls time out as
// kUnavailable, async ones call back once, and decisions succeed again after SIGCONT.
TEST_F(RedisStoreTest, FrozenRedisTimesOutThenRecovers) {
  auto store = makeStore(kShortTimeoutUs, false);
  Frozen frozen(redisPid(server_));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(callIsUnavailable(store, "k")) << "call " << i;
  const LimitCheck check{"other", &five_per_day_, 1};
  Outcome outcome;
  std::atomic<int> calls{0};
  std::promise<StoreStatus> status;
  store->applyAsync(std::span(&check, 1), clock_, std::span(&outcome, 1), [&](StoreStatus got) {
    if (++calls == 1) status.set_value(got);
  });
  auto future = status.get_future();
  ASSERT_EQ(future.wait_for(kHangAfter), std::future_status::ready);
  EXPECT_EQ(future.get(), StoreStatus::kUnavailable);

  frozen.thaw();
  ASSERT_TRUE(waitUntilDeciding(*store, std::chrono::seconds(2)));
  EXPECT_EQ(applyOne(*store, five_per_day_, "fresh", 1).remaining, 4u);
  // The late reply to the timed-out async call has arrived by now (same connections, in
  // order) and was not delivered a second time.
  EXPECT_EQ(calls.load(), 1);
}

// Destroying the store with calls in flight (Redis frozen, deadlines far off) fails each of
// them once, before the destructor returns.
TEST_F(RedisStoreTest, DestroyFailsCallsInFlightOnce) {
  constexpr int kCalls = 10;
  const LimitCheck check{"k", &five_per_day_, 1};
  std::vector<Outcome> outcomes(kCalls);
  std::atomic<int> calls{0};
  std::atomic<int> unavailable{0};
  {
    Frozen frozen(redisPid(server_));
    for (int i = 0; i < kCalls; ++i) {
      store_->applyAsync(std::span(&check, 1), clock_, std::span(&outcomes[i], 1),
                         [&](StoreStatus status) {
                           ++calls;
                           if (status == StoreStatus::kUnavailable) ++unavailable;
                         });
    }
    store_.reset();
  }
  EXPECT_EQ(calls.load(), kCalls);
  EXPECT_EQ(unavailable.load(), kCalls);
}

// kUnavailable promises that nothing is counted (store.h). Calls that time out on a frozen
// Redis are still in its socket buffer, though, and run when it resumes: the store gives back
// what their late replies say they consumed.
TEST_F(RedisStoreTest, TimedOutCallsConsumeNothing) {
  auto store = makeStore(kShortTimeoutUs, false);
  {
    Frozen frozen(redisPid(server_));
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(callIsUnavailable(store, "k")) << "call " << i;
  }
  ASSERT_TRUE(waitUntilDeciding(*store, std::chrono::seconds(2)));
  EXPECT_TRUE(waitForRemaining(*store, five_per_day_, "k", 5))
      << "remaining " << applyOne(*store, five_per_day_, "k", 0).remaining;
}

// A late reply that denied consumed nothing, so nothing is given back: here a spent key stays
// spent while a fresh key's late admission is undone. One connection, so the spent key's late
// reply is handled before the fresh key's.
TEST_F(RedisStoreTest, LateDenialsAreNotRefunded) {
  auto store = makeStore(kShortTimeoutUs, false, 1);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(applyOne(*store, five_per_day_, "spent", 1).allowed);
  {
    Frozen frozen(redisPid(server_));
    for (const char* key : {"spent", "fresh"}) ASSERT_TRUE(callIsUnavailable(store, key));
  }
  ASSERT_TRUE(waitUntilDeciding(*store, std::chrono::seconds(2)));
  ASSERT_TRUE(waitForRemaining(*store, five_per_day_, "fresh", 5));
  EXPECT_EQ(applyOne(*store, five_per_day_, "spent", 0).remaining, 0u);
}

// Requests that time out queued behind busy calls, then go out as one batch that times out
// too, consume nothing either: each admitted request of the late batch is refunded on its own.
TEST_F(RedisStoreTest, TimedOutBatchesConsumeNothing) {
  constexpr int kFirst = 1;  // calls_in_flight: this one goes out at once, alone
  constexpr int kRequests = 22;
  const LimitSpec shared = spec(Algorithm::kFixedWindow, "50/day");
  const LimitSpec own = spec(Algorithm::kGcra, "1/day", 1);
  auto store = makeStore(kShortTimeoutUs, false);
  std::vector<std::string> own_keys;
  std::vector<std::vector<LimitCheck>> requests;
  for (int i = 0; i < kRequests; ++i) own_keys.push_back("own:" + std::to_string(i));
  for (int i = 0; i < kRequests; ++i) {
    requests.push_back({{"shared", &shared, 1}, {own_keys[i], &own, 1}});
  }
  std::vector<std::vector<Outcome>> outcomes(kRequests, std::vector<Outcome>(2));
  std::atomic<int> unavailable{0};
  std::atomic<int> finished{0};
  const auto send = [&](int i) {
    store->applyAsync(requests[i], clock_, outcomes[i], [&](StoreStatus status) {
      if (status == StoreStatus::kUnavailable) ++unavailable;
      ++finished;
    });
  };
  auto admin = server_.connect();
  // Paused long past every deadline: the first call times out, the queued requests go out as
  // a batch when it does (their own deadlines are later), and that times out as well.
  ASSERT_EQ(admin.command({"CLIENT", "PAUSE", "600", "ALL"}).text, "OK");
  for (int i = 0; i < kFirst; ++i) send(i);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // sequencing, not timing
  for (int i = kFirst; i < kRequests; ++i) send(i);
  ASSERT_TRUE(testing::allFinished(finished, kRequests)) << finished.load() << " finished";
  EXPECT_EQ(unavailable.load(), kRequests);
  ASSERT_TRUE(waitUntilDeciding(*store, std::chrono::seconds(2)));
  EXPECT_TRUE(waitForRemaining(*store, shared, "shared", 50))
      << "remaining " << applyOne(*store, shared, "shared", 0).remaining;
  for (int i = 0; i < kRequests; ++i) {
    EXPECT_EQ(applyOne(*store, own, own_keys[i], 0).remaining, 1u) << "request " << i;
  }
}

}  // namespace
}  // namespace sluice
