#include "sluice/limit_spec.h"

#include <gtest/gtest.h>

#include "support/specs.h"

namespace sluice {
namespace {

using testing::rate;

// Every algorithm has a name that parses back to it.
TEST(LimitSpec, AlgorithmNamesRoundTrip) {
  for (int i = 0; i <= static_cast<int>(Algorithm::kGcra); ++i) {
    const auto algorithm = static_cast<Algorithm>(i);
    EXPECT_EQ(parseAlgorithm(algorithmName(algorithm)), algorithm);
  }
  EXPECT_EQ(parseAlgorithm("sliding_window"), Algorithm::kSlidingWindowCounter);
  EXPECT_EQ(parseAlgorithm("nope"), std::nullopt);
}

// Bad parameters are refused with a reason; good ones report the limit clients see.
TEST(LimitSpec, Validates) {
  EXPECT_NE(LimitSpec::tokenBucket(rate("10/s"), 0).error().find("burst"), std::string::npos);
  EXPECT_NE(LimitSpec::gcra(Rate{0, kMicrosPerSecond}, 5).error().find("at least 1"),
            std::string::npos);
  EXPECT_NE(LimitSpec::fixedWindow(Rate{5, 10}).error().find("at least 1ms"), std::string::npos);
  EXPECT_NE(LimitSpec::fixedWindow(Rate{5, 2 * kMicrosPerYear}).error().find("at most 1 year"),
            std::string::npos);
  EXPECT_NE(LimitSpec::fixedWindow(Rate{std::uint64_t{1} << 33, kMicrosPerSecond})
                .error()
                .find("at most"),
            std::string::npos);
  // 1 per year with a burst of 4 billion would overflow the exact arithmetic.
  EXPECT_NE(LimitSpec::tokenBucket(rate("1/year"), 4'000'000'000).error().find("too large"),
            std::string::npos);

  // Refilling 4 billion tokens one a year would take longer than int64 microseconds can count.
  EXPECT_NE(LimitSpec::tokenBucketInterval(rate("1/year"), 1'000'000).error().find("too long"),
            std::string::npos);
  EXPECT_NE(LimitSpec::slidingWindowLog(rate("1000000/day")).error().find("sliding_window_counter"),
            std::string::npos);
  EXPECT_NE(LimitSpec::make(static_cast<Algorithm>(42), rate("1/s"), 1).error().find("unknown"),
            std::string::npos);
  EXPECT_EQ(algorithmName(static_cast<Algorithm>(42)), "unknown");

  EXPECT_EQ(LimitSpec::fixedWindow(rate("100/min")).value().limit(), 100u);
  EXPECT_EQ(LimitSpec::gcra(rate("100/min"), 20).value().limit(), 20u);
}

// The rate is reduced to lowest terms for the scaled arithmetic.
TEST(LimitSpec, ReducesRate) {
  const LimitSpec spec = LimitSpec::gcra(rate("30/min"), 5).value();
  EXPECT_EQ(spec.unitWeight(), 2'000'000);  // one request every 2 s
  EXPECT_EQ(spec.drainPerMicro(), 1);
  const LimitSpec thirds = LimitSpec::gcra(rate("3/s"), 3).value();
  EXPECT_EQ(thirds.unitWeight(), 1'000'000);
  EXPECT_EQ(thirds.drainPerMicro(), 3);
  EXPECT_EQ(thirds.toString(), "gcra 3/s burst 3");
}

}  // namespace
}  // namespace sluice
