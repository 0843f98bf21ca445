#include "sluice/limit_spec.h"

#include <array>
#include <limits>
#include <numeric>

namespace sluice {
namespace {

constexpr std::array<std::string_view, 8> kAlgorithmNames{
    "fixed_window",          "sliding_window_log", "sliding_window_counter", "token_bucket",
    "token_bucket_interval", "leaky_bucket",       "leaky_bucket_shaper",    "gcra"};

// Counts are stored in 32 bits by the compact store layouts.
constexpr std::uint64_t kMaxCount = std::numeric_limits<std::uint32_t>::max();
// A sliding log holds up to `count` entries of 16 bytes per key.
constexpr std::uint64_t kMaxLogCount = 100'000;
// Scaled levels (burst × reduced period) must stay far from int64 overflow.
constexpr std::int64_t kMaxScaledCapacity = std::int64_t{1} << 61;

// What is wrong with `rate`, or nothing.
std::optional<std::string> rateProblem(const Rate& rate) {
  if (rate.count == 0) return "the count must be at least 1";
  if (rate.count > kMaxCount) return "the count must be at most " + std::to_string(kMaxCount);
  if (rate.period_us < kMicrosPerMilli) return "the period must be at least 1ms";
  if (rate.period_us > kMicrosPerYear) return "the period must be at most 1 year";
  return std::nullopt;
}

}  // namespace

std::string_view algorithmName(Algorithm algorithm) noexcept {
  const auto index = static_cast<std::size_t>(algorithm);
  return index < kAlgorithmNames.size() ? kAlgorithmNames[index] : "unknown";
}

std::optional<Algorithm> parseAlgorithm(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kAlgorithmNames.size(); ++i) {
    if (kAlgorithmNames[i] == name) return static_cast<Algorithm>(i);
  }
  if (name == "leaky_bucket_meter") return Algorithm::kLeakyBucketMeter;
  if (name == "sliding_window") return Algorithm::kSlidingWindowCounter;
  return std::nullopt;
}

LimitSpec::LimitSpec(Algorithm algorithm, Rate rate, std::uint64_t burst) noexcept
    : algorithm_(algorithm), rate_(rate), burst_(burst) {
  const auto period = static_cast<std::uint64_t>(rate.period_us);
  const std::uint64_t divisor = std::gcd(rate.count, period);
  unit_weight_ = static_cast<std::int64_t>(period / divisor);
  drain_per_micro_ = static_cast<std::int64_t>(rate.count / divisor);
}

Result<LimitSpec> LimitSpec::make(Algorithm algorithm, Rate rate, std::uint64_t burst) {
  if (static_cast<std::size_t>(algorithm) >= kAlgorithmNames.size()) {
    return Error{"unknown algorithm number " + std::to_string(static_cast<int>(algorithm))};
  }
  const std::string name(algorithmName(algorithm));
  if (std::optional<std::string> problem = rateProblem(rate)) {
    return Error{name + " " + rate.toString() + ": " + *problem};
  }
  switch (algorithm) {
    case Algorithm::kSlidingWindowLog:
      if (rate.count > kMaxLogCount) {
        return Error{name + " " + rate.toString() +
                     ": a sliding log remembers every request, so its count must be at most " +
                     std::to_string(kMaxLogCount) + "; use sliding_window_counter above that"};
      }
      return LimitSpec(algorithm, rate, rate.count);
    case Algorithm::kFixedWindow:
    case Algorithm::kSlidingWindowCounter:
      return LimitSpec(algorithm, rate, rate.count);
    default:
      break;
  }
  const std::string prefix = name + " " + rate.toString() + " burst " + std::to_string(burst);
  if (burst == 0) return Error{prefix + ": the burst (capacity) must be at least 1"};
  if (burst > kMaxCount) {
    return Error{prefix + ": the burst must be at most " + std::to_string(kMaxCount)};
  }
  LimitSpec spec(algorithm, rate, burst);
  if (algorithm == Algorithm::kTokenBucketInterval) {
    // The time to refill from empty must stay far from int64 overflow.
    const std::uint64_t refills = (burst + rate.count - 1) / rate.count;
    if (static_cast<std::uint64_t>(rate.period_us) >
        static_cast<std::uint64_t>(kMaxScaledCapacity) / refills) {
      return Error{prefix +
                   ": refilling the whole bucket would take too long; "
                   "use a larger refill amount or a shorter period"};
    }
  } else if (spec.unit_weight_ > kMaxScaledCapacity / static_cast<std::int64_t>(burst)) {
    return Error{prefix +
                 ": burst × period is too large for exact arithmetic; "
                 "use a shorter period with the same ratio"};
  }
  return spec;
}

Result<LimitSpec> LimitSpec::fixedWindow(Rate rate) {
  return make(Algorithm::kFixedWindow, rate, 0);
}
Result<LimitSpec> LimitSpec::slidingWindowLog(Rate rate) {
  return make(Algorithm::kSlidingWindowLog, rate, 0);
}
Result<LimitSpec> LimitSpec::slidingWindowCounter(Rate rate) {
  return make(Algorithm::kSlidingWindowCounter, rate, 0);
}
Result<LimitSpec> LimitSpec::tokenBucket(Rate rate, std::uint64_t burst) {
  return make(Algorithm::kTokenBucket, rate, burst);
}
Result<LimitSpec> LimitSpec::tokenBucketInterval(Rate refill, std::uint64_t max_amount) {
  return make(Algorithm::kTokenBucketInterval, refill, max_amount);
}
Result<LimitSpec> LimitSpec::leakyBucketMeter(Rate drain, std::uint64_t capacity) {
  return make(Algorithm::kLeakyBucketMeter, drain, capacity);
}
Result<LimitSpec> LimitSpec::leakyBucketShaper(Rate drain, std::uint64_t queue_capacity) {
  return make(Algorithm::kLeakyBucketShaper, drain, queue_capacity);
}
Result<LimitSpec> LimitSpec::gcra(Rate rate, std::uint64_t burst) {
  return make(Algorithm::kGcra, rate, burst);
}

std::string LimitSpec::toString() const {
  std::string out = std::string(algorithmName(algorithm_)) + " " + rate_.toString();
  if (burst_ != rate_.count || algorithm_ > Algorithm::kSlidingWindowCounter) {
    out += " burst " + std::to_string(burst_);
  }
  return out;
}

}  // namespace sluice
