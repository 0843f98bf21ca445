// One request passing through a ProxySession and its response: what was decided, the permits it
// holds, the upstream connection it uses. Destroying it releases all of them, so every way an
// exchange ends (response done, error, client gone, shutdown) gives its concurrency slots back.
// Internal to src/gateway.
#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>

#include "gateway/chunk_buffer.h"
#include "gateway/concurrency_limiter.h"
#include "gateway/dynamic_limits.h"
#include "gateway/forwarding.h"
#include "gateway/gateway_config.h"
#include "gateway/proxy_session.h"
#include "gateway/upstream_pool.h"
#include "http/rate_limit_headers.h"
#include "policy/decide.h"
#include "policy/request_context.h"
#include "server/bounded_parser.h"
#include "server/loop_io.h"
#include "server/throttle_lines.h"

namespace sluice::gateway {

// An upstream's response header block; larger is a 502.
inline constexpr std::size_t kMaxResponseHeaderBytes = 64 * 1024;

// The header options of a policy, derived once per policy and thread rather than per request
// (proxy_admission.cc).
[[nodiscard]] const http::HeaderOptions& headerOptions(const policy::PolicyPtr& policy);

// The names of the IETF list fields (RateLimit, RateLimit-Policy, as the policy names them),
// whose items from the upstream are kept beside the gateway's; the gateway's other fields
// replace the upstream's of the same name (appendClientResponseHead).
[[nodiscard]] inline std::array<std::string_view, 2> rateLimitListFields(
    const policy::PolicyPtr& policy) {
  const http::HeaderNames& names = headerOptions(policy).names;
  return {names.ratelimit, names.ratelimit_policy};
}

struct ProxySession::Exchange {
  // A session makes and drops one exchange per request. At over a kilobyte, each would be a
  // large request to malloc, which then sweeps its small-block lists every time; instead each
  // thread keeps a few freed exchanges for the next ones (exchange_recycling.cc).
  static void* operator new(std::size_t bytes);
  static void operator delete(void* block, std::size_t bytes) noexcept;

  policy::PolicyPtr policy;  // one policy for the whole request, across throttle waits
  const Route* route = nullptr;
  policy::RequestView view;
  std::optional<policy::RequestContext> context;  // refers to `view`
  DynamicLimitsPtr dynamic;
  bool awaiting_webhook = false;  // its dynamic limits asked for, and not yet answered
  policy::PolicyDecision decision;
  Micros waited_us = 0;
  // Counted as throttled (the gateway's counter and the metrics), once: when first held, queued
  // or given a later shaper slot.
  bool throttle_counted = false;
  std::chrono::steady_clock::time_point deciding_since;  // the pass now deciding began (metrics)
  std::vector<ConcurrencyLimiter::Permit> permits;
  bool permits_after_hold = false;  // a shaper's hold gave them back: taken again after it
  std::unique_ptr<server::LoopTimer> timer;
  server::ThrottleLines::Place line;                // while a throttle holds it: its place in line
  std::chrono::steady_clock::time_point queued_at;  // when it began to wait for its turn
  http::HeaderList upstream_headers;                // added to the request: monitor-mode verdict
  bool head_request = false;
  bool websocket = false;  // asked to become a WebSocket (wantsWebSocket)
  unsigned version = 11;

  // Forwarding.
  UpstreamConnection upstream;
  bool reused_connection = false;  // taken from the pool: may have gone stale
  bool retried = false;
  Framing request_framing = Framing::kNone;
  bool request_head_sent = false;
  // The body's reads (client_body_min_rate): the time spent waiting for the client's bytes so
  // far (not for the upstream to take them), since when the read out now has waited, and the
  // bytes read.
  Micros body_wait_us = 0;
  std::chrono::steady_clock::time_point body_read_since;
  std::uint64_t body_bytes = 0;
  // Every byte of the request went upstream. Only then may the connection be reused: after an
  // early answer or a failed write, the upstream holds part of a request, and would take the
  // next one's bytes for the rest of it.
  bool request_sent = false;
  bool answered_early = false;  // the upstream spoke before the request body was all sent
  std::optional<
      server::BoundedResponseParser<boost::beast::http::buffer_body, ArenaAllocator<char>>>
      response;
  Framing client_framing = Framing::kNone;
  bool client_keep_alive = false;
  bool response_head_sent = false;
};

// What an exchange becomes once its upstream has switched to a WebSocket (proxy_tunnel.cc): the
// exchange stays, holding its permits and its upstream connection, for the tunnel's life.
struct ProxySession::Tunnel {
  explicit Tunnel(boost::asio::io_context& loop) : idle(loop) {}

  boost::asio::steady_timer idle;
  std::chrono::steady_clock::time_point last_moved = std::chrono::steady_clock::now();
  // Per way (Toward's order): since when a write has waited for its receiver to take anything,
  // if one is out. A receiver that takes nothing for the idle timeout ends the tunnel, though
  // the other way still moves (as nginx's send_timeout).
  std::array<std::optional<std::chrono::steady_clock::time_point>, 2> writing_since;
  int open_directions = 2;  // each ends at its sender's end of stream
};

}  // namespace sluice::gateway
