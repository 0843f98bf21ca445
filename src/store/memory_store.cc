#include "store/memory_store.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include <boost/container/small_vector.hpp>
#include <boost/unordered/unordered_flat_map.hpp>

#include "algorithm/compact_state.h"
#include "algorithm/sliding_window_log.h"
#include "store/compact_table.h"

namespace sluice {
namespace {

using algorithm::CompactState;
using algorithm::SlidingWindowLog;

struct LogSlot {
  std::unique_ptr<SlidingWindowLog> log;
  std::uint32_t expires_s;
};

// A shard sweeps keys that are back to full whenever it has doubled since its last sweep, so
// idle keys cost amortized O(1) and memory tracks the keys in use, not the keys ever seen.
constexpr std::size_t kFirstSweepAt = 1024;

// Expiry is kept in whole Unix seconds, rounded up; the largest value means "never" (a state
// that is full only after 2106).
constexpr std::uint32_t kNeverExpires = std::numeric_limits<std::uint32_t>::max();

std::uint32_t expirySeconds(Micros full_at_us) noexcept {
  if (full_at_us <= 0) return 0;
  const Micros seconds = full_at_us / kMicrosPerSecond + (full_at_us % kMicrosPerSecond != 0);
  return static_cast<std::uint32_t>(std::min<Micros>(seconds, kNeverExpires));
}

bool isExpired(std::uint32_t expires_s, Micros now_us) noexcept {
  return expires_s != kNeverExpires && Micros{expires_s} * kMicrosPerSecond <= now_us;
}

// From the epoch on (algorithms treat a zeroed state as unused only from then), and at most a
// quarter of int64's range (some 73,000 years): the algorithms add periods to the time, which
// past that could overflow; a clock out there is broken anyway.
Micros readClock(const Clock& clock) noexcept {
  return std::clamp<Micros>(clock.now(), 0, std::numeric_limits<Micros>::max() / 4);
}

bool contains(std::span<const std::uint64_t> hashes, std::uint64_t hash) noexcept {
  return std::find(hashes.begin(), hashes.end(), hash) != hashes.end();
}

CompactState liveState(const CompactSlot& slot, Micros now_us) noexcept {
  return isExpired(slot.expires_s, now_us) ? CompactState{} : slot.state;
}

// CompactSlot::used_share of a key that has used its whole limit, and of a sliding log (whose
// slot does not say): kept longest among the keys full again at the same second.
constexpr std::uint32_t kFullyUsed = 1u << 16;

// How much of its limit an admission left used, as CompactSlot::used_share.
std::uint32_t usedShare(const Outcome& admitted) noexcept {
  if (admitted.limit == 0 || admitted.remaining >= admitted.limit) return 0;
  const std::uint64_t used = admitted.limit - admitted.remaining;
  // used < limit here; below 2^47 (specs' limits are far below it) the product fits 64 bits, and
  // a limit past that is read as fully used.
  if (admitted.limit >= (std::uint64_t{1} << 47)) return kFullyUsed;
  return static_cast<std::uint32_t>(used * kFullyUsed / admitted.limit);
}

// `admitted`: the outcome that admitted the key's new state (its latest check's, when a request
// names the key more than once).
void store(CompactSlot& slot, const CompactState& state, const LimitSpec& spec,
           const Outcome& admitted) noexcept {
  slot.state = state;
  slot.expires_s = expirySeconds(algorithm::compactFullAt(state, spec));
  slot.used_share = usedShare(admitted);
}

}  // namespace

struct alignas(64) MemoryStore::Shard {
  std::mutex mutex;
  CompactTable compact;
  boost::unordered_flat_map<std::uint64_t, LogSlot, KeyHashIsTheHash> logs;
  std::size_t sweep_at = kFirstSweepAt;

  [[nodiscard]] std::size_t size() const noexcept { return compact.size() + logs.size(); }

  [[nodiscard]] bool holds(std::uint64_t hash, bool is_log) noexcept {
    return is_log ? logs.contains(hash) : compact.find(hash) != nullptr;
  }

  // Drops the keys back to full at `now_us`, except `kept`; returns how many.
  std::size_t sweep(Micros now_us, std::span<const std::uint64_t> kept) noexcept {
    const std::size_t before = size();
    compact.eraseIf([&](const CompactSlot& slot) {
      return isExpired(slot.expires_s, now_us) && !contains(kept, slot.hash);
    });
    boost::unordered::erase_if(logs, [&](const auto& entry) {
      return isExpired(entry.second.expires_s, now_us) && !contains(kept, entry.first);
    });
    sweep_at = std::max(kFirstSweepAt, 2 * size());
    return before - size();
  }

  // Makes room for `needed` more keys without touching `kept` (the request's own keys, whose
  // slots it is about to read or write); returns how many keys not yet full it dropped.
  std::size_t makeRoom(Micros now_us, std::size_t max_keys, std::size_t needed,
                       std::span<const std::uint64_t> kept) {
    if (size() + needed > sweep_at) sweep(now_us, kept);
    if (size() + needed <= max_keys) return 0;
    // Full: free a sixteenth of the shard at once, expired keys first, so a flood of new keys
    // costs amortized O(1) per key rather than a scan per key.
    const std::size_t target = max_keys - std::min(max_keys, std::max(needed, max_keys / 16));
    sweep(now_us, kept);
    if (size() <= target) return 0;
    return evictNearestFull(size() - target, kept);
  }

  // Drops the `count` keys closest to full, except `kept`: the least state is lost. Of keys
  // full again at the same second (every window counter in the current window is), the less
  // used go first: an exhausted counter is kept over one used once, so a flood of fresh keys
  // does not hand its limit back.
  std::size_t evictNearestFull(std::size_t count, std::span<const std::uint64_t> kept) {
    struct Candidate {
      std::uint32_t expires_s;
      std::uint32_t used_share;
      std::uint64_t hash;
      bool operator<(const Candidate& other) const noexcept {
        if (expires_s != other.expires_s) return expires_s < other.expires_s;
        if (used_share != other.used_share) return used_share < other.used_share;
        return hash < other.hash;
      }
    };
    std::vector<Candidate> by_expiry;
    by_expiry.reserve(size());
    compact.forEach([&](const CompactSlot& slot) {
      if (!contains(kept, slot.hash)) {
        by_expiry.push_back({slot.expires_s, slot.used_share, slot.hash});
      }
    });
    for (const auto& [hash, slot] : logs) {
      if (!contains(kept, hash)) by_expiry.push_back({slot.expires_s, kFullyUsed, hash});
    }
    count = std::min(count, by_expiry.size());
    std::nth_element(by_expiry.begin(), by_expiry.begin() + static_cast<std::ptrdiff_t>(count),
                     by_expiry.end());
    for (std::size_t i = 0; i < count; ++i) {
      if (!compact.erase(by_expiry[i].hash)) logs.erase(by_expiry[i].hash);
    }
    return count;
  }
};

// No check: the end of a key's chain of checks in a request.
constexpr std::size_t kNoCheck = static_cast<std::size_t>(-1);

// One check of a multi-limit request, between deciding and committing.
struct MemoryStore::Staged {
  std::uint64_t hash = 0;
  Shard* shard = nullptr;
  CompactSlot* slot = nullptr;      // the existing compact slot; valid until the first insert
  SlidingWindowLog* log = nullptr;  // the existing log; valid until the first insert
  CompactState original;            // compact state before this request
  CompactState after;               // compact state after this check (and earlier ones)
  std::uint64_t pending_units = 0;  // log units admitted by earlier checks of the same key
  std::uint64_t total_cost = 0;     // this check's cost plus earlier checks' of the same key
  // The checks of one counter in a request (one hash and kind), linked once before the shards
  // are locked (linkRepeatedKeys).
  std::size_t earlier = kNoCheck;          // the latest earlier check of the same key
  std::size_t last_of_its_key = kNoCheck;  // the key's last check in the request
  std::size_t checks_of_key = 1;
  bool key_consumes = false;  // some check of the key costs more than 0: it may be written
  bool is_log = false;
};

namespace {

// Fills the Staged key links of a request's checks. Done once, before the shards are locked:
// worked out per shard and per check under the locks, a request of 2,000 checks held its shards
// for 166 ms. Sorted by hash past a few checks; a scan of the earlier ones below that.
// One counter: a compact state and a log of one hash are two (they live in two tables).
template <typename Staged>
bool sameKey(const Staged& a, const Staged& b) noexcept {
  return a.hash == b.hash && a.is_log == b.is_log;
}

template <typename StagedList>
void linkRepeatedKeys(std::span<const LimitCheck> checks, StagedList& staged) {
  const std::size_t count = checks.size();
  constexpr std::size_t kFewChecks = 16;
  if (count <= kFewChecks) {
    for (std::size_t i = 1; i < count; ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (sameKey(staged[j], staged[i])) staged[i].earlier = j;
      }
    }
  } else {
    // Sorted (stably) by counter, a key's checks sit side by side in request order.
    boost::container::small_vector<std::size_t, 8> order(count);
    for (std::size_t i = 0; i < count; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&staged](std::size_t a, std::size_t b) {
      return std::pair(staged[a].hash, staged[a].is_log) <
             std::pair(staged[b].hash, staged[b].is_log);
    });
    for (std::size_t at = 1; at < count; ++at) {
      if (sameKey(staged[order[at - 1]], staged[order[at]])) {
        staged[order[at]].earlier = order[at - 1];
      }
    }
  }
  // Each group's size and whether it consumes, carried from its last check back to its first
  // (met first from the end; the others have their last set by then).
  for (std::size_t i = count; i-- > 0;) {
    if (staged[i].last_of_its_key != kNoCheck) continue;
    std::size_t members = 0;
    bool consumes = false;
    for (std::size_t at = i; at != kNoCheck; at = staged[at].earlier) {
      ++members;
      consumes = consumes || checks[at].cost > 0;
    }
    for (std::size_t at = i; at != kNoCheck; at = staged[at].earlier) {
      staged[at].checks_of_key = members;
      staged[at].key_consumes = consumes;
      staged[at].last_of_its_key = i;
    }
  }
}

}  // namespace

MemoryStore::MemoryStore(MemoryStoreOptions options) : MemoryStore(options, KeyHasher()) {}

MemoryStore::MemoryStore(MemoryStoreOptions options, KeyHasher hasher)
    // Powers of two, and at least kMinKeysPerShard keys per shard (or one shard), so the shards'
    // shares add up to at most max_keys. Keys spread over the shards unevenly, and a shard
    // evicts when its own share is full: with shares of a few keys, a small max_keys would
    // evict counters in use while most of the bound was still free.
    : shard_count_(std::min(
          std::bit_ceil(std::clamp<std::size_t>(options.shards, 1, MemoryStoreOptions::kMaxShards)),
          std::bit_floor(std::max<std::size_t>(1, options.max_keys / kMinKeysPerShard)))),
      keys_per_shard_(std::max<std::size_t>(1, options.max_keys / shard_count_)),
      shards_(std::make_unique<Shard[]>(shard_count_)),
      hasher_(hasher) {
  for (std::size_t i = 0; i < shard_count_; ++i) shards_[i].compact.configure(keys_per_shard_);
}

MemoryStore::~MemoryStore() = default;

MemoryStore::Shard& MemoryStore::shardFor(std::uint64_t hash) const noexcept {
  // Bits 24 and up, a power-of-two count: no division, and independent of the table's slot
  // choice, which the top bits drive.
  return shards_[(hash >> 24) & (shard_count_ - 1)];
}

void MemoryStore::makeRoom(Shard& shard, Micros now_us, std::size_t needed,
                           std::span<const std::uint64_t> kept) noexcept {
  const std::size_t evicted = shard.makeRoom(now_us, keys_per_shard_, needed, kept);
  if (evicted > 0) evicted_live_.fetch_add(evicted, std::memory_order_relaxed);
}

StoreStatus MemoryStore::apply(std::span<const LimitCheck> checks, const Clock& clock,
                               std::span<Outcome> outcomes) noexcept {
  if (checks.size() == 1) return applyOne(checks[0], clock, outcomes[0]);
  return applyMany(checks, clock, outcomes);
}

StoreStatus MemoryStore::applyOne(const LimitCheck& check, const Clock& clock,
                                  Outcome& outcome) noexcept {
  const LimitSpec& spec = *check.spec;
  const std::uint64_t hash = hasher_(check.key, spec);
  Shard& shard = shardFor(hash);
  // A cold key's slot is a cache miss; start it now so it overlaps the lock and the clock read.
  shard.compact.prefetch(hash);
  std::lock_guard lock(shard.mutex);
  // Read under the lock, so one key never sees time go backwards.
  const Micros now_us = readClock(clock);
  if (algorithm::hasCompactState(spec.algorithm())) {
    CompactSlot* slot = shard.compact.find(hash);
    CompactState state = slot == nullptr ? CompactState{} : liveState(*slot, now_us);
    outcome = algorithm::consumeCompact(state, now_us, spec, check.cost);
    if (!outcome.allowed || check.cost == 0) return StoreStatus::kOk;
    if (slot == nullptr) {
      makeRoom(shard, now_us, 1, {});
      slot = &shard.compact.insert(hash);
    }
    store(*slot, state, spec, outcome);
    return StoreStatus::kOk;
  }
  const auto found = shard.logs.find(hash);
  if (found != shard.logs.end()) {
    outcome = found->second.log->consume(now_us, spec, check.cost);
    found->second.expires_s = expirySeconds(found->second.log->fullAt(spec));
    return StoreStatus::kOk;
  }
  SlidingWindowLog unused;
  outcome = unused.evaluate(now_us, spec, check.cost);
  if (!outcome.allowed || check.cost == 0) return StoreStatus::kOk;
  makeRoom(shard, now_us, 1, {});
  auto log = std::make_unique<SlidingWindowLog>();
  log->record(now_us, spec, check.cost);
  const std::uint32_t expires_s = expirySeconds(log->fullAt(spec));
  shard.logs.emplace(hash, LogSlot{std::move(log), expires_s});
  return StoreStatus::kOk;
}

StoreStatus MemoryStore::applyMany(std::span<const LimitCheck> checks, const Clock& clock,
                                   std::span<Outcome> outcomes) noexcept {
  const std::size_t count = checks.size();
  boost::container::small_vector<Staged, 8> staged(count);
  boost::container::small_vector<std::uint64_t, 8> hashes(count);
  boost::container::small_vector<Shard*, 8> to_lock;
  for (std::size_t i = 0; i < count; ++i) {
    staged[i].hash = hashes[i] = hasher_(checks[i].key, *checks[i].spec);
    staged[i].shard = &shardFor(staged[i].hash);
    staged[i].is_log = !algorithm::hasCompactState(checks[i].spec->algorithm());
    if (!staged[i].is_log) staged[i].shard->compact.prefetch(staged[i].hash);
    to_lock.push_back(staged[i].shard);
  }
  linkRepeatedKeys(checks, staged);
  // Locks are always taken in address order, so concurrent requests cannot deadlock.
  std::sort(to_lock.begin(), to_lock.end());
  to_lock.erase(std::unique(to_lock.begin(), to_lock.end()), to_lock.end());
  for (Shard* shard : to_lock) shard->mutex.lock();
  const Micros now_us = readClock(clock);

  // Room for every key this request may add, made before any slot is read: evicting or sweeping
  // later could drop a key the request has just written, or move slots it points to.
  // Only keys the request may add: a key whose checks all cost 0 (peeks) is never written.
  boost::container::small_vector<std::size_t, 8> absent(to_lock.size(), 0);
  for (std::size_t i = 0; i < count; ++i) {
    const Staged& item = staged[i];
    if (item.earlier != kNoCheck || !item.key_consumes ||
        item.shard->holds(item.hash, item.is_log)) {
      continue;
    }
    ++absent[static_cast<std::size_t>(std::lower_bound(to_lock.begin(), to_lock.end(), item.shard) -
                                      to_lock.begin())];
  }
  for (std::size_t s = 0; s < to_lock.size(); ++s) {
    if (absent[s] > 0) makeRoom(*to_lock[s], now_us, absent[s], hashes);
  }

  const bool all_allowed = decide(checks, staged, now_us, outcomes);
  if (all_allowed) {
    commit(checks, staged, outcomes, now_us);
  } else {
    // Nothing is consumed; the limits that would have allowed report their state as it is.
    for (std::size_t i = 0; i < count; ++i) {
      if (!outcomes[i].allowed) continue;
      const Staged& item = staged[i];
      if (item.is_log) {
        SlidingWindowLog unused;
        SlidingWindowLog& log = item.log != nullptr ? *item.log : unused;
        outcomes[i] = log.evaluate(now_us, *checks[i].spec, 0);
      } else {
        CompactState state = item.original;
        outcomes[i] = algorithm::consumeCompact(state, now_us, *checks[i].spec, 0);
      }
    }
  }
  for (Shard* shard : to_lock) shard->mutex.unlock();
  return StoreStatus::kOk;
}

bool MemoryStore::decide(std::span<const LimitCheck> checks, std::span<Staged> staged,
                         Micros now_us, std::span<Outcome> outcomes) noexcept {
  bool all_allowed = true;
  for (std::size_t i = 0; i < checks.size(); ++i) {
    Staged& item = staged[i];
    const LimitSpec& spec = *checks[i].spec;
    Staged* earlier = item.earlier != kNoCheck ? &staged[item.earlier] : nullptr;
    item.total_cost = checks[i].cost + (earlier != nullptr ? earlier->total_cost : 0);
    if (item.is_log) {
      const auto found = item.shard->logs.find(item.hash);
      if (found != item.shard->logs.end()) item.log = found->second.log.get();
      item.pending_units = earlier == nullptr ? 0 : earlier->pending_units;
      SlidingWindowLog unused;
      SlidingWindowLog& log = item.log != nullptr ? *item.log : unused;
      outcomes[i] = log.evaluate(now_us, spec, checks[i].cost, item.pending_units);
      if (outcomes[i].allowed) item.pending_units += checks[i].cost;
    } else {
      if (earlier != nullptr) {
        item.slot = earlier->slot;
        item.original = earlier->original;
        item.after = earlier->after;
      } else {
        item.slot = item.shard->compact.find(item.hash);
        if (item.slot != nullptr) item.original = liveState(*item.slot, now_us);
        item.after = item.original;
      }
      outcomes[i] = algorithm::consumeCompact(item.after, now_us, spec, checks[i].cost);
    }
    all_allowed = all_allowed && outcomes[i].allowed;
  }
  if (!all_allowed) judgeRepeatedKeysWhole(checks, staged, now_us, outcomes);
  return all_allowed;
}

// A denied check of a key that the request names more than once: the request passes when each
// check of the key fits, at its own spec, the key's units up to and including it (checks of
// other counts or bursts can share a counter). Judged from the key's state as it is, the wait is
// the longest of those checks' waits, or never if one never fits. (Judged one check at a time,
// a first check denied behind a later one allowed told a wait too short, after which the
// request was denied again.) When every check of the key fits now, the order of the checks is
// what denied: the check's own answer stands.
void MemoryStore::judgeRepeatedKeysWhole(std::span<const LimitCheck> checks,
                                         std::span<const Staged> staged, Micros now_us,
                                         std::span<Outcome> outcomes) noexcept {
  // Each key once (by its last check): its answer is the same for every check of it denied.
  boost::container::small_vector<bool, 8> judged(checks.size(), false);
  for (std::size_t i = 0; i < checks.size(); ++i) {
    if (outcomes[i].allowed) continue;
    const Staged& item = staged[i];
    if (item.checks_of_key < 2 || judged[item.last_of_its_key]) continue;
    judged[item.last_of_its_key] = true;
    std::optional<Outcome> whole;  // the key's check that waits longest, if one is denied
    // The key's checks, from its last back: on a tie the earliest check's answer stands (>=), as
    // the Redis script's, which reads them in request order.
    for (std::size_t j = item.last_of_its_key; j != kNoCheck; j = staged[j].earlier) {
      const Staged& other = staged[j];
      Outcome outcome;
      if (item.is_log) {
        SlidingWindowLog unused;
        outcome = (item.log != nullptr ? *item.log : unused)
                      .evaluate(now_us, *checks[j].spec, other.total_cost);
      } else {
        CompactState state = item.original;
        outcome = algorithm::consumeCompact(state, now_us, *checks[j].spec, other.total_cost);
      }
      if (!outcome.allowed && (!whole || outcome.retry_after_us >= whole->retry_after_us)) {
        whole = outcome;
      }
    }
    if (!whole) continue;
    for (std::size_t j = item.last_of_its_key; j != kNoCheck; j = staged[j].earlier) {
      if (!outcomes[j].allowed) outcomes[j] = *whole;
    }
  }
}

void MemoryStore::commit(std::span<const LimitCheck> checks, std::span<Staged> staged,
                         std::span<const Outcome> outcomes, Micros now_us) noexcept {
  // Existing keys first: their pointers stay valid only until the first insertion.
  for (std::size_t i = 0; i < checks.size(); ++i) {
    Staged& item = staged[i];
    const LimitSpec& spec = *checks[i].spec;
    if (item.is_log && item.log != nullptr) {
      item.log->record(now_us, spec, checks[i].cost);
      item.shard->logs.find(item.hash)->second.expires_s = expirySeconds(item.log->fullAt(spec));
    } else if (!item.is_log && item.slot != nullptr && item.last_of_its_key == i) {
      store(*item.slot, item.after, spec, outcomes[i]);
    }
  }
  // New keys; the room for them was made before deciding.
  for (std::size_t i = 0; i < checks.size(); ++i) {
    Staged& item = staged[i];
    const LimitSpec& spec = *checks[i].spec;
    if (item.is_log && item.log == nullptr && checks[i].cost > 0) {
      auto found = item.shard->logs.find(item.hash);  // an earlier check may have created it
      if (found == item.shard->logs.end()) {
        found =
            item.shard->logs.emplace(item.hash, LogSlot{std::make_unique<SlidingWindowLog>(), 0})
                .first;
      }
      found->second.log->record(now_us, spec, checks[i].cost);
      found->second.expires_s = expirySeconds(found->second.log->fullAt(spec));
    } else if (!item.is_log && item.slot == nullptr && item.last_of_its_key == i &&
               (item.after.a != item.original.a || item.after.b != item.original.b)) {
      store(item.shard->compact.insert(item.hash), item.after, spec, outcomes[i]);
    }
  }
}

std::size_t MemoryStore::keyCount() const noexcept {
  std::size_t total = 0;
  for (std::size_t i = 0; i < shard_count_; ++i) {
    std::lock_guard lock(shards_[i].mutex);
    total += shards_[i].size();
  }
  return total;
}

std::size_t MemoryStore::sweepExpired(Micros now_us) noexcept {
  std::size_t dropped = 0;
  for (std::size_t i = 0; i < shard_count_; ++i) {
    std::lock_guard lock(shards_[i].mutex);
    dropped += shards_[i].sweep(now_us, {});
  }
  return dropped;
}

}  // namespace sluice
