// The engine: one call turns a request's limit checks into one all-or-nothing Decision.
#pragma once

#include <functional>
#include <memory>
#include <span>

#include "sluice/decision.h"
#include "sluice/time.h"
#include "store/store.h"

namespace sluice {

class Engine {
 public:
  // Both must outlive the engine.
  Engine(Store& store, const Clock& clock) noexcept : store_(store), clock_(clock) {}

  // Thread-safe, never throws. Checks every limit at the clock's now. An empty list is allowed.
  [[nodiscard]] Decision check(std::span<const LimitCheck> checks) noexcept;

  // The same decision without waiting on a network store: `done` runs once with the decision,
  // possibly before checkAsync returns, possibly on another thread. `checks` and the keys they
  // view must stay valid until then.
  using DecisionCallback = std::function<void(Decision&&)>;
  void checkAsync(std::span<const LimitCheck> checks, DecisionCallback done) noexcept;
  // True when checkAsync would answer at once, on the caller's thread (Store::decidesInline).
  [[nodiscard]] bool decidesInline() const noexcept { return store_.decidesInline(); }

 private:
  // What a store that cannot decide at all asks of the caller: to retry a second on.
  static constexpr Micros kUnavailableRetryAfterUs = kMicrosPerSecond;

  // Turns the store's status and outcomes into the decision's summary.
  static void finish(std::span<const LimitCheck> checks, Decision& decision,
                     StoreStatus status) noexcept;

  Store& store_;
  const Clock& clock_;
};

// Fills the summary fields of a decision (allowed, binding, retry_after, delay) from its
// statuses. Exposed for stores and tests that build decisions themselves.
void summarize(Decision& decision) noexcept;

}  // namespace sluice
