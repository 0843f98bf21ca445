// The admin /metrics exposition: counters and the latency histogram as Prometheus reads them.
#include "server/metrics.h"

#include <string>
#include <utility>

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

policy::PlannedCheck checkNamed(std::string label) {
  policy::PlannedCheck check;
  check.label = std::move(label);
  return check;
}

TEST(MetricsTest, CountersAndEscapedLabels) {
  Metrics metrics;
  policy::PolicyDecision denied;
  denied.allowed = false;
  denied.enforced_checks = {checkNamed("per\"ip")};
  denied.enforced.statuses = {Outcome{}};  // not allowed
  metrics.countPass(denied, 10, false);
  metrics.countPass(denied, 10, false);
  metrics.countDegraded();
  metrics.countReload(false);
  const std::string text = metrics.render(0);
  EXPECT_TRUE(has(text, R"(sluice_decisions_total{limit="per\"ip",result="denied"} 2)")) << text;
  EXPECT_TRUE(has(text, "sluice_degraded_decisions_total 1")) << text;
  EXPECT_TRUE(has(text, "sluice_config_reloads_total{result=\"failed\"} 1")) << text;
}

// The gateway's webhook names its limits by key, often one per user: a series each would grow
// without bound, so they count together in a family of their own (no static limit's name can
// be taken for it).
TEST(MetricsTest, WebhookLimitsCountTogether) {
  Metrics metrics;
  policy::Limit from_webhook;
  from_webhook.from_webhook = true;
  for (const std::string key : {"dynamic:user:1", "dynamic:user:2", "dynamic:user:3"}) {
    policy::PolicyDecision decision;
    decision.enforced_checks = {checkNamed("static"), checkNamed(key)};
    decision.enforced_checks[1].limit = &from_webhook;
    decision.enforced.statuses = {Outcome{}, Outcome{}};
    decision.enforced.statuses[0].allowed = decision.enforced.statuses[1].allowed = true;
    metrics.countPass(decision, 10, false);
  }
  const std::string text = metrics.render(0);
  EXPECT_TRUE(has(text, R"(sluice_decisions_total{limit="static",result="allowed"} 3)")) << text;
  EXPECT_TRUE(has(text, R"(sluice_webhook_decisions_total{result="allowed"} 3)")) << text;
  EXPECT_EQ(text.find("user:"), std::string::npos) << text;
}

Outcome outcome(bool allowed) {
  Outcome status;
  status.allowed = allowed;
  return status;
}

// A pass counts as both doors need: a denied request's allowed limits are not counted as
// allowing it, a shadow limit only when it would have denied, a throttled request once however
// many passes it takes, and every pass's latency and degraded answer.
TEST(MetricsTest, APassCountsWhatBoreOnTheRequest) {
  Metrics metrics;
  policy::PolicyDecision denied;
  denied.allowed = false;
  denied.enforced.degraded = true;
  denied.enforced_checks = {checkNamed("roomy"), checkNamed("tight")};
  denied.enforced.statuses = {outcome(true), outcome(false)};
  denied.enforced.binding = 1;
  metrics.countPass(denied, 10, false);

  policy::PolicyDecision allowed;
  allowed.enforced_checks = {checkNamed("roomy")};
  allowed.enforced.statuses = {outcome(true)};
  allowed.shadow_checks = {checkNamed("watch"), checkNamed("calm")};
  allowed.shadow.statuses = {outcome(false), outcome(true)};
  metrics.countPass(allowed, 10, false);

  policy::PolicyDecision held = denied;
  held.allowed = true;
  held.enforced.degraded = false;
  held.throttle_wait_us = 5'000;
  metrics.countPass(held, 10, false);  // its first pass
  metrics.countPass(held, 10, true);   // after waiting: the same request

  const std::string text = metrics.render(0);
  EXPECT_TRUE(has(text, R"(sluice_decisions_total{limit="roomy",result="allowed"} 1)")) << text;
  EXPECT_TRUE(has(text, R"(sluice_decisions_total{limit="tight",result="denied"} 1)")) << text;
  EXPECT_TRUE(has(text, R"(sluice_decisions_total{limit="tight",result="throttled"} 1)")) << text;
  EXPECT_TRUE(has(text, R"(sluice_decisions_total{limit="watch",result="shadow_denied"} 1)"))
      << text;
  EXPECT_EQ(text.find("limit=\"calm\""), std::string::npos) << text;
  EXPECT_TRUE(has(text, "sluice_degraded_decisions_total 1")) << text;
  EXPECT_TRUE(has(text, "sluice_decision_duration_seconds_count 4")) << text;
}

}  // namespace
}  // namespace sluice::server
