// How one limit counts: the algorithm and its parameters. Immutable and validated on creation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/rate.h"
#include "sluice/result.h"
#include "sluice/time.h"

namespace sluice {

enum class Algorithm : std::uint8_t {
  kFixedWindow,           // `rate.count` per window, windows aligned to multiples of the period
  kSlidingWindowLog,      // exact: no more than `rate.count` in any span of one period
  kSlidingWindowCounter,  // current count + previous count weighted by the unelapsed window
  kTokenBucket,           // continuous refill at `rate`, capacity `burst`
  kTokenBucketInterval,   // `rate.count` tokens added every `rate.period_us`, capacity `burst`
  kLeakyBucketMeter,      // level drains at `rate`; a request that would overflow `burst` is denied
  kLeakyBucketShaper,     // a queue of `burst` units leaving at `rate`; admitted requests wait
  kGcra,                  // theoretical arrival time; sustained `rate`, `burst` back to back
};

[[nodiscard]] std::string_view algorithmName(Algorithm algorithm) noexcept;
// Accepts the names algorithmName() returns, e.g. "token_bucket", "gcra".
[[nodiscard]] std::optional<Algorithm> parseAlgorithm(std::string_view name) noexcept;

class LimitSpec {
 public:
  // Each factory validates its parameters and returns an error that says what is wrong.
  static Result<LimitSpec> fixedWindow(Rate rate);
  static Result<LimitSpec> slidingWindowLog(Rate rate);
  static Result<LimitSpec> slidingWindowCounter(Rate rate);
  static Result<LimitSpec> tokenBucket(Rate rate, std::uint64_t burst);
  // Adds `refill.count` tokens every `refill.period_us`, never above `max_amount`.
  static Result<LimitSpec> tokenBucketInterval(Rate refill, std::uint64_t max_amount);
  static Result<LimitSpec> leakyBucketMeter(Rate drain, std::uint64_t capacity);
  static Result<LimitSpec> leakyBucketShaper(Rate drain, std::uint64_t queue_capacity);
  static Result<LimitSpec> gcra(Rate rate, std::uint64_t burst);
  // Dispatches to the factory above; `burst` is ignored by the window algorithms.
  static Result<LimitSpec> make(Algorithm algorithm, Rate rate, std::uint64_t burst);

  [[nodiscard]] Algorithm algorithm() const noexcept { return algorithm_; }
  [[nodiscard]] const Rate& rate() const noexcept { return rate_; }
  // Capacity of a bucket or queue, or GCRA's burst; equals rate().count for window algorithms.
  [[nodiscard]] std::uint64_t burst() const noexcept { return burst_; }
  // The number a client sees as the limit (X-RateLimit-Limit).
  [[nodiscard]] std::uint64_t limit() const noexcept { return burst_; }

  // The rate as count/period reduced by their greatest common divisor. Continuous-rate
  // algorithms count in "scaled" units where one request weighs `unitWeight()` and
  // `drainPerMicro()` units leak out per microsecond, so all arithmetic stays exact integers.
  [[nodiscard]] std::int64_t unitWeight() const noexcept { return unit_weight_; }
  [[nodiscard]] std::int64_t drainPerMicro() const noexcept { return drain_per_micro_; }

  // e.g. "token_bucket 100/s burst 20".
  [[nodiscard]] std::string toString() const;

  friend bool operator==(const LimitSpec& a, const LimitSpec& b) noexcept {
    return a.algorithm_ == b.algorithm_ && a.rate_ == b.rate_ && a.burst_ == b.burst_;
  }

 private:
  LimitSpec(Algorithm algorithm, Rate rate, std::uint64_t burst) noexcept;

  Algorithm algorithm_;
  Rate rate_;
  std::uint64_t burst_;
  std::int64_t unit_weight_;
  std::int64_t drain_per_micro_;
};

}  // namespace sluice
