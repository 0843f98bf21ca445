// Test helpers for the trace tests: seeded random request sequences and field-by-field outcome
// comparison.
#pragma once

#include <cstdint>
#include <random>
#include <sstream>
#include <string>

#include "sluice/limit_spec.h"
#include "sluice/outcome.h"

namespace sluice::testing {

// Every field, so a mismatch shows both outcomes whole.
inline std::string describe(const Outcome& outcome) {
  std::ostringstream out;
  out << "{allowed " << outcome.allowed << ", reason " << static_cast<int>(outcome.reason)
      << ", limit " << outcome.limit << ", remaining " << outcome.remaining << ", reset "
      << outcome.reset_after_us << ", retry " << outcome.retry_after_us << ", delay "
      << outcome.delay_us << "}";
  return out.str();
}

// The next instant of a trace: often the same, sometimes a microsecond or up to half a period
// later, now and then several periods later, and (when allowed) a little earlier, as a clock
// stepping back.
inline Micros nextInstant(std::mt19937_64& random, Micros at_us, const LimitSpec& spec,
                          bool may_step_back) {
  const auto period = static_cast<std::uint64_t>(spec.rate().period_us);
  switch (random() % 10) {
    case 0:
    case 1:
    case 2:
    case 3:
      return at_us;
    case 4:
      return at_us + 1;
    case 8:
      return at_us + static_cast<Micros>(random() % (3 * period + 1));
    case 9:
      if (may_step_back) return at_us - static_cast<Micros>(random() % (period / 4 + 1));
      return at_us + static_cast<Micros>(random() % (period / 2 + 1));
    default:
      return at_us + static_cast<Micros>(random() % (period / 2 + 1));
  }
}

// Mostly 1; the edges 0, the limit and the limit + 1; sometimes anything up to the limit.
inline std::uint64_t nextCost(std::mt19937_64& random, const LimitSpec& spec) {
  switch (random() % 12) {
    case 0:
      return 0;
    case 1:
      return spec.limit();
    case 2:
      return spec.limit() + 1;
    case 3:
    case 4:
      return 1 + random() % spec.limit();
    default:
      return 1;
  }
}

}  // namespace sluice::testing
