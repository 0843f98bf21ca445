// Log lines that a flood could multiply (one per refused request, one per failed call) pass
// through a LogThrottle, so a flood leaves a line now and then, saying how many were dropped.
// In store/, the lowest layer with such lines; the Envoy door and the gateway use it too.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace sluice {

// Lets through at most one line per interval.
class LogThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LogThrottle(Clock::duration interval) : interval_(interval) {}

  // Thread-safe. nullopt: drop the line. Otherwise pass it on; the number is how many lines were
  // dropped since the last one passed, for the line to say.
  [[nodiscard]] std::optional<std::uint64_t> admit(Clock::time_point now = Clock::now());

  // What a passed line adds about the lines dropped before it: "" or " (N more <what> since the
  // last line)" (`what` may be empty), where `dropped` is what admit() returned.
  [[nodiscard]] static std::string droppedNote(std::uint64_t dropped, std::string_view what);

 private:
  std::mutex mutex_;
  Clock::duration interval_;
  std::optional<Clock::time_point> last_passed_;
  std::uint64_t dropped_ = 0;
};

}  // namespace sluice
