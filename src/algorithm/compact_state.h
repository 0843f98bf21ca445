// One 16-byte state type for every algorithm whose state has a fixed size, so a store can keep
// them all in one table and dispatch on the spec. (The sliding window log is the exception: its
// state grows with the limit; see sliding_window_log.h.)
#pragma once

#include <cstdint>

#include "sluice/limit_spec.h"
#include "sluice/outcome.h"

namespace sluice::algorithm {

// A zeroed CompactState is an unused key for every algorithm.
struct CompactState {
  std::int64_t a = 0;
  std::int64_t b = 0;
};

// True for every algorithm but the sliding window log.
[[nodiscard]] constexpr bool hasCompactState(Algorithm algorithm) noexcept {
  return algorithm != Algorithm::kSlidingWindowLog;
}

// Not thread-safe. Precondition: hasCompactState(spec.algorithm()). Leaves `state` unchanged
// unless it admits a cost > 0.
[[nodiscard]] Outcome consumeCompact(CompactState& state, Micros now_us, const LimitSpec& spec,
                                     std::uint64_t cost) noexcept;

// The instant from which `state` behaves like an unused key, so a store may drop it.
[[nodiscard]] Micros compactFullAt(const CompactState& state, const LimitSpec& spec) noexcept;

}  // namespace sluice::algorithm
