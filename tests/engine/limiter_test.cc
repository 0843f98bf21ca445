#include "sluice/limiter.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "support/specs.h"

namespace sluice {
namespace {

using testing::kJan2026;
using testing::rate;

// The embedded API in a few lines: one limit, a fake clock, refill after waiting.
TEST(Limiter, ChecksWithAnInjectedClock) {
  FakeClock clock(kJan2026);
  Limiter limiter(LimiterOptions{.max_keys = 1000, .shards = 4, .clock = &clock});
  const LimitSpec per_user = LimitSpec::tokenBucket(rate("3/min"), 3).value();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.check("user:1", per_user).allowed);
  const Decision denied = limiter.check("user:1", per_user);
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.retry_after_us, 20 * kMicrosPerSecond);
  clock.advance(denied.retry_after_us);
  EXPECT_TRUE(limiter.check("user:1", per_user).allowed);
  EXPECT_EQ(limiter.keyCount(), 1u);
}

// A check without a spec breaks the API's contract; the limiter denies the whole request,
// naming why, instead of crashing, and consumes nothing.
TEST(Limiter, ACheckWithoutASpecIsDeniedNotACrash) {
  FakeClock clock(kJan2026);
  Limiter limiter(LimiterOptions{.clock = &clock});
  const LimitSpec per_user = LimitSpec::tokenBucket(rate("3/min"), 3).value();
  const LimitCheck checks[] = {{"user:1", &per_user}, {"user:2", nullptr}};
  const Decision decision = limiter.check(checks);
  EXPECT_FALSE(decision.allowed);
  ASSERT_EQ(decision.statuses.size(), 2u);
  EXPECT_EQ(decision.statuses[1].reason, DenyReason::kInvalidCheck);
  EXPECT_EQ(denyReasonName(decision.statuses[1].reason), "invalid_check");
  EXPECT_EQ(limiter.keyCount(), 0u);
  EXPECT_EQ(limiter.check("user:1", per_user, 0).statuses[0].remaining, 3u);
}

// The system clock moves forward and never backwards.
TEST(SystemClock, IsMonotonicAndNearWallTime) {
  const SystemClock clock;
  const Micros first = clock.now();
  const Micros second = clock.now();
  EXPECT_LE(first, second);
  EXPECT_GT(first, kJan2026 - 365 * kMicrosPerDay);  // anchored to the Unix epoch, not boot
}

// The ticking clock starts at the system time and moves forward; waiting for its first tick is
// bounded by a watchdog, never asserted as a duration.
TEST(TickingClock, TicksForward) {
  const TickingClock clock(100);
  const Micros first = clock.now();
  EXPECT_GT(first, kJan2026 - 365 * kMicrosPerDay);  // anchored to the Unix epoch, not boot
  const auto watchdog = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (clock.now() == first && std::chrono::steady_clock::now() < watchdog) {
    std::this_thread::yield();
  }
  EXPECT_GT(clock.now(), first);
}

}  // namespace
}  // namespace sluice
