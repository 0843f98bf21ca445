// Sliding window log: the exact sliding window. It remembers when each admitted unit was
// admitted and admits a cost only if, with it, no span of one period holds more than the limit.
// Memory per key is bounded by the limit: every entry holds at least one unit.
#pragma once

#include <cstdint>
#include <memory>

#include "sluice/limit_spec.h"
#include "sluice/outcome.h"

namespace sluice::algorithm {

class SlidingWindowLog {
 public:
  SlidingWindowLog() = default;
  SlidingWindowLog(SlidingWindowLog&&) noexcept = default;
  SlidingWindowLog& operator=(SlidingWindowLog&&) noexcept = default;
  // A deep copy, for what-if evaluation.
  SlidingWindowLog(const SlidingWindowLog& other);
  SlidingWindowLog& operator=(const SlidingWindowLog&) = delete;

  // Not thread-safe. Decides without recording: `pending` units (admitted earlier in the same
  // all-or-nothing request, not yet recorded) count as if recorded at `now_us`. Forgets entries
  // that have slid out of the window. An older `now` is treated as the newest one recorded.
  [[nodiscard]] Outcome evaluate(Micros now_us, const LimitSpec& spec, std::uint64_t cost,
                                 std::uint64_t pending = 0) noexcept;

  // Records `cost` units admitted at `now_us`. Precondition: evaluate() just admitted them.
  void record(Micros now_us, const LimitSpec& spec, std::uint64_t cost);

  // evaluate() then, if admitted, record().
  [[nodiscard]] Outcome consume(Micros now_us, const LimitSpec& spec, std::uint64_t cost);

  // The instant from which this log behaves like an unused key.
  [[nodiscard]] Micros fullAt(const LimitSpec& spec) const noexcept;

  [[nodiscard]] std::uint64_t unitsRecorded() const noexcept { return units_; }
  [[nodiscard]] std::uint32_t entries() const noexcept { return size_; }
  // Entries the log has room for: at most the limit. Once a burst has slid out, each record
  // halves it while it is under a quarter used (see record()).
  [[nodiscard]] std::uint32_t capacity() const noexcept { return capacity_; }

 private:
  // An instant and the running total of units recorded up to and including it. Totals rather
  // than each entry's own units, so that a denial finds how many of the oldest entries must
  // slide out by a binary search instead of a walk: a large cost denied against a full log of
  // 100,000 entries walked them all, under the store's shard lock, on every retry. The totals
  // only ever grow (modulo 2^64); differences of them, which is all that is read, stay exact.
  struct Entry {
    Micros at_us;
    std::uint64_t total;
  };

  // Where the entry `index` places from the oldest lives in ring_. Precondition: index <
  // capacity_. (head_ is below capacity_ too, so one subtraction wraps the sum: no division on
  // the decision path.)
  [[nodiscard]] std::uint32_t slot(std::uint32_t index) const noexcept {
    const std::uint64_t sum = std::uint64_t{head_} + index;
    return static_cast<std::uint32_t>(sum < capacity_ ? sum : sum - capacity_);
  }
  // Precondition: index < size_.
  [[nodiscard]] const Entry& at(std::uint32_t index) const noexcept { return ring_[slot(index)]; }
  // The units of the entries [0, index], oldest first.
  [[nodiscard]] std::uint64_t unitsThrough(std::uint32_t index) const noexcept {
    return at(index).total - forgotten_;
  }
  // The first index whose unitsThrough reaches `units`; size_ when none does.
  [[nodiscard]] std::uint32_t firstReaching(std::uint64_t units) const noexcept;
  void forgetBefore(Micros cutoff_us) noexcept;
  void grow(std::uint64_t max_entries);
  void shrink() noexcept;
  void moveInto(std::unique_ptr<Entry[]> ring, std::uint32_t new_capacity) noexcept;

  std::unique_ptr<Entry[]> ring_;
  std::uint32_t capacity_ = 0;
  std::uint32_t head_ = 0;
  std::uint32_t size_ = 0;
  std::uint64_t forgotten_ = 0;  // the running total up to the newest entry forgotten
  std::uint64_t units_ = 0;      // the units of the entries: the newest total − forgotten_
};

}  // namespace sluice::algorithm
