// What the gateway's connections share: settings, the engine, the guard, the limiters, the
// upstream pools and the counters. Internal to src/gateway.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include "gateway/concurrency_limiter.h"
#include "gateway/ddos_guard.h"
#include "gateway/gateway.h"
#include "gateway/upstream_pool.h"
#include "gateway/webhook_limits.h"
#include "server/throttle_lines.h"

namespace sluice::gateway {

class ProxySession;

struct Gateway::State {
  State(server::IoPool& io_pool, Engine& limit_engine, const Clock& time, PolicySource source,
        GatewaySettings gateway_settings);

  server::IoPool& pool;
  Engine& engine;
  const Clock& clock;
  PolicySource policy;
  GatewaySettings settings;
  DdosGuard guard;
  std::shared_ptr<ConcurrencyLimiter> concurrency;
  std::shared_ptr<WebhookLimits> webhook;  // null without a webhook
  UpstreamPools upstreams;
  std::shared_ptr<server::ThrottleLines> throttle_lines = server::ThrottleLines::make();
  server::Metrics* metrics = nullptr;  // the service's decision metrics, when it has them

  std::atomic<std::size_t> connections{0};
  std::atomic<bool> draining{false};
  std::weak_ptr<boost::asio::ip::tcp::acceptor> acceptor;
  std::mutex sessions_mutex;
  std::vector<std::weak_ptr<ProxySession>> sessions;  // to close idle ones on shutdown

  struct Counters {
    std::atomic<std::uint64_t> forwarded{0}, denied{0}, throttled{0}, shadow_denied{0},
        monitor_denied{0}, concurrency_denied{0}, not_found{0}, upstream_failed{0},
        upstream_timed_out{0}, client_gone{0}, client_too_slow{0}, websockets{0};
  } counters;
};

inline void count(std::atomic<std::uint64_t>& counter) {
  counter.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace sluice::gateway
