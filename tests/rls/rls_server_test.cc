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
#include "store/memory_store.h"
#include "support/captured_log.h"
#include "support/lyft_configs.h"

namespace sluice::rls {
namespace {

using envoy::service::ratelimit::v3::RateLimitService;
using sluice::testing::kLyftConfigDir;

constexpr Micros kServerStart = 1'800'000'000LL * kMicrosPerSecond;

RateLimitRequest request(const std::string& domain, const std::string& key,
                         const std::string& value) {
  RateLimitRequest out;
  out.set_domain(domain);
  auto& entry = *out.add_descriptors()->add_entries();
  entry.set_key(key);
  entry.set_value(value);
  return out;
}

// A real gRPC server on 127.0.0.1:0 and a real gRPC client, in one process.
class RlsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    settings_.listen = "127.0.0.1:0";
    settings_.config_dir = kLyftConfigDir;
    settings_.decider.response_headers = true;
    server_ = std::make_unique<RlsServer>(engine_, clock_, settings_);
    const auto endpoint = server_->start();
    ASSERT_TRUE(endpoint.ok()) << endpoint.error();
    ASSERT_NE(endpoint.value().port(), 0);
    port_ = endpoint.value().port();
    const std::string target = "127.0.0.1:" + std::to_string(port_);
    channel_ = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
    stub_ = RateLimitService::NewStub(channel_);
  }

  grpc::Status call(const RateLimitRequest& request, RateLimitResponse& response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return stub_->ShouldRateLimit(&context, request, &response);
  }

  // A new directory under the temporary one, its name from `stem` and this test's run.
  std::filesystem::path freshDir(const std::string& stem) const {
    const auto dir = std::filesystem::temp_directory_path() /
                     (stem + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                      "-" + std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    std::filesystem::create_directories(dir);
    return dir;
  }

  FakeClock clock_{kServerStart};
  MemoryStore store_;
  Engine engine_{store_, clock_};
  RlsSettings settings_;
  std::unique_ptr<RlsServer> server_;
  unsigned short port_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<RateLimitService::Stub> stub_;
};

// Over the wire: OK with the status and headers, then OVER_LIMIT on the fourth hit of 3/min.
TEST_F(RlsServerTest, AnswersOverGrpc) {
  const RateLimitRequest address = request("envoy", "remote_address", "192.0.2.1");
  for (std::uint32_t remaining : {2u, 1u, 0u}) {
    RateLimitResponse response;
    ASSERT_TRUE(call(address, response).ok());
    EXPECT_EQ(response.overall_code(), RateLimitResponse::OK);
    EXPECT_EQ(response.statuses(0).limit_remaining(), remaining);
  }
  RateLimitResponse over;
  ASSERT_TRUE(call(address, over).ok());
  EXPECT_EQ(over.overall_code(), RateLimitResponse::OVER_LIMIT);
  ASSERT_GE(over.response_headers_to_add_size(), 1);
  EXPECT_EQ(over.response_headers_to_add(0).key(), "X-RateLimit-Limit");
  EXPECT_EQ(over.response_headers_to_add(0).value(), "3");
  const std::string metrics = server_->metricsText();
  EXPECT_NE(metrics.find("sluice_rls_requests_total{result=\"over_limit\"} 1"), std::string::npos);
  // Hits count every request, over the limit or not, as lyft's total_hits does.
  EXPECT_NE(metrics.find("sluice_rls_rule_hits_total{rule=\"envoy.remote_address\"} 4"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("sluice_rls_rule_over_limit_total{rule=\"envoy.remote_address\"} 1"),
            std::string::npos);
}

// detailed_metric rules also count per request value, in their own series.
TEST_F(RlsServerTest, DetailedMetricSeries) {
  RateLimitResponse response;
  ASSERT_TRUE(call(request("envoy", "detailed", "alice"), response).ok());
  ASSERT_TRUE(call(request("envoy", "detailed", "bob"), response).ok());
  const std::string metrics = server_->metricsText();
  EXPECT_NE(metrics.find("sluice_rls_rule_hits_total{rule=\"envoy.detailed\"} 2"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("sluice_rls_rule_hits_total{rule=\"envoy.detailed_alice\"} 1"),
            std::string::npos);
  EXPECT_NE(metrics.find("sluice_rls_rule_hits_total{rule=\"envoy.detailed_bob\"} 1"),
            std::string::npos);
  EXPECT_EQ(metrics.find("remote_address_"), std::string::npos);  // not detailed: no values
}

// hits_addend comes from the request: a huge one makes a rule's hit counts stop at the top, as a
// counter that wrapped to a small number would read as a reset.
TEST_F(RlsServerTest, HitCountsStopAtTheTop) {
  RateLimitRequest huge = request("envoy", "detailed", "alice");
  huge.mutable_descriptors(0)->mutable_hits_addend()->set_value(
      std::numeric_limits<std::uint64_t>::max());
  RateLimitRequest two = request("envoy", "detailed", "alice");
  two.set_hits_addend(2);
  for (const RateLimitRequest* sent : {&huge, &two}) {
    RateLimitResponse response;
    ASSERT_TRUE(call(*sent, response).ok());
  }
  const std::string top = std::to_string(std::numeric_limits<std::uint64_t>::max());
  const std::string metrics = server_->metricsText();
  EXPECT_NE(metrics.find("sluice_rls_rule_hits_total{rule=\"envoy.detailed\"} " + top),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("sluice_rls_rule_hits_total{rule=\"envoy.detailed_alice\"} " + top),
            std::string::npos)
      << metrics;
}

// Request values are not bounded, so detailed series are: a tuple longer than a few hundred
// bytes is counted in the rule's overflow series, and /metrics stays small, the counts adding up.
TEST_F(RlsServerTest, DetailedMetricSeriesAreBounded) {
  RateLimitResponse response;
  ASSERT_TRUE(call(request("envoy", "detailed", "alice"), response).ok());
  constexpr int kLong = 40;
  for (int i = 0; i < kLong; ++i) {
    const std::string value = std::to_string(i) + std::string(100'000, 'v');
    ASSERT_TRUE(call(request("envoy", "detailed", value), response).ok());
  }
  const std::string metrics = server_->metricsText();
  EXPECT_LT(metrics.size(), 16'384u);
  EXPECT_NE(metrics.find("sluice_rls_rule_hits_total{rule=\"envoy.detailed\"} " +
                         std::to_string(kLong + 1)),
            std::string::npos)
      << metrics.substr(0, 4096);
  EXPECT_NE(metrics.find("sluice_rls_rule_hits_total{rule=\"envoy.detailed_alice\"} 1"),
            std::string::npos);
  EXPECT_NE(metrics.find("sluice_rls_rule_hits_total{rule=\"envoy.detailed#overflow\"} " +
                         std::to_string(kLong)),
            std::string::npos)
      << metrics.substr(0, 4096);
}

// Label values keep every character, escaped as the Prometheus text format says; other control
// characters, which a request's value may hold and a terminal would obey, as %XX.
TEST(LabelValueTest, EscapesBackslashQuoteAndNewline) {
  EXPECT_EQ(labelValue("plain.rule_1"), "plain.rule_1");
  EXPECT_EQ(labelValue("ab\ncd"), "ab\\ncd");
  EXPECT_EQ(labelValue("\nstart"), "\\nstart");
  EXPECT_EQ(labelValue("xy\"\nz"), "xy\\\"\\nz");
  EXPECT_EQ(labelValue("back\\slash"), "back\\\\slash");
  EXPECT_EQ(labelValue(std::string("a\r\x01\x1b[2J\x7f\0", 9)), "a%0D%01%1B[2J%7F%00");
  EXPECT_EQ(labelValue("csi\xc2\x9b"
                       "31m"),
            "csi%C2%9B31m");
  EXPECT_EQ(labelValue("caf\xc3\xa9 \xc2\xa0\xe2\x82\xac"),
            "caf\xc3\xa9 \xc2\xa0\xe2\x82\xac");  // no controls
}

// A request's value can spell another rule's name (here "vip.tier" of the detailed key reads
// detailed_vip.tier, the name of the rule nested under detailed: vip): the page still holds one
// sample per series, the two counts summed.
TEST_F(RlsServerTest, DetailedSeriesSpellingARuleShareItsSample) {
  RateLimitRequest nested;
  nested.set_domain("envoy");
  auto* descriptor = nested.add_descriptors();
  for (const auto& [key, value] : {std::pair{"detailed", "vip"}, std::pair{"tier", "gold"}}) {
    auto* entry = descriptor->add_entries();
    entry->set_key(key);
    entry->set_value(value);
  }
  RateLimitResponse response;
  ASSERT_TRUE(call(nested, response).ok());
  ASSERT_TRUE(call(request("envoy", "detailed", "vip.tier"), response).ok());
  const std::string metrics = server_->metricsText();
  const std::string sample = "sluice_rls_rule_hits_total{rule=\"envoy.detailed_vip.tier\"} ";
  const std::size_t first = metrics.find(sample);
  ASSERT_NE(first, std::string::npos) << metrics;
  EXPECT_EQ(metrics.substr(first + sample.size(), 2), "2\n") << metrics;
  EXPECT_EQ(metrics.find(sample, first + 1), std::string::npos) << metrics;
}

// grpc.health.v1.Health/Check for `service`, over a generic call: the status and the reply's
// bytes.
std::pair<grpc::Status, std::string> healthCheck(const std::shared_ptr<grpc::Channel>& channel,
                                                 const std::string& service) {
  grpc::GenericStub generic(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  // HealthCheckRequest{service}: field 1, length-delimited; "" encodes to no bytes.
  const std::string encoded =
      service.empty() ? "" : "\x0a" + std::string(1, static_cast<char>(service.size())) + service;
  grpc::Slice slice(encoded);
  grpc::ByteBuffer request(&slice, 1);
  std::promise<std::pair<grpc::Status, std::string>> answered;
  grpc::ByteBuffer reply;
  generic.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &reply,
                    [&](grpc::Status status) {
                      std::vector<grpc::Slice> slices;
                      std::string bytes;
                      if (status.ok() && reply.Dump(&slices).ok()) {
                        for (const grpc::Slice& part : slices)
                          bytes.append(reinterpret_cast<const char*>(part.begin()), part.size());
                      }
                      answered.set_value({status, bytes});
                    });
  return answered.get_future().get();
}

// The standard gRPC health service answers SERVING, as lyft/ratelimit's does: Envoy's gRPC
// health checks and Kubernetes probes mark a host without it unhealthy. Both the server as a
// whole ("") and lyft's service name, which an Envoy cluster's grpc_health_check may name.
TEST_F(RlsServerTest, HealthServiceAnswersServing) {
  for (const std::string service : {"", "ratelimit"}) {
    const auto [status, bytes] = healthCheck(channel_, service);
    ASSERT_TRUE(status.ok()) << service << ": " << status.error_code() << " "
                             << status.error_message();
    EXPECT_EQ(bytes, std::string("\x08\x01", 2)) << service;  // {status: SERVING}
  }
  // Any other name is unknown.
  EXPECT_EQ(healthCheck(channel_, "other").first.error_code(), grpc::StatusCode::NOT_FOUND);
}

// Bad requests come back as gRPC errors with a message.
TEST_F(RlsServerTest, BadRequestsAreGrpcErrors) {
  RateLimitResponse response;
  grpc::Status empty_domain = call(request("", "k", "v"), response);
  EXPECT_EQ(empty_domain.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(empty_domain.error_message(), "domain must not be empty");
  RateLimitRequest no_descriptors;
  no_descriptors.set_domain("envoy");
  EXPECT_EQ(call(no_descriptors, response).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(call(request("nope", "k", "v"), response).error_code(), grpc::StatusCode::NOT_FOUND);
}

// Concurrent clients: exactly the limit is admitted, whatever the interleaving.
TEST_F(RlsServerTest, ConcurrentCallsAdmitExactlyTheLimit) {
  const RateLimitRequest tenant = request("envoy", "tenant", "t1");  // 100/day
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 40; ++i) {
        RateLimitResponse response;
        if (call(tenant, response).ok() && response.overall_code() == RateLimitResponse::OK) {
          ++admitted;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(admitted.load(), 100);
}

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
  RlsSettings settings = settings_;
  settings.config_dir = dir.string();
  settings.watch_interval_us = 20 * kMicrosPerMilli;
  boost::asio::io_context loop;  // outlives the server, whose timer is on it
  RlsServer server(engine_, clock_, settings);
  const auto endpoint = server.start();
  ASSERT_TRUE(endpoint.ok()) << endpoint.error();
  const auto stub = RateLimitService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(endpoint.value().port()), grpc::InsecureChannelCredentials()));
  const auto answers = [&] {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    RateLimitResponse response;
    return stub->ShouldRateLimit(&context, request("edge", "k", "v"), &response).ok();
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
  auto stub = RateLimitService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(endpoint.value().port()), grpc::InsecureChannelCredentials()));
  const auto hit = [&](const std::string& key, const std::string& value = "v") {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    RateLimitResponse response;
    ASSERT_TRUE(stub->ShouldRateLimit(&context, request("kept", key, value), &response).ok());
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
  RlsSettings settings = settings_;
  settings.config_dir = dir.string();
  settings.watch_interval_us = 20 * kMicrosPerMilli;
  boost::asio::io_context loop;  // outlives the server, whose timer is on it
  RlsServer server(engine_, clock_, settings);
  const auto endpoint = server.start();
  ASSERT_TRUE(endpoint.ok()) << endpoint.error();
  server.watchConfigDir(loop);
  std::thread watching([&] { loop.run(); });
  const auto stub = RateLimitService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(endpoint.value().port()), grpc::InsecureChannelCredentials()));
  const auto limit_now = [&] {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    RateLimitResponse response;
    const grpc::Status status =
        stub->ShouldRateLimit(&context, request("watched", "k", "v"), &response);
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

// Listening where nothing can listen is reported, not thrown.
TEST_F(RlsServerTest, BindFailureIsAnError) {
  RlsSettings settings = settings_;
  settings.listen = "192.0.2.1:1";  // TEST-NET: not an address of this machine
  RlsServer server(engine_, clock_, settings);
  const auto endpoint = server.start();
  EXPECT_FALSE(endpoint.ok());
}

// A port another server holds is refused, not shared: gRPC's default SO_REUSEPORT let a second
// process listen beside the first and take half the calls.
TEST_F(RlsServerTest, APortAlreadyServedIsRefused) {
  RlsSettings settings = settings_;
  settings.listen = "127.0.0.1:" + std::to_string(port_);
  RlsServer second(engine_, clock_, settings);
  const auto endpoint = second.start();
  EXPECT_FALSE(endpoint.ok());
  second.shutdown();
}

}  // namespace
}  // namespace sluice::rls
