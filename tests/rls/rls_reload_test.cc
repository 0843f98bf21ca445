// The Envoy door's reloads: a broken directory keeps the config in force, an emptied one is
// refused while domains are served, rules' counts outlive a reload, and the watcher picks up
// edits by itself.
#include "rls/rls_server.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "rls/rls_server_fixture.h"
#include "store/memory_store.h"
#include "support/captured_log.h"

namespace sluice::rls {
namespace {

// reload() swaps in a new directory's config; a broken one is refused and the old one stays.
TEST_F(RlsServerTest, ReloadKeepsTheOldConfigOnErrors) {
  const std::filesystem::path dir = freshDir("sluice-rls-");
  settings_.config_dir = dir.string();
  settings_.listen = "127.0.0.1:0";
  RlsServer server(engine_, clock_, settings_);
  std::ofstream(dir / "a.yaml") << "domain: fresh\n";
  ASSERT_TRUE(server.start().ok());
  std::ofstream(dir / "a.yaml") << "domain: fresh\ndescriptors: {\n";
  const std::vector<std::string> errors = server.reload();
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].find("a.yaml:"), std::string::npos) << errors[0];
  std::ofstream(dir / "a.yaml") << "domain: fresher\n";
  EXPECT_TRUE(server.reload().empty());
  server.shutdown();
  std::filesystem::remove_all(dir);
}

// A directory that holds no domain while some are served is refused, by a reload and by the
// watcher, and the old config keeps serving: a deploy that clears the directory, then copies,
// turned every call into NOT_FOUND (helper's finding, through the watcher).
TEST_F(RlsServerTest, AnEmptiedDirectoryIsRefusedWhileDomainsAreServed) {
  const sluice::testing::CapturedLog log;
  const std::filesystem::path dir = freshDir("sluice-rls-emptied-");
  std::ofstream(dir / "d.yaml") << "domain: edge\ndescriptors:\n  - key: k\n"
                                   "    rate_limit: { unit: minute, requests_per_unit: 5 }\n";
  boost::asio::io_context loop;  // outlives the server, whose timer is on it
  RlsServer server(engine_, clock_, watchedSettings(dir));
  const auto endpoint = server.start();
  ASSERT_TRUE(endpoint.ok()) << endpoint.error();
  const auto stub = stubFor(endpoint.value());
  const auto answers = [&] {
    RateLimitResponse response;
    return callOn(*stub, request("edge", "k", "v"), response).ok();
  };
  ASSERT_TRUE(answers());

  std::filesystem::rename(dir / "d.yaml", dir / ".d.yaml.away");  // hidden: not a config file
  const std::vector<std::string> errors = server.reload();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("holds no domain config now"), std::string::npos) << errors[0];
  EXPECT_TRUE(answers());

  server.watchConfigDir(loop);
  std::thread watching([&] { loop.run(); });
  // Polls the log until the watcher has refused it too; false after 5 s (a bound, not a measure).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (log.text().find("reload refused") == std::string::npos &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(log.text().find("holds no domain config now"), std::string::npos) << log.text();
  EXPECT_TRUE(answers());
  server.shutdown();
  loop.stop();
  watching.join();
  std::filesystem::remove_all(dir);
}

// A rule's counters outlive a reload that keeps the rule, as lyft's stats do: a Prometheus
// counter that fell to 0 whenever the files changed would read as a reset. A rule new in the
// reloaded files starts at 0, and a rule gone from them is no longer listed.
TEST_F(RlsServerTest, ReloadKeepsTheCountsOfRulesThatStay) {
  const std::filesystem::path dir = freshDir("sluice-rls-counts-");
  // Two more rules that read alike (kept.a_b): one sample, their counts summed, and after a
  // reload the sum goes on. (Each kept its own counts, and a reload carried over only the
  // first's to both: the sample fell from 2 to 1, which Prometheus reads as a reset.)
  const auto write = [&](const std::string& second_key) {
    std::ofstream(dir / "d.yaml") << "domain: kept\ndescriptors:\n"
                                     "  - key: stays\n"
                                     "    rate_limit: { unit: minute, requests_per_unit: 2 }\n"
                                     "  - key: a_b\n"
                                     "    rate_limit: { unit: minute, requests_per_unit: 9 }\n"
                                     "  - key: a\n    value: b\n"
                                     "    rate_limit: { unit: minute, requests_per_unit: 9 }\n"
                                     "  - key: "
                                  << second_key
                                  << "\n    rate_limit: { unit: minute, requests_per_unit: 2 }\n";
  };
  write("leaves");
  RlsSettings settings = settings_;
  settings.config_dir = dir.string();
  RlsServer server(engine_, clock_, settings);
  const auto endpoint = server.start();
  ASSERT_TRUE(endpoint.ok()) << endpoint.error();
  const auto stub = stubFor(endpoint.value());
  const auto hit = [&](const std::string& key, const std::string& value = "v") {
    RateLimitResponse response;
    ASSERT_TRUE(callOn(*stub, request("kept", key, value), response).ok());
  };
  for (int i = 0; i < 3; ++i) hit("stays");
  hit("leaves");
  hit("a_b", "x");
  hit("a", "b");
  const std::string before = server.metricsText();
  EXPECT_NE(before.find("sluice_rls_rule_hits_total{rule=\"kept.a_b\"} 2\n"), std::string::npos)
      << before;

  write("arrives");
  ASSERT_TRUE(server.reload().empty());
  hit("stays");
  hit("arrives");
  const std::string metrics = server.metricsText();
  EXPECT_NE(metrics.find("sluice_rls_rule_hits_total{rule=\"kept.stays\"} 4"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("sluice_rls_rule_over_limit_total{rule=\"kept.stays\"} 2"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("sluice_rls_rule_hits_total{rule=\"kept.arrives\"} 1"), std::string::npos)
      << metrics;
  EXPECT_EQ(metrics.find("kept.leaves"), std::string::npos) << metrics;
  const std::string a_b = "sluice_rls_rule_hits_total{rule=\"kept.a_b\"} ";
  const std::size_t shared = metrics.find(a_b);
  ASSERT_NE(shared, std::string::npos) << metrics;
  EXPECT_EQ(metrics.find(a_b, shared + 1), std::string::npos) << metrics;  // one sample
  EXPECT_EQ(metrics.substr(shared + a_b.size(), 2), "2\n") << metrics;     // both rules' hits
  server.shutdown();
  std::filesystem::remove_all(dir);
}

// With a watch interval, an edit to the config directory is picked up without a reload call, as
// lyft/ratelimit picks up its files' changes; a broken edit keeps the config that was serving.
// Both count in the watcher's reload metric, and a directory gone (a mount lost) is logged once.
TEST_F(RlsServerTest, WatchedDirectoryChangesAreLoaded) {
  const sluice::testing::CapturedLog log;
  const std::filesystem::path dir = freshDir("sluice-rls-watch-");
  const auto write = [&](int per_minute) {
    std::ofstream(dir / "d.yaml") << "domain: watched\ndescriptors:\n  - key: k\n"
                                     "    rate_limit: { unit: minute, requests_per_unit: "
                                  << per_minute << " }\n";
  };
  write(5);
  boost::asio::io_context loop;  // outlives the server, whose timer is on it
  RlsServer server(engine_, clock_, watchedSettings(dir));
  const auto endpoint = server.start();
  ASSERT_TRUE(endpoint.ok()) << endpoint.error();
  server.watchConfigDir(loop);
  std::thread watching([&] { loop.run(); });
  const auto stub = stubFor(endpoint.value());
  const auto limit_now = [&] {
    RateLimitResponse response;
    const grpc::Status status = callOn(*stub, request("watched", "k", "v"), response);
    return status.ok() ? response.statuses(0).current_limit().requests_per_unit() : 0u;
  };
  // Polls until the served limit is `expected`; false after 5 s (a bound, not a measure).
  const auto served = [&](std::uint32_t expected) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (limit_now() != expected) {
      if (std::chrono::steady_clock::now() > give_up) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  };
  EXPECT_TRUE(served(5));
  write(7);
  EXPECT_TRUE(served(7));
  std::ofstream(dir / "d.yaml") << "domain: watched\ndescriptors: {\n";  // broken
  // Time for the watcher to look at it a few times: the old config keeps serving.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(limit_now(), 7u);
  write(9);  // mended: the watcher goes on after a refused change
  EXPECT_TRUE(served(9));
  const std::string metrics = server.metricsText();
  EXPECT_EQ(metrics.find("sluice_rls_config_reloads_total{result=\"ok\"} 0\n"), std::string::npos)
      << metrics;
  EXPECT_EQ(metrics.find("sluice_rls_config_reloads_total{result=\"failed\"} 0\n"),
            std::string::npos)
      << metrics;
  const auto gone = dir.string() + ".gone";
  // Polls the log until it holds `line`; false after 5 s (a bound, not a measure).
  const auto logged = [&](const std::string& line) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (log.text().find(line) == std::string::npos) {
      if (std::chrono::steady_clock::now() > give_up) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  };
  std::filesystem::rename(dir, gone);
  EXPECT_TRUE(logged("cannot be read; the config loaded last keeps serving")) << log.text();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));  // more looks at nothing
  EXPECT_EQ(limit_now(), 9u);
  std::filesystem::rename(gone, dir);
  EXPECT_TRUE(logged("can be read again")) << log.text();
  server.shutdown();
  loop.stop();
  watching.join();
  EXPECT_EQ(sluice::testing::countOf(log.text(), "cannot be read"), 1u) << log.text();  // once
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::rls
