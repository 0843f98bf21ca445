// FailoverStore over a RedisStore on a real redis-server: each on_error policy while Redis is
// down, all-or-nothing across policies, and the circuit breaker that stops calling a dead
// Redis and probes it back. Also the CircuitBreaker alone, at fake instants.
#include "store/failover_store.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "store/circuit_breaker.h"
#include "store/memory_store.h"
#include "store/redis/redis_store.h"
#include "support/frozen_redis.h"
#include "support/redis_server.h"
#include "support/specs.h"

namespace sluice {
namespace {

using testing::kJan2026;
using testing::RedisServer;
using testing::spec;

using SteadyClock = std::chrono::steady_clock;

class CircuitBreakerTest : public ::testing::Test {
 protected:
  static constexpr Micros kCooldownUs = 1'000;
  CircuitBreaker breaker_{3, kCooldownUs};
  const Micros t0_ = kJan2026;
};

// The third failure in a row opens the breaker; the two before it do not.
TEST_F(CircuitBreakerTest, OpensAtTheThreshold) {
  breaker_.onFailure(t0_, t0_);
  breaker_.onFailure(t0_, t0_);
  EXPECT_FALSE(breaker_.open());
  EXPECT_TRUE(breaker_.allow(t0_));
  breaker_.onFailure(t0_, t0_);
  EXPECT_TRUE(breaker_.open());
  EXPECT_FALSE(breaker_.allow(t0_));
}

// A success in between starts the count again: failures must be consecutive.
TEST_F(CircuitBreakerTest, SuccessResetsTheCount) {
  breaker_.onFailure(t0_, t0_);
  breaker_.onFailure(t0_, t0_);
  breaker_.onSuccess();
  breaker_.onFailure(t0_, t0_);
  breaker_.onFailure(t0_, t0_);
  EXPECT_FALSE(breaker_.open());
  EXPECT_TRUE(breaker_.allow(t0_));
}

// Open until exactly the cooldown has passed: 1 µs before, no call; at it, one probe.
TEST_F(CircuitBreakerTest, CooldownEdge) {
  for (int i = 0; i < 3; ++i) breaker_.onFailure(t0_, t0_);
  EXPECT_FALSE(breaker_.allow(t0_ + kCooldownUs - 1));
  EXPECT_TRUE(breaker_.allow(t0_ + kCooldownUs));
}

// After the cooldown exactly one caller probes; the others keep off until it reports.
TEST_F(CircuitBreakerTest, SingleProbe) {
  for (int i = 0; i < 3; ++i) breaker_.onFailure(t0_, t0_);
  EXPECT_TRUE(breaker_.allow(t0_ + kCooldownUs));
  EXPECT_FALSE(breaker_.allow(t0_ + kCooldownUs));
  EXPECT_FALSE(breaker_.allow(t0_ + 100 * kCooldownUs));
  EXPECT_TRUE(breaker_.open());
}

// Eight threads asking at once after the cooldown: one probe among them.
TEST_F(CircuitBreakerTest, SingleProbeAmongThreads) {
  for (int i = 0; i < 3; ++i) breaker_.onFailure(t0_, t0_);
  std::atomic<int> probes{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) probes += breaker_.allow(t0_ + kCooldownUs) ? 1 : 0;
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(probes.load(), 1);
}

// A successful probe closes the breaker: every caller passes again.
TEST_F(CircuitBreakerTest, ProbeSuccessCloses) {
  for (int i = 0; i < 3; ++i) breaker_.onFailure(t0_, t0_);
  ASSERT_TRUE(breaker_.allow(t0_ + kCooldownUs));
  breaker_.onSuccess();
  EXPECT_FALSE(breaker_.open());
  EXPECT_TRUE(breaker_.allow(t0_ + kCooldownUs));
  EXPECT_TRUE(breaker_.allow(t0_ + kCooldownUs));
  // Closed again means the full threshold again, not one failure.
  breaker_.onFailure(t0_ + kCooldownUs, t0_ + kCooldownUs);
  EXPECT_FALSE(breaker_.open());
}

// Failures of calls that were out when an earlier failure was seen are no new evidence: a stall
// that fails a whole batch counts once. Only calls made after the latest failure count.
TEST_F(CircuitBreakerTest, CallsOutAtAFailureCountAsOne) {
  for (int i = 0; i < 10; ++i) breaker_.onFailure(t0_ + 50 + i, t0_);  // all made at t0
  EXPECT_FALSE(breaker_.open());
  breaker_.onFailure(t0_ + 120, t0_ + 60);  // made after the first failure was seen (t0 + 50)
  EXPECT_FALSE(breaker_.open());
  breaker_.onFailure(t0_ + 190, t0_ + 130);  // the third in a row
  EXPECT_TRUE(breaker_.open());
}

// While a probe is out, a failure of a call made before it says nothing of the probe.
TEST_F(CircuitBreakerTest, AStaleFailureDoesNotEndTheProbe) {
  for (int i = 0; i < 3; ++i) breaker_.onFailure(t0_, t0_);
  const Micros probe_at = t0_ + kCooldownUs;
  ASSERT_TRUE(breaker_.allow(probe_at));
  breaker_.onFailure(probe_at + 10, t0_ - 5);  // out since before the breaker opened (at t0)
  // Still probing: no second probe even a cooldown later (a reopened breaker would allow one).
  EXPECT_FALSE(breaker_.allow(probe_at + kCooldownUs + 20));
  breaker_.onSuccess();  // the probe's answer
  EXPECT_FALSE(breaker_.open());
}

// A probe whose caller reports it as made a little before allow() let it through (the cluster
// store once gave the instant its call was first made) still reopens the breaker when it fails:
// only a call out since before the breaker opened is stale. Taken for stale, the probe's
// failure left the breaker probing for good, every later call refused.
TEST_F(CircuitBreakerTest, AProbeReportedAsMadeBeforeItWasLetThroughStillCounts) {
  for (int i = 0; i < 3; ++i) breaker_.onFailure(t0_, t0_);
  const Micros probe_at = t0_ + kCooldownUs;
  ASSERT_TRUE(breaker_.allow(probe_at));
  breaker_.onFailure(probe_at + 50, probe_at - 3);
  EXPECT_TRUE(breaker_.open());
  EXPECT_TRUE(breaker_.allow(probe_at + 50 + kCooldownUs));  // a new probe, a cooldown later
}

// A failed probe reopens the breaker for a whole cooldown counted from the probe's failure.
TEST_F(CircuitBreakerTest, FailedProbeReopens) {
  for (int i = 0; i < 3; ++i) breaker_.onFailure(t0_, t0_);
  const Micros probe_at = t0_ + 5 * kCooldownUs;
  ASSERT_TRUE(breaker_.allow(probe_at));
  breaker_.onFailure(probe_at, probe_at);
  EXPECT_TRUE(breaker_.open());
  EXPECT_FALSE(breaker_.allow(probe_at + kCooldownUs - 1));
  EXPECT_TRUE(breaker_.allow(probe_at + kCooldownUs));
  EXPECT_FALSE(breaker_.allow(probe_at + kCooldownUs));
}

class FailoverStoreTest : public ::testing::Test {
 protected:
  static constexpr std::size_t kBreakerFailures = 3;
  static constexpr Micros kCooldownUs = kMicrosPerSecond;
  static constexpr Micros kUnavailableRetryUs = 7 * kMicrosPerSecond;

  FailoverStoreTest() {
    RedisStoreOptions redis;
    redis.port = static_cast<std::uint16_t>(server_.port());
    // Generous: a loaded machine must not turn a healthy Redis into failures.
    redis.timeout_us = 10 * kMicrosPerSecond;
    FailoverOptions failover;
    failover.on_error.sluice_nodes = 2;
    failover.breaker_failures = kBreakerFailures;
    failover.breaker_cooldown_us = kCooldownUs;
    failover.on_error.unavailable_retry_after_us = kUnavailableRetryUs;
    store_ = std::make_unique<FailoverStore>(std::make_unique<RedisStore>(redis), failover);
    EXPECT_TRUE(waitUntilRedisDecides()) << "the Redis store never connected";
  }

  // Polls the Redis store itself (around the breaker) until it decides; false after 2 s.
  bool waitUntilRedisDecides() {
    const LimitCheck peek{"probe", &ten_per_day_, 0};
    const auto deadline = SteadyClock::now() + std::chrono::seconds(2);
    while (SteadyClock::now() < deadline) {
      Outcome outcome;
      if (store_->shared().apply(std::span(&peek, 1), clock_, std::span(&outcome, 1)) ==
          StoreStatus::kOk) {
        return true;
      }
      // Polling a reconnecting client, not timing it.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  // Decides `checks`; EXPECTs the status and returns the outcomes.
  std::vector<Outcome> applyAll(const std::vector<LimitCheck>& checks, StoreStatus expected) {
    std::vector<Outcome> outcomes(checks.size());
    EXPECT_EQ(store_->apply(checks, clock_, outcomes), expected);
    return outcomes;
  }
  Outcome applyOne(const LimitCheck& check, StoreStatus expected) {
    return applyAll({check}, expected)[0];
  }

  // Allowed single checks out of `requests`, each EXPECTed to have `expected` status.
  int admitted(const LimitCheck& check, int requests, StoreStatus expected) {
    int count = 0;
    for (int i = 0; i < requests; ++i) count += applyOne(check, expected).allowed ? 1 : 0;
    return count;
  }

  RedisServer server_;
  FakeClock clock_{kJan2026};  // drives the breaker and the local fallback only
  std::unique_ptr<FailoverStore> store_;
  const LimitSpec ten_per_day_ = spec(Algorithm::kFixedWindow, "10/day");
  const LimitSpec bucket_ = spec(Algorithm::kTokenBucket, "10/day", 10);
};

// With Redis up, decisions are Redis's: status kOk, the full limit, the breaker closed.
TEST_F(FailoverStoreTest, PassesThroughWhileRedisIsUp) {
  const LimitCheck check{"k", &ten_per_day_, 1, {}, OnStoreError::kDeny};
  EXPECT_EQ(admitted(check, 12, StoreStatus::kOk), 10);
  EXPECT_FALSE(store_->breakerOpen());
}

// A Redis store answers later, on its own schedule, so callers must take the async path; a
// wrapper says what its shared store does.
TEST_F(FailoverStoreTest, DecidesInlineAsItsSharedStoreDoes) {
  EXPECT_FALSE(store_->decidesInline());
  EXPECT_FALSE(store_->shared().decidesInline());
  const FailoverStore over_memory(std::make_unique<MemoryStore>(), FailoverOptions{});
  EXPECT_TRUE(over_memory.decidesInline());
}

// on_error allow: every request is admitted, degraded, showing the full limit.
TEST_F(FailoverStoreTest, AllowAdmitsWhileRedisIsDown) {
  server_.stop();
  const LimitCheck check{"k", &ten_per_day_, 1, {}, OnStoreError::kAllow};
  for (int i = 0; i < 15; ++i) {
    const Outcome outcome = applyOne(check, StoreStatus::kDegraded);
    EXPECT_TRUE(outcome.allowed);
    EXPECT_EQ(outcome.reason, DenyReason::kNone);
    EXPECT_EQ(outcome.limit, 10u);
    EXPECT_EQ(outcome.remaining, 10u);
  }
}

// on_error deny: every request is denied as unavailable, with the configured retry_after, and
// the limit reads full until then (a reset of 0 said "full now" beside Retry-After: 1).
TEST_F(FailoverStoreTest, DenyDeniesWhileRedisIsDown) {
  server_.stop();
  const LimitCheck check{"k", &ten_per_day_, 1, {}, OnStoreError::kDeny};
  for (int i = 0; i < 5; ++i) {
    const Outcome outcome = applyOne(check, StoreStatus::kDegraded);
    EXPECT_FALSE(outcome.allowed);
    EXPECT_EQ(outcome.reason, DenyReason::kStoreUnavailable);
    EXPECT_EQ(outcome.retry_after_us, kUnavailableRetryUs);
    EXPECT_EQ(outcome.reset_after_us, kUnavailableRetryUs);
  }
}

// While the breaker is open nothing reaches Redis, so a denied client is told to come back no
// sooner than the probe: told the configured second, it was refused again for the whole
// cooldown (30 s here). Before the breaker opens, and when less than the configured wait is
// left of the cooldown, the configured wait stands.
TEST_F(FailoverStoreTest, DeniesAskForARetryNoSoonerThanTheBreakersProbe) {
  constexpr Micros kLongCooldownUs = 30 * kMicrosPerSecond;
  RedisStoreOptions redis;
  redis.port = static_cast<std::uint16_t>(server_.port());
  FailoverOptions failover;
  failover.breaker_failures = 2;
  failover.breaker_cooldown_us = kLongCooldownUs;
  failover.on_error.unavailable_retry_after_us = kMicrosPerSecond;
  FailoverStore store(std::make_unique<RedisStore>(redis), failover);
  server_.stop();
  const LimitCheck check{"k", &ten_per_day_, 1, {}, OnStoreError::kDeny};
  const auto retryAfter = [&] {
    Outcome outcome;
    EXPECT_EQ(store.apply(std::span(&check, 1), clock_, std::span(&outcome, 1)),
              StoreStatus::kDegraded);
    EXPECT_EQ(outcome.reason, DenyReason::kStoreUnavailable);
    EXPECT_EQ(outcome.reset_after_us, outcome.retry_after_us);
    return outcome.retry_after_us;
  };
  EXPECT_EQ(retryAfter(), kMicrosPerSecond);  // one failure: the breaker is closed
  EXPECT_EQ(retryAfter(), kLongCooldownUs);   // the second opens it
  ASSERT_TRUE(store.breakerOpen());
  clock_.advance(20 * kMicrosPerSecond);
  EXPECT_EQ(retryAfter(), 10 * kMicrosPerSecond);
  clock_.advance(10 * kMicrosPerSecond - 1);
  EXPECT_EQ(retryAfter(), kMicrosPerSecond);  // 1 µs left: the configured second is longer
}

// on_error local: this node enforces its share, limit / sluice_nodes, per key.
TEST_F(FailoverStoreTest, LocalEnforcesTheNodeShare) {
  server_.stop();
  const LimitCheck window{"w", &ten_per_day_, 1, {}, OnStoreError::kLocal};
  const LimitCheck bucket{"b", &bucket_, 1, {}, OnStoreError::kLocal};
  EXPECT_EQ(admitted(window, 8, StoreStatus::kDegraded), 5);
  EXPECT_EQ(admitted(bucket, 8, StoreStatus::kDegraded), 5);
  const Outcome denied = applyOne(window, StoreStatus::kDegraded);
  EXPECT_EQ(denied.reason, DenyReason::kOverLimit);
  EXPECT_EQ(denied.limit, 5u);
  // Another key has its own local count.
  const LimitCheck other{"w2", &ten_per_day_, 1, {}, OnStoreError::kLocal};
  EXPECT_EQ(admitted(other, 8, StoreStatus::kDegraded), 5);
}

// A request with a deny limit is denied whole: its local limits only look, consuming nothing.
TEST_F(FailoverStoreTest, LocalBesideDenyConsumesNothing) {
  server_.stop();
  const LimitCheck local{"client", &ten_per_day_, 1, {}, OnStoreError::kLocal};
  const LimitCheck deny{"route", &ten_per_day_, 1, {}, OnStoreError::kDeny};
  for (int i = 0; i < 8; ++i) {
    const std::vector<Outcome> outcomes = applyAll({local, deny}, StoreStatus::kDegraded);
    EXPECT_EQ(outcomes[0].remaining, 5u) << "request " << i;
    EXPECT_FALSE(outcomes[1].allowed);
    EXPECT_EQ(outcomes[1].reason, DenyReason::kStoreUnavailable);
  }
  EXPECT_EQ(admitted(local, 8, StoreStatus::kDegraded), 5);
}

// applyAsync falls back the same way, and calls back once.
TEST_F(FailoverStoreTest, AsyncFallsBackWhileRedisIsDown) {
  server_.stop();
  const LimitCheck check{"k", &ten_per_day_, 1, {}, OnStoreError::kLocal};
  for (int i = 0; i < 7; ++i) {
    Outcome outcome;
    std::atomic<int> calls{0};
    std::promise<StoreStatus> status;
    store_->applyAsync(std::span(&check, 1), clock_, std::span(&outcome, 1), [&](StoreStatus got) {
      if (++calls == 1) status.set_value(got);
    });
    auto future = status.get_future();
    ASSERT_EQ(future.wait_for(std::chrono::seconds(5)), std::future_status::ready);
    EXPECT_EQ(future.get(), StoreStatus::kDegraded);
    EXPECT_EQ(outcome.allowed, i < 5) << "request " << i;
    EXPECT_EQ(calls.load(), 1);
  }
}

// After breaker_failures failures the breaker opens and stays open through the cooldown even
// once Redis is back; then one probe reaches Redis and closes it.
TEST_F(FailoverStoreTest, BreakerOpensThenOneProbeCloses) {
  const LimitCheck check{"k", &ten_per_day_, 1, {}, OnStoreError::kAllow};
  server_.stop();
  for (std::size_t i = 0; i + 1 < kBreakerFailures; ++i) {
    (void)applyOne(check, StoreStatus::kDegraded);
    EXPECT_FALSE(store_->breakerOpen()) << "failure " << i + 1;
  }
  (void)applyOne(check, StoreStatus::kDegraded);
  EXPECT_TRUE(store_->breakerOpen());

  server_.restart();
  ASSERT_TRUE(waitUntilRedisDecides());
  // Redis answers, but the breaker keeps requests off it until the cooldown has passed.
  clock_.advance(kCooldownUs - 1);
  (void)applyOne(check, StoreStatus::kDegraded);
  EXPECT_TRUE(store_->breakerOpen());
  clock_.advance(1);
  EXPECT_EQ(applyOne(check, StoreStatus::kOk).remaining, 9u);  // the probe reached Redis
  EXPECT_FALSE(store_->breakerOpen());
  EXPECT_EQ(applyOne(check, StoreStatus::kOk).remaining, 8u);
}

// A probe that fails reopens the breaker for a full cooldown from the probe.
TEST_F(FailoverStoreTest, FailedProbeReopensTheBreaker) {
  const LimitCheck check{"k", &ten_per_day_, 1, {}, OnStoreError::kAllow};
  server_.stop();
  for (std::size_t i = 0; i < kBreakerFailures; ++i) (void)applyOne(check, StoreStatus::kDegraded);
  ASSERT_TRUE(store_->breakerOpen());
  clock_.advance(kCooldownUs);
  (void)applyOne(check, StoreStatus::kDegraded);  // the probe, into a dead Redis
  EXPECT_TRUE(store_->breakerOpen());

  server_.restart();
  ASSERT_TRUE(waitUntilRedisDecides());
  clock_.advance(kCooldownUs - 1);
  (void)applyOne(check, StoreStatus::kDegraded);
  EXPECT_TRUE(store_->breakerOpen());
  clock_.advance(1);
  EXPECT_EQ(applyOne(check, StoreStatus::kOk).remaining, 9u);
  EXPECT_FALSE(store_->breakerOpen());
}

// One stall of Redis fails every call out at that moment, and every request queued behind
// them: that is one failure, not one per request. The breaker stays closed, so decisions go
// back to Redis as soon as it answers, instead of to on_error for a whole cooldown (a 30 ms
// stall under load sent a second of decisions there).
TEST_F(FailoverStoreTest, OneStallIsOneFailure) {
  RedisStoreOptions redis;
  redis.port = static_cast<std::uint16_t>(server_.port());
  redis.timeout_us = 50 * kMicrosPerMilli;
  FailoverOptions failover;
  failover.breaker_failures = kBreakerFailures;
  failover.breaker_cooldown_us = 60 * kMicrosPerSecond;  // an open breaker would stay open
  FailoverStore store(std::make_unique<RedisStore>(redis), failover);
  const SystemClock clock;  // the breaker compares when calls were made with when they failed
  constexpr int kRequests = 16;
  std::vector<std::string> keys;  // what the checks' keys view
  for (int i = 0; i < kRequests; ++i) keys.push_back("stall" + std::to_string(i));
  std::vector<LimitCheck> checks;
  for (int i = 0; i < kRequests; ++i) {
    checks.push_back({keys[i], &ten_per_day_, 1, {}, OnStoreError::kAllow});
  }
  Outcome outcome;
  const auto up_by = SteadyClock::now() + std::chrono::seconds(2);
  while (store.apply(std::span(checks.data(), 1), clock, std::span(&outcome, 1)) !=
             StoreStatus::kOk &&
         SteadyClock::now() < up_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling a connecting client
  }
  ASSERT_FALSE(store.breakerOpen());

  std::vector<Outcome> outcomes(kRequests);
  std::atomic<int> degraded{0};
  std::atomic<int> answered{0};
  std::promise<void> all_answered;
  {
    testing::Frozen frozen(testing::redisPid(server_));
    for (int i = 0; i < kRequests; ++i) {
      store.applyAsync(std::span(&checks[i], 1), clock, std::span(&outcomes[i], 1),
                       [&](StoreStatus status) {
                         if (status == StoreStatus::kDegraded) ++degraded;
                         if (++answered == kRequests) all_answered.set_value();
                       });
    }
    ASSERT_EQ(all_answered.get_future().wait_for(std::chrono::seconds(10)),
              std::future_status::ready);
  }
  EXPECT_EQ(degraded.load(), kRequests);
  EXPECT_FALSE(store.breakerOpen());
}

}  // namespace
}  // namespace sluice
