#include "store/on_error_policy.h"

#include <algorithm>
#include <vector>

namespace sluice {

OnErrorPolicy::OnErrorPolicy(OnErrorOptions options)
    : options_(options),
      local_(MemoryStoreOptions{.max_keys = options.local_max_keys, .shards = 16}) {}

StoreStatus OnErrorPolicy::decide(std::span<const LimitCheck> checks, const Clock& clock,
                                  std::span<Outcome> outcomes, Micros store_back_in_us) noexcept {
  const Micros retry_after_us = std::max(options_.unavailable_retry_after_us, store_back_in_us);
  const bool any_denies = std::any_of(checks.begin(), checks.end(), [](const LimitCheck& check) {
    return check.on_error == OnStoreError::kDeny;
  });
  std::vector<LimitCheck> local_checks;
  std::vector<std::size_t> local_index;
  for (std::size_t i = 0; i < checks.size(); ++i) {
    const LimitCheck& check = checks[i];
    Outcome& outcome = outcomes[i];
    outcome = Outcome{};
    outcome.limit = check.spec->limit();
    switch (check.on_error) {
      case OnStoreError::kAllow:
        outcome.allowed = true;
        outcome.remaining = check.spec->limit();
        break;
      case OnStoreError::kDeny:
        outcome.reason = DenyReason::kStoreUnavailable;
        outcome.retry_after_us = retry_after_us;
        // Nothing is known of the limit's state: say it is full until the retry, so Reset
        // (0, "full now") does not contradict Retry-After.
        outcome.reset_after_us = retry_after_us;
        break;
      case OnStoreError::kLocal:
        LimitCheck local = check;
        local.spec = &localSpec(*check.spec);
        // When another limit denies anyway, only look: all-or-nothing.
        if (any_denies) local.cost = 0;
        local_checks.push_back(local);
        local_index.push_back(i);
        break;
    }
  }
  if (!local_checks.empty()) {
    std::vector<Outcome> local_outcomes(local_checks.size());
    (void)local_.apply(local_checks, clock, local_outcomes);
    for (std::size_t j = 0; j < local_checks.size(); ++j) {
      outcomes[local_index[j]] = local_outcomes[j];
    }
  }
  return StoreStatus::kDegraded;
}

const LimitSpec& OnErrorPolicy::localSpec(const LimitSpec& spec) {
  const std::size_t nodes = options_.sluice_nodes;
  if (nodes <= 1) return spec;
  const auto key = std::make_tuple(static_cast<int>(spec.algorithm()), spec.rate().count,
                                   spec.rate().period_us, spec.burst());
  std::lock_guard lock(local_specs_mutex_);
  auto& slot = local_specs_[key];
  if (slot == nullptr) {
    const Rate share{std::max<std::uint64_t>(1, spec.rate().count / nodes), spec.rate().period_us};
    Result<LimitSpec> made =
        LimitSpec::make(spec.algorithm(), share, std::max<std::uint64_t>(1, spec.burst() / nodes));
    slot = std::make_unique<LimitSpec>(made.ok() ? std::move(made).value() : spec);
  }
  return *slot;
}

}  // namespace sluice
