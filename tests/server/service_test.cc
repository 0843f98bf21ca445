// The service end to end over loopback: a real server on 127.0.0.1, real HTTP.
#include "server/service.h"

#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <poll.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>

#include "policy/policy_loader.h"
#include "server/http_server.h"
#include "support/captured_log.h"
#include "support/fresh_day_clock.h"
#include "support/http_client.h"

namespace sluice::server {
namespace {

namespace http = boost::beast::http;
using boost::asio::ip::tcp;
using testing::httpCall;
using testing::HttpReply;

// What the server sends until it closes the connection, or nullopt when it stays silent for
// 10 s: the bound keeps a server that never closes from hanging the test. (SO_RCVTIMEO would
// not: Asio's blocking read polls again after the receive timeout.)
std::optional<std::string> readUntilClosed(tcp::socket& socket) {
  std::string received;
  for (;;) {
    pollfd readable{.fd = socket.native_handle(), .events = POLLIN, .revents = 0};
    if (poll(&readable, 1, 10'000) != 1) return std::nullopt;
    char chunk[4096];
    boost::system::error_code ec;
    const std::size_t bytes = socket.read_some(boost::asio::buffer(chunk), ec);
    if (ec) return received;  // end of stream, or reset
    received.append(chunk, bytes);
  }
}

constexpr const char* kServiceConfig = R"(
server: { request_timeout: 300ms, max_connections: 8, max_body_bytes: 4096 }
identity: { trusted_proxies: [127.0.0.1/32], keys_file: service-test-keys.yaml }
tiers:
  anonymous: { rate: 2/min, burst: 2 }
  premium: { rate: 60/min, burst: 4, daily_quota: 5 }
  internal: { unlimited: true }
limits:
  - { name: tiered, match: { path_prefix: /tiered }, key: client, from_tier: true }
  - { name: per-ip, key: ip, algorithm: fixed_window, rate: 3/min }
  - { name: watch, key: ip, rate: 1/min, action: shadow }
  - name: search
    match: { path_prefix: /search }
    key: ip
    algorithm: gcra
    rate: 20/s
    burst: 1
    action: throttle
    max_delay: 1s
  - { name: shaped, match: { path_prefix: /shaped }, key: ip, algorithm: leaky_bucket_shaper,
      rate: 1/s, burst: 5 }
)";

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A directory per process: ctest runs several test processes at once, and one must never
    // read another's half-written keys file.
    const std::string dir = ::testing::TempDir() + "/service-test-" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    config_path_ = dir + "/" + std::to_string(reinterpret_cast<std::uintptr_t>(this)) + ".yaml";
    std::ofstream(dir + "/service-test-keys.yaml")
        << "keys:\n  - { key: gold, tier: premium }\n  - { key: staff, tier: internal }\n";
    writeConfig(kServiceConfig);
    policy::LoadResult loaded = policy::loadPolicy(config_path_);
    ASSERT_NE(loaded.policy, nullptr) << (loaded.errors.empty() ? "" : loaded.errors[0]);
    service_ = std::make_unique<Service>(loaded.policy, config_path_, clock_);
    const HttpServerLimits limits{.max_header_bytes = 16 * 1024,
                                  .max_body_bytes = loaded.policy->server.max_body_bytes,
                                  .request_timeout_us = loaded.policy->server.request_timeout_us,
                                  .max_connections = loaded.policy->server.max_connections};
    api_ = std::make_unique<HttpServer>(
        pool_, limits, [this](auto&& request, const auto& peer, auto& loop, auto respond) {
          service_->handleApi(std::move(request), peer, loop, std::move(respond));
        });
    admin_ = std::make_unique<HttpServer>(
        pool_, limits, [this](auto&& request, const auto& peer, auto& loop, auto respond) {
          service_->handleAdmin(std::move(request), peer, loop, std::move(respond));
        });
    api_endpoint_ = api_->listen("127.0.0.1:0").value();
    admin_endpoint_ = admin_->listen("127.0.0.1:0").value();
    service_->setReady(true);
    pool_.run(/*block=*/false);
  }

  void TearDown() override {
    if (api_ != nullptr) api_->shutdown();  // null when SetUp failed
    if (admin_ != nullptr) admin_->shutdown();
    pool_.stop();
  }

  void writeConfig(const std::string& text) { std::ofstream(config_path_) << text; }

  HttpReply auth(const std::string& uri, const std::string& client = "203.0.113.5") {
    return httpCall(
        api_endpoint_, http::verb::get, "/v1/auth", "",
        {{"X-Original-URI", uri}, {"X-Original-Method", "GET"}, {"X-Forwarded-For", client}});
  }
  HttpReply check(const std::string& body) {
    return httpCall(api_endpoint_, http::verb::post, "/v1/check", body);
  }

  IoPool pool_{2};
  testing::FreshDayClock clock_;  // per-ip is a fixed window on the clock's minutes
  std::string config_path_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<HttpServer> api_;
  std::unique_ptr<HttpServer> admin_;
  tcp::endpoint api_endpoint_;
  tcp::endpoint admin_endpoint_;
};

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

// A client that hangs up while its request is held by a throttle is not decided for when the
// wait ends: the slot it would have taken stays free for the next request, which goes through
// without waiting, and the metric counts the abandoned request.
TEST_F(ServiceTest, AThrottledClientThatHungUpTakesNoSlot) {
  EXPECT_EQ(auth("/search/q", "192.0.2.82").status, 200);  // the burst of 1, spent
  {
    boost::asio::io_context io;
    tcp::socket socket(io);
    socket.connect(api_endpoint_);
    boost::asio::write(socket,
                       boost::asio::buffer(std::string(
                           "GET /v1/auth HTTP/1.1\r\nHost: x\r\n"
                           "X-Original-URI: /search/q\r\nX-Forwarded-For: 192.0.2.82\r\n\r\n")));
  }  // closed while held (about 50 ms, one emission interval at 20/s)
  const auto gone_counted = [&] {
    return httpCall(admin_endpoint_, http::verb::get, "/metrics")
               .body.find("sluice_throttled_client_gone_total 1\n") != std::string::npos;
  };
  bool counted = false;
  for (int i = 0; i < 200 && !counted; ++i) {  // bounded: 4 s
    counted = gone_counted();
    if (!counted) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(counted) << httpCall(admin_endpoint_, http::verb::get, "/metrics").body;
  const HttpReply next = auth("/search/q", "192.0.2.82");
  EXPECT_EQ(next.status, 200);
  EXPECT_EQ(next.header("x-ratelimit-delayed-ms"), "") << "the hung-up request took the slot";
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

// Reload: a broken file is refused with its errors and the old policy keeps serving; a good
// one takes effect.
TEST_F(ServiceTest, ReloadKeepsTheOldPolicyOnError) {
  writeConfig("limits:\n  - { name: per-ip, rate: 3/fortnight }\n");
  const HttpReply refused = httpCall(admin_endpoint_, http::verb::post, "/admin/reload");
  EXPECT_EQ(refused.status, 422);
  EXPECT_NE(refused.body.find("fortnight"), std::string::npos);
  EXPECT_NE(refused.body.find(":2:"), std::string::npos);  // file:line
  EXPECT_EQ(auth("/z", "192.0.2.90").header("x-ratelimit-limit"), "3");

  writeConfig("limits:\n  - { name: per-ip, key: ip, algorithm: fixed_window, rate: 7/min }\n");
  EXPECT_EQ(httpCall(admin_endpoint_, http::verb::post, "/admin/reload").status, 200);
  EXPECT_EQ(auth("/z", "192.0.2.91").header("x-ratelimit-limit"), "7");
}

// A reload error that quotes the file's bytes, here half of a UTF-8 é after a backslash (YAML's
// unknown escape) and a Latin-1 byte from a hook, still gives a body that is JSON.
TEST_F(ServiceTest, ReloadErrorsQuotingRawBytesAreValidJson) {
  service_->addReloadHook([](ReloadReport& report) -> std::function<void()> {
    report.errors.push_back("hook: name \"caf\xe9\"");
    return {};
  });
  writeConfig("limits: \"\\\xc3\xa9\"\n");
  const HttpReply refused = httpCall(admin_endpoint_, http::verb::post, "/admin/reload");
  EXPECT_EQ(refused.status, 422);
  boost::system::error_code ec;
  const boost::json::value body = boost::json::parse(refused.body, ec);
  ASSERT_FALSE(ec) << ec.message() << ": " << refused.body;
  const boost::json::array& errors = body.at("errors").as_array();
  ASSERT_EQ(errors.size(), 2u) << refused.body;
  EXPECT_EQ(errors[1].as_string(), "hook: name \"caf\xef\xbf\xbd\"");  // U+FFFD for the é
}

// POST /admin/reload runs the other doors' reload hooks as SIGHUP does, and is taken whole or
// not at all: a hook's errors make it a 422, listed, and neither the policy nor the hook's
// files take effect. The policy was put in force anyway, the answer saying it was refused.
TEST_F(ServiceTest, AdminReloadRunsTheReloadHooksAllOrNothing) {
  int hook_calls = 0;
  int commits = 0;
  std::vector<std::string> hook_errors;
  service_->addReloadHook([&](ReloadReport& report) -> std::function<void()> {
    ++hook_calls;
    report.errors.insert(report.errors.end(), hook_errors.begin(), hook_errors.end());
    return [&commits] { ++commits; };
  });
  EXPECT_EQ(httpCall(admin_endpoint_, http::verb::post, "/admin/reload").status, 200);
  EXPECT_EQ(hook_calls, 1);
  EXPECT_EQ(commits, 1);

  hook_errors = {"envoy_rls: envoy.yaml:3:1: unknown unit"};
  writeConfig("limits:\n  - { name: per-ip, key: ip, algorithm: fixed_window, rate: 7/min }\n");
  const HttpReply refused = httpCall(admin_endpoint_, http::verb::post, "/admin/reload");
  EXPECT_EQ(hook_calls, 2);
  EXPECT_EQ(commits, 1);
  EXPECT_EQ(refused.status, 422);
  EXPECT_NE(refused.body.find("envoy.yaml:3:1"), std::string::npos) << refused.body;
  EXPECT_EQ(auth("/z", "192.0.2.92").header("x-ratelimit-limit"), "3");  // the old policy

  hook_errors.clear();
  EXPECT_EQ(httpCall(admin_endpoint_, http::verb::post, "/admin/reload").status, 200);
  EXPECT_EQ(commits, 2);
  EXPECT_EQ(auth("/z", "192.0.2.93").header("x-ratelimit-limit"), "7");
}

// POST /admin/reload reads and parses files off the I/O loops, on the service's reload thread:
// a keys file of megabytes held a loop for seconds, and its listeners and connections with it.
TEST_F(ServiceTest, AdminReloadRunsOffTheIoLoops) {
  std::atomic<int> on_a_loop{0};
  std::atomic<int> hook_calls{0};
  service_->addReloadHook([&](ReloadReport&) -> std::function<void()> {
    ++hook_calls;
    for (boost::asio::io_context* loop : pool_.loops()) {
      if (loop->get_executor().running_in_this_thread()) ++on_a_loop;
    }
    return {};
  });
  EXPECT_EQ(httpCall(admin_endpoint_, http::verb::post, "/admin/reload").status, 200);
  EXPECT_EQ(hook_calls.load(), 1);
  EXPECT_EQ(on_a_loop.load(), 0);
}

// Reload requests that arrive while one reload waits to start share it, and each caller still
// hears of a reload that began after it asked: 100 requests made while a reload runs cost one
// more reload, not 100.
TEST_F(ServiceTest, ReloadsRequestedMeanwhileShareOneReload) {
  std::mutex mutex;
  std::condition_variable changed;
  bool first_started = false;
  bool release_first = false;
  int hook_calls = 0;
  int answered = 0;
  service_->addReloadHook([&](ReloadReport&) -> std::function<void()> {
    std::unique_lock lock(mutex);
    if (++hook_calls == 1) {
      first_started = true;
      changed.notify_all();
      changed.wait_for(lock, std::chrono::seconds(10), [&] { return release_first; });
    }
    return {};
  });
  const auto count_answer = [&](const ReloadReport& report) {
    EXPECT_TRUE(report.errors.empty());
    const std::lock_guard lock(mutex);
    ++answered;
    changed.notify_all();
  };
  service_->reloadInBackground(count_answer);
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(changed.wait_for(lock, std::chrono::seconds(10), [&] { return first_started; }));
  }
  for (int i = 0; i < 100; ++i) service_->reloadInBackground(count_answer);
  std::unique_lock lock(mutex);
  release_first = true;
  changed.notify_all();
  ASSERT_TRUE(changed.wait_for(lock, std::chrono::seconds(10), [&] { return answered == 101; }))
      << answered << " of 101 callers answered";
  EXPECT_EQ(hook_calls, 2);
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

// Settings read only at start (listeners, HTTP limits, the store) are not applied by a reload,
// which says so for each one edited, while the rest of the file takes effect; the warnings stay
// while the file differs from what the process started with, and go when it is put back.
TEST_F(ServiceTest, ReloadWarnsOfEditsThatWaitForRestart) {
  const std::string limits =
      "limits:\n  - { name: per-ip, key: ip, algorithm: fixed_window, rate: 7/min }\n";
  writeConfig(
      "server: { listen: 127.0.0.1:18999, request_timeout: 2s, max_connections: 8, "
      "max_body_bytes: 4096 }\n"
      "store: { type: redis, address: 127.0.0.1:6390, password: hunter2-redis }\n" +
      limits);
  const HttpReply reloaded = httpCall(admin_endpoint_, http::verb::post, "/admin/reload");
  EXPECT_EQ(reloaded.status, 200) << reloaded.body;
  boost::system::error_code ec;
  const boost::json::value body = boost::json::parse(reloaded.body, ec);
  ASSERT_FALSE(ec) << reloaded.body;
  EXPECT_TRUE(body.at("reloaded").as_bool());
  EXPECT_TRUE(body.at("errors").as_array().empty());
  const boost::json::array& warnings = body.at("warnings").as_array();
  ASSERT_EQ(warnings.size(), 5u) << reloaded.body;
  EXPECT_EQ(warnings[0].as_string(),
            "server.listen changed from 127.0.0.1:8080 to 127.0.0.1:18999; it takes effect at "
            "restart");
  EXPECT_EQ(warnings[1].as_string(),
            "server.request_timeout changed from 300ms to 2s; it takes effect at restart");
  EXPECT_EQ(warnings[2].as_string(),
            "store.type changed from memory to redis; it takes effect at restart");
  EXPECT_NE(warnings[3].as_string().find("store.addresses changed"), std::string::npos);
  EXPECT_EQ(warnings[4].as_string(), "store.password changed; it takes effect at restart");
  EXPECT_EQ(reloaded.body.find("hunter2"), std::string::npos);           // a secret is never quoted
  EXPECT_EQ(auth("/z", "192.0.2.93").header("x-ratelimit-limit"), "7");  // the limits did
  // /admin/config shows the file, headed by what of it is not in force.
  const std::string config = httpCall(admin_endpoint_, http::verb::get, "/admin/config").body;
  EXPECT_EQ(config.rfind("# Not in force until a restart", 0), 0u) << config;
  EXPECT_NE(config.find("\n#   server.listen changed from 127.0.0.1:8080 to 127.0.0.1:18999"),
            std::string::npos)
      << config;
  EXPECT_NE(config.find("\n#   store.password changed"), std::string::npos) << config;
  EXPECT_EQ(config.find("hunter2"), std::string::npos) << config;

  writeConfig("server: { request_timeout: 300ms, max_connections: 8, max_body_bytes: 4096 }\n" +
              limits);
  const HttpReply restored = httpCall(admin_endpoint_, http::verb::post, "/admin/reload");
  EXPECT_EQ(restored.status, 200);
  EXPECT_NE(restored.body.find(R"("warnings":[])"), std::string::npos) << restored.body;
  EXPECT_EQ(httpCall(admin_endpoint_, http::verb::get, "/admin/config").body.find("Not in force"),
            std::string::npos);
}

// Admin: health, readiness, metrics in Prometheus text, the configuration.
TEST_F(ServiceTest, AdminEndpoints) {
  EXPECT_EQ(auth("/m").status, 200);
  EXPECT_EQ(httpCall(admin_endpoint_, http::verb::get, "/healthz").status, 200);
  EXPECT_EQ(httpCall(admin_endpoint_, http::verb::get, "/readyz").status, 200);
  const HttpReply metrics = httpCall(admin_endpoint_, http::verb::get, "/metrics");
  EXPECT_EQ(metrics.status, 200);
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

// HTTP details: HEAD answers carry no body (so pipelined requests stay framed), 405 says what is
// allowed, every answer is dated, and Expect: 100-continue is answered before the body is read.
TEST_F(ServiceTest, HttpDetails) {
  boost::asio::io_context io;
  tcp::socket socket(io);
  socket.connect(api_endpoint_);
  boost::asio::write(socket, boost::asio::buffer(std::string(
                                 "HEAD /v1/check HTTP/1.1\r\nHost: x\r\n\r\n"
                                 "GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")));
  const std::string received = readUntilClosed(socket).value_or("(the server did not close)");
  const std::size_t second = received.find("HTTP/1.1 404");
  ASSERT_NE(second, std::string::npos) << received;
  const std::string head_answer = received.substr(0, second);
  EXPECT_TRUE(head_answer.starts_with("HTTP/1.1 405")) << head_answer;
  EXPECT_NE(head_answer.find("Allow: POST"), std::string::npos);
  EXPECT_NE(head_answer.find("Date: "), std::string::npos);
  EXPECT_TRUE(head_answer.ends_with("\r\n\r\n")) << "a body followed the HEAD answer";

  const HttpReply continued =
      httpCall(api_endpoint_, http::verb::post, "/v1/check", R"({"limit": "per-ip", "key": "e"})",
               {{"Expect", "100-continue"}});
  EXPECT_EQ(continued.status, 200) << continued.body;
}

// What the server answers on a new connection to `request`, until it closes (nullopt: it did not).
std::optional<std::string> exchangeUntilClosed(const tcp::endpoint& server,
                                               const std::string& request) {
  boost::asio::io_context io;
  tcp::socket socket(io);
  socket.connect(server);
  boost::asio::write(socket, boost::asio::buffer(request));
  // Done sending: a server that lingers after refusing a request (reading what the client
  // still sends) closes as soon as it sees this end.
  boost::system::error_code ignored;
  socket.shutdown(tcp::socket::shutdown_send, ignored);
  return readUntilClosed(socket);
}

// A body over max_body_bytes gets its 413 even when the client sends the whole body before it
// reads (as Python's http.client does): the server reads and drops the rest before closing,
// where a close with the body unread made the kernel reset the connection, and the client saw a
// broken pipe instead of the answer.
TEST_F(ServiceTest, ABodyOverTheLimitStillGetsItsAnswer) {
  const std::size_t body_bytes = 8 << 20;
  // Over the limit (413), and with a Transfer-Encoding that is refused (400), which the parser
  // takes for no body although one follows.
  for (const auto& [framing, status] :
       {std::pair{"Content-Length: " + std::to_string(body_bytes), "413"},
        std::pair{std::string("Transfer-Encoding: gzip"), "400"}}) {
    boost::asio::io_context io;
    tcp::socket socket(io);
    socket.connect(api_endpoint_);
    const std::string head = "POST /v1/check HTTP/1.1\r\nHost: x\r\n" + framing + "\r\n\r\n";
    boost::system::error_code ec;
    boost::asio::write(socket, boost::asio::buffer(head), ec);
    const std::string chunk(1 << 20, 'x');
    for (std::size_t sent = 0; sent < body_bytes && !ec; sent += chunk.size())
      boost::asio::write(socket, boost::asio::buffer(chunk), ec);
    EXPECT_FALSE(ec) << framing << ": writing the body failed: " << ec.message();
    socket.shutdown(tcp::socket::shutdown_send, ec);
    const std::string received = readUntilClosed(socket).value_or("(the server did not close)");
    EXPECT_TRUE(received.starts_with(std::string("HTTP/1.1 ") + status))
        << framing << ": " << received.substr(0, 200);
  }
}

// A chunked body's last chunk or trailer ended by a bare LF ("0\n\n") gets 400 at once, as a
// bare LF elsewhere in its framing does. The parser looks for CR LF CR LF there, and used to
// leave such a client unanswered until request_timeout closed the connection. (The client does
// not half-close here: its end of stream would make the body partial, and 400, either way.)
TEST_F(ServiceTest, ABareLineFeedEndingAChunkedBodyGets400) {
  for (const std::string ending : {"0\n\n", "0\r\n\n", "2\r\n{}\r\n0\n\n",
                                   "0\r\nX-Trailer: 1\n\r\n", "0\r\n\r\r", "0\r\nX: a\rb"}) {
    boost::asio::io_context io;
    tcp::socket socket(io);
    socket.connect(api_endpoint_);
    boost::asio::write(socket, boost::asio::buffer("POST /v1/check HTTP/1.1\r\nHost: x\r\n"
                                                   "Transfer-Encoding: chunked\r\n\r\n" +
                                                   ending));
    const std::string received = readUntilClosed(socket).value_or("(the server did not close)");
    EXPECT_TRUE(received.starts_with("HTTP/1.1 400")) << ending << ": " << received;
  }
  // A valid chunked body sent a byte per write (so read in pieces) with extensions, data
  // holding line feeds and a trailer, is decided, not refused.
  boost::asio::io_context io;
  tcp::socket socket(io);
  socket.connect(api_endpoint_);
  socket.set_option(tcp::no_delay(true));
  const std::string body = "{\"limit\": \"per-ip\",\r\n\n \"key\": \"bytewise\"}";  // 0x29 bytes
  const std::string request =
      "POST /v1/check HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
      "Transfer-Encoding: chunked\r\n\r\n29;a=\"b\"\r\n" +
      body + "\r\n0;c\r\nX-Trailer: 1\r\n\r\n";
  for (const char byte : request) boost::asio::write(socket, boost::asio::buffer(&byte, 1));
  const std::string decided = readUntilClosed(socket).value_or("(the server did not close)");
  EXPECT_TRUE(decided.starts_with("HTTP/1.1 200") || decided.starts_with("HTTP/1.1 429"))
      << decided;
}

// A Transfer-Encoding whose final coding is not chunked leaves the body's length unknown
// (RFC 9112 6.3): such a request gets 400 and the connection closes, so that its body is never
// read as a next request, one smuggled past a proxy that framed the body another way.
TEST_F(ServiceTest, TransferEncodingNotEndingInChunkedIsRefusedAndCloses) {
  const std::string smuggled =
      "GET /v1/auth HTTP/1.1\r\nHost: x\r\nX-Original-URI: /te\r\n"
      "X-Forwarded-For: 192.0.2.60\r\n\r\n";
  for (const std::string coding : {"gzip", "identity", "chunked, identity", ""}) {
    const std::optional<std::string> received = exchangeUntilClosed(
        api_endpoint_, "POST /v1/check HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + coding +
                           "\r\n\r\n" + smuggled);
    ASSERT_TRUE(received.has_value()) << coding << ": the connection stayed open";
    EXPECT_TRUE(received->starts_with("HTTP/1.1 400")) << coding << ": " << *received;
    EXPECT_EQ(received->find("HTTP/1.", 1), std::string::npos)
        << coding << ": the body was answered as a request: " << *received;
  }
  // A coding before chunked would reach the handler still encoded: 501, not decided.
  const std::optional<std::string> gzipped = exchangeUntilClosed(
      api_endpoint_,
      "POST /v1/check HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n");
  ASSERT_TRUE(gzipped.has_value());
  EXPECT_TRUE(gzipped->starts_with("HTTP/1.1 501")) << *gzipped;
  // Nor is chunked with something after it that is not a coding of its own.
  for (const std::string coding : {"chunked;x", "chunked x"}) {
    const std::optional<std::string> odd = exchangeUntilClosed(
        api_endpoint_,
        "POST /v1/check HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + coding + "\r\n\r\n0\r\n\r\n");
    ASSERT_TRUE(odd.has_value()) << coding;
    EXPECT_TRUE(odd->starts_with("HTTP/1.1 501")) << coding << ": " << *odd;
  }
  // Empty list elements count for nothing (RFC 9110 5.6.1): chunked alone, read as such.
  for (const std::string coding : {"chunked,", ", chunked", "chunked , ,", "CHUNKED"}) {
    const std::string listed_body = R"({"limit": "per-ip", "key": "te-list"})";  // 0x25 bytes
    const std::optional<std::string> listed =
        exchangeUntilClosed(api_endpoint_,
                            "POST /v1/check HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                            "Transfer-Encoding: " +
                                coding + "\r\n\r\n25\r\n" + listed_body + "\r\n0\r\n\r\n");
    ASSERT_TRUE(listed.has_value()) << coding;
    EXPECT_TRUE(listed->starts_with("HTTP/1.1 200") || listed->starts_with("HTTP/1.1 429"))
        << coding << ": " << *listed;  // decided: admitted, or over per-ip's 3/min
  }
  // None of the bodies took a unit of 192.0.2.60's 3/min.
  EXPECT_EQ(auth("/te", "192.0.2.60").header("x-ratelimit-remaining"), "2");

  // A chunked body is read as one in HTTP/1.1; HTTP/1.0 has no Transfer-Encoding (RFC 9112 6.1).
  const std::string body = R"({"limit": "per-ip", "key": "te"})";
  char size_hex[16] = {};
  std::to_chars(size_hex, size_hex + sizeof size_hex, body.size(), 16);
  const std::string chunked = "Host: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
                              std::string(size_hex) + "\r\n" + body + "\r\n0\r\n\r\n";
  const std::optional<std::string> answer =
      exchangeUntilClosed(api_endpoint_, "POST /v1/check HTTP/1.1\r\n" + chunked);
  ASSERT_TRUE(answer.has_value());
  EXPECT_TRUE(answer->starts_with("HTTP/1.1 200")) << *answer;
  const std::optional<std::string> refused =
      exchangeUntilClosed(api_endpoint_, "POST /v1/check HTTP/1.0\r\n" + chunked);
  ASSERT_TRUE(refused.has_value());
  EXPECT_TRUE(refused->starts_with("HTTP/1.1 400")) << *refused;
}

// RFC 9112 3.2.2: a server accepts a target in absolute form, as its path (and its authority in
// place of Host), on the API as on the admin listener.
TEST_F(ServiceTest, AbsoluteFormTargetsAreReadAsTheirPath) {
  const std::string body = R"({"limit": "per-ip", "key": "absolute"})";
  const std::optional<std::string> checked =
      exchangeUntilClosed(api_endpoint_,
                          "POST http://127.0.0.1/v1/check?x=1 HTTP/1.1\r\nHost: elsewhere\r\n"
                          "Connection: close\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body);
  ASSERT_TRUE(checked.has_value());
  EXPECT_TRUE(checked->starts_with("HTTP/1.1 200")) << *checked;
  EXPECT_NE(checked->find("\"allowed\":true"), std::string::npos) << *checked;
  const std::optional<std::string> health =
      exchangeUntilClosed(admin_endpoint_,
                          "GET HTTP://localhost:9090/healthz HTTP/1.1\r\nHost: x\r\n"
                          "Connection: close\r\n\r\n");
  ASSERT_TRUE(health.has_value());
  EXPECT_TRUE(health->starts_with("HTTP/1.1 200")) << *health;
}

// RFC 9112 3.2: an HTTP/1.1 request without Host, with two, or with one that is no host[:port]
// gets 400, on the API as at the gateway; HTTP/1.0 needs none. None of them is decided.
TEST_F(ServiceTest, AnHttp11RequestNeedsOneValidHost) {
  const std::string check = "GET /v1/auth HTTP/1.1\r\nX-Original-URI: /host\r\n";
  for (const std::string host :
       {"", "Host: a\r\nHost: b\r\n", "Host: a b\r\n", "Host: user@a\r\n"}) {
    const std::optional<std::string> answer =
        exchangeUntilClosed(api_endpoint_, check + host + "Connection: close\r\n\r\n");
    ASSERT_TRUE(answer.has_value()) << host;
    EXPECT_TRUE(answer->starts_with("HTTP/1.1 400")) << host << ": " << *answer;
    EXPECT_NE(answer->find("Host"), std::string::npos) << host << ": " << *answer;
  }
  const std::optional<std::string> old_client =
      exchangeUntilClosed(api_endpoint_, "GET /v1/auth HTTP/1.0\r\nX-Original-URI: /host\r\n\r\n");
  ASSERT_TRUE(old_client.has_value());
  EXPECT_TRUE(old_client->starts_with("HTTP/1.0 200") || old_client->starts_with("HTTP/1.1 200"))
      << *old_client;
  const std::optional<std::string> named = exchangeUntilClosed(
      api_endpoint_, check + "Host: 127.0.0.1:8080\r\nConnection: close\r\n\r\n");
  ASSERT_TRUE(named.has_value());
  EXPECT_TRUE(named->starts_with("HTTP/1.1 200")) << *named;
}

// A chunk-size line that never ends (the bytes keep coming, no CRLF) is refused with 400 once
// it passes what a header may hold; the server held all of it, growing by megabytes a second
// until the request's timeout, and answered nothing.
TEST_F(ServiceTest, AChunkLineThatNeverEndsGets400) {
  boost::asio::io_context io;
  tcp::socket socket(io);
  socket.connect(api_endpoint_);
  const std::string head =
      "POST /v1/check HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1;";
  boost::system::error_code ec;
  boost::asio::write(socket, boost::asio::buffer(head), ec);
  const std::string extension(1 << 20, 'a');
  for (int sent = 0; sent < 4 && !ec; ++sent) {  // 4 MiB, or until the server stops reading
    boost::asio::write(socket, boost::asio::buffer(extension), ec);
  }
  socket.shutdown(tcp::socket::shutdown_send, ec);
  const std::optional<std::string> received = readUntilClosed(socket);
  ASSERT_TRUE(received.has_value()) << "the connection stayed open";
  EXPECT_TRUE(received->starts_with("HTTP/1.1 400")) << received->substr(0, 200);
}

// The answers in `text`, in order, as far as they parse.
std::vector<http::response<http::string_body>> parseAnswers(std::string_view text) {
  std::vector<http::response<http::string_body>> answers;
  while (!text.empty()) {
    http::response_parser<http::string_body> parser;
    boost::system::error_code ec;
    while (!parser.is_done() && !text.empty()) {
      const std::size_t used = parser.put(boost::asio::buffer(text.data(), text.size()), ec);
      if (ec || used == 0) return answers;
      text.remove_prefix(used);
    }
    if (!parser.is_done()) break;
    answers.push_back(parser.release());
  }
  return answers;
}

// HTTP/1.0 with Connection: keep-alive keeps the connection open, whatever the answer (allowed,
// an error, throttled, denied), and says so; HTTP/1.0 without it closes after its answer.
TEST_F(ServiceTest, Http10KeepAliveIsHonoured) {
  const auto auth10 = [](const std::string& uri, const std::string& connection) {
    return "GET /v1/auth HTTP/1.0\r\nX-Original-URI: " + uri +
           "\r\nX-Forwarded-For: 192.0.2.70\r\n" + connection + "\r\n";
  };
  const std::string keep_alive = "Connection: keep-alive\r\n";
  // The second /search/q comes within the throttle's 50 ms of the first, so it is normally held
  // on a timer and answered from it (not asserted: that depends on the machine's speed).
  const std::string requests = auth10("/search/q", keep_alive) + auth10("/search/q", keep_alive) +
                               "GET /nowhere HTTP/1.0\r\n" + keep_alive + "\r\n" +
                               "POST /v1/check HTTP/1.0\r\nContent-Length: 9\r\n" + keep_alive +
                               "\r\n{not json" + auth10("/k", keep_alive) +
                               auth10("/k", keep_alive) + auth10("/k", "");
  const std::optional<std::string> received = exchangeUntilClosed(api_endpoint_, requests);
  ASSERT_TRUE(received.has_value())
      << "the connection stayed open after HTTP/1.0 without keep-alive";
  const auto answers = parseAnswers(*received);
  ASSERT_EQ(answers.size(), 7u) << *received;
  EXPECT_EQ(answers[0].result_int(), 200);
  EXPECT_EQ(answers[1].result_int(), 200);
  EXPECT_EQ(answers[2].result_int(), 404);
  EXPECT_EQ(answers[3].result_int(), 400);
  EXPECT_EQ(answers[4].result_int(), 200);
  EXPECT_EQ(answers[5].result_int(), 429);
  EXPECT_EQ(answers[6].result_int(), 429);
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(answers[i].version(), 10u);
    EXPECT_EQ(answers[i][http::field::connection], "keep-alive") << "answer " << i;
  }
  EXPECT_EQ(answers[6][http::field::connection], "");
}

// Empty lines before a request-line are skipped (RFC 9112 2.2): a client that ends a POST body
// with CRLF, or sends one (or a bare LF) ahead of its first request, still has its pipelined
// requests answered.
TEST_F(ServiceTest, EmptyLinesBeforeARequestAreSkipped) {
  const std::optional<std::string> received = exchangeUntilClosed(
      api_endpoint_,
      "\r\nPOST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok\r\n"
      "GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n\n\r\n\r\n"
      "GET /elsewhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  ASSERT_TRUE(received.has_value()) << "the connection stayed open";
  const auto answers = parseAnswers(*received);
  ASSERT_EQ(answers.size(), 3u) << *received;
  EXPECT_EQ(answers[0].result_int(), 400);  // "ok" is not JSON
  EXPECT_EQ(answers[1].result_int(), 404) << *received;
  EXPECT_EQ(answers[2].result_int(), 404) << *received;

  // Empty lines that arrive on their own, while the server waits for a request.
  boost::asio::io_context io;
  tcp::socket socket(io);
  socket.connect(api_endpoint_);
  boost::asio::write(socket, boost::asio::buffer(std::string("\r\n\r\n")));
  boost::asio::write(socket, boost::asio::buffer(std::string("\n")));
  boost::asio::write(socket, boost::asio::buffer(std::string(
                                 "GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")));
  const std::optional<std::string> answer = readUntilClosed(socket);
  ASSERT_TRUE(answer.has_value()) << "the connection stayed open";
  EXPECT_TRUE(answer->starts_with("HTTP/1.1 404")) << *answer;
}

}  // namespace
}  // namespace sluice::server
