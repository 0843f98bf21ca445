// gRPC core writes its own lines to stderr, unthrottled: a request with malformed metadata (an
// unknown `grpc-encoding` of a few KB, say) makes one ERROR line each, so anyone who can reach
// the Envoy door's port could fill the disk (2,000 calls wrote 8.3 MB). Its lines are sent to
// spdlog instead, at most one a second, as libprotobuf's are (protobuf_log.h).
#pragma once

#include <optional>
#include <string>

#include <grpc/support/log.h>

#include "store/log_throttle.h"

namespace sluice::rls {

// What the installed function does with one gRPC line: through `throttle` to spdlog at the
// matching level. An assertion's line always passes: gRPC aborts right after it.
void forwardGrpcLine(LogThrottle& throttle, gpr_log_severity severity, const char* file, int line,
                     const char* message, LogThrottle::Clock::time_point now);

// gRPC 1.51 gives up on a listener for good once an accept fails for a reason other than "try
// again" (out of file descriptors, mostly), and says so only in a "Failed accept4" line, which
// forwardGrpcLine spots (whatever the throttle drops). That line, once seen; else nullopt.
// Thread-safe.
[[nodiscard]] std::optional<std::string> grpcListenerFailure();

// Process-wide and idempotent: gRPC's lines go to forwardGrpcLine with a throttle of one line a
// second. gRPC still drops the lines below its verbosity (GRPC_VERBOSITY, ERROR by default)
// before they get here. Call before serving.
void forwardGrpcLogs();

}  // namespace sluice::rls
