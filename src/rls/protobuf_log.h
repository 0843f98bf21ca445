// libprotobuf logs an ERROR line for each message it cannot decode (a string field that is not
// UTF-8, say), so anyone who can reach the Envoy door's port could flood the log with one per
// request. Its lines are sent to spdlog instead, at most one a second.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <google/protobuf/stubs/logging.h>

#include "store/log_throttle.h"

namespace sluice::rls {

// What the installed handler does with one libprotobuf line: through `throttle` (FATAL lines
// always pass, libprotobuf aborts after them) to spdlog at the matching level.
void forwardProtobufLine(LogThrottle& throttle, google::protobuf::LogLevel level, const char* file,
                         int line, const std::string& message, LogThrottle::Clock::time_point now);

// Process-wide and idempotent: libprotobuf's lines go to forwardProtobufLine with a throttle of
// one line a second. Call before serving (libprotobuf's handler is not set thread-safely).
void forwardProtobufLogs();

}  // namespace sluice::rls
