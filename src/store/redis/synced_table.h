// The synced store's table, shared by its files: an entry per counter, in shards each with its
// own lock (synced_store.cc decides and syncs, synced_eviction.cc makes room in a full table).
#pragma once

#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <utility>

#include <boost/unordered/unordered_flat_map.hpp>

#include "algorithm/compact_state.h"
#include "store/key_hash.h"
#include "store/redis/synced_store.h"

namespace sluice {

// Entry::last_synced_us of a key not synced yet, or whose last sync failed: due at once.
inline constexpr Micros kNeverSynced = std::numeric_limits<Micros>::min();

struct SyncedStore::Entry {
  Entry(const LimitSpec& limit_spec, std::string key)
      : spec(limit_spec), redis_key(std::move(key)) {}
  LimitSpec spec;
  std::string redis_key;           // built once, when the key is first used
  algorithm::CompactState global;  // as of the last sync; zero is an unused key
  std::uint64_t pending = 0;       // admitted here since the last push
  std::uint64_t in_flight = 0;     // pushed, reply not back yet
  // Of pending + in_flight, the units `global` already counts: while syncs fail, each failed
  // push folds this node's new units into its own view of the global state (see foldIn), so
  // they drain from it as the limit refills instead of standing against the share for the
  // whole outage. A state read from Redis counts none of them: it resets to 0.
  std::uint64_t folded = 0;
  // Of what foldIn counted for the other nodes, the units the view had no room for yet: taken
  // from it as it refills (payOutageDebt), before this node admits again. Dropped, a limit
  // refilling less than a unit per node each interval let the node admit at the whole rate.
  // A state read from Redis resets it to 0.
  std::uint64_t outage_debt = 0;
  bool share_ran_out = false;  // a decision was denied for this node's share since the push
  Micros last_used_us = 0;     // steady
  // The Redis time `global` was read at: a late reply's state replaces only an older one.
  Micros global_at_us = std::numeric_limits<Micros>::min();
  Micros last_synced_us = kNeverSynced;  // steady; when it was last pushed or pulled
};

// Entries by counter (counterOf): a decision hashes its key once and builds no key string.
struct SyncedStore::Shard {
  std::mutex mutex;
  boost::unordered_flat_map<std::uint64_t, Entry, KeyHashIsTheHash> entries;
  // Steady micros before which a full table does not scan this shard again: its last scan
  // found too little to evict. A sync's reply that makes an entry evictable resets it.
  Micros next_eviction_scan_us = 0;
};

}  // namespace sluice
