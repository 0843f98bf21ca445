#include "store/log_throttle.h"

#include <chrono>
#include <optional>

#include <gtest/gtest.h>

namespace sluice {
namespace {

using namespace std::chrono_literals;

// One line per interval passes; the next one to pass says how many were dropped meanwhile.
TEST(LogThrottleTest, OneLinePerIntervalCountingTheDropped) {
  LogThrottle throttle(1s);
  const LogThrottle::Clock::time_point start{};
  EXPECT_EQ(throttle.admit(start), 0u);
  for (int i = 0; i < 299; ++i) EXPECT_EQ(throttle.admit(start + 999ms), std::nullopt);
  EXPECT_EQ(throttle.admit(start + 1s), 299u);
  EXPECT_EQ(throttle.admit(start + 1500ms), std::nullopt);
  EXPECT_EQ(throttle.admit(start + 3s), 1u);
}

}  // namespace
}  // namespace sluice
