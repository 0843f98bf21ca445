#include "sluice/limiter.h"

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

// The system clock moves forward and never backwards.
TEST(SystemClock, IsMonotonicAndNearWallTime) {
  const SystemClock clock;
  const Micros first = clock.now();
  const Micros second = clock.now();
  EXPECT_LE(first, second);
  EXPECT_GT(first, kJan2026 - 365 * kMicrosPerDay);  // anchored to the Unix epoch, not boot
}

}  // namespace
}  // namespace sluice
