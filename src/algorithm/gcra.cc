#include "algorithm/gcra.h"

#include <algorithm>

#include "algorithm/scaled_math.h"

namespace sluice::algorithm {

// Times below are "scaled": µs × drainPerMicro(), so that the emission interval of one request
// is exactly unitWeight() scaled units.
Outcome consumeGcra(GcraState& state, Micros now_us, const LimitSpec& spec,
                    std::uint64_t cost) noexcept {
  const std::int64_t per_us = spec.drainPerMicro();
  const std::int64_t emission_interval = spec.unitWeight();
  const Int128 tolerance = Int128{spec.burst()} * emission_interval;
  const Int128 now = Int128{now_us} * per_us;
  const Int128 tat = std::max(now, Int128{state.tat_us} * per_us + state.tat_fraction);

  // Remaining is how many more whole emission intervals fit before TAT reaches now + tolerance.
  const auto remaining_at = [&](Int128 tat_after) {
    return static_cast<std::uint64_t>(std::max<Int128>(0, tolerance - (tat_after - now)) /
                                      emission_interval);
  };
  Outcome outcome;
  outcome.limit = spec.burst();
  outcome.remaining = remaining_at(tat);
  outcome.reset_after_us = saturate(ceilDiv(tat - now, per_us));
  if (cost > spec.burst()) {
    outcome.reason = DenyReason::kCostExceedsLimit;
    outcome.retry_after_us = kNever;
    return outcome;
  }
  const Int128 new_tat = tat + Int128{cost} * emission_interval;
  const Int128 allow_at = new_tat - tolerance;
  if (allow_at > now) {
    outcome.reason = DenyReason::kOverLimit;
    outcome.retry_after_us = saturate(ceilDiv(allow_at - now, per_us));
    return outcome;
  }
  outcome.allowed = true;
  if (cost == 0) return outcome;
  outcome.remaining = remaining_at(new_tat);
  outcome.reset_after_us = saturate(ceilDiv(new_tat - now, per_us));
  state = {static_cast<Micros>(new_tat / per_us), static_cast<std::int64_t>(new_tat % per_us)};
  return outcome;
}

Micros gcraFullAt(const GcraState& state, const LimitSpec& /*spec*/) noexcept {
  return state.tat_us + (state.tat_fraction > 0 ? 1 : 0);
}

}  // namespace sluice::algorithm
