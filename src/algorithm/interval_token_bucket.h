// Token bucket with interval refill: `rate.count` tokens are added every `rate.period_us`,
// all at once, never above `burst` (max_amount). The counting of AWS API Gateway and of
// refill_amount / refill_time style configs.
#pragma once

#include <cstdint>

#include "sluice/limit_spec.h"
#include "sluice/outcome.h"

namespace sluice::algorithm {

// A zeroed state is an unused key: a full bucket. `deficit` is the number of missing tokens;
// refills happen at `refilled_at_us` + k × period. A full bucket restarts the refill clock at
// its next use, exactly as an unused key would.
struct IntervalTokenBucketState {
  Micros refilled_at_us = 0;
  std::int64_t deficit = 0;
};

// Not thread-safe. Leaves `state` unchanged unless it admits a cost > 0.
[[nodiscard]] Outcome consumeIntervalTokenBucket(IntervalTokenBucketState& state, Micros now_us,
                                                 const LimitSpec& spec,
                                                 std::uint64_t cost) noexcept;

[[nodiscard]] Micros intervalTokenBucketFullAt(const IntervalTokenBucketState& state,
                                               const LimitSpec& spec) noexcept;

}  // namespace sluice::algorithm
