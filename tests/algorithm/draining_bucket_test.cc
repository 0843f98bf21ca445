#include "algorithm/draining_bucket.h"

#include <gtest/gtest.h>

#include "support/specs.h"

namespace sluice::algorithm {
namespace {

using sluice::testing::kJan2026;
using sluice::testing::spec;

class TokenBucketTest : public ::testing::Test {
 protected:
  Outcome consume(Micros at_us, std::uint64_t cost = 1) {
    return consumeDrainingBucket(state_, at_us, limit_, cost);
  }

  const LimitSpec limit_ = spec(Algorithm::kTokenBucket, "3/min", 3);
  DrainingBucketState state_;
  const Micros t0_ = kJan2026;
};

// The classic example: 3/min admits 3, denies the 4th, and refills one token every 20 s.
TEST_F(TokenBucketTest, AdmitsThreeDeniesFourthRefills) {
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(consume(t0_).allowed) << i;
  const Outcome fourth = consume(t0_);
  EXPECT_FALSE(fourth.allowed);
  EXPECT_EQ(fourth.retry_after_us, 20 * kMicrosPerSecond);
  EXPECT_EQ(fourth.reset_after_us, 60 * kMicrosPerSecond);
  EXPECT_FALSE(consume(t0_ + 20 * kMicrosPerSecond - 1).allowed);
  EXPECT_TRUE(consume(t0_ + 20 * kMicrosPerSecond).allowed);
  const Outcome full = consume(t0_ + 2 * kMicrosPerMinute, 0);
  EXPECT_EQ(full.remaining, 3u);
  EXPECT_EQ(full.reset_after_us, 0);
}

// Waiting longer than a full refill never stores more than the burst.
TEST_F(TokenBucketTest, CapacityCapsRefill) {
  EXPECT_TRUE(consume(t0_, 3).allowed);
  EXPECT_TRUE(consume(t0_ + kMicrosPerDay, 3).allowed);
  EXPECT_FALSE(consume(t0_ + kMicrosPerDay).allowed);
}

// Fractional rates stay exact: 3/s refills one token every 333333.33 µs, so three tokens take
// exactly one second, not 999999 µs.
TEST(TokenBucketExactness, ThirdsOfASecond) {
  const LimitSpec limit = spec(Algorithm::kTokenBucket, "3/s", 3);
  DrainingBucketState state;
  EXPECT_TRUE(consumeDrainingBucket(state, kJan2026, limit, 3).allowed);
  EXPECT_FALSE(consumeDrainingBucket(state, kJan2026 + kMicrosPerSecond - 1, limit, 3).allowed);
  EXPECT_TRUE(consumeDrainingBucket(state, kJan2026 + kMicrosPerSecond, limit, 3).allowed);
}

// A clock stepping back is treated as the last time seen: no tokens are minted.
TEST_F(TokenBucketTest, ClockSteppingBack) {
  EXPECT_TRUE(consume(t0_ + kMicrosPerMinute, 3).allowed);
  EXPECT_FALSE(consume(t0_).allowed);
  EXPECT_FALSE(consume(t0_ + kMicrosPerMinute).allowed);
}

// The meter denies a request that would overflow the bucket; remaining is the room left.
TEST(LeakyBucketMeter, OverflowIsDenied) {
  const LimitSpec meter = spec(Algorithm::kLeakyBucketMeter, "10/s", 5);
  DrainingBucketState state;
  EXPECT_TRUE(consumeDrainingBucket(state, kJan2026, meter, 4).allowed);
  const Outcome two = consumeDrainingBucket(state, kJan2026, meter, 2);
  EXPECT_FALSE(two.allowed);
  EXPECT_EQ(two.remaining, 1u);
  EXPECT_EQ(two.retry_after_us, 100 * kMicrosPerMilli);  // one unit leaks in 100 ms
  EXPECT_EQ(two.delay_us, 0);
  EXPECT_TRUE(consumeDrainingBucket(state, kJan2026 + 100 * kMicrosPerMilli, meter, 2).allowed);
}

// The shaper queues: each admitted request waits for the water ahead of it to leak out, and a
// full queue denies.
TEST(LeakyBucketShaper, DelaysUntilTheSlotThenDeniesWhenFull) {
  const LimitSpec shaper = spec(Algorithm::kLeakyBucketShaper, "10/s", 3);
  DrainingBucketState state;
  const Micros slot = 100 * kMicrosPerMilli;
  for (int i = 0; i < 3; ++i) {
    const Outcome queued = consumeDrainingBucket(state, kJan2026, shaper, 1);
    EXPECT_TRUE(queued.allowed);
    EXPECT_EQ(queued.delay_us, i * slot);
  }
  const Outcome full = consumeDrainingBucket(state, kJan2026, shaper, 1);
  EXPECT_FALSE(full.allowed);
  EXPECT_EQ(full.retry_after_us, slot);
  const Outcome later = consumeDrainingBucket(state, kJan2026 + slot, shaper, 1);
  EXPECT_TRUE(later.allowed);
  EXPECT_EQ(later.delay_us, 2 * slot);
}

// A peek (cost 0) takes no slot in the queue, so it is not held for one: a caller asking how
// much room is left gets its answer at once, however long the queue.
TEST(LeakyBucketShaper, APeekWaitsForNoSlot) {
  const LimitSpec shaper = spec(Algorithm::kLeakyBucketShaper, "10/s", 3);
  DrainingBucketState state;
  ASSERT_TRUE(consumeDrainingBucket(state, kJan2026, shaper, 2).allowed);
  const Outcome peek = consumeDrainingBucket(state, kJan2026, shaper, 0);
  EXPECT_TRUE(peek.allowed);
  EXPECT_EQ(peek.delay_us, 0);
  EXPECT_EQ(peek.remaining, 1U);
  EXPECT_EQ(consumeDrainingBucket(state, kJan2026, shaper, 1).delay_us,
            200 * kMicrosPerMilli);  // the peek took no slot either
}

}  // namespace
}  // namespace sluice::algorithm
