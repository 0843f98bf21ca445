// Multi-check decide calls: the script gives exactly MemoryStore's outcomes, all-or-nothing
// across the checks, with denials in the middle and the same key checked twice in one request.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sluice/decision.h"
#include "store/memory_store.h"
#include "support/redis_server.h"
#include "support/specs.h"
#include "traces/script_client.h"
#include "traces/trace_support.h"

namespace sluice::testing {
namespace {

// One counter: a key and its spec. MemoryStore and Redis both see the key name as given.
struct Slot {
  std::string key;
  LimitSpec spec;
};

std::vector<Slot> slots() {
  return {{"fixed", spec(Algorithm::kFixedWindow, "7/s")},
          {"log", spec(Algorithm::kSlidingWindowLog, "5/s")},
          {"counter", spec(Algorithm::kSlidingWindowCounter, "9/2s")},
          {"bucket", spec(Algorithm::kTokenBucket, "7/s", 4)},
          {"interval", spec(Algorithm::kTokenBucketInterval, "3/s", 6)},
          {"meter", spec(Algorithm::kLeakyBucketMeter, "3/min", 3)},
          {"shaper", spec(Algorithm::kLeakyBucketShaper, "10/s", 5)},
          {"gcra", spec(Algorithm::kGcra, "13/min", 3)},
          // Other counts and bursts on counters above (a window's count and any burst are not
          // part of a counter), so that requests mix specs on one counter.
          {"fixed", spec(Algorithm::kFixedWindow, "4/s")},
          {"bucket", spec(Algorithm::kTokenBucket, "7/s", 9)},
          {"log", spec(Algorithm::kSlidingWindowLog, "3/s")}};
}

class StoreTrace : public ::testing::Test {
 protected:
  StoreTrace()
      : server_(std::make_unique<RedisServer>()),
        connection_(server_->port()),
        script_(connection_) {}

  // Decides `checks` in both and expects equal outcomes; returns MemoryStore's.
  std::vector<Outcome> expectBothAgree(std::vector<ScriptCheck>& checks, const std::string& where) {
    std::vector<LimitCheck> limit_checks;
    for (const ScriptCheck& check : checks) {
      limit_checks.push_back({check.key, check.spec, check.cost});
    }
    std::vector<Outcome> expected(checks.size());
    EXPECT_EQ(memory_.apply(limit_checks, clock_, expected), StoreStatus::kOk);
    const DecideReply got = script_.decidePersisted(clock_.now(), checks);
    for (std::size_t i = 0; i < checks.size(); ++i) {
      EXPECT_EQ(describe(got.outcomes[i]), describe(expected[i]))
          << where << " check " << i << " (" << checks[i].key << " cost " << checks[i].cost << ")";
    }
    return expected;
  }

  std::unique_ptr<RedisServer> server_;
  RedisConnection connection_;
  ScriptClient script_;
  MemoryStore memory_;
  FakeClock clock_{kJan2026 + 123'456};
  std::vector<Slot> slots_ = slots();
};

// Random requests of one to four checks over eight counters (every algorithm), often naming
// one counter twice, with edge costs: every outcome equals MemoryStore's.
TEST_F(StoreTrace, RandomMultiCheckRequestsMatchMemoryStore) {
  std::mt19937_64 random(7);
  int mixed = 0;       // denied requests in which some check alone would have allowed
  int duplicates = 0;  // requests naming one counter twice
  for (int request = 0; request < 2500; ++request) {
    clock_.set(nextInstant(random, clock_.now(), slots_[random() % slots_.size()].spec, false));
    std::vector<ScriptCheck> checks;
    std::vector<std::size_t> used;
    const std::size_t count = 1 + random() % 4;
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t slot = random() % slots_.size();
      if (std::find(used.begin(), used.end(), slot) != used.end()) ++duplicates;
      used.push_back(slot);
      const LimitSpec& limit = slots_[slot].spec;
      checks.push_back({slots_[slot].key, &limit, random() % 3 == 0 ? nextCost(random, limit) : 1});
    }
    const auto outcomes = expectBothAgree(checks, "request " + std::to_string(request));
    bool any_allowed = false;
    bool any_denied = false;
    for (const Outcome& outcome : outcomes) (outcome.allowed ? any_allowed : any_denied) = true;
    if (any_allowed && any_denied) ++mixed;
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(mixed, 100);
  EXPECT_GT(duplicates, 100);
}

// A denial in the middle consumes from none: the first and last limits report their state as
// it is, and a request without the denying limit then still finds them untouched.
TEST_F(StoreTrace, DenialInTheMiddleConsumesNothing) {
  const LimitSpec& bucket = slots_[3].spec;  // burst 4
  const LimitSpec& fixed = slots_[0].spec;   // 7 per second
  const LimitSpec& log = slots_[1].spec;     // 5 per second
  std::vector<ScriptCheck> fill = {{"log", &log, 5}};
  expectBothAgree(fill, "fill the log");
  std::vector<ScriptCheck> checks = {
      {"bucket", &bucket, 3}, {"log", &log, 1}, {"fixed", &fixed, 6}};
  const auto outcomes = expectBothAgree(checks, "denied in the middle");
  EXPECT_TRUE(outcomes[0].allowed);
  EXPECT_FALSE(outcomes[1].allowed);
  EXPECT_EQ(outcomes[0].remaining, 4U);  // the state as it is: nothing consumed
  std::vector<ScriptCheck> after = {{"bucket", &bucket, 4}, {"fixed", &fixed, 7}};
  const auto later = expectBothAgree(after, "nothing was consumed");
  EXPECT_TRUE(later[0].allowed);
  EXPECT_TRUE(later[1].allowed);
}

// One key checked twice: the second check sees the first's cost; when the pair does not fit,
// nothing is consumed and the second reports when the combined cost would pass.
TEST_F(StoreTrace, DuplicateKeysShareOneState) {
  for (const Slot& slot : slots_) {
    const std::uint64_t half = slot.spec.limit() / 2 + 1;
    std::vector<ScriptCheck> twice = {{slot.key, &slot.spec, half}, {slot.key, &slot.spec, half}};
    const auto outcomes = expectBothAgree(twice, slot.key + " twice");
    EXPECT_FALSE(outcomes[1].allowed) << slot.key;
    std::vector<ScriptCheck> once = {{slot.key, &slot.spec, half}, {slot.key, &slot.spec, 0}};
    expectBothAgree(once, slot.key + " once and a peek");
    // The larger check first, denied while the smaller after it is allowed: both tell the
    // combined cost's wait.
    std::vector<ScriptCheck> big_first = {{slot.key, &slot.spec, slot.spec.limit()},
                                          {slot.key, &slot.spec, 1}};
    expectBothAgree(big_first, slot.key + " the larger first");
    clock_.advance(kMicrosPerSecond / 3);
  }
}

// Checks of other counts or bursts on one counter (a window's count and any burst are not part
// of it): a denied request is judged at each check's own spec and the units up to it, in both
// stores. Judged at one spec with the key's whole cost, a request that fits in the next window
// read "never", and one that never fits read a wait.
TEST_F(StoreTrace, MixedSpecsOnOneCounterTellTheTrueWait) {
  const auto longest = [](const std::vector<Outcome>& outcomes) {
    Micros wait = 0;
    for (const Outcome& outcome : outcomes) {
      if (!outcome.allowed) wait = std::max(wait, outcome.retry_after_us);
    }
    return wait;
  };
  const LimitSpec five = spec(Algorithm::kFixedWindow, "5/s");
  const LimitSpec ten = spec(Algorithm::kFixedWindow, "10/s");
  const LimitSpec nine = spec(Algorithm::kFixedWindow, "9/s");
  clock_.set(kJan2026 + 100'000);
  std::vector<ScriptCheck> spend = {{"mixed", &five, 3}};
  expectBothAgree(spend, "spend 3 of 5");
  std::vector<ScriptCheck> pair = {{"mixed", &five, 3}, {"mixed", &ten, 3}};
  const Micros wait = longest(expectBothAgree(pair, "3 of 5 then 3 of 10"));
  EXPECT_EQ(wait, 900'000);  // the next window, not never
  clock_.advance(wait);
  const auto next = expectBothAgree(pair, "in the next window");
  EXPECT_TRUE(next[0].allowed && next[1].allowed);

  std::vector<ScriptCheck> six = {{"never", &ten, 6}};
  expectBothAgree(six, "spend 6 of 10");
  std::vector<ScriptCheck> over = {{"never", &ten, 8}, {"never", &nine, 2}};
  EXPECT_EQ(longest(expectBothAgree(over, "8 of 10 then 10 of 9")), kNever);

  const LimitSpec small = spec(Algorithm::kTokenBucket, "10/s", 5);
  const LimitSpec big = spec(Algorithm::kTokenBucket, "10/s", 100);
  std::vector<ScriptCheck> three = {{"bursts", &small, 3}};
  expectBothAgree(three, "spend 3 of a burst of 5");
  std::vector<ScriptCheck> bursts = {{"bursts", &small, 3}, {"bursts", &big, 50}};
  const Micros bucket_wait = longest(expectBothAgree(bursts, "burst 5 then burst 100"));
  EXPECT_NE(bucket_wait, kNever);
  clock_.advance(bucket_wait);
  const auto refilled = expectBothAgree(bursts, "after the wait");
  EXPECT_TRUE(refilled[0].allowed && refilled[1].allowed);
}

}  // namespace
}  // namespace sluice::testing
