#include "sluice/backoff.h"

#include <algorithm>
#include <limits>
#include <set>

#include <gtest/gtest.h>

namespace sluice {
namespace {

constexpr Micros kBase = 100 * kMicrosPerMilli;

BackoffOptions options(int max_retries = 5, Micros cap = 30 * kMicrosPerSecond) {
  BackoffOptions chosen;
  chosen.base_us = kBase;
  chosen.cap_us = cap;
  chosen.max_retries = max_retries;
  chosen.seed = 42;
  return chosen;
}

TEST(BackoffTest, EachWaitIsDrawnUnderACeilingThatDoublesUpToTheCap) {
  // Over many seeds, the n-th wait stays within [0, min(cap, base * 2^n)], and its largest draw
  // comes near that ceiling: the ceiling doubles, the draw is not a constant fraction of it.
  const Micros cap = 1 * kMicrosPerSecond;
  for (int retry = 0; retry < 6; ++retry) {
    const Micros ceiling = std::min(cap, kBase << retry);
    Micros largest = 0;
    Micros smallest = ceiling;
    for (std::uint64_t seed = 1; seed <= 400; ++seed) {
      BackoffOptions chosen = options(10, cap);
      chosen.seed = seed;
      Backoff backoff(chosen);
      std::optional<Micros> wait;
      for (int i = 0; i <= retry; ++i) wait = backoff.next();
      ASSERT_TRUE(wait.has_value());
      EXPECT_GE(*wait, 0);
      EXPECT_LE(*wait, ceiling) << "retry " << retry;
      largest = std::max(largest, *wait);
      smallest = std::min(smallest, *wait);
    }
    EXPECT_GT(largest, ceiling * 9 / 10) << "retry " << retry;
    EXPECT_LT(smallest, ceiling / 10) << "retry " << retry;  // full jitter reaches near zero
  }
}

TEST(BackoffTest, ClientsRefusedTogetherComeBackSpreadOut) {
  std::set<Micros> waits;
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    BackoffOptions chosen = options();
    chosen.seed = seed;
    waits.insert(*Backoff(chosen).next());
  }
  EXPECT_GT(waits.size(), 45U);
}

TEST(BackoffTest, StopsAfterMaxRetriesAndStartsOverAfterReset) {
  Backoff backoff(options(3));
  EXPECT_TRUE(backoff.next().has_value());
  EXPECT_TRUE(backoff.next().has_value());
  EXPECT_TRUE(backoff.next().has_value());
  EXPECT_FALSE(backoff.next().has_value());
  EXPECT_EQ(backoff.retries(), 3);
  backoff.reset();
  const auto wait = backoff.next();
  ASSERT_TRUE(wait.has_value());
  EXPECT_LE(*wait, kBase);  // the first ceiling again
}

TEST(BackoffTest, ZeroRetriesNeverRetries) {
  Backoff backoff(options(0));
  EXPECT_FALSE(backoff.next().has_value());
  EXPECT_FALSE(backoff.next(kMicrosPerSecond).has_value());
}

TEST(BackoffTest, TheServersWaitIsAFloorWithAtMostBaseAdded) {
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    BackoffOptions chosen = options();
    chosen.seed = seed;
    Backoff backoff(chosen);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(backoff.next());  // the ceiling is 800 ms by now
    const auto wait = backoff.next(5 * kMicrosPerSecond);
    ASSERT_TRUE(wait.has_value());
    EXPECT_GE(*wait, 5 * kMicrosPerSecond);
    EXPECT_LE(*wait, 5 * kMicrosPerSecond + kBase);
  }
}

TEST(BackoffTest, AServerWaitLongerThanTheCallerWillWaitEndsTheRetries) {
  BackoffOptions chosen = options();
  chosen.max_server_wait_us = 10 * kMicrosPerSecond;
  Backoff backoff(chosen);
  EXPECT_TRUE(backoff.next(10 * kMicrosPerSecond).has_value());
  EXPECT_FALSE(backoff.next(11 * kMicrosPerSecond).has_value());
}

// A caller that always honours the server (max_server_wait_us at the largest value) and a
// Retry-After that saturates: the wait saturates too, where it wrapped to a negative delay (an
// immediate retry). A cap at the largest value doubles without overflowing.
TEST(BackoffTest, HugeWaitsAndCapsSaturate) {
  BackoffOptions chosen = options(100, std::numeric_limits<Micros>::max());
  chosen.max_server_wait_us = std::numeric_limits<Micros>::max();
  Backoff backoff(chosen);
  const auto wait = backoff.next(std::numeric_limits<Micros>::max());
  ASSERT_TRUE(wait.has_value());
  EXPECT_EQ(*wait, std::numeric_limits<Micros>::max());
  for (int i = 0; i < 90; ++i) {
    const auto next = backoff.next();
    ASSERT_TRUE(next.has_value());
    ASSERT_GE(*next, 0) << "retry " << i;
  }
}

TEST(BackoffTest, ManyRetriesNeitherOverflowNorPassTheCap) {
  Backoff backoff(options(200, 2 * kMicrosPerSecond));
  for (int i = 0; i < 200; ++i) {
    const auto wait = backoff.next();
    ASSERT_TRUE(wait.has_value());
    ASSERT_GE(*wait, 0);
    ASSERT_LE(*wait, 2 * kMicrosPerSecond);
  }
}

}  // namespace
}  // namespace sluice
