// luaIncompatibility: which specs the Lua script computes exactly.
#include "store/redis/lua_bounds.h"

#include <gtest/gtest.h>

#include "support/specs.h"

namespace sluice::redis {
namespace {

using sluice::testing::spec;

constexpr Algorithm kAll[] = {Algorithm::kFixedWindow,          Algorithm::kSlidingWindowLog,
                              Algorithm::kSlidingWindowCounter, Algorithm::kTokenBucket,
                              Algorithm::kTokenBucketInterval,  Algorithm::kLeakyBucketMeter,
                              Algorithm::kLeakyBucketShaper,    Algorithm::kGcra};

// Ordinary limits run in Redis with every algorithm.
TEST(LuaIncompatibility, AcceptsOrdinarySpecs) {
  for (const Algorithm algorithm : kAll) {
    EXPECT_EQ(luaIncompatibility(spec(algorithm, "100/s", 20)), std::nullopt);
    EXPECT_EQ(luaIncompatibility(spec(algorithm, "1000/day", 1000)), std::nullopt);
    EXPECT_EQ(luaIncompatibility(spec(algorithm, "20000/month", 20000)), std::nullopt);
  }
}

// A scaled capacity of exactly 2^53 + 1 is refused; one interval of 2^40 µs less is accepted.
TEST(LuaIncompatibility, BucketBoundIsExact) {
  const Rate one_per_2_to_40{1, Micros{1} << 40};
  for (const Algorithm algorithm : {Algorithm::kTokenBucket, Algorithm::kLeakyBucketMeter,
                                    Algorithm::kLeakyBucketShaper, Algorithm::kGcra}) {
    const auto over = luaIncompatibility(LimitSpec::make(algorithm, one_per_2_to_40, 8192).value());
    ASSERT_TRUE(over.has_value());
    EXPECT_NE(over->find("2^53"), std::string::npos) << *over;
    EXPECT_EQ(luaIncompatibility(LimitSpec::make(algorithm, one_per_2_to_40, 8191).value()),
              std::nullopt);
  }
}

// Specs whose arithmetic would pass 2^53 are refused with a reason.
TEST(LuaIncompatibility, RejectsSpecsBeyondTwoToThe53) {
  EXPECT_TRUE(luaIncompatibility(spec(Algorithm::kGcra, "1/year", 1000)).has_value());
  EXPECT_TRUE(luaIncompatibility(spec(Algorithm::kTokenBucket, "7/year", 1000)).has_value());
  EXPECT_TRUE(
      luaIncompatibility(spec(Algorithm::kTokenBucketInterval, "1/year", 1000)).has_value());
  EXPECT_EQ(luaIncompatibility(spec(Algorithm::kTokenBucketInterval, "1/year", 285)), std::nullopt);
  EXPECT_TRUE(
      luaIncompatibility(spec(Algorithm::kSlidingWindowCounter, "2097152/year")).has_value());
  EXPECT_EQ(luaIncompatibility(spec(Algorithm::kSlidingWindowCounter, "2097151/year")),
            std::nullopt);
  EXPECT_EQ(luaIncompatibility(spec(Algorithm::kFixedWindow, "4294967295/year")), std::nullopt);
}

}  // namespace
}  // namespace sluice::redis
