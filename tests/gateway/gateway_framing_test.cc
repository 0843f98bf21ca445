// The gateway end to end, at the framing level: requests whose length, host or target could be
// read two ways, chunked bodies whose framing breaks, and upstream answers that cannot be passed
// on as they are. The fixture is gateway_end_to_end.h.
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "gateway/gateway_end_to_end.h"
#include "support/http_client.h"

namespace sluice::gateway {
namespace {

// A Transfer-Encoding that does not end in chunked leaves the body's end unknown: 400 and the
// connection closes, rather than taking the body as no body and its bytes as a next request
// (which would reach the upstream past the guard and the limits). Two Host fields: 400.
TEST_F(GatewayTest, AmbiguousFramingOrHostGets400) {
  for (const std::string coding : {"gzip", "identity", "chunked, identity", ""}) {
    const std::string raw =
        rawExchange("POST /hello HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + coding +
                    "\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(raw.rfind("HTTP/1.1 400", 0), 0u) << coding << ": " << raw.substr(0, 100);
    EXPECT_EQ(answers(raw), 1) << coding;
  }
  for (const std::string request :
       {"POST /hello HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
        "POST /hello HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"}) {
    const std::string raw = rawExchange(request, true);
    EXPECT_TRUE(raw.starts_with("HTTP/1.1 501") || raw.starts_with("HTTP/1.0 400"))
        << request << ": " << raw.substr(0, 100);
  }
  // Refused, its body is still read and dropped before the close: a client that sends it all
  // before reading gets the 400, not a broken pipe.
  const std::string refused = uploadThenRead("/hello", 8 << 20, "Transfer-Encoding: gzip");
  EXPECT_EQ(refused.rfind("HTTP/1.1 400", 0), 0u) << refused.substr(0, 100);
  const std::string two_hosts = rawExchange("GET /hello HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n");
  EXPECT_EQ(two_hosts.rfind("HTTP/1.1 400", 0), 0u) << two_hosts.substr(0, 100);
  EXPECT_EQ(upstream_.requests.load(), 0);
}

// The site and the path must read one way to the gateway and to the upstream: no Host in HTTP/1.1,
// a Host that is no host[:port] (user info, blanks), a backslash (URL parsers read it as '/'),
// or a length an upstream with signed 64-bit lengths reads otherwise, get 400.
TEST_F(GatewayTest, TargetsAndHostsThatReadTwoWaysGet400) {
  for (const std::string request :
       {"GET /hello HTTP/1.1\r\n\r\n", "GET /hello HTTP/1.1\r\nHost: a b\r\n\r\n",
        "GET /hello HTTP/1.1\r\nHost: user@evil.example\r\n\r\n",
        "GET http://user:pw@evil.example/hello HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /\\evil.example/hello HTTP/1.1\r\nHost: x\r\n\r\n",
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 18446744073709551615\r\n\r\n"}) {
    const std::string raw = rawExchange(request, true);
    EXPECT_EQ(raw.rfind("HTTP/1.1 400", 0), 0u) << request << raw.substr(0, 100);
  }
  EXPECT_EQ(upstream_.requests.load(), 0);
  // HTTP/1.0 may leave Host out; a backslash in the query is data.
  EXPECT_EQ(rawExchange("GET /hello?a\\b HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 200", 0), 0u);
}

// A leading "//" reads as an authority to an upstream that resolves the target as a URL
// reference (//evil.example/hello is /hello there): the upstream gets the path the limits read.
TEST_F(GatewayTest, ALeadingDoubleSlashGoesUpstreamAsOne) {
  const std::string raw =
      rawExchange("GET //evil.example/hello?x=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(raw.rfind("HTTP/1.1 200", 0), 0u) << raw.substr(0, 100);
  EXPECT_NE(raw.find("X-Echo-Target: /evil.example/hello?x=1\r\n"), std::string::npos) << raw;
  for (const std::string target : {"//", "///", "http://a//"}) {  // slashes alone: the root
    const std::string root =
        rawExchange("GET " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    EXPECT_NE(root.find("X-Echo-Target: /\r\n"), std::string::npos) << target << ": " << root;
  }
}

// An upstream's transfer coding besides chunked cannot be passed on (its body would reach the
// client de-chunked but still coded): 502. A 204's Content-Length is not passed on.
TEST_F(GatewayTest, UpstreamFramingIsMendedOrRefused) {
  EXPECT_EQ(get("/gzip-coded").status, 502);
  const std::string raw =
      rawExchange("GET /no-content HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(raw.rfind("HTTP/1.1 204", 0), 0u) << raw;
  EXPECT_EQ(raw.find("Content-Length"), std::string::npos) << raw;
}

// Empty lines before a request-line are skipped (RFC 9112 2.2), whether they come behind a body
// or alone before a request: each request is answered, none gets 400.
TEST_F(GatewayTest, EmptyLinesBeforeARequestAreSkipped) {
  const std::string raw = rawExchange(
      "\r\nPOST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok\r\n"
      "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n\n"
      "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(answers(raw), 3) << raw;
  EXPECT_EQ(raw.find("HTTP/1.1 400"), std::string::npos) << raw;
  EXPECT_EQ(upstream_.requests.load(), 3);

  // An empty line on its own, after an answer: it fails the parse that waits for the next
  // request, which starts again without it.
  boost::asio::io_context io;
  boost::beast::tcp_stream stream(io);
  stream.expires_after(std::chrono::seconds(10));
  stream.connect(endpoint_);
  boost::beast::flat_buffer buffer;
  const std::string request = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";
  boost::asio::write(stream, boost::asio::buffer(request));
  EXPECT_EQ(sluice::testing::readReply(stream, buffer).status, 200);
  boost::asio::write(stream, boost::asio::buffer(std::string_view("\r\n")));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // lets it arrive on its own
  boost::asio::write(stream, boost::asio::buffer(request));
  EXPECT_EQ(sluice::testing::readReply(stream, buffer).status, 200);
}

// A body whose chunk framing is broken before any of it went upstream gets 400 (the client's
// error), not a connection closed without a word.
TEST_F(GatewayTest, AMalformedChunkedBodyGets400) {
  const std::string raw = rawExchange(
      "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", true);
  EXPECT_EQ(raw.rfind("HTTP/1.1 400", 0), 0u) << raw.substr(0, 100);
  EXPECT_EQ(upstream_.requests.load(), 0);
}

// The same once part of the body went upstream: the client still hears 400, and the upstream
// connection, holding a partial request, is dropped rather than reused.
TEST_F(GatewayTest, AChunkedBodyBrokenAfterPartWentUpstreamGets400) {
  boost::asio::io_context io;
  boost::beast::tcp_stream stream(io);
  stream.expires_after(std::chrono::seconds(10));
  stream.connect(endpoint_);
  boost::asio::write(stream, boost::asio::buffer(std::string_view(
                                 "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                                 "\r\n5\r\nhello\r\n")));
  // Bounded wait for the head and first chunk to reach the upstream, so the rest arrives after.
  for (int i = 0; i < 1000 && upstream_.heads.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(upstream_.heads.load(), 1);
  boost::asio::write(stream, boost::asio::buffer(std::string_view("zz\r\n")));
  boost::beast::flat_buffer buffer;
  const auto reply = sluice::testing::readReply(stream, buffer);
  EXPECT_EQ(reply.status, 400);
  EXPECT_EQ(upstream_.requests.load(), 0);  // the upstream never got a whole request
  // The upstream connection holding the unfinished request is closed, not parked for reuse (a
  // parked one would stay open for the upstream's 60 s idle_timeout). Bounded wait: 10 s.
  for (int i = 0; i < 1000 && upstream_.cut_mid_body.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(upstream_.cut_mid_body.load(), 1);
  EXPECT_EQ(get("/hello").status, 200);
  EXPECT_EQ(upstream_.requests.load(), 1);
}

// A chunked body's last chunk or trailer ended by a bare LF ("0\n\n") is refused at once (400),
// as a bare LF elsewhere in its framing is; the parser, looking for CR LF CR LF there, used to
// leave the client waiting until client_timeout (30 s here; the read below gives up at 10 s).
TEST_F(GatewayTest, ABareLineFeedEndingAChunkedBodyGets400) {
  for (const std::string ending : {"0\n\n", "0\r\n\n", "0\r\nX-Trailer: 1\n\r\n", "0;x=1\n\r\n"}) {
    const std::string raw = rawExchange(
        "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + ending);
    EXPECT_EQ(raw.rfind("HTTP/1.1 400", 0), 0u) << ending << ": " << raw.substr(0, 100);
  }
  EXPECT_EQ(upstream_.requests.load(), 0);
}

// The same from the upstream: 502 at once, not a wait for response_timeout's 504.
TEST_F(GatewayTest, ABareLineFeedEndingAChunkedResponseGets502) {
  EXPECT_EQ(get("/bare-lf-last-chunk").status, 502);
  EXPECT_EQ(gateway_->stats().upstream_failed, 1u);
  EXPECT_EQ(gateway_->stats().upstream_timed_out, 0u);
}

// A chunked body's trailer field too long for Beast's fields (65,534 bytes or more), or trailer
// fields past max_header_bytes in all, are refused like an over-long header block; the field
// made Beast throw out of the read, which ended the process. Both ways: the client's request
// (431), and the upstream's answer (a failure of the upstream).
TEST_F(GatewayTest, TrailersOverTheLimitAreRefusedAndTheGatewayGoesOn) {
  std::string many_fields;
  for (int i = 0; i < 40; ++i)
    many_fields += "X-" + std::to_string(i) + ": " + std::string(1'000, 'b') + "\r\n";
  for (const std::string& trailer : {"X-Big: " + std::string(70'000, 'a') + "\r\n",
                                     std::string(70'000, 'n') + ": v\r\n", many_fields}) {
    const std::string raw = rawExchange(
        "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n" +
            trailer + "\r\n",
        true);
    EXPECT_TRUE(raw.starts_with("HTTP/1.1 431") || raw.starts_with("HTTP/1.1 400"))
        << trailer.substr(0, 20) << ": " << raw.substr(0, 100);
  }
  // The answer's head and first chunk had gone on when its trailer came: the client's connection
  // is cut, as for any upstream failure mid-body, and no complete answer reaches it.
  EXPECT_NE(get("/huge-trailer").status, 200);
  EXPECT_EQ(get("/hello").status, 200);  // still serving
}

// Host goes upstream even when the client lists it in Connection (which names hop-by-hop
// fields): the upstream must not be left to guess the site.
TEST_F(GatewayTest, HostIsKeptWhateverConnectionLists) {
  const std::string raw =
      rawExchange("GET /hello HTTP/1.1\r\nHost: the-site\r\nConnection: host, close\r\n\r\n");
  EXPECT_EQ(raw.rfind("HTTP/1.1 200", 0), 0u) << raw.substr(0, 100);
  EXPECT_NE(raw.find("X-Echo-host: the-site\r\n"), std::string::npos) << raw;
}

// An upstream status outside 100..599 is invalid (RFC 9110 15): 502, never an invalid status
// line passed on.
TEST_F(GatewayTest, AnInvalidUpstreamStatusGets502) {
  EXPECT_EQ(get("/bad-status").status, 502);
  EXPECT_EQ(gateway_->stats().upstream_failed, 1u);
}

}  // namespace
}  // namespace sluice::gateway
