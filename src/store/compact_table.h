// The hash table behind MemoryStore's fixed-size states: open addressing with linear probing
// over 32-byte slots, two to a cache line, keyed by the counter's 64-bit hash.
//
// Why not boost::unordered_flat_map (DESIGN.md's choice for hot-path maps)? Its lookups read a
// metadata group and then, dependently, the element: two cache misses per decision on a large
// table, ~150 ns each on the target machine. Here the slot is the first thing read, so a lookup
// on a cold key costs one miss. Capacity is sized from max_keys, so memory per key stays bounded.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithm/compact_state.h"
#include "store/huge_page_allocator.h"

namespace sluice {

struct CompactSlot {
  std::uint64_t hash = 0;  // 0 marks an empty slot
  algorithm::CompactState state;
  std::uint32_t expires_s = 0;  // Unix seconds from which the state equals an unused key's
  // How much of its limit the key's last admission used, in 1/65536ths (kFullyUsed: all of
  // it): when keys must be evicted, of two that are full again at the same second the less used
  // goes first (MemoryStore's evictNearestFull).
  std::uint32_t used_share = 0;
};
static_assert(sizeof(CompactSlot) == 32);

class CompactTable {
 public:
  // Holds up to `max_keys` keys; the table grows by doubling up to the size that holds them.
  explicit CompactTable(std::size_t max_keys = 1);
  CompactTable(const CompactTable&) = delete;
  CompactTable& operator=(const CompactTable&) = delete;

  // Precondition: empty. Sets the bound, as the constructor does.
  void configure(std::size_t max_keys);

  // Thread-safe, even concurrently with writers: asks the CPU to start loading the cache line
  // where `hash` would be. A stale view of the table only makes the hint useless.
  void prefetch(std::uint64_t hash) const noexcept {
    const CompactSlot* slots = prefetch_slots_.load(std::memory_order_relaxed);
    const std::size_t capacity = prefetch_capacity_.load(std::memory_order_relaxed);
    const CompactSlot* home_slot = slots + homeIn(stored(hash), capacity);
    __builtin_prefetch(home_slot);
    __builtin_prefetch(home_slot + 1);  // a probe often continues into the next line
  }

  // Not thread-safe (MemoryStore locks the shard). The slot of `hash`, or nullptr. The pointer
  // stays valid until the next insert or erase.
  [[nodiscard]] CompactSlot* find(std::uint64_t hash) noexcept;

  // Precondition: find(hash) == nullptr. The new slot's state is zero. Normally size() stays
  // below maxKeys(), which sizes the table; past it the table grows beyond that size.
  CompactSlot& insert(std::uint64_t hash);

  // Removes every slot for which `remove(slot)` is true; returns how many.
  template <typename Predicate>
  std::size_t eraseIf(Predicate remove) noexcept;

  // Removes `hash` if present.
  bool erase(std::uint64_t hash) noexcept;

  template <typename Visit>
  void forEach(Visit visit) const {
    for (const CompactSlot& slot : slots_) {
      if (slot.hash != 0) visit(slot);
    }
  }

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t maxKeys() const noexcept { return max_keys_; }
  [[nodiscard]] std::size_t capacity() const noexcept { return slots_.size(); }

 private:
  [[nodiscard]] static std::uint64_t stored(std::uint64_t hash) noexcept {
    return hash == 0 ? 1 : hash;
  }
  [[nodiscard]] static std::size_t homeIn(std::uint64_t hash, std::size_t capacity) noexcept {
    __extension__ using UInt128 = unsigned __int128;
    // Multiply-shift maps the hash onto any capacity, not only powers of two.
    return static_cast<std::size_t>((static_cast<UInt128>(hash) * capacity) >> 64);
  }
  [[nodiscard]] std::size_t home(std::uint64_t hash) const noexcept {
    return homeIn(hash, slots_.size());
  }
  void publishForPrefetch() noexcept {
    prefetch_slots_.store(slots_.data(), std::memory_order_relaxed);
    prefetch_capacity_.store(slots_.size(), std::memory_order_relaxed);
  }
  [[nodiscard]] std::size_t next(std::size_t index) const noexcept {
    return index + 1 == slots_.size() ? 0 : index + 1;
  }
  void eraseAt(std::size_t index) noexcept;
  void grow();

  std::size_t max_keys_ = 1;
  std::size_t max_capacity_ = 1;
  std::size_t size_ = 0;
  std::vector<CompactSlot, HugePageAllocator<CompactSlot>> slots_;
  std::atomic<const CompactSlot*> prefetch_slots_{nullptr};
  std::atomic<std::size_t> prefetch_capacity_{0};
};

template <typename Predicate>
std::size_t CompactTable::eraseIf(Predicate remove) noexcept {
  std::size_t removed = 0;
  // Backward-shift deletion moves later slots into the hole; a slot moved into the current
  // position is examined again, and one moved into an earlier position was examined already.
  for (std::size_t index = 0; index < slots_.size();) {
    if (slots_[index].hash != 0 && remove(slots_[index])) {
      eraseAt(index);
      ++removed;
    } else {
      ++index;
    }
  }
  return removed;
}

}  // namespace sluice
