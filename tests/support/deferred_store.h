// Test helper: a store that answers applyAsync later, when the test runs its pending calls (as
// a network store answers on its own schedule), or answers that it cannot decide at all.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "store/memory_store.h"
#include "store/store.h"

namespace sluice::testing {

class DeferredStore final : public Store {
 public:
  StoreStatus apply(std::span<const LimitCheck> checks, const Clock& clock,
                    std::span<Outcome> outcomes) noexcept override {
    return inner.apply(checks, clock, outcomes);
  }
  void applyAsync(std::span<const LimitCheck> checks, const Clock& clock,
                  std::span<Outcome> outcomes, StoreCallback done) noexcept override {
    pending.push_back([this, checks, &clock, outcomes, done = std::move(done)] {
      done(unavailable ? StoreStatus::kUnavailable : inner.apply(checks, clock, outcomes));
    });
  }

  MemoryStore inner;
  bool unavailable = false;
  std::vector<std::function<void()>> pending;  // run in order by the test
};

}  // namespace sluice::testing
