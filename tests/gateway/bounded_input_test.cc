// What the gateway holds of a message it is still parsing is bounded: a chunk-size line that
// never ends, from a client or from an upstream, is refused once it passes what a header may
// hold, instead of growing the gateway's memory until a timeout.
#include <string>

#include <gtest/gtest.h>
#include <boost/asio/write.hpp>

#include "gateway/gateway_fixture.h"
#include "support/http_client.h"

namespace sluice::gateway {
namespace {

namespace net = boost::asio;

constexpr const char* kBoundedConfig = R"(
limits:
  - { name: everyone, key: global, rate: 100000/s }
gateway:
  listen: 127.0.0.1:0
  upstreams: { app: UPSTREAM }
  routes: [ { path_prefix: /, upstream: app } ]
)";

class BoundedInputTest : public sluice::testing::GatewayFixture {
 protected:
  void SetUp() override { start(kBoundedConfig); }
};

// A client's chunk-size line that never ends gets 400 (the gateway held it all, hundreds of
// megabytes a second, until client_timeout, and answered nothing).
TEST_F(BoundedInputTest, AClientsEndlessChunkLineGets400) {
  net::io_context io;
  boost::beast::tcp_stream stream(io);
  stream.connect(endpoint_);
  const std::string head = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1;";
  boost::beast::error_code ec;
  net::write(stream.socket(), net::buffer(head), ec);
  const std::string extension(1 << 20, 'a');
  for (int sent = 0; sent < 4 && !ec; ++sent) {  // 4 MiB, or until the gateway stops reading
    net::write(stream.socket(), net::buffer(extension), ec);
  }
  stream.socket().shutdown(net::ip::tcp::socket::shutdown_send, ec);
  std::string answer;
  char chunk[4096];
  stream.expires_after(std::chrono::seconds(10));  // a watchdog: the gateway closes long before
  for (;;) {
    const std::size_t got = stream.read_some(net::buffer(chunk), ec);
    if (ec) break;
    answer.append(chunk, got);
  }
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 400")) << answer.substr(0, 200);
  EXPECT_EQ(upstream_.requests.load(), 0);  // the upstream never saw a partial request
}

// An upstream's endless chunk-size line gets the client a 502.
TEST_F(BoundedInputTest, AnUpstreamsEndlessChunkLineGets502) {
  const sluice::testing::HttpReply reply = sluice::testing::httpCall(
      endpoint_, boost::beast::http::verb::get, "/endless-chunk-line", "", {});
  EXPECT_EQ(reply.status, 502);
  EXPECT_EQ(gateway_->stats().upstream_failed, 1u);
}

}  // namespace
}  // namespace sluice::gateway
