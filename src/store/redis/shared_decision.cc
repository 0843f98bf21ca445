#include "store/redis/shared_decision.h"

#include <algorithm>

#include "store/redis/sync_policy.h"

namespace sluice::redis {

Outcome peek(const algorithm::CompactState& global, const LimitSpec& spec, Micros now_us) {
  algorithm::CompactState view = global;
  return algorithm::consumeCompact(view, now_us, spec, 0);
}

Outcome decideShared(const algorithm::CompactState& global, const LimitSpec& spec, Micros now_us,
                     std::uint64_t used, std::uint64_t cost, std::size_t nodes,
                     Micros sync_interval_us, bool& share_ran_out) {
  const Outcome untouched = peek(global, spec, now_us);
  const std::uint64_t share = nodeShare(untouched.remaining, nodes);
  algorithm::CompactState view = global;
  Outcome outcome = algorithm::consumeCompact(view, now_us, spec, used + cost);
  if (cost == 0) {
    outcome.allowed = true;
    outcome.reason = DenyReason::kNone;
    outcome.retry_after_us = 0;
    return outcome;
  }
  if (cost > spec.limit()) return algorithm::consumeCompact(view, now_us, spec, cost);
  if (outcome.reason == DenyReason::kCostExceedsLimit) {
    // This cost fits the limit; with the units admitted here since the last sync it does not.
    // They stay counted until the next sync, and the limit frees up as the state refills.
    outcome.reason = DenyReason::kOverLimit;
    outcome.retry_after_us = std::max(untouched.reset_after_us, sync_interval_us);
  }
  if (outcome.allowed && used + cost > share) {
    // Allowed globally, but this node has spent its share until the next sync.
    share_ran_out = true;
    outcome.allowed = false;
    outcome.reason = DenyReason::kOverLimit;
    outcome.retry_after_us = sync_interval_us;
    outcome.delay_us = 0;
  }
  const std::uint64_t left = share > used ? share - used : 0;
  outcome.remaining = std::min(outcome.remaining, outcome.allowed ? left - cost : left);
  return outcome;
}

}  // namespace sluice::redis
