// The test upstream's answers (see test_upstream.h), compiled once for every test using it.
#include "gateway/test_upstream.h"

#include <cctype>
#include <chrono>
#include <optional>
#include <sstream>
#include <utility>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>

namespace sluice::testing {

namespace {
using Request = boost::beast::http::request<boost::beast::http::string_body>;
using Response = boost::beast::http::response<boost::beast::http::string_body>;
}  // namespace

struct TestUpstream::Connection : std::enable_shared_from_this<Connection> {
  Connection(boost::asio::ip::tcp::socket socket, TestUpstream& owner)
      : stream(std::move(socket)), upstream(owner), timer(stream.get_executor()) {}
  boost::beast::tcp_stream stream;
  TestUpstream& upstream;
  boost::asio::steady_timer timer;
  boost::beast::flat_buffer buffer;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser;
  Response response;
  bool close_after = false;
  bool late_extra = false;

  void read() {
    parser.emplace();
    parser->body_limit(64 << 20);
    boost::beast::http::async_read_header(
        stream, buffer, *parser,
        [self = shared_from_this()](boost::beast::error_code ec, std::size_t) {
          if (ec) return;
          ++self->upstream.heads;
          if (self->parser->get().target().starts_with("/early-")) return self->answerEarly();
          boost::beast::http::async_read(self->stream, self->buffer, *self->parser,
                                         [self](boost::beast::error_code read_ec, std::size_t) {
                                           if (read_ec) {
                                             ++self->upstream.cut_mid_body;
                                             return;
                                           }
                                           ++self->upstream.requests;
                                           ++self->upstream.in_flight;
                                           self->handle(self->parser->release());
                                         });
        });
  }

  void writeLateExtra() {
    static const std::string kExtra = "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nINJECTED";
    timer.expires_after(std::chrono::milliseconds(20));
    timer.async_wait([self = shared_from_this()](boost::beast::error_code) {
      boost::asio::async_write(self->stream, boost::asio::buffer(kExtra),
                               [self](boost::beast::error_code ec, std::size_t) {
                                 if (ec) return;
                                 ++self->upstream.late_extras;
                                 self->read();
                               });
    });
  }

  // /early-close and /early-hold: 413 before reading the body.
  void answerEarly() {
    ++upstream.requests;
    const bool interim = parser->get().target() == "/early-interim-hold";
    const bool hold = interim || parser->get().target() == "/early-hold";
    response = Response{boost::beast::http::status::payload_too_large, 11};
    response.body() = "too large";
    response.keep_alive(false);
    response.prepare_payload();
    if (interim) {
      auto written = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
      std::ostringstream serialized;
      serialized << response;
      *written += serialized.str();
      boost::asio::async_write(
          stream, boost::asio::buffer(*written),
          [self = shared_from_this(), written](boost::beast::error_code, std::size_t) {
            self->upstream.held_.push_back(self);  // open, never read
          });
      return;
    }
    boost::beast::http::async_write(
        stream, response, [self = shared_from_this(), hold](boost::beast::error_code, std::size_t) {
          if (hold) return self->upstream.held_.push_back(self);  // open, never read
          boost::beast::error_code ignored;
          self->stream.socket().close(ignored);
        });
  }

  void handle(Request request) {
    namespace http = boost::beast::http;
    const std::string target(request.target());
    const std::string path = target.substr(0, target.find('?'));
    const std::size_t eq = target.find('=');
    const std::size_t number = eq == std::string::npos ? 0 : std::stoul(target.substr(eq + 1));
    response = Response{http::status::ok, request.version()};
    response.keep_alive(request.keep_alive());
    for (const auto& field : request) {
      std::string name(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      response.set("X-Echo-" + name, field.value());
    }
    response.set("X-Echo-Target", target);
    if (path == "/bad-status" || path == "/gzip-coded" || path == "/no-content") {
      --upstream.in_flight;
      static const std::string kBad = "HTTP/1.1 000 X\r\nContent-Length: 2\r\n\r\nok";
      static const std::string kGzip =
          "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n\x1f\x8b coded";
      static const std::string kNoContent = "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n";
      const std::string& answer = path == "/bad-status"   ? kBad
                                  : path == "/gzip-coded" ? kGzip
                                                          : kNoContent;
      boost::asio::async_write(stream, boost::asio::buffer(answer),
                               [self = shared_from_this()](boost::beast::error_code, std::size_t) {
                                 boost::beast::error_code ignored;
                                 self->stream.socket().close(ignored);
                               });
      return;
    }
    const bool websocket = boost::beast::iequals(request[http::field::upgrade], "websocket");
    if (path == "/ws-unasked" || (path == "/ws" && websocket)) {
      --upstream.in_flight;
      return switchProtocols(path == "/ws");
    }
    if (path == "/huge-trailer") {  // a chunked answer whose trailer field Beast cannot hold
      --upstream.in_flight;
      static const std::string kHugeTrailer =
          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Big: " +
          std::string(70'000, 't') + "\r\n\r\n";
      boost::asio::async_write(stream, boost::asio::buffer(kHugeTrailer),
                               [self = shared_from_this()](boost::beast::error_code, std::size_t) {
                                 self->upstream.held_.push_back(self);  // open, never read
                               });
      return;
    }
    if (path == "/bare-lf-last-chunk") {  // and the connection held open, as if more may come
      --upstream.in_flight;
      static const std::string kBareLf =
          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\n\n";
      boost::asio::async_write(stream, boost::asio::buffer(kBareLf),
                               [self = shared_from_this()](boost::beast::error_code, std::size_t) {
                                 self->upstream.held_.push_back(self);  // open, never read
                               });
      return;
    }
    if (path == "/endless-chunk-line") {
      --upstream.in_flight;
      static const std::string kEndless =
          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" + std::string(4 << 20, 'a');
      boost::asio::async_write(stream, boost::asio::buffer(kEndless),
                               [self = shared_from_this()](boost::beast::error_code, std::size_t) {
                                 boost::beast::error_code ignored;
                                 self->stream.socket().close(ignored);
                               });
      return;
    }
    if (path == "/own-rate-limit-fields") {  // an application that reports its own limit
      response.set("X-RateLimit-Limit", "100");
      response.set("x-ratelimit-remaining", "99");
      response.set("RateLimit", "\"app\";r=99;t=60");
    }
    if (path == "/ws") response.result(http::status::upgrade_required);
    if (path == "/fail") {
      --upstream.in_flight;
      boost::beast::error_code ignored;
      stream.socket().close(ignored);
      return;
    }
    if (path == "/echo") {
      response.body() = std::move(request.body());
    } else if (path == "/big" || path == "/big-chunked") {
      response.body() = bigBody(number);
      if (path == "/big-chunked") response.chunked(true);
    } else if (path == "/until-close") {
      response.body() = bigBody(number);
      response.keep_alive(false);  // write() shuts the connection down after the body
    } else if (path == "/limits") {
      response.body() = upstream.limits_answer;
    } else if (path == "/limits-strict") {
      boost::system::error_code json_error;
      (void)boost::json::parse(request.body(), json_error);
      if (json_error) {
        response.result(http::status::bad_request);
        response.body() = "not JSON: " + json_error.message();
      } else {
        response.body() = upstream.limits_answer;
      }
    } else if (path == "/limits-garbage") {
      response.body() = "{\"limits\": [{\"key\": 5}]} and more";
    } else {
      response.body() = "ok";
    }
    if (!response.chunked() && path != "/until-close") response.prepare_payload();
    if (request.method() == http::verb::head) {  // the length of what a GET would get, no body
      const std::size_t length = response.body().size();
      response.body().clear();
      response.content_length(length);
    }
    close_after = path == "/then-close";
    late_extra = path == "/late-extra";
    const bool slow = path == "/slow" || path == "/limits-slow";
    timer.expires_after(std::chrono::milliseconds(slow ? number : 0));
    timer.async_wait([self = shared_from_this()](boost::beast::error_code) { self->write(); });
  }

  // 101, then (for /ws) echo; for /ws-unasked, close once the answer is out.
  void switchProtocols(bool echo) {
    static const std::string kSwitch =
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Accept: test-accept\r\nX-RateLimit-Limit: 100\r\n\r\nhello";
    // Counted before the 101 leaves: a client that has read it through the gateway must find
    // it counted (counted once written, a test could look first, and did under ASan).
    if (echo) ++upstream.websockets;
    boost::asio::async_write(
        stream, boost::asio::buffer(kSwitch),
        [self = shared_from_this(), echo](boost::beast::error_code ec, std::size_t) {
          if (ec) return;
          if (!echo) {
            boost::beast::error_code ignored;
            self->stream.socket().close(ignored);
            return;
          }
          self->echoBuffered();
        });
  }

  // Writes back what is buffered (bytes that came behind the request first), then reads more.
  void echoBuffered() {
    if (buffer.size() == 0) return echoRead();
    boost::asio::async_write(
        stream, buffer.data(),
        [self = shared_from_this()](boost::beast::error_code ec, std::size_t bytes) {
          if (ec) return;
          self->buffer.consume(bytes);
          self->echoRead();
        });
  }

  void echoRead() {
    stream.socket().async_read_some(
        buffer.prepare(64 * 1024),
        [self = shared_from_this()](boost::beast::error_code ec, std::size_t bytes) {
          self->buffer.commit(bytes);
          if (ec == boost::asio::error::eof) {
            ++self->upstream.websockets_ended;
            boost::beast::error_code ignored;
            self->stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
            return;
          }
          if (ec) return;
          self->echoBuffered();
        });
  }

  void write() {
    --upstream.in_flight;
    boost::beast::http::async_write(
        stream, response, [self = shared_from_this()](boost::beast::error_code ec, std::size_t) {
          if (ec || !self->response.keep_alive()) {
            boost::beast::error_code ignored;
            self->stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
            return;
          }
          if (self->close_after) {
            boost::beast::error_code ignored;
            self->stream.socket().close(ignored);
            ++self->upstream.closed_after;
            return;
          }
          if (self->late_extra) return self->writeLateExtra();
          self->read();
        });
  }
};

TestUpstream::TestUpstream() : acceptor_(io_) {
  namespace net = boost::asio;
  const net::ip::tcp::endpoint where(net::ip::make_address("127.0.0.1"), 0);
  acceptor_.open(where.protocol());
  acceptor_.set_option(net::socket_base::reuse_address(true));
  acceptor_.bind(where);
  acceptor_.listen();
  endpoint_ = acceptor_.local_endpoint();
  accept();
  thread_ = std::thread([this] { io_.run(); });
}
TestUpstream::~TestUpstream() {
  io_.stop();
  thread_.join();
}

void TestUpstream::accept() {
  acceptor_.async_accept([this](boost::beast::error_code ec, boost::asio::ip::tcp::socket socket) {
    if (ec) return;
    ++connections;
    std::make_shared<Connection>(std::move(socket), *this)->read();
    accept();
  });
}

}  // namespace sluice::testing
