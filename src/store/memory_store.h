// The embedded default store: state in this process's memory, sharded by key hash, each shard
// behind its own mutex. A key costs one 32-byte slot in an open-addressing table (the key is kept
// only as its 64-bit seeded hash, see key_hash.h); sliding-log keys hold their log on the heap.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "store/key_hash.h"
#include "store/store.h"

namespace sluice {

struct MemoryStoreOptions {
  // Upper bound on keys held. When a shard is full, keys whose state is back to full (which
  // equal unused keys) go first, then the keys closest to being full. 0 is taken as 1.
  std::size_t max_keys = 1'000'000;
  // More shards, less lock contention between threads: a cold key's cache miss happens under its
  // shard's lock, so with 16 shards two threads already collide often. Rounded up to a power
  // of two, at most kMaxShards.
  std::size_t shards = 256;
  static constexpr std::size_t kMaxShards = 65'536;
};

class MemoryStore final : public Store {
 public:
  explicit MemoryStore(MemoryStoreOptions options = {});
  MemoryStore(MemoryStoreOptions options, KeyHasher hasher);
  ~MemoryStore() override;
  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;

  // Store
  [[nodiscard]] bool decidesInline() const noexcept override { return true; }
  [[nodiscard]] StoreStatus apply(std::span<const LimitCheck> checks, const Clock& clock,
                                  std::span<Outcome> outcomes) noexcept override;

  // Thread-safe. Keys currently held, including ones back to full and not yet swept.
  [[nodiscard]] std::size_t keyCount() const noexcept;
  // Thread-safe. Drops every key whose state is back to full at `now_us`; returns how many.
  std::size_t sweepExpired(Micros now_us) noexcept;
  // Thread-safe. Keys dropped while their state was not yet full, to honor max_keys.
  [[nodiscard]] std::uint64_t evictedLive() const noexcept {
    return evicted_live_.load(std::memory_order_relaxed);
  }

 private:
  struct Shard;
  struct Staged;

  // The fewest keys a shard holds (unless max_keys is smaller): a shard's share fills when it
  // gets more than its part of the keys, and with 1,024 that comes near the whole bound.
  static constexpr std::size_t kMinKeysPerShard = 1024;

  [[nodiscard]] Shard& shardFor(std::uint64_t hash) const noexcept;
  // Under the shard's lock, before inserting `needed` keys; never drops a key in `kept`.
  void makeRoom(Shard& shard, Micros now_us, std::size_t needed,
                std::span<const std::uint64_t> kept) noexcept;
  StoreStatus applyOne(const LimitCheck& check, const Clock& clock, Outcome& outcome) noexcept;
  StoreStatus applyMany(std::span<const LimitCheck> checks, const Clock& clock,
                        std::span<Outcome> outcomes) noexcept;
  // Decides every check of a multi-check request without writing; true if all allow.
  bool decide(std::span<const LimitCheck> checks, std::span<Staged> staged, Micros now_us,
              std::span<Outcome> outcomes) noexcept;
  // After a denial: a denied check of a key the request names more than once tells when all
  // that key's checks would pass together (see the definition).
  void judgeRepeatedKeysWhole(std::span<const LimitCheck> checks, std::span<const Staged> staged,
                              Micros now_us, std::span<Outcome> outcomes) noexcept;
  // Writes an all-allowed multi-check request's states; shards are locked.
  void commit(std::span<const LimitCheck> checks, std::span<Staged> staged,
              std::span<const Outcome> outcomes, Micros now_us) noexcept;

  std::size_t shard_count_;
  std::size_t keys_per_shard_;
  std::unique_ptr<Shard[]> shards_;
  KeyHasher hasher_;
  std::atomic<std::uint64_t> evicted_live_{0};
};

}  // namespace sluice
