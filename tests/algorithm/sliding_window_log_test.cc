#include "algorithm/sliding_window_log.h"

#include <vector>

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

// Every cost's retry-after against a log whose entries hold different units, after the ring has
// wrapped (its oldest entries forgotten and new ones written over their slots), checked against
// a walk of the entries: the wait ends when the oldest entry through which enough units have
// slid out leaves the window. A cost that cannot fit before pending units expire waits a window.
TEST(SlidingWindowLogSearch, RetryAfterMatchesAWalkOfTheEntries) {
  const LimitSpec limit = spec(Algorithm::kSlidingWindowLog, "60/s");
  SlidingWindowLog log;
  struct Recorded {
    Micros at_us;
    std::uint64_t units;
  };
  std::vector<Recorded> recorded;
  const Micros t0 = kJan2026;
  Micros at = t0;
  // Fill, then let the first half slide out and refill, so the ring wraps.
  for (int round = 0; round < 2; ++round) {
    for (std::uint64_t units = 1; log.unitsRecorded() + units <= 60; units = units % 4 + 1) {
      at += 10'000;
      ASSERT_TRUE(log.consume(at, limit, units).allowed);
      recorded.push_back({at, units});
    }
    if (round == 0) {
      at = recorded[recorded.size() / 2].at_us + kMicrosPerSecond - 10'000;
      (void)log.evaluate(at, limit, 0);  // forgets the older half
    }
  }
  const Micros now = at + 1;
  (void)log.evaluate(now, limit, 0);
  std::erase_if(recorded,
                [&](const Recorded& entry) { return entry.at_us <= now - kMicrosPerSecond; });
  std::uint64_t used = 0;
  for (const Recorded& entry : recorded) used += entry.units;
  ASSERT_EQ(log.unitsRecorded(), used);
  ASSERT_GT(recorded.size(), 10u);
  for (std::uint64_t pending = 0; pending <= 2; ++pending) {
    for (std::uint64_t cost = 1; cost <= 60; ++cost) {
      const Outcome outcome = log.evaluate(now, limit, cost, pending);
      if (used + pending + cost <= 60) {
        EXPECT_TRUE(outcome.allowed) << "cost " << cost;
        continue;
      }
      Micros expected = now + kMicrosPerSecond;
      std::uint64_t expired = 0;
      for (const Recorded& entry : recorded) {
        expired += entry.units;
        if (expired >= used + pending + cost - 60) {
          expected = entry.at_us + kMicrosPerSecond;
          break;
        }
      }
      ASSERT_FALSE(outcome.allowed) << "cost " << cost;
      EXPECT_EQ(now + outcome.retry_after_us, expected)
          << "cost " << cost << " pending " << pending;
    }
  }
}

// A copy answers as the original does, and both go on independently.
TEST(SlidingWindowLogSearch, ACopyKeepsTheTotals) {
  const LimitSpec limit = spec(Algorithm::kSlidingWindowLog, "10/s");
  SlidingWindowLog log;
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(log.consume(kJan2026 + i * 100'000, limit, 1).allowed);
  const Micros now = kJan2026 + kMicrosPerSecond + 250'000;
  (void)log.evaluate(now, limit, 0);  // forgets the three at 0, 0.1 and 0.2 s
  SlidingWindowLog copy(log);
  EXPECT_EQ(copy.unitsRecorded(), 5u);
  const Outcome original = log.evaluate(now, limit, 9);
  const Outcome copied = copy.evaluate(now, limit, 9);
  EXPECT_EQ(copied.retry_after_us, original.retry_after_us);
  // 5 + 9 − 10 = 4 units must go: the fourth remaining entry (at 0.6 s) leaves at 1.6 s.
  EXPECT_EQ(now + copied.retry_after_us, kJan2026 + 600'000 + kMicrosPerSecond);
  ASSERT_TRUE(copy.consume(now, limit, 5).allowed);
  EXPECT_EQ(copy.unitsRecorded(), 10u);
  EXPECT_EQ(log.unitsRecorded(), 5u);
}

// A burst's room goes back once the burst has slid out: a key of a large limit used at a
// trickle afterwards does not keep the ring of its busiest minute. Its answers stay exact
// through the shrinking (the ring wraps and is copied several times here).
TEST(SlidingWindowLogMemory, ABurstsRoomGoesBackOnceItSlidOut) {
  const LimitSpec limit = spec(Algorithm::kSlidingWindowLog, "100000/min");
  SlidingWindowLog log;
  for (int i = 0; i < 20'000; ++i) ASSERT_TRUE(log.consume(kJan2026 + i, limit, 1).allowed);
  EXPECT_GE(log.capacity(), 20'000u);
  // A minute on, one unit a second: each record halves the room while it is under a quarter used.
  Micros now = kJan2026 + kMicrosPerMinute;
  for (int i = 0; i < 30; ++i, now += kMicrosPerSecond) {
    const Outcome outcome = log.consume(now, limit, 1);
    ASSERT_TRUE(outcome.allowed);
    EXPECT_EQ(outcome.remaining, 100'000u - log.unitsRecorded());
  }
  EXPECT_EQ(log.entries(), 30u);
  EXPECT_LE(log.capacity(), 4 * log.entries()) << "the burst's room was kept";
  // Still exact: the oldest of the 30 (at a minute) is what a full window's worth must wait for.
  const Outcome denied = log.evaluate(now, limit, 100'000 - 29);
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(now + denied.retry_after_us, kJan2026 + 2 * kMicrosPerMinute);
  // And it grows again for the next burst.
  for (int i = 0; i < 1'000; ++i) ASSERT_TRUE(log.consume(now + i, limit, 1).allowed);
  EXPECT_EQ(log.entries(), 1'030u);
}

}  // namespace
}  // namespace sluice::algorithm
