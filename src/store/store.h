// Where limit state lives. Every store gives the same contract, so the engine and every front
// door work with any of them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "sluice/decision.h"
#include "sluice/outcome.h"
#include "sluice/time.h"

namespace sluice {

enum class StoreStatus : std::uint8_t {
  kOk,
  // Nothing was decided: the store could not be reached in time. A network store's call that
  // timed out may still run once the server catches up; the store then gives back what it
  // consumed, shortly after. Only a call whose reply is lost with its connection may stay
  // counted (an over-count that drains, never an over-admission).
  kUnavailable,
  kDegraded,  // decided, but without the shared store (each limit's on_error policy applied)
};

// Called once with the status when the outcomes are written.
using StoreCallback = std::function<void(StoreStatus)>;

class Store {
 public:
  // No call may overlap destruction, as for any object (a server destroys its store after its
  // loops have stopped). Calls that destruction fails are answered kUnavailable, and a callback
  // of one that asks again is answered kUnavailable at once.
  virtual ~Store() = default;

  // Thread-safe, never throws. Decides every check at the time `clock` gives, read as late as
  // the store can (after it has started fetching the keys' state), and writes one outcome per
  // check into `outcomes`, which has checks.size() elements.
  // All-or-nothing: when every check allows, each is consumed; when any denies, none is, and
  // the checks that would have allowed report their state as it is.
  [[nodiscard]] virtual StoreStatus apply(std::span<const LimitCheck> checks, const Clock& clock,
                                          std::span<Outcome> outcomes) noexcept = 0;

  // The same decision without blocking the caller: `done` runs once the outcomes are written,
  // possibly before applyAsync returns, possibly on another thread. `checks`, the keys they view,
  // `outcomes` and `clock` must stay valid until then. Stores in this process decide at once;
  // network stores (Redis) override this so a loop thread never waits on a round trip.
  virtual void applyAsync(std::span<const LimitCheck> checks, const Clock& clock,
                          std::span<Outcome> outcomes, StoreCallback done) noexcept {
    done(apply(checks, clock, outcomes));
  }

  // True when applyAsync always answers before it returns, on the caller's thread (the store
  // decides in this process): callers may then call apply() and skip the callback's
  // allocations. False unless a store says so.
  [[nodiscard]] virtual bool decidesInline() const noexcept { return false; }
};

using StorePtr = std::unique_ptr<Store>;

}  // namespace sluice
