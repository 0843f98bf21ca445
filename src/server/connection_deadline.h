// The deadline of a connection's outstanding operation, on one timer per connection. Arming
// only moves the deadline: the timer is set again when it wakes before the deadline (the
// deadline moved later meanwhile) or when a deadline comes before its expiry, so a request
// costs no timer operation in steady state (one per operation would make the reactor update
// its timer queue, under a lock, twice per request or more).
#pragma once

#include <cassert>
#include <chrono>
#include <cstdint>

#include <boost/asio/io_context.hpp>

#include "server/loop_io.h"
#include "sluice/time.h"

namespace sluice::server {

// `Owner` is the connection: it holds this as a member, derives from
// std::enable_shared_from_this, and is owned by a shared_ptr before the first arm(). A pending
// wait holds the owner weakly, so a closed connection need not live until its timer wakes; a
// wake that finds the owner gone touches nothing. Not thread-safe: every call, and the
// callback, run on the owner's loop.
template <class Owner>
class ConnectionDeadline {
 public:
  using Clock = std::chrono::steady_clock;
  // Runs when a deadline that is still armed has passed; it is disarmed by then.
  using OnPassed = void (Owner::*)();

  ConnectionDeadline(boost::asio::io_context& loop, Owner& owner, OnPassed on_passed)
      : timer_(loop), owner_(owner), on_passed_(on_passed) {}

  ConnectionDeadline(const ConnectionDeadline&) = delete;
  ConnectionDeadline& operator=(const ConnectionDeadline&) = delete;

  // Arms `deadline`, replacing the armed one whether it is later or earlier.
  void arm(Clock::time_point deadline) {
    deadline_ = deadline;
    armed_ = true;
    if (!running_ || deadline_ < timer_.expiry()) startTimer();
  }

  // Arms the deadline `timeout_us` microseconds from now.
  void armAfter(Micros timeout_us) { arm(Clock::now() + std::chrono::microseconds(timeout_us)); }

  // Nothing is watched until the next arm(); the timer stops at its next wake.
  void disarm() noexcept { armed_ = false; }

  [[nodiscard]] bool armed() const noexcept { return armed_; }

  // For closing: disarms and cancels the wait now. A wake already on its way is ignored, and
  // a later arm() starts the timer again.
  void stop() {
    armed_ = false;
    running_ = false;
    ++generation_;
    timer_.cancel();
  }

 private:
  void startTimer() {
    running_ = true;
    timer_.expires_at(deadline_);  // cancels a wait for a later expiry: its generation is stale
    auto weak = owner_.weak_from_this();
    assert(!weak.expired() && "the owner must be owned by a shared_ptr before arm()");
    // A cancelled wait always carries a stale generation, so its error code needs no look.
    timer_.async_wait([this, weak = std::move(weak),
                       generation = ++generation_](const boost::system::error_code&) {
      const auto owner = weak.lock();
      if (owner == nullptr || generation != generation_) return;
      onWake();
    });
  }

  void onWake() {
    running_ = false;
    if (!armed_) return;  // nothing outstanding: the next arm() starts the timer again
    if (Clock::now() < deadline_) return startTimer();  // moved on meanwhile
    armed_ = false;
    (owner_.*on_passed_)();
  }

  LoopTimer timer_;
  Owner& owner_;
  OnPassed on_passed_;
  Clock::time_point deadline_;
  std::uint64_t generation_ = 0;
  bool armed_ = false;
  bool running_ = false;  // a wait is outstanding whose wake will be acted on
};

}  // namespace sluice::server
