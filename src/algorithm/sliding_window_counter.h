// Sliding window counter: the count in the current aligned window plus the previous window's
// count weighted by the part of the sliding window that still overlaps it. Two counters per key,
// close to a true sliding window when traffic is steady (Cloudflare's "approximated" window).
#pragma once

#include <cstdint>

#include "sluice/limit_spec.h"
#include "sluice/outcome.h"

namespace sluice::algorithm {

// A zeroed state is an unused key. Counts fit 32 bits because limits do (LimitSpec checks).
struct SlidingWindowCounterState {
  Micros window_start_us = 0;
  std::uint32_t current = 0;
  std::uint32_t previous = 0;
};

// Not thread-safe. Admits when previous × unelapsed/window + current + cost <= limit, computed
// exactly in integers. Leaves `state` unchanged unless it admits a cost > 0.
[[nodiscard]] Outcome consumeSlidingWindowCounter(SlidingWindowCounterState& state, Micros now_us,
                                                  const LimitSpec& spec,
                                                  std::uint64_t cost) noexcept;

[[nodiscard]] Micros slidingWindowCounterFullAt(const SlidingWindowCounterState& state,
                                                const LimitSpec& spec) noexcept;

}  // namespace sluice::algorithm
