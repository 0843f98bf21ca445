// The gateway end to end: a real upstream on 127.0.0.1, the gateway in front of it, real HTTP:
// what goes through (forwarding, limits, streaming, connection reuse). The client's side
// (concurrency, hang-ups, pipelining, the guard) is in gateway_client_side_test.cc, the
// framing-level refusals in gateway_framing_test.cc; the fixture is gateway_end_to_end.h.
#include "gateway/gateway.h"

#include <charconv>
#include <chrono>
#include <future>
#include <thread>

#include <gtest/gtest.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include "gateway/gateway_end_to_end.h"
#include "support/http_client.h"

namespace sluice::gateway {
namespace {

namespace http = boost::beast::http;
using sluice::testing::bigBody;
using sluice::testing::httpCall;
using sluice::testing::HttpReply;

// An allowed request reaches the upstream and comes back with the rate-limit headers.
TEST_F(GatewayTest, ForwardsAllowedRequestsWithRateLimitHeaders) {
  const HttpReply reply = get("/hello?x=1");
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body, "ok");
  EXPECT_EQ(reply.header("x-ratelimit-limit"), "100000");
  EXPECT_FALSE(reply.header("ratelimit-policy").empty());
  EXPECT_EQ(reply.header("x-echo-x-forwarded-for"), "127.0.0.1");
  EXPECT_EQ(reply.header("x-echo-x-forwarded-proto"), "http");
  EXPECT_EQ(reply.header("x-echo-host"), "127.0.0.1");
}

// An upstream that reports a limit of its own: the gateway's X-RateLimit-* replace its fields
// (a second line of one breaks RFC 9110 5.3, and clients read the first, the upstream's looser
// one), while the IETF RateLimit items of both reach the client.
TEST_F(GatewayTest, ItsRateLimitFieldsReplaceTheUpstreamsButForTheIetfLists) {
  const std::string raw =
      rawExchange("GET /own-rate-limit-fields HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  const std::string head = raw.substr(0, raw.find("\r\n\r\n") + 2);
  const auto lines = [&](std::string_view name) {
    std::size_t count = 0;
    for (std::size_t at = head.find("\r\n"); at != std::string::npos;
         at = head.find("\r\n", at + 2)) {
      const std::string_view line = std::string_view(head).substr(at + 2);
      count += line.size() > name.size() && line[name.size()] == ':' &&
               boost::beast::iequals(line.substr(0, name.size()), name);
    }
    return count;
  };
  EXPECT_EQ(lines("X-RateLimit-Limit"), 1u) << head;
  EXPECT_EQ(lines("X-RateLimit-Remaining"), 1u) << head;
  EXPECT_NE(head.find("X-RateLimit-Limit: 100000\r\n"), std::string::npos) << head;
  EXPECT_EQ(lines("RateLimit"), 2u) << head;
  EXPECT_NE(head.find("RateLimit: \"app\";r=99;t=60\r\n"), std::string::npos) << head;
}

// Hop-by-hop headers (and those Connection names) stop at the gateway; forwarding headers are
// appended to what the client sent; a client cannot forge the monitor verdict.
TEST_F(GatewayTest, RemovesHopByHopHeadersAndAppendsForwardingHeaders) {
  const HttpReply reply = get("/hello", {{"Connection", "keep-alive, X-Private"},
                                         {"X-Private", "secret"},
                                         {"Keep-Alive", "timeout=5"},
                                         {"TE", "trailers"},
                                         {"X-Forwarded-For", "203.0.113.7"},
                                         {"X-Sluice-Decision", "allow"}});
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.header("x-echo-x-private"), "");
  EXPECT_EQ(reply.header("x-echo-keep-alive"), "");
  EXPECT_EQ(reply.header("x-echo-te"), "");
  EXPECT_EQ(reply.header("x-echo-x-sluice-decision"), "");
  EXPECT_EQ(reply.header("x-echo-x-forwarded-for"), "203.0.113.7, 127.0.0.1");
}

// Over the limit: the limit's status, the JSON body and Retry-After; the upstream is not asked.
TEST_F(GatewayTest, DeniesOverTheLimitWithJsonBody) {
  EXPECT_EQ(get("/limited").status, 200);
  EXPECT_EQ(get("/limited").status, 200);
  const int before = upstream_.requests.load();
  const HttpReply denied = get("/limited");
  EXPECT_EQ(denied.status, 429);
  EXPECT_NE(denied.body.find("\"error\":\"rate_limited\""), std::string::npos) << denied.body;
  EXPECT_NE(denied.body.find("\"limit\":\"limited\""), std::string::npos) << denied.body;
  EXPECT_FALSE(denied.header("retry-after").empty());
  EXPECT_EQ(denied.header("content-type"), "application/json");
  EXPECT_EQ(upstream_.requests.load(), before);
  EXPECT_EQ(gateway_->stats().denied, 1u);
}

// A request refused without its body being read (here over its limit) is answered, and the
// body it is still sending is read and dropped before the connection closes: a client that
// writes its whole body before reading (as Python's http.client does) gets the 429, not a reset.
TEST_F(GatewayTest, ARefusedUploadStillGetsItsAnswer) {
  EXPECT_EQ(get("/limited").status, 200);
  EXPECT_EQ(get("/limited").status, 200);
  const std::string answer = uploadThenRead("/limited", 16 << 20);
  EXPECT_EQ(answer.rfind("HTTP/1.1 429", 0), 0u) << answer.substr(0, 200);
}

// An upstream that answers before it has read the whole body (a 413 for an upload too large)
// has its answer passed on, whether it then closes the connection (a reset: the body is unread)
// or keeps it open and stops reading, also behind an interim 100; not a 502 for the failed
// write, nor a 504 for the stalled one. The connection closes after the answer.
TEST_F(GatewayTest, AnAnswerBeforeTheWholeBodyIsPassedOn) {
  for (const std::string target : {"/early-close", "/early-hold", "/early-interim-hold"}) {
    const std::string answer = uploadThenRead(target, 8 << 20);
    EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << target << ": " << answer.substr(0, 200);
    EXPECT_NE(answer.find("Connection: close"), std::string::npos) << target;
    EXPECT_TRUE(answer.ends_with("\r\n\r\ntoo large")) << target;
  }
  EXPECT_EQ(gateway_->stats().upstream_failed, 0u);
  EXPECT_EQ(gateway_->stats().upstream_timed_out, 0u);
}

// One kept-alive client connection to the gateway, for requests that must share it (and so the
// gateway's loop and its parked upstream connections) or that httpCall cannot send.
class ClientConnection {
 public:
  explicit ClientConnection(const boost::asio::ip::tcp::endpoint& gateway) : stream_(io_) {
    stream_.expires_after(std::chrono::seconds(10));
    stream_.connect(gateway);
  }
  template <class Body>
  HttpReply send(http::request<Body> request) {
    request.set(http::field::host, "127.0.0.1");
    http::write(stream_, request);
    return sluice::testing::readReply(stream_, buffer_);
  }

 private:
  boost::asio::io_context io_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
};

// An absolute-form target is the path it names: counted against /limited as /limited, and
// forwarded as its path with its authority as Host. A target that is not a path gets 400.
TEST_F(GatewayTest, AnAbsoluteFormTargetIsThePathItNames) {
  const auto send = [&](const std::string& target) {
    return ClientConnection(endpoint_).send(
        http::request<http::empty_body>{http::verb::get, target, 11});
  };
  EXPECT_EQ(send("http://x/limited").status, 200);
  EXPECT_EQ(send("HTTP://x/limited?a=1").status, 200);
  EXPECT_EQ(send("http://x/limited").status, 429);
  const HttpReply echoed = send("http://example.test:81/echo");
  EXPECT_EQ(echoed.status, 200);
  EXPECT_EQ(echoed.header("x-echo-host"), "example.test:81");
  EXPECT_EQ(send("limited").status, 400);
  // CONNECT asks for a tunnel, with whatever target: 400, and nothing reaches the upstream.
  const int requests_before = upstream_.requests.load();
  for (const std::string target : {"127.0.0.1:80", "/echo"}) {
    const HttpReply tunnel = ClientConnection(endpoint_).send(
        http::request<http::empty_body>{http::verb::connect, target, 11});
    EXPECT_EQ(tunnel.status, 400) << target;
    EXPECT_NE(tunnel.body.find("tunnel"), std::string::npos) << target << ": " << tunnel.body;
  }
  EXPECT_EQ(upstream_.requests.load(), requests_before);
}

// A throttled request waits for its slot (up to 100 ms at 10/s) and then goes through. It is
// held at least as long as its header says (in whole ms, rounded up): a timer never fires
// early, so this bound holds on a machine of any speed.
TEST_F(GatewayTest, ThrottlesThenForwards) {
  EXPECT_EQ(get("/slowed").status, 200);
  const auto started = std::chrono::steady_clock::now();
  const HttpReply held = get("/slowed");
  const auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(held.status, 200);
  int delayed_ms = 0;
  const std::string delayed = held.header("x-ratelimit-delayed-ms");
  ASSERT_EQ(std::from_chars(delayed.data(), delayed.data() + delayed.size(), delayed_ms).ec,
            std::errc{})
      << "X-RateLimit-Delayed-Ms: '" << delayed << "'";
  EXPECT_GT(delayed_ms, 0);
  EXPECT_LE(delayed_ms, 100);
  EXPECT_GT(waited, std::chrono::milliseconds(delayed_ms - 1));  // the header rounds up
  EXPECT_EQ(gateway_->stats().throttled, 1u);
}

// The gateway's decisions show in the service's decision metrics, as the API's do: in gateway
// mode it is the door that decides, and /metrics said nothing of it.
TEST_F(GatewayTest, DecisionsAreCountedInTheServiceMetrics) {
  for (const int expected : {200, 200, 429}) EXPECT_EQ(get("/limited").status, expected);
  for (int i = 0; i < 2; ++i) {
    const HttpReply slowed = get("/slowed");
    EXPECT_EQ(slowed.status, 200) << slowed.body;
  }
  for (int i = 0; i < 2; ++i) EXPECT_EQ(get("/watched").status, 200);
  const std::string metrics = metrics_.render(0);
  for (const std::string series :
       {"{limit=\"limited\",result=\"allowed\"} 2", "{limit=\"limited\",result=\"denied\"} 1",
        "{limit=\"slowed\",result=\"allowed\"} 2", "{limit=\"slowed\",result=\"throttled\"} 1",
        "{limit=\"watched\",result=\"shadow_denied\"} 1",
        "{limit=\"everyone\",result=\"allowed\"} 6"}) {
    EXPECT_NE(metrics.find("sluice_decisions_total" + series + "\n"), std::string::npos)
        << series << "\n"
        << metrics;
  }
  EXPECT_EQ(metrics.find("sluice_decision_duration_seconds_count 0\n"), std::string::npos)
      << metrics;
}

// A shadow limit never blocks; the response names it.
TEST_F(GatewayTest, ShadowLimitForwardsWithHeader) {
  EXPECT_EQ(get("/watched").header("x-ratelimit-shadow"), "");
  const HttpReply over = get("/watched");
  EXPECT_EQ(over.status, 200);
  EXPECT_EQ(over.header("x-ratelimit-shadow"), "watched");
}

// A refusal because the store could not decide says so, as /v1/auth's does: a client (or an
// operator reading the answers) can tell an outage from its own excess.
TEST_F(GatewayTest, ARefusalTheStoreCouldNotDecideSaysItIsDegraded) {
  EXPECT_EQ(get("/limited").header("x-ratelimit-degraded"), "");
  store_.unavailable = true;
  const HttpReply refused = get("/limited");
  EXPECT_EQ(refused.status, 429);
  EXPECT_EQ(refused.header("x-ratelimit-degraded"), "true");
  EXPECT_NE(refused.body.find("could not check"), std::string::npos) << refused.body;
}

// A request held by a throttle and refused when its turn comes (another limit used up meanwhile)
// says how long it was held, as /v1/auth's refusal does: here a second's pace, during which
// another request takes the last unit of the cap both share.
TEST_F(GatewayTest, ARefusalAfterAHoldSaysHowLongItWasHeld) {
  EXPECT_EQ(get("/paced/held").status, 200);  // the pace's unit, and one of the cap's two
  auto held = std::async(std::launch::async, [this] { return get("/paced/held"); });
  // The held request is counted as throttled once it waits: then the cap's last unit goes.
  for (int i = 0; i < 1000 && gateway_->stats().throttled == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling, not timing
  }
  ASSERT_EQ(gateway_->stats().throttled, 1u);
  EXPECT_EQ(get("/paced/other").status, 200);
  const HttpReply refused = held.get();
  EXPECT_EQ(refused.status, 429);
  EXPECT_NE(refused.body.find("paced-cap"), std::string::npos) << refused.body;
  EXPECT_FALSE(refused.header("x-ratelimit-delayed-ms").empty());
}

// Monitor mode: the client always gets the upstream's answer; the upstream gets the verdict.
TEST_F(GatewayTest, MonitorRoutePassesTheVerdictToTheUpstream) {
  const HttpReply first = get("/monitored");
  EXPECT_EQ(first.status, 200);
  EXPECT_EQ(first.header("x-echo-x-sluice-decision"), "allow");
  const HttpReply second = get("/monitored");
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(second.header("x-echo-x-sluice-decision"), "deny");
  EXPECT_EQ(second.header("x-echo-x-sluice-limit"), "monitored");
  EXPECT_EQ(second.header("x-echo-x-sluice-status"), "429");
  EXPECT_FALSE(second.header("x-echo-x-sluice-retry-after").empty());
  EXPECT_EQ(second.header("x-ratelimit-limit"), "");  // nothing tells the client
  EXPECT_EQ(gateway_->stats().monitor_denied, 1u);
  // A path whose readings fall under routes of different modes is refused: /..;/monitored is
  // /monitored to Tomcat and under / to nginx, and its spelling must not choose the mode.
  EXPECT_EQ(get("/..;/monitored").status, 400);
  EXPECT_EQ(get("/a%2F..%2Fmonitored").status, 400);
  EXPECT_EQ(get("/monitored;v=1").status, 200);  // both readings are under /monitored
}

// Several MB each way, with a length and chunked, arrive byte for byte.
TEST_F(GatewayTest, StreamsBigBodiesIntact) {
  const std::string upload = bigBody(8 << 20);
  const HttpReply echoed = httpCall(endpoint_, http::verb::post, "/echo", upload);
  EXPECT_EQ(echoed.status, 200);
  EXPECT_EQ(echoed.body.size(), upload.size());
  EXPECT_TRUE(echoed.body == upload);
  const HttpReply sized = get("/big?bytes=" + std::to_string(6 << 20));
  EXPECT_EQ(sized.status, 200);
  EXPECT_TRUE(sized.body == bigBody(6 << 20));
  const HttpReply chunked = get("/big-chunked?bytes=" + std::to_string(5 << 20));
  EXPECT_EQ(chunked.status, 200);
  EXPECT_EQ(chunked.header("transfer-encoding"), "chunked");
  EXPECT_TRUE(chunked.body == bigBody(5 << 20));
}

// A body framed by the upstream closing the connection (no length, not chunked) arrives whole,
// small (it and the close come in one segment) or large, and without waiting for the response
// timeout: the gateway sees the upstream's end of stream at once.
TEST_F(GatewayTest, ABodyEndedByTheUpstreamClosingArrivesWhole) {
  for (const std::size_t bytes : {std::size_t{100}, std::size_t{3} << 20}) {
    const HttpReply reply = get("/until-close?bytes=" + std::to_string(bytes));
    EXPECT_EQ(reply.status, 200);
    EXPECT_EQ(reply.body.size(), bytes);
    EXPECT_TRUE(reply.body == bigBody(bytes));
  }
  EXPECT_EQ(gateway_->stats().upstream_timed_out, 0u);
}

// A chunked upload is passed on chunked and arrives whole.
TEST_F(GatewayTest, StreamsChunkedUploads) {
  boost::asio::io_context io;
  boost::beast::tcp_stream stream(io);
  stream.expires_after(std::chrono::seconds(10));
  stream.connect(endpoint_);
  const std::string upload = bigBody(3 << 20);
  http::request<http::string_body> request{http::verb::post, "/echo", 11};
  request.set(http::field::host, "127.0.0.1");
  request.body() = upload;
  request.chunked(true);
  http::write(stream, request);
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  http::read(stream, buffer, parser);
  EXPECT_EQ(parser.get().result_int(), 200u);
  EXPECT_EQ(parser.get()["X-Echo-transfer-encoding"], "chunked");
  EXPECT_TRUE(parser.get().body() == upload);
}

// Requests on one client connection reuse one upstream connection.
TEST_F(GatewayTest, KeepsUpstreamConnectionsAlive) {
  boost::asio::io_context io;
  boost::beast::tcp_stream stream(io);
  stream.expires_after(std::chrono::seconds(10));
  stream.connect(endpoint_);
  boost::beast::flat_buffer buffer;
  for (int i = 0; i < 5; ++i) {
    http::request<http::empty_body> request{http::verb::get, "/hello", 11};
    request.set(http::field::host, "127.0.0.1");
    http::write(stream, request);
    http::response<http::string_body> response;
    http::read(stream, buffer, response);
    EXPECT_EQ(response.result_int(), 200u);
    EXPECT_TRUE(response.keep_alive());
  }
  EXPECT_EQ(upstream_.connections.load(), 1);
  EXPECT_EQ(upstream_.requests.load(), 5);
}

// Waits (bounded) until the upstream has closed a connection after /then-close, and a little
// longer, so its end of stream has reached the gateway's parked socket. Sequencing, not timing.
bool waitForUpstreamClose(const sluice::testing::TestUpstream& upstream) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (upstream.closed_after.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return upstream.closed_after.load() > 0;
}

// On one client connection (parked upstream connections belong to the client's loop): GET
// /then-close, which leaves a parked connection the upstream then closes, and then `next`.
HttpReply afterAClosedParkedConnection(const boost::asio::ip::tcp::endpoint& gateway,
                                       const sluice::testing::TestUpstream& upstream,
                                       http::request<http::string_body> next) {
  ClientConnection client(gateway);
  EXPECT_EQ(client.send(http::request<http::empty_body>{http::verb::get, "/then-close", 11}).status,
            200);
  EXPECT_TRUE(waitForUpstreamClose(upstream));
  next.prepare_payload();
  return client.send(std::move(next));
}

// Bytes an upstream sends on a parked connection (here a second answer 20 ms after the first, as
// a body written behind a HEAD answer or past a Content-Length would come) close it before
// reuse: the next request on the same client connection goes out on a fresh upstream connection
// and gets its own answer, not those bytes (and no later answer is one behind).
TEST_F(GatewayTest, BytesOnAParkedConnectionCloseIt) {
  ClientConnection client(endpoint_);
  EXPECT_EQ(client.send(http::request<http::empty_body>{http::verb::get, "/late-extra", 11}).body,
            "ok");
  for (int i = 0; i < 400 && upstream_.late_extras.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // bounded: 2 s
  }
  ASSERT_EQ(upstream_.late_extras.load(), 1);
  for (const char* marker : {"second", "third"}) {
    http::request<http::empty_body> next{http::verb::get, "/hello", 11};
    next.set("X-Marker", marker);
    const HttpReply reply = client.send(std::move(next));
    EXPECT_EQ(reply.body, "ok");
    EXPECT_EQ(reply.header("x-echo-x-marker"), marker);
  }
  EXPECT_EQ(gateway_->stats().upstream_idle_closed, 1u);
  EXPECT_EQ(upstream_.connections.load(), 2);
}

// A parked connection the upstream has closed is not reused (its watch saw the end of stream):
// the next request goes out on a fresh connection, and the client sees only the answer.
TEST_F(GatewayTest, RequestAfterAClosedParkedConnectionGetsAFreshOne) {
  const HttpReply reply =
      afterAClosedParkedConnection(endpoint_, upstream_, {http::verb::get, "/hello", 11});
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body, "ok");
  EXPECT_EQ(upstream_.connections.load(), 2);
  EXPECT_EQ(gateway_->stats().upstream_idle_closed, 1u);  // seen while parked, not by a retry
}

// A request with a body cannot be sent twice: the gateway checks a parked connection before
// streaming a body to it, and takes a fresh one when the upstream has closed it.
TEST_F(GatewayTest, RequestWithABodyIsNotStreamedToAClosedParkedConnection) {
  http::request<http::string_body> post{http::verb::post, "/echo", 11};
  post.body() = "the body";
  const HttpReply reply = afterAClosedParkedConnection(endpoint_, upstream_, std::move(post));
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body, "the body");
  EXPECT_EQ(upstream_.connections.load(), 2);
  EXPECT_EQ(upstream_.requests.load(), 2);
}

// A POST without a body is not sent twice: its method is not idempotent, so the parked
// connection is checked before use (the upstream closed it: a fresh one is taken), and a
// failure after sending is not retried, since the upstream may have acted on it: here /fail
// reads the POST on a reused connection and hangs up, and sees it once.
TEST_F(GatewayTest, ABodylessPostIsCheckedNotRetried) {
  const HttpReply reply =
      afterAClosedParkedConnection(endpoint_, upstream_, {http::verb::post, "/hello", 11});
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(upstream_.connections.load(), 2);
  EXPECT_EQ(upstream_.requests.load(), 2);  // the first request, and the POST once

  // On one client connection (so one loop, one pool of parked upstream connections): a GET
  // parks its upstream connection, and the POST reuses it.
  const int before = upstream_.requests.load();
  ClientConnection client(endpoint_);
  EXPECT_EQ(client.send(http::request<http::empty_body>{http::verb::get, "/hello", 11}).status,
            200);
  EXPECT_EQ(client.send(http::request<http::empty_body>{http::verb::post, "/fail", 11}).status,
            502);
  EXPECT_EQ(upstream_.requests.load() - before, 2) << "the POST was sent again";
}

// A reused connection that fails on first use (the upstream closed it as it was taken, before the
// loop could see it; here /fail reads the request and hangs up) has a GET sent again, once, on
// a fresh connection: the upstream sees it twice, and the client one answer.
TEST_F(GatewayTest, AGetFailingOnAReusedConnectionIsSentOnceMore) {
  ClientConnection client(endpoint_);
  EXPECT_EQ(client.send(http::request<http::empty_body>{http::verb::get, "/hello", 11}).status,
            200);
  const int before = upstream_.requests.load();
  EXPECT_EQ(client.send(http::request<http::empty_body>{http::verb::get, "/fail", 11}).status, 502);
  EXPECT_EQ(upstream_.requests.load() - before, 2) << "sent once on the reused connection, "
                                                      "once on a fresh one";
  EXPECT_EQ(upstream_.connections.load(), 2);
}

// Nothing listens upstream: 502. The upstream hangs up without answering: 502. The request took
// its units, so the answer says where its limits stand, as the upstream's would have.
TEST_F(GatewayTest, FailingUpstreamGets502) {
  const HttpReply refused = get("/down");
  EXPECT_EQ(refused.status, 502);
  EXPECT_NE(refused.body.find("upstream"), std::string::npos);
  EXPECT_EQ(refused.header("x-ratelimit-limit"), "100000");
  EXPECT_FALSE(refused.header("ratelimit").empty());
  EXPECT_EQ(get("/fail").status, 502);
  EXPECT_EQ(gateway_->stats().upstream_failed, 2u);
}

// An upstream slower than response_timeout (1 s): 504, while the upstream's answer is still to
// come (told by the upstream's count of requests unanswered, not by a clock).
TEST_F(GatewayTest, SlowUpstreamGets504) {
  const HttpReply slow = get("/slow?ms=60000");
  EXPECT_EQ(slow.status, 504);
  EXPECT_EQ(slow.header("x-ratelimit-limit"), "100000");
  EXPECT_EQ(upstream_.in_flight.load(), 1);
  EXPECT_EQ(gateway_->stats().upstream_timed_out, 1u);
}

// HEAD gets the headers only, Content-Length included.
TEST_F(GatewayTest, AnswersHeadRequests) {
  boost::asio::io_context io;
  boost::beast::tcp_stream stream(io);
  stream.expires_after(std::chrono::seconds(10));
  stream.connect(endpoint_);
  boost::beast::flat_buffer buffer;
  for (int i = 0; i < 2; ++i) {  // twice: the connection stays usable after a bodiless answer
    http::request<http::empty_body> request{http::verb::head, "/big?bytes=100", 11};
    request.set(http::field::host, "127.0.0.1");
    http::write(stream, request);
    http::response_parser<http::string_body> parser;
    parser.skip(true);
    http::read(stream, buffer, parser);
    EXPECT_EQ(parser.get().result_int(), 200u);
    EXPECT_EQ(parser.get()[http::field::content_length], "100");
    EXPECT_EQ(parser.get().body(), "");
  }
}

}  // namespace
}  // namespace sluice::gateway
