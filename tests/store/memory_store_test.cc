#include "store/memory_store.h"

#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/specs.h"

namespace sluice {
namespace {

using testing::kJan2026;
using testing::spec;

class MemoryStoreTest : public ::testing::Test {
 protected:
  Outcome apply(MemoryStore& store, std::string_view key, const LimitSpec& limit,
                std::uint64_t cost, Micros now_us) {
    const LimitCheck check{key, &limit, cost};
    Outcome outcome;
    clock_.set(now_us);
    EXPECT_EQ(store.apply(std::span(&check, 1), clock_, std::span(&outcome, 1)), StoreStatus::kOk);
    return outcome;
  }
  std::vector<Outcome> applyAll(MemoryStore& store, const std::vector<LimitCheck>& checks,
                                Micros now_us) {
    std::vector<Outcome> outcomes(checks.size());
    clock_.set(now_us);
    EXPECT_EQ(store.apply(checks, clock_, outcomes), StoreStatus::kOk);
    return outcomes;
  }

  FakeClock clock_;
  MemoryStore store_{MemoryStoreOptions{1000, 4}, KeyHasher(1, 2)};
  const LimitSpec per_second_ = spec(Algorithm::kFixedWindow, "2/s");
  const LimitSpec bucket_ = spec(Algorithm::kTokenBucket, "1/min", 3);
  const LimitSpec log_ = spec(Algorithm::kSlidingWindowLog, "2/s");
  const Micros t0_ = kJan2026;
};

// Keys are independent counters; state persists between calls.
TEST_F(MemoryStoreTest, KeysAreIndependent) {
  EXPECT_TRUE(apply(store_, "a", per_second_, 2, t0_).allowed);
  EXPECT_FALSE(apply(store_, "a", per_second_, 1, t0_).allowed);
  EXPECT_TRUE(apply(store_, "b", per_second_, 2, t0_).allowed);
  EXPECT_TRUE(apply(store_, "a", log_, 2, t0_).allowed);  // another algorithm: another counter
  EXPECT_FALSE(apply(store_, "a", log_, 1, t0_).allowed);
  EXPECT_EQ(store_.keyCount(), 3u);
}

// Peeks and denials never create keys.
TEST_F(MemoryStoreTest, PeeksAndDenialsCreateNothing) {
  EXPECT_TRUE(apply(store_, "peek", bucket_, 0, t0_).allowed);
  EXPECT_FALSE(apply(store_, "huge", bucket_, 4, t0_).allowed);
  EXPECT_TRUE(apply(store_, "peek", log_, 0, t0_).allowed);
  EXPECT_EQ(store_.keyCount(), 0u);
}

// A key whose state is back to full is dropped by a sweep and behaves as new afterwards.
TEST_F(MemoryStoreTest, IdleKeysExpireOnceFull) {
  EXPECT_TRUE(apply(store_, "a", bucket_, 3, t0_).allowed);
  EXPECT_TRUE(apply(store_, "b", log_, 1, t0_).allowed);
  // A minute later "b" has slid out of its window; "a" still misses 2 tokens.
  EXPECT_EQ(store_.sweepExpired(t0_ + kMicrosPerMinute), 1u);
  EXPECT_EQ(store_.keyCount(), 1u);
  EXPECT_EQ(store_.sweepExpired(t0_ + 3 * kMicrosPerMinute), 1u);
  EXPECT_EQ(store_.keyCount(), 0u);
  EXPECT_EQ(apply(store_, "a", bucket_, 0, t0_ + 3 * kMicrosPerMinute).remaining, 3u);
}

// Without explicit sweeps, a shard sweeps itself as it grows: keys that came and went leave
// nothing behind.
TEST_F(MemoryStoreTest, GrowthTriggersSweeps) {
  MemoryStore store(MemoryStoreOptions{1'000'000, 1}, KeyHasher(3, 4));
  Micros now = t0_;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 1000; ++i) {
      EXPECT_TRUE(
          apply(store, "r" + std::to_string(round) + ":" + std::to_string(i), per_second_, 1, now)
              .allowed);
    }
    now += 2 * kMicrosPerSecond;  // every key of this round is full again
  }
  EXPECT_LE(store.keyCount(), 2 * 1024u + 1000u);
  EXPECT_EQ(store.evictedLive(), 0u);
}

// A flood of new keys cannot grow memory past max_keys; keys back to full go first.
TEST_F(MemoryStoreTest, MaxKeysBoundEvictsExpiredFirst) {
  MemoryStore store(MemoryStoreOptions{100, 1}, KeyHasher(5, 6));
  const LimitSpec daily = spec(Algorithm::kFixedWindow, "5/day");
  for (int i = 0; i < 50; ++i) {
    EXPECT_TRUE(apply(store, "keep:" + std::to_string(i), daily, 1, t0_).allowed);
  }
  for (int i = 0; i < 50; ++i) {
    EXPECT_TRUE(apply(store, "short:" + std::to_string(i), per_second_, 1, t0_).allowed);
  }
  EXPECT_EQ(store.keyCount(), 100u);
  const Micros later = t0_ + 5 * kMicrosPerSecond;  // the short keys are full again
  for (int i = 0; i < 50; ++i) {
    EXPECT_TRUE(apply(store, "new:" + std::to_string(i), per_second_, 1, later).allowed);
  }
  EXPECT_LE(store.keyCount(), 100u);
  EXPECT_EQ(store.evictedLive(), 0u);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(apply(store, "keep:" + std::to_string(i), daily, 0, later).remaining, 4u) << i;
  }
  // Past the bound with only live keys, the ones closest to full are evicted in batches.
  for (int i = 0; i < 1000; ++i) {
    EXPECT_TRUE(apply(store, "flood:" + std::to_string(i), daily, 1, later).allowed);
  }
  EXPECT_LE(store.keyCount(), 100u);
  EXPECT_GT(store.evictedLive(), 0u);
}

// Keys full again at the same second (window counters in one window) are evicted least used
// first: a flood of fresh keys does not evict the exhausted counters and so hand their limit
// back. (Ties went by hash before, and nearly all eight were evicted here.)
TEST_F(MemoryStoreTest, EvictionKeepsTheMostUsedOfKeysFullAtTheSameTime) {
  MemoryStore store(MemoryStoreOptions{64, 1}, KeyHasher(5, 6));
  const LimitSpec per_minute = spec(Algorithm::kFixedWindow, "3/min");
  for (int i = 0; i < 8; ++i) {
    for (int n = 0; n < 3; ++n)
      ASSERT_TRUE(apply(store, "spent:" + std::to_string(i), per_minute, 1, t0_).allowed);
  }
  // A multi-check request takes the other path (applyMany and commit): its keys too.
  const std::vector<LimitCheck> both{{"spent:pair-a", &per_minute, 3},
                                     {"spent:pair-b", &per_minute, 3}};
  ASSERT_TRUE(applyAll(store, both, t0_)[0].allowed);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(apply(store, "fresh:" + std::to_string(i), per_minute, 1, t0_).allowed);
  }
  EXPECT_GT(store.evictedLive(), 900u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_FALSE(apply(store, "spent:" + std::to_string(i), per_minute, 1, t0_).allowed) << i;
  }
  EXPECT_FALSE(apply(store, "spent:pair-a", per_minute, 1, t0_).allowed);
  EXPECT_FALSE(apply(store, "spent:pair-b", per_minute, 1, t0_).allowed);
}

// All-or-nothing: when one limit denies, none is consumed, and the others report as they are.
TEST_F(MemoryStoreTest, AllOrNothingAcrossKeysAndAlgorithms) {
  EXPECT_TRUE(apply(store_, "tight", per_second_, 2, t0_).allowed);
  const std::vector<LimitCheck> checks{
      {"loose", &bucket_, 1}, {"log", &log_, 1}, {"tight", &per_second_, 1}};
  const std::vector<Outcome> denied = applyAll(store_, checks, t0_);
  EXPECT_TRUE(denied[0].allowed);
  EXPECT_EQ(denied[0].remaining, 3u);  // as it is: nothing was taken
  EXPECT_TRUE(denied[1].allowed);
  EXPECT_EQ(denied[1].remaining, 2u);
  EXPECT_FALSE(denied[2].allowed);
  EXPECT_EQ(apply(store_, "loose", bucket_, 0, t0_).remaining, 3u);
  EXPECT_EQ(apply(store_, "log", log_, 0, t0_).remaining, 2u);

  const std::vector<Outcome> allowed = applyAll(store_, checks, t0_ + kMicrosPerSecond);
  for (const Outcome& outcome : allowed) EXPECT_TRUE(outcome.allowed);
  EXPECT_EQ(apply(store_, "loose", bucket_, 0, t0_ + kMicrosPerSecond).remaining, 2u);
  EXPECT_EQ(apply(store_, "log", log_, 0, t0_ + kMicrosPerSecond).remaining, 1u);
  EXPECT_EQ(apply(store_, "tight", per_second_, 0, t0_ + kMicrosPerSecond).remaining, 1u);
}

// The same counter twice in one request counts both costs, for new and existing keys alike.
TEST_F(MemoryStoreTest, RepeatedKeyInOneRequestAddsUp) {
  for (const LimitSpec* limit : {&bucket_, &log_}) {
    const std::vector<LimitCheck> twice{{"same", limit, 1}, {"same", limit, 1}};
    const std::vector<Outcome> first = applyAll(store_, twice, t0_);
    EXPECT_TRUE(first[0].allowed && first[1].allowed);
    EXPECT_EQ(first[1].remaining, limit->limit() - 2);
    EXPECT_EQ(apply(store_, "same", *limit, 0, t0_).remaining, limit->limit() - 2);
    const std::vector<LimitCheck> again{{"same", limit, 1}, {"same", limit, 1}};
    const std::vector<Outcome> second = applyAll(store_, again, t0_);
    EXPECT_FALSE(second[0].allowed && second[1].allowed) << limit->toString();
    EXPECT_EQ(apply(store_, "same", *limit, 0, t0_).remaining, limit->limit() - 2);
  }
}

// A limit lowered on the same counter reports 0 remaining, never a wrapped-around number.
TEST_F(MemoryStoreTest, LoweredLimitClampsRemaining) {
  const LimitSpec ten = spec(Algorithm::kFixedWindow, "10/s");
  const LimitSpec five = spec(Algorithm::kFixedWindow, "5/s");
  EXPECT_TRUE(apply(store_, "k", ten, 10, t0_).allowed);
  const Outcome peek = apply(store_, "k", five, 0, t0_);
  EXPECT_EQ(peek.remaining, 0u);
  EXPECT_FALSE(apply(store_, "k", five, 1, t0_).allowed);
}

// Token bucket states are scaled by the rate, so another count is another counter.
TEST_F(MemoryStoreTest, ScaledStatesAreNotSharedAcrossCounts) {
  const LimitSpec slow = spec(Algorithm::kTokenBucket, "3/s", 10);
  const LimitSpec fast = spec(Algorithm::kTokenBucket, "10/s", 10);
  EXPECT_TRUE(apply(store_, "k", slow, 10, t0_).allowed);
  const Outcome other = apply(store_, "k", fast, 1, t0_);
  EXPECT_TRUE(other.allowed);
  EXPECT_EQ(other.remaining, 9u);
}

// Making room never evicts a key of the request itself: its consumption sticks.
TEST_F(MemoryStoreTest, EvictionSparesTheRequestsOwnKeys) {
  MemoryStore store(MemoryStoreOptions{4, 1}, KeyHasher(7, 8));
  const LimitSpec daily = spec(Algorithm::kFixedWindow, "5/day");
  for (const char* key : {"a", "b", "c", "d"})
    EXPECT_TRUE(apply(store, key, daily, 1, t0_).allowed);
  const std::vector<Outcome> both = applyAll(store, {{"a", &daily, 1}, {"e", &daily, 1}}, t0_);
  EXPECT_TRUE(both[0].allowed && both[1].allowed);
  EXPECT_EQ(apply(store, "a", daily, 0, t0_).remaining, 3u);
  EXPECT_EQ(apply(store, "e", daily, 0, t0_).remaining, 4u);
  EXPECT_LE(store.keyCount(), 4u);

  // A bound smaller than one request's keys is exceeded by that request rather than undone.
  MemoryStore tiny(MemoryStoreOptions{1, 1}, KeyHasher(9, 10));
  const LimitSpec once = spec(Algorithm::kFixedWindow, "1/min");
  const std::vector<Outcome> pair = applyAll(tiny, {{"x", &once, 1}, {"y", &once, 1}}, t0_);
  EXPECT_TRUE(pair[0].allowed && pair[1].allowed);
  EXPECT_EQ(apply(tiny, "x", once, 0, t0_).remaining, 0u);
  EXPECT_EQ(apply(tiny, "y", once, 0, t0_).remaining, 0u);
}

// A key repeated in one request is judged on its combined cost: never, if the sum exceeds the
// limit; otherwise when the sum fits.
TEST_F(MemoryStoreTest, RepeatedKeyRetryUsesTheCombinedCost) {
  const LimitSpec six = spec(Algorithm::kTokenBucket, "1/s", 6);
  const std::vector<Outcome> never = applyAll(store_, {{"a", &six, 5}, {"a", &six, 5}}, t0_);
  EXPECT_FALSE(never[1].allowed);
  EXPECT_EQ(never[1].reason, DenyReason::kCostExceedsLimit);
  EXPECT_EQ(never[1].retry_after_us, kNever);
  EXPECT_EQ(never[0].remaining, 6u);  // reported as it is

  const LimitSpec ten = spec(Algorithm::kTokenBucket, "1/s", 10);
  EXPECT_TRUE(apply(store_, "b", ten, 8, t0_).allowed);
  const std::vector<Outcome> later = applyAll(store_, {{"b", &ten, 5}, {"b", &ten, 5}}, t0_);
  EXPECT_FALSE(later[1].allowed);
  EXPECT_EQ(later[1].retry_after_us, 8 * kMicrosPerSecond);

  const LimitSpec log6 = spec(Algorithm::kSlidingWindowLog, "6/s");
  const std::vector<Outcome> log_never = applyAll(store_, {{"c", &log6, 5}, {"c", &log6, 5}}, t0_);
  EXPECT_FALSE(log_never[1].allowed);
  EXPECT_EQ(log_never[1].retry_after_us, kNever);

  // The first check denied and a later one allowed: the wait is still the whole cost's. It
  // was the first check's alone (100 ms for 6 of 10/s), after which the request failed again.
  const LimitSpec tenths = spec(Algorithm::kTokenBucket, "10/s", 10);
  EXPECT_TRUE(apply(store_, "d", tenths, 5, t0_).allowed);
  const std::vector<Outcome> first = applyAll(store_, {{"d", &tenths, 6}, {"d", &tenths, 1}}, t0_);
  EXPECT_FALSE(first[0].allowed);
  EXPECT_EQ(first[0].retry_after_us, 200 * kMicrosPerMilli);  // 7 tokens, 5 there
  const std::vector<Outcome> retried =
      applyAll(store_, {{"d", &tenths, 6}, {"d", &tenths, 1}}, t0_ + first[0].retry_after_us);
  EXPECT_TRUE(retried[0].allowed && retried[1].allowed);
  EXPECT_TRUE(apply(store_, "e", tenths, 5, t0_).allowed);
  const std::vector<Outcome> too_big =
      applyAll(store_, {{"e", &tenths, 6}, {"e", &tenths, 5}}, t0_);
  EXPECT_EQ(too_big[0].reason, DenyReason::kCostExceedsLimit);  // 11 of 10 never fits
  EXPECT_EQ(too_big[0].retry_after_us, kNever);
}

// Many checks in one request (the store links a key's checks by sorting past 16), keys
// interleaved and of both kinds: the same answers as a few, key by key. 3 checks of 10 keys fit
// a limit of 3; a fourth round does not, and nothing is taken; the denied key's answer is its
// combined cost's, which never fits.
TEST_F(MemoryStoreTest, ManyChecksOfRepeatedKeysAddUpPerKey) {
  const LimitSpec three = spec(Algorithm::kFixedWindow, "3/min");
  const LimitSpec log3 = spec(Algorithm::kSlidingWindowLog, "3/min");
  std::vector<std::string> keys;
  for (int k = 0; k < 10; ++k) keys.push_back("key-" + std::to_string(k));
  std::vector<LimitCheck> rounds;
  for (int round = 0; round < 3; ++round) {
    for (int k = 0; k < 10; ++k) rounds.push_back({keys[k], k % 2 == 0 ? &three : &log3, 1});
  }
  const std::vector<Outcome> fits = applyAll(store_, rounds, t0_);
  for (std::size_t i = 0; i < fits.size(); ++i) EXPECT_TRUE(fits[i].allowed) << i;
  EXPECT_EQ(fits[25].remaining, 0u);  // key-5's third check: its three units used
  EXPECT_EQ(fits[5].remaining, 2u);   // and its first: one
  for (int k = 0; k < 10; ++k) {
    EXPECT_EQ(apply(store_, keys[k], k % 2 == 0 ? three : log3, 0, t0_).remaining, 0u) << k;
  }

  std::vector<std::string> fresh_keys;
  for (int k = 0; k < 10; ++k) fresh_keys.push_back("fresh-" + keys[k]);
  std::vector<LimitCheck> fresh;
  for (int round = 0; round < 4; ++round) {
    for (int k = 0; k < 10; ++k) fresh.push_back({fresh_keys[k], k % 2 == 0 ? &three : &log3, 1});
  }
  const std::vector<Outcome> over = applyAll(store_, fresh, t0_);
  for (std::size_t i = 30; i < 40; ++i) {
    EXPECT_FALSE(over[i].allowed) << i;
    EXPECT_EQ(over[i].reason, DenyReason::kCostExceedsLimit) << i;  // 4 of 3 never fits
  }
  EXPECT_TRUE(over[3].allowed);  // alone it would pass: reported as it is, nothing taken
  for (int k = 0; k < 10; ++k) {
    EXPECT_EQ(apply(store_, fresh_keys[k], k % 2 == 0 ? three : log3, 0, t0_).remaining, 3u) << k;
  }
}

// A shard count past any power of two a size_t holds is capped, not rounded up (undefined);
// max_keys 0 is taken as 1.
TEST_F(MemoryStoreTest, ExtremeOptionsAreBounded) {
  MemoryStore many(MemoryStoreOptions{1000, std::numeric_limits<std::size_t>::max()},
                   KeyHasher(3, 4));
  EXPECT_TRUE(apply(many, "a", per_second_, 2, t0_).allowed);
  EXPECT_FALSE(apply(many, "a", per_second_, 1, t0_).allowed);
  MemoryStore none(MemoryStoreOptions{0, 4}, KeyHasher(5, 6));
  EXPECT_TRUE(apply(none, "a", per_second_, 1, t0_).allowed);
  EXPECT_LE(none.keyCount(), 1u);
}

// More shards than max_keys: the shards shrink so the bound still holds.
TEST_F(MemoryStoreTest, MaxKeysBelowShardCount) {
  MemoryStore store(MemoryStoreOptions{2, 16}, KeyHasher(11, 12));
  const LimitSpec daily = spec(Algorithm::kFixedWindow, "5/day");
  for (int i = 0; i < 50; ++i) {
    EXPECT_TRUE(apply(store, "k" + std::to_string(i), daily, 1, t0_).allowed);
    EXPECT_LE(store.keyCount(), 2u);
  }
}

// A small bound is a bound on keys, not on each of 256 shards' few: 900 daily counters under
// max_keys 1000 all stay, so every second request of the day is denied.
TEST_F(MemoryStoreTest, ASmallBoundKeepsItsCountersInUse) {
  MemoryStore store(MemoryStoreOptions{.max_keys = 1000}, KeyHasher(13, 14));
  const LimitSpec daily = spec(Algorithm::kFixedWindow, "1/day");
  for (int i = 0; i < 900; ++i)
    EXPECT_TRUE(apply(store, "k" + std::to_string(i), daily, 1, t0_).allowed);
  int admitted_again = 0;
  for (int i = 0; i < 900; ++i)
    admitted_again += apply(store, "k" + std::to_string(i), daily, 1, t0_).allowed ? 1 : 0;
  EXPECT_EQ(admitted_again, 0);
  EXPECT_EQ(store.keyCount(), 900u);
  EXPECT_EQ(store.evictedLive(), 0u);
}

// Peeks of unknown keys in a full shard make no room: they write nothing, so no counter in
// use is dropped for them.
TEST_F(MemoryStoreTest, PeeksOfUnknownKeysEvictNothing) {
  MemoryStore store(MemoryStoreOptions{4, 1}, KeyHasher(15, 16));
  const LimitSpec daily = spec(Algorithm::kFixedWindow, "5/day");
  for (const char* key : {"a", "b", "c", "d"})
    EXPECT_TRUE(apply(store, key, daily, 1, t0_).allowed);
  const std::vector<Outcome> peeks = applyAll(store, {{"p", &daily, 0}, {"q", &daily, 0}}, t0_);
  EXPECT_TRUE(peeks[0].allowed && peeks[1].allowed);
  EXPECT_EQ(store.evictedLive(), 0u);
  for (const char* key : {"a", "b", "c", "d"})
    EXPECT_EQ(apply(store, key, daily, 0, t0_).remaining, 4u) << key;
}

// Far-future instants keep their state: expiry saturates to "never", not to "expired".
TEST_F(MemoryStoreTest, FarFutureStateIsKept) {
  const Micros year_2128 = 5'000'000'000LL * kMicrosPerSecond;
  const LimitSpec once = spec(Algorithm::kFixedWindow, "1/min");
  EXPECT_TRUE(apply(store_, "f", once, 1, year_2128).allowed);
  EXPECT_FALSE(apply(store_, "f", once, 1, year_2128 + 1).allowed);
}

// A clock near the end of int64 (a broken one) still limits: the algorithms added periods to it
// and overflowed (signed overflow, and 30 of 30 admitted against a limit of 10).
TEST_F(MemoryStoreTest, AClockAtTheEndOfTimeStillLimits) {
  const LimitSpec ten = spec(Algorithm::kFixedWindow, "10/s");
  const LimitSpec gcra = spec(Algorithm::kGcra, "10/s", 10);
  for (const LimitSpec* limit : {&ten, &gcra}) {
    int admitted = 0;
    for (int i = 0; i < 30; ++i) {
      admitted += apply(store_, "end:" + limit->toString(), *limit, 1,
                        std::numeric_limits<Micros>::max() - 10)
                      .allowed;
    }
    EXPECT_EQ(admitted, 10) << limit->toString();
  }
}

}  // namespace
}  // namespace sluice
