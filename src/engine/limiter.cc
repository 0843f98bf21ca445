#include "sluice/limiter.h"

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

Limiter::Limiter(LimiterOptions options) : impl_(std::make_unique<Impl>(options)) {}

Limiter::~Limiter() = default;

Decision Limiter::check(std::span<const LimitCheck> checks) noexcept {
  return impl_->engine.check(checks);
}

Decision Limiter::check(std::string_view key, const LimitSpec& spec, std::uint64_t cost) noexcept {
  const LimitCheck one{key, &spec, cost};
  return impl_->engine.check(std::span(&one, 1));
}

std::size_t Limiter::keyCount() const noexcept { return impl_->store.keyCount(); }

}  // namespace sluice
