// Client side: self-limiting. A client that knows its quota (its tier's rate and burst) paces
// its own calls under it and waits locally, rather than sending calls that will be refused.
//
//   auto pacer = sluice::Pacer::make(sluice::Rate::parse("10/s").value(), 5);
//   for (const auto& job : jobs) {
//     pacer.value().take();  // sleeps while the quota is used up
//     send(job);
//   }
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "sluice/outcome.h"  // kNever
#include "sluice/rate.h"
#include "sluice/result.h"
#include "sluice/time.h"

namespace sluice {

class Pacer {
 public:
  // Paces at `rate` sustained, with up to `burst` units back to back, by GCRA (see
  // LimitSpec::gcra, whose errors it returns). `clock` (nullptr: the system clock) must outlive
  // the pacer.
  static Result<Pacer> make(Rate rate, std::uint64_t burst, const Clock* clock = nullptr);

  Pacer(Pacer&&) noexcept;
  Pacer& operator=(Pacer&&) noexcept;
  ~Pacer();

  // Thread-safe. Takes `cost` units and answers 0 when the quota has them; else takes nothing
  // and answers how long until it will (kNever when `cost` is larger than the burst).
  [[nodiscard]] Micros tryTake(std::uint64_t cost = 1) noexcept;

  // Thread-safe. Waits until `cost` units are taken, calling `sleep` (default: sleep the thread)
  // with each wait; false at once when `cost` never fits.
  bool take(std::uint64_t cost = 1, const std::function<void(Micros)>& sleep = {});

 private:
  struct State;
  explicit Pacer(std::unique_ptr<State> state) noexcept;

  std::unique_ptr<State> state_;
};

}  // namespace sluice
