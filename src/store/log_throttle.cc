#include "store/log_throttle.h"

#include <string>
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

std::string LogThrottle::droppedNote(std::uint64_t dropped, std::string_view what) {
  if (dropped == 0) return {};
  std::string note = " (" + std::to_string(dropped) + " more";
  if (!what.empty()) note += " " + std::string(what);
  return note + " since the last line)";
}

}  // namespace sluice
