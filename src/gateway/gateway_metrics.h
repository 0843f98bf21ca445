// The gateway's counters as Prometheus text, appended to the admin listener's /metrics.
#pragma once

#include <string>

#include "gateway/gateway.h"

namespace sluice::gateway {

[[nodiscard]] std::string metricsText(const GatewayStats& stats);

}  // namespace sluice::gateway
