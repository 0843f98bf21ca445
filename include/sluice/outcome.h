// What one limit says about one request.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

#include "sluice/time.h"

namespace sluice {

// A retry_after that no amount of waiting reaches: the cost can never fit the limit.
inline constexpr Micros kNever = std::numeric_limits<Micros>::max();

enum class DenyReason : std::uint8_t {
  kNone,              // allowed
  kOverLimit,         // the limit is used up for now; retry_after_us says when this cost fits
  kCostExceedsLimit,  // the cost is larger than the limit itself; it never fits
  kStoreUnavailable,  // the store could not be reached and the limit's policy is to deny
  kInvalidCheck,      // the embedded API was given a check without a spec: nothing is decided
};

[[nodiscard]] std::string_view denyReasonName(DenyReason reason) noexcept;

struct Outcome {
  bool allowed = false;
  DenyReason reason = DenyReason::kNone;
  // The limit as a client would see it in X-RateLimit-Limit: a window's count, a bucket's
  // capacity, a shaper's queue capacity.
  std::uint64_t limit = 0;
  // Units still available after this request (before it, when denied).
  std::uint64_t remaining = 0;
  // Until the limit is fully available again, or, for window algorithms, the window ends.
  Micros reset_after_us = 0;
  // 0 when allowed. When denied: the earliest time from now at which this same cost passes
  // (exact to the microsecond), or kNever.
  Micros retry_after_us = 0;
  // Leaky bucket shaper only: how long the admitted request must wait for its slot.
  Micros delay_us = 0;
};

}  // namespace sluice
