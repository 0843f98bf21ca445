// Properties that must hold on any request sequence, checked on seeded random traces.
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "algorithm/compact_state.h"
#include "algorithm/scaled_math.h"
#include "algorithm/sliding_window_log.h"
#include "support/specs.h"

namespace sluice::algorithm {
namespace {

using sluice::testing::kJan2026;
using sluice::testing::spec;

struct Request {
  Micros at_us;
  std::uint64_t cost;
};

// Bursty arrivals: runs of simultaneous requests separated by gaps up to half a period, costs
// mostly 1, sometimes up to a bit over the limit, sometimes 0.
std::vector<Request> randomTrace(std::uint64_t seed, const LimitSpec& limit, int length) {
  std::mt19937_64 random(seed);
  const Micros max_gap = std::max<Micros>(1, limit.rate().period_us / 2);
  std::vector<Request> trace;
  Micros at = kJan2026 + static_cast<Micros>(random() % static_cast<std::uint64_t>(max_gap));
  for (int i = 0; i < length; ++i) {
    if (random() % 3 == 0)
      at += static_cast<Micros>(random() % static_cast<std::uint64_t>(max_gap));
    std::uint64_t cost = 1;
    const auto dice = random() % 10;
    if (dice == 0) cost = 0;
    if (dice == 1) cost = 1 + random() % (limit.limit() + 1);
    trace.push_back({at, cost});
  }
  return trace;
}

struct Admitted {
  Micros at_us;
  std::uint64_t cost;
};

class SlidingLogTrace : public ::testing::TestWithParam<const char*> {};

// The sliding log never admits more than the limit in any window of its length.
TEST_P(SlidingLogTrace, NeverMoreThanTheLimitInAnyWindow) {
  const LimitSpec limit = spec(Algorithm::kSlidingWindowLog, GetParam());
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    SlidingWindowLog log;
    std::vector<Admitted> admitted;
    for (const Request& request : randomTrace(seed, limit, 3000)) {
      if (log.consume(request.at_us, limit, request.cost).allowed && request.cost > 0) {
        admitted.push_back({request.at_us, request.cost});
      }
    }
    ASSERT_FALSE(admitted.empty());
    // Any window's heaviest placement ends at an admission: check (t − window, t] for each.
    std::size_t first = 0;
    std::uint64_t in_window = 0;
    for (std::size_t last = 0; last < admitted.size(); ++last) {
      in_window += admitted[last].cost;
      while (admitted[first].at_us <= admitted[last].at_us - limit.rate().period_us) {
        in_window -= admitted[first++].cost;
      }
      ASSERT_LE(in_window, limit.rate().count) << "seed " << seed << " at " << last;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Rates, SlidingLogTrace, ::testing::Values("5/s", "100/min", "7/250ms"));

struct BucketCase {
  const char* rate;
  std::uint64_t burst;
};

class TokenBucketTrace : public ::testing::TestWithParam<BucketCase> {};

// Over any span t the token bucket admits at most burst + rate × t, exactly.
TEST_P(TokenBucketTrace, NeverMoreThanBurstPlusRateTimesSpan) {
  const LimitSpec limit = spec(Algorithm::kTokenBucket, GetParam().rate, GetParam().burst);
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    CompactState state;
    std::vector<Admitted> admitted;
    for (const Request& request : randomTrace(seed, limit, 1500)) {
      if (consumeCompact(state, request.at_us, limit, request.cost).allowed && request.cost > 0) {
        admitted.push_back({request.at_us, request.cost});
      }
    }
    ASSERT_FALSE(admitted.empty());
    for (std::size_t from = 0; from < admitted.size(); ++from) {
      Int128 taken = 0;
      for (std::size_t to = from; to < admitted.size(); ++to) {
        taken += admitted[to].cost;
        const Int128 span = admitted[to].at_us - admitted[from].at_us;
        // taken <= burst + span × count / period, cross-multiplied to stay exact.
        ASSERT_LE(taken * limit.rate().period_us,
                  Int128{limit.burst()} * limit.rate().period_us + span * limit.rate().count)
            << "seed " << seed << " from " << from << " to " << to;
      }
    }
  }
}

// GCRA and the token bucket with the same rate and burst give identical outcomes.
TEST_P(TokenBucketTrace, GcraAgreesWithTokenBucket) {
  const LimitSpec bucket = spec(Algorithm::kTokenBucket, GetParam().rate, GetParam().burst);
  const LimitSpec gcra = spec(Algorithm::kGcra, GetParam().rate, GetParam().burst);
  for (std::uint64_t seed = 11; seed <= 15; ++seed) {
    CompactState bucket_state;
    CompactState gcra_state;
    int step = 0;
    for (const Request& request : randomTrace(seed, bucket, 3000)) {
      const Outcome a = consumeCompact(bucket_state, request.at_us, bucket, request.cost);
      const Outcome b = consumeCompact(gcra_state, request.at_us, gcra, request.cost);
      ASSERT_EQ(a.allowed, b.allowed) << "seed " << seed << " step " << step;
      ASSERT_EQ(a.remaining, b.remaining) << "seed " << seed << " step " << step;
      ASSERT_EQ(a.reset_after_us, b.reset_after_us) << "seed " << seed << " step " << step;
      ASSERT_EQ(a.retry_after_us, b.retry_after_us) << "seed " << seed << " step " << step;
      ++step;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Rates, TokenBucketTrace,
                         ::testing::Values(BucketCase{"3/min", 3}, BucketCase{"7/s", 2},
                                           BucketCase{"100/s", 20}, BucketCase{"1000/day", 50},
                                           BucketCase{"3/100ms", 10}));

struct AlgorithmCase {
  Algorithm algorithm;
  const char* rate;
  std::uint64_t burst;
};

class RetryAfterTrace : public ::testing::TestWithParam<AlgorithmCase> {};

// retry_after is exact for every algorithm: the same cost one microsecond earlier is denied, at
// retry_after it is admitted.
TEST_P(RetryAfterTrace, RetryAfterIsExact) {
  const LimitSpec limit = spec(GetParam().algorithm, GetParam().rate, GetParam().burst);
  int denials_checked = 0;
  for (std::uint64_t seed = 21; seed <= 23; ++seed) {
    CompactState state;
    SlidingWindowLog log;
    const bool is_log = limit.algorithm() == Algorithm::kSlidingWindowLog;
    const auto consume = [&](CompactState& s, SlidingWindowLog& l, Micros at, std::uint64_t cost) {
      return is_log ? l.consume(at, limit, cost) : consumeCompact(s, at, limit, cost);
    };
    for (const Request& request : randomTrace(seed, limit, 2000)) {
      const Outcome outcome = consume(state, log, request.at_us, request.cost);
      if (outcome.allowed || outcome.reason != DenyReason::kOverLimit) continue;
      ASSERT_GT(outcome.retry_after_us, 0);
      const Micros retry_at = request.at_us + outcome.retry_after_us;
      CompactState early_state = state;
      SlidingWindowLog early_log = log;
      ASSERT_FALSE(consume(early_state, early_log, retry_at - 1, request.cost).allowed)
          << "seed " << seed << " at " << request.at_us;
      CompactState on_time_state = state;
      SlidingWindowLog on_time_log = log;
      ASSERT_TRUE(consume(on_time_state, on_time_log, retry_at, request.cost).allowed)
          << "seed " << seed << " at " << request.at_us;
      ++denials_checked;
    }
  }
  EXPECT_GT(denials_checked, 50);
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, RetryAfterTrace,
    ::testing::Values(AlgorithmCase{Algorithm::kFixedWindow, "10/s", 0},
                      AlgorithmCase{Algorithm::kSlidingWindowLog, "10/s", 0},
                      AlgorithmCase{Algorithm::kSlidingWindowCounter, "10/s", 0},
                      AlgorithmCase{Algorithm::kSlidingWindowCounter, "7/3s", 0},
                      AlgorithmCase{Algorithm::kTokenBucket, "7/s", 5},
                      AlgorithmCase{Algorithm::kTokenBucketInterval, "4/s", 9},
                      AlgorithmCase{Algorithm::kLeakyBucketMeter, "3/s", 4},
                      AlgorithmCase{Algorithm::kLeakyBucketShaper, "10/s", 6},
                      AlgorithmCase{Algorithm::kGcra, "13/min", 3}),
    [](const ::testing::TestParamInfo<AlgorithmCase>& param_info) {
      return std::string(algorithmName(param_info.param.algorithm)) + "_" +
             std::to_string(param_info.index);
    });

}  // namespace
}  // namespace sluice::algorithm
