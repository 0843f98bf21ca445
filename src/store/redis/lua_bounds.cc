#include "store/redis/lua_bounds.h"

#include <cstdint>

#include "store/redis/script_protocol.h"

namespace sluice::redis {
namespace {

__extension__ using UInt128 = unsigned __int128;

constexpr std::uint64_t kMaxCounterCount = (std::uint64_t{1} << 21) - 1;

std::string prefix(const LimitSpec& spec) {
  return spec.toString() + " cannot run in Redis exactly: ";
}

}  // namespace

std::optional<std::string> luaIncompatibility(const LimitSpec& spec) {
  const auto burst = UInt128{spec.burst()};
  switch (spec.algorithm()) {
    case Algorithm::kFixedWindow:
    case Algorithm::kSlidingWindowLog:
      return std::nullopt;
    case Algorithm::kSlidingWindowCounter:
      if (spec.rate().count <= kMaxCounterCount) return std::nullopt;
      return prefix(spec) + "a sliding window counter's count must be at most " +
             std::to_string(kMaxCounterCount) +
             " (its two counts are packed into one integer below 2^53); use a shorter period "
             "with the same ratio";
    case Algorithm::kTokenBucketInterval: {
      const UInt128 refills = (burst + spec.rate().count - 1) / spec.rate().count;
      if (refills * static_cast<std::uint64_t>(spec.rate().period_us) < kExactIntegersBelow) {
        return std::nullopt;
      }
      return prefix(spec) +
             "the time to refill the whole bucket, ceil(burst / count) × period, must be below "
             "2^53 µs; use a larger refill amount or a shorter period";
    }
    case Algorithm::kTokenBucket:
    case Algorithm::kLeakyBucketMeter:
    case Algorithm::kLeakyBucketShaper:
    case Algorithm::kGcra: {
      const UInt128 scaled = burst * static_cast<std::uint64_t>(spec.unitWeight()) +
                             static_cast<std::uint64_t>(spec.drainPerMicro());
      if (scaled < kExactIntegersBelow) return std::nullopt;
      return prefix(spec) +
             "its scaled capacity, burst × period / gcd(count, period) + count / gcd(count, "
             "period), must be below 2^53; use a shorter period with the same ratio or a "
             "smaller burst";
    }
  }
  return "unknown algorithm";
}

}  // namespace sluice::redis
