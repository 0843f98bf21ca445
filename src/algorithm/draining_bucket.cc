#include "algorithm/draining_bucket.h"

#include <algorithm>

#include "algorithm/scaled_math.h"

namespace sluice::algorithm {

Outcome consumeDrainingBucket(DrainingBucketState& state, Micros now_us, const LimitSpec& spec,
                              std::uint64_t cost) noexcept {
  now_us = std::max(now_us, state.last_us);
  const std::int64_t unit = spec.unitWeight();
  const std::int64_t drain_per_us = spec.drainPerMicro();
  const Int128 capacity = Int128{spec.burst()} * unit;
  const Int128 drained = Int128{now_us - state.last_us} * drain_per_us;
  const Int128 level = std::max<Int128>(0, Int128{state.level} - drained);
  const Int128 weight = Int128{cost} * unit;

  Outcome outcome;
  outcome.limit = spec.burst();
  Int128 level_after = level;
  if (cost > spec.burst()) {
    outcome.reason = DenyReason::kCostExceedsLimit;
    outcome.retry_after_us = kNever;
  } else if (level + weight > capacity) {
    outcome.reason = DenyReason::kOverLimit;
    outcome.retry_after_us = saturate(ceilDiv(level + weight - capacity, drain_per_us));
  } else {
    outcome.allowed = true;
    if (spec.algorithm() == Algorithm::kLeakyBucketShaper && cost > 0) {
      // The water ahead of this request leaks out first. A peek (cost 0) takes no slot, so it
      // waits for none.
      outcome.delay_us = saturate(ceilDiv(level, drain_per_us));
    }
    if (cost > 0) {
      level_after = level + weight;
      state = {now_us, static_cast<std::int64_t>(level_after)};
    }
  }
  // A lowered burst can leave the level above the capacity.
  outcome.remaining =
      static_cast<std::uint64_t>(std::max<Int128>(0, divide(capacity - level_after, unit)));
  outcome.reset_after_us = saturate(ceilDiv(level_after, drain_per_us));
  return outcome;
}

Micros drainingBucketFullAt(const DrainingBucketState& state, const LimitSpec& spec) noexcept {
  return state.last_us + saturate(ceilDiv(state.level, spec.drainPerMicro()));
}

}  // namespace sluice::algorithm
