// Test fixture for RedisStore against a real redis-server (redis_store_test.cc and
// redis_store_failure_test.cc): a store on the server, blocking and watched calls, and polls that
// wait (bounded) for the store to decide again or for a key to reach a state.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <gtest/gtest.h>

#include "sluice/time.h"
#include "store/redis/redis_store.h"
#include "support/redis_server.h"
#include "support/specs.h"
#include "traces/trace_support.h"

namespace sluice::testing {

using SteadyClock = std::chrono::steady_clock;

// Long enough that a loaded machine (or a sanitizer build) never times out a healthy call:
// 2 s still did, with 8 client threads and two busy loops on two cores.
constexpr Micros kRelaxedTimeoutUs = 10 * kMicrosPerSecond;
// Short enough that a frozen Redis makes calls time out quickly.
constexpr Micros kShortTimeoutUs = 100 * kMicrosPerMilli;
// How long a call that should return may take before the test calls it a hang.
constexpr auto kHangAfter = std::chrono::seconds(5);

// Polls until `finished` reaches `count` (callbacks counting themselves); false after kHangAfter.
inline bool allFinished(const std::atomic<int>& finished, int count) {
  const auto deadline = SteadyClock::now() + kHangAfter;
  while (finished.load() < count && SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // polling, not timing
  }
  return finished.load() >= count;
}

class RedisStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = makeStore(kRelaxedTimeoutUs, false); }

  std::unique_ptr<RedisStore> makeStore(Micros timeout_us, bool use_caller_clock,
                                        std::size_t connections = 2) {
    RedisStoreOptions options;
    options.port = static_cast<std::uint16_t>(server_.port());
    options.timeout_us = timeout_us;
    options.connections = connections;
    options.use_caller_clock = use_caller_clock;
    auto store = std::make_unique<RedisStore>(options);
    EXPECT_TRUE(waitUntilDeciding(*store)) << "the store never connected";
    return store;
  }

  // One check; EXPECTs the status.
  Outcome applyOne(Store& store, const LimitSpec& limit, std::string_view key, std::uint64_t cost,
                   StoreStatus expected = StoreStatus::kOk) {
    const LimitCheck check{key, &limit, cost};
    Outcome outcome;
    EXPECT_EQ(store.apply(std::span(&check, 1), clock_, std::span(&outcome, 1)), expected);
    return outcome;
  }

  // Polls a peek until the store decides again; false past `limit`. The store connects in the
  // background and answers kUnavailable at once until then.
  bool waitUntilDeciding(Store& store, SteadyClock::duration limit = std::chrono::seconds(2)) {
    const LimitCheck peek{"probe", &probe_, 0};
    const auto deadline = SteadyClock::now() + limit;
    while (SteadyClock::now() < deadline) {
      Outcome outcome;
      if (store.apply(std::span(&peek, 1), clock_, std::span(&outcome, 1)) == StoreStatus::kOk) {
        return true;
      }
      // Polling a reconnecting client, not timing it.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  // Calls the blocking apply on a watchdog thread, so a hang fails the test instead of stalling
  // it. On a hang the thread is detached and the store leaked, so nothing it uses is freed.
  std::optional<StoreStatus> applyWatched(std::unique_ptr<RedisStore>& store,
                                          const LimitSpec& limit, std::string key) {
    struct Call {
      std::string key;
      LimitCheck check;
      Outcome outcome;
      std::promise<StoreStatus> status;
    };
    auto call = std::make_shared<Call>();
    call->key = std::move(key);
    call->check = LimitCheck{call->key, &limit, 1};
    std::future<StoreStatus> status = call->status.get_future();
    std::thread caller([call, target = store.get(), clock = &clock_] {
      call->status.set_value(
          target->apply(std::span(&call->check, 1), *clock, std::span(&call->outcome, 1)));
    });
    if (status.wait_for(kHangAfter) != std::future_status::ready) {
      caller.detach();
      (void)store.release();
      return std::nullopt;
    }
    caller.join();
    return status.get();
  }

  // One watched call (a unit of five_per_day_ on `key`) that must answer kUnavailable; false
  // (with a failure) when it hangs instead, and the test must stop.
  [[nodiscard]] bool callIsUnavailable(std::unique_ptr<RedisStore>& store, std::string key) {
    const std::optional<StoreStatus> status = applyWatched(store, five_per_day_, key);
    if (!status.has_value()) {
      ADD_FAILURE() << "a call on " << key << " hung";
      return false;
    }
    EXPECT_EQ(*status, StoreStatus::kUnavailable) << key;
    return true;
  }

  // Polls peeks of `key` until its remaining is `expected`; false past `wait_limit`. Refunds of
  // late replies land a round trip after those replies, on whichever connection is free.
  bool waitForRemaining(Store& store, const LimitSpec& limit, std::string_view key,
                        std::uint64_t expected,
                        SteadyClock::duration wait_limit = std::chrono::seconds(2)) {
    const auto deadline = SteadyClock::now() + wait_limit;
    while (SteadyClock::now() < deadline) {
      if (applyOne(store, limit, key, 0).remaining == expected) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling, not timing
    }
    return false;
  }

  RedisServer server_;
  FakeClock clock_{kJan2026};
  std::unique_ptr<RedisStore> store_;
  const LimitSpec probe_ = spec(Algorithm::kFixedWindow, "1/s");
  const LimitSpec five_per_day_ = spec(Algorithm::kFixedWindow, "5/day");
};

}  // namespace sluice::testing
