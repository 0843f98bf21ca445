// Test helper: real time, moved back to the start of its UTC day when made. Every calendar
// window a policy aligns to (the minute of a fixed window, the hour, the day of a quota) is then
// fresh when a test starts, and none turns during a test shorter than a minute: without this, a
// test whose requests straddle a minute's turn on the system clock sees a new window between two
// of them, one run in a few hundred.
//
// Only for the memory store, which takes its time from this clock (Redis's scripts read Redis's
// TIME), and only where nothing compares the time with the real one: a JWT's exp and nbf are
// read against this clock, so a test that signs tokens must date them by its now().
#pragma once

#include "sluice/time.h"

namespace sluice::testing {

class FreshDayClock final : public Clock {
 public:
  FreshDayClock() noexcept : shift_us_(real_.now() % kMicrosPerDay) {}

  // Clock
  [[nodiscard]] Micros now() const noexcept override { return real_.now() - shift_us_; }

 private:
  SystemClock real_;
  Micros shift_us_;
};

}  // namespace sluice::testing
