#include "algorithm/compact_state.h"

#include <bit>

#include "algorithm/draining_bucket.h"
#include "algorithm/fixed_window.h"
#include "algorithm/gcra.h"
#include "algorithm/interval_token_bucket.h"
#include "algorithm/sliding_window_counter.h"

namespace sluice::algorithm {
namespace {

static_assert(sizeof(FixedWindowState) == sizeof(CompactState));
static_assert(sizeof(SlidingWindowCounterState) == sizeof(CompactState));
static_assert(sizeof(DrainingBucketState) == sizeof(CompactState));
static_assert(sizeof(IntervalTokenBucketState) == sizeof(CompactState));
static_assert(sizeof(GcraState) == sizeof(CompactState));

// Runs `consume` on `state` viewed as the algorithm's own state type.
template <typename State, typename Consume>
Outcome consumeAs(CompactState& state, Consume consume, Micros now_us, const LimitSpec& spec,
                  std::uint64_t cost) {
  auto typed = std::bit_cast<State>(state);
  const Outcome outcome = consume(typed, now_us, spec, cost);
  state = std::bit_cast<CompactState>(typed);
  return outcome;
}

}  // namespace

Outcome consumeCompact(CompactState& state, Micros now_us, const LimitSpec& spec,
                       std::uint64_t cost) noexcept {
  switch (spec.algorithm()) {
    case Algorithm::kFixedWindow:
      return consumeAs<FixedWindowState>(state, consumeFixedWindow, now_us, spec, cost);
    case Algorithm::kSlidingWindowCounter:
      return consumeAs<SlidingWindowCounterState>(state, consumeSlidingWindowCounter, now_us, spec,
                                                  cost);
    case Algorithm::kTokenBucket:
    case Algorithm::kLeakyBucketMeter:
    case Algorithm::kLeakyBucketShaper:
      return consumeAs<DrainingBucketState>(state, consumeDrainingBucket, now_us, spec, cost);
    case Algorithm::kTokenBucketInterval:
      return consumeAs<IntervalTokenBucketState>(state, consumeIntervalTokenBucket, now_us, spec,
                                                 cost);
    case Algorithm::kGcra:
      return consumeAs<GcraState>(state, consumeGcra, now_us, spec, cost);
    case Algorithm::kSlidingWindowLog:
      break;
  }
  return Outcome{};  // unreachable by the precondition; denies rather than crash
}

Micros compactFullAt(const CompactState& state, const LimitSpec& spec) noexcept {
  switch (spec.algorithm()) {
    case Algorithm::kFixedWindow:
      return fixedWindowFullAt(std::bit_cast<FixedWindowState>(state), spec);
    case Algorithm::kSlidingWindowCounter:
      return slidingWindowCounterFullAt(std::bit_cast<SlidingWindowCounterState>(state), spec);
    case Algorithm::kTokenBucket:
    case Algorithm::kLeakyBucketMeter:
    case Algorithm::kLeakyBucketShaper:
      return drainingBucketFullAt(std::bit_cast<DrainingBucketState>(state), spec);
    case Algorithm::kTokenBucketInterval:
      return intervalTokenBucketFullAt(std::bit_cast<IntervalTokenBucketState>(state), spec);
    case Algorithm::kGcra:
      return gcraFullAt(std::bit_cast<GcraState>(state), spec);
    case Algorithm::kSlidingWindowLog:
      break;
  }
  return 0;
}

}  // namespace sluice::algorithm
