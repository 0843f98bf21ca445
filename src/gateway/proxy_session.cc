#include "gateway/proxy_session.h"

#include <chrono>
#include <ctime>
#include <utility>

#include <spdlog/spdlog.h>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include "gateway/proxy_exchange.h"
#include "http/check_api.h"
#include "http/rate_limit_headers.h"
#include "server/request_framing.h"

namespace sluice::gateway {

namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace net = boost::asio;

namespace {

struct OriginForm {
  std::string authority;
  std::string target;  // path and query
};

// "http://host:port/path?query" as ("host:port", "/path?query"); nullopt when `target` is not in
// absolute form. The scheme is case-insensitive; a missing path is "/".
std::optional<OriginForm> originForm(std::string_view target) {
  const auto has_scheme = [&](std::string_view scheme) {
    if (target.size() < scheme.size()) return false;
    for (std::size_t i = 0; i < scheme.size(); ++i) {
      const char c = target[i];
      if ((c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c) != scheme[i]) return false;
    }
    return true;
  };
  std::size_t start = 0;
  if (has_scheme("http://")) {
    start = 7;
  } else if (has_scheme("https://")) {
    start = 8;
  } else {
    return std::nullopt;
  }
  const std::size_t end = std::min(target.find_first_of("/?", start), target.size());
  OriginForm origin{std::string(target.substr(start, end - start)),
                    std::string(target.substr(end))};
  if (!origin.target.starts_with('/')) origin.target.insert(0, 1, '/');
  return origin;
}

// The IMF-fixdate for the Date header of the gateway's own answers, formatted once a second.
std::string_view httpDate() {
  thread_local std::time_t cached_second = 0;
  thread_local char text[40] = {};
  const std::time_t now = std::time(nullptr);
  if (now != cached_second) {
    std::tm utc{};
    gmtime_r(&now, &utc);
    std::strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &utc);
    cached_second = now;
  }
  return text;
}

// The header options of a policy, derived once per policy and thread rather than per request.
const http::HeaderOptions& headerOptions(const policy::PolicyPtr& policy) {
  thread_local std::weak_ptr<const policy::Policy> derived_from;
  thread_local http::HeaderOptions options;
  if (derived_from.lock() != policy) {
    options = http::headerOptionsFor(policy->headers);
    derived_from = policy;
  }
  return options;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// At most one log line a second per kind: a flood must not turn into a flood of logs.
bool shouldLog(std::atomic<std::int64_t>& last_logged_s) {
  const std::int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count();
  return last_logged_s.exchange(now_s, std::memory_order_relaxed) != now_s;
}

}  // namespace

ProxySession::ProxySession(server::LoopSocket&& socket, net::io_context& loop,
                           std::shared_ptr<Gateway::State> state,
                           DdosGuard::ConnectionTicket ticket)
    : client_(std::move(socket)),
      loop_(loop),
      deadline_(loop, *this, &ProxySession::onDeadlinePassed),
      state_(std::move(state)),
      ticket_(std::move(ticket)),
      pool_(state_->upstreams.forLoop(loop)) {
  beast::error_code ignored;
  peer_ = client_.remote_endpoint(ignored);
  peer_ip_ = peer_.address().to_string();
  client_.set_option(net::ip::tcp::no_delay(true), ignored);
  // What a parser has not taken yet: a header, a chunk-size line or trailer, a pipelined
  // request (bodies pass through chunk_). Unbounded, a chunk line that never ends grew a
  // buffer by hundreds of megabytes a second until the timeout; past the bound the read fails
  // (buffer_overflow: 400 to a client, 502 from an upstream).
  client_buffer_.max_size(state_->settings.max_header_bytes + 2 * kChunkBytes);
  upstream_buffer_.max_size(kMaxResponseHeaderBytes + 2 * kChunkBytes);
}

ProxySession::~ProxySession() { state_->connections.fetch_sub(1, std::memory_order_relaxed); }

void ProxySession::start() {
  net::dispatch(client_.get_executor(),
                beast::bind_front_handler(&ProxySession::readHeader, shared_from_this()));
}

void ProxySession::closeIfIdle() {
  net::post(client_.get_executor(), [self = shared_from_this()] {
    if (!self->busy_ || self->tunnel_ != nullptr) self->close();
  });
}

void ProxySession::close() {
  tunnel_.reset();    // its handlers, still to run, find none and stop
  exchange_.reset();  // gives back permits; an upstream connection mid-exchange is dropped
  watching_client_ = false;
  header_after_watch_ = false;
  ++watch_generation_;
  deadline_.stop();
  beast::error_code ignored;
  client_.shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  client_.close(ignored);
}

// A client still sending a body that was answered without being read would get a reset from
// close() (unread data makes the kernel send RST instead of FIN), which can destroy the answer
// before the client reads it, Retry-After and all. So, as nginx's lingering close does: the
// sending side is shut, and what the client still sends is read and dropped, for at most
// kLingerUs, before the socket closes.
void ProxySession::lingerThenClose() {
  if (watching_client_) return close();  // a read is already out: nothing to linger with
  beast::error_code ignored;
  client_.shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  arm(Watch::kClient, kLingerUs);
  discardClientInput();
}

void ProxySession::discardClientInput() {
  client_buffer_.clear();
  client_.async_read_some(client_buffer_.prepare(kChunkBytes),
                          [self = shared_from_this()](beast::error_code ec, std::size_t) {
                            if (ec) return self->close();  // the client's end, or kLingerUs
                            self->discardClientInput();
                          });
}

void ProxySession::watchClient() {
  // Bytes already buffered are the client's next request (pipelined, or read along with this
  // one): the client is there, and readHeader() must parse them rather than wait for more.
  if (watching_client_ || client_buffer_.size() > 0) return;
  watching_client_ = true;
  // Nothing else uses client_buffer_ until this completes: the request is fully read, and
  // readHeader() waits for this read instead of starting its own.
  client_.async_read_some(
      client_buffer_.prepare(beast::read_size(client_buffer_, kChunkBytes)),
      [self = shared_from_this(), generation = ++watch_generation_](
          beast::error_code ec, std::size_t bytes) { self->onClientRead(ec, bytes, generation); });
}

void ProxySession::onClientRead(beast::error_code ec, std::size_t bytes, std::uint64_t generation) {
  if (generation != watch_generation_) return;  // the session closed meanwhile
  watching_client_ = false;
  client_buffer_.commit(bytes);
  if (tunnel_ != nullptr) {
    // The upstream switched to a WebSocket meanwhile (startTunnel cancelled this read): what it
    // read goes first through the tunnel, whose reads of the client start once the 101 is out
    // (here if it is, else in the 101's handler) and see any end of stream this one did.
    if (ec && ec != net::error::operation_aborted && ec != net::error::eof) return close();
    if (exchange_->response_head_sent) relay(Toward::kUpstream);
    return;
  }
  if (std::exchange(header_after_watch_, false)) {
    if (ec) return onHeader(ec);  // as if the header read had failed: closes
    return readHeaderFromBuffer();
  }
  // Bytes mean the client's next request arrived early (pipelining): the client is there, and
  // what it sent waits in client_buffer_ for readHeader(). An end of stream or an error while
  // the exchange is in progress means it left.
  if (ec) clientGone();
}

void ProxySession::clientGone() {
  count(state_->counters.client_gone);
  if (exchange_ != nullptr && exchange_->upstream != nullptr) {
    // An upstream operation may be outstanding: closing its socket ends it, and its handler,
    // seeing client_gone_, closes the session (as onDeadlinePassed does for a deadline).
    client_gone_ = true;
    beast::error_code ignored;
    exchange_->upstream->close(ignored);
    return;
  }
  close();  // waiting on a throttle timer or the store: their handlers find no exchange
}

void ProxySession::arm(Watch watch, Micros timeout_us) {
  watch_ = watch;
  timed_out_ = false;
  deadline_.armAfter(timeout_us);
}

void ProxySession::onDeadlinePassed() {
  // The outstanding operation is past its deadline: closing its socket ends it with an error,
  // which its handler reads as a timeout.
  timed_out_ = true;
  beast::error_code ignored;
  if (watch_ == Watch::kClient) {
    client_.close(ignored);
  } else if (exchange_ != nullptr && exchange_->upstream != nullptr) {
    exchange_->upstream->close(ignored);
  }
}

beast::error_code ProxySession::upstreamError(beast::error_code ec) const {
  return ec && timed_out_ ? beast::error_code(beast::error::timeout) : ec;
}

void ProxySession::readHeader() {
  busy_ = false;
  if (state_->draining.load(std::memory_order_relaxed)) return close();
  newRequestParser();
  arm(Watch::kClient, state_->settings.client_timeout_us);
  if (watching_client_) {
    header_after_watch_ = true;  // the watch's read is this request's first
    return;
  }
  readHeaderFromBuffer();
}

void ProxySession::newRequestParser() {
  request_.reset();
  if (exchange_ == nullptr) fields_.rewind();  // neither parser holds fields any more
  request_.emplace(std::piecewise_construct, std::make_tuple(),
                   std::make_tuple(ArenaAllocator<char>(fields_)));
  request_->header_limit(static_cast<std::uint32_t>(state_->settings.max_header_bytes));
  request_->body_limit(boost::none);  // streamed through a fixed buffer, never held whole
}

// Parses what client_buffer_ holds and reads on as needed (Beast reads only when the buffer
// holds less than a whole header).
void ProxySession::readHeaderFromBuffer() {
  server::dropLeadingEmptyLines(client_buffer_);
  bhttp::async_read_header(
      client_, client_buffer_, *request_,
      [self = shared_from_this()](beast::error_code ec, std::size_t) { self->onHeader(ec); });
}

void ProxySession::onHeader(beast::error_code ec) {
  busy_ = true;
  if (ec == bhttp::error::end_of_stream || ec == net::error::operation_aborted ||
      ec == beast::error::timeout || ec == net::error::eof || ec == net::error::connection_reset) {
    return close();
  }
  // Empty lines that arrived once the read had begun fail the parse without being taken: read
  // again without them, with a fresh parser and the same deadline.
  if (ec && ec.category() == bhttp::make_error_code(bhttp::error::bad_method).category() &&
      server::dropLeadingEmptyLines(client_buffer_)) {
    busy_ = false;
    newRequestParser();
    return readHeaderFromBuffer();
  }
  exchange_ = std::make_unique<Exchange>();
  exchange_->version = request_->get().version() == 10 ? 10 : 11;
  client_header_lines_.clear();
  if (ec == bhttp::error::header_limit) {
    return respondLocal(431, "the request header block is over the limit", {});
  }
  if (ec) return respondLocal(400, "malformed HTTP request", {});
  disarm();  // each later step sets its own deadline
  admit();
}

// The guard, then the route, then identity; the webhook (when configured) before deciding.
void ProxySession::admit() {
  const auto& header = request_->get();
  Exchange& exchange = *exchange_;
  exchange.head_request = header.method() == bhttp::verb::head;
  // Routes, limits and the guard read the path, and the upstream must get that same path: an
  // absolute-form target (`GET http://host/login`), which origin servers accept as /login,
  // becomes that origin form (RFC 9112 3.2.2: its authority replaces Host) before anything
  // reads it; any other target that is not a path is refused.
  if (const auto origin = originForm(header.target())) {
    request_->get().set(bhttp::field::host, origin->authority);
    request_->get().target(origin->target);
  } else if (!header.target().starts_with('/') &&
             !(header.target() == "*" && header.method() == bhttp::verb::options)) {
    return respondLocal(400, "the request target must be a path", {});
  }
  if (const auto refusal = server::transferEncodingRefusal(header, request_->chunked())) {
    return respondLocal(refusal->status, refusal->message, {});
  }
  // Two Host fields leave the site in doubt (RFC 9112 3.2): the gateway and the upstream could
  // each pick another.
  if (header.count(bhttp::field::host) > 1) {
    return respondLocal(400, "the request has more than one Host field", {});
  }
  if (!state_->guard.admitGlobal()) {
    return respondLocal(503, "the gateway is over its request ceiling", {{"Retry-After", "1"}});
  }
  const std::string_view target = header.target();
  if (const auto pattern = state_->guard.suspiciousPattern(target)) {
    static std::atomic<std::int64_t> last_logged_s{0};
    if (shouldLog(last_logged_s)) {
      spdlog::warn("guard: refused {} {} from {}: matches \"{}\"",
                   std::string(header.method_string()), std::string(target.substr(0, 200)),
                   peer_ip_, *pattern);
    }
    return respondLocal(400, "the request was refused by the gateway's guard", {});
  }
  policy::RequestView& view = exchange.view;
  view.method = std::string(header.method_string());
  for (char& c : view.method) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  view.path = policy::normalizePath(target.substr(0, target.find('?')));
  view.peer = peer_.address();
  for (const auto& field : header) {
    view.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  for (const Route& route : state_->settings.routes) {
    if (route.match.matches(view.method, view.path)) {
      exchange.route = &route;
      break;
    }
  }
  if (exchange.route == nullptr) {
    count(state_->counters.not_found);
    return respondLocal(404, "no gateway route matches this request", {});
  }
  exchange.policy = state_->policy();
  exchange.context.emplace(
      policy::resolveIdentity(*exchange.policy, view, state_->clock.now() / kMicrosPerSecond));
  if (state_->webhook == nullptr) return decidePass();
  state_->webhook->lookup(view, exchange.context->client_ip, loop_,
                          [self = shared_from_this()](DynamicLimitsPtr limits) {
                            if (self->exchange_ == nullptr) return;  // closed meanwhile
                            self->exchange_->dynamic = std::move(limits);
                            self->decidePass();
                          });
}

void ProxySession::decidePass() {
  Exchange& exchange = *exchange_;
  const bool monitor = exchange.route->mode == RouteMode::kMonitor;
  // A monitor route never holds a request: a throttle verdict is passed on as a denial. The
  // store may answer on its own thread; the session carries on on its loop.
  decideWithDynamic(*exchange.policy, *exchange.context, exchange.dynamic, state_->engine,
                    monitor ? policy::kCannotWait : exchange.waited_us,
                    [self = shared_from_this()](policy::PolicyDecision&& decision) {
                      net::dispatch(self->client_.get_executor(),
                                    [self, decided = std::move(decision)]() mutable {
                                      self->onDecision(std::move(decided));
                                    });
                    });
}

void ProxySession::onDecision(policy::PolicyDecision&& decision) {
  if (exchange_ == nullptr) return;
  Exchange& exchange = *exchange_;
  exchange.decision = std::move(decision);
  if (exchange.decision.throttle_wait_us > 0) return waitToDecideAgain();  // proxy_throttle.cc
  exchange.line.reset();  // decided for good: the next request in its line decides now
  const bool monitor = exchange.route->mode == RouteMode::kMonitor;
  const Micros hold_us = monitor || !exchange.decision.allowed ? 0 : exchange.decision.hold_us;
  if (hold_us == 0) return afterDecision();
  // A shaper gave the request a later slot: it is let through then.
  if (exchange.waited_us == 0) count(state_->counters.throttled);
  exchange.waited_us += hold_us;
  if (request_->is_done()) watchClient();  // else the client is still sending its body
  exchange.timer = std::make_unique<server::LoopTimer>(loop_);
  exchange.timer->expires_after(std::chrono::microseconds(hold_us));
  exchange.timer->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->exchange_ == nullptr) return;
    self->afterDecision();
  });
}

void ProxySession::afterDecision() {
  Exchange& exchange = *exchange_;
  const policy::PolicyDecision& decision = exchange.decision;
  const std::vector<std::string> shadow = decision.shadowDenials();
  if (!shadow.empty()) count(state_->counters.shadow_denied);
  if (exchange.route->mode == RouteMode::kMonitor) {
    // The application decides (e.g. shadow-bans); the client sees the upstream's answer as is.
    http::HeaderList& out = exchange.upstream_headers;
    out.emplace_back("X-Sluice-Decision", decision.allowed ? "allow" : "deny");
    if (const policy::PlannedCheck* binding = decision.binding()) {
      out.emplace_back("X-Sluice-Limit", binding->label);
      out.emplace_back("X-Sluice-Remaining",
                       std::to_string(decision.enforced.bindingStatus()->remaining));
    }
    if (!decision.allowed) {
      count(state_->counters.monitor_denied);
      out.emplace_back("X-Sluice-Status", std::to_string(decision.status));
      out.emplace_back("X-Sluice-Retry-After",
                       std::to_string(http::headerSeconds(decision.enforced.retry_after_us)));
    }
    if (!shadow.empty()) out.emplace_back("X-Sluice-Shadow", joined(shadow));
    if (!acquirePermits()) out.emplace_back("X-Sluice-Concurrency", "over");
    return forward();
  }
  if (!decision.allowed) return respondDenied();
  std::string& lines = client_header_lines_;
  if (decision.enforced.degraded) appendHeaderLine("X-RateLimit-Degraded", "true", lines);
  const http::LimitLabels labels = http::enforcedLabels(decision);
  http::appendRateLimitHeaderLines(decision.enforced, labels, headerOptions(exchange.policy),
                                   lines);
  if (!shadow.empty()) appendHeaderLine("X-RateLimit-Shadow", joined(shadow), lines);
  if (exchange.waited_us > 0) {
    appendHeaderLine("X-RateLimit-Delayed-Ms", std::to_string((exchange.waited_us + 999) / 1000),
                     lines);
  }
  if (!acquirePermits()) return;  // answered
  forward();
}

// The permits of every concurrency limit that applies. False when one is full: then, on an
// enforce route, the request has been answered with that limit's status.
bool ProxySession::acquirePermits() {
  Exchange& exchange = *exchange_;
  for (const ConcurrencyLimit& limit : state_->settings.concurrency) {
    if (!limit.match.matches(exchange.view.method, exchange.view.path)) continue;
    std::string key;
    policy::appendCounterPart(key, limit.name);
    if (!limit.key.appendKey(*exchange.context, limit.match.describe(), key)) {
      key += 'i';  // a missing key part: count the client address
      policy::appendCounterPart(key, exchange.context->client_ip);
    }
    auto permit = state_->concurrency->tryAcquire(key, limit.max_in_flight);
    if (!permit) {
      count(state_->counters.concurrency_denied);
      if (exchange.route->mode == RouteMode::kMonitor) return false;
      const std::string body =
          "{\"error\":\"too_many_concurrent_requests\",\"message\":\"at most " +
          std::to_string(limit.max_in_flight) + " requests may be in flight at once\",\"limit\":";
      std::string name;
      http::appendJsonString(name, limit.name);
      respondLocal(static_cast<unsigned>(limit.deny_status), body + name + "}", {});
      return false;
    }
    exchange.permits.push_back(std::move(*permit));
  }
  return true;
}

void ProxySession::respondDenied() {
  Exchange& exchange = *exchange_;
  count(state_->counters.denied);
  const http::LimitLabels labels = http::enforcedLabels(exchange.decision);
  http::HeaderList headers;
  http::appendRateLimitHeaders(exchange.decision.enforced, labels, headerOptions(exchange.policy),
                               headers);
  respondLocal(static_cast<unsigned>(exchange.decision.status),
               http::deniedBody(exchange.decision.enforced, labels), headers);
}

// The gateway's own answer. `message` is a JSON body when it starts with '{', else the message
// of an {"error", "message"} body. The connection stays open only when the request body (if
// any) was not left unread.
void ProxySession::respondLocal(unsigned status, std::string_view message,
                                const http::HeaderList& extra) {
  const auto code = bhttp::int_to_status(status);
  std::string body;
  if (message.starts_with("{")) {
    body = message;
  } else {
    body = "{\"error\":";
    http::appendJsonString(body, bhttp::obsolete_reason(code));
    body += ",\"message\":";
    http::appendJsonString(body, message);
    body += "}";
  }
  const bool keep_alive = request_->is_header_done() && request_->is_done() &&
                          request_->get().keep_alive() && status != 400 && status != 431 &&
                          !state_->draining.load(std::memory_order_relaxed);
  const unsigned version = exchange_ == nullptr ? 11 : exchange_->version;
  out_ = version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  out_ += std::to_string(status) + " " + std::string(bhttp::obsolete_reason(code)) + "\r\n";
  out_ += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
          "\r\nDate: " + std::string(httpDate()) + "\r\n";
  for (const auto& [name, value] : extra) out_ += name + ": " + value + "\r\n";
  out_ +=
      keep_alive ? (version == 10 ? "Connection: keep-alive\r\n" : "") : "Connection: close\r\n";
  out_ += "\r\n";
  if (exchange_ == nullptr || !exchange_->head_request) out_ += body;
  exchange_.reset();  // nothing is forwarded: the permits go back now
  // A refused Transfer-Encoding (gzip, say) leaves its body unread although the parser, taking
  // it for no body, says the request is done.
  const bool body_unread =
      request_->is_header_done() &&
      (!request_->is_done() ||
       request_->get().find(bhttp::field::transfer_encoding) != request_->get().end());
  writeClient([self = shared_from_this(), keep_alive, body_unread] {
    if (keep_alive) return self->readHeader();
    body_unread ? self->lingerThenClose() : self->close();
  });
}

void ProxySession::writeClient(std::function<void()> then) {
  arm(Watch::kClient, state_->settings.client_timeout_us);
  net::async_write(
      client_, net::buffer(out_),
      [self = shared_from_this(), then = std::move(then)](beast::error_code ec, std::size_t) {
        if (ec) return self->close();
        then();
      });
}

}  // namespace sluice::gateway
