// The live dashboard the admin listener serves at /dashboard: one self-contained HTML page
// (dashboard.html, embedded at build time) that reads /metrics once a second and shows
// decisions per second by limit and result, decision latency, degraded answers, keys held and
// every other series the doors export.
#pragma once

#include <string_view>

namespace sluice::server {

[[nodiscard]] std::string_view dashboardPage() noexcept;

}  // namespace sluice::server
