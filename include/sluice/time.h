// Time as Sluice sees it: integer microseconds, and a Clock that is injected everywhere.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

namespace sluice {

// Microseconds. Used for both instants (since the Unix epoch) and durations.
using Micros = std::int64_t;

inline constexpr Micros kMicrosPerMilli = 1'000;
inline constexpr Micros kMicrosPerSecond = 1'000'000;
inline constexpr Micros kMicrosPerMinute = 60 * kMicrosPerSecond;
inline constexpr Micros kMicrosPerHour = 60 * kMicrosPerMinute;
inline constexpr Micros kMicrosPerDay = 24 * kMicrosPerHour;
inline constexpr Micros kMicrosPerWeek = 7 * kMicrosPerDay;
// Calendar months and years vary; Sluice uses fixed lengths, as Envoy's RLS headers do.
inline constexpr Micros kMicrosPerMonth = 30 * kMicrosPerDay;
inline constexpr Micros kMicrosPerYear = 365 * kMicrosPerDay;

// The source of `now` for the engine and stores. Algorithms never read a clock.
class Clock {
 public:
  virtual ~Clock() = default;

  // Thread-safe. Microseconds since the Unix epoch; never smaller than a value returned earlier.
  [[nodiscard]] virtual Micros now() const noexcept = 0;
};

// Wall time anchored once at construction and advanced by the steady clock, so durations are
// immune to wall-clock steps (NTP, manual changes) while windows still align to calendar
// boundaries such as UTC midnight.
class SystemClock final : public Clock {
 public:
  SystemClock() noexcept;

  // Clock
  [[nodiscard]] Micros now() const noexcept override;

 private:
  Micros wall_at_anchor_us_;
  std::chrono::steady_clock::time_point steady_anchor_;
};

// The system clock read by a background thread every `tick_us` and cached: now() is one atomic
// load instead of a clock_gettime (33–52 ns on the VMs Sluice is benchmarked on), at the price
// of a resolution of one tick. The time it returns lags real time by less than a tick, which
// makes a limiter slightly stricter, never looser. nginx and Envoy cache time the same way.
class TickingClock final : public Clock {
 public:
  // Starts the ticking thread. Precondition: tick_us > 0.
  explicit TickingClock(Micros tick_us = kMicrosPerMilli);
  ~TickingClock() override;
  TickingClock(const TickingClock&) = delete;
  TickingClock& operator=(const TickingClock&) = delete;

  // Clock
  [[nodiscard]] Micros now() const noexcept override {
    return now_us_.load(std::memory_order_relaxed);
  }

 private:
  struct Ticker;
  std::atomic<Micros> now_us_;
  std::unique_ptr<Ticker> ticker_;
};

// A clock for tests: it moves only when told to. Unlike a real clock, set() may move it
// backwards, to test how stores and algorithms treat that.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(Micros start_us = 0) noexcept : now_us_(start_us) {}

  // Clock
  [[nodiscard]] Micros now() const noexcept override {
    return now_us_.load(std::memory_order_acquire);
  }

  void advance(Micros delta_us) noexcept { now_us_.fetch_add(delta_us, std::memory_order_acq_rel); }
  void set(Micros now_us) noexcept { now_us_.store(now_us, std::memory_order_release); }

 private:
  std::atomic<Micros> now_us_;
};

}  // namespace sluice
