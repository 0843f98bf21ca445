#include "store/key_hash.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

#include "support/specs.h"

namespace sluice {
namespace {

using testing::spec;

// The same key is one counter per (algorithm, period), plus the count where the state is scaled
// by the rate; seeds change every hash.
TEST(KeyHasher, IdentityIsKeyAlgorithmPeriodAndScale) {
  const KeyHasher hasher(1, 2);
  const LimitSpec per_minute = spec(Algorithm::kGcra, "100/min", 10);
  const LimitSpec per_minute_more = spec(Algorithm::kGcra, "200/min", 10);
  const LimitSpec per_minute_burstier = spec(Algorithm::kGcra, "100/min", 50);
  const LimitSpec per_hour = spec(Algorithm::kGcra, "100/h", 10);
  const LimitSpec bucket = spec(Algorithm::kTokenBucket, "100/min", 10);
  EXPECT_EQ(hasher("user:1", per_minute), hasher("user:1", per_minute_burstier));
  EXPECT_NE(hasher("user:1", per_minute), hasher("user:1", per_minute_more));
  EXPECT_NE(hasher("user:1", per_minute), hasher("user:1", per_hour));
  EXPECT_NE(hasher("user:1", per_minute), hasher("user:1", bucket));
  EXPECT_NE(hasher("user:1", per_minute), KeyHasher(3, 4)("user:1", per_minute));
  // Window states are plain counts: a new count reads the same counter.
  EXPECT_EQ(hasher("user:1", spec(Algorithm::kFixedWindow, "10/s")),
            hasher("user:1", spec(Algorithm::kFixedWindow, "5/s")));
  // The interval bucket's key is dropped when full, a time that depends on the count: kept across
  // a lowered count, it was dropped early and came back full (90 units over in a reviewer's case).
  EXPECT_NE(hasher("user:1", spec(Algorithm::kTokenBucketInterval, "10/min", 100)),
            hasher("user:1", spec(Algorithm::kTokenBucketInterval, "1/min", 100)));
}

// No collisions among many similar keys of every length up to 40 bytes.
TEST(KeyHasher, SimilarKeysDoNotCollide) {
  const KeyHasher hasher(7, 9);
  const LimitSpec limit = spec(Algorithm::kFixedWindow, "10/s");
  std::set<std::uint64_t> seen;
  std::set<std::string> keys;
  for (int length = 0; length <= 40; ++length) {
    for (int variant = 0; variant < 2000; ++variant) {
      std::string key(static_cast<std::size_t>(length), 'k');
      if (length > 0) {
        key[static_cast<std::size_t>(variant) % key.size()] = static_cast<char>(variant % 251);
      }
      key += std::to_string(variant);
      seen.insert(hasher(key, limit));
      keys.insert(key);
    }
  }
  EXPECT_GT(keys.size(), 80'000u);
  EXPECT_EQ(seen.size(), keys.size());
}

}  // namespace
}  // namespace sluice
