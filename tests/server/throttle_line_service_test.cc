// The decision API holds throttled requests in line: 40 requests held at once on one key each
// decide again about once when their turn comes, instead of all of them at every freed unit;
// and a request that comes while others are held waits behind them.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "policy/policy_loader.h"
#include "server/http_server.h"
#include "server/io_pool.h"
#include "server/service.h"
#include "support/http_client.h"

namespace sluice::server {
namespace {

namespace http = boost::beast::http;
using sluice::testing::httpCall;

constexpr const char* kThrottleLineConfig = R"(
server: { max_connections: 200 }
limits:
  - { name: paced, key: global, algorithm: gcra, rate: 100/s, burst: 1, action: throttle,
      max_delay: 10s }
)";

// Decisions made so far, from /metrics (every pass of a held request is one).
std::uint64_t decisionsMade(const boost::asio::ip::tcp::endpoint& admin) {
  const std::string body = httpCall(admin, http::verb::get, "/metrics").body;
  const std::string name = "sluice_decision_duration_seconds_count ";
  const std::size_t at = body.find(name);
  return at == std::string::npos ? 0 : std::stoull(body.substr(at + name.size()));
}

// The service on loopback ports with the given config, its API and admin doors served.
struct LineServer {
  explicit LineServer(const std::string& config, const std::string& name)
      : dir(::testing::TempDir() + "/" + name + "-" + std::to_string(::getpid())) {
    std::filesystem::create_directories(dir);
    const std::string path = dir + "/sluice.yaml";
    std::ofstream(path) << config;
    policy::LoadResult loaded = policy::loadPolicy(path);
    EXPECT_NE(loaded.policy, nullptr) << (loaded.errors.empty() ? "" : loaded.errors[0]);
    service = std::make_unique<Service>(loaded.policy, path, clock);
    api_endpoint = api.listen("127.0.0.1:0").value();
    admin_endpoint = admin.listen("127.0.0.1:0").value();
    pool.run(/*block=*/false);
  }
  ~LineServer() {
    api.shutdown();
    admin.shutdown();
    pool.stop();
    std::filesystem::remove_all(dir);
  }
  LineServer(const LineServer&) = delete;
  LineServer& operator=(const LineServer&) = delete;

  std::string dir;
  SystemClock clock;
  IoPool pool{2};
  std::unique_ptr<Service> service;
  HttpServerLimits limits{.max_header_bytes = 16 * 1024,
                          .max_body_bytes = 4096,
                          .request_timeout_us = 30 * kMicrosPerSecond,
                          .max_connections = 200};
  HttpServer api{pool, limits, [this](auto&& request, const auto& peer, auto& loop, auto respond) {
                   service->handleApi(std::move(request), peer, loop, std::move(respond));
                 }};
  HttpServer admin{pool, limits,
                   [this](auto&& request, const auto& peer, auto& loop, auto respond) {
                     service->handleAdmin(std::move(request), peer, loop, std::move(respond));
                   }};
  boost::asio::ip::tcp::endpoint api_endpoint;
  boost::asio::ip::tcp::endpoint admin_endpoint;
};

// Requests of the limit `paced` counted as throttled so far, from /metrics.
std::uint64_t throttledCount(const boost::asio::ip::tcp::endpoint& admin) {
  const std::string body = httpCall(admin, http::verb::get, "/metrics").body;
  const std::string name = R"(sluice_decisions_total{limit="paced",result="throttled"} )";
  const std::size_t at = body.find(name);
  return at == std::string::npos ? 0 : std::stoull(body.substr(at + name.size()));
}

TEST(ThrottleLineServiceTest, HeldRequestsDecideAgainInTurn) {
  LineServer server(kThrottleLineConfig, "throttle-line");
  constexpr int kRequests = 40;
  std::vector<int> statuses(kRequests, 0);
  std::vector<std::thread> clients;
  for (int i = 0; i < kRequests; ++i) {
    clients.emplace_back([&, i] {
      statuses[i] = httpCall(server.api_endpoint, http::verb::post, "/v1/check",
                             R"({"limit":"paced","key":"k"})")
                        .status;
    });
  }
  for (std::thread& client : clients) client.join();
  for (int i = 0; i < kRequests; ++i) EXPECT_EQ(statuses[i], 200) << i;
  // About three passes a request: its first try, its turn, the unit it waited for. Deciding all
  // held requests again at every freed unit made about 40 * 41 / 2.
  EXPECT_LE(decisionsMade(server.admin_endpoint), 4u * kRequests);
  // Each counted once, held or queued (not only when held: queued ones were missed), but those
  // that went through at once: the first, and any that came as a unit freed.
  const std::uint64_t throttled = throttledCount(server.admin_endpoint);
  EXPECT_GE(throttled, kRequests / 2u);
  EXPECT_LE(throttled, kRequests - 1u);
}

// A request that arrives while another is held on the same limit and key waits behind it,
// though units are free for it now: first come, first served. It used to decide at once and
// take the units the held one waited for, so a held request of cost 3 could be starved by a
// stream of cost 1 until its max_delay ran out (helper's finding).
TEST(ThrottleLineServiceTest, ANewcomerWaitsBehindTheHeld) {
  LineServer server(R"(
limits:
  - { name: paced, key: global, algorithm: token_bucket, rate: 4/s, burst: 3, action: throttle,
      max_delay: 5s }
)",
                    "throttle-newcomer");
  const auto check = [&](int cost) {
    return httpCall(server.api_endpoint, http::verb::post, "/v1/check",
                    R"({"limit":"paced","key":"k","cost":)" + std::to_string(cost) + "}");
  };
  ASSERT_EQ(check(2).status, 200);  // 1 unit left; 3 come back in 500 ms
  std::atomic<int> finished{0};
  int held_order = 0;
  int newcomer_order = 0;
  std::string newcomer_body;
  std::thread held([&] {
    EXPECT_EQ(check(3).status, 200);
    held_order = ++finished;
  });
  // Until the first is held (counted throttled); bounded: 10 s.
  for (int i = 0; i < 1000 && throttledCount(server.admin_endpoint) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(throttledCount(server.admin_endpoint), 1u);
  std::thread newcomer([&] {
    const auto answer = check(1);  // 1.4 units free now
    EXPECT_EQ(answer.status, 200);
    newcomer_body = answer.body;
    newcomer_order = ++finished;
  });
  held.join();
  newcomer.join();
  EXPECT_EQ(held_order, 1);
  EXPECT_EQ(newcomer_order, 2);
  const std::string field = "\"delayed_ms\":";
  const std::size_t at = newcomer_body.find(field);
  ASSERT_NE(at, std::string::npos) << newcomer_body;
  EXPECT_GT(std::stol(newcomer_body.substr(at + field.size())), 0) << newcomer_body;  // held
  EXPECT_EQ(throttledCount(server.admin_endpoint), 2u);  // each counted once, queued or held
}

// After a reload that changes a limit's numbers, a request under the new ones does not wait
// behind one held under the old: the line is the limit's, key's and numbers'. It waited out the
// new max_delay behind it and then passed on the new counter's room (helper's finding).
TEST(ThrottleLineServiceTest, ANewLimitsRequestDoesNotWaitBehindTheOldOnesHeld) {
  const std::string slow = R"(
limits:
  - { name: paced, key: global, algorithm: token_bucket, rate: 30/min, burst: 1, action: throttle,
      max_delay: 30s }
)";
  LineServer server(slow, "throttle-reloaded");
  const auto check = [&] {
    return httpCall(server.api_endpoint, http::verb::post, "/v1/check",
                    R"({"limit":"paced","key":"k"})");
  };
  ASSERT_EQ(check().status, 200);  // the unit; the next comes in 2 s
  std::thread held([&] { EXPECT_EQ(check().status, 200); });
  // Until it is held (counted throttled); bounded: 10 s.
  for (int i = 0; i < 1000 && throttledCount(server.admin_endpoint) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(throttledCount(server.admin_endpoint), 1u);
  std::ofstream(server.dir + "/sluice.yaml") << R"(
limits:
  - { name: paced, key: global, algorithm: token_bucket, rate: 100/s, burst: 100,
      action: throttle, max_delay: 2s }
)";
  ASSERT_EQ(httpCall(server.admin_endpoint, http::verb::post, "/admin/reload").status, 200);
  const auto fresh = check();
  EXPECT_EQ(fresh.status, 200);
  EXPECT_NE(fresh.body.find("\"delayed_ms\":0,"), std::string::npos) << fresh.body;  // not held
  held.join();
}

}  // namespace
}  // namespace sluice::server
