#include "algorithm/sliding_window_log.h"

#include <gtest/gtest.h>

#include "support/specs.h"

namespace sluice::algorithm {
namespace {

using sluice::testing::kJan2026;
using sluice::testing::spec;

class SlidingWindowLogTest : public ::testing::Test {
 protected:
  Outcome consume(Micros at_us, std::uint64_t cost = 1) {
    return log_.consume(at_us, limit_, cost);
  }

  const LimitSpec limit_ = spec(Algorithm::kSlidingWindowLog, "3/s");
  SlidingWindowLog log_;
  const Micros t0_ = kJan2026;
};

// No boundary burst: three at 0.9 s fill every window that contains them.
TEST_F(SlidingWindowLogTest, NoBoundaryBurst) {
  const Micros at = t0_ + 900 * kMicrosPerMilli;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(consume(at).allowed);
  EXPECT_FALSE(consume(t0_ + kMicrosPerSecond).allowed);
  EXPECT_FALSE(consume(at + kMicrosPerSecond - 1).allowed);
  EXPECT_TRUE(consume(at + kMicrosPerSecond).allowed);
}

// Retry waits for exactly as many of the oldest units as the cost needs to slide out.
TEST_F(SlidingWindowLogTest, RetryIsExact) {
  EXPECT_TRUE(consume(t0_).allowed);
  EXPECT_TRUE(consume(t0_ + 100).allowed);
  EXPECT_TRUE(consume(t0_ + 200).allowed);
  const Micros at = t0_ + 300;
  const Outcome two = consume(at, 2);
  EXPECT_FALSE(two.allowed);
  EXPECT_EQ(at + two.retry_after_us, t0_ + 100 + kMicrosPerSecond);
  EXPECT_FALSE(consume(at + two.retry_after_us - 1, 2).allowed);
  EXPECT_TRUE(consume(at + two.retry_after_us, 2).allowed);
}

// Memory stays bounded by the limit however many requests arrive.
TEST_F(SlidingWindowLogTest, EntriesBoundedByTheLimit) {
  for (int i = 0; i < 10'000; ++i) (void)consume(t0_ + i * 1000);
  EXPECT_LE(log_.entries(), 3u);
  EXPECT_LE(log_.unitsRecorded(), 3u);
}

// Pending units of the same request count against the limit before they are recorded.
TEST_F(SlidingWindowLogTest, PendingUnitsCount) {
  EXPECT_TRUE(consume(t0_).allowed);
  EXPECT_TRUE(log_.evaluate(t0_, limit_, 1, 1).allowed);
  EXPECT_FALSE(log_.evaluate(t0_, limit_, 1, 2).allowed);
}

// Peek, oversized cost and reset.
TEST_F(SlidingWindowLogTest, PeekOversizedAndReset) {
  EXPECT_TRUE(consume(t0_, 2).allowed);
  const Outcome peek = consume(t0_ + 10, 0);
  EXPECT_TRUE(peek.allowed);
  EXPECT_EQ(peek.remaining, 1u);
  EXPECT_EQ(peek.reset_after_us, kMicrosPerSecond - 10);
  EXPECT_EQ(consume(t0_, 4).reason, DenyReason::kCostExceedsLimit);
  EXPECT_EQ(log_.fullAt(limit_), t0_ + kMicrosPerSecond);
}

}  // namespace
}  // namespace sluice::algorithm
