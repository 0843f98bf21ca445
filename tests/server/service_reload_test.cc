// Reloads of the service end to end (POST /admin/reload, and reloadInBackground as SIGHUP uses
// it): all or nothing with the other doors' hooks, one read of the file for all of them, off the
// I/O loops, shared by the requests that wait, and warnings for edits that wait for a restart.
#include "server/service.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/post.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>

#include "policy/limit_loader.h"
#include "server/service_fixture.h"
#include "support/captured_log.h"
#include "support/http_client.h"

namespace sluice::server {
namespace {

namespace http = boost::beast::http;
using testing::CapturedLog;
using testing::countOf;
using testing::httpCall;
using testing::HttpReply;

// Reload: a broken file is refused with its errors and the old policy keeps serving; a good
// one takes effect. Both are logged, as a SIGHUP's are: an operator reading the log learns of a
// reload refused over HTTP too.
TEST_F(ServiceTest, ReloadKeepsTheOldPolicyOnError) {
  const CapturedLog log;
  writeConfig("limits:\n  - { name: per-ip, rate: 3/fortnight }\n");
  const HttpReply refused = httpCall(admin_endpoint_, http::verb::post, "/admin/reload");
  EXPECT_EQ(refused.status, 422);
  EXPECT_NE(refused.body.find("fortnight"), std::string::npos);
  EXPECT_NE(refused.body.find(":2:"), std::string::npos);  // file:line
  EXPECT_EQ(auth("/z", "192.0.2.90").header("x-ratelimit-limit"), "3");
  EXPECT_NE(log.text().find("reload refused, keeping the old config: " + config_path_ + ":2:"),
            std::string::npos)
      << log.text();
  EXPECT_EQ(countOf(log.text(), "reloaded"), 0u) << log.text();

  writeConfig("limits:\n  - { name: per-ip, key: ip, algorithm: fixed_window, rate: 7/min }\n");
  EXPECT_EQ(httpCall(admin_endpoint_, http::verb::post, "/admin/reload").status, 200);
  EXPECT_EQ(auth("/z", "192.0.2.91").header("x-ratelimit-limit"), "7");
  EXPECT_EQ(countOf(log.text(), "reloaded " + config_path_), 1u) << log.text();
}

// A browser's POST, sent by whatever page it shows (it carries Origin), does not reload: the
// admin listener has no authentication, and a page could otherwise reload it at will.
TEST_F(ServiceTest, AReloadFromAWebPageIsRefused) {
  writeConfig("limits:\n  - { name: per-ip, key: ip, algorithm: fixed_window, rate: 7/min }\n");
  const HttpReply refused = httpCall(admin_endpoint_, http::verb::post, "/admin/reload", "",
                                     {{"Origin", "http://attacker.example"}});
  EXPECT_EQ(refused.status, 403);
  EXPECT_NE(refused.body.find("not taken from a web page"), std::string::npos) << refused.body;
  EXPECT_NE(auth("/z", "192.0.2.92").header("x-ratelimit-limit"), "7");
  EXPECT_EQ(httpCall(admin_endpoint_, http::verb::post, "/admin/reload").status, 200);
  EXPECT_EQ(auth("/z", "192.0.2.93").header("x-ratelimit-limit"), "7");
}

// A request held under a policy that a reload replaced keeps that policy's wait, so the drain's
// bound is the longest hold of any policy in force since start: bounded by the policy in force
// alone, a reload that dropped a 40 s throttle cut such a request off unanswered at shutdown.
TEST_F(ServiceTest, TheLongestHoldIsRememberedAcrossReloads) {
  const Micros started_with = service_->longestHoldSinceStartUs();
  writeConfig(
      "limits:\n  - { name: slow, key: ip, algorithm: token_bucket, rate: 3/min, burst: 1, "
      "action: throttle, max_delay: 45s }\n");
  ASSERT_EQ(httpCall(admin_endpoint_, http::verb::post, "/admin/reload").status, 200);
  EXPECT_EQ(service_->longestHoldSinceStartUs(), std::max(started_with, 45 * kMicrosPerSecond));
  writeConfig("limits:\n  - { name: slow, key: ip, algorithm: token_bucket, rate: 3/min }\n");
  ASSERT_EQ(httpCall(admin_endpoint_, http::verb::post, "/admin/reload").status, 200);
  EXPECT_EQ(policy::longestHoldUs(*service_->policy()), 0);
  EXPECT_EQ(service_->longestHoldSinceStartUs(), std::max(started_with, 45 * kMicrosPerSecond));
}

// A reload error that quotes the file's bytes, here half of a UTF-8 é after a backslash (YAML's
// unknown escape) and a Latin-1 byte from a hook, still gives a body that is JSON.
TEST_F(ServiceTest, ReloadErrorsQuotingRawBytesAreValidJson) {
  service_->addReloadHook(
      [](const policy::ConfigFile&, ReloadReport& report) -> std::function<void()> {
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
// files take effect. (An earlier version put the policy in force anyway, the answer saying it
// was refused.)
TEST_F(ServiceTest, AdminReloadRunsTheReloadHooksAllOrNothing) {
  int hook_calls = 0;
  int commits = 0;
  std::vector<std::string> hook_errors;
  service_->addReloadHook(
      [&](const policy::ConfigFile&, ReloadReport& report) -> std::function<void()> {
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

// A reload reads the file once: the policy and every hook judge the same text, even when the file
// is replaced while the reload runs (here by the first hook, standing for a deploy that writes
// the next version). A hook that read the file again judged the next version instead, and a
// valid reload was refused for its errors.
TEST_F(ServiceTest, AReloadsPolicyAndHooksReadTheFileOnce) {
  const std::string valid =
      "limits:\n  - { name: per-ip, key: ip, algorithm: fixed_window, rate: 7/min }\n";
  writeConfig(valid);
  std::string second_hook_read;
  service_->addReloadHook([&](const policy::ConfigFile&, ReloadReport&) -> std::function<void()> {
    writeConfig("limits: [ { name: broken\n");  // the next version, written mid-reload
    return {};
  });
  service_->addReloadHook(
      [&](const policy::ConfigFile& file, ReloadReport& report) -> std::function<void()> {
        second_hook_read = file.text;
        const policy::LoadResult again = policy::loadPolicy(file);
        report.errors.insert(report.errors.end(), again.errors.begin(), again.errors.end());
        return {};
      });
  const HttpReply reloaded = httpCall(admin_endpoint_, http::verb::post, "/admin/reload");
  EXPECT_EQ(reloaded.status, 200) << reloaded.body;
  EXPECT_EQ(second_hook_read, valid);
  EXPECT_EQ(auth("/z", "192.0.2.94").header("x-ratelimit-limit"), "7");
}

// POST /admin/reload reads and parses files off the I/O loops, on the service's reload thread:
// a keys file of megabytes held a loop for seconds, and its listeners and connections with it.
TEST_F(ServiceTest, AdminReloadRunsOffTheIoLoops) {
  std::atomic<int> on_a_loop{0};
  std::atomic<int> hook_calls{0};
  service_->addReloadHook([&](const policy::ConfigFile&, ReloadReport&) -> std::function<void()> {
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
  const CapturedLog log;
  std::mutex mutex;
  std::condition_variable changed;
  bool first_started = false;
  bool release_first = false;
  int hook_calls = 0;
  int answered = 0;
  service_->addReloadHook([&](const policy::ConfigFile&, ReloadReport&) -> std::function<void()> {
    std::unique_lock lock(mutex);
    if (++hook_calls == 1) {
      first_started = true;
      changed.notify_all();
      changed.wait_for(lock, std::chrono::seconds(10), [&] { return release_first; });
    }
    return {};
  });
  std::set<std::uint64_t> numbers;  // of the reloads the callers were answered by
  const auto count_answer = [&](const ReloadReport& report) {
    EXPECT_TRUE(report.errors.empty());
    const std::lock_guard lock(mutex);
    numbers.insert(report.number);
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
  // The 100 that shared a reload hear of one reload, logged once (as for a burst of SIGHUPs).
  EXPECT_EQ(numbers.size(), 2u);
  EXPECT_EQ(countOf(log.text(), "reloaded "), 2u) << log.text();
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

// A gate that threads wait at until it opens (for at most 10 s), counting those that arrived:
// it holds a reload (in a hook) or an I/O loop where a test wants it held.
class Gate {
 public:
  void wait() {
    std::unique_lock lock(mutex_);
    ++arrived_;
    changed_.notify_all();
    changed_.wait_for(lock, std::chrono::seconds(10), [&] { return open_; });
  }
  // True once `count` have arrived, false after 10 s.
  bool waitForArrivals(int count) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(10), [&] { return arrived_ >= count; });
  }
  void open() {
    const std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int arrived_ = 0;
  bool open_ = false;
};

// A reload hook that holds each reload at `gate`.
Service::ReloadHook hookWaitingAt(Gate& gate) {
  return [&gate](const policy::ConfigFile&, ReloadReport&) -> std::function<void()> {
    gate.wait();
    return {};
  };
}

// A reload queued or running is under way until its callers are answered: a drain waits for it,
// so that a POST /admin/reload in flight is still answered, and the process says "stopped" only
// after finishReloads() has waited for it.
TEST_F(ServiceTest, AReloadIsUnderWayUntilItsCallersAreAnswered) {
  Gate reload;
  service_->addReloadHook(hookWaitingAt(reload));
  EXPECT_FALSE(service_->reloadUnderWay());
  std::atomic<bool> answered{false};
  service_->reloadInBackground([&](const ReloadReport&) { answered = true; });
  EXPECT_TRUE(service_->reloadUnderWay());  // queued, before it starts
  ASSERT_TRUE(reload.waitForArrivals(1));
  EXPECT_TRUE(service_->reloadUnderWay());  // running
  reload.open();
  service_->finishReloads();
  EXPECT_TRUE(answered.load());
  EXPECT_FALSE(service_->reloadUnderWay());
}

// POST /admin/reload is under way until its answer is handed to the connection, not only until
// the reload thread is done: a drain that saw nothing under way in between stopped the loops, and
// the caller got an empty reply. Here the I/O loops are held busy while the reload ends.
TEST_F(ServiceTest, AnAdminReloadIsUnderWayUntilItsAnswerIsHandedOver) {
  Gate reload;
  Gate loops;
  service_->addReloadHook(hookWaitingAt(reload));
  int status = 0;
  std::thread caller(
      [&] { status = httpCall(admin_endpoint_, http::verb::post, "/admin/reload").status; });
  ASSERT_TRUE(reload.waitForArrivals(1));
  for (boost::asio::io_context* loop : pool_.loops()) {
    boost::asio::post(*loop, [&loops] { loops.wait(); });
  }
  ASSERT_TRUE(loops.waitForArrivals(static_cast<int>(pool_.loops().size())));
  reload.open();
  service_->finishReloads();  // the reload and its callers are done; the answer waits for a loop
  EXPECT_TRUE(service_->reloadUnderWay());
  loops.open();
  caller.join();
  EXPECT_EQ(status, 200);
  for (int i = 0; i < 500 && service_->reloadUnderWay(); ++i) {  // bounded: 5 s
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(service_->reloadUnderWay());
}

}  // namespace
}  // namespace sluice::server
