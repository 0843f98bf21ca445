#include "algorithm/gcra.h"

#include <gtest/gtest.h>

#include "support/specs.h"

namespace sluice::algorithm {
namespace {

using sluice::testing::kJan2026;
using sluice::testing::spec;

class GcraTest : public ::testing::Test {
 protected:
  Outcome consume(Micros at_us, std::uint64_t cost = 1) {
    return consumeGcra(state_, at_us, limit_, cost);
  }

  // redis-cell's README example: 30 per 60 s; burst 16 (redis-cell's max_burst 15 + 1).
  const LimitSpec limit_ = spec(Algorithm::kGcra, "30/min", 16);
  GcraState state_;
  const Micros t0_ = kJan2026;
};

// A fresh key: 16 back to back, then one every 2 s; remaining and reset as redis-cell reports.
TEST_F(GcraTest, BurstThenSustainedRate) {
  const Outcome first = consume(t0_);
  EXPECT_TRUE(first.allowed);
  EXPECT_EQ(first.limit, 16u);
  EXPECT_EQ(first.remaining, 15u);
  EXPECT_EQ(first.reset_after_us, 2 * kMicrosPerSecond);
  for (int i = 1; i < 16; ++i) EXPECT_TRUE(consume(t0_).allowed) << i;
  const Outcome denied = consume(t0_);
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.remaining, 0u);
  EXPECT_EQ(denied.retry_after_us, 2 * kMicrosPerSecond);
  EXPECT_EQ(denied.reset_after_us, 32 * kMicrosPerSecond);
  EXPECT_FALSE(consume(t0_ + 2 * kMicrosPerSecond - 1).allowed);
  EXPECT_TRUE(consume(t0_ + 2 * kMicrosPerSecond).allowed);
}

// A weighted cost needs that many emission intervals of room; above the burst it never fits.
TEST_F(GcraTest, WeightedCost) {
  EXPECT_TRUE(consume(t0_, 10).allowed);
  const Outcome seven = consume(t0_, 7);
  EXPECT_FALSE(seven.allowed);
  EXPECT_EQ(seven.remaining, 6u);
  EXPECT_EQ(seven.retry_after_us, 2 * kMicrosPerSecond);
  EXPECT_EQ(consume(t0_, 17).reason, DenyReason::kCostExceedsLimit);
  EXPECT_EQ(consume(t0_, 17).retry_after_us, kNever);
}

// Emission intervals that are not whole microseconds are kept exactly: at 7/s the 70th
// request after the burst is due at exactly 10 s, where a rounded interval would drift.
TEST(GcraExactness, SevenPerSecondDoesNotDrift) {
  const LimitSpec limit = spec(Algorithm::kGcra, "7/s", 2);
  GcraState state;
  Micros at = kJan2026;
  ASSERT_TRUE(consumeGcra(state, at, limit, 2).allowed);
  for (int i = 1; i <= 70; ++i) {
    const Outcome early = consumeGcra(state, at, limit, 1);
    ASSERT_FALSE(early.allowed) << i;
    at += early.retry_after_us;
    ASSERT_TRUE(consumeGcra(state, at, limit, 1).allowed) << i;
    // Due at i/7 s after the start, rounded up to the microsecond.
    ASSERT_EQ(at - kJan2026, (i * kMicrosPerSecond + 6) / 7) << i;
  }
  EXPECT_EQ(at - kJan2026, 10 * kMicrosPerSecond);
}

}  // namespace
}  // namespace sluice::algorithm
