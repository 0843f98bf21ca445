// ConnectionDeadline on a real loop with real short deadlines. The tests check what happened and
// in which order, never how long it took: where an order could depend on how fast the machine
// is, one side of it is far away (an hour) or already past. Real time bounds each run only as a
// watchdog, so a deadline that never fires fails instead of hanging.
#include "server/connection_deadline.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>

namespace sluice::server {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;
using Log = std::vector<std::string>;

// A connection as the deadline sees it: it logs "passed" when its deadline passes.
class Owner : public std::enable_shared_from_this<Owner> {
 public:
  Owner(net::io_context& loop, Log& log) : deadline(loop, *this, &Owner::onPassed), log_(log) {}

  ConnectionDeadline<Owner> deadline;
  Steady::time_point passed_at;

 private:
  void onPassed() {
    passed_at = Steady::now();
    log_.push_back("passed");
  }

  Log& log_;
};

class ConnectionDeadlineTest : public ::testing::Test {
 protected:
  ConnectionDeadlineTest() : owner_(std::make_shared<Owner>(loop_, log_)) {}

  // Logs "marker" at `at`, then runs `then`. Of timers due at the same wake-up, the one with
  // the earlier expiry runs first, whatever the machine's speed.
  void markAt(Steady::time_point at, std::function<void()> then = {}) {
    auto timer = std::make_shared<LoopTimer>(loop_, at);
    timer->async_wait([this, timer, then = std::move(then)](const boost::system::error_code& ec) {
      if (ec) return;
      log_.push_back("marker");
      if (then) then();
    });
  }

  // Runs the loop until it has nothing left to do: true, or false if it still had work after
  // the watchdog's 5 s.
  bool runUntilIdle() {
    loop_.restart();
    loop_.run_for(5s);
    return loop_.stopped();
  }

  // Runs the loop until `done()`, the loop has nothing left to do, or the watchdog's 5 s pass.
  void runUntil(const std::function<bool()>& done) {
    loop_.restart();
    const auto give_up = Steady::now() + 5s;
    while (!done() && !loop_.stopped() && Steady::now() < give_up) loop_.run_one_for(10ms);
  }

  bool markerSeen() const { return std::find(log_.begin(), log_.end(), "marker") != log_.end(); }

  net::io_context loop_;
  Log log_;
  std::shared_ptr<Owner> owner_;
  const Steady::time_point start_ = Steady::now();
};

// A deadline that passes fires once, and with nothing armed the timer stops.
TEST_F(ConnectionDeadlineTest, PassedDeadlineFiresOnceThenTheTimerStops) {
  owner_->deadline.arm(start_ + 1ms);
  EXPECT_TRUE(owner_->deadline.armed());
  ASSERT_TRUE(runUntilIdle());
  EXPECT_EQ(log_, Log{"passed"});
  EXPECT_FALSE(owner_->deadline.armed());
}

// armAfter() counts from now: a timeout of 0 has passed at the first wake.
TEST_F(ConnectionDeadlineTest, ArmAfterZeroFiresAtTheFirstWake) {
  owner_->deadline.armAfter(0);
  ASSERT_TRUE(runUntilIdle());
  EXPECT_EQ(log_, Log{"passed"});
}

// A deadline moved later before it passes does not fire when the first one would have.
TEST_F(ConnectionDeadlineTest, DeadlineMovedLaterDoesNotFireAtTheFirstInstant) {
  owner_->deadline.arm(start_ + 1ms);
  owner_->deadline.arm(start_ + 1h);
  markAt(start_ + 5ms);  // after the timer's wake for the first deadline
  runUntil([this] { return markerSeen(); });
  EXPECT_EQ(log_, Log{"marker"});
  EXPECT_TRUE(owner_->deadline.armed());
}

// A deadline moved later fires once, when the later one has passed and not before.
TEST_F(ConnectionDeadlineTest, DeadlineMovedLaterFiresAtTheLaterOne) {
  const Steady::time_point later = start_ + 20ms;
  owner_->deadline.arm(start_ + 1ms);
  owner_->deadline.arm(later);
  ASSERT_TRUE(runUntilIdle());
  EXPECT_EQ(log_, Log{"passed"});
  EXPECT_TRUE(owner_->passed_at >= later);  // not at the first deadline
}

// Neither a disarmed deadline nor a stopped one fires, and the loop is left with nothing to do:
// the disarmed one's timer stops at its wake, the stopped one's wait is cancelled at once.
TEST_F(ConnectionDeadlineTest, DisarmedOrStoppedDeadlineDoesNotFire) {
  owner_->deadline.arm(start_ + 1ms);
  owner_->deadline.disarm();
  const auto stopped = std::make_shared<Owner>(loop_, log_);
  stopped->deadline.arm(start_ + 1h);
  stopped->deadline.stop();
  EXPECT_FALSE(owner_->deadline.armed());
  EXPECT_FALSE(stopped->deadline.armed());
  ASSERT_TRUE(runUntilIdle());
  EXPECT_EQ(log_, Log{});
}

// An earlier deadline armed while the timer waits for a later one fires at the earlier one,
// whether the later one is still armed or was disarmed (the gateway disarms between operations
// and may then arm a shorter timeout).
TEST_F(ConnectionDeadlineTest, EarlierDeadlineFiresBeforeTheLaterWait) {
  owner_->deadline.arm(start_ + 1h);
  owner_->deadline.arm(start_ + 1ms);
  const auto disarmed = std::make_shared<Owner>(loop_, log_);
  disarmed->deadline.arm(start_ + 1h);
  disarmed->deadline.disarm();
  disarmed->deadline.arm(start_ + 1ms);
  runUntil([this] { return log_.size() == 2; });
  EXPECT_EQ(log_, (Log{"passed", "passed"}));
}

// After stop(), a deadline later than the cancelled wait's is watched again.
TEST_F(ConnectionDeadlineTest, DeadlineArmedAfterStopFires) {
  owner_->deadline.arm(start_ + 1ms);
  owner_->deadline.stop();
  owner_->deadline.arm(start_ + 5ms);
  ASSERT_TRUE(runUntilIdle());
  EXPECT_EQ(log_, Log{"passed"});
}

// A wake already due when stop() runs is ignored; the deadline armed after stop() fires once.
TEST_F(ConnectionDeadlineTest, WakeDueBeforeStopIsIgnored) {
  owner_->deadline.arm(start_ - 1ms);  // due at the loop's first wake-up
  markAt(start_ - 2ms, [this] {        // runs just before that wake, at the same wake-up
    owner_->deadline.stop();
    owner_->deadline.arm(Steady::now() + 5ms);
  });
  ASSERT_TRUE(runUntilIdle());
  EXPECT_EQ(log_, (Log{"marker", "passed"}));
}

// A pending wait holds its owner weakly: a closed connection goes at once.
TEST_F(ConnectionDeadlineTest, PendingWaitDoesNotKeepTheOwnerAlive) {
  owner_->deadline.arm(start_ + 1h);
  const std::weak_ptr<Owner> weak = owner_;
  owner_.reset();
  EXPECT_TRUE(weak.expired());
  ASSERT_TRUE(runUntilIdle());  // the cancelled wait's handler touches nothing
  EXPECT_EQ(log_, Log{});
}

// A wake already due when the owner goes touches nothing (ASan would see it).
TEST_F(ConnectionDeadlineTest, WakeAfterTheOwnerIsGoneDoesNothing) {
  owner_->deadline.arm(start_ - 1ms);                // due at the loop's first wake-up
  markAt(start_ - 2ms, [this] { owner_.reset(); });  // just before that wake
  ASSERT_TRUE(runUntilIdle());
  EXPECT_EQ(log_, Log{"marker"});
}

}  // namespace
}  // namespace sluice::server
