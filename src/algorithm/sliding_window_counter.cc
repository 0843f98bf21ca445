#include "algorithm/sliding_window_counter.h"

#include <algorithm>

#include "algorithm/scaled_math.h"

namespace sluice::algorithm {
namespace {

// The earliest offset into a window (0..window_us) at which
// `previous` × (window_us − offset) <= `room` × window_us; requires room >= 0, previous > 0.
Micros offsetWhereWeightFits(std::uint64_t previous, Int128 room, Micros window_us) {
  const Int128 unelapsed_allowed = divide(room * window_us, previous);
  return unelapsed_allowed >= window_us ? 0 : window_us - static_cast<Micros>(unelapsed_allowed);
}

}  // namespace

Outcome consumeSlidingWindowCounter(SlidingWindowCounterState& state, Micros now_us,
                                    const LimitSpec& spec, std::uint64_t cost) noexcept {
  const std::uint64_t limit = spec.rate().count;
  const Micros window_us = spec.rate().period_us;
  Micros start_us = windowStart(now_us, window_us);
  if (start_us < state.window_start_us) {
    start_us = state.window_start_us;
    now_us = start_us;
  }
  std::uint64_t current = 0;
  std::uint64_t previous = 0;
  if (start_us == state.window_start_us) {
    current = state.current;
    previous = state.previous;
  } else if (start_us == state.window_start_us + window_us) {
    previous = state.current;
  }
  const Micros elapsed_us = now_us - start_us;
  // Everything below is in units of 1/window_us of a request.
  const Int128 used = Int128{previous} * (window_us - elapsed_us) + Int128{current} * window_us;
  const Int128 capacity = Int128{limit} * window_us;

  Outcome outcome;
  outcome.limit = limit;
  outcome.remaining =
      static_cast<std::uint64_t>(std::max<Int128>(0, floorDiv(capacity - used, window_us)));
  // Full again once every counted request has slid out: two windows after this one started
  // if this window counts any, else when this window ends.
  const auto reset_after = [&](std::uint64_t current_after) {
    return start_us + (current_after > 0 ? 2 : 1) * window_us - now_us;
  };
  outcome.reset_after_us = reset_after(current);
  if (cost > limit) {
    outcome.reason = DenyReason::kCostExceedsLimit;
    outcome.retry_after_us = kNever;
    return outcome;
  }
  if (used + Int128{cost} * window_us > capacity) {
    outcome.reason = DenyReason::kOverLimit;
    const Int128 room_now = Int128{limit} - current - cost;
    if (room_now >= 0) {  // fits later in this window, as the previous window's weight fades
      outcome.retry_after_us =
          start_us + offsetWhereWeightFits(previous, room_now, window_us) - now_us;
    } else {  // the next window, where this window's count becomes the weighted one
      const Int128 room_next = Int128{limit} - cost;
      outcome.retry_after_us =
          start_us + window_us + offsetWhereWeightFits(current, room_next, window_us) - now_us;
    }
    return outcome;
  }
  outcome.allowed = true;
  outcome.remaining =
      static_cast<std::uint64_t>(floorDiv(capacity - used - Int128{cost} * window_us, window_us));
  outcome.reset_after_us = reset_after(current + cost);
  if (cost > 0) {
    state = {start_us, static_cast<std::uint32_t>(current + cost),
             static_cast<std::uint32_t>(previous)};
  }
  return outcome;
}

Micros slidingWindowCounterFullAt(const SlidingWindowCounterState& state,
                                  const LimitSpec& spec) noexcept {
  const Micros window_us = spec.rate().period_us;
  if (state.current > 0) return state.window_start_us + 2 * window_us;
  if (state.previous > 0) return state.window_start_us + window_us;
  return state.window_start_us;
}

}  // namespace sluice::algorithm
