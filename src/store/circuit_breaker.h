// Stops calling a store that keeps failing, so a dead Redis costs requests no latency: after
// `failures` failures in a row the breaker opens for `cooldown`; then one call probes, and its
// success closes the breaker while its failure opens it again.
//
// Failures in a row are of calls each made after the previous failure was seen. Calls already
// out when one failed are no new evidence: one stall of Redis (a slow command, a fork) fails a
// whole batch, or every call in flight, at once, and counted each, 30 ms of stall under load
// opened the breaker and sent a second of decisions to on_error.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "sluice/time.h"

namespace sluice {

class CircuitBreaker {
 public:
  CircuitBreaker(std::size_t failures, Micros cooldown_us) noexcept
      : threshold_(failures), cooldown_us_(cooldown_us) {}

  // Thread-safe. Whether a call may go to the store now. While open, false; once the cooldown
  // has passed, true for exactly one caller (the probe) until it reports.
  [[nodiscard]] bool allow(Micros now_us) noexcept {
    const Micros open_until = open_until_us_.load(std::memory_order_acquire);
    if (open_until == 0) return true;
    if (now_us < open_until) return false;
    bool expected = false;
    return probing_.compare_exchange_strong(expected, true);
  }
  void onSuccess() noexcept {
    failures_.store(0, std::memory_order_relaxed);
    if (open_until_us_.load(std::memory_order_relaxed) != 0) {
      open_until_us_.store(0, std::memory_order_release);
      probing_.store(false);
    }
  }
  // A call made at `started_us` failed, seen at `now_us` (instants of one clock). The probe's
  // `started_us` must be no earlier than the instant allow() let it through.
  void onFailure(Micros now_us, Micros started_us) noexcept {
    if (probing_.load()) {
      // A call out since before the breaker opened says nothing of the probe, the one call let
      // through since: the probe's own answer decides.
      if (started_us < opened_at_us_.load(std::memory_order_acquire)) return;
    } else {
      if (started_us < last_failure_us_.load(std::memory_order_relaxed)) return;
      last_failure_us_.store(now_us, std::memory_order_relaxed);
      if (failures_.fetch_add(1, std::memory_order_relaxed) + 1 < threshold_) return;
    }
    opened_at_us_.store(now_us, std::memory_order_release);  // before allow() can see it open
    open_until_us_.store(now_us + cooldown_us_, std::memory_order_release);
    probing_.store(false);
  }
  [[nodiscard]] bool open() const noexcept {
    return open_until_us_.load(std::memory_order_relaxed) != 0;
  }
  // How long until the breaker lets a probe through: 0 when it is closed, or its cooldown has
  // passed. No call goes to the store before then, so no answer can change sooner.
  [[nodiscard]] Micros probeIn(Micros now_us) const noexcept {
    const Micros open_until = open_until_us_.load(std::memory_order_acquire);
    return open_until > now_us ? open_until - now_us : 0;
  }

 private:
  const std::size_t threshold_;
  const Micros cooldown_us_;
  std::atomic<std::size_t> failures_{0};
  std::atomic<Micros> last_failure_us_{0};  // when the latest failure counted was seen
  std::atomic<Micros> opened_at_us_{0};     // when it last opened
  std::atomic<Micros> open_until_us_{0};    // 0: closed
  std::atomic<bool> probing_{false};
};

}  // namespace sluice
