// The 64-bit identity of a counter. MemoryStore keeps only this hash, not the key text, which is
// what keeps a key at a few dozen bytes. The hash is keyed with per-process random seeds so a
// client cannot craft a key that lands on someone else's counter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sluice/limit_spec.h"

namespace sluice {

// Whether a limit's count is part of its counter's identity, in memory (KeyHasher) and in Redis
// (redisKey). For the continuous-rate algorithms (token bucket, leaky buckets, GCRA) the state
// is in units scaled by the rate; for the interval bucket the time its state is back to full,
// when a store drops the key, depends on the count (kept across a lowered count, the key was
// dropped early and came back full). So a changed count starts these counters afresh, while
// the windows (fixed, sliding log, sliding counter) keep theirs.
[[nodiscard]] constexpr bool countIsPartOfTheCounter(Algorithm algorithm) noexcept {
  return algorithm == Algorithm::kTokenBucket || algorithm == Algorithm::kTokenBucketInterval ||
         algorithm == Algorithm::kLeakyBucketMeter || algorithm == Algorithm::kLeakyBucketShaper ||
         algorithm == Algorithm::kGcra;
}

class KeyHasher {
 public:
  // Seeds from the system's random source.
  KeyHasher() noexcept;
  // Fixed seeds, for reproducible tests.
  KeyHasher(std::uint64_t seed0, std::uint64_t seed1) noexcept : seed0_(seed0), seed1_(seed1) {}

  // Thread-safe. The counter of (key, algorithm, period) and, when countIsPartOfTheCounter,
  // the count.
  [[nodiscard]] std::uint64_t operator()(std::string_view key,
                                         const LimitSpec& spec) const noexcept;

 private:
  std::uint64_t seed0_;
  std::uint64_t seed1_;
};

// For hash maps keyed by KeyHasher's output: those keys are already uniformly distributed
// seeded hashes, so the map need not mix them again.
struct KeyHashIsTheHash {
  using is_avalanching = void;
  std::size_t operator()(std::uint64_t key_hash) const noexcept { return key_hash; }
};

}  // namespace sluice
