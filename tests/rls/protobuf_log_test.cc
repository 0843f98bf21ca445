#include "rls/protobuf_log.h"

#include <future>
#include <memory>
#include <string>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "rls/rls_server.h"
#include "store/memory_store.h"
#include "support/captured_log.h"

namespace sluice::rls {
namespace {

using namespace std::chrono_literals;
using testing::CapturedLog;
using testing::countOf;

// libprotobuf's lines reach spdlog at their level, saying how many were dropped before them.
TEST(ProtobufLogTest, ForwardsToSpdlogWithTheDroppedCount) {
  const CapturedLog log;
  LogThrottle throttle(1s);
  const LogThrottle::Clock::time_point start{};
  for (int i = 0; i < 5; ++i) {
    forwardProtobufLine(throttle, google::protobuf::LOGLEVEL_ERROR, "f.cc", 7, "bad", start);
  }
  forwardProtobufLine(throttle, google::protobuf::LOGLEVEL_WARNING, "f.cc", 8, "odd", start + 1s);
  const std::string text = log.text();
  EXPECT_EQ(countOf(text, "] libprotobuf"), 2u) << text;
  EXPECT_NE(text.find("[error] libprotobuf f.cc:7: bad\n"), std::string::npos) << text;
  EXPECT_NE(text.find("[warning] libprotobuf f.cc:8: odd (4 more"), std::string::npos) << text;
}

// Requests that cannot be decoded (a string field that is not UTF-8) make libprotobuf log an
// error each: through the door, a few hundred of them leave a line or two, not one each.
TEST(ProtobufLogTest, UndecodableRequestsDoNotFloodTheLog) {
  FakeClock clock{1'800'000'000LL * kMicrosPerSecond};
  MemoryStore store;
  Engine engine{store, clock};
  RlsSettings settings;
  settings.listen = "127.0.0.1:0";
  settings.config_dir = std::string(SLUICE_SOURCE_DIR) + "/tests/rls/configs";
  RlsServer server(engine, clock, settings);
  const auto endpoint = server.start();
  ASSERT_TRUE(endpoint.ok()) << endpoint.error();
  grpc::GenericStub stub(grpc::CreateChannel("127.0.0.1:" + std::to_string(endpoint.value().port()),
                                             grpc::InsecureChannelCredentials()));
  const CapturedLog log;
  ::testing::internal::CaptureStderr();  // where libprotobuf writes without a handler
  constexpr int kRequests = 300;
  int failed = 0;
  grpc::Status last;
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < kRequests; ++i) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::Slice bytes(std::string("\x0a\x02\xff\xfe", 4));  // RateLimitRequest{domain: not UTF-8}
    grpc::ByteBuffer request(&bytes, 1);
    grpc::ByteBuffer reply;
    std::promise<grpc::Status> done;
    stub.UnaryCall(&context, "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit",
                   grpc::StubOptions(), &request, &reply,
                   [&](grpc::Status status) { done.set_value(std::move(status)); });
    last = done.get_future().get();
    failed += last.ok() ? 0 : 1;
  }
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started)
          .count();
  const std::string stderr_text = ::testing::internal::GetCapturedStderr();
  const std::string metrics = server.metricsText();
  server.shutdown();
  EXPECT_EQ(failed, kRequests);
  // Said for what it is, and counted: gRPC's own decoding answered UNIMPLEMENTED, no message.
  EXPECT_EQ(last.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(last.error_message().find("not a RateLimitRequest"), std::string::npos);
  EXPECT_NE(metrics.find("sluice_rls_requests_total{result=\"error\"} " +
                         std::to_string(kRequests) + "\n"),
            std::string::npos)
      << metrics;
  const std::size_t lines = countOf(stderr_text, "UTF-8") + countOf(log.text(), "UTF-8");
  EXPECT_GE(lines, 1u) << "the first one is logged";
  // One a second at most, however long the calls took on this machine.
  EXPECT_LE(lines, static_cast<std::size_t>(seconds) + 1) << stderr_text.substr(0, 2048);
}

}  // namespace
}  // namespace sluice::rls
