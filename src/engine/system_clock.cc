#include <algorithm>

#include "sluice/time.h"

namespace sluice {

SystemClock::SystemClock() noexcept
    : wall_at_anchor_us_(std::chrono::duration_cast<std::chrono::microseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count()),
      steady_anchor_(std::chrono::steady_clock::now()) {}

Micros SystemClock::now() const noexcept {
  const auto elapsed = std::chrono::steady_clock::now() - steady_anchor_;
  return wall_at_anchor_us_ +
         std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count();
}

}  // namespace sluice
