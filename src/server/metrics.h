// Counters for the admin /metrics endpoint, in Prometheus text format.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "policy/decide.h"
#include "sluice/time.h"

namespace sluice::server {

class Metrics {
 public:
  // What happened to one limit of one request.
  enum class Result { kAllowed, kDenied, kThrottled, kShadowDenied };  // kResults of them

  // All thread-safe.
  // One decision pass of a request, as every door counts it: its latency and a degraded answer;
  // then, when a throttle holds it, "throttled" once per request (`throttle_counted`: it was
  // already, on an earlier wait or when it queued); else, decided for good, each enforced
  // limit's answer as it bore on the request (an allowed check of a denied request is not counted
  // as allowed) and each shadow limit that would have denied.
  void countPass(const policy::PolicyDecision& decision, Micros latency_us, bool throttle_counted);
  // A request queued undecided behind those held on `check` (PolicyDecision::queue_behind):
  // "throttled" for that limit, once per request, as countPass counts a held one.
  void countQueued(const policy::PlannedCheck& check);
  void observeDecisionLatency(Micros latency_us) noexcept;
  void countDegraded() noexcept { degraded_decisions_.fetch_add(1, std::memory_order_relaxed); }
  // A request held by a throttle whose client hung up before its turn.
  void countClientGone() noexcept { client_gone_.fetch_add(1, std::memory_order_relaxed); }
  void countReload(bool ok) noexcept { (ok ? reloads_ok_ : reloads_failed_).fetch_add(1); }

  // Thread-safe. The whole exposition; `keys_held` is the store's current key count.
  [[nodiscard]] std::string render(std::size_t keys_held) const;

 private:
  static constexpr std::array<double, 12> kLatencyBucketsSeconds{
      0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.1, 1};

  void countDecisionLocked(std::string_view limit, Result result);          // mutex_ held
  void countCheckLocked(const policy::PlannedCheck& check, Result result);  // mutex_ held

  mutable std::mutex mutex_;
  // By limit name, then Result. Looked up by the name as it is, with no copy: every decision of
  // every door counts here.
  static constexpr std::size_t kResults = 4;
  std::map<std::string, std::array<std::uint64_t, kResults>, std::less<>> decisions_;
  // The gateway's dynamic limits (Limit::from_webhook), all together, by Result.
  std::array<std::uint64_t, kResults> webhook_decisions_{};
  std::array<std::atomic<std::uint64_t>, kLatencyBucketsSeconds.size() + 1> latency_buckets_{};
  std::atomic<std::uint64_t> latency_sum_us_{0};
  std::atomic<std::uint64_t> degraded_decisions_{0};
  std::atomic<std::uint64_t> client_gone_{0};
  std::atomic<std::uint64_t> reloads_ok_{0};
  std::atomic<std::uint64_t> reloads_failed_{0};
};

}  // namespace sluice::server
