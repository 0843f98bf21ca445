// WebSockets through the gateway, end to end: the handshake decided as a request, the upstream's
// 101 passed on, bytes both ways until each side ends, the tunnel's concurrency permit held for
// its life, and the tunnel closed when idle or when the gateway shuts down.
#include <chrono>
#include <string>
#include <thread>

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <gtest/gtest.h>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/websocket.hpp>

#include "gateway/gateway_fixture.h"
#include "support/http_client.h"

namespace sluice::gateway {
namespace {

namespace net = boost::asio;
using sluice::testing::bigBody;

bool readableWithin10s(int fd) {
  pollfd ready{.fd = fd, .events = POLLIN, .revents = 0};
  return poll(&ready, 1, 10'000) == 1;
}

constexpr const char* kWebSocketConfig = R"(
limits:
  - { name: handshakes, match: { path_prefix: /ws }, key: header:X-User, algorithm: token_bucket,
      rate: 2/hour, burst: 2, when_missing: skip }
  - { name: everyone, key: global, rate: 100000/s }
gateway:
  listen: 127.0.0.1:0
  websocket_idle_timeout: 1s
  upstreams: { app: UPSTREAM }
  routes: [ { path_prefix: /, upstream: app } ]
  concurrency:
    - { name: one-socket, match: { path_prefix: /ws }, key: header:X-Client, max_in_flight: 1 }
)";

// A WebSocket echo server built on Beast's RFC 6455 implementation, on 127.0.0.1 on its own
// thread: a real peer, whose handshake and frames the gateway must pass untouched.
class BeastEchoServer {
 public:
  BeastEchoServer() : acceptor_(io_, {net::ip::make_address("127.0.0.1"), 0}) {
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~BeastEchoServer() {
    io_.stop();
    thread_.join();
  }
  [[nodiscard]] std::string address() const {
    return "127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }

 private:
  using Socket = boost::beast::websocket::stream<net::ip::tcp::socket>;

  struct Session : std::enable_shared_from_this<Session> {
    explicit Session(net::ip::tcp::socket socket) : ws(std::move(socket)) {}
    Socket ws;
    boost::beast::flat_buffer buffer;

    void start() {
      ws.async_accept([self = shared_from_this()](boost::beast::error_code ec) {
        if (!ec) self->read();
      });
    }
    void read() {
      ws.async_read(buffer, [self = shared_from_this()](boost::beast::error_code ec, std::size_t) {
        if (ec) return;  // closed (the close handshake is answered by Beast), or failed
        self->ws.text(self->ws.got_text());
        self->ws.async_write(self->buffer.data(),
                             [self](boost::beast::error_code write_ec, std::size_t) {
                               if (write_ec) return;
                               self->buffer.consume(self->buffer.size());
                               self->read();
                             });
      });
    }
  };

  void accept() {
    acceptor_.async_accept([this](boost::beast::error_code ec, net::ip::tcp::socket socket) {
      if (ec) return;
      std::make_shared<Session>(std::move(socket))->start();
      accept();
    });
  }

  net::io_context io_;
  net::ip::tcp::acceptor acceptor_;
  std::thread thread_;
};

class WebSocketTest : public sluice::testing::GatewayFixture {
 protected:
  void SetUp() override {
    std::string config = kWebSocketConfig;
    const std::string routes = "  routes: [ { path_prefix: /, upstream: app } ]\n";
    config.replace(config.find(routes), routes.size(),
                   "  routes:\n    - { path_prefix: /beast, upstream: beast }\n"
                   "    - { path_prefix: /raw, upstream: raw }\n"
                   "    - { path_prefix: /, upstream: app }\n");
    config.replace(config.find("{ app: UPSTREAM }"), 17,
                   "{ app: UPSTREAM, beast: " + beast_.address() + ", raw: 127.0.0.1:" +
                       std::to_string(raw_upstream_.local_endpoint().port()) + " }");
    start(config);
  }

  BeastEchoServer beast_;
  // An upstream the test itself plays, one blocking step at a time, to time its 101.
  net::io_context raw_io_;
  net::ip::tcp::acceptor raw_upstream_{raw_io_, {net::ip::make_address("127.0.0.1"), 0}};

  // Sends a WebSocket handshake for /raw on `client`, and plays the upstream it reaches: the
  // connection accepted, the request's head read from it. Not open when that fails (reported).
  net::ip::tcp::socket acceptRawUpgrade(net::ip::tcp::socket& client) {
    net::write(client,
               net::buffer(std::string("GET /raw HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                                       "Upgrade: websocket\r\nSec-WebSocket-Key: a\r\n"
                                       "Sec-WebSocket-Version: 13\r\n\r\n")));
    net::ip::tcp::socket upstream(raw_io_);
    if (!readableWithin10s(raw_upstream_.native_handle())) {
      ADD_FAILURE() << "the gateway did not connect to the upstream";
      return upstream;
    }
    upstream = raw_upstream_.accept();
    std::string request;
    while (request.find("\r\n\r\n") == std::string::npos) {
      if (!readableWithin10s(upstream.native_handle())) {
        ADD_FAILURE() << "no request head at the upstream: " << request;
        upstream.close();
        return upstream;
      }
      char chunk[4096];
      request.append(chunk, upstream.read_some(net::buffer(chunk)));
    }
    return upstream;
  }

  // A connection to the gateway that sends a handshake for `target` with `extra` header lines
  // and reads the answer's head; every read gives up after 10 s (a watchdog, not a timing).
  struct Client {
    net::io_context io;
    boost::beast::tcp_stream stream{io};
    std::string pending;  // read past what was asked for
    std::string head;

    void send(const std::string& bytes) { net::write(stream, net::buffer(bytes)); }

    // Whether something (bytes or an end) comes within 10 s: the watchdog of every read, as
    // Beast's stream timeouts bound asynchronous operations only.
    bool readable() { return readableWithin10s(stream.socket().native_handle()); }

    // Exactly `bytes` bytes, or what came before the connection ended or the watchdog.
    std::string read(std::size_t bytes) {
      boost::beast::error_code ec;
      while (pending.size() < bytes && !ec && readable()) {
        char chunk[65536];
        const std::size_t got = stream.read_some(net::buffer(chunk), ec);
        pending.append(chunk, got);
      }
      std::string out = pending.substr(0, bytes);
      pending.erase(0, out.size());
      return out;
    }

    // True when the gateway closes the connection (end of stream) within the watchdog.
    bool endsWithin10s() {
      boost::beast::error_code ec;
      char byte;
      while (!ec) {
        if (!readable()) return false;
        stream.read_some(net::buffer(&byte, 1), ec);
      }
      return ec == net::error::eof || ec == net::error::connection_reset;
    }
  };

  std::unique_ptr<Client> handshake(const std::string& target, const std::string& extra = "") {
    auto client = std::make_unique<Client>();
    client->stream.connect(endpoint_);
    client->send("GET " + target +
                 " HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" +
                 extra + "\r\n");
    client->stream.expires_after(std::chrono::seconds(10));
    boost::beast::error_code ec;
    const std::size_t end =
        net::read_until(client->stream, net::dynamic_buffer(client->pending), "\r\n\r\n", ec);
    if (!ec) {
      client->head = client->pending.substr(0, end);
      client->pending.erase(0, end);
    }
    return client;
  }
};

// The upstream's 101 reaches the client with its accept key and the rate-limit headers; what
// the upstream sent right behind it comes first; bytes pass both ways intact, a megabyte too;
// and each side's end of stream reaches the other, after which the tunnel closes.
TEST_F(WebSocketTest, BytesPassBothWaysUntilEachSideEnds) {
  auto client = handshake("/ws", "X-User: ann\r\n");
  ASSERT_TRUE(client->head.starts_with("HTTP/1.1 101 ")) << client->head;
  EXPECT_NE(client->head.find("Upgrade: websocket\r\n"), std::string::npos) << client->head;
  EXPECT_NE(client->head.find("Connection: upgrade\r\n"), std::string::npos) << client->head;
  EXPECT_NE(client->head.find("Sec-WebSocket-Accept: test-accept\r\n"), std::string::npos);
  EXPECT_NE(client->head.find("RateLimit-Policy: "), std::string::npos) << client->head;
  // The upstream's own X-RateLimit-Limit gives way to the gateway's: one line of it.
  const std::size_t limit_line = client->head.find("X-RateLimit-Limit: ");
  ASSERT_NE(limit_line, std::string::npos) << client->head;
  EXPECT_EQ(client->head.find("X-RateLimit-Limit: ", limit_line + 1), std::string::npos)
      << client->head;
  EXPECT_EQ(client->head.find("X-RateLimit-Limit: 100\r\n"), std::string::npos) << client->head;
  EXPECT_EQ(client->read(5), "hello");

  client->send("ping");
  EXPECT_EQ(client->read(4), "ping");
  const std::string big = bigBody(1 << 20);
  std::thread sender([&] { client->send(big); });  // the echo comes back while it is sent
  const std::string echoed = client->read(big.size());
  sender.join();
  EXPECT_TRUE(echoed == big) << "a megabyte came back altered (" << echoed.size() << " bytes)";

  boost::beast::error_code ec;
  client->stream.socket().shutdown(net::ip::tcp::socket::shutdown_send, ec);
  EXPECT_TRUE(client->endsWithin10s());
  EXPECT_EQ(upstream_.websockets.load(), 1);
  EXPECT_EQ(upstream_.websockets_ended.load(), 1);
  EXPECT_EQ(gateway_->stats().websockets, 1u);
  EXPECT_EQ(gateway_->stats().forwarded, 1u);
}

// A real WebSocket client and server (Beast's RFC 6455 implementation) through the gateway: the
// client checks the server's accept key, messages of a few bytes and of a megabyte come back
// whole, and the closing handshake completes.
TEST_F(WebSocketTest, ARealWebSocketClientAndServerTalkThroughIt) {
  net::io_context io;
  boost::beast::websocket::stream<net::ip::tcp::socket> ws(io);
  ws.next_layer().connect(endpoint_);
  // Bounded reads: a receive timeout makes a blocked read fail instead of hanging the test.
  const timeval ten_seconds{10, 0};
  ASSERT_EQ(setsockopt(ws.next_layer().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &ten_seconds,
                       sizeof ten_seconds),
            0);
  ws.read_message_max(8 << 20);
  ws.handshake("gateway.test", "/beast/chat");
  boost::beast::flat_buffer buffer;
  ws.text(true);
  ws.write(net::buffer(std::string("hello through the gateway")));
  ws.read(buffer);
  EXPECT_EQ(boost::beast::buffers_to_string(buffer.data()), "hello through the gateway");
  EXPECT_TRUE(ws.got_text());
  buffer.consume(buffer.size());
  const std::string big = bigBody(1 << 20);
  ws.binary(true);
  ws.write(net::buffer(big));
  ws.read(buffer);
  EXPECT_TRUE(boost::beast::buffers_to_string(buffer.data()) == big) << "the megabyte changed";
  ws.close(boost::beast::websocket::close_code::normal);
  EXPECT_EQ(gateway_->stats().websockets, 1u);
}

// The client's first bytes arriving just as the upstream's 101 does go through once. (The read
// watching the client for a hang-up completed into the tunnel as it opened, and both it and
// the 101's handler started the client's way: the bytes went up twice, and two reads shared
// the buffer.) Each round times the two as closely as the test can; the old code doubled the
// bytes in about a third of rounds.
TEST_F(WebSocketTest, BytesMeetingThe101GoThroughOnce) {
  for (int round = 0; round < 100; ++round) {
    net::ip::tcp::socket client(raw_io_);
    client.connect(endpoint_);
    client.set_option(net::ip::tcp::no_delay(true));
    net::ip::tcp::socket upstream = acceptRawUpgrade(client);
    ASSERT_TRUE(upstream.is_open()) << round;
    upstream.set_option(net::ip::tcp::no_delay(true));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the gateway awaits the 101
    net::write(upstream, net::buffer(std::string("HTTP/1.1 101 Switching Protocols\r\n"
                                                 "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                                                 "Sec-WebSocket-Accept: x\r\n\r\n")));
    // Right behind the 101, or a few tens of microseconds later (a spin: sleeping is coarser).
    const auto gap = std::chrono::microseconds(round % 5 * 15);
    for (const auto sent = std::chrono::steady_clock::now();
         std::chrono::steady_clock::now() - sent < gap;) {
    }
    const std::string payload = "<" + std::to_string(round) + ">";
    net::write(client, net::buffer(payload + "|end"));
    std::string got;
    while (got.find("|end") == std::string::npos) {
      ASSERT_TRUE(readableWithin10s(upstream.native_handle())) << round << ": got " << got;
      char chunk[4096];
      boost::system::error_code ec;
      got.append(chunk, upstream.read_some(net::buffer(chunk), ec));
      ASSERT_FALSE(ec) << round << ": got " << got;
    }
    EXPECT_EQ(got, payload + "|end") << round;
  }
}

// A 101 that comes once the gateway is shutting down opens no tunnel (which would hold the stop
// up until it ended): the client gets 503.
TEST_F(WebSocketTest, A101DuringShutdownGets503) {
  net::ip::tcp::socket client(raw_io_);
  client.connect(endpoint_);
  net::ip::tcp::socket upstream = acceptRawUpgrade(client);
  ASSERT_TRUE(upstream.is_open());
  gateway_->shutdown();
  net::write(upstream, net::buffer(std::string("HTTP/1.1 101 Switching Protocols\r\n"
                                               "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                                               "Sec-WebSocket-Accept: x\r\n\r\n")));
  std::string answer;
  boost::system::error_code ec;
  while (!ec && readableWithin10s(client.native_handle())) {
    char chunk[4096];
    answer.append(chunk, client.read_some(net::buffer(chunk), ec));
  }
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 503 ")) << answer;
  EXPECT_TRUE(ec == net::error::eof || ec == net::error::connection_reset) << ec.message();
  EXPECT_EQ(gateway_->stats().websockets, 0u);
}

// `Content-Length: 0` says there is no body: such a handshake is one.
TEST_F(WebSocketTest, AHandshakeSayingItHasNoBodyIsOne) {
  auto client = handshake("/ws", "Content-Length: 0\r\n");
  EXPECT_TRUE(client->head.starts_with("HTTP/1.1 101 ")) << client->head;
}

// The handshake is a request like any other: over its limit, it is refused with 429 and never
// reaches the upstream.
TEST_F(WebSocketTest, AHandshakeOverItsLimitIsRefused) {
  for (int i = 0; i < 2; ++i) {
    auto client = handshake("/ws", "X-User: bob\r\nX-Client: c" + std::to_string(i) + "\r\n");
    EXPECT_TRUE(client->head.starts_with("HTTP/1.1 101 ")) << i << ": " << client->head;
  }
  auto refused = handshake("/ws", "X-User: bob\r\nX-Client: c2\r\n");
  EXPECT_TRUE(refused->head.starts_with("HTTP/1.1 429 ")) << refused->head;
  EXPECT_EQ(upstream_.websockets.load(), 2);
}

// An open WebSocket holds its concurrency permit: a second one for the same key is refused
// until the first has closed.
TEST_F(WebSocketTest, AnOpenWebSocketHoldsItsConcurrencyPermit) {
  auto first = handshake("/ws", "X-Client: one\r\n");
  ASSERT_TRUE(first->head.starts_with("HTTP/1.1 101 ")) << first->head;
  auto second = handshake("/ws", "X-Client: one\r\n");
  EXPECT_TRUE(second->head.starts_with("HTTP/1.1 429 ")) << second->head;
  EXPECT_EQ(gateway_->stats().concurrency_denied, 1u);

  boost::beast::error_code ec;
  first->stream.socket().shutdown(net::ip::tcp::socket::shutdown_send, ec);
  ASSERT_TRUE(first->endsWithin10s());
  // The permit goes back as the gateway closes; polled, bounded, not timed.
  bool reopened = false;
  for (int attempt = 0; attempt < 100 && !reopened; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    reopened = handshake("/ws", "X-Client: one\r\n")->head.starts_with("HTTP/1.1 101 ");
  }
  EXPECT_TRUE(reopened);
}

// A tunnel through which nothing passes is closed after websocket_idle_timeout (1 s here), with
// its upstream connection; one in use stays open past it.
TEST_F(WebSocketTest, AnIdleWebSocketIsClosed) {
  auto client = handshake("/ws");
  ASSERT_TRUE(client->head.starts_with("HTTP/1.1 101 ")) << client->head;
  EXPECT_EQ(client->read(5), "hello");
  for (int i = 0; i < 6; ++i) {  // 1.5 s in all, a quarter second apart
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    client->send("tick");
    ASSERT_EQ(client->read(4), "tick") << i;
  }
  EXPECT_TRUE(client->endsWithin10s());
  // The gateway closed the upstream side too (the echo server saw its end of stream).
  for (int attempt = 0; attempt < 100 && upstream_.websockets_ended.load() == 0; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polled, not timed
  }
  EXPECT_EQ(upstream_.websockets_ended.load(), 1);
}

// A client that takes nothing of what the upstream sends ends the tunnel after
// websocket_idle_timeout (1 s here), though it keeps sending a trickle the other way: the way
// toward it has had a write waiting all that time (as nginx's send_timeout). Measured by the
// trickle's sends, which fail once the gateway has closed; the old code kept the tunnel open.
TEST_F(WebSocketTest, AReceiverThatTakesNothingEndsTheTunnel) {
  net::ip::tcp::socket client(raw_io_);
  client.open(net::ip::tcp::v4());
  client.set_option(net::socket_base::receive_buffer_size(4096));  // fills at once
  client.connect(endpoint_);
  net::ip::tcp::socket upstream = acceptRawUpgrade(client);
  ASSERT_TRUE(upstream.is_open());
  net::write(upstream, net::buffer(std::string("HTTP/1.1 101 Switching Protocols\r\n"
                                               "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                                               "Sec-WebSocket-Accept: x\r\n\r\n")));
  // The upstream sends until the gateway stops taking (its writes fail once the tunnel is
  // closed), more than the buffers between it and the client hold.
  std::thread flood([&upstream] {
    const std::string chunk(65536, 'x');
    boost::system::error_code ec;
    for (int i = 0; i < 4096 && !ec; ++i) net::write(upstream, net::buffer(chunk), ec);
  });
  bool closed = false;
  for (int tick = 0; tick < 100 && !closed; ++tick) {  // bounded: 10 s, ten idle timeouts
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    boost::system::error_code ec;
    net::write(client, net::buffer("t", 1), ec);
    closed = ec.failed();
  }
  EXPECT_TRUE(closed) << "the tunnel stayed open with its client taking nothing";
  boost::system::error_code ignored;
  upstream.shutdown(net::ip::tcp::socket::shutdown_both, ignored);  // ends the flood's writes
  flood.join();
}

// Shutting the gateway down closes its tunnels, which have no end of their own.
TEST_F(WebSocketTest, ShutdownClosesTunnels) {
  auto client = handshake("/ws");
  ASSERT_TRUE(client->head.starts_with("HTTP/1.1 101 ")) << client->head;
  gateway_->shutdown();
  EXPECT_TRUE(client->endsWithin10s());
}

// Other upgrades are not passed on (their requests would pass the limits unseen): the upstream
// gets a plain request. An upstream that switches protocols unasked gets the client a 502.
TEST_F(WebSocketTest, OnlyWebSocketUpgradesArePassedOn) {
  sluice::testing::HttpReply h2c = sluice::testing::httpCall(
      endpoint_, boost::beast::http::verb::get, "/ws", "",
      {{"Connection", "Upgrade, HTTP2-Settings"}, {"Upgrade", "h2c"}, {"HTTP2-Settings", "AA"}});
  EXPECT_EQ(h2c.status, 426);
  EXPECT_EQ(h2c.header("x-echo-upgrade"), "");
  EXPECT_EQ(h2c.header("x-echo-http2-settings"), "");
  sluice::testing::HttpReply unasked =
      sluice::testing::httpCall(endpoint_, boost::beast::http::verb::get, "/ws-unasked", "", {});
  EXPECT_EQ(unasked.status, 502);
  EXPECT_EQ(gateway_->stats().websockets, 0u);
}

}  // namespace
}  // namespace sluice::gateway
