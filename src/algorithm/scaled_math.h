// Exact integer helpers for the algorithms. Intermediate products (time × rate) can exceed
// 64 bits, so they are formed in 128 bits and only bounded results come back to 64.
#pragma once

#include <algorithm>
#include <cstdint>

#include "sluice/time.h"

namespace sluice::algorithm {

__extension__ using Int128 = __int128;

// Preconditions: numerator >= 0, denominator > 0.
[[nodiscard]] constexpr Int128 ceilDiv(Int128 numerator, Int128 denominator) noexcept {
  return (numerator + denominator - 1) / denominator;
}

// Floor division that also rounds negative numerators down.
[[nodiscard]] constexpr Int128 floorDiv(Int128 numerator, Int128 denominator) noexcept {
  const Int128 quotient = numerator / denominator;
  return (numerator % denominator != 0 && numerator < 0) ? quotient - 1 : quotient;
}

// Clamps a non-negative 128-bit value into 64 bits, saturating at the largest Micros.
[[nodiscard]] constexpr std::int64_t saturate(Int128 value) noexcept {
  constexpr Int128 kMax = INT64_MAX;
  return static_cast<std::int64_t>(std::clamp<Int128>(value, 0, kMax));
}

// Start of the window of length `window_us` containing `now_us`; windows are aligned to
// multiples of their length since the Unix epoch, so a day window starts at UTC midnight.
[[nodiscard]] constexpr Micros windowStart(Micros now_us, Micros window_us) noexcept {
  return static_cast<Micros>(floorDiv(now_us, window_us) * window_us);
}

}  // namespace sluice::algorithm
