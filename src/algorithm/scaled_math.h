// Exact integer helpers for the algorithms. Intermediate products (time × rate) can exceed
// 64 bits, so they are formed in 128 bits and only bounded results come back to 64.
#pragma once

#include <algorithm>
#include <cstdint>

#include "sluice/time.h"

namespace sluice::algorithm {

__extension__ using Int128 = __int128;

// Truncating division. Division dominates the cost of a decision: 128-bit division is a
// library call and 64-bit division is several times slower than 32-bit on many x86 cores, so
// the common shapes (divisor 1, small operands) take the cheapest exact path.
[[nodiscard]] constexpr Int128 divide(Int128 numerator, Int128 denominator) noexcept {
  if (denominator == 1) return numerator;
  constexpr Int128 kMin = INT64_MIN;
  constexpr Int128 kMax = INT64_MAX;
  constexpr Int128 kMax32 = UINT32_MAX;
  if (numerator >= 0 && numerator <= kMax32 && denominator > 0 && denominator <= kMax32) {
    return static_cast<std::uint32_t>(numerator) / static_cast<std::uint32_t>(denominator);
  }
  if (numerator >= kMin && numerator <= kMax && denominator >= kMin && denominator <= kMax) {
    return static_cast<std::int64_t>(numerator) / static_cast<std::int64_t>(denominator);
  }
  return numerator / denominator;
}

// Preconditions: numerator >= 0, denominator > 0.
[[nodiscard]] constexpr Int128 ceilDiv(Int128 numerator, Int128 denominator) noexcept {
  return divide(numerator + denominator - 1, denominator);
}

// Floor division that also rounds negative numerators down. Precondition: denominator > 0.
[[nodiscard]] constexpr Int128 floorDiv(Int128 numerator, Int128 denominator) noexcept {
  const Int128 quotient = divide(numerator, denominator);
  return (quotient * denominator != numerator && numerator < 0) ? quotient - 1 : quotient;
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
