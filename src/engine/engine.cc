#include "engine/engine.h"

#include <algorithm>

namespace sluice {

Decision Engine::check(std::span<const LimitCheck> checks) noexcept {
  Decision decision;
  if (checks.empty()) return decision;
  // One by one rather than resize(): for the usual one or two limits, GCC's zeroing of a
  // resize is a `rep stos` whose start-up cost was a fifth of a hot-key decision.
  for (std::size_t i = 0; i < checks.size(); ++i) decision.statuses.emplace_back();
  const StoreStatus status = store_.apply(checks, clock_, decision.statuses);
  if (status != StoreStatus::kOk) {
    // Until stores that can fail arrive, an unavailable store denies: fail closed.
    decision.degraded = true;
    for (Outcome& outcome : decision.statuses) {
      outcome = Outcome{};
      outcome.reason = DenyReason::kStoreUnavailable;
    }
  }
  summarize(decision);
  return decision;
}

void summarize(Decision& decision) noexcept {
  decision.allowed = true;
  decision.binding = Decision::kNoLimit;
  decision.retry_after_us = 0;
  decision.delay_us = 0;
  for (std::size_t i = 0; i < decision.statuses.size(); ++i) {
    const Outcome& outcome = decision.statuses[i];
    decision.delay_us = std::max(decision.delay_us, outcome.delay_us);
    if (!outcome.allowed) {
      const bool first_denial = decision.allowed;
      decision.allowed = false;
      if (first_denial || outcome.retry_after_us > decision.retry_after_us) {
        decision.binding = i;
        decision.retry_after_us = outcome.retry_after_us;
      }
    } else if (decision.allowed &&
               (decision.binding == Decision::kNoLimit ||
                outcome.remaining < decision.statuses[decision.binding].remaining)) {
      decision.binding = i;
    }
  }
  if (!decision.allowed) decision.delay_us = 0;
}

}  // namespace sluice
