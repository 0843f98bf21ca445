#include "rls/protobuf_log.h"

#include <utility>

#include <spdlog/spdlog.h>

namespace sluice::rls {

void forwardProtobufLine(LogThrottle& throttle, google::protobuf::LogLevel level, const char* file,
                         int line, const std::string& message, LogThrottle::Clock::time_point now) {
  std::uint64_t dropped = 0;
  if (level != google::protobuf::LOGLEVEL_FATAL) {
    const std::optional<std::uint64_t> admitted = throttle.admit(now);
    if (!admitted) return;
    dropped = *admitted;
  }
  const spdlog::level::level_enum to =
      level == google::protobuf::LOGLEVEL_FATAL     ? spdlog::level::critical
      : level == google::protobuf::LOGLEVEL_ERROR   ? spdlog::level::err
      : level == google::protobuf::LOGLEVEL_WARNING ? spdlog::level::warn
                                                    : spdlog::level::info;
  if (dropped == 0) {
    spdlog::log(to, "libprotobuf {}:{}: {}", file, line, message);
  } else {
    spdlog::log(to, "libprotobuf {}:{}: {} ({} more libprotobuf lines dropped before this one)",
                file, line, message, dropped);
  }
}

namespace {

void throttledHandler(google::protobuf::LogLevel level, const char* file, int line,
                      const std::string& message) {
  static LogThrottle throttle(std::chrono::seconds(1));
  forwardProtobufLine(throttle, level, file, line, message, LogThrottle::Clock::now());
}

}  // namespace

void forwardProtobufLogs() {
  static std::once_flag installed;
  std::call_once(installed, [] { google::protobuf::SetLogHandler(&throttledHandler); });
}

}  // namespace sluice::rls
