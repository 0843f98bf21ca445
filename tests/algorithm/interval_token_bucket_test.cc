#include "algorithm/interval_token_bucket.h"

#include <gtest/gtest.h>

#include "support/specs.h"

namespace sluice::algorithm {
namespace {

using sluice::testing::kJan2026;
using sluice::testing::spec;

class IntervalTokenBucketTest : public ::testing::Test {
 protected:
  Outcome consume(Micros at_us, std::uint64_t cost = 1) {
    return consumeIntervalTokenBucket(state_, at_us, limit_, cost);
  }

  // 10 tokens every 10 s, at most 25.
  const LimitSpec limit_ = spec(Algorithm::kTokenBucketInterval, "10/10s", 25);
  IntervalTokenBucketState state_;
  const Micros t0_ = kJan2026;
  const Micros interval_ = 10 * kMicrosPerSecond;
};

// Tokens arrive all at once at each interval, not continuously.
TEST_F(IntervalTokenBucketTest, RefillsInSteps) {
  EXPECT_TRUE(consume(t0_, 25).allowed);
  EXPECT_FALSE(consume(t0_ + interval_ - 1).allowed);
  const Outcome after_one = consume(t0_ + interval_, 0);
  EXPECT_EQ(after_one.remaining, 10u);
  EXPECT_TRUE(consume(t0_ + interval_ + 5 * kMicrosPerSecond, 10).allowed);
  EXPECT_FALSE(consume(t0_ + 2 * interval_ - 1).allowed);
  EXPECT_TRUE(consume(t0_ + 2 * interval_).allowed);
}

// Retry waits for as many whole intervals as the missing tokens need; reset for all of them.
TEST_F(IntervalTokenBucketTest, RetryAndResetCountWholeIntervals) {
  EXPECT_TRUE(consume(t0_, 25).allowed);
  const Micros at = t0_ + 3 * kMicrosPerSecond;
  const Outcome twelve = consume(at, 12);
  EXPECT_FALSE(twelve.allowed);
  EXPECT_EQ(at + twelve.retry_after_us, t0_ + 2 * interval_);
  EXPECT_EQ(at + twelve.reset_after_us, t0_ + 3 * interval_);
  EXPECT_FALSE(consume(at + twelve.retry_after_us - 1, 12).allowed);
  EXPECT_TRUE(consume(at + twelve.retry_after_us, 12).allowed);
}

// Never above max_amount, and a full bucket is the same as an unused key.
TEST_F(IntervalTokenBucketTest, CapsAtMaxAmount) {
  EXPECT_TRUE(consume(t0_, 1).allowed);
  EXPECT_EQ(intervalTokenBucketFullAt(state_, limit_), t0_ + interval_);
  EXPECT_EQ(consume(t0_ + 100 * interval_, 0).remaining, 25u);
  EXPECT_EQ(consume(t0_, 26).reason, DenyReason::kCostExceedsLimit);
}

// A long idle time at a high rate refills fully: intervals × count passes 64 bits (2^33 × 2^31
// here), and multiplied before widening it wrapped to nothing refilled.
TEST(IntervalTokenBucketLongIdle, RefillsPastSixtyFourBits) {
  const LimitSpec fast = spec(Algorithm::kTokenBucketInterval, "2147483648/ms", 2147483648);
  IntervalTokenBucketState state;
  ASSERT_TRUE(consumeIntervalTokenBucket(state, kJan2026, fast, 2147483648).allowed);
  const Micros later = kJan2026 + (Micros{1} << 33) * kMicrosPerMilli;
  EXPECT_EQ(consumeIntervalTokenBucket(state, later, fast, 0).remaining, 2147483648u);
}

}  // namespace
}  // namespace sluice::algorithm
