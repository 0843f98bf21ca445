// The gateway: section of the main configuration file: where the gateway listens, the upstreams
// it forwards to, the routes that pick one, its timeouts, the DDoS guard, concurrency limits and
// the dynamic-limit webhook. The rate limits themselves are the policy's (limits:).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include "policy/key_selector.h"
#include "policy/policy_loader.h"
#include "policy/route_match.h"
#include "policy/section_change.h"
#include "sluice/result.h"
#include "sluice/time.h"

namespace sluice::gateway {

struct Upstream {
  std::string name;
  boost::asio::ip::tcp::endpoint endpoint;
  std::string host;  // "ip:port": the Host sent for a request that has none (HTTP/1.0 may omit it)
  std::size_t max_idle_per_thread = 64;  // kept-alive connections parked per I/O thread
  // A connection parked this long is closed, as nginx's upstream keepalive_timeout does; set it
  // below the upstream's own idle timeout, so the upstream never closes one as it is reused.
  Micros idle_timeout_us = 60 * kMicrosPerSecond;
};

enum class RouteMode {
  kEnforce,  // deny, throttle and shadow as the policy says
  kMonitor,  // never block: the decision travels to the upstream in X-Sluice-* request headers
};

struct Route {
  policy::RouteMatch match;
  std::size_t upstream = 0;  // index into GatewaySettings::upstreams
  RouteMode mode = RouteMode::kEnforce;
};

struct GuardSettings {
  std::uint64_t global_rps = 0;            // requests/s over all clients, 0: no ceiling
  std::size_t max_connections_per_ip = 0;  // 0: no cap
  std::vector<std::string> patterns;       // lower case; matched on the decoded path and query
  static std::vector<std::string> defaultPatterns();
};

// Stripe's concurrent-requests limiter: at most max_in_flight requests per key at once.
struct ConcurrencyLimit {
  std::string name;
  policy::RouteMatch match;
  policy::KeySelector key;
  std::size_t max_in_flight = 1;
  int deny_status = 429;
};

struct WebhookSettings {
  Upstream server;                              // where the webhook listens (http only)
  std::string path;                             // the target POSTed to, e.g. /limits
  Micros timeout_us = 100 * kMicrosPerMilli;    // past this the static policy decides alone
  Micros cache_ttl_us = 10 * kMicrosPerSecond;  // how long an answer is reused
  Micros failure_ttl_us = kMicrosPerSecond;     // how long a failure is remembered
  std::size_t max_entries = 100'000;            // cache bound
  // Request headers whose values, with method and path, key the cache. Other headers are still
  // sent to the webhook but do not make a new cache entry.
  std::vector<std::string> cache_key_headers = {"Authorization"};
};

struct GatewaySettings {
  std::string listen = "127.0.0.1:8000";
  std::size_t max_connections = 10'000;
  std::size_t max_header_bytes = 16 * 1024;
  Micros client_timeout_us = 30 * kMicrosPerSecond;  // header in, body chunk in, idle wait
  // A request body, which holds an upstream connection while it streams, must come at least
  // this fast on average after a first client_timeout of grace (bytes/s; 0: no bound). Each
  // chunk within client_timeout was not enough: a byte every 29 s held the upstream's
  // connection, and its worker, for as long as the client liked.
  std::uint64_t client_body_min_rate = 500;
  Micros connect_timeout_us = 2 * kMicrosPerSecond;    // upstream connect → 504 past it
  Micros response_timeout_us = 30 * kMicrosPerSecond;  // upstream header / body chunk → 504
  // A WebSocket through which nothing has passed either way for this long is closed (nginx's
  // proxy_read_timeout is 60 s; Envoy's stream idle timeout 5 min).
  Micros websocket_idle_timeout_us = 300 * kMicrosPerSecond;
  std::vector<Upstream> upstreams;
  std::vector<Route> routes;  // first match wins; no match → 404
  GuardSettings guard;
  std::vector<ConcurrencyLimit> concurrency;
  std::optional<WebhookSettings> webhook;
  // The section as read, normalized (YAML::Dump): a reload compares it to tell an edit, which
  // waits for a restart, from none (comments and layout are not edits).
  std::string section_text;
};

// Reads the optional top-level `gateway:` section of the sluice configuration at `path`.
// nullopt when the file has no such section; an error lists every problem as
// "file:line:col: message", one a line. Never throws.
[[nodiscard]] Result<std::optional<GatewaySettings>> loadGatewaySettings(const std::string& path);
// The same from the file already read.
[[nodiscard]] Result<std::optional<GatewaySettings>> loadGatewaySettings(
    const policy::ConfigFile& file);

// The same from YAML text; `source` names it in messages.
[[nodiscard]] Result<std::optional<GatewaySettings>> loadGatewaySettingsText(
    const std::string& yaml, const std::string& source);

// For a reload, which takes in the limits the gateway enforces but not its own settings: a
// warning when the gateway section of the config `file` is no longer the one `running` was
// read from (changed or removed), saying it takes effect at restart, or an error when it now has
// errors; nullopt when it is the same. Never throws.
[[nodiscard]] std::optional<policy::SectionChange> restartOnlyChange(
    const GatewaySettings& running, const policy::ConfigFile& file);

}  // namespace sluice::gateway
