#include "algorithm/fixed_window.h"

#include "algorithm/scaled_math.h"

namespace sluice::algorithm {

Outcome consumeFixedWindow(FixedWindowState& state, Micros now_us, const LimitSpec& spec,
                           std::uint64_t cost) noexcept {
  const std::uint64_t limit = spec.rate().count;
  const Micros window_us = spec.rate().period_us;
  Micros start_us = windowStart(now_us, window_us);
  if (start_us < state.window_start_us) {  // the clock stepped back into an earlier window
    start_us = state.window_start_us;
    now_us = start_us;
  }
  const std::uint64_t used = start_us == state.window_start_us ? state.count : 0;

  Outcome outcome;
  outcome.limit = limit;
  outcome.remaining = used >= limit ? 0 : limit - used;  // a lowered limit can be overrun
  outcome.reset_after_us = start_us + window_us - now_us;
  if (cost > limit) {
    outcome.reason = DenyReason::kCostExceedsLimit;
    outcome.retry_after_us = kNever;
    return outcome;
  }
  if (used + cost > limit) {
    outcome.reason = DenyReason::kOverLimit;
    outcome.retry_after_us = outcome.reset_after_us;
    return outcome;
  }
  outcome.allowed = true;
  outcome.remaining = limit - used - cost;
  if (cost > 0) state = {start_us, used + cost};
  return outcome;
}

Micros fixedWindowFullAt(const FixedWindowState& state, const LimitSpec& spec) noexcept {
  return state.count == 0 ? state.window_start_us : state.window_start_us + spec.rate().period_us;
}

}  // namespace sluice::algorithm
