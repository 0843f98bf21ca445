#include "store/log_throttle.h"

#include <utility>

namespace sluice {

std::optional<std::uint64_t> LogThrottle::admit(Clock::time_point now) {
  const std::lock_guard lock(mutex_);
  if (last_passed_ && now - *last_passed_ < interval_) {
    ++dropped_;
    return std::nullopt;
  }
  last_passed_ = now;
  return std::exchange(dropped_, 0);
}

}  // namespace sluice
