// The embedded API: a rate limiter inside your own C++ process.
//
//   sluice::Limiter limiter;
//   const auto per_user = sluice::LimitSpec::tokenBucket(*sluice::Rate::parse("100/min"), 20);
//   if (!limiter.check("user:42", per_user.value()).allowed) { /* 429 */ }
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "sluice/decision.h"
#include "sluice/limit_spec.h"
#include "sluice/time.h"

namespace sluice {

struct LimiterOptions {
  // Upper bound on counters held in memory; see MemoryStoreOptions in the README.
  std::size_t max_keys = 1'000'000;
  std::size_t shards = 256;
  // The time source; nullptr uses the system clock. Must outlive the limiter.
  const Clock* clock = nullptr;
};

class Limiter {
 public:
  explicit Limiter(LimiterOptions options = {});
  ~Limiter();
  Limiter(const Limiter&) = delete;
  Limiter& operator=(const Limiter&) = delete;

  // Thread-safe, never throws. All-or-nothing over `checks`: when any limit denies, none is
  // consumed. Every check's spec must outlive the call.
  [[nodiscard]] Decision check(std::span<const LimitCheck> checks) noexcept;

  // Thread-safe. One limit, `cost` units (0 peeks).
  [[nodiscard]] Decision check(std::string_view key, const LimitSpec& spec,
                               std::uint64_t cost = 1) noexcept;

  // Thread-safe. Counters currently held in memory.
  [[nodiscard]] std::size_t keyCount() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice
