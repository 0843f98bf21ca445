#include "sluice/pacer.h"

#include <chrono>
#include <mutex>
#include <optional>
#include <thread>

#include "algorithm/gcra.h"
#include "sluice/limit_spec.h"

namespace sluice {

struct Pacer::State {
  State(LimitSpec gcra_spec, const Clock* given) : spec(gcra_spec), clock(given) {
    if (clock == nullptr) clock = &own_clock.emplace();
  }

  LimitSpec spec;
  std::optional<SystemClock> own_clock;
  const Clock* clock;
  std::mutex mutex;
  algorithm::GcraState gcra;
};

Result<Pacer> Pacer::make(Rate rate, std::uint64_t burst, const Clock* clock) {
  Result<LimitSpec> spec = LimitSpec::gcra(rate, burst);
  if (!spec.ok()) return Error{spec.error()};
  return Pacer(std::make_unique<State>(spec.value(), clock));
}

Pacer::Pacer(std::unique_ptr<State> state) noexcept : state_(std::move(state)) {}
Pacer::Pacer(Pacer&&) noexcept = default;
Pacer& Pacer::operator=(Pacer&&) noexcept = default;
Pacer::~Pacer() = default;

Micros Pacer::tryTake(std::uint64_t cost) noexcept {
  std::lock_guard lock(state_->mutex);
  const Outcome outcome =
      algorithm::consumeGcra(state_->gcra, state_->clock->now(), state_->spec, cost);
  return outcome.allowed ? 0 : outcome.retry_after_us;
}

bool Pacer::take(std::uint64_t cost, const std::function<void(Micros)>& sleep) {
  for (;;) {
    const Micros wait = tryTake(cost);
    if (wait == 0) return true;
    if (wait == kNever) return false;
    if (sleep) {
      sleep(wait);
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(wait));
    }
  }
}

}  // namespace sluice
