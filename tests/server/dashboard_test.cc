// The admin listener's live dashboard: the page is served, locked down, and reads only series
// that /metrics exposes.
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include <unistd.h>

#include <gtest/gtest.h>
#include <boost/beast/http.hpp>

#include "policy/policy_loader.h"
#include "server/dashboard/dashboard_page.h"
#include "server/http_server.h"
#include "server/io_pool.h"
#include "server/service.h"
#include "support/http_client.h"

namespace sluice::server {
namespace {

namespace http = boost::beast::http;
using testing::httpCall;
using testing::HttpReply;

class DashboardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path =
        ::testing::TempDir() + "/dashboard-test-" + std::to_string(::getpid()) + ".yaml";
    std::ofstream(path) << "limits:\n  - { name: per-ip, key: ip, rate: 3/min }\n";
    policy::LoadResult loaded = policy::loadPolicy(path);
    ASSERT_NE(loaded.policy, nullptr) << (loaded.errors.empty() ? "" : loaded.errors[0]);
    service_ = std::make_unique<Service>(loaded.policy, path, clock_);
    admin_ = std::make_unique<HttpServer>(
        pool_, HttpServerLimits{},
        [this](auto&& request, const auto& peer, auto& loop, auto respond) {
          service_->handleAdmin(std::move(request), peer, loop, std::move(respond));
        });
    admin_endpoint_ = admin_->listen("127.0.0.1:0").value();
    pool_.run(/*block=*/false);
  }

  void TearDown() override {
    if (admin_ != nullptr) admin_->shutdown();
    pool_.stop();
  }

  IoPool pool_{1};
  SystemClock clock_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<HttpServer> admin_;
  boost::asio::ip::tcp::endpoint admin_endpoint_;
};

TEST_F(DashboardTest, ThePageIsServedAsHtmlThatLoadsNothingFromElsewhere) {
  const HttpReply page = httpCall(admin_endpoint_, http::verb::get, "/dashboard");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.header("content-type"), "text/html; charset=utf-8");
  EXPECT_EQ(page.header("cache-control"), "no-store");
  EXPECT_EQ(page.header("x-content-type-options"), "nosniff");
  const std::string policy = page.header("content-security-policy");
  EXPECT_NE(policy.find("default-src 'none'"), std::string::npos) << policy;
  EXPECT_NE(policy.find("connect-src 'self'"), std::string::npos) << policy;
  EXPECT_EQ(page.body, std::string(dashboardPage()));
  EXPECT_NE(page.body.find("<title>Sluice dashboard</title>"), std::string::npos);
  EXPECT_NE(page.body.find("fetch(\"/metrics\""), std::string::npos);
  // Text from the server is set as text only: no markup is built from it.
  EXPECT_EQ(page.body.find("innerHTML"), std::string::npos);
  EXPECT_EQ(page.body.find("http://"), std::string::npos);
  EXPECT_EQ(page.body.find("https://"), std::string::npos);
}

TEST_F(DashboardTest, EverySeriesThePageNamesIsOneMetricsExposes) {
  const std::string page(dashboardPage());
  const HttpReply metrics = httpCall(admin_endpoint_, http::verb::get, "/metrics");
  ASSERT_EQ(metrics.status, 200);
  std::set<std::string> named;
  const std::regex series_name(R"(sluice_[a-z_]+)");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), series_name);
       it != std::sregex_iterator(); ++it) {
    named.insert(it->str());
  }
  EXPECT_GE(named.size(), 6U);  // decisions, latency bucket, sum, count, degraded, keys, reloads
  for (const std::string& name : named) {
    // A sample line, or the family's TYPE line (a family with no sample yet, such as decisions
    // before the first one).
    const bool exposed = metrics.body.find("\n" + name) != std::string::npos ||
                         metrics.body.find("# TYPE " + name + " ") != std::string::npos;
    EXPECT_TRUE(exposed) << name << " is read by the dashboard but not in /metrics:\n"
                         << metrics.body;
  }
}

// A read-only path, like /metrics.
TEST_F(DashboardTest, TakesGetAndHeadOnly) {
  const HttpReply refused = httpCall(admin_endpoint_, http::verb::post, "/dashboard");
  EXPECT_EQ(refused.status, 405);
  EXPECT_EQ(refused.header("allow"), "GET, HEAD");
}

}  // namespace
}  // namespace sluice::server
