#include "gateway/gateway_metrics.h"

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <utility>

namespace sluice::gateway {
namespace {

// One counter family with a label per outcome.
void family(std::string& out, std::string_view name, std::string_view help, std::string_view label,
            std::initializer_list<std::pair<std::string_view, std::uint64_t>> values) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" counter\n");
  for (const auto& [value, count] : values) {
    out.append(name).append("{").append(label).append("=\"").append(value).append("\"} ");
    out.append(std::to_string(count)).append("\n");
  }
}

}  // namespace

std::string metricsText(const GatewayStats& stats) {
  std::string out;
  family(out, "sluice_gateway_requests_total",
         "Gateway requests by what befell them; one can count under several (a throttled one also "
         "as forwarded or denied, a shadow- or monitor-denied one as forwarded).",
         "result",
         {{"forwarded", stats.forwarded},
          {"denied", stats.denied},
          {"throttled", stats.throttled},
          {"shadow_denied", stats.shadow_denied},
          {"monitor_denied", stats.monitor_denied},
          {"concurrency_denied", stats.concurrency_denied},
          {"not_found", stats.not_found},
          {"upstream_failed", stats.upstream_failed},
          {"upstream_timed_out", stats.upstream_timed_out},
          {"client_gone", stats.client_gone},
          {"client_too_slow", stats.client_too_slow}});
  out.append(
      "# HELP sluice_gateway_websockets_total Requests the upstream switched to a "
      "WebSocket (also counted as forwarded).\n");
  out.append("# TYPE sluice_gateway_websockets_total counter\n");
  out.append("sluice_gateway_websockets_total ").append(std::to_string(stats.websockets));
  out.append("\n");
  family(out, "sluice_gateway_upstream_connections_closed_total",
         "Parked upstream connections closed before reuse.", "reason",
         {{"upstream_closed_or_spoke", stats.upstream_idle_closed}});
  family(out, "sluice_gateway_guard_total", "Requests and connections the DDoS guard refused.",
         "reason",
         {{"over_global_rate", stats.guard.over_global_rate},
          {"suspicious", stats.guard.suspicious},
          {"over_ip_connections", stats.guard.over_ip_connections}});
  family(out, "sluice_gateway_webhook_total", "Dynamic-limit webhook lookups.", "result",
         {{"call", stats.webhook.calls},
          {"failure", stats.webhook.failures},
          {"cache_hit", stats.webhook.cache_hits}});
  return out;
}

}  // namespace sluice::gateway
