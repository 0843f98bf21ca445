// Where limit state lives. Every store gives the same contract, so the engine and every front
// door work with any of them.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "sluice/decision.h"
#include "sluice/outcome.h"
#include "sluice/time.h"

namespace sluice {

enum class StoreStatus : std::uint8_t {
  kOk,
  kUnavailable,  // nothing was decided or consumed; the engine denies (fails closed) for now
};

class Store {
 public:
  virtual ~Store() = default;

  // Thread-safe, never throws. Decides every check at the time `clock` gives, read as late as
  // the store can (after it has started fetching the keys' state), and writes one outcome per
  // check into `outcomes`, which has checks.size() elements.
  // All-or-nothing: when every check allows, each is consumed; when any denies, none is, and
  // the checks that would have allowed report their state as it is.
  [[nodiscard]] virtual StoreStatus apply(std::span<const LimitCheck> checks, const Clock& clock,
                                          std::span<Outcome> outcomes) noexcept = 0;
};

using StorePtr = std::unique_ptr<Store>;

}  // namespace sluice
