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

 private:
  struct Entry {
    Micros at_us;
    std::uint64_t units;
  };

  [[nodiscard]] const Entry& at(std::uint32_t index) const noexcept {
    return ring_[(head_ + index) % capacity_];
  }
  void forgetBefore(Micros cutoff_us) noexcept;
  void grow(std::uint64_t max_entries);

  std::unique_ptr<Entry[]> ring_;
  std::uint32_t capacity_ = 0;
  std::uint32_t head_ = 0;
  std::uint32_t size_ = 0;
  std::uint64_t units_ = 0;  // sum of units over the entries
};

}  // namespace sluice::algorithm
