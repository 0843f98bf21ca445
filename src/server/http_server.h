// An HTTP/1.1 server on Boost.Beast: keep-alive, bounded header and body sizes, a timeout per
// request, a connection cap, and a graceful stop. It owns only I/O; what a request means is the
// handler's business (see service.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "server/io_pool.h"
#include "sluice/result.h"
#include "sluice/time.h"

namespace sluice::server {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;
// Answers one request: called exactly once, from any thread. The connection stays open after the
// answer when the request asked for it (HTTP/1.1 unless Connection: close, HTTP/1.0 with
// Connection: keep-alive), unless the answer carries Connection: close. A handler that holds a
// request (a throttle waiting for its slot) can also ask whether the client is still there, so that
// a client that hung up meanwhile is not decided for, and not counted, when the wait ends.
class Respond {
 public:
  using Send = std::function<void(HttpResponse&&)>;
  using ClientGone = std::function<bool()>;
  using WatchHangUp = std::function<void(std::function<void()>)>;
  Respond() = default;  // none yet: assign one before calling it
  explicit Respond(Send send, ClientGone client_gone = {}, WatchHangUp watch_hang_up = {})
      : send_(std::move(send)),
        client_gone_(std::move(client_gone)),
        watch_hang_up_(std::move(watch_hang_up)) {}

  void operator()(HttpResponse&& response) const { send_(std::move(response)); }
  // On the connection's loop (the `loop` the handler was given) only. True once the client has
  // closed or reset the connection, half-closes included, as nginx's proxy_ignore_client_abort
  // off reads them; a pipelined next request does not count.
  [[nodiscard]] bool clientGone() const { return client_gone_ && client_gone_(); }
  // On the connection's loop only, for a handler that holds the request (a throttle's wait):
  // runs `on_gone` there when the client closes, resets or half-closes the connection before
  // the answer, so the handler can let go at once rather than when its wait ends. Bytes of a
  // pipelined next request end the watch without a call (clientGone still tells, later). It may
  // also run after the answer, or for an earlier hold: `on_gone` checks that it still holds.
  void watchHangUp(std::function<void()> on_gone) const {
    if (watch_hang_up_) watch_hang_up_(std::move(on_gone));
  }

 private:
  Send send_;
  ClientGone client_gone_;
  WatchHangUp watch_hang_up_;
};
// Handles one request; may answer later (a throttled request waits on a timer, which should run
// on `loop`, the connection's own, so nothing outlives the loop it belongs to).
using Handler =
    std::function<void(HttpRequest&& request, const boost::asio::ip::tcp::endpoint& peer,
                       boost::asio::io_context& loop, Respond respond)>;

struct HttpServerLimits {
  std::size_t max_header_bytes = 16 * 1024;  // larger → 431
  std::size_t max_body_bytes = 1 << 20;      // larger → 413
  Micros request_timeout_us = 10 * kMicrosPerSecond;
  std::size_t max_connections = 10'000;  // more → 503 and close
};

class HttpServer {
 public:
  // Connections are spread over the pool's loops; the pool must outlive the server.
  HttpServer(IoPool& pool, HttpServerLimits limits, Handler handler);
  ~HttpServer();

  // Binds and listens on "host:port" (port 0 picks a free one). Error says what failed.
  Result<boost::asio::ip::tcp::endpoint> listen(const std::string& address);

  // Stops accepting, closes idle connections, lets requests in flight finish and close after
  // their response. Thread-safe.
  void shutdown();

  // Thread-safe.
  [[nodiscard]] std::size_t openConnections() const noexcept;

  struct State;  // shared with the sessions, which may outlive a call

 private:
  std::shared_ptr<State> state_;
};

// "host:port" ("[v6]:port", with a link-local address's zone: "[fe80::1%eth0]:port"), as the
// ready line and the logs name a listener or a server.
std::string endpointText(const boost::asio::ip::tcp::endpoint& endpoint);

// The same as a Host field names an upstream or a webhook: without the zone, which a Host's
// IP literal cannot carry (RFC 3986), and which says where to route, not what the server is.
std::string hostFieldText(const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace sluice::server
