#include "gateway/gateway.h"

#include <boost/asio/post.hpp>

#include "gateway/gateway_state.h"
#include "gateway/proxy_session.h"
#include "policy/ip_endpoint.h"
#include "server/accept_pause.h"
#include "server/http_server.h"

namespace sluice::gateway {

namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// Refuses a connection over a cap with a 503 written without waiting (a full socket buffer just
// loses it) and closes it: under a flood, a refusal must cost less than a request.
void refuse(server::LoopSocket& socket) {
  static constexpr std::string_view kRefusal =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
      "Content-Length: 71\r\nConnection: close\r\n\r\n"
      R"({"error":"Service Unavailable","message":"too many connections, retry"})";
  boost::system::error_code ignored;
  socket.non_blocking(true, ignored);
  socket.write_some(net::buffer(kRefusal.data(), kRefusal.size()), ignored);
  socket.close(ignored);
}

void accept(const std::shared_ptr<Gateway::State>& state,
            const std::shared_ptr<tcp::acceptor>& acceptor) {
  // Each connection goes to the next loop and stays there, so it needs no strand.
  net::io_context& loop = state->pool.next();
  acceptor->async_accept(
      loop, [state, acceptor, &loop](boost::system::error_code ec, server::LoopSocket socket) {
        if (ec == net::error::operation_aborted || !acceptor->is_open()) return;
        if (!ec) {
          boost::system::error_code peer_error;
          const tcp::endpoint peer = socket.remote_endpoint(peer_error);
          const policy::PolicyPtr policy = state->policy();
          auto ticket = peer_error ? std::nullopt
                                   : state->guard.admitConnection(
                                         peer.address(),
                                         policy::countedPrefix(policy->client_ip, peer.address(),
                                                               policy->ipv6_prefix));
          const std::size_t open = state->connections.fetch_add(1, std::memory_order_relaxed) + 1;
          if (!ticket || open > state->settings.max_connections || state->draining.load()) {
            state->connections.fetch_sub(1, std::memory_order_relaxed);
            refuse(socket);
          } else {
            auto session =
                std::make_shared<ProxySession>(std::move(socket), loop, state, std::move(*ticket));
            {
              std::lock_guard lock(state->sessions_mutex);
              // Forget finished sessions now and then, so the list stays the size of the live ones.
              if (state->sessions.size() > 2 * open + 64) {
                std::erase_if(state->sessions, [](const auto& weak) { return weak.expired(); });
              }
              state->sessions.push_back(session);
            }
            session->start();
          }
        } else {
          boost::system::error_code ignored;
          return server::pauseAccepting(
              acceptor, ec, "gateway " + server::endpointText(acceptor->local_endpoint(ignored)),
              [state, acceptor] { accept(state, acceptor); });
        }
        accept(state, acceptor);
      });
}

}  // namespace

Gateway::State::State(server::IoPool& io_pool, Engine& limit_engine, const Clock& time,
                      PolicySource source, GatewaySettings gateway_settings)
    : pool(io_pool),
      engine(limit_engine),
      clock(time),
      policy(std::move(source)),
      settings(std::move(gateway_settings)),
      guard(settings.guard, time),
      concurrency(ConcurrencyLimiter::create()),
      webhook(settings.webhook ? std::make_shared<WebhookLimits>(*settings.webhook, time)
                               : nullptr),
      upstreams(settings.upstreams) {}

Gateway::Gateway(server::IoPool& pool, Engine& engine, const Clock& clock, PolicySource policy,
                 GatewaySettings settings, server::Metrics* metrics)
    : state_(std::make_shared<State>(pool, engine, clock, std::move(policy), std::move(settings))) {
  state_->metrics = metrics;
}

Gateway::~Gateway() { shutdown(); }

Result<tcp::endpoint> Gateway::listen() {
  Result<tcp::endpoint> endpoint = policy::parseEndpoint(state_->settings.listen);
  if (!endpoint.ok()) return endpoint;
  auto acceptor = std::make_shared<tcp::acceptor>(state_->pool.first());
  boost::system::error_code ec;
  acceptor->open(endpoint.value().protocol(), ec);
  if (!ec) acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(endpoint.value(), ec);
  if (!ec) acceptor->listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Error{"cannot listen on " + state_->settings.listen + ": " + ec.message()};
  const tcp::endpoint bound = acceptor->local_endpoint(ec);
  accept(state_, acceptor);
  state_->acceptor = acceptor;
  return bound;
}

void Gateway::shutdown() {
  if (state_->draining.exchange(true)) return;
  if (auto acceptor = state_->acceptor.lock()) {
    net::post(acceptor->get_executor(), [acceptor] {
      boost::system::error_code ignored;
      acceptor->close(ignored);
    });
  }
  state_->upstreams.closeIdle();
  std::lock_guard lock(state_->sessions_mutex);
  for (const auto& weak : state_->sessions) {
    if (auto session = weak.lock()) session->closeIfIdle();
  }
}

std::size_t Gateway::openConnections() const noexcept {
  return state_->connections.load(std::memory_order_relaxed);
}

GatewayStats Gateway::stats() const {
  const State::Counters& c = state_->counters;
  const auto get = [](const std::atomic<std::uint64_t>& value) {
    return value.load(std::memory_order_relaxed);
  };
  GatewayStats stats{.forwarded = get(c.forwarded),
                     .denied = get(c.denied),
                     .throttled = get(c.throttled),
                     .shadow_denied = get(c.shadow_denied),
                     .monitor_denied = get(c.monitor_denied),
                     .concurrency_denied = get(c.concurrency_denied),
                     .not_found = get(c.not_found),
                     .upstream_failed = get(c.upstream_failed),
                     .upstream_timed_out = get(c.upstream_timed_out),
                     .client_gone = get(c.client_gone),
                     .client_too_slow = get(c.client_too_slow),
                     .websockets = get(c.websockets),
                     .upstream_idle_closed = state_->upstreams.parkedClosed(),
                     .guard = state_->guard.counters(),
                     .webhook = {}};
  if (state_->webhook != nullptr) stats.webhook = state_->webhook->stats();
  return stats;
}

}  // namespace sluice::gateway
