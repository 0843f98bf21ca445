// The admin /metrics exposition: counters and the latency histogram as Prometheus reads them.
#include "server/metrics.h"

#include <string>

#include <gtest/gtest.h>

namespace sluice::server {
namespace {

bool has(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

// The histogram's sum keeps every microsecond however large it grows: six significant digits
// would print 123456.789012 s and 123456.799012 s alike.
TEST(MetricsTest, LatencySumKeepsEveryMicrosecond) {
  Metrics metrics;
  metrics.observeDecisionLatency(123'456'789'012);
  metrics.observeDecisionLatency(7);
  const std::string text = metrics.render(0);
  EXPECT_TRUE(has(text, "sluice_decision_duration_seconds_sum 123456.789019")) << text;
  EXPECT_TRUE(has(text, "sluice_decision_duration_seconds_count 2")) << text;
}

TEST(MetricsTest, SmallLatencySum) {
  Metrics metrics;
  metrics.observeDecisionLatency(42);
  const std::string text = metrics.render(3);
  EXPECT_TRUE(has(text, "sluice_decision_duration_seconds_sum 0.000042")) << text;
  EXPECT_TRUE(has(text, "sluice_decision_duration_seconds_bucket{le=\"5e-05\"} 1")) << text;
  EXPECT_TRUE(has(text, "sluice_decision_duration_seconds_bucket{le=\"2.5e-05\"} 0")) << text;
  EXPECT_TRUE(has(text, "sluice_keys 3")) << text;
}

TEST(MetricsTest, CountersAndEscapedLabels) {
  Metrics metrics;
  metrics.countDecision("per\"ip", Metrics::Result::kDenied);
  metrics.countDecision("per\"ip", Metrics::Result::kDenied);
  metrics.countDegraded();
  metrics.countReload(false);
  const std::string text = metrics.render(0);
  EXPECT_TRUE(has(text, R"(sluice_decisions_total{limit="per\"ip",result="denied"} 2)")) << text;
  EXPECT_TRUE(has(text, "sluice_degraded_decisions_total 1")) << text;
  EXPECT_TRUE(has(text, "sluice_config_reloads_total{result=\"failed\"} 1")) << text;
}

}  // namespace
}  // namespace sluice::server
