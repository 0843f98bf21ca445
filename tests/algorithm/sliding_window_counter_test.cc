#include "algorithm/sliding_window_counter.h"

#include <gtest/gtest.h>

#include "support/specs.h"

namespace sluice::algorithm {
namespace {

using sluice::testing::kJan2026;
using sluice::testing::spec;

class SlidingWindowCounterTest : public ::testing::Test {
 protected:
  Outcome consume(Micros at_us, std::uint64_t cost = 1) {
    return consumeSlidingWindowCounter(state_, at_us, limit_, cost);
  }

  const LimitSpec limit_ = spec(Algorithm::kSlidingWindowCounter, "100/h");
  SlidingWindowCounterState state_;
  const Micros hour_ = kJan2026 + 5 * kMicrosPerHour;  // an hour boundary
};

// The worked example: 84 in the previous hour, 36 in this one, 25% in: estimate 99, admits one
// (reaching 100), denies the next.
TEST_F(SlidingWindowCounterTest, WorkedExampleEstimates99) {
  EXPECT_TRUE(consume(hour_ - kMicrosPerHour, 84).allowed);
  const Micros quarter = hour_ + kMicrosPerHour / 4;
  EXPECT_TRUE(consume(quarter, 36).allowed);
  const Outcome peek = consume(quarter, 0);
  EXPECT_EQ(peek.remaining, 1u);  // 100 − (84 × 0.75 + 36) = 1
  EXPECT_TRUE(consume(quarter).allowed);
  const Outcome denied = consume(quarter);
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.remaining, 0u);
  // Retry is exact: the previous window's weight fades until the request fits.
  EXPECT_FALSE(consume(quarter + denied.retry_after_us - 1).allowed);
  EXPECT_TRUE(consume(quarter + denied.retry_after_us).allowed);
}

// When this window alone is full, the retry lands in the next window, where this window's
// count is the one that fades.
TEST_F(SlidingWindowCounterTest, RetryInTheNextWindow) {
  EXPECT_TRUE(consume(hour_ + 10 * kMicrosPerMinute, 100).allowed);
  const Micros at = hour_ + 20 * kMicrosPerMinute;
  const Outcome denied = consume(at, 10);
  EXPECT_FALSE(denied.allowed);
  EXPECT_GT(at + denied.retry_after_us, hour_ + kMicrosPerHour);
  EXPECT_FALSE(consume(at + denied.retry_after_us - 1, 10).allowed);
  EXPECT_TRUE(consume(at + denied.retry_after_us, 10).allowed);
  // 100 × (1 − 6 min / 60 min) + 10 = 100: six minutes into the next hour.
  EXPECT_EQ(at + denied.retry_after_us, hour_ + kMicrosPerHour + 6 * kMicrosPerMinute);
}

// Reset: full again two windows after the last counted one started.
TEST_F(SlidingWindowCounterTest, ResetAndFullAt) {
  const Outcome first = consume(hour_ + kMicrosPerMinute);
  EXPECT_EQ(first.reset_after_us, 2 * kMicrosPerHour - kMicrosPerMinute);
  EXPECT_EQ(slidingWindowCounterFullAt(state_, limit_), hour_ + 2 * kMicrosPerHour);
  EXPECT_EQ(consume(hour_ + 2 * kMicrosPerHour, 0).remaining, 100u);
}

// Cost above the limit never passes.
TEST_F(SlidingWindowCounterTest, OversizedCost) {
  const Outcome huge = consume(hour_, 101);
  EXPECT_EQ(huge.reason, DenyReason::kCostExceedsLimit);
  EXPECT_EQ(huge.retry_after_us, kNever);
  EXPECT_EQ(consume(hour_, 0).remaining, 100u);
}

}  // namespace
}  // namespace sluice::algorithm
