#include "server/metrics.h"

#include <algorithm>
#include <sstream>

namespace sluice::server {
namespace {

std::string_view resultName(Metrics::Result result) {
  switch (result) {
    case Metrics::Result::kAllowed:
      return "allowed";
    case Metrics::Result::kDenied:
      return "denied";
    case Metrics::Result::kThrottled:
      return "throttled";
    case Metrics::Result::kShadowDenied:
      return "shadow_denied";
  }
  return "unknown";
}

// Prometheus label values escape backslash, double quote and newline.
std::string labelValue(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// Microseconds as seconds with every digit: a stream's default six significant digits would
// make the histogram's sum move in steps of 10 s once it passes 10^5 s, which a busy node's sum
// does within days, and rate(sum) / rate(count) would then be off.
std::string exactSeconds(std::uint64_t micros) {
  std::string fraction = std::to_string(micros % 1'000'000);
  fraction.insert(0, 6 - fraction.size(), '0');
  return std::to_string(micros / 1'000'000) + "." + fraction;
}

}  // namespace

void Metrics::countDecisionLocked(std::string_view limit, Result result) {
  auto found = decisions_.find(limit);
  if (found == decisions_.end()) {
    found = decisions_.emplace(std::string(limit), decltype(found->second){}).first;
  }
  ++found->second[static_cast<std::size_t>(result)];
}

void Metrics::countCheckLocked(const policy::PlannedCheck& check, Result result) {
  if (check.limit != nullptr && check.limit->from_webhook) {
    ++webhook_decisions_[static_cast<std::size_t>(result)];
  } else {
    countDecisionLocked(check.label, result);
  }
}

void Metrics::observeDecisionLatency(Micros latency_us) noexcept {
  const double seconds = static_cast<double>(latency_us) / 1e6;
  std::size_t bucket = 0;
  while (bucket < kLatencyBucketsSeconds.size() && seconds > kLatencyBucketsSeconds[bucket])
    ++bucket;
  latency_buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  latency_sum_us_.fetch_add(static_cast<std::uint64_t>(latency_us), std::memory_order_relaxed);
}

void Metrics::countQueued(const policy::PlannedCheck& check) {
  std::lock_guard lock(mutex_);
  countCheckLocked(check, Result::kThrottled);
}

void Metrics::countPass(const policy::PolicyDecision& decision, Micros latency_us,
                        bool throttle_counted) {
  observeDecisionLatency(latency_us);
  if (decision.enforced.degraded || decision.shadow.degraded) countDegraded();
  if (decision.throttle_wait_us > 0) {  // held, to decide again: throttled once per request
    if (!throttle_counted) {
      std::lock_guard lock(mutex_);
      countCheckLocked(*decision.binding(), Result::kThrottled);
    }
    return;
  }
  std::lock_guard lock(mutex_);  // once for the request's every limit
  for (std::size_t i = 0; i < decision.enforced.statuses.size(); ++i) {
    const bool allowed = decision.enforced.statuses[i].allowed;
    if (decision.allowed || !allowed) {
      countCheckLocked(decision.enforced_checks[i], allowed ? Result::kAllowed : Result::kDenied);
    }
  }
  for (std::size_t i = 0; i < decision.shadow.statuses.size(); ++i) {
    if (!decision.shadow.statuses[i].allowed) {
      countCheckLocked(decision.shadow_checks[i], Result::kShadowDenied);
    }
  }
}

std::string Metrics::render(std::size_t keys_held) const {
  std::ostringstream out;
  out << "# HELP sluice_decisions_total Limit decisions by limit and result.\n"
      << "# TYPE sluice_decisions_total counter\n";
  {
    std::lock_guard lock(mutex_);
    for (const auto& [limit, counts] : decisions_) {
      for (std::size_t result = 0; result < kResults; ++result) {
        if (counts[result] == 0) continue;  // only results that happened
        out << "sluice_decisions_total{limit=\"" << labelValue(limit) << "\",result=\""
            << resultName(static_cast<Result>(result)) << "\"} " << counts[result] << "\n";
      }
    }
    if (std::any_of(webhook_decisions_.begin(), webhook_decisions_.end(),
                    [](std::uint64_t count) { return count > 0; })) {
      out << "# HELP sluice_webhook_decisions_total Decisions of the gateway's dynamic limits "
             "(from its webhook), all keys together, by result.\n"
          << "# TYPE sluice_webhook_decisions_total counter\n";
      for (std::size_t result = 0; result < kResults; ++result) {
        if (webhook_decisions_[result] == 0) continue;
        out << "sluice_webhook_decisions_total{result=\"" << resultName(static_cast<Result>(result))
            << "\"} " << webhook_decisions_[result] << "\n";
      }
    }
  }
  out << "# HELP sluice_decision_duration_seconds Time to decide one request.\n"
      << "# TYPE sluice_decision_duration_seconds histogram\n";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < kLatencyBucketsSeconds.size(); ++i) {
    cumulative += latency_buckets_[i].load(std::memory_order_relaxed);
    out << "sluice_decision_duration_seconds_bucket{le=\"" << kLatencyBucketsSeconds[i] << "\"} "
        << cumulative << "\n";
  }
  cumulative += latency_buckets_.back().load(std::memory_order_relaxed);
  // The count is the +Inf bucket, as the text format requires: a count kept apart, read after
  // the buckets while decisions went on, differed from it in scrapes under load.
  out << "sluice_decision_duration_seconds_bucket{le=\"+Inf\"} " << cumulative << "\n"
      << "sluice_decision_duration_seconds_sum "
      << exactSeconds(latency_sum_us_.load(std::memory_order_relaxed)) << "\n"
      << "sluice_decision_duration_seconds_count " << cumulative << "\n"
      << "# HELP sluice_degraded_decisions_total Decisions made without the shared store "
         "(degraded: "
         "each limit's on_error decided).\n"
      << "# TYPE sluice_degraded_decisions_total counter\n"
      << "sluice_degraded_decisions_total " << degraded_decisions_.load() << "\n"
      << "# HELP sluice_throttled_client_gone_total Requests held by a throttle whose client "
         "hung up before their turn (not decided again, not counted against the limit).\n"
      << "# TYPE sluice_throttled_client_gone_total counter\n"
      << "sluice_throttled_client_gone_total " << client_gone_.load() << "\n"
      << "# HELP sluice_keys Counters held by the store.\n"
      << "# TYPE sluice_keys gauge\n"
      << "sluice_keys " << keys_held << "\n"
      << "# HELP sluice_config_reloads_total Configuration reloads by result.\n"
      << "# TYPE sluice_config_reloads_total counter\n"
      << "sluice_config_reloads_total{result=\"ok\"} " << reloads_ok_.load() << "\n"
      << "sluice_config_reloads_total{result=\"failed\"} " << reloads_failed_.load() << "\n";
  return out.str();
}

}  // namespace sluice::server
