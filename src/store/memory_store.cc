#include "store/memory_store.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <mutex>
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

// The keys are already uniformly distributed seeded hashes; tell the table not to mix again.
struct HashIsTheKey {
  using is_avalanching = void;
  std::size_t operator()(std::uint64_t hash) const noexcept { return hash; }
};

struct LogSlot {
  std::unique_ptr<SlidingWindowLog> log;
  std::uint32_t expires_s;
};

// A shard sweeps keys that are back to full whenever it has doubled since its last sweep, so
// idle keys cost amortized O(1) and memory tracks the keys in use, not the keys ever seen.
constexpr std::size_t kFirstSweepAt = 1024;

std::uint32_t expirySeconds(Micros full_at_us) noexcept {
  if (full_at_us <= 0) return 0;
  const Micros seconds = (full_at_us + kMicrosPerSecond - 1) / kMicrosPerSecond;
  return static_cast<std::uint32_t>(
      std::min<Micros>(seconds, std::numeric_limits<std::uint32_t>::max()));
}

bool isExpired(std::uint32_t expires_s, Micros now_us) noexcept {
  return Micros{expires_s} * kMicrosPerSecond <= now_us;
}

CompactState liveState(const CompactSlot& slot, Micros now_us) noexcept {
  return isExpired(slot.expires_s, now_us) ? CompactState{} : slot.state;
}

void store(CompactSlot& slot, const CompactState& state, const LimitSpec& spec) noexcept {
  slot.state = state;
  slot.expires_s = expirySeconds(algorithm::compactFullAt(state, spec));
}

}  // namespace

struct alignas(64) MemoryStore::Shard {
  std::mutex mutex;
  CompactTable compact;
  boost::unordered_flat_map<std::uint64_t, LogSlot, HashIsTheKey> logs;
  std::size_t sweep_at = kFirstSweepAt;

  [[nodiscard]] std::size_t size() const noexcept { return compact.size() + logs.size(); }

  std::size_t sweep(Micros now_us) noexcept {
    const std::size_t before = size();
    compact.eraseIf(
        [now_us](const CompactSlot& slot) { return isExpired(slot.expires_s, now_us); });
    boost::unordered::erase_if(
        logs, [now_us](const auto& entry) { return isExpired(entry.second.expires_s, now_us); });
    sweep_at = std::max(kFirstSweepAt, 2 * size());
    return before - size();
  }

  // Makes room for one more key; returns how many keys not yet full it had to drop.
  std::size_t makeRoom(Micros now_us, std::size_t max_keys) {
    if (size() >= sweep_at) sweep(now_us);
    if (size() < max_keys) return 0;
    sweep(now_us);
    if (size() < max_keys) return 0;
    // Evict in batches so a flood of new keys costs amortized O(1) per key, not a scan per key.
    return evictNearestFull(std::max<std::size_t>(1, max_keys / 16));
  }

  // Drops the `count` keys that are closest to full: the least state is lost.
  std::size_t evictNearestFull(std::size_t count) {
    std::vector<std::pair<std::uint32_t, std::uint64_t>> by_expiry;  // (expiry, hash)
    by_expiry.reserve(size());
    compact.forEach(
        [&](const CompactSlot& slot) { by_expiry.emplace_back(slot.expires_s, slot.hash); });
    for (const auto& [hash, slot] : logs) by_expiry.emplace_back(slot.expires_s, hash);
    count = std::min(count, by_expiry.size());
    std::nth_element(by_expiry.begin(), by_expiry.begin() + static_cast<std::ptrdiff_t>(count),
                     by_expiry.end());
    for (std::size_t i = 0; i < count; ++i) {
      if (!compact.erase(by_expiry[i].second)) logs.erase(by_expiry[i].second);
    }
    return count;
  }
};

// One check of a multi-limit request, between deciding and committing.
struct MemoryStore::Staged {
  std::uint64_t hash = 0;
  Shard* shard = nullptr;
  CompactSlot* slot = nullptr;      // the existing compact slot; valid until the first insert
  SlidingWindowLog* log = nullptr;  // the existing log; valid until the first insert
  CompactState original;            // compact state before this request
  CompactState after;               // compact state after this check (and earlier ones)
  std::uint64_t pending_units = 0;  // log units admitted earlier in this request, same key
  bool is_log = false;
  bool last_of_key = true;  // no later check in this request has the same key
};

MemoryStore::MemoryStore(MemoryStoreOptions options) : MemoryStore(options, KeyHasher()) {}

MemoryStore::MemoryStore(MemoryStoreOptions options, KeyHasher hasher)
    : shard_count_(std::bit_ceil(std::max<std::size_t>(1, options.shards))),
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

void MemoryStore::makeRoom(Shard& shard, Micros now_us) noexcept {
  const std::size_t evicted = shard.makeRoom(now_us, keys_per_shard_);
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
  // A cold key's slot is a cache miss; start it now so it overlaps the clock read and the lock.
  shard.compact.prefetch(hash);
  const Micros now_us = clock.now();
  std::lock_guard lock(shard.mutex);
  if (algorithm::hasCompactState(spec.algorithm())) {
    CompactSlot* slot = shard.compact.find(hash);
    CompactState state = slot == nullptr ? CompactState{} : liveState(*slot, now_us);
    outcome = algorithm::consumeCompact(state, now_us, spec, check.cost);
    if (!outcome.allowed || check.cost == 0) return StoreStatus::kOk;
    if (slot == nullptr) {
      makeRoom(shard, now_us);
      slot = &shard.compact.insert(hash);
    }
    store(*slot, state, spec);
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
  makeRoom(shard, now_us);
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
  boost::container::small_vector<Shard*, 8> to_lock;
  for (std::size_t i = 0; i < count; ++i) {
    staged[i].hash = hasher_(checks[i].key, *checks[i].spec);
    staged[i].shard = &shardFor(staged[i].hash);
    staged[i].is_log = !algorithm::hasCompactState(checks[i].spec->algorithm());
    if (!staged[i].is_log) staged[i].shard->compact.prefetch(staged[i].hash);
    to_lock.push_back(staged[i].shard);
  }
  const Micros now_us = clock.now();
  // Locks are always taken in address order, so concurrent requests cannot deadlock.
  std::sort(to_lock.begin(), to_lock.end());
  to_lock.erase(std::unique(to_lock.begin(), to_lock.end()), to_lock.end());
  for (Shard* shard : to_lock) shard->mutex.lock();

  // Decide every check without writing to the tables.
  bool all_allowed = true;
  for (std::size_t i = 0; i < count; ++i) {
    Staged& item = staged[i];
    const LimitSpec& spec = *checks[i].spec;
    Staged* earlier = nullptr;  // the latest earlier check of the same key
    for (std::size_t j = 0; j < i; ++j) {
      if (staged[j].hash == item.hash && staged[j].is_log == item.is_log) earlier = &staged[j];
    }
    if (earlier != nullptr) earlier->last_of_key = false;
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

  if (!all_allowed) {
    // Nothing is consumed; the limits that would have allowed report their state as it is.
    for (std::size_t i = 0; i < count; ++i) {
      if (!outcomes[i].allowed) continue;
      Staged& item = staged[i];
      if (item.is_log) {
        SlidingWindowLog unused;
        SlidingWindowLog& log = item.log != nullptr ? *item.log : unused;
        outcomes[i] = log.evaluate(now_us, *checks[i].spec, 0);
      } else {
        CompactState state = item.original;
        outcomes[i] = algorithm::consumeCompact(state, now_us, *checks[i].spec, 0);
      }
    }
  } else {
    commit(checks, staged, now_us);
  }
  for (Shard* shard : to_lock) shard->mutex.unlock();
  return StoreStatus::kOk;
}

void MemoryStore::commit(std::span<const LimitCheck> checks, std::span<Staged> staged,
                         Micros now_us) noexcept {
  // Existing keys first: their pointers stay valid only until the first insertion.
  for (std::size_t i = 0; i < checks.size(); ++i) {
    Staged& item = staged[i];
    const LimitSpec& spec = *checks[i].spec;
    if (item.is_log && item.log != nullptr) {
      item.log->record(now_us, spec, checks[i].cost);
      item.shard->logs.find(item.hash)->second.expires_s = expirySeconds(item.log->fullAt(spec));
    } else if (!item.is_log && item.slot != nullptr && item.last_of_key) {
      store(*item.slot, item.after, spec);
    }
  }
  for (std::size_t i = 0; i < checks.size(); ++i) {
    Staged& item = staged[i];
    const LimitSpec& spec = *checks[i].spec;
    if (item.is_log && item.log == nullptr && checks[i].cost > 0) {
      auto found = item.shard->logs.find(item.hash);  // an earlier check may have created it
      if (found == item.shard->logs.end()) {
        makeRoom(*item.shard, now_us);
        found =
            item.shard->logs.emplace(item.hash, LogSlot{std::make_unique<SlidingWindowLog>(), 0})
                .first;
      }
      found->second.log->record(now_us, spec, checks[i].cost);
      found->second.expires_s = expirySeconds(found->second.log->fullAt(spec));
    } else if (!item.is_log && item.slot == nullptr && item.last_of_key &&
               (item.after.a != item.original.a || item.after.b != item.original.b)) {
      makeRoom(*item.shard, now_us);
      // makeRoom may have evicted a key inserted by an earlier check; look again.
      CompactSlot* slot = item.shard->compact.find(item.hash);
      store(slot != nullptr ? *slot : item.shard->compact.insert(item.hash), item.after, spec);
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
    dropped += shards_[i].sweep(now_us);
  }
  return dropped;
}

}  // namespace sluice
