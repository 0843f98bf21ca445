// Wraps a shared store (Redis, Redis Cluster) with its failure policy. When the shared store
// cannot answer (down, too slow, or the circuit breaker is open), each limit's on_error decides
// (on_error_policy.h). Such decisions report StoreStatus::kDegraded.
#pragma once

#include <memory>

#include "store/circuit_breaker.h"
#include "store/on_error_policy.h"
#include "store/store.h"

namespace sluice {

struct FailoverOptions {
  OnErrorOptions on_error{};
  std::size_t breaker_failures = 5;
  Micros breaker_cooldown_us = 1'000'000;
  // False for a shared store with a breaker per server of its own (Redis Cluster: one per
  // master). One breaker over all its calls would let a dead master's fast failures open it and
  // send the healthy masters' requests to on_error too.
  bool use_breaker = true;
};

class FailoverStore final : public Store {
 public:
  // `on_error` is made from options.on_error unless given (options.on_error is then unused): a
  // shared store that applies the policy itself to part of a request (the cluster store) shares
  // it, so both count `local` limits in one place.
  FailoverStore(std::unique_ptr<Store> shared, FailoverOptions options,
                std::shared_ptr<OnErrorPolicy> on_error = nullptr);
  // Closes the shared store first; decisions asked for meanwhile (by the callbacks of the calls
  // it fails) are decided by on_error.
  ~FailoverStore() override;

  [[nodiscard]] StoreStatus apply(std::span<const LimitCheck> checks, const Clock& clock,
                                  std::span<Outcome> outcomes) noexcept override;
  void applyAsync(std::span<const LimitCheck> checks, const Clock& clock,
                  std::span<Outcome> outcomes, StoreCallback done) noexcept override;

  // As the shared store decides (while the destructor closes it, on_error decides inline).
  [[nodiscard]] bool decidesInline() const noexcept override {
    return shared_ == nullptr || shared_->decidesInline();
  }

  [[nodiscard]] Store& shared() noexcept { return *shared_; }
  [[nodiscard]] bool breakerOpen() const noexcept { return breaker_.open(); }

 private:
  // Whether the shared store may be called now: the breaker, when used, is closed or probing.
  [[nodiscard]] bool mayCallShared(Micros now_us) noexcept;
  // Records the shared store's status for a call made at `started_us`; on failure decides by
  // on_error and says kDegraded.
  StoreStatus settle(StoreStatus status, Micros started_us, std::span<const LimitCheck> checks,
                     const Clock& clock, std::span<Outcome> outcomes) noexcept;
  // on_error's decision, its denials asking for a retry no sooner than the breaker's probe.
  StoreStatus decideOnError(std::span<const LimitCheck> checks, const Clock& clock,
                            std::span<Outcome> outcomes) noexcept;

  FailoverOptions options_;
  CircuitBreaker breaker_;
  std::shared_ptr<OnErrorPolicy> on_error_;
  std::unique_ptr<Store> shared_;  // null only while the destructor closes it
};

}  // namespace sluice
