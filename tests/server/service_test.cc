// The service end to end over loopback: a real server on 127.0.0.1, real HTTP: decisions
// (auth subrequests, the decision API, throttles, batches, tiers) and the admin endpoints. How the
// door speaks HTTP is in service_http_test.cc, reloads in service_reload_test.cc; the fixture is
// service_fixture.h.
#include "server/service.h"

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>

#include "server/http_server.h"
#include "server/service_fixture.h"
#include "support/captured_log.h"
#include "support/http_client.h"

namespace sluice::server {
namespace {

namespace http = boost::beast::http;
using boost::asio::ip::tcp;
using testing::httpCall;
using testing::HttpReply;

// Auth subrequests: 200 with exact headers while allowed, then 429 with Retry-After, the JSON
// body and the marker header; the client address comes from the trusted proxy's header.
TEST_F(ServiceTest, AuthSubrequestAllowsThenDenies) {
  for (int i = 0; i < 3; ++i) {
    const HttpReply allowed = auth("/x");
    ASSERT_EQ(allowed.status, 200) << allowed.body;
    EXPECT_EQ(allowed.header("x-ratelimit-limit"), "3");
    EXPECT_EQ(allowed.header("x-ratelimit-remaining"), std::to_string(2 - i));
    EXPECT_NE(allowed.header("ratelimit").find("\"per-ip\";r=" + std::to_string(2 - i)),
              std::string::npos);
    EXPECT_NE(allowed.header("ratelimit-policy").find("\"per-ip\";q=3;w=60"), std::string::npos);
  }
  const HttpReply denied = auth("/x");
  EXPECT_EQ(denied.status, 429);
  EXPECT_EQ(denied.header("x-ratelimit-status"), "429");
  EXPECT_EQ(denied.header("x-ratelimit-remaining"), "0");
  const int retry_after = std::stoi(denied.header("retry-after"));
  EXPECT_GE(retry_after, 1);
  EXPECT_LE(retry_after, 60);
  const auto body = boost::json::parse(denied.body).as_object();
  EXPECT_EQ(body.at("error").as_string(), "rate_limited");
  EXPECT_EQ(body.at("retry_after").as_int64(), retry_after);
  // Another client behind the same proxy has its own counter.
  EXPECT_EQ(auth("/x", "203.0.113.6").status, 200);
}

// Shadow limits say what would have happened in a header, and never block.
TEST_F(ServiceTest, ShadowHeader) {
  EXPECT_EQ(auth("/y", "198.51.100.1").header("x-ratelimit-shadow"), "");
  const HttpReply second = auth("/y", "198.51.100.1");
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(second.header("x-ratelimit-shadow"), "watch");
}

// The decision API: JSON in, JSON out, with the same headers; both forms and a batch.
TEST_F(ServiceTest, DecisionApi) {
  const HttpReply named = check(R"({"limit": "per-ip", "key": "k1", "cost": 2})");
  ASSERT_EQ(named.status, 200) << named.body;
  const auto decision = boost::json::parse(named.body).as_object();
  EXPECT_TRUE(decision.at("allowed").as_bool());
  EXPECT_EQ(decision.at("remaining").as_int64(), 1);
  EXPECT_EQ(named.header("x-ratelimit-remaining"), "1");
  EXPECT_EQ(decision.at("headers").as_object().at("X-RateLimit-Remaining").as_string(), "1");

  const HttpReply described =
      check(R"({"request": {"method": "GET", "path": "/a", "client_ip": "192.0.2.44"}})");
  ASSERT_EQ(described.status, 200) << described.body;
  EXPECT_EQ(boost::json::parse(described.body).at("limits").as_array().size(), 1u);

  const HttpReply batch = check(R"({"checks": [{"limit": "per-ip", "key": "k1"},
                                               {"limit": "per-ip", "key": "k1"},
                                               {"limit": "nope", "key": "k1"}]})");
  ASSERT_EQ(batch.status, 200) << batch.body;
  const auto results = boost::json::parse(batch.body).at("results").as_array();
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].at("allowed").as_bool());
  EXPECT_FALSE(results[1].at("allowed").as_bool());
  EXPECT_EQ(results[1].at("status").as_int64(), 429);
  EXPECT_NE(results[2].at("message").as_string().find("no limit named"), std::string::npos);
}

// Bad input gets a clear status and message, never a crash.
TEST_F(ServiceTest, BadRequests) {
  EXPECT_EQ(check("{not json").status, 400);
  EXPECT_NE(check("{not json").body.find("not valid JSON"), std::string::npos);
  EXPECT_EQ(check(R"({"limit": 5})").status, 400);
  EXPECT_EQ(check(R"({"limit": "per-ip", "key": "k", "cost": -1})").status, 400);
  EXPECT_EQ(check(R"({"limit": "nope", "key": "k"})").status, 400);
  EXPECT_EQ(httpCall(api_endpoint_, http::verb::get, "/v1/check").status, 405);
  EXPECT_EQ(httpCall(api_endpoint_, http::verb::get, "/elsewhere").status, 404);
  const HttpReply big_header = httpCall(api_endpoint_, http::verb::get, "/v1/auth", "",
                                        {{"X-Big", std::string(17 * 1024, 'a')}});
  EXPECT_EQ(big_header.status, 431);
  EXPECT_EQ(check(std::string(5000, ' ')).status, 413);
  // The server is still serving.
  EXPECT_EQ(httpCall(admin_endpoint_, http::verb::get, "/healthz").status, 200);
}

// The admin listener's read-only paths answer GET and HEAD only; reload takes POST only.
TEST_F(ServiceTest, AdminPathsTakeTheirMethodsOnly) {
  for (const char* path : {"/healthz", "/readyz", "/metrics", "/admin/config"}) {
    EXPECT_EQ(httpCall(admin_endpoint_, http::verb::get, path).status, 200) << path;
    for (const http::verb method : {http::verb::post, http::verb::delete_, http::verb::put}) {
      const HttpReply refused = httpCall(admin_endpoint_, method, path);
      EXPECT_EQ(refused.status, 405) << path << " " << http::to_string(method);
      EXPECT_EQ(refused.header("allow"), "GET, HEAD") << path;
    }
  }
  const HttpReply reload = httpCall(admin_endpoint_, http::verb::get, "/admin/reload");
  EXPECT_EQ(reload.status, 405);
  EXPECT_EQ(reload.header("allow"), "POST");
}

// A client that sends half a request and stalls is cut off after request_timeout.
TEST_F(ServiceTest, SlowClientIsTimedOut) {
  boost::asio::io_context io;
  tcp::socket socket(io);
  socket.connect(api_endpoint_);
  boost::asio::write(socket,
                     boost::asio::buffer(std::string("GET /v1/auth HTTP/1.1\r\nHost: x\r\n")));
  const std::optional<std::string> received = readUntilClosed(socket);
  ASSERT_TRUE(received.has_value()) << "the server kept the stalled client's connection";
  EXPECT_EQ(*received, "");
}

// Shutdown closes idle connections, but a request half received when it starts is read to its
// end and answered, with Connection: close.
TEST_F(ServiceTest, ShutdownAnswersARequestHalfReceived) {
  boost::asio::io_context io;
  tcp::socket socket(io);
  socket.connect(api_endpoint_);
  boost::asio::write(socket,
                     boost::asio::buffer(std::string("GET /v1/auth HTTP/1.1\r\nHost: x\r\n")));
  tcp::socket idle(io);
  idle.connect(api_endpoint_);
  // Both connections must be accepted before the shutdown, or they would be refused with the
  // listener: the listener accepts in order, so a whole exchange on a later connection orders
  // them. (Loopback bytes are in the server's receive queue once write() returns.)
  EXPECT_EQ(auth("/z", "192.0.2.83").status, 200);
  api_->shutdown();
  const std::optional<std::string> closed_idle = readUntilClosed(idle);
  ASSERT_TRUE(closed_idle.has_value()) << "the idle connection stayed open";
  EXPECT_EQ(*closed_idle, "");
  boost::asio::write(socket, boost::asio::buffer(std::string("\r\n")));
  const std::optional<std::string> answer = readUntilClosed(socket);
  ASSERT_TRUE(answer.has_value()) << "the connection stayed open after its answer";
  EXPECT_EQ(answer->rfind("HTTP/1.1 200", 0), 0u) << *answer;
  EXPECT_NE(answer->find("Connection: close"), std::string::npos) << *answer;
}

// Throttle: the second request waits on a timer for its slot, then passes.
TEST_F(ServiceTest, ThrottleDelaysThenAllows) {
  EXPECT_EQ(auth("/search/q", "192.0.2.80").status, 200);
  const HttpReply delayed = auth("/search/q", "192.0.2.80");
  EXPECT_EQ(delayed.status, 200);
  const int delayed_ms = std::stoi(delayed.header("x-ratelimit-delayed-ms").empty()
                                       ? "0"
                                       : delayed.header("x-ratelimit-delayed-ms"));
  EXPECT_GE(delayed_ms, 1);
  EXPECT_LE(delayed_ms, 1000);
}

// A client that hangs up while a throttle holds its request is answered at once, not when the
// wait ends (here a minute): its connection, a file and a place under max_connections, is let
// go (clients that sent a throttled request and left kept the door at its cap), the metric
// counts it, and the unit it waited for is not taken. A client that only half-closed its side
// reads the 499.
TEST_F(ServiceTest, AHeldClientThatHangsUpIsLetGoAtOnceAndTakesNoUnit) {
  writeConfig(
      "identity: { trusted_proxies: [127.0.0.1/32] }\n"
      "limits:\n  - { name: slow, key: ip, algorithm: gcra, rate: 1/min, burst: 1, action: "
      "throttle, max_delay: 60s }\n");
  ASSERT_EQ(httpCall(admin_endpoint_, http::verb::post, "/admin/reload").status, 200);
  EXPECT_EQ(auth("/a", "192.0.2.83").status, 200);  // the burst of 1, spent
  const auto gone_counted = [&](int count) {
    return httpCall(admin_endpoint_, http::verb::get, "/metrics")
               .body.find("sluice_throttled_client_gone_total " + std::to_string(count) + "\n") !=
           std::string::npos;
  };
  const auto eventually = [](const auto& done) {
    for (int i = 0; i < 500; ++i) {  // bounded: 10 s, far below the minute a request is held
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  const std::string held_request =
      "GET /v1/auth HTTP/1.1\r\nHost: x\r\nX-Original-URI: /a\r\n"
      "X-Forwarded-For: 192.0.2.83\r\n\r\n";
  {
    boost::asio::io_context io;
    tcp::socket socket(io);
    socket.connect(api_endpoint_);
    boost::asio::write(socket, boost::asio::buffer(held_request));
    ASSERT_TRUE(eventually([&] { return api_->openConnections() == 1; }));
  }  // closed while held, 59 s before the wait would end
  EXPECT_TRUE(eventually([&] { return gone_counted(1); }));
  EXPECT_TRUE(eventually([&] { return api_->openConnections() == 0; }))
      << api_->openConnections() << " connection(s) still open";

  // Half-closed: the 499 is written, at once.
  boost::asio::io_context io;
  tcp::socket socket(io);
  socket.connect(api_endpoint_);
  boost::asio::write(socket, boost::asio::buffer(held_request));
  socket.shutdown(tcp::socket::shutdown_send);
  std::string answer;
  boost::system::error_code ec;
  char bytes[512];
  while (!ec) answer.append(bytes, socket.read_some(boost::asio::buffer(bytes), ec));
  EXPECT_EQ(answer.rfind("HTTP/1.1 499 ", 0), 0u) << answer;
  EXPECT_TRUE(gone_counted(2));

  // Neither took the unit: the next one frees a minute after the first request, not later.
  const HttpReply batch =
      check(R"({"checks": [{"request": {"path": "/a", "client_ip": "192.0.2.83"}}]})");
  const auto result = boost::json::parse(batch.body).at("results").at(0);
  EXPECT_FALSE(result.at("allowed").as_bool()) << batch.body;
  EXPECT_LE(result.at("retry_after_ms").as_int64(), 60'000) << batch.body;
}

// A batch never waits, even one of a single item: the throttle limit's second request is
// answered denied at once instead of being held for its slot.
TEST_F(ServiceTest, ABatchOfOneItemDoesNotWait) {
  const std::string body =
      R"({"checks": [{"request": {"path": "/search/q", "client_ip": "192.0.2.81"}}]})";
  const HttpReply first = check(body);
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_TRUE(boost::json::parse(first.body).at("results").at(0).at("allowed").as_bool());
  const HttpReply second = check(body);
  ASSERT_EQ(second.status, 200) << second.body;
  const auto result = boost::json::parse(second.body).at("results").at(0);
  EXPECT_FALSE(result.at("allowed").as_bool()) << second.body;
  EXPECT_EQ(result.at("status").as_int64(), 429);
}

// A batch item is never held, so one a shaper admits into a later slot says when that slot is:
// answered a bare allow, its caller would send it on at once and the shaper would shape nothing.
TEST_F(ServiceTest, ABatchTellsItsShapedItemsTheirSlots) {
  const std::string item = R"({"request": {"path": "/shaped", "client_ip": "192.0.2.85"}})";
  const HttpReply reply = check(R"({"checks": [)" + item + "," + item + "," + item + "]}");
  ASSERT_EQ(reply.status, 200) << reply.body;
  const auto results = boost::json::parse(reply.body).at("results").as_array();
  ASSERT_EQ(results.size(), 3u);
  for (const auto& result : results) EXPECT_TRUE(result.at("allowed").as_bool()) << reply.body;
  EXPECT_FALSE(results[0].as_object().contains("hold_ms")) << reply.body;  // its slot is now
  // One slot (1 s at 1/s) and two behind the first item, less what the clock moved meanwhile.
  const std::int64_t second = results[1].at("hold_ms").as_int64();
  const std::int64_t third = results[2].at("hold_ms").as_int64();
  EXPECT_TRUE(second > 500 && second <= 1'000) << reply.body;
  EXPECT_TRUE(third > 1'500 && third <= 2'000) << reply.body;
  EXPECT_EQ(results[2].at("delayed_ms").as_int64(), 0) << reply.body;  // not held here
}

// A request held for its shaper slot is answered with its resets counted from the answer, not
// from the decision a slot earlier: told the queue empties 2 s on while it has 1 s to go, a
// client waited a whole slot longer than it needed (helper's finding: 6 s too long).
TEST_F(ServiceTest, AShapedRequestsResetCountsFromItsAnswer) {
  const std::string item = R"({"request": {"path": "/shaped", "client_ip": "192.0.2.86"}})";
  ASSERT_EQ(check(item).status, 200);  // its slot is now
  const HttpReply held = check(item);  // its slot is one emission interval (1 s) on
  ASSERT_EQ(held.status, 200) << held.body;
  const auto body = boost::json::parse(held.body);
  EXPECT_GT(body.at("delayed_ms").as_int64(), 500) << held.body;
  // The queue held two requests at the decision, draining at 1/s: empty 2 s on then, 1 s on now.
  const auto& shaped = body.at("limits").at(1);
  ASSERT_EQ(shaped.at("name").as_string(), "shaped") << held.body;
  EXPECT_LE(shaped.at("reset_after_ms").as_int64(), 1'000) << held.body;
  EXPECT_NE(held.body.find(R"(\"shaped\";r=3;t=1")"), std::string::npos) << held.body;
  // The auth door's answer likewise.
  ASSERT_EQ(auth("/shaped", "192.0.2.87").status, 200);
  const HttpReply held_auth = auth("/shaped", "192.0.2.87");
  ASSERT_EQ(held_auth.status, 200);
  EXPECT_NE(held_auth.header("ratelimit").find(R"("shaped";r=3;t=1)"), std::string::npos)
      << held_auth.header("ratelimit");
}

// An auth subrequest without the original URI decides on its own target, where no limit on the
// original path can match: the log says so, once for a burst of them.
TEST_F(ServiceTest, AnAuthSubrequestWithoutTheOriginalUriIsLogged) {
  const sluice::testing::CapturedLog log;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(httpCall(api_endpoint_, http::verb::get, "/v1/auth", "",
                       {{"X-Forwarded-Uri", "/login"}, {"X-Forwarded-For", "192.0.2.77"}})
                  .status,
              200);
  }
  EXPECT_EQ(sluice::testing::countOf(log.text(), "an auth subrequest came without X-Original-URI"),
            1u)
      << log.text();
  (void)auth("/login", "192.0.2.78");  // with it: nothing more said
  EXPECT_EQ(sluice::testing::countOf(log.text(), "came without"), 1u) << log.text();
}

// Admin: health, readiness, metrics in Prometheus text, the configuration.
TEST_F(ServiceTest, AdminEndpoints) {
  EXPECT_EQ(auth("/m").status, 200);
  EXPECT_EQ(httpCall(admin_endpoint_, http::verb::get, "/healthz").status, 200);
  EXPECT_EQ(httpCall(admin_endpoint_, http::verb::get, "/readyz").status, 200);
  const HttpReply metrics = httpCall(admin_endpoint_, http::verb::get, "/metrics");
  EXPECT_EQ(metrics.status, 200);
  // The text format is UTF-8 (limit names in labels may be), and says so as Prometheus's own
  // clients do.
  EXPECT_EQ(metrics.header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(metrics.body.find("sluice_decisions_total{limit=\"per-ip\",result=\"allowed\"} 1"),
            std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("sluice_decision_duration_seconds_count 1"), std::string::npos);
  EXPECT_NE(metrics.body.find("sluice_keys "), std::string::npos);
  EXPECT_NE(httpCall(admin_endpoint_, http::verb::get, "/admin/config").body.find("per-ip"),
            std::string::npos);
  service_->setReady(false);
  EXPECT_EQ(httpCall(admin_endpoint_, http::verb::get, "/readyz").status, 503);
}

// DNS rebinding: a page whose name now points at 127.0.0.1 reaches the admin listener through a
// browser on this machine, its Host still the page's name. It reads nothing but the probes.
TEST_F(ServiceTest, AdminReadsNamedByAPagesHostAreRefused) {
  const std::vector<std::pair<std::string, std::string>> page = {
      {"Host", "attacker.example:" + std::to_string(admin_endpoint_.port())}};
  for (const char* path : {"/metrics", "/admin/config", "/dashboard"}) {
    const HttpReply refused = httpCall(admin_endpoint_, http::verb::get, path, "", page);
    EXPECT_EQ(refused.status, 403) << path;
    EXPECT_NE(refused.body.find("DNS rebinding"), std::string::npos) << refused.body;
  }
  EXPECT_EQ(httpCall(admin_endpoint_, http::verb::post, "/admin/reload", "", page).status, 403);
  EXPECT_EQ(httpCall(admin_endpoint_, http::verb::get, "/healthz", "", page).status, 200);
  EXPECT_EQ(httpCall(admin_endpoint_, http::verb::get, "/readyz", "", page).status, 200);
  EXPECT_EQ(httpCall(admin_endpoint_, http::verb::get, "/metrics", "",
                     {{"Host", "localhost:" + std::to_string(admin_endpoint_.port())}})
                .status,
            200);
  // A local reverse proxy that passes its clients' Host on: its name, listed in
  // server.admin_hosts, is taken after a reload; the page's still is not.
  std::string listed = kServiceConfig;
  listed.replace(listed.find("server: { "), 10, "server: { admin_hosts: [Metrics.Internal], ");
  writeConfig(listed);
  ASSERT_EQ(httpCall(admin_endpoint_, http::verb::post, "/admin/reload").status, 200);
  EXPECT_EQ(httpCall(admin_endpoint_, http::verb::get, "/metrics", "",
                     {{"Host", "metrics.internal:8443"}})
                .status,
            200);
  EXPECT_EQ(httpCall(admin_endpoint_, http::verb::get, "/metrics", "", page).status, 403);
}

// A door that cannot serve (the Envoy door's listener gone) makes /readyz 503 with its reason.
TEST_F(ServiceTest, ADoorsReadinessCheckCanMakeTheServiceUnready) {
  std::atomic<bool> door_failed{false};
  service_->addReadinessCheck([&door_failed]() -> std::optional<std::string> {
    if (!door_failed.load()) return std::nullopt;
    return "the door stopped";
  });
  EXPECT_EQ(httpCall(admin_endpoint_, http::verb::get, "/readyz").status, 200);
  door_failed = true;
  const HttpReply unready = httpCall(admin_endpoint_, http::verb::get, "/readyz");
  EXPECT_EQ(unready.status, 503);
  EXPECT_NE(unready.body.find("the door stopped"), std::string::npos) << unready.body;
}

// Past max_connections, a new connection is answered 503 and closed.
TEST_F(ServiceTest, ConnectionCap) {
  boost::asio::io_context io;
  std::vector<tcp::socket> held;
  for (int i = 0; i < 8; ++i) {
    held.emplace_back(io);
    held.back().connect(api_endpoint_);
  }
  // The server counts a connection once it has accepted it; wait until it has seen them all.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (api_->openConnections() < 8 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_EQ(auth("/c").status, 503);
}

// Tiers end to end: anonymous callers get the anonymous numbers, a premium key its own burst and
// daily quota (the binding limit once the burst is refilled), an internal key no tier limit.
TEST_F(ServiceTest, TiersByApiKey) {
  // Each call from its own address except where noted, so the 3/min per-ip limit stays out of
  // the way; a known key's counter follows the key, not the address.
  int call = 0;
  const auto tiered = [&](const std::string& key, std::string ip = "") {
    if (ip.empty()) ip = "192.0.2." + std::to_string(100 + ++call);
    std::vector<std::pair<std::string, std::string>> headers{{"X-Original-URI", "/tiered"},
                                                             {"X-Forwarded-For", ip}};
    if (!key.empty()) headers.emplace_back("Authorization", "Bearer " + key);
    return httpCall(api_endpoint_, http::verb::get, "/v1/auth", "", headers);
  };
  EXPECT_EQ(tiered("", "192.0.2.200").status, 200);
  EXPECT_EQ(tiered("", "192.0.2.200").status, 200);
  EXPECT_EQ(tiered("", "192.0.2.200").status, 429);
  // An unknown key is still the same address, and the same anonymous counter.
  EXPECT_EQ(tiered("not-a-key", "192.0.2.200").status, 429);
  const HttpReply premium = tiered("gold");
  EXPECT_EQ(premium.status, 200);
  // A burst of 4 at 60/min is granted in 4 s: q=4;w=60 would promise a fifteenth of the rate.
  EXPECT_NE(premium.header("ratelimit-policy").find("\"tiered\";q=4;w=4"), std::string::npos)
      << premium.header("ratelimit-policy");
  EXPECT_NE(premium.header("ratelimit-policy").find("\"tiered:daily\";q=5;w=86400"),
            std::string::npos);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(tiered("gold").status, 200);
  EXPECT_EQ(tiered("gold").status, 429);
  EXPECT_EQ(tiered("staff").header("ratelimit-policy").find("tiered"), std::string::npos);
}

}  // namespace
}  // namespace sluice::server
