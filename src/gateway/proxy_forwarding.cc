// The upstream half of ProxySession: connect (or reuse a parked connection), stream the request
// body, stream the response back. One operation is outstanding at a time per session (besides
// the client read that watches for a hang-up, and the wait for an early answer while a body
// streams, which touch no buffer of the exchange), so destroying the exchange from a handler
// never leaves an operation behind that could write into it.
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <string_view>

#include <spdlog/spdlog.h>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include "gateway/proxy_exchange.h"
#include "gateway/proxy_session.h"
#include "server/eager_write.h"

namespace sluice::gateway {

namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace net = boost::asio;

namespace {

// RFC 9110 9.2.2: sending one of these twice has the effect of sending it once.
bool isIdempotent(bhttp::verb method) {
  switch (method) {
    case bhttp::verb::get:
    case bhttp::verb::head:
    case bhttp::verb::options:
    case bhttp::verb::trace:
    case bhttp::verb::put:
    case bhttp::verb::delete_:
      return true;
    default:
      return false;
  }
}

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace

void ProxySession::forward() {
  Exchange& exchange = *exchange_;
  const auto& header = request_->get();
  exchange.request_framing = request_->chunked()          ? Framing::kChunked
                             : request_->content_length() ? Framing::kLength
                                                          : Framing::kNone;
  // A handshake has no body; `Content-Length: 0` says as much.
  exchange.websocket =
      !request_->chunked() && request_->content_length().value_or(0) == 0 && wantsWebSocket(header);
  request_head_.clear();
  appendUpstreamRequestHead(header, peer_ip_,
                            state_->settings.upstreams[exchange.route->upstream].host,
                            exchange.request_framing, request_->content_length().value_or(0),
                            exchange.websocket, exchange.upstream_headers, request_head_);
  // A client that sent `Expect: 100-continue` waits for this before sending the body; the
  // gateway says it once the request is allowed (the upstream never sees the Expect).
  if (!request_->is_done() && header.version() >= 11 &&
      beast::iequals(header[bhttp::field::expect], "100-continue")) {
    out_ = kContinue;
    return writeClient([self = shared_from_this()] {
      self->out_.clear();
      self->sendRequestHead();
    });
  }
  sendRequestHead();
}

void ProxySession::sendRequestHead() {
  Exchange& exchange = *exchange_;
  upstream_buffer_.clear();  // what a previous exchange left unread belonged to its connection
  // A request without a body is sent again on a fresh connection when a parked one turns out
  // closed (retryOnFreshConnection), so only one that cannot be sent again pays for checking
  // first: one with a body, or one whose method is not idempotent.
  exchange.upstream =
      pool_.takeIdle(exchange.route->upstream, exchange.request_framing != Framing::kNone ||
                                                   !isIdempotent(request_->get().method()));
  exchange.reused_connection = exchange.upstream != nullptr;
  if (exchange.upstream == nullptr) return connectUpstream();
  startRequest();
}

void ProxySession::connectUpstream() {
  Exchange& exchange = *exchange_;
  exchange.upstream = std::make_unique<server::DrainAwareSocket>(loop_);
  arm(Watch::kUpstream, state_->settings.connect_timeout_us);
  exchange.upstream->async_connect(state_->settings.upstreams[exchange.route->upstream].endpoint,
                                   [self = shared_from_this()](beast::error_code ec) {
                                     if (ec) return self->upstreamFailed(self->upstreamError(ec));
                                     beast::error_code ignored;
                                     self->exchange_->upstream->set_option(
                                         net::ip::tcp::no_delay(true), ignored);
                                     self->startRequest();
                                   });
}

// The upstream connection is ready: the request goes out, its body streamed while the upstream
// is watched for an early answer. The watch starts before the first write, so that no answer
// can come between the two unnoticed (the reactor is edge-triggered).
void ProxySession::startRequest() {
  if (!request_->is_done()) watchUpstream();
  pumpRequest();
}

void ProxySession::watchUpstream() {
  exchange_->upstream->async_wait(
      net::socket_base::wait_read,
      [self = shared_from_this(), generation = ++upstream_watch_](beast::error_code ec) {
        self->onUpstreamReadable(ec, generation);
      });
}

void ProxySession::onUpstreamReadable(beast::error_code ec, std::uint64_t generation) {
  // Late: the body was all sent (readResponseHeader moved the generation on), or the exchange
  // ended and closed its upstream socket (ec).
  if (ec || generation != upstream_watch_ || exchange_ == nullptr) return;
  Exchange& exchange = *exchange_;
  const int upstream = exchange.upstream->native_handle();
  // An interim answer (103 Early Hints, a 100 Continue nobody asked for) asks for nothing and is
  // not passed on: it is taken off the socket, and the watch goes on for the answer behind it,
  // which may be an early one. (Ending the watch there left an early 413 behind a 100 unseen,
  // and the stalled body write turned it into a 504.) The look is repeated at once, as that
  // answer may have come in the same segment: no new event would announce it.
  std::array<char, 1024> head{};
  for (;;) {
    const ssize_t got = server::peekBytes(upstream, head.data(), head.size());
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return watchUpstream();
    const std::string_view seen(head.data(), got > 0 ? static_cast<std::size_t>(got) : 0);
    if (seen.size() < 12 || !seen.starts_with("HTTP/1.") || seen[9] != '1') break;
    const std::size_t end = seen.find("\r\n\r\n");
    // Not all here yet, or longer than is worth holding: it is read, as usual, after the body.
    if (end == std::string_view::npos) return;
    if (::recv(upstream, head.data(), end + 4, MSG_DONTWAIT) != static_cast<ssize_t>(end + 4)) {
      return;
    }
  }
  // An answer, an end of stream or an error: the operation streaming the body (a read of the
  // client or a write to the upstream, one at a time) is cancelled, and its handler, seeing
  // answered_early, reads the answer instead of going on.
  exchange.answered_early = true;
  beast::error_code ignored;
  client_.cancel(ignored);
  exchange.upstream->cancel(ignored);
}

void ProxySession::pumpRequest() {
  if (request_->is_done()) return writeUpstream(0);
  auto& body = request_->get().body();
  body.data = chunk_.data();
  body.size = kChunkBytes;
  body.more = true;
  // Once the head has gone on, the body needs more reads: room for a chunk.
  client_room_.make(client_buffer_, exchange_->request_head_sent ? kChunkBytes : 0);
  arm(Watch::kClient, bodyReadTimeout());
  bhttp::async_read_some(
      client_body_reads_, client_buffer_, *request_,
      [self = shared_from_this()](beast::error_code ec, std::size_t) { self->onRequestChunk(ec); });
}

Micros ProxySession::bodyReadTimeout() {
  const GatewaySettings& settings = state_->settings;
  Exchange& exchange = *exchange_;
  exchange.body_read_since = std::chrono::steady_clock::now();
  const std::uint64_t rate = settings.client_body_min_rate;
  if (rate == 0) return settings.client_timeout_us;
  // The grace, and a second for each `rate` bytes read (split so no product overflows), less
  // the time the client has kept the gateway waiting so far.
  const std::uint64_t bytes = exchange.body_bytes;
  const long double allowance_us =
      static_cast<long double>(settings.client_timeout_us) +
      static_cast<long double>(bytes / rate) * kMicrosPerSecond +
      static_cast<long double>(bytes % rate) * kMicrosPerSecond / static_cast<long double>(rate);
  const long double left_us = allowance_us - static_cast<long double>(exchange.body_wait_us);
  if (left_us <= 0) return 0;
  return static_cast<Micros>(
      std::min(left_us, static_cast<long double>(settings.client_timeout_us)));
}

void ProxySession::onRequestChunk(beast::error_code ec) {
  exchange_->body_wait_us += std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::steady_clock::now() - exchange_->body_read_since)
                                 .count();
  if (exchange_->answered_early) return readResponseHeader();  // the rest of the body is not sent
  if (ec == bhttp::error::need_buffer) ec = {};
  if (!ec) {
    const std::size_t bytes = kChunkBytes - request_->get().body().size;
    exchange_->body_bytes += bytes;
    return writeUpstream(bytes);
  }
  // A body whose framing is broken (a bad chunk size, say) is the client's error, and it hears
  // so, even when part of the request already went upstream: the upstream connection, left with
  // a partial request, is dropped with the exchange (respondLocal), never parked for reuse, and
  // the upstream sees the connection close mid-body. A client that leaves mid-body
  // (partial_message, or a socket error) has nobody to answer: both connections just close.
  const bool malformed =
      ec.category() == bhttp::make_error_code(bhttp::error::bad_chunk).category() &&
      ec != bhttp::error::partial_message;
  if (malformed) return respondLocal(400, "malformed request body", {});
  if (timed_out_) count(state_->counters.client_too_slow);  // the deadline closed the socket
  close();
}

// Writes what is pending for the upstream in one gather write: the request head (first time),
// `bytes` of body from the chunk buffer with chunk framing if chunked, and the last chunk.
void ProxySession::writeUpstream(std::size_t bytes) {
  Exchange& exchange = *exchange_;
  const bool chunked = exchange.request_framing == Framing::kChunked;
  const bool done = request_->is_done();
  buffers_.clear();
  frame_.clear();
  if (chunked && bytes > 0) appendChunkHeader(bytes, frame_);
  const std::size_t chunk_header = frame_.size();
  if (chunked && bytes > 0) frame_ += "\r\n";
  if (chunked && done) frame_ += kLastChunk;
  if (!exchange.request_head_sent) buffers_.push_back(net::buffer(request_head_));
  if (chunk_header > 0) buffers_.push_back(net::buffer(frame_.data(), chunk_header));
  if (bytes > 0) buffers_.push_back(net::buffer(chunk_.data(), bytes));
  if (frame_.size() > chunk_header) {
    buffers_.push_back(net::buffer(frame_.data() + chunk_header, frame_.size() - chunk_header));
  }
  if (buffers_.empty()) {
    if (!done) return pumpRequest();
    exchange.request_sent = true;
    return readResponseHeader();
  }
  arm(Watch::kUpstream, state_->settings.response_timeout_us);
  server::eagerWrite(*exchange.upstream, buffers_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (self->exchange_->answered_early) return self->readResponseHeader();
                       if (ec) {
                         ec = self->upstreamError(ec);
                         if (self->retryOnFreshConnection(ec)) return;
                         if (self->client_gone_) return self->close();  // nobody to answer
                         // An upstream that closed the connection before taking the whole
                         // request may have answered first: its answer is read before its
                         // reset (and when there is none, the read reports the failure).
                         if (ec != beast::error::timeout) return self->readResponseHeader();
                         return self->upstreamFailed(ec);
                       }
                       self->exchange_->request_head_sent = true;
                       if (!self->request_->is_done()) return self->pumpRequest();
                       self->exchange_->request_sent = true;
                       self->readResponseHeader();
                     });
}

void ProxySession::readResponseHeader() {
  Exchange& exchange = *exchange_;
  ++upstream_watch_;  // the body is all sent, or no more of it will be: the watch is over
  // A fully read request's client only waits from here on; one whose body is left unread is
  // not watched (what it still sends is its body, not a hang-up), and its connection closes
  // after the answer.
  if (request_->is_done()) watchClient();
  exchange.response.emplace(std::piecewise_construct, std::make_tuple(),
                            std::make_tuple(ArenaAllocator<char>(fields_)));
  exchange.response->header_limit(kMaxResponseHeaderBytes);
  exchange.response->trailer_limit(kMaxResponseHeaderBytes);
  exchange.response->body_limit(boost::none);  // streamed through the chunk buffer
  if (exchange.head_request) exchange.response->skip(true);
  arm(Watch::kUpstream, state_->settings.response_timeout_us);
  bhttp::async_read_header(*exchange.upstream, upstream_buffer_, *exchange.response,
                           [self = shared_from_this()](beast::error_code ec, std::size_t) {
                             self->onResponseHeader(self->upstreamError(ec));
                           });
}

void ProxySession::onResponseHeader(beast::error_code ec) {
  if (ec) {
    if (retryOnFreshConnection(ec)) return;
    return upstreamFailed(ec);
  }
  Exchange& exchange = *exchange_;
  const auto& response = exchange.response->get();
  const unsigned status = response.result_int();
  if (status == 101) {
    // Only a WebSocket request offers to switch, and only to a WebSocket.
    if (!exchange.websocket || !acceptsWebSocket(response)) {
      return upstreamFailed(bhttp::error::bad_value);
    }
    return startTunnel();
  }
  // RFC 9110 15: a status outside 100..599 is invalid, to be taken as a server error.
  if (status < 100 || status > 599) return upstreamFailed(bhttp::error::bad_status);
  if (status >= 100 && status < 200) return readResponseHeader();  // interim: not passed on
  Framing upstream_framing = Framing::kUntilClose;
  if (exchange.head_request || status == 204 || status == 304) {
    upstream_framing = Framing::kNone;
  } else if (exchange.response->chunked()) {
    upstream_framing = Framing::kChunked;
  } else if (exchange.response->content_length()) {
    upstream_framing = Framing::kLength;
  }
  // A transfer coding besides chunked (gzip, say) would reach the client de-chunked but still
  // coded, its Transfer-Encoding dropped as hop-by-hop: a corrupt body. nginx answers 502 too.
  if (upstream_framing != Framing::kNone && !chunkedAlone(response)) {
    return upstreamFailed(bhttp::error::bad_transfer_encoding);
  }
  // Such a body ends at the upstream's end of stream, often sent right behind its last bytes:
  // the reads must look for it rather than wait for an event (see DrainAwareSocket).
  if (upstream_framing == Framing::kUntilClose) exchange.upstream->expectEndOfStream(true);
  exchange.client_framing = clientFraming(upstream_framing, exchange.version);
  exchange.client_keep_alive = request_->get().keep_alive() && request_->is_done() &&
                               exchange.client_framing != Framing::kUntilClose &&
                               !state_->draining.load(std::memory_order_relaxed);
  out_.clear();
  const auto length = exchange.response->content_length();
  // The gateway's rate-limit fields replace the upstream's of the same names, but for the IETF
  // lists, whose items combine: the upstream's own policies stay in view.
  appendClientResponseHead(response, exchange.version, exchange.client_framing,
                           length ? std::optional<std::uint64_t>(*length) : std::nullopt,
                           exchange.client_keep_alive, client_header_lines_, out_,
                           rateLimitListFields(exchange.policy));
  pumpResponse();
}

void ProxySession::pumpResponse() {
  Exchange& exchange = *exchange_;
  if (exchange.response->is_done()) return writeClientChunk(0);
  auto& body = exchange.response->get().body();
  body.data = chunk_.data();
  body.size = kChunkBytes;
  body.more = true;
  upstream_room_.make(upstream_buffer_, exchange.response_head_sent ? kChunkBytes : 0);
  arm(Watch::kUpstream, state_->settings.response_timeout_us);
  upstream_body_reads_.attach(*exchange.upstream);
  bhttp::async_read_some(upstream_body_reads_, upstream_buffer_, *exchange.response,
                         [self = shared_from_this()](beast::error_code ec, std::size_t) {
                           self->onResponseChunk(self->upstreamError(ec));
                         });
}

void ProxySession::onResponseChunk(beast::error_code ec) {
  if (ec == bhttp::error::need_buffer) ec = {};
  if (ec) {
    // Before the head went out the client can still get a 502/504; after, only a cut-off body.
    if (!exchange_->response_head_sent) return upstreamFailed(ec);
    return close();
  }
  writeClientChunk(kChunkBytes - exchange_->response->get().body().size);
}

// Writes the response head (first time), `bytes` of body with chunk framing when the client
// gets chunks, and the last chunk, in one gather write.
void ProxySession::writeClientChunk(std::size_t bytes) {
  Exchange& exchange = *exchange_;
  const bool chunked = exchange.client_framing == Framing::kChunked;
  const bool done = exchange.response->is_done();
  buffers_.clear();
  frame_.clear();
  if (chunked && bytes > 0) appendChunkHeader(bytes, frame_);
  const std::size_t chunk_header = frame_.size();
  if (chunked && bytes > 0) frame_ += "\r\n";
  if (chunked && done) frame_ += kLastChunk;
  if (!exchange.response_head_sent) buffers_.push_back(net::buffer(out_));
  if (chunk_header > 0) buffers_.push_back(net::buffer(frame_.data(), chunk_header));
  if (bytes > 0) buffers_.push_back(net::buffer(chunk_.data(), bytes));
  if (frame_.size() > chunk_header) {
    buffers_.push_back(net::buffer(frame_.data() + chunk_header, frame_.size() - chunk_header));
  }
  if (buffers_.empty()) return done ? finishExchange() : pumpResponse();
  // The upstream has answered in full: its concurrency slots are free before the client can
  // have the last bytes, so a client asking again at once (on another connection) finds them so.
  if (done) exchange.permits.clear();
  arm(Watch::kClient, state_->settings.client_timeout_us);
  server::eagerWrite(
      client_, buffers_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
        if (ec) return self->close();
        self->exchange_->response_head_sent = true;
        self->exchange_->response->is_done() ? self->finishExchange() : self->pumpResponse();
      });
}

void ProxySession::finishExchange() {
  Exchange& exchange = *exchange_;
  count(state_->counters.forwarded);
  // The client hung up as its last bytes went out: clientGone() has closed the upstream socket,
  // which must not go back to the pool, and there is no next request.
  if (client_gone_) return close();
  // Only a connection that ended a complete, kept-alive exchange with nothing unread goes back.
  if (exchange.request_sent && exchange.response->keep_alive() && !exchange.response->need_eof() &&
      upstream_buffer_.size() == 0) {
    pool_.giveBack(exchange.route->upstream, std::move(exchange.upstream));
  }
  const bool keep_alive = exchange.client_keep_alive;
  exchange_.reset();  // the permits go back here
  // Nothing uses the chunk now: the response's last write is done, and the request body's reads
  // and writes (one at a time) ended before the response was read.
  chunk_.release();
  // The client's buffer gave its room back when the watch began (watchClient), and its read
  // into it may be out; the upstream's has none out (its connection is parked or closed).
  if (!watching_client_) client_room_.giveBack(client_buffer_);
  upstream_room_.giveBack(upstream_buffer_);
  if (keep_alive) return readHeader();
  // Answered before its body was all read (the upstream spoke early): the client may still be
  // sending it, and must get the answer before the connection closes.
  request_->is_done() ? close() : lingerThenClose();
}

// A parked connection the upstream closed just as it was reused fails on first use. A request
// without a body can be sent again on a fresh connection, once; one whose body was streamed
// cannot be replayed, and a slow upstream is not retried (that would double the wait). Nor is
// a method that is not idempotent (POST, PATCH): the failure may come after the upstream acted
// on it, and nginx does not retry those either.
bool ProxySession::retryOnFreshConnection(beast::error_code ec) {
  Exchange& exchange = *exchange_;
  if (client_gone_) return false;
  const bool stale = ec == net::error::eof || ec == bhttp::error::end_of_stream ||
                     ec == net::error::connection_reset || ec == net::error::broken_pipe;
  if (!stale || !exchange.reused_connection || exchange.retried ||
      exchange.request_framing != Framing::kNone || !isIdempotent(request_->get().method())) {
    return false;
  }
  exchange.retried = true;
  exchange.reused_connection = false;
  exchange.request_head_sent = false;
  exchange.response.reset();
  upstream_buffer_.clear();
  exchange.upstream.reset();
  connectUpstream();
  return true;
}

void ProxySession::upstreamFailed(beast::error_code ec) {
  if (client_gone_) return close();  // nobody to answer; counted as client_gone
  const bool timed_out = ec == beast::error::timeout;
  count(timed_out ? state_->counters.upstream_timed_out : state_->counters.upstream_failed);
  static std::atomic<std::int64_t> last_logged_s{0};
  const std::int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count();
  if (last_logged_s.exchange(now_s, std::memory_order_relaxed) != now_s) {
    spdlog::warn("gateway: upstream {} {}: {}",
                 state_->settings.upstreams[exchange_->route->upstream].name,
                 timed_out ? "timed out" : "failed", ec.message());
  }
  if (exchange_->response_head_sent) return close();
  // The request took its units: its answer says where its limits stand, as the upstream's
  // answer would have (and as nginx's auth_request example does, with `add_header ... always`).
  respondLocal(timed_out ? 504 : 502,
               timed_out ? "the upstream did not answer in time" : "the upstream failed", {},
               client_header_lines_);
}

}  // namespace sluice::gateway
