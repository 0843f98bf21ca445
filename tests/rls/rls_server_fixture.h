// The Envoy door's test fixture: a real gRPC server on 127.0.0.1:0 over an in-memory store,
// and a real gRPC client, in one process (rls_server_test.cc, rls_reload_test.cc).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <boost/asio/ip/tcp.hpp>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "rls/rls_server.h"
#include "store/memory_store.h"
#include "support/lyft_configs.h"

namespace sluice::rls {

using envoy::service::ratelimit::v3::RateLimitService;

inline constexpr Micros kServerStart = 1'800'000'000LL * kMicrosPerSecond;

inline RateLimitRequest request(const std::string& domain, const std::string& key,
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
    settings_.config_dir = sluice::testing::kLyftConfigDir;
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
    return callOn(*stub_, request, response);
  }

  // A client of the server at `endpoint` (one a test started itself), and a call on it, bounded.
  static std::unique_ptr<RateLimitService::Stub> stubFor(
      const boost::asio::ip::tcp::endpoint& endpoint) {
    return RateLimitService::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(endpoint.port()), grpc::InsecureChannelCredentials()));
  }
  static grpc::Status callOn(RateLimitService::Stub& stub, const RateLimitRequest& request,
                             RateLimitResponse& response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return stub.ShouldRateLimit(&context, request, &response);
  }

  // The fixture's settings reading `dir`, its watcher looking every 20 ms.
  RlsSettings watchedSettings(const std::filesystem::path& dir) const {
    RlsSettings settings = settings_;
    settings.config_dir = dir.string();
    settings.watch_interval_us = 20 * kMicrosPerMilli;
    return settings;
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

}  // namespace sluice::rls
