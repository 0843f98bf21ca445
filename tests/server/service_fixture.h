// The service end to end over loopback, the fixture its tests share: a real server on
// 127.0.0.1 with the configuration below (API and admin listeners), real HTTP. service_test.cc
// covers the decisions and the admin side; service_http_test.cc how the door speaks HTTP
// (framing, hosts, keep-alive, bodies over the limit).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include <poll.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http.hpp>

#include "policy/policy_loader.h"
#include "server/http_server.h"
#include "server/io_pool.h"
#include "server/service.h"
#include "support/fresh_day_clock.h"
#include "support/http_client.h"

namespace sluice::server {

// What the server sends until it closes the connection, or nullopt when it stays silent for
// 10 s: the bound keeps a server that never closes from hanging the test. (SO_RCVTIMEO would
// not: Asio's blocking read polls again after the receive timeout.)
inline std::optional<std::string> readUntilClosed(boost::asio::ip::tcp::socket& socket) {
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

inline constexpr const char* kServiceConfig = R"(
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

  testing::HttpReply auth(const std::string& uri, const std::string& client = "203.0.113.5") {
    return testing::httpCall(
        api_endpoint_, boost::beast::http::verb::get, "/v1/auth", "",
        {{"X-Original-URI", uri}, {"X-Original-Method", "GET"}, {"X-Forwarded-For", client}});
  }
  testing::HttpReply check(const std::string& body) {
    return testing::httpCall(api_endpoint_, boost::beast::http::verb::post, "/v1/check", body);
  }

  IoPool pool_{2};
  testing::FreshDayClock clock_;  // per-ip is a fixed window on the clock's minutes
  std::string config_path_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<HttpServer> api_;
  std::unique_ptr<HttpServer> admin_;
  boost::asio::ip::tcp::endpoint api_endpoint_;
  boost::asio::ip::tcp::endpoint admin_endpoint_;
};

}  // namespace sluice::server
