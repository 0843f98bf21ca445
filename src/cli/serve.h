// `sluice serve --config FILE`: every front door the config names, on one store and engine,
// until SIGINT or SIGTERM (then a graceful drain); SIGHUP reloads the policy.
#pragma once

#include <string>

namespace sluice::cli {

// The process's exit status: 0 after a clean stop, 2 when the config or a listener fails.
int serve(const std::string& path);

}  // namespace sluice::cli
