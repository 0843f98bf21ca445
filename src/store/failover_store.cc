#include "store/failover_store.h"

namespace sluice {

FailoverStore::FailoverStore(std::unique_ptr<Store> shared, FailoverOptions options,
                             std::shared_ptr<OnErrorPolicy> on_error)
    : options_(options),
      breaker_(options.breaker_failures, options.breaker_cooldown_us),
      on_error_(on_error != nullptr ? std::move(on_error)
                                    : std::make_shared<OnErrorPolicy>(options.on_error)),
      shared_(std::move(shared)) {}

FailoverStore::~FailoverStore() {
  // Closing the shared store answers the calls it still has out, and their callbacks may ask
  // for more decisions: those find no shared store and are decided by on_error, while every
  // member they use still exists.
  std::unique_ptr<Store> closing = std::move(shared_);
  closing.reset();
}

StoreStatus FailoverStore::apply(std::span<const LimitCheck> checks, const Clock& clock,
                                 std::span<Outcome> outcomes) noexcept {
  const Micros started_us = clock.now();
  if (!mayCallShared(started_us)) return decideOnError(checks, clock, outcomes);
  return settle(shared_->apply(checks, clock, outcomes), started_us, checks, clock, outcomes);
}

void FailoverStore::applyAsync(std::span<const LimitCheck> checks, const Clock& clock,
                               std::span<Outcome> outcomes, StoreCallback done) noexcept {
  const Micros started_us = clock.now();
  if (!mayCallShared(started_us)) return done(decideOnError(checks, clock, outcomes));
  shared_->applyAsync(
      checks, clock, outcomes,
      [this, started_us, checks, &clock, outcomes, done = std::move(done)](StoreStatus status) {
        done(settle(status, started_us, checks, clock, outcomes));
      });
}

bool FailoverStore::mayCallShared(Micros now_us) noexcept {
  return shared_ != nullptr && (!options_.use_breaker || breaker_.allow(now_us));
}

StoreStatus FailoverStore::settle(StoreStatus status, Micros started_us,
                                  std::span<const LimitCheck> checks, const Clock& clock,
                                  std::span<Outcome> outcomes) noexcept {
  if (status != StoreStatus::kUnavailable) {
    if (options_.use_breaker) breaker_.onSuccess();
    return status;
  }
  if (options_.use_breaker) breaker_.onFailure(clock.now(), started_us);
  return decideOnError(checks, clock, outcomes);
}

StoreStatus FailoverStore::decideOnError(std::span<const LimitCheck> checks, const Clock& clock,
                                         std::span<Outcome> outcomes) noexcept {
  // While the breaker is open, a denied client that retries sooner than it lets a call through
  // is denied again: told "a second", it was refused for the whole cooldown.
  const Micros back_in_us = options_.use_breaker ? breaker_.probeIn(clock.now()) : 0;
  return on_error_->decide(checks, clock, outcomes, back_in_us);
}

}  // namespace sluice
