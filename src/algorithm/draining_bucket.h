// A bucket whose level drains at a constant rate. Three classic algorithms are this one
// automaton seen from different sides:
//  - token bucket (continuous refill): the level is the number of missing tokens; a request
//    takes `cost` tokens if that many are there;
//  - leaky bucket as a meter: the level is the water in the bucket; a request that would make it
//    overflow `burst` is denied;
//  - leaky bucket as a shaper (queue): as the meter, and an admitted request also learns how long
//    it waits for its slot: the time the water already in the bucket takes to leak out.
#pragma once

#include <cstdint>

#include "sluice/limit_spec.h"
#include "sluice/outcome.h"

namespace sluice::algorithm {

// A zeroed state is an unused key: an empty bucket (a full one, for tokens). The level is in
// scaled units: one request weighs spec.unitWeight() and spec.drainPerMicro() leak per µs.
struct DrainingBucketState {
  Micros last_us = 0;
  std::int64_t level = 0;
};

// Not thread-safe. For kTokenBucket, kLeakyBucketMeter and kLeakyBucketShaper specs. Leaves
// `state` unchanged unless it admits a cost > 0. An older `now` is treated as the last one seen.
[[nodiscard]] Outcome consumeDrainingBucket(DrainingBucketState& state, Micros now_us,
                                            const LimitSpec& spec, std::uint64_t cost) noexcept;

[[nodiscard]] Micros drainingBucketFullAt(const DrainingBucketState& state,
                                          const LimitSpec& spec) noexcept;

}  // namespace sluice::algorithm
