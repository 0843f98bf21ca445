#include "algorithm/fixed_window.h"

#include <gtest/gtest.h>

#include "support/specs.h"

namespace sluice::algorithm {
namespace {

using sluice::testing::kJan2026;
using sluice::testing::spec;

class FixedWindowTest : public ::testing::Test {
 protected:
  Outcome consume(Micros at_us, std::uint64_t cost = 1) {
    return consumeFixedWindow(state_, at_us, limit_, cost);
  }

  const LimitSpec limit_ = spec(Algorithm::kFixedWindow, "5/min");
  FixedWindowState state_;
  // 11:00:00 on 2026-01-01, a minute boundary.
  const Micros eleven_ = kJan2026 + 11 * kMicrosPerHour;
};

// The classic boundary burst: 5 at 11:00:59 and 5 more at 11:01:00.
TEST_F(FixedWindowTest, BoundaryBurstAdmitsTwiceTheLimit) {
  const Micros at_0059 = eleven_ + 59 * kMicrosPerSecond;
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(consume(at_0059).allowed) << i;
  const Outcome sixth = consume(at_0059);
  EXPECT_FALSE(sixth.allowed);
  EXPECT_EQ(sixth.retry_after_us, kMicrosPerSecond);
  const Micros at_0100 = eleven_ + kMicrosPerMinute;
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(consume(at_0100).allowed) << i;
  EXPECT_FALSE(consume(at_0100).allowed);
}

// Outcome fields: remaining counts down, reset is the window end, retry exact to the µs.
TEST_F(FixedWindowTest, ReportsRemainingResetAndExactRetry) {
  const Micros at = eleven_ + 20 * kMicrosPerSecond;
  const Outcome first = consume(at, 2);
  EXPECT_TRUE(first.allowed);
  EXPECT_EQ(first.limit, 5u);
  EXPECT_EQ(first.remaining, 3u);
  EXPECT_EQ(first.reset_after_us, 40 * kMicrosPerSecond);
  EXPECT_EQ(first.retry_after_us, 0);
  EXPECT_TRUE(consume(at, 3).allowed);
  const Outcome denied = consume(at);
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.reason, DenyReason::kOverLimit);
  EXPECT_EQ(denied.remaining, 0u);
  EXPECT_FALSE(consume(at + denied.retry_after_us - 1).allowed);
  EXPECT_TRUE(consume(at + denied.retry_after_us).allowed);
}

// Cost 0 peeks; a cost above the limit is refused for good and consumes nothing.
TEST_F(FixedWindowTest, PeekAndOversizedCost) {
  EXPECT_TRUE(consume(eleven_, 4).allowed);
  const Outcome peek = consume(eleven_, 0);
  EXPECT_TRUE(peek.allowed);
  EXPECT_EQ(peek.remaining, 1u);
  const Outcome huge = consume(eleven_, 6);
  EXPECT_FALSE(huge.allowed);
  EXPECT_EQ(huge.reason, DenyReason::kCostExceedsLimit);
  EXPECT_EQ(huge.retry_after_us, kNever);
  EXPECT_EQ(consume(eleven_, 0).remaining, 1u);
}

// A clock that steps back into an earlier window does not reopen that window's budget.
TEST_F(FixedWindowTest, ClockSteppingBackStaysInTheStoredWindow) {
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(consume(eleven_ + kMicrosPerMinute).allowed);
  EXPECT_FALSE(consume(eleven_ + 30 * kMicrosPerSecond).allowed);
}

// Windows align to multiples of their length: a day window resets at UTC midnight.
TEST(FixedWindowAlignment, DayWindowsResetAtUtcMidnight) {
  const LimitSpec daily = spec(Algorithm::kFixedWindow, "2/day");
  FixedWindowState state;
  const Micros late = kJan2026 + 23 * kMicrosPerHour;
  EXPECT_TRUE(consumeFixedWindow(state, late, daily, 2).allowed);
  const Outcome denied = consumeFixedWindow(state, late, daily, 1);
  EXPECT_EQ(denied.retry_after_us, kMicrosPerHour);
  EXPECT_EQ(fixedWindowFullAt(state, daily), kJan2026 + kMicrosPerDay);
}

}  // namespace
}  // namespace sluice::algorithm
