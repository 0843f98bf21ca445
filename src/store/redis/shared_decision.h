// A synced node's decision for one key (SyncedStore): against the global state it last pulled
// plus the units it admitted since, within its share of what the global state has left
// (sync_policy.h). Pure: the store owns the state and the locks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithm/compact_state.h"
#include "sluice/limit_spec.h"
#include "sluice/outcome.h"

namespace sluice::redis {

// What `global` says at now_us without consuming: the units it has left, when it is full.
[[nodiscard]] Outcome peek(const algorithm::CompactState& global, const LimitSpec& spec,
                           Micros now_us);

// The decision for `cost` units against `global` plus `used` units admitted here since, and
// this node's share of what `global` has left; sets `share_ran_out` when the share was what
// denied it (and leaves it as it was otherwise). A denial for the share says to retry after
// one sync interval.
[[nodiscard]] Outcome decideShared(const algorithm::CompactState& global, const LimitSpec& spec,
                                   Micros now_us, std::uint64_t used, std::uint64_t cost,
                                   std::size_t nodes, Micros sync_interval_us, bool& share_ran_out);

}  // namespace sluice::redis
