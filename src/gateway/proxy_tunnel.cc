// The WebSocket half of ProxySession: once the upstream has answered a WebSocket request with
// 101, the answer goes to the client and the two connections are joined. Each way has one read
// and one write at a time (read some, write it all, read again), so a slow reader slows its
// sender through the sockets' buffers rather than filling memory. The gateway reads nothing of
// what passes: WebSocket frames are the application's, and the request that opened them was
// decided as any other.
#include <chrono>

#include <boost/asio/write.hpp>

#include "gateway/proxy_exchange.h"
#include "gateway/proxy_session.h"

namespace sluice::gateway {

namespace beast = boost::beast;
namespace net = boost::asio;

void ProxySession::startTunnel() {
  Exchange& exchange = *exchange_;
  // Shutting down: a tunnel opened now would hold the stop up until it ends (closeIfIdle has
  // already passed this session by), so the client hears the gateway is going instead.
  if (state_->draining.load(std::memory_order_relaxed)) {
    return respondLocal(503, "the gateway is shutting down", {});
  }
  count(state_->counters.forwarded);
  count(state_->counters.websockets);
  disarm();  // the tunnel's idle timer takes over from the per-operation deadline
  tunnel_ = std::make_unique<Tunnel>(loop_);
  // Either end may close right behind its last bytes (a WebSocket close frame, then FIN): its
  // reads must see the end of stream then, not at the descriptor's next event.
  client_.expectEndOfStream(true);
  exchange.upstream->expectEndOfStream(true);
  // The read watching the client for a hang-up waits in the reactor, where an end of stream
  // queued behind the handshake raises no event: it is cancelled (its handler, onClientRead,
  // keeps what it read), and the tunnel's reads, which try the socket first, take over.
  if (watching_client_) {
    beast::error_code ignored;
    client_.cancel(ignored);
  }
  out_.clear();
  appendWebSocketAcceptHead(exchange.response->get(), client_header_lines_, out_,
                            rateLimitListFields(exchange.policy));
  net::async_write(client_, net::buffer(out_),
                   [self = shared_from_this()](beast::error_code ec, std::size_t) {
                     if (self->tunnel_ == nullptr) return;  // closed meanwhile
                     if (ec) return self->close();
                     self->exchange_->response_head_sent = true;
                     self->armTunnelIdle();
                     // What the upstream sent behind its 101 waits in upstream_buffer_ and goes
                     // first. The client's way starts here, or, while the cancelled watch has
                     // not completed yet, when it does (onClientRead): once either way.
                     self->relay(Toward::kClient);
                     if (!self->watching_client_) self->relay(Toward::kUpstream);
                   });
}

// Writes what is buffered for `toward`, if anything, else reads more from the other side.
void ProxySession::relay(Toward toward) {
  const bool upward = toward == Toward::kUpstream;
  beast::flat_buffer& buffer = upward ? client_buffer_ : upstream_buffer_;
  server::DrainAwareSocket& receiver = upward ? *exchange_->upstream : client_;
  server::DrainAwareSocket& sender = upward ? client_ : *exchange_->upstream;
  if (buffer.size() > 0) {
    // What the receiver takes at a time, so that a receiver that takes nothing shows: the idle
    // timer closes the tunnel once a write has waited its whole timeout (armTunnelIdle).
    tunnel_->writing_since[static_cast<std::size_t>(toward)] = std::chrono::steady_clock::now();
    receiver.async_write_some(buffer.data(), [self = shared_from_this(), toward](
                                                 beast::error_code ec, std::size_t bytes) {
      if (self->tunnel_ == nullptr) return;
      if (ec) return self->close();
      self->tunnel_->writing_since[static_cast<std::size_t>(toward)].reset();
      // Bytes taken are bytes moving: a slow receiver that keeps taking is no idle tunnel.
      if (bytes > 0) self->tunnel_->last_moved = std::chrono::steady_clock::now();
      (toward == Toward::kUpstream ? self->client_buffer_ : self->upstream_buffer_).consume(bytes);
      self->relay(toward);
    });
    return;
  }
  sender.async_read_some(buffer.prepare(kChunkBytes), [self = shared_from_this(), toward](
                                                          beast::error_code ec, std::size_t bytes) {
    self->onRelayRead(toward, ec, bytes);
  });
}

void ProxySession::onRelayRead(Toward toward, beast::error_code ec, std::size_t bytes) {
  if (tunnel_ == nullptr) return;
  const bool upward = toward == Toward::kUpstream;
  (upward ? client_buffer_ : upstream_buffer_).commit(bytes);
  if (bytes > 0) tunnel_->last_moved = std::chrono::steady_clock::now();
  if (!ec || bytes > 0) return relay(toward);
  if (ec != net::error::eof) return close();  // a reset or an error: both ends go
  // The sender has said all it will: the receiver hears so, and the other way goes on until
  // its own sender ends (a WebSocket's closing handshake).
  beast::error_code ignored;
  (upward ? *exchange_->upstream : client_).shutdown(net::socket_base::shutdown_send, ignored);
  if (--tunnel_->open_directions == 0) close();
}

void ProxySession::armTunnelIdle() {
  const auto timeout = std::chrono::microseconds(state_->settings.websocket_idle_timeout_us);
  // The earlier of: nothing read either way, and a write its receiver has taken nothing of.
  auto since = tunnel_->last_moved;
  for (const auto& writing : tunnel_->writing_since) {
    if (writing && *writing < since) since = *writing;
  }
  tunnel_->idle.expires_at(since + timeout);
  tunnel_->idle.async_wait([self = shared_from_this(), timeout](beast::error_code ec) {
    if (ec || self->tunnel_ == nullptr) return;
    const auto now = std::chrono::steady_clock::now();
    bool stalled = now - self->tunnel_->last_moved >= timeout;
    for (const auto& writing : self->tunnel_->writing_since) {
      stalled = stalled || (writing && now - *writing >= timeout);
    }
    if (stalled) return self->close();
    self->armTunnelIdle();  // something passed meanwhile: wait from then
  });
}

}  // namespace sluice::gateway
