// The admin listener's live dashboard: the page is served, locked down, and reads only series
// that /metrics exposes.
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include <unistd.h>

#include <gtest/gtest.h>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include "policy/policy_loader.h"
#include "server/dashboard/dashboard_page.h"
#include "server/dashboard/dashboard_security_policy.h"
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
  EXPECT_NE(policy.find("frame-ancestors 'none'"), std::string::npos) << policy;
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

// The page's script and style run because the policy names their hashes, and nothing else
// inline could: a browser hashes each inline element's text as it stands and runs it only when
// the hash is listed. An edit to the page changes the hashes, and the policy follows it.
TEST_F(DashboardTest, ThePolicyAllowsThePagesOwnScriptAndStyleByHashOnly) {
  const HttpReply page = httpCall(admin_endpoint_, http::verb::get, "/dashboard");
  ASSERT_EQ(page.status, 200);
  const std::string policy = page.header("content-security-policy");
  EXPECT_EQ(policy.find("unsafe-inline"), std::string::npos) << policy;
  const std::string script = std::string(inlineElementText(page.body, "script"));
  const std::string style = std::string(inlineElementText(page.body, "style"));
  ASSERT_GT(script.size(), 1000U);  // the whole script, not an empty match
  ASSERT_GT(style.size(), 100U);
  EXPECT_NE(policy.find("script-src " + cspHashSource(script) + ";"), std::string::npos) << policy;
  EXPECT_NE(policy.find("style-src " + cspHashSource(style) + ";"), std::string::npos) << policy;
  // One element of each: a second would not be allowed. No inline handlers or style
  // attributes either: hash sources do not cover them.
  std::size_t scripts = 0;
  for (std::size_t at = page.body.find("<script"); at != std::string::npos;
       at = page.body.find("<script", at + 1)) {
    ++scripts;
  }
  EXPECT_EQ(scripts, 1U);
  EXPECT_EQ(page.body.find("<style", page.body.find("<style") + 1), std::string::npos);
  std::string markup = page.body;
  markup.erase(markup.find(script), script.size());
  EXPECT_FALSE(std::regex_search(markup, std::regex(R"(\s(on[a-z]+|style)\s*=)")));
}

// Known answers (SHA-256 of "abc" and of nothing, in base64), so the check above cannot pass by
// the hashing being wrong the same way on both sides.
TEST(DashboardSecurityPolicyTest, HashSourcesAreTheBase64OfTheTextsSha256) {
  EXPECT_EQ(cspHashSource("abc"), "'sha256-ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0='");
  EXPECT_EQ(cspHashSource(""), "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='");
}

TEST(DashboardSecurityPolicyTest, InlineElementTextIsWhatStandsBetweenTheTags) {
  EXPECT_EQ(inlineElementText("<p>a</p><script>\nx = 1;\n</script>", "script"), "\nx = 1;\n");
  EXPECT_EQ(inlineElementText("<style></style>", "style"), "");
  EXPECT_EQ(inlineElementText("<p>no script</p>", "script"), "");
  EXPECT_EQ(inlineElementText("<script>never closed", "script"), "");
}

// HEAD: the headers a GET gets, Content-Length the page's, and no body. Read off a plain
// socket, since an HTTP client would wait for the body the length announces.
TEST_F(DashboardTest, HeadGetsTheHeadersAndNoBody) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  socket.connect(admin_endpoint_);
  const std::string request =
      "HEAD /dashboard HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  boost::asio::write(socket, boost::asio::buffer(request));
  std::string reply;
  boost::system::error_code ec;
  boost::asio::read(socket, boost::asio::dynamic_buffer(reply), ec);  // to the server's close
  ASSERT_EQ(ec, boost::asio::error::eof) << ec.message();
  EXPECT_EQ(reply.rfind("HTTP/1.1 200 OK\r\n", 0), 0U) << reply;
  EXPECT_NE(reply.find("\r\nContent-Length: " + std::to_string(dashboardPage().size()) + "\r\n"),
            std::string::npos)
      << reply;
  EXPECT_NE(reply.find("\r\nContent-Security-Policy: " + std::string(dashboardSecurityPolicy())),
            std::string::npos);
  const std::size_t head_end = reply.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos) << reply;
  EXPECT_EQ(reply.size(), head_end + 4) << "a body followed the head";
}

// A read-only path, like /metrics.
TEST_F(DashboardTest, TakesGetAndHeadOnly) {
  const HttpReply refused = httpCall(admin_endpoint_, http::verb::post, "/dashboard");
  EXPECT_EQ(refused.status, 405);
  EXPECT_EQ(refused.header("allow"), "GET, HEAD");
}

}  // namespace
}  // namespace sluice::server
