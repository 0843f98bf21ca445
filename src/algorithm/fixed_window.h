// Fixed window counter: at most `rate.count` units per window of `rate.period_us`, windows
// aligned to multiples of the period. Cheap and simple; admits up to 2× the limit across a
// window boundary.
#pragma once

#include <cstdint>

#include "sluice/limit_spec.h"
#include "sluice/outcome.h"

namespace sluice::algorithm {

// A zeroed state is an unused key.
struct FixedWindowState {
  Micros window_start_us = 0;
  std::uint64_t count = 0;
};

// Not thread-safe (the store serializes access). Leaves `state` unchanged unless it admits a
// cost > 0. A `now` older than the stored window is treated as inside the stored window.
[[nodiscard]] Outcome consumeFixedWindow(FixedWindowState& state, Micros now_us,
                                         const LimitSpec& spec, std::uint64_t cost) noexcept;

// The instant from which `state` behaves like an unused key.
[[nodiscard]] Micros fixedWindowFullAt(const FixedWindowState& state,
                                       const LimitSpec& spec) noexcept;

}  // namespace sluice::algorithm
