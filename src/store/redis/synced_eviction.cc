// How a full synced table makes room for a new key (SyncedStore::makeRoom and its parts).
#include "store/redis/synced_store.h"

#include <algorithm>
#include <array>
#include <limits>

#include "store/redis/shared_decision.h"
#include "store/redis/synced_table.h"

namespace sluice {
namespace {

bool isKept(std::span<const std::uint64_t> keep, std::uint64_t counter) noexcept {
  return std::find(keep.begin(), keep.end(), counter) != keep.end();
}

}  // namespace

bool SyncedStore::makeRoom(std::size_t wanted, std::span<const std::size_t> held,
                           std::span<const std::uint64_t> keep, Micros now_us, Micros steady_us) {
  // The wanted shard first, so that shards stay even; then any other, as a small table may
  // have none of its keys in the wanted one. A shard this request does not hold is only tried:
  // waiting for it could deadlock with a request holding it that waits for one of ours.
  for (std::size_t step = 0; step < kShards; ++step) {
    const std::size_t index = (wanted + step) % kShards;
    Shard& shard = *shards_[index];
    if (std::find(held.begin(), held.end(), index) != held.end()) {
      if (evict(shard, keep, now_us, steady_us) > 0) return true;
      continue;
    }
    std::unique_lock lock(shard.mutex, std::try_to_lock);
    if (lock.owns_lock() && evict(shard, keep, now_us, steady_us) > 0) return true;
  }
  return false;
}

bool SyncedStore::forgetsNothing(const Entry& entry, Micros now_us) noexcept {
  return entry.pending == 0 && entry.in_flight == 0 && entry.outage_debt == 0 &&
         redis::peek(entry.global, entry.spec, now_us).remaining >= entry.spec.limit();
}

std::size_t SyncedStore::evict(Shard& shard, std::span<const std::uint64_t> keep, Micros now_us,
                               Micros steady_us) {
  if (steady_us < shard.next_eviction_scan_us) return 0;
  std::size_t evicted = boost::unordered::erase_if(shard.entries, [&](const auto& item) {
    return !isKept(keep, item.first) && forgetsNothing(item.second, now_us);
  });
  if (evicted == 0) evicted = evictLeastRecentlyUsed(shard, keep, steady_us);
  keys_.fetch_sub(evicted);
  evictions_.fetch_add(evicted, std::memory_order_relaxed);
  return evicted;
}

std::size_t SyncedStore::evictLeastRecentlyUsed(Shard& shard, std::span<const std::uint64_t> keep,
                                                Micros steady_us) {
  // An entry whose units are all in Redis holds nothing Redis lacks. Forgetting one that is
  // not full yet costs this node its view of the key, though: until its next pull (within an
  // interval once it is used again) a new entry decides against a full limit.
  const auto evictable = [&](std::uint64_t counter, const Entry& entry) {
    return entry.pending == 0 && entry.in_flight == 0 && !isKept(keep, counter);
  };
  // The oldest eighth (at least) of the evictable entries by last use, found with a histogram
  // of their ages so that no scan allocates: a flood of new keys pays a few scans per eighth.
  std::size_t count = 0;
  Micros oldest = std::numeric_limits<Micros>::max();
  Micros newest = std::numeric_limits<Micros>::min();
  for (const auto& [counter, entry] : shard.entries) {
    if (!evictable(counter, entry)) continue;
    ++count;
    oldest = std::min(oldest, entry.last_used_us);
    newest = std::max(newest, entry.last_used_us);
  }
  if (count * kMinEvictableShare < shard.entries.size()) {
    // Nearly everything here waits on a push: scanning again before a sync has answered would
    // cost a scan per request and free next to nothing.
    shard.next_eviction_scan_us = steady_us + options_.sync_interval_us;
  }
  if (count == 0) return 0;  // an empty shard, too
  const std::size_t wanted = (count + 7) / 8;
  // 64 buckets over [low, high). A few long-idle keys (daily quotas, kept while not full)
  // stretch the span, and then every recent key lands in one bucket: taking that bucket whole
  // would forget nearly every key, some used a moment ago. So while the bucket that reaches the
  // eighth holds much more than is wanted, the search narrows to it, up to three times.
  constexpr std::size_t kBuckets = 64;
  Micros low = oldest;
  Micros high = newest + 1;
  std::size_t below = 0;  // evictable entries used before `low`: taken whatever the cutoff
  Micros cutoff_us = high;
  for (int level = 0; level < 3; ++level) {
    const Micros bucket_us = (high - low) / static_cast<Micros>(kBuckets) + 1;
    std::array<std::size_t, kBuckets> by_age{};
    for (const auto& [counter, entry] : shard.entries) {
      if (evictable(counter, entry) && entry.last_used_us >= low && entry.last_used_us < high)
        ++by_age[static_cast<std::size_t>((entry.last_used_us - low) / bucket_us)];
    }
    std::size_t bucket = 0;  // the first bucket through which an eighth is taken
    std::size_t taken = below + by_age[0];
    while (taken < wanted && bucket + 1 < kBuckets) taken += by_age[++bucket];
    const Micros bucket_start_us = low + bucket_us * static_cast<Micros>(bucket);
    cutoff_us = bucket_start_us + bucket_us;
    if (taken <= 2 * wanted || bucket_us == 1) break;
    below = taken - by_age[bucket];
    low = bucket_start_us;
    high = cutoff_us;
  }
  return boost::unordered::erase_if(shard.entries, [&](const auto& item) {
    return item.second.last_used_us < cutoff_us && evictable(item.first, item.second);
  });
}

}  // namespace sluice
