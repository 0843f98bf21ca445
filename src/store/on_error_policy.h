// How limits decide when their shared store cannot answer: each check's on_error says allow,
// deny, or `local`, which enforces the limit divided by the node count in this process's memory.
// The failover store applies it to a whole request; the cluster store to the checks of the slots
// that failed while the others answered.
#pragma once

#include <map>
#include <mutex>
#include <span>
#include <tuple>

#include "store/memory_store.h"
#include "store/store.h"

namespace sluice {

struct OnErrorOptions {
  std::size_t sluice_nodes = 1;  // on_error: local enforces limit / sluice_nodes here
  std::size_t local_max_keys = 100'000;
  // What a denied-for-unavailability request is told to wait.
  Micros unavailable_retry_after_us = 1'000'000;
};

class OnErrorPolicy {
 public:
  explicit OnErrorPolicy(OnErrorOptions options);

  // Thread-safe, never throws. Writes one outcome per check and returns kDegraded.
  // All-or-nothing as a store is: `local` checks consume only when no check denies (a `deny`
  // check always does; the local limits may too). A `deny` check asks for a retry after
  // unavailable_retry_after_us, or `store_back_in_us` when that is longer: the time until the
  // store is asked again (a circuit breaker's cooldown), before which every retry is refused.
  StoreStatus decide(std::span<const LimitCheck> checks, const Clock& clock,
                     std::span<Outcome> outcomes, Micros store_back_in_us = 0) noexcept;

 private:
  // This node's share of `spec`, made once per distinct spec.
  const LimitSpec& localSpec(const LimitSpec& spec);

  OnErrorOptions options_;
  MemoryStore local_;
  std::mutex local_specs_mutex_;
  std::map<std::tuple<int, std::uint64_t, Micros, std::uint64_t>, std::unique_ptr<LimitSpec>>
      local_specs_;
};

}  // namespace sluice
