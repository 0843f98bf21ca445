// The Envoy door over the wire: answers, metrics per rule, health, bad requests, concurrency
// and listening. (Reloads and the directory watcher: rls_reload_test.cc.)
#include "rls/rls_server.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "rls/rls_server_fixture.h"
#include "store/memory_store.h"
#include "support/captured_log.h"
#include "support/lyft_configs.h"

namespace sluice::rls {
namespace {

using envoy::service::ratelimit::v3::RateLimitService;

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

// The server's HTTP/2 SETTINGS bound the calls one connection may have out at once: gRPC
// advertises no bound by itself, and each call out holds memory until its client reads.
TEST_F(RlsServerTest, AdvertisesABoundOnConcurrentCalls) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), port_});
  // The client preface, then an empty SETTINGS frame (length 0, type 4, flags 0, stream 0).
  const std::string preface =
      std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + std::string("\0\0\0\x04\0\0\0\0\0", 9);
  boost::asio::write(socket, boost::asio::buffer(preface));
  // The server's first frame is its SETTINGS: 6-byte entries of a 16-bit id and a 32-bit value.
  unsigned char head[9];
  boost::asio::read(socket, boost::asio::buffer(head));
  ASSERT_EQ(head[3], 0x04) << "not a SETTINGS frame";
  const std::size_t length = (std::size_t{head[0]} << 16) | (std::size_t{head[1]} << 8) | head[2];
  ASSERT_LE(length, 1024u);
  std::vector<unsigned char> payload(length);
  boost::asio::read(socket, boost::asio::buffer(payload));
  std::optional<std::uint32_t> max_streams;
  for (std::size_t at = 0; at + 6 <= payload.size(); at += 6) {
    const unsigned id = (unsigned{payload[at]} << 8) | payload[at + 1];
    const std::uint32_t value = (std::uint32_t{payload[at + 2]} << 24) |
                                (std::uint32_t{payload[at + 3]} << 16) |
                                (std::uint32_t{payload[at + 4]} << 8) | payload[at + 5];
    if (id == 0x3) max_streams = value;  // SETTINGS_MAX_CONCURRENT_STREAMS
  }
  EXPECT_EQ(max_streams, static_cast<std::uint32_t>(RlsServer::kMaxStreamsPerConnection));
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
