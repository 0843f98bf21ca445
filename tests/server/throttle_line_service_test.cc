// The decision API holds throttled requests in line: 40 requests held at once on one key each
// decide again about once when their turn comes, instead of all of them at every freed unit.
#include <unistd.h>
#include <filesystem>
#include <fstream>
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

TEST(ThrottleLineServiceTest, HeldRequestsDecideAgainInTurn) {
  const std::string dir = ::testing::TempDir() + "/throttle-line-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/sluice.yaml";
  std::ofstream(path) << kThrottleLineConfig;
  policy::LoadResult loaded = policy::loadPolicy(path);
  ASSERT_NE(loaded.policy, nullptr) << (loaded.errors.empty() ? "" : loaded.errors[0]);
  SystemClock clock;
  IoPool pool(2);
  Service service(loaded.policy, path, clock);
  const HttpServerLimits limits{.max_header_bytes = 16 * 1024,
                                .max_body_bytes = 4096,
                                .request_timeout_us = 30 * kMicrosPerSecond,
                                .max_connections = 200};
  HttpServer api(pool, limits, [&](auto&& request, const auto& peer, auto& loop, auto respond) {
    service.handleApi(std::move(request), peer, loop, std::move(respond));
  });
  HttpServer admin(pool, limits, [&](auto&& request, const auto& peer, auto& loop, auto respond) {
    service.handleAdmin(std::move(request), peer, loop, std::move(respond));
  });
  const auto api_endpoint = api.listen("127.0.0.1:0").value();
  const auto admin_endpoint = admin.listen("127.0.0.1:0").value();
  pool.run(/*block=*/false);

  constexpr int kRequests = 40;
  std::vector<int> statuses(kRequests, 0);
  std::vector<std::thread> clients;
  for (int i = 0; i < kRequests; ++i) {
    clients.emplace_back([&, i] {
      statuses[i] =
          httpCall(api_endpoint, http::verb::post, "/v1/check", R"({"limit":"paced","key":"k"})")
              .status;
    });
  }
  for (std::thread& client : clients) client.join();
  for (int i = 0; i < kRequests; ++i) EXPECT_EQ(statuses[i], 200) << i;
  // About three passes a request: its first try, its turn, the unit it waited for. Deciding all
  // held requests again at every freed unit made about 40 * 41 / 2.
  EXPECT_LE(decisionsMade(admin_endpoint), 4u * kRequests);
  api.shutdown();
  admin.shutdown();
  pool.stop();
}

}  // namespace
}  // namespace sluice::server
