// The gateway door: a rate-limiting reverse proxy. It listens on gateway.listen, runs the DDoS
// guard, decides every request with the policy (plus concurrency limits and the dynamic-limit
// webhook), and forwards what is allowed to the route's upstream over kept-alive connections,
// streaming bodies both ways. Denied requests get the limit's status with the JSON body and
// rate-limit headers; throttled ones wait on a timer; shadow and monitor routes never block.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include <boost/asio/ip/tcp.hpp>

#include "engine/engine.h"
#include "gateway/ddos_guard.h"
#include "gateway/gateway_config.h"
#include "gateway/webhook_limits.h"
#include "policy/policy.h"
#include "server/io_pool.h"
#include "server/metrics.h"
#include "sluice/result.h"

namespace sluice::gateway {

// The policy in force; called once per request (a reload swaps what it returns). Thread-safe.
using PolicySource = std::function<policy::PolicyPtr()>;

struct GatewayStats {
  std::uint64_t forwarded = 0;           // requests that reached an upstream
  std::uint64_t denied = 0;              // answered with a rate limit's deny status
  std::uint64_t throttled = 0;           // held on a timer at least once
  std::uint64_t shadow_denied = 0;       // forwarded, a shadow limit would have denied
  std::uint64_t monitor_denied = 0;      // forwarded on a monitor route, marked denied
  std::uint64_t concurrency_denied = 0;  // over a concurrency limit
  std::uint64_t not_found = 0;           // no route
  std::uint64_t upstream_failed = 0;     // answered 502
  std::uint64_t upstream_timed_out = 0;  // answered 504
  std::uint64_t client_gone = 0;  // the client left while its request waited (throttle, upstream)
  // A request body that stopped for client_timeout or fell behind client_body_min_rate: closed.
  std::uint64_t client_too_slow = 0;
  std::uint64_t websockets = 0;  // requests the upstream switched to a WebSocket
  // Parked upstream connections closed because the upstream closed them or sent bytes unasked.
  std::uint64_t upstream_idle_closed = 0;
  GuardCounters guard;
  WebhookStats webhook;
};

class Gateway {
 public:
  // `pool`, `engine` and `clock` must outlive the gateway; connections are spread over the
  // pool's loops and throttle timers run on each connection's own loop.
  // `metrics`, when given (the service's), counts the gateway's decisions as the API's are.
  Gateway(server::IoPool& pool, Engine& engine, const Clock& clock, PolicySource policy,
          GatewaySettings settings, server::Metrics* metrics = nullptr);
  ~Gateway();
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  // Binds settings.listen (port 0 picks one). Error says what failed.
  Result<boost::asio::ip::tcp::endpoint> listen();

  // Stops accepting, closes idle client connections and parked upstream connections; requests
  // in flight finish and their connections close after the response. Thread-safe.
  void shutdown();

  // Thread-safe.
  [[nodiscard]] std::size_t openConnections() const noexcept;
  [[nodiscard]] GatewayStats stats() const;

  struct State;  // shared with the connections, which may outlive a call

 private:
  std::shared_ptr<State> state_;
};

}  // namespace sluice::gateway
