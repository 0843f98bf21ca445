// The engine: one call turns a request's limit checks into one all-or-nothing Decision.
#pragma once

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

 private:
  Store& store_;
  const Clock& clock_;
};

// Fills the summary fields of a decision (allowed, binding, retry_after, delay) from its
// statuses. Exposed for stores and tests that build decisions themselves.
void summarize(Decision& decision) noexcept;

}  // namespace sluice
