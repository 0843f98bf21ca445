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
  // The TAT as whole µs + fraction, and scaled; an old TAT means "now".
  GcraState base = state;
  if (base.tat_us < now_us || (base.tat_us == now_us && base.tat_fraction == 0)) {
    base = {now_us, 0};
  }
  const Int128 tat = Int128{base.tat_us} * per_us + base.tat_fraction;

  Outcome outcome;
  outcome.limit = spec.burst();
  Int128 tat_after = tat;
  if (cost > spec.burst()) {
    outcome.reason = DenyReason::kCostExceedsLimit;
    outcome.retry_after_us = kNever;
  } else if (const Int128 allow_at = tat + Int128{cost} * emission_interval - tolerance;
             allow_at > now) {
    outcome.reason = DenyReason::kOverLimit;
    outcome.retry_after_us = saturate(ceilDiv(allow_at - now, per_us));
  } else {
    outcome.allowed = true;
    if (cost > 0) {
      const Int128 increment = Int128{cost} * emission_interval;
      tat_after = tat + increment;
      // Carry the increment into the µs + fraction form: a small division, where dividing the
      // whole scaled TAT would be a slow 64-bit one.
      const Int128 fraction = base.tat_fraction + increment;
      const Int128 carried_us = divide(fraction, per_us);
      state = {base.tat_us + static_cast<Micros>(carried_us),
               static_cast<std::int64_t>(fraction - carried_us * per_us)};
    }
  }
  // Remaining: how many more whole emission intervals fit before TAT reaches now + tolerance.
  outcome.remaining = static_cast<std::uint64_t>(
      divide(std::max<Int128>(0, tolerance - (tat_after - now)), emission_interval));
  outcome.reset_after_us = saturate(ceilDiv(tat_after - now, per_us));
  return outcome;
}

Micros gcraFullAt(const GcraState& state, const LimitSpec& /*spec*/) noexcept {
  return state.tat_us + (state.tat_fraction > 0 ? 1 : 0);
}

}  // namespace sluice::algorithm
