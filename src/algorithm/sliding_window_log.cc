#include "algorithm/sliding_window_log.h"

#include <algorithm>
#include <new>

namespace sluice::algorithm {
namespace {

// Logs this small are not worth shrinking (a kilobyte at most).
constexpr std::uint32_t kShrinkFrom = 64;

}  // namespace

SlidingWindowLog::SlidingWindowLog(const SlidingWindowLog& other)
    : capacity_(other.size_),
      size_(other.size_),
      forgotten_(other.forgotten_),
      units_(other.units_) {
  if (size_ == 0) return;
  ring_ = std::make_unique<Entry[]>(capacity_);
  for (std::uint32_t i = 0; i < size_; ++i) ring_[i] = other.at(i);
}

void SlidingWindowLog::forgetBefore(Micros cutoff_us) noexcept {
  while (size_ > 0 && ring_[head_].at_us <= cutoff_us) {
    units_ -= ring_[head_].total - forgotten_;
    forgotten_ = ring_[head_].total;
    head_ = head_ + 1 == capacity_ ? 0 : head_ + 1;
    --size_;
  }
}

// Galloping from the oldest entry, then halving: a step per doubling of the answer's index,
// so the usual denial (a small cost, answered by the oldest entry or so) reads one or two
// entries, and a large cost against a full log some forty.
std::uint32_t SlidingWindowLog::firstReaching(std::uint64_t units) const noexcept {
  std::uint32_t low = 0;  // every index below `low` falls short
  std::uint64_t probe = 0;
  while (probe < size_ && unitsThrough(static_cast<std::uint32_t>(probe)) < units) {
    low = static_cast<std::uint32_t>(probe) + 1;
    probe = probe * 2 + 1;
  }
  // Reaches, or size_ when none does.
  auto high = static_cast<std::uint32_t>(std::min<std::uint64_t>(probe, size_));
  while (low < high) {
    const std::uint32_t middle = low + (high - low) / 2;
    if (unitsThrough(middle) >= units) {
      high = middle;
    } else {
      low = middle + 1;
    }
  }
  return low;
}

Outcome SlidingWindowLog::evaluate(Micros now_us, const LimitSpec& spec, std::uint64_t cost,
                                   std::uint64_t pending) noexcept {
  const std::uint64_t limit = spec.rate().count;
  const Micros window_us = spec.rate().period_us;
  if (size_ > 0) now_us = std::max(now_us, at(size_ - 1).at_us);
  forgetBefore(now_us - window_us);  // an entry at t counts while t > now − window
  const std::uint64_t used = units_ + pending;

  Outcome outcome;
  outcome.limit = limit;
  outcome.remaining = used >= limit ? 0 : limit - used;
  const Micros newest_us = size_ > 0 ? at(size_ - 1).at_us : now_us;
  outcome.reset_after_us = (size_ > 0 || pending > 0) ? newest_us + window_us - now_us : 0;
  if (cost > limit) {
    outcome.reason = DenyReason::kCostExceedsLimit;
    outcome.retry_after_us = kNever;
    return outcome;
  }
  if (used + cost > limit) {
    outcome.reason = DenyReason::kOverLimit;
    // Wait until enough of the oldest units slide out for this cost to fit: until the first
    // entry through which the units reach must_expire slides out.
    const std::uint64_t must_expire = used + cost - limit;
    // The oldest entry alone, the usual case, without a call.
    const std::uint32_t first =
        size_ > 0 && unitsThrough(0) >= must_expire ? 0 : firstReaching(must_expire);
    // None: pending units must go too, and they expire a window after now.
    const Micros fits_at_us = (first < size_ ? at(first).at_us : now_us) + window_us;
    outcome.retry_after_us = fits_at_us - now_us;
    return outcome;
  }
  outcome.allowed = true;
  outcome.remaining = limit - used - cost;
  if (cost > 0) outcome.reset_after_us = window_us;
  return outcome;
}

void SlidingWindowLog::record(Micros now_us, const LimitSpec& spec, std::uint64_t cost) {
  if (cost == 0) return;
  if (size_ > 0) {
    Entry& newest = ring_[slot(size_ - 1)];
    now_us = std::max(now_us, newest.at_us);
    if (newest.at_us == now_us) {  // same instant: one entry, so memory stays bounded
      newest.total += cost;
      units_ += cost;
      return;
    }
  }
  const std::uint64_t total_before = size_ > 0 ? at(size_ - 1).total : forgotten_;
  if (size_ == capacity_) grow(spec.rate().count);
  // A burst's room goes back once it has slid out, a halving per record: a key of a large
  // limit that once held 100,000 entries kept 1.6 MB while it was used at a trickle. Halving
  // only below a quarter full, so a log near a boundary does not shrink and grow by turns.
  if (capacity_ >= kShrinkFrom && size_ < capacity_ / 4) shrink();
  ring_[slot(size_)] = {now_us, total_before + cost};
  ++size_;
  units_ += cost;
}

Outcome SlidingWindowLog::consume(Micros now_us, const LimitSpec& spec, std::uint64_t cost) {
  Outcome outcome = evaluate(now_us, spec, cost);
  if (outcome.allowed) record(now_us, spec, cost);
  return outcome;
}

// Entries never outnumber the limit (each holds a unit or more), so neither does the ring.
void SlidingWindowLog::grow(std::uint64_t max_entries) {
  const std::uint64_t doubled = capacity_ == 0 ? 4 : std::uint64_t{capacity_} * 2;
  // A limit lowered by a reload can be below what the log already holds.
  const auto new_capacity = static_cast<std::uint32_t>(
      std::max<std::uint64_t>(std::min(doubled, max_entries), std::uint64_t{size_} + 1));
  moveInto(std::make_unique<Entry[]>(new_capacity), new_capacity);
}

// Halves the ring. Without memory to do so it stays as it is: a record that does not need room
// must not fail (the memory store records under noexcept).
void SlidingWindowLog::shrink() noexcept {
  const std::uint32_t new_capacity = capacity_ / 2;
  std::unique_ptr<Entry[]> ring(new (std::nothrow) Entry[new_capacity]);
  if (ring == nullptr) return;
  moveInto(std::move(ring), new_capacity);
}

// The entries, oldest first, into `ring` of `new_capacity` (> size_) entries.
void SlidingWindowLog::moveInto(std::unique_ptr<Entry[]> ring,
                                std::uint32_t new_capacity) noexcept {
  for (std::uint32_t i = 0; i < size_; ++i) ring[i] = at(i);
  ring_ = std::move(ring);
  capacity_ = new_capacity;
  head_ = 0;
}

Micros SlidingWindowLog::fullAt(const LimitSpec& spec) const noexcept {
  return size_ == 0 ? 0 : at(size_ - 1).at_us + spec.rate().period_us;
}

}  // namespace sluice::algorithm
