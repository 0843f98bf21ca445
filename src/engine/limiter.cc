#include "sluice/limiter.h"

#include <algorithm>

#include "engine/engine.h"
#include "store/memory_store.h"

namespace sluice {

struct Limiter::Impl {
  explicit Impl(const LimiterOptions& options)
      : store(MemoryStoreOptions{options.max_keys, options.shards}),
        engine(store, options.clock != nullptr ? *options.clock : system_clock) {}

  SystemClock system_clock;
  MemoryStore store;
  Engine engine;
};

namespace {

// Every check denied for `invalid_check`, nothing consumed.
Decision invalidChecks(std::size_t count) noexcept {
  Decision decision;
  for (std::size_t i = 0; i < count; ++i) {
    Outcome& outcome = decision.statuses.emplace_back();
    outcome.reason = DenyReason::kInvalidCheck;
    outcome.retry_after_us = kNever;
  }
  summarize(decision);
  return decision;
}

}  // namespace

Limiter::Limiter(LimiterOptions options) : impl_(std::make_unique<Impl>(options)) {}

Limiter::~Limiter() = default;

Decision Limiter::check(std::span<const LimitCheck> checks) noexcept {
  // The public boundary: a check without a spec is a caller's mistake, answered as a denial of
  // the whole request rather than a crash in the store.
  const bool invalid = std::any_of(checks.begin(), checks.end(),
                                   [](const LimitCheck& check) { return check.spec == nullptr; });
  return invalid ? invalidChecks(checks.size()) : impl_->engine.check(checks);
}

Decision Limiter::check(std::string_view key, const LimitSpec& spec, std::uint64_t cost) noexcept {
  const LimitCheck one{key, &spec, cost};
  return impl_->engine.check(std::span(&one, 1));
}

std::size_t Limiter::keyCount() const noexcept { return impl_->store.keyCount(); }

}  // namespace sluice
