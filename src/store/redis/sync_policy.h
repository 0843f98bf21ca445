// When a synced node (SyncedStore) may admit, and when it pushes a key's deltas to Redis.
//
// Every push costs Redis the script's read and write of the key (about 4 µs, most of it the
// SET), whether it carries one unit or a thousand. With many keys each used a few times a
// second, far from their limits, pushing every key that saw a request at every sync made the
// syncs cost Redis about as much as deciding there would. So a key is pushed at once only when
// the other nodes need to hear of it soon; otherwise its units wait a few intervals, within a
// bound the burst bound already covers (below).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "sluice/time.h"

namespace sluice::redis {

// A node admits at most this much of what the global state has left between two syncs of a
// key, so that nodes cannot each spend the whole remainder at once. At least one unit while
// anything is left, so a small remainder is not stranded by the division.
[[nodiscard]] constexpr std::uint64_t nodeShare(std::uint64_t remaining,
                                                std::size_t nodes) noexcept {
  if (nodes <= 1) return remaining;
  return std::max<std::uint64_t>(remaining / nodes, std::min<std::uint64_t>(remaining, 1));
}

// Intervals after which a key in use is synced even when it has nothing due: a key with nothing
// to push is pulled (to learn the other nodes' usage), and one with units below a quarter of its
// share is pushed.
constexpr int kSlowSyncEvery = 5;

// Whether a scheduled sync pushes a key this node admitted `used` units of since its last push
// (used > 0), given its current `share` (of the global state as this node last saw it), whether
// a decision was denied since because the share ran out, and the time since its last sync (push
// or pull).
// At once when `used` is a quarter of the share or more: near the limit the share is small, so
// there every unit is pushed at the next sync. At once, too, when the share ran out, so that a
// large request denied for it gets a fresh share after one interval, as its Retry-After says.
// Otherwise the units wait up to kSlowSyncEvery intervals. What the other nodes have not heard
// of is then under a quarter of this node's share plus one interval's admissions, while the
// burst bound already allows for a whole share per node going unheard.
[[nodiscard]] constexpr bool pushIsDue(std::uint64_t used, std::uint64_t share, bool share_ran_out,
                                       Micros since_last_sync_us, Micros interval_us) noexcept {
  return used >= share / 4 || share_ran_out || since_last_sync_us >= kSlowSyncEvery * interval_us;
}

}  // namespace sluice::redis
