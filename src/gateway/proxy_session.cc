#include "gateway/proxy_session.h"

#include <chrono>
#include <ctime>
#include <utility>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include "gateway/proxy_exchange.h"
#include "http/json_string.h"
#include "server/eager_write.h"
#include "server/request_head.h"

namespace sluice::gateway {

namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace net = boost::asio;

namespace {

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
  // readHeader() waits for this read instead of starting its own. It is empty: a body's room goes
  // back now, as it cannot while this read is out.
  client_room_.giveBack(client_buffer_);
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
  request_->trailer_limit(state_->settings.max_header_bytes);
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
    return respondLocal(431, "the request header block or trailer is over the limit", {});
  }
  if (ec) return respondLocal(400, "malformed HTTP request", {});
  disarm();  // each later step sets its own deadline
  admit();
}

// The gateway's own answer. `message` is a JSON body when it starts with '{', else the message
// of an {"error", "message"} body. The connection stays open only when the request body (if
// any) was not left unread.
void ProxySession::respondLocal(unsigned status, std::string_view message,
                                const http::HeaderList& extra, std::string_view extra_lines) {
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
  out_ += extra_lines;
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
    // As finishExchange does: an answer of the gateway's own (a 502 after the body went
    // upstream, say) would otherwise leave an idle kept-alive connection holding the chunk.
    // Nothing uses it here: the body's reads and writes ended before this answer was made.
    self->chunk_.release();
    if (keep_alive) return self->readHeader();
    body_unread ? self->lingerThenClose() : self->close();
  });
}

void ProxySession::writeClient(std::function<void()> then) {
  arm(Watch::kClient, state_->settings.client_timeout_us);
  server::eagerWrite(
      client_, net::buffer(out_),
      [self = shared_from_this(), then = std::move(then)](beast::error_code ec, std::size_t) {
        if (ec) return self->close();
        then();
      });
}

}  // namespace sluice::gateway
