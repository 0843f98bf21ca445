// What the proxy changes in the messages it passes on.
#include "gateway/forwarding.h"

#include <array>
#include <string_view>

#include <gtest/gtest.h>
#include <boost/beast/http/empty_body.hpp>

namespace sluice::gateway {
namespace {

namespace bhttp = boost::beast::http;

// The fixed hop-by-hop list and the names Connection lists, in any case.
TEST(ForwardingTest, HopByHop) {
  EXPECT_TRUE(isHopByHop("Keep-Alive", ""));
  EXPECT_TRUE(isHopByHop("transfer-encoding", ""));
  EXPECT_TRUE(isHopByHop("X-Private", "close, x-private"));
  EXPECT_FALSE(isHopByHop("X-Private", "close"));
  EXPECT_FALSE(isHopByHop("Content-Type", "keep-alive"));
}

// The upstream request: HTTP/1.1, hop-by-hop and Expect gone, forwarding headers appended,
// framing re-stated, extra headers last.
TEST(ForwardingTest, UpstreamRequestHead) {
  bhttp::request<bhttp::empty_body> request{bhttp::verb::post, "/a?b=1", 10};
  request.set("Host", "example.com");
  request.set("Connection", "X-Trace");
  request.set("X-Trace", "1");
  request.set("Expect", "100-continue");
  request.set("Content-Length", "5");
  request.set("X-Forwarded-For", "203.0.113.1");
  request.set("X-Sluice-Decision", "allow");
  std::string out;
  appendUpstreamRequestHead(request.base(), "127.0.0.1", "10.0.0.9:8080", Framing::kLength, 5,
                            false, {{"X-Sluice-Decision", "deny"}}, out);
  EXPECT_EQ(out,
            "POST /a?b=1 HTTP/1.1\r\nHost: example.com\r\n"
            "X-Forwarded-For: 203.0.113.1, 127.0.0.1\r\nX-Forwarded-Proto: http\r\n"
            "Content-Length: 5\r\nX-Sluice-Decision: deny\r\n\r\n");
}

// CGI, WSGI and Rack read '_' in a field name as '-': a client's X_Sluice_Decision or
// X_Forwarded_For would reach them as the gateway's own field, so neither goes on.
TEST(ForwardingTest, UnderscoreSpellingsOfTheGatewaysFieldsAreDropped) {
  bhttp::request<bhttp::empty_body> request{bhttp::verb::get, "/", 11};
  request.set("Host", "example.com");
  request.insert("X_Sluice_Decision", "allow");
  request.insert("x-sluice_status", "200");
  request.insert("X_Forwarded_For", "203.0.113.9");
  request.insert("X_Forwarded_Proto", "https");
  request.insert("X_Forwarded_Fort", "kept");
  request.insert("X_Trace_Id", "kept");
  std::string out;
  appendUpstreamRequestHead(request.base(), "127.0.0.1", "10.0.0.9:8080", Framing::kNone, 0, false,
                            {}, out);
  EXPECT_EQ(out,
            "GET / HTTP/1.1\r\nHost: example.com\r\nX_Forwarded_Fort: kept\r\n"
            "X_Trace_Id: kept\r\nX-Forwarded-For: 127.0.0.1\r\nX-Forwarded-Proto: http\r\n\r\n");
}

// The gateway's own lines carry names from outside (a webhook's keys in X-Sluice-Limit): a CR
// or LF in one must not end the line and start a header, or a request, of its own.
TEST(ForwardingTest, ExtraLinesCannotBreakTheHead) {
  bhttp::request<bhttp::empty_body> request{bhttp::verb::get, "/", 11};
  request.set("Host", "example.com");
  std::string out;
  appendUpstreamRequestHead(request.base(), "127.0.0.1", "10.0.0.9:8080", Framing::kNone, 0, false,
                            {{"X-Sluice-Limit", "dynamic:a\r\nX-Injected: yes\r\n\r\nGET /"}}, out);
  EXPECT_EQ(out.find("\r\nX-Injected"), std::string::npos) << out;
  EXPECT_NE(out.find("X-Sluice-Limit: dynamic:a  X-Injected: yes    GET /\r\n\r\n"),
            std::string::npos)
      << out;
}

// An HTTP/1.0 request may come without Host; sent on as HTTP/1.1 it must have one (nginx and
// Go servers answer 400 without), so it gets the upstream's address, as nginx sends.
TEST(ForwardingTest, RequestWithoutHostGetsTheUpstreams) {
  bhttp::request<bhttp::empty_body> request{bhttp::verb::get, "/health", 10};
  std::string out;
  appendUpstreamRequestHead(request.base(), "127.0.0.1", "10.0.0.9:8080", Framing::kNone, 0, false,
                            {}, out);
  EXPECT_EQ(out,
            "GET /health HTTP/1.1\r\nHost: 10.0.0.9:8080\r\n"
            "X-Forwarded-For: 127.0.0.1\r\nX-Forwarded-Proto: http\r\n\r\n");
}

// Connection may be split over several lines: the names on every one are hop-by-hop.
TEST(ForwardingTest, EveryConnectionLineNamesHopByHopHeaders) {
  bhttp::request<bhttp::empty_body> request{bhttp::verb::get, "/", 11};
  request.insert("Host", "example.com");
  request.insert("Connection", "keep-alive");
  request.insert("Connection", "X-Hop");
  request.insert("X-Hop", "1");
  std::string out;
  appendUpstreamRequestHead(request.base(), "127.0.0.1", "10.0.0.9:8080", Framing::kNone, 0, false,
                            {}, out);
  EXPECT_EQ(out.find("X-Hop"), std::string::npos) << out;
  bhttp::response<bhttp::empty_body> response{bhttp::status::ok, 11};
  response.insert("Connection", "keep-alive");
  response.insert("Connection", "X-Hop");
  response.insert("X-Hop", "1");
  out.clear();
  appendClientResponseHead(response.base(), 11, Framing::kNone, std::nullopt, true, "", out);
  EXPECT_EQ(out.find("X-Hop"), std::string::npos) << out;
}

// The client response: the upstream's status, chunked re-stated, Connection: close when closing.
TEST(ForwardingTest, ClientResponseHead) {
  bhttp::response<bhttp::empty_body> response{bhttp::status::created, 11};
  response.set("Transfer-Encoding", "chunked");
  response.set("Keep-Alive", "timeout=5");
  response.set("ETag", "\"x\"");
  std::string out;
  appendClientResponseHead(response.base(), 11, Framing::kChunked, std::nullopt, false,
                           "X-RateLimit-Limit: 10\r\n", out);
  EXPECT_EQ(out,
            "HTTP/1.1 201 Created\r\nETag: \"x\"\r\nTransfer-Encoding: chunked\r\n"
            "Connection: close\r\nX-RateLimit-Limit: 10\r\n\r\n");
}

// An upstream that sends rate-limit fields of its own: the gateway's replace those that are not
// lists (a second X-RateLimit-Remaining line breaks RFC 9110 5.3, and clients read the first,
// the upstream's), in any case; the IETF lists combine, so the upstream's policies stay in view.
TEST(ForwardingTest, TheGatewaysRateLimitFieldsReplaceTheUpstreamsButForLists) {
  bhttp::response<bhttp::empty_body> response{bhttp::status::ok, 11};
  response.set("x-ratelimit-limit", "100");
  response.set("X-RateLimit-Remaining", "99");
  response.set("RateLimit", "\"app\";r=99;t=60");
  response.set("X-Other", "kept");
  const std::string_view gateway_lines =
      "X-RateLimit-Limit: 3\r\nX-RateLimit-Remaining: 2\r\nRateLimit: \"fw\";r=2;t=60\r\n";
  const std::array<std::string_view, 2> lists = {"RateLimit", "RateLimit-Policy"};
  std::string out;
  appendClientResponseHead(response.base(), 11, Framing::kNone, std::nullopt, true, gateway_lines,
                           out, lists);
  EXPECT_EQ(
      out,
      "HTTP/1.1 200 OK\r\nRateLimit: \"app\";r=99;t=60\r\nX-Other: kept\r\n"
      "X-RateLimit-Limit: 3\r\nX-RateLimit-Remaining: 2\r\nRateLimit: \"fw\";r=2;t=60\r\n\r\n");
}

// HTTP/1.0 clients never get chunks; a read-until-close body becomes chunks for 1.1 clients.
TEST(ForwardingTest, ClientFraming) {
  EXPECT_EQ(clientFraming(Framing::kChunked, 10), Framing::kUntilClose);
  EXPECT_EQ(clientFraming(Framing::kUntilClose, 11), Framing::kChunked);
  EXPECT_EQ(clientFraming(Framing::kLength, 10), Framing::kLength);
  std::string line;
  appendChunkHeader(65536, line);
  EXPECT_EQ(line, "10000\r\n");
}

// Only an HTTP/1.1 GET naming "upgrade" in Connection and "websocket" in Upgrade becomes a
// WebSocket; any other upgrade would carry requests past the limits, and is not passed on.
TEST(ForwardingTest, WantsWebSocket) {
  const auto asks = [](bhttp::verb method, unsigned version, std::string_view connection,
                       std::string_view upgrade) {
    bhttp::request<bhttp::empty_body> request{method, "/chat", version};
    if (!connection.empty()) request.set("Connection", connection);
    if (!upgrade.empty()) request.set("Upgrade", upgrade);
    return wantsWebSocket(request.base());
  };
  EXPECT_TRUE(asks(bhttp::verb::get, 11, "Upgrade", "websocket"));
  EXPECT_TRUE(asks(bhttp::verb::get, 11, "keep-alive, UPGRADE", "WebSocket"));
  EXPECT_FALSE(asks(bhttp::verb::get, 11, "Upgrade", "h2c"));
  EXPECT_FALSE(asks(bhttp::verb::get, 11, "keep-alive", "websocket"));
  EXPECT_FALSE(asks(bhttp::verb::get, 11, "Upgrade", ""));
  EXPECT_FALSE(asks(bhttp::verb::get, 10, "Upgrade", "websocket"));
  EXPECT_FALSE(asks(bhttp::verb::post, 11, "Upgrade", "websocket"));
}

// A WebSocket request goes upstream with its handshake headers and the upgrade re-stated; the
// 101 comes back with the upstream's end-to-end headers and the gateway's lines.
TEST(ForwardingTest, WebSocketHeads) {
  bhttp::request<bhttp::empty_body> request{bhttp::verb::get, "/chat", 11};
  request.set("Host", "example.com");
  request.set("Connection", "Upgrade");
  request.set("Upgrade", "websocket");
  request.set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==");
  request.set("Sec-WebSocket-Version", "13");
  std::string out;
  appendUpstreamRequestHead(request.base(), "127.0.0.1", "10.0.0.9:8080", Framing::kNone, 0, true,
                            {}, out);
  EXPECT_EQ(out,
            "GET /chat HTTP/1.1\r\nHost: example.com\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            "X-Forwarded-For: 127.0.0.1\r\nX-Forwarded-Proto: http\r\n"
            "Connection: upgrade\r\nUpgrade: websocket\r\n\r\n");
  bhttp::response<bhttp::empty_body> response{bhttp::status::switching_protocols, 11};
  response.set("Upgrade", "websocket");
  response.set("Connection", "Upgrade");
  response.set("Sec-WebSocket-Accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  EXPECT_TRUE(acceptsWebSocket(response.base()));
  out.clear();
  appendWebSocketAcceptHead(response.base(), "X-RateLimit-Limit: 10\r\n", out);
  EXPECT_EQ(out,
            "HTTP/1.1 101 Switching Protocols\r\n"
            "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
            "Connection: upgrade\r\nUpgrade: websocket\r\nX-RateLimit-Limit: 10\r\n\r\n");
  response.set("Upgrade", "h2c");
  EXPECT_FALSE(acceptsWebSocket(response.base()));
}

}  // namespace
}  // namespace sluice::gateway
