#include "rls/grpc_log.h"

#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "support/captured_log.h"

namespace sluice::rls {
namespace {

using namespace std::chrono_literals;
using testing::CapturedLog;
using testing::countOf;

// gRPC's lines reach spdlog at their level, saying how many were dropped before them.
TEST(GrpcLogTest, ForwardsToSpdlogWithTheDroppedCount) {
  const CapturedLog log;
  LogThrottle throttle(1s);
  const LogThrottle::Clock::time_point start{};
  for (int i = 0; i < 5; ++i) {
    forwardGrpcLine(throttle, GPR_LOG_SEVERITY_ERROR, "hpack.cc", 7, "bad metadata", start);
  }
  forwardGrpcLine(throttle, GPR_LOG_SEVERITY_INFO, "chttp2.cc", 8, "odd", start + 1s);
  const std::string text = log.text();
  EXPECT_EQ(countOf(text, "] grpc "), 2u) << text;
  EXPECT_NE(text.find("[error] grpc hpack.cc:7: bad metadata\n"), std::string::npos) << text;
  EXPECT_NE(text.find("[info] grpc chttp2.cc:8: odd (4 more grpc lines since the last line)\n"),
            std::string::npos)
      << text;
}

// gRPC 1.51's one word that a listener is gone for good (an accept failed, out of descriptors) is
// kept for /readyz, though the throttle drops it from the log.
TEST(GrpcLogTest, AFailedAcceptIsKeptThoughTheLineIsDropped) {
  const CapturedLog log;
  LogThrottle throttle(1s);
  const LogThrottle::Clock::time_point start{};
  forwardGrpcLine(throttle, GPR_LOG_SEVERITY_ERROR, "a.cc", 1, "bad metadata", start);
  forwardGrpcLine(throttle, GPR_LOG_SEVERITY_ERROR, "tcp_server_posix.cc", 2,
                  "Failed accept4: Too many open files", start);
  EXPECT_EQ(countOf(log.text(), "Failed accept4"), 0u) << log.text();
  EXPECT_EQ(grpcListenerFailure(), "Failed accept4: Too many open files");
}

// The line before gRPC aborts on a broken invariant is never the one dropped.
TEST(GrpcLogTest, AnAssertionsLineAlwaysPasses) {
  const CapturedLog log;
  LogThrottle throttle(1s);
  const LogThrottle::Clock::time_point start{};
  forwardGrpcLine(throttle, GPR_LOG_SEVERITY_ERROR, "a.cc", 1, "bad metadata", start);
  forwardGrpcLine(throttle, GPR_LOG_SEVERITY_ERROR, "b.cc", 2, "assertion failed: x", start);
  EXPECT_NE(log.text().find("grpc b.cc:2: assertion failed: x"), std::string::npos) << log.text();
}

// Installed, gRPC's own logging goes through the throttle: a burst of its ERROR lines leaves
// at most a line or two in spdlog's log (one a second; the burst's first may be dropped if
// another test's gRPC line passed less than a second ago) and none on stderr, where gRPC writes
// without a log function. A line a second later passes and counts the dropped ones.
TEST(GrpcLogTest, InstalledGrpcLinesAreThrottled) {
  forwardGrpcLogs();
  gpr_log_verbosity_init();  // as grpc_init() does: until then gRPC prints nothing at all
  const CapturedLog log;
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 200; ++i) gpr_log(GPR_ERROR, "flood line %d", i);
  std::this_thread::sleep_for(1100ms);  // past the throttle's interval: not a measure
  gpr_log(GPR_ERROR, "after the flood");
  const std::string stderr_text = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(countOf(stderr_text, "flood"), 0u) << stderr_text.substr(0, 1024);
  const std::string text = log.text();
  EXPECT_LE(countOf(text, "flood line"), 2u) << text;
  // The flood's lines dropped, at least 199 (other tests' gRPC lines may add to the count).
  const std::string note = "after the flood (";
  const std::size_t at = text.find(note);
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_GE(std::stoul(text.substr(at + note.size())), 199u) << text;
}

}  // namespace
}  // namespace sluice::rls
