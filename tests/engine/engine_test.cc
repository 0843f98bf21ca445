#include "engine/engine.h"

#include <vector>

#include <gtest/gtest.h>

#include "store/memory_store.h"
#include "support/specs.h"

namespace sluice {
namespace {

using testing::kJan2026;
using testing::spec;

class EngineTest : public ::testing::Test {
 protected:
  Decision check(const std::vector<LimitCheck>& checks) { return engine_.check(checks); }

  FakeClock clock_{kJan2026};
  MemoryStore store_{MemoryStoreOptions{1000, 4}};
  Engine engine_{store_, clock_};
  const LimitSpec global_ = spec(Algorithm::kGcra, "1000/s", 100);
  const LimitSpec per_client_ = spec(Algorithm::kTokenBucket, "10/min", 3);
  const LimitSpec daily_ = spec(Algorithm::kFixedWindow, "5/day");
};

// No limits: allowed, nothing binds.
TEST_F(EngineTest, EmptyCheckIsAllowed) {
  const Decision decision = check({});
  EXPECT_TRUE(decision.allowed);
  EXPECT_EQ(decision.binding, Decision::kNoLimit);
  EXPECT_EQ(decision.bindingStatus(), nullptr);
}

// Allowed: the binding limit is the one with the fewest units left; every limit is consumed.
TEST_F(EngineTest, AllowedBindsTheClosestLimit) {
  const Decision decision =
      check({{"global", &global_, 1}, {"client:1", &per_client_, 1}, {"day:1", &daily_, 1}});
  ASSERT_TRUE(decision.allowed);
  ASSERT_EQ(decision.statuses.size(), 3u);
  EXPECT_EQ(decision.binding, 1u);  // 2 left of 3, fewer than 4 of 5 and 99 of 100
  EXPECT_EQ(decision.bindingStatus()->remaining, 2u);
  EXPECT_EQ(decision.retry_after_us, 0);
}

// Of allowed limits with as few units left, the one longest until full binds: a burst used up
// beside a daily quota used up names the quota, whose reset is the one a client must wait for.
TEST_F(EngineTest, AllowedTiesBindTheLimitLongestUntilFull) {
  const LimitSpec burst = spec(Algorithm::kTokenBucket, "60/min", 2);
  const LimitSpec quota = spec(Algorithm::kFixedWindow, "2/day");
  for (int i = 0; i < 2; ++i) {
    const Decision decision = check({{"burst:1", &burst, 1}, {"quota:1", &quota, 1}});
    ASSERT_TRUE(decision.allowed);
    EXPECT_EQ(decision.statuses[0].remaining, decision.statuses[1].remaining);
    EXPECT_EQ(decision.binding, 1u) << "request " << i;
  }
  // Listed the other way round, the same.
  const Decision swapped = check({{"quota:2", &quota, 1}, {"burst:2", &burst, 1}});
  EXPECT_EQ(swapped.binding, 0u);
}

// Denied: none consumed; the binding limit is the denial that lasts longest.
TEST_F(EngineTest, DeniedBindsTheLongestWait) {
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(check({{"client:1", &per_client_, 1}, {"day:1", &daily_, 1}}).allowed);
  }
  const Decision denied = check({{"global", &global_, 1}, {"client:1", &per_client_, 1}});
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.binding, 1u);
  EXPECT_EQ(denied.retry_after_us, 6 * kMicrosPerSecond);
  EXPECT_TRUE(denied.statuses[0].allowed);
  EXPECT_EQ(denied.statuses[0].remaining, 100u);  // global untouched

  clock_.advance(6 * kMicrosPerSecond);
  EXPECT_TRUE(check({{"client:1", &per_client_, 1}, {"day:1", &daily_, 1}}).allowed);
  EXPECT_TRUE(check({{"day:1", &daily_, 1}}).allowed);  // 5 of 5 used today
  clock_.advance(6 * kMicrosPerSecond);
  const Decision both = check({{"client:1", &per_client_, 1}, {"day:1", &daily_, 1}});
  EXPECT_FALSE(both.allowed);
  EXPECT_EQ(both.binding, 1u);  // the day's reset outlasts the bucket's 6 s
  EXPECT_EQ(both.retry_after_us, both.statuses[1].retry_after_us);
  EXPECT_GT(both.retry_after_us, kMicrosPerHour);
}

// A cost larger than a limit never passes: the decision says so and waits forever.
TEST_F(EngineTest, CostAboveTheLimit) {
  const Decision decision = check({{"global", &global_, 1}, {"client:2", &per_client_, 4}});
  EXPECT_FALSE(decision.allowed);
  EXPECT_EQ(decision.binding, 1u);
  EXPECT_EQ(decision.statuses[1].reason, DenyReason::kCostExceedsLimit);
  EXPECT_EQ(decision.retry_after_us, kNever);
}

// A shaper's delay is carried to the decision when the request is admitted.
TEST_F(EngineTest, ShaperDelay) {
  const LimitSpec shaper = spec(Algorithm::kLeakyBucketShaper, "10/s", 5);
  EXPECT_EQ(check({{"q", &shaper, 1}}).delay_us, 0);
  EXPECT_EQ(check({{"q", &shaper, 1}}).delay_us, 100 * kMicrosPerMilli);
  const Decision decision = check({{"q", &shaper, 1}, {"client:3", &per_client_, 1}});
  EXPECT_EQ(decision.delay_us, 200 * kMicrosPerMilli);
}

// A store that cannot decide at all: the request is denied, and the answer still names each
// limit and asks for a retry a second on (it said limit 0 and "retry now").
TEST_F(EngineTest, AStoreThatCannotDecideDeniesWithTheLimitsAndARetry) {
  struct UnavailableStore final : Store {
    StoreStatus apply(std::span<const LimitCheck>, const Clock&,
                      std::span<Outcome> outcomes) noexcept override {
      for (Outcome& outcome : outcomes) outcome.remaining = 99;  // half written, then given up
      return StoreStatus::kUnavailable;
    }
  };
  UnavailableStore unavailable;
  Engine engine(unavailable, clock_);
  const std::vector<LimitCheck> checks{{"g", &global_, 1}, {"c", &per_client_, 1}};
  for (const Decision& decision : {engine.check(checks), [&] {
                                     Decision answered;
                                     engine.checkAsync(
                                         checks, [&](Decision&& d) { answered = std::move(d); });
                                     return answered;
                                   }()}) {
    EXPECT_FALSE(decision.allowed);
    EXPECT_TRUE(decision.degraded);
    EXPECT_EQ(decision.retry_after_us, kMicrosPerSecond);
    ASSERT_EQ(decision.statuses.size(), 2u);
    EXPECT_EQ(decision.statuses[0].reason, DenyReason::kStoreUnavailable);
    EXPECT_EQ(decision.statuses[0].limit, 100u);
    EXPECT_EQ(decision.statuses[1].limit, 3u);
    EXPECT_EQ(decision.statuses[1].remaining, 0u);
    EXPECT_EQ(decision.statuses[1].reset_after_us, kMicrosPerSecond);
  }
}

}  // namespace
}  // namespace sluice
