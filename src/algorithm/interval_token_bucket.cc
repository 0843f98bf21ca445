#include "algorithm/interval_token_bucket.h"

#include <algorithm>

#include "algorithm/scaled_math.h"

namespace sluice::algorithm {
namespace {

// Time from `refilled_at_us` until `missing` tokens have been refilled.
Int128 refillTime(Int128 missing, const LimitSpec& spec) {
  return ceilDiv(missing, spec.rate().count) * spec.rate().period_us;
}

}  // namespace

Outcome consumeIntervalTokenBucket(IntervalTokenBucketState& state, Micros now_us,
                                   const LimitSpec& spec, std::uint64_t cost) noexcept {
  const Micros interval_us = spec.rate().period_us;
  const auto capacity = static_cast<std::int64_t>(spec.burst());
  if (state.deficit > 0) now_us = std::max(now_us, state.refilled_at_us);
  Micros refilled_at_us = now_us;
  std::int64_t deficit = 0;
  if (state.deficit > 0) {
    const Micros elapsed_us = now_us - state.refilled_at_us;
    const Micros intervals = elapsed_us / interval_us;
    // Widened before multiplying: idle long enough, the product passes 64 bits.
    const Int128 refilled = Int128{intervals} * spec.rate().count;
    deficit = static_cast<std::int64_t>(std::max<Int128>(0, state.deficit - refilled));
    refilled_at_us =
        deficit > 0 ? state.refilled_at_us + static_cast<Micros>(intervals) * interval_us : now_us;
  }
  const Micros since_refill_us = now_us - refilled_at_us;  // >= 0

  Outcome outcome;
  outcome.limit = spec.burst();
  outcome.remaining = static_cast<std::uint64_t>(std::max<std::int64_t>(0, capacity - deficit));
  outcome.reset_after_us = saturate(refillTime(deficit, spec) - since_refill_us);
  if (cost > spec.burst()) {
    outcome.reason = DenyReason::kCostExceedsLimit;
    outcome.retry_after_us = kNever;
    return outcome;
  }
  const auto wanted = static_cast<std::int64_t>(cost);
  if (deficit + wanted > capacity) {
    outcome.reason = DenyReason::kOverLimit;
    outcome.retry_after_us =
        saturate(refillTime(deficit + wanted - capacity, spec) - since_refill_us);
    return outcome;
  }
  outcome.allowed = true;
  if (cost == 0) return outcome;
  deficit += wanted;
  outcome.remaining = static_cast<std::uint64_t>(capacity - deficit);
  outcome.reset_after_us = saturate(refillTime(deficit, spec) - since_refill_us);
  state = {refilled_at_us, deficit};
  return outcome;
}

Micros intervalTokenBucketFullAt(const IntervalTokenBucketState& state,
                                 const LimitSpec& spec) noexcept {
  return saturate(Int128{state.refilled_at_us} + refillTime(state.deficit, spec));
}

}  // namespace sluice::algorithm
