// libprotobuf logs an ERROR line for each message it cannot decode (a string field that is not
// UTF-8, say), so anyone who can reach the Envoy door's port could flood the log with one per
// request. Its lines are sent to spdlog instead, at most one a second.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include <google/protobuf/stubs/logging.h>

namespace sluice::rls {

// Lets through at most one line per interval.
class LogThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LogThrottle(Clock::duration interval) : interval_(interval) {}

  // Thread-safe. nullopt: drop the line. Otherwise pass it on; the number is how many lines were
  // dropped since the last one passed, for the line to say.
  [[nodiscard]] std::optional<std::uint64_t> admit(Clock::time_point now);

 private:
  std::mutex mutex_;
  Clock::duration interval_;
  std::optional<Clock::time_point> last_passed_;
  std::uint64_t dropped_ = 0;
};

// What the installed handler does with one libprotobuf line: through `throttle` (FATAL lines
// always pass, libprotobuf aborts after them) to spdlog at the matching level.
void forwardProtobufLine(LogThrottle& throttle, google::protobuf::LogLevel level, const char* file,
                         int line, const std::string& message, LogThrottle::Clock::time_point now);

// Process-wide and idempotent: libprotobuf's lines go to forwardProtobufLine with a throttle of
// one line a second. Call before serving (libprotobuf's handler is not set thread-safely).
void forwardProtobufLogs();

}  // namespace sluice::rls
