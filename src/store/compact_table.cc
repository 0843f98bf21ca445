#include "store/compact_table.h"

#include <algorithm>
#include <utility>

namespace sluice {
namespace {

// Linear probing stays short (about 2.5 slots per miss, 1.5 per hit) up to this load.
constexpr double kMaxLoad = 0.75;
constexpr std::size_t kInitialCapacity = 64;

}  // namespace

CompactTable::CompactTable(std::size_t max_keys) { configure(max_keys); }

void CompactTable::configure(std::size_t max_keys) {
  max_keys_ = std::max<std::size_t>(1, max_keys);
  max_capacity_ = static_cast<std::size_t>(static_cast<double>(max_keys_) / kMaxLoad) + 1;
  slots_.assign(std::min(kInitialCapacity, max_capacity_), CompactSlot{});
  size_ = 0;
  publishForPrefetch();
}

CompactSlot* CompactTable::find(std::uint64_t hash) noexcept {
  const std::uint64_t key = stored(hash);
  for (std::size_t index = home(key);; index = next(index)) {
    CompactSlot& slot = slots_[index];
    if (slot.hash == key) return &slot;
    if (slot.hash == 0) return nullptr;
  }
}

CompactSlot& CompactTable::insert(std::uint64_t hash) {
  const bool over_load =
      static_cast<double>(size_ + 1) > static_cast<double>(slots_.size()) * kMaxLoad;
  // Past max_keys (a request can briefly need more keys than a tiny bound) the table still grows:
  // lookups end at an empty slot, so one must always remain.
  if ((over_load && slots_.size() < max_capacity_) || size_ + 2 > slots_.size()) grow();
  const std::uint64_t key = stored(hash);
  std::size_t index = home(key);
  while (slots_[index].hash != 0) index = next(index);
  slots_[index] = CompactSlot{};
  slots_[index].hash = key;
  ++size_;
  return slots_[index];
}

bool CompactTable::erase(std::uint64_t hash) noexcept {
  CompactSlot* slot = find(hash);
  if (slot == nullptr) return false;
  eraseAt(static_cast<std::size_t>(slot - slots_.data()));
  return true;
}

void CompactTable::eraseAt(std::size_t hole) noexcept {
  // Pull back each following slot whose probe would otherwise pass over the hole, so lookups
  // never need tombstones.
  for (std::size_t index = next(hole); slots_[index].hash != 0; index = next(index)) {
    const std::size_t wanted = home(slots_[index].hash);
    // Movable when `wanted` is not cyclically within (hole, index].
    const bool wanted_after_hole =
        hole <= index ? (wanted > hole && wanted <= index) : (wanted > hole || wanted <= index);
    if (!wanted_after_hole) {
      slots_[hole] = slots_[index];
      hole = index;
    }
  }
  slots_[hole] = CompactSlot{};
  --size_;
}

void CompactTable::grow() {
  const std::size_t doubled = slots_.size() * 2;
  std::vector<CompactSlot, HugePageAllocator<CompactSlot>> old(
      size_ + 2 > slots_.size() ? doubled : std::min(doubled, max_capacity_));
  old.swap(slots_);
  for (const CompactSlot& slot : old) {
    if (slot.hash == 0) continue;
    std::size_t index = home(slot.hash);
    while (slots_[index].hash != 0) index = next(index);
    slots_[index] = slot;
  }
  publishForPrefetch();
}

}  // namespace sluice
