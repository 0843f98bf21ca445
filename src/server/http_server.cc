#include "server/http_server.h"

#include <cerrno>
#include <charconv>
#include <ctime>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <boost/beast/http/write.hpp>

#include "policy/ip_endpoint.h"
#include "policy/origin_form.h"
#include "server/accept_pause.h"
#include "server/body_reads.h"
#include "server/body_room.h"
#include "server/bounded_parser.h"
#include "server/connection_deadline.h"
#include "server/drain_aware_socket.h"
#include "server/eager_write.h"
#include "server/loop_io.h"
#include "server/request_head.h"

namespace sluice::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

class Session;

}  // namespace

struct HttpServer::State {
  State(IoPool& io_pool, HttpServerLimits server_limits, Handler request_handler)
      : pool(io_pool), limits(server_limits), handler(std::move(request_handler)) {}

  IoPool& pool;
  HttpServerLimits limits;
  Handler handler;
  // The acceptors live on the pool's first loop. Their pending accepts own them, so an acceptor
  // dies with that loop's operations; sessions on other loops keep this State alive and must not
  // keep an acceptor of a loop that is already gone.
  std::vector<std::weak_ptr<tcp::acceptor>> acceptors;
  std::atomic<std::size_t> connections{0};
  std::atomic<bool> draining{false};
  std::mutex sessions_mutex;
  std::vector<std::weak_ptr<Session>> sessions;  // to close idle ones on shutdown
};

namespace {

HttpResponse plainResponse(http::status status, std::string_view message, unsigned version) {
  HttpResponse response{status, version};
  response.set(http::field::content_type, "application/json");
  response.body() = std::string(R"({"error":")") + std::string(http::obsolete_reason(status)) +
                    R"(","message":")" + std::string(message) + R"("})";
  response.keep_alive(false);
  response.prepare_payload();
  return response;
}

// Whether a handler asked to close the connection after `answer`: a close token in its
// Connection field. (Not !answer.keep_alive(), which for an HTTP/1.0 answer is true unless it
// carries keep-alive, as one built in the request's version does not.)
bool asksToClose(const HttpResponse& answer) {
  const auto connection = answer.find(http::field::connection);
  return connection != answer.end() && http::token_list{connection->value()}.exists("close");
}

// The IMF-fixdate for the Date header (RFC 9110 5.6.7), formatted once per second per thread.
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

class Session : public std::enable_shared_from_this<Session> {
 public:
  // The most one read takes from the socket (Beast reads up to this much at a time too).
  static constexpr std::size_t kReadBytes = 64 * 1024;

  Session(LoopSocket&& socket, net::io_context& loop, std::shared_ptr<HttpServer::State> state)
      : socket_(std::move(socket)),
        deadline_(loop, *this, &Session::close),
        loop_(loop),
        state_(std::move(state)) {
    // What the parser has not taken yet: a header, a chunk-size line or trailer, a pipelined
    // request. Unbounded, a chunk line that never ends grew it by megabytes a second until the
    // request's timeout; past the bound the read fails (buffer_overflow, answered 400).
    buffer_.max_size(state_->limits.max_header_bytes + 2 * kReadBytes);
    beast::error_code ignored;
    peer_ = socket_.remote_endpoint(ignored);
  }
  ~Session() { state_->connections.fetch_sub(1, std::memory_order_relaxed); }

  void start() {
    net::dispatch(socket_.get_executor(),
                  beast::bind_front_handler(&Session::doRead, shared_from_this()));
  }

  // Refuses the connection with 503 and why: over the connection cap, or the server is
  // stopping (accepted before the listener closed).
  void refuse(std::string_view why) {
    auto self = shared_from_this();
    net::dispatch(socket_.get_executor(), [self, why] {
      self->write(plainResponse(http::status::service_unavailable, why, 11));
    });
  }

  // On shutdown: closes the connection now if it is waiting for a request and none has begun
  // to arrive (a request half received is read, answered and then closed, as one in flight).
  void closeIfIdle() {
    net::post(socket_.get_executor(), [self = shared_from_this()] {
      if (!self->busy_ && !self->receiving()) self->close();
    });
  }

 private:
  // Whether some of a next request is here: in the buffer (a pipelined one), taken by the
  // parser, or still in the kernel's receive queue (one non-blocking peek).
  bool receiving() {
    if (buffer_.size() > 0 || (parser_ && parser_->got_some())) return true;
    return peek() > 0;
  }

  // peekOneByte (loop_io.h) on the client's socket; -1 once it is closed.
  ssize_t peek() { return socket_.is_open() ? peekOneByte(socket_.native_handle()) : -1; }

  void doRead() {
    dropLeadingEmptyLines(buffer_);
    // Draining: a request already here (pipelined behind the last one) is still answered, with
    // Connection: close; an idle connection closes.
    if (state_->draining.load() && !receiving()) return close();
    armDeadline();
    busy_ = false;
    head_request_ = false;
    readHeader();
  }

  void readHeader() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(state_->limits.max_header_bytes));
    parser_->trailer_limit(state_->limits.max_header_bytes);
    parser_->body_limit(state_->limits.max_body_bytes);
    http::async_read_header(socket_, buffer_, *parser_,
                            beast::bind_front_handler(&Session::onHeader, shared_from_this()));
  }

  // The header block is in: answer `Expect: 100-continue` before reading the body, or a client
  // that waits for it would stall until its own timeout.
  void onHeader(beast::error_code ec, std::size_t bytes) {
    // Empty lines that came after the read began fail the parse, which took nothing: read again
    // without them, within the same deadline (a stream of empty lines gets no more time).
    if (ec && ec != http::error::end_of_stream &&
        ec.category() == http::make_error_code(http::error::bad_method).category() &&
        dropLeadingEmptyLines(buffer_)) {
      return readHeader();
    }
    if (ec) return onRead(ec, bytes);
    const auto& header = parser_->get();
    if (const auto refusal = headRefusal(header, parser_->chunked())) {
      busy_ = true;  // answered, and the connection closes unread (see requestUnread)
      return write(plainResponse(static_cast<http::status>(refusal->status), refusal->message, 11));
    }
    makeRoomForBody();
    const bool wants_continue =
        header.version() >= 11 && beast::iequals(header[http::field::expect], "100-continue");
    if (!wants_continue || parser_->is_done()) {
      return http::async_read(body_reads_, buffer_, *parser_,
                              beast::bind_front_handler(&Session::onRead, shared_from_this()));
    }
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    net::async_write(socket_, net::buffer(kContinue.data(), kContinue.size()),
                     [self = shared_from_this()](beast::error_code write_ec, std::size_t) {
                       if (write_ec) return self->close();
                       http::async_read(self->body_reads_, self->buffer_, *self->parser_,
                                        beast::bind_front_handler(&Session::onRead, self));
                     });
  }

  // Room in the buffer for the part of the body that did not come with the head, up to a read's
  // worth (body_room.h); given back once the body is read (onRead).
  void makeRoomForBody() {
    if (parser_->is_done()) return;
    const auto remaining = parser_->content_length_remaining();
    if (!remaining) return body_room_.make(buffer_, BodyRoom::kMostBytes);  // chunked
    if (*remaining > buffer_.size()) body_room_.make(buffer_, *remaining - buffer_.size());
  }

  void onRead(beast::error_code ec, std::size_t /*bytes*/) {
    busy_ = true;
    // The body is in (or its read failed), and no read is out: its room goes back now, not
    // after the answer, which a throttle may hold for up to its max_delay.
    body_room_.giveBack(buffer_);
    // A closed connection, or one the deadline closed (slow or idle).
    if (ec == http::error::end_of_stream || ec == net::error::operation_aborted) return close();
    if (ec == http::error::header_limit) {
      return write(plainResponse(http::status::request_header_fields_too_large,
                                 "the request header block or trailer is over the limit", 11));
    }
    if (ec == http::error::body_limit) {
      return write(
          plainResponse(http::status::payload_too_large, "the request body is over the limit", 11));
    }
    if (ec) {
      if (ec.category() == http::make_error_code(http::error::bad_target).category()) {
        return write(plainResponse(http::status::bad_request, "malformed HTTP request", 11));
      }
      return close();
    }
    deadline_.disarm();  // the handler may wait (throttle); its answer is bounded instead
    HttpRequest request = parser_->release();
    // An absolute-form target ("POST http://host/v1/check"), which a server must accept (RFC
    // 9112 3.2.2), is read as its origin form, its authority taking the place of Host.
    if (const auto origin = policy::originForm(
            std::string_view(request.target().data(), request.target().size()))) {
      request.set(http::field::host, origin->authority);
      request.target(origin->target);
    }
    const bool keep_alive = request.keep_alive();
    head_request_ = request.method() == http::verb::head;
    auto self = shared_from_this();
    Respond respond(
        [self, keep_alive](HttpResponse&& response) {
          // Runs inline when the handler answers on this connection's loop; a throttled
          // answer from a timer elsewhere is carried over to it.
          net::dispatch(self->socket_.get_executor(), [self, keep_alive,
                                                       answer = std::move(response)]() mutable {
            // Whether the connection persists is the request's to say (RFC 9112 9.3: HTTP/1.1
            // unless it says close, HTTP/1.0 when it says keep-alive); the answer can only
            // close it. keep_alive() then writes the Connection field the version needs.
            answer.keep_alive(keep_alive && !asksToClose(answer) && !self->state_->draining.load());
            self->write(std::move(answer));
          });
        },
        // Plain pointers, which std::function keeps without an allocation: the sender above
        // holds the session alive as long as this Respond lives.
        [session = self.get()] { return session->peerClosed(); },
        [session = self.get()](std::function<void()> on_gone) {
          session->watchForHangUp(std::move(on_gone));
        });
    state_->handler(std::move(request), peer_, loop_, std::move(respond));
  }

  // Respond::watchHangUp: one wait at a time for the socket to turn readable, which a hang-up
  // makes it, calling the latest hold's `on_gone`. Looked at first: the reactor is
  // edge-triggered, and an end of stream that came before the wait (with the request, or while a
  // store decided) raises no event for it.
  void watchForHangUp(std::function<void()> on_gone) {
    if (peerClosed()) return net::post(socket_.get_executor(), std::move(on_gone));
    on_hang_up_ = std::move(on_gone);
    if (watching_) return;
    watching_ = true;
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](beast::error_code ec) {
      self->watching_ = false;
      const std::function<void()> gone = std::move(self->on_hang_up_);
      self->on_hang_up_ = nullptr;
      if (!ec && gone && self->peerClosed()) gone();
    });
  }

  // Whether the client has closed or reset the connection while its request is held: one
  // non-blocking peek. Nothing to read yet, or the bytes of a pipelined next request, mean it
  // is still there.
  bool peerClosed() {
    if (!socket_.is_open()) return true;
    const ssize_t got = peek();
    if (got > 0) return false;
    return got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  }

  // Serializes the response into one buffer and writes it with one call. Beast's serializer
  // walks a buffer sequence per header field; for the small responses of a rate limiter that
  // walk cost more than the decision (measured: about a tenth of the server's CPU).
  void write(HttpResponse&& response) {
    keep_alive_ = response.keep_alive();
    out_.clear();
    out_ += response.version() == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
    out_ += std::to_string(response.result_int());
    out_ += ' ';
    out_ +=
        response.reason().empty() ? http::obsolete_reason(response.result()) : response.reason();
    out_ += "\r\n";
    for (const auto& field : response) {
      out_ += field.name_string();
      out_ += ": ";
      out_ += field.value();
      out_ += "\r\n";
    }
    out_ += "Date: ";
    out_ += httpDate();
    out_ += "\r\n\r\n";
    if (!head_request_) out_ += response.body();  // HEAD: the headers, Content-Length included
    armDeadline();
    eagerWrite(socket_, net::buffer(out_),
               [self = shared_from_this()](beast::error_code ec, std::size_t) {
                 if (ec) return self->close();
                 if (!self->keep_alive_)
                   return self->requestUnread() ? self->linger() : self->close();
                 self->doRead();
               });
  }

  // Whether the client may still be sending the request just answered: its body over the
  // limit, a refused framing, a malformed header.
  // A refused Transfer-Encoding (gzip, say) leaves its body unread although the parser, taking
  // it for no body, says the request is done.
  bool requestUnread() const {
    return parser_.has_value() &&
           (!parser_->is_done() ||
            parser_->get().find(http::field::transfer_encoding) != parser_->get().end());
  }

  // A close with unread bytes in the socket makes the kernel send a reset, which can destroy the
  // answer before the client reads it (a client that sends its whole body first, as Python's
  // http.client does, then sees a broken pipe instead of its 413). So, as nginx's lingering
  // close does: the sending side is shut, and what still comes is read and dropped until the
  // client closes, for at most kLingerUs.
  void linger() {
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    deadline_.armAfter(kLingerUs);  // closes the socket, which ends the read below
    discardInput();
  }

  void discardInput() {
    buffer_.clear();
    socket_.async_read_some(buffer_.prepare(kReadBytes),
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec) return self->close();  // the client's end, or kLingerUs
                              self->discardInput();
                            });
  }

  static constexpr Micros kLingerUs = 5 * kMicrosPerSecond;

  void close() {
    deadline_.stop();
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    socket_.close(ignored);
  }

  // Reading a request and writing its answer each get request_timeout_us; past it the deadline
  // closes the socket, which ends the outstanding operation with an error.
  void armDeadline() { deadline_.armAfter(state_->limits.request_timeout_us); }

  DrainAwareSocket socket_;
  ConnectionDeadline<Session> deadline_;  // closes the connection when it passes
  net::io_context& loop_;                 // the loop this connection lives on
  beast::flat_buffer buffer_;
  BodyRoom body_room_;                      // in buffer_
  BodyReads body_reads_{socket_, buffer_};  // a request body's reads, after its header's
  std::optional<BoundedRequestParser<http::string_body>> parser_;
  std::shared_ptr<HttpServer::State> state_;
  tcp::endpoint peer_;
  bool busy_ = false;      // a request is being handled (only touched on the connection's loop)
  bool watching_ = false;  // watchForHangUp's wait is out
  std::function<void()> on_hang_up_;  // what it calls on a hang-up
  bool keep_alive_ = false;
  bool head_request_ = false;  // the request being answered is a HEAD
  std::string out_;            // the response being written
};

void accept(const std::shared_ptr<HttpServer::State>& state,
            const std::shared_ptr<tcp::acceptor>& acceptor) {
  // Each connection goes to the next loop of the pool and stays there, so it needs no strand.
  net::io_context& loop = state->pool.next();
  acceptor->async_accept(loop, [state, acceptor, &loop](beast::error_code ec, LoopSocket socket) {
    if (ec == net::error::operation_aborted || !acceptor->is_open()) return;
    if (!ec) {
      const std::size_t open = state->connections.fetch_add(1, std::memory_order_relaxed) + 1;
      auto session = std::make_shared<Session>(std::move(socket), loop, state);
      if (state->draining.load()) {
        session->refuse("the server is shutting down");
      } else if (open > state->limits.max_connections) {
        session->refuse("too many connections");
      } else {
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
      return pauseAccepting(acceptor, ec, endpointText(acceptor->local_endpoint(ignored)),
                            [state, acceptor] { accept(state, acceptor); });
    }
    accept(state, acceptor);
  });
}

}  // namespace

std::string endpointText(const tcp::endpoint& endpoint) {
  // An IPv6 address in brackets, as a URI's authority and a Host field write it: "::1:8080"
  // could be read as address ::1:8080 with no port.
  const std::string address = endpoint.address().to_string();
  const std::string port = std::to_string(endpoint.port());
  return endpoint.address().is_v6() ? "[" + address + "]:" + port : address + ":" + port;
}

std::string hostFieldText(const tcp::endpoint& endpoint) {
  if (!endpoint.address().is_v6() || endpoint.address().to_v6().scope_id() == 0) {
    return endpointText(endpoint);
  }
  net::ip::address_v6 unzoned = endpoint.address().to_v6();
  unzoned.scope_id(0);
  return endpointText(tcp::endpoint(unzoned, endpoint.port()));
}

HttpServer::HttpServer(IoPool& pool, HttpServerLimits limits, Handler handler)
    : state_(std::make_shared<State>(pool, limits, std::move(handler))) {}

HttpServer::~HttpServer() { shutdown(); }

Result<tcp::endpoint> HttpServer::listen(const std::string& address) {
  Result<tcp::endpoint> endpoint = policy::parseEndpoint(address);
  if (!endpoint.ok()) return endpoint;
  auto acceptor = std::make_shared<tcp::acceptor>(state_->pool.first());
  beast::error_code ec;
  acceptor->open(endpoint.value().protocol(), ec);
  if (!ec) acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(endpoint.value(), ec);
  if (!ec) acceptor->listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Error{"cannot listen on " + address + ": " + ec.message()};
  const tcp::endpoint bound = acceptor->local_endpoint(ec);
  accept(state_, acceptor);
  state_->acceptors.push_back(acceptor);
  return bound;
}

void HttpServer::shutdown() {
  if (state_->draining.exchange(true)) return;
  for (const auto& weak : state_->acceptors) {
    if (auto acceptor = weak.lock()) {
      net::post(acceptor->get_executor(), [acceptor] {
        beast::error_code ignored;
        acceptor->close(ignored);
      });
    }
  }
  std::lock_guard lock(state_->sessions_mutex);
  for (const auto& weak : state_->sessions) {
    if (auto session = weak.lock()) session->closeIfIdle();
  }
}

std::size_t HttpServer::openConnections() const noexcept {
  return state_->connections.load(std::memory_order_relaxed);
}

}  // namespace sluice::server
