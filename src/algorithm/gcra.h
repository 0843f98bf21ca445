// GCRA, the generic cell rate algorithm: one timestamp per key, the theoretical arrival time
// (TAT) of the next request at the sustained rate. A request is admitted if it does not arrive
// earlier than TAT minus the burst tolerance. Same admissions as a continuous token bucket with
// the same rate and burst, with a different state; redis-cell and throttled use it.
#pragma once

#include <cstdint>

#include "sluice/limit_spec.h"
#include "sluice/outcome.h"

namespace sluice::algorithm {

// A zeroed state is an unused key. The TAT is tat_us + tat_fraction / spec.drainPerMicro() µs,
// so an emission interval such as 1/3 s is kept exactly rather than rounded.
struct GcraState {
  Micros tat_us = 0;
  std::int64_t tat_fraction = 0;
};

// Not thread-safe. Leaves `state` unchanged unless it admits a cost > 0.
[[nodiscard]] Outcome consumeGcra(GcraState& state, Micros now_us, const LimitSpec& spec,
                                  std::uint64_t cost) noexcept;

[[nodiscard]] Micros gcraFullAt(const GcraState& state, const LimitSpec& spec) noexcept;

}  // namespace sluice::algorithm
