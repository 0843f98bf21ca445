#include "store/compact_table.h"

#include <random>
#include <unordered_map>

#include <gtest/gtest.h>

namespace sluice {
namespace {

// Insert, find and erase agree with a reference map through growth and heavy deletion,
// including hashes that crowd into one neighborhood and the reserved hash 0.
TEST(CompactTable, MatchesAReferenceMap) {
  CompactTable table(5000);
  std::unordered_map<std::uint64_t, std::int64_t> reference;
  std::mt19937_64 random(99);
  for (int step = 0; step < 200'000; ++step) {
    // Small hashes crowd the first slots; large ones spread out; 0 and 1 share a slot key.
    const std::uint64_t hash =
        step % 3 == 0 ? random() % 64 : random() % 20'000 * 0x9e3779b97f4a7c15ULL;
    const auto key = hash == 0 ? 1 : hash;
    const auto op = random() % 3;
    CompactSlot* found = table.find(hash);
    ASSERT_EQ(found != nullptr, reference.count(key) == 1) << step;
    if (found != nullptr) {
      ASSERT_EQ(found->state.a, reference[key]) << step;
    }
    if (op < 2 && found == nullptr && table.size() < table.maxKeys()) {
      table.insert(hash).state.a = step;
      reference[key] = step;
    } else if (op == 2 && found != nullptr) {
      ASSERT_TRUE(table.erase(hash));
      reference.erase(key);
    }
    ASSERT_EQ(table.size(), reference.size());
  }
  std::size_t removed_expected = 0;
  for (const auto& [key, value] : reference) removed_expected += value % 2 == 0;
  EXPECT_EQ(table.eraseIf([](const CompactSlot& slot) { return slot.state.a % 2 == 0; }),
            removed_expected);
  for (const auto& [key, value] : reference) {
    EXPECT_EQ(table.find(key) != nullptr, value % 2 != 0);
  }
}

// Capacity is sized from max_keys: a full table stays within 4/3 slots per key.
TEST(CompactTable, CapacityBoundedByMaxKeys) {
  CompactTable table(1000);
  for (std::uint64_t i = 1; i <= 1000; ++i) table.insert(i * 0x9e3779b97f4a7c15ULL);
  EXPECT_EQ(table.size(), 1000u);
  EXPECT_LE(table.capacity(), 1334u);
  std::size_t visited = 0;
  table.forEach([&](const CompactSlot&) { ++visited; });
  EXPECT_EQ(visited, 1000u);
}

}  // namespace
}  // namespace sluice
