// Wraps a shared store (Redis, Redis Cluster) with its failure policy. When the shared store
// cannot answer (down, too slow, or the circuit breaker is open), each limit's on_error
// decides: allow, deny, or `local`, which enforces the limit divided by the node count in this
// process's memory. Such decisions report StoreStatus::kDegraded.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "store/circuit_breaker.h"
#include "store/memory_store.h"
#include "store/store.h"

namespace sluice {

struct FailoverOptions {
  std::size_t sluice_nodes = 1;  // on_error: local enforces limit / sluice_nodes here
  std::size_t breaker_failures = 5;
  Micros breaker_cooldown_us = 1'000'000;
  // False for a shared store with a breaker per server of its own (Redis Cluster: one per
  // master). One breaker over all its calls would let a dead master's fast failures open it and
  // send the healthy masters' requests to on_error too.
  bool use_breaker = true;
  std::size_t local_max_keys = 100'000;
  // What a denied-for-unavailability request is told to wait.
  Micros unavailable_retry_after_us = 1'000'000;
};

class FailoverStore final : public Store {
 public:
  FailoverStore(std::unique_ptr<Store> shared, FailoverOptions options);
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
  // Records the shared store's status; on failure decides by on_error and says kDegraded.
  StoreStatus settle(StoreStatus status, std::span<const LimitCheck> checks, const Clock& clock,
                     std::span<Outcome> outcomes) noexcept;
  StoreStatus fallBack(std::span<const LimitCheck> checks, const Clock& clock,
                       std::span<Outcome> outcomes) noexcept;
  // This node's share of `spec`, made once per distinct spec.
  const LimitSpec& localSpec(const LimitSpec& spec);

  FailoverOptions options_;
  CircuitBreaker breaker_;
  MemoryStore local_;
  std::mutex local_specs_mutex_;
  std::map<std::tuple<int, std::uint64_t, Micros, std::uint64_t>, std::unique_ptr<LimitSpec>>
      local_specs_;
  std::unique_ptr<Store> shared_;  // null only while the destructor closes it
};

}  // namespace sluice
