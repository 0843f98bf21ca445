#include "rls/grpc_log.h"

#include <mutex>
#include <string_view>

#include <spdlog/spdlog.h>

namespace sluice::rls {
namespace {

std::mutex listener_failure_mutex;
std::optional<std::string> listener_failure;  // guarded by listener_failure_mutex

}  // namespace

std::optional<std::string> grpcListenerFailure() {
  const std::lock_guard lock(listener_failure_mutex);
  return listener_failure;
}

void forwardGrpcLine(LogThrottle& throttle, gpr_log_severity severity, const char* file, int line,
                     const char* message, LogThrottle::Clock::time_point now) {
  const std::string_view text = message != nullptr ? message : "";
  if (text.starts_with("Failed accept4")) {
    const std::lock_guard lock(listener_failure_mutex);
    if (!listener_failure) listener_failure = std::string(text.substr(0, 200));
  }
  std::uint64_t dropped = 0;
  if (!text.starts_with("assertion failed")) {
    const std::optional<std::uint64_t> admitted = throttle.admit(now);
    if (!admitted) return;
    dropped = *admitted;
  }
  const spdlog::level::level_enum to = severity == GPR_LOG_SEVERITY_ERROR  ? spdlog::level::err
                                       : severity == GPR_LOG_SEVERITY_INFO ? spdlog::level::info
                                                                           : spdlog::level::debug;
  spdlog::log(to, "grpc {}:{}: {}{}", file != nullptr ? file : "?", line, text,
              LogThrottle::droppedNote(dropped, "grpc lines"));
}

namespace {

void throttledGrpcLog(gpr_log_func_args* args) {
  static LogThrottle throttle(std::chrono::seconds(1));
  forwardGrpcLine(throttle, args->severity, args->file, args->line, args->message,
                  LogThrottle::Clock::now());
}

}  // namespace

void forwardGrpcLogs() {
  static std::once_flag installed;
  std::call_once(installed, [] { gpr_set_log_function(&throttledGrpcLog); });
}

}  // namespace sluice::rls
