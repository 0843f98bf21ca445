// Test helpers: build specs from config-style strings, failing the test on a bad one.
#pragma once

#include <cstdint>
#include <string_view>

#include <gtest/gtest.h>

#include "sluice/limit_spec.h"
#include "sluice/rate.h"

namespace sluice::testing {

inline Rate rate(std::string_view text) {
  Result<Rate> parsed = Rate::parse(text);
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error());
  return parsed.ok() ? parsed.value() : Rate{1, kMicrosPerSecond};
}

inline LimitSpec spec(Algorithm algorithm, std::string_view rate_text, std::uint64_t burst = 0) {
  Result<LimitSpec> made = LimitSpec::make(algorithm, rate(rate_text), burst);
  EXPECT_TRUE(made.ok()) << (made.ok() ? "" : made.error());
  return made.ok() ? made.value() : LimitSpec::fixedWindow(Rate{1, kMicrosPerSecond}).value();
}

// A fixed instant well after the epoch: 2026-01-01T00:00:00Z.
inline constexpr Micros kJan2026 = 1'767'225'600LL * kMicrosPerSecond;

}  // namespace sluice::testing
