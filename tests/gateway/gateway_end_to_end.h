// The gateway end to end, the fixture its tests share: a real upstream on 127.0.0.1
// (test_upstream.h), the gateway in front of it with the configuration below, and helpers that
// speak raw HTTP to it. gateway_test.cc covers what goes through (forwarding, limits, streaming,
// connection reuse); gateway_client_side_test.cc concurrency slots, hang-ups, pipelining and the
// guard; gateway_framing_test.cc what is refused or mended at the framing level (ambiguous
// lengths and hosts, broken chunked bodies, bad upstream answers).
#pragma once

#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "gateway/gateway_fixture.h"
#include "support/http_client.h"

namespace sluice::gateway {

inline constexpr const char* kGatewayConfig = R"(
limits:
  - { name: limited, match: { path_prefix: /limited }, key: ip, algorithm: fixed_window, rate: 2/min }
  - name: slowed
    match: { path_prefix: /slowed }
    key: ip
    algorithm: gcra
    rate: 10/s
    burst: 1
    action: throttle
    max_delay: 2s
  - name: held
    match: { path_prefix: /held }
    key: ip
    algorithm: gcra
    rate: 1/s
    burst: 1
    action: throttle
    max_delay: 5s
  - { name: watched, match: { path_prefix: /watched }, key: ip, rate: 1/min, burst: 1, action: shadow }
  - { name: paced, match: { path_prefix: /paced/held }, key: ip, algorithm: gcra, rate: 1/s, burst: 1, action: throttle, max_delay: 5s }
  - { name: paced-cap, match: { path_prefix: /paced }, key: ip, algorithm: fixed_window, rate: 2/min }
  - { name: monitored, match: { path_prefix: /monitored }, key: ip, rate: 1/min, burst: 1 }
  - { name: everyone, key: global, rate: 100000/s }
gateway:
  listen: 127.0.0.1:0
  response_timeout: 1s  # an 8 MB echo under ASan on two busy cores took over 300 ms
  upstreams:
    app: UPSTREAM
    nowhere: 127.0.0.1:1
  routes:
    - { path_prefix: /monitored, upstream: app, mode: monitor }
    - { path_prefix: /down, upstream: nowhere }
    - { path_prefix: /, upstream: app }
  concurrency:
    - { name: one-at-a-time, match: { path_prefix: /slow }, key: ip, max_in_flight: 1 }
)";

class GatewayTest : public sluice::testing::GatewayFixture {
 protected:
  void SetUp() override { start(kGatewayConfig); }

  sluice::testing::HttpReply get(
      const std::string& target,
      const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    return sluice::testing::httpCall(endpoint_, boost::beast::http::verb::get, target, "", headers);
  }

  // POSTs `body_bytes` to `target` on a new connection the way Python's http.client does (the
  // whole body, then the answer), and returns everything the gateway sent until it closed the
  // connection. `framing`, when given, replaces the Content-Length line.
  std::string uploadThenRead(const std::string& target, std::size_t body_bytes,
                             const std::string& framing = "") {
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket socket(io);
    socket.connect(endpoint_);
    const std::string head =
        "POST " + target + " HTTP/1.1\r\nHost: x\r\n" +
        (framing.empty() ? "Content-Length: " + std::to_string(body_bytes) : framing) + "\r\n\r\n";
    boost::system::error_code ec;
    boost::asio::write(socket, boost::asio::buffer(head), ec);
    const std::string chunk(1 << 20, 'x');
    for (std::size_t sent = 0; sent < body_bytes && !ec; sent += chunk.size())
      boost::asio::write(socket, boost::asio::buffer(chunk), ec);
    // The gateway reads and drops what it will not forward: the writes all go through.
    EXPECT_FALSE(ec) << target << ": writing the body failed: " << ec.message();
    std::string answer;
    char bytes[4096];
    for (;;) {  // until the gateway closes; its linger is bounded, and so is this
      const std::size_t got = socket.read_some(boost::asio::buffer(bytes), ec);
      if (ec) break;
      answer.append(bytes, got);
    }
    return answer;
  }

  // Sends `bytes` on a new connection (then half-closes it, when asked) and returns everything
  // the gateway sent until it closed the connection.
  std::string rawExchange(const std::string& bytes, bool half_close = false) {
    boost::asio::io_context io;
    boost::beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::seconds(10));
    stream.connect(endpoint_);
    boost::asio::write(stream, boost::asio::buffer(bytes));
    boost::beast::error_code ec;
    if (half_close) stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ec);
    std::string answer;
    char chunk[4096];
    for (;;) {  // until the gateway closes, or the stream's 10 s expiry
      const std::size_t got = stream.read_some(boost::asio::buffer(chunk), ec);
      if (ec) break;
      answer.append(chunk, got);
    }
    return answer;
  }

  // How many answers `raw` holds, by their status lines.
  static int answers(const std::string& raw) {
    int count = 0;
    for (std::size_t at = raw.find("HTTP/1.1 "); at != std::string::npos;
         at = raw.find("HTTP/1.1 ", at + 1)) {
      ++count;
    }
    return count;
  }

  // Connects `stream` and sends a request the upstream answers after 200 ms; returns once the
  // upstream has it, so what the client sends next arrives while the gateway waits.
  void startSlowRequest(boost::beast::tcp_stream& stream) {
    stream.connect(endpoint_);
    const std::string first = "GET /slow?ms=200 HTTP/1.1\r\nHost: x\r\n\r\n";
    boost::asio::write(stream, boost::asio::buffer(first));
    for (int i = 0; i < 400 && upstream_.in_flight.load() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // bounded: 2 s
    }
  }
};

}  // namespace sluice::gateway
