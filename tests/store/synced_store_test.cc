// SyncedStore: two nodes sharing one real redis-server. Each node decides in memory against the
// last global state plus its own deltas, spends at most its share between syncs, keeps deciding
// while Redis is down, and pushes what it admitted once Redis is back.
#include "store/redis/synced_store.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "store/synced_store_fixture.h"
#include "support/frozen_redis.h"
#include "support/redis_server.h"
#include "support/specs.h"

namespace sluice {
namespace {

using testing::Frozen;
using testing::kBurstOvershoot;
using testing::kLimit;
using testing::kManualSyncIntervalUs;
using testing::kNodes;
using testing::redisPid;
using testing::RedisServer;
using testing::spec;
using testing::SteadyClock;
using testing::SyncedStoreTest;

// Alone, a node spends half of what the global state has left between syncs: 500 of a fresh
// 1000, then 250 of the 500 left, then 125. A share denial says to retry after one interval.
TEST_F(SyncedStoreTest, NodeSpendsItsShareBetweenSyncs) {
  auto node = makeNode(kManualSyncIntervalUs);
  EXPECT_EQ(spend(*node), 500u);
  const Outcome denied = applyOne(*node, 1);
  EXPECT_EQ(denied.reason, DenyReason::kOverLimit);
  EXPECT_EQ(denied.retry_after_us, kManualSyncIntervalUs);
  EXPECT_EQ(denied.remaining, 0u);
  ASSERT_TRUE(syncUntilOk(*node));
  EXPECT_EQ(spend(*node), 250u);
  ASSERT_TRUE(syncUntilOk(*node));
  EXPECT_EQ(spend(*node), 125u);
}

// Two nodes, two threads each, syncing between rounds until nothing more is admitted: the total
// reaches the limit and overshoots it by no more than the documented burst bound.
TEST_F(SyncedStoreTest, TwoNodesStayWithinTheBurstBound) {
  std::unique_ptr<SyncedStore> nodes[kNodes] = {makeNode(kManualSyncIntervalUs),
                                                makeNode(kManualSyncIntervalUs)};
  std::uint64_t total = 0;
  int rounds = 0;
  for (; rounds < 20; ++rounds) {
    std::atomic<std::uint64_t> admitted{0};
    std::vector<std::thread> threads;
    for (auto& node : nodes) {
      for (int t = 0; t < 2; ++t) {
        threads.emplace_back([&, store = node.get()] {
          const LimitCheck check{"k", &per_hour_, 1};
          int denials_in_a_row = 0;
          // Until it denies repeatedly: a node's share, once spent, stays spent until a sync.
          for (std::uint64_t i = 0; i <= kLimit && denials_in_a_row < 5; ++i) {
            Outcome outcome;
            (void)store->apply(std::span(&check, 1), clock_, std::span(&outcome, 1));
            denials_in_a_row = outcome.allowed ? 0 : denials_in_a_row + 1;
            if (outcome.allowed) ++admitted;
          }
        });
      }
    }
    for (std::thread& thread : threads) thread.join();
    total += admitted.load();
    for (auto& node : nodes) ASSERT_TRUE(syncUntilOk(*node)) << "round " << rounds;
    if (admitted.load() == 0) break;
  }
  EXPECT_LT(rounds, 20) << "admissions never stopped";
  EXPECT_LE(total, kLimit + kBurstOvershoot);
  // Shares round down to at least one unit, so the nodes converge on the whole limit.
  EXPECT_GE(total, kLimit - 5);
}

// With Redis gone, decisions still come at once (degraded once syncs fail); what was admitted
// meanwhile is pushed when Redis returns, and the other node then sees it.
TEST_F(SyncedStoreTest, DecidesWhileRedisIsDownAndPushesLaterDeltas) {
  // Syncs every 20 ms, each allowed long enough that a loaded machine does not fail them.
  auto node = makeNode(20 * kMicrosPerMilli, 500 * kMicrosPerMilli);
  auto other = makeNode(kManualSyncIntervalUs);
  server_.stop();
  // Peeks until the background syncs have failed and decisions say so.
  const auto deadline = SteadyClock::now() + std::chrono::seconds(3);
  StoreStatus status = StoreStatus::kOk;
  while (status != StoreStatus::kDegraded && SteadyClock::now() < deadline) {
    const LimitCheck peek{"k", &per_hour_, 0};
    Outcome outcome;
    status = node->apply(std::span(&peek, 1), clock_, std::span(&outcome, 1));
    // Polling for the background sync to fail, not timing it.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(status, StoreStatus::kDegraded);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(applyOne(*node, 1, StoreStatus::kDegraded).allowed);
  EXPECT_FALSE(node->syncNow());

  server_.restart();  // empty: only deltas pushed from now on count
  ASSERT_TRUE(syncUntilOk(*node));
  EXPECT_EQ(applyOne(*node, 0).remaining, kLimit - 10);
  // The other node admits one unit of its own, so every sync it tries pushes (and pulls) the
  // key: a sync with nothing to push may skip a key whose pull failed (see
  // FailedPullIsRetriedByTheNextSync).
  EXPECT_TRUE(applyOne(*other, 1).allowed);
  EXPECT_EQ(applyOne(*other, 0).remaining, kLimit - 1);  // before it has pulled the key
  ASSERT_TRUE(syncUntilOk(*other));
  EXPECT_EQ(applyOne(*other, 0).remaining, kLimit - 11);
}

// A frozen Redis (SIGSTOP) leaves syncs hanging until their deadline; decisions never wait on
// them. Checked on a watchdog thread, so a blocking decision fails instead of stalling the test.
TEST_F(SyncedStoreTest, NeverBlocksOnAFrozenRedis) {
  auto node = makeNode(20 * kMicrosPerMilli, 200 * kMicrosPerMilli);
  ASSERT_TRUE(applyOne(*node, 1).allowed);
  ASSERT_TRUE(syncUntilOk(*node));
  Frozen frozen(redisPid(server_));
  auto decided = std::async(std::launch::async, [&] {
    std::uint64_t admitted = 0;
    const LimitCheck check{"k", &per_hour_, 1};
    for (int i = 0; i < 2000; ++i) {
      Outcome outcome;
      (void)node->apply(std::span(&check, 1), clock_, std::span(&outcome, 1));
      admitted += outcome.allowed ? 1 : 0;
    }
    return admitted;
  });
  ASSERT_EQ(decided.wait_for(std::chrono::seconds(5)), std::future_status::ready)
      << "decisions blocked on a frozen Redis";
  // The share of the 999 left after the first sync.
  EXPECT_EQ(decided.get(), 499u);
  frozen.thaw();
  ASSERT_TRUE(syncUntilOk(*node));
  (void)applyOne(*node, 0, StoreStatus::kOk);  // no longer degraded
}

// Deltas pushed by a sync that timed out on a frozen Redis are pushed again later; Redis runs
// the first push too once it resumes, and its late reply takes the units back (from pending, or
// by a refund when they were pushed again already), so they count once.
TEST_F(SyncedStoreTest, DeltasOfATimedOutSyncCountOnce) {
  // A sync's deadline is at least an interval; a short one lets the frozen syncs time out soon
  // (its own syncs, in the background, may push the same deltas again: each counts once too).
  auto node = makeNode(200 * kMicrosPerMilli, 100 * kMicrosPerMilli);
  // The observer pulls a key it has nothing to push every kSlowSyncEvery intervals (100 ms here),
  // so it sees the refund even when its own push went out before the refund landed.
  auto other = makeNode(20 * kMicrosPerMilli);
  ASSERT_TRUE(applyOne(*node, 0).allowed);
  ASSERT_TRUE(syncUntilOk(*node));  // connected
  {
    Frozen frozen(redisPid(server_));
    for (int i = 0; i < 10; ++i) EXPECT_TRUE(applyOne(*node, 1).allowed);
    EXPECT_FALSE(node->syncNow());  // times out; Redis still holds the call
  }
  ASSERT_TRUE(syncUntilOk(*node));
  ASSERT_TRUE(applyOne(*other, 1).allowed);
  // A refund lands a round trip after the late reply: polled, not timed.
  std::uint64_t remaining = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE(syncUntilOk(*node));
    ASSERT_TRUE(syncUntilOk(*other));
    remaining = applyOne(*other, 0).remaining;
    if (remaining == kLimit - 11) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(remaining, kLimit - 11);
}

// The late reply of a sync that timed out brings the state with the units it pushed, and the
// node takes it: it never sees more left than what it has not itself admitted. (It used to drop
// the units from pending without taking the state, and saw its whole share free again until
// its next pull.)
TEST_F(SyncedStoreTest, ALateSyncReplyKeepsTheUnitsItCarried) {
  auto node = makeNode(200 * kMicrosPerMilli, 100 * kMicrosPerMilli);
  ASSERT_TRUE(applyOne(*node, 0).allowed);
  ASSERT_TRUE(syncUntilOk(*node));  // connected
  const std::uint64_t admitted = spend(*node);
  ASSERT_GT(admitted, 0u);
  {
    Frozen frozen(redisPid(server_));
    EXPECT_FALSE(node->syncNow());  // times out; Redis still holds the call
  }
  // Redis runs the push once it resumes; its late reply comes within a round trip, and the
  // next background pull within an interval. Watched through both, bounded by count and time.
  std::uint64_t most_remaining = 0;
  const auto until = SteadyClock::now() + std::chrono::milliseconds(600);
  const LimitCheck peek{"k", &per_hour_, 0};
  for (int i = 0; i < 2'000 && SteadyClock::now() < until; ++i) {
    Outcome outcome;  // degraded until a sync succeeds again, and as exact
    (void)node->apply(std::span(&peek, 1), clock_, std::span(&outcome, 1));
    most_remaining = std::max(most_remaining, outcome.remaining);
    std::this_thread::sleep_for(std::chrono::microseconds(250));  // sampling, not timing
  }
  EXPECT_LE(most_remaining, kLimit - admitted);
}

// A sync whose pull failed (Redis down) pulls the key again next time: syncNow() says true
// only once the node holds the global state, and decisions are no longer degraded.
// (A failed pull used to wait kPullEvery intervals, now kSlowSyncEvery, and an empty sync left
// the node degraded.)
TEST_F(SyncedStoreTest, FailedPullIsRetriedByTheNextSync) {
  auto pusher = makeNode(kManualSyncIntervalUs);
  auto puller = makeNode(kManualSyncIntervalUs);
  server_.stop();
  EXPECT_EQ(applyOne(*puller, 0).remaining, kLimit);  // the key is in use on the puller
  EXPECT_FALSE(puller->syncNow());

  server_.restart();
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(applyOne(*pusher, 1).allowed);
  ASSERT_TRUE(syncUntilOk(*pusher));
  ASSERT_TRUE(syncUntilOk(*puller));
  EXPECT_EQ(applyOne(*puller, 0, StoreStatus::kOk).remaining, kLimit - 10);
}

// A request is all-or-nothing across its checks, also when it names one key twice: a check
// past its node share keeps the others from consuming.
TEST_F(SyncedStoreTest, MultiCheckIsAllOrNothing) {
  auto node = makeNode(kManualSyncIntervalUs);
  const LimitSpec small = spec(Algorithm::kFixedWindow, "10/hour");  // a share of 5
  const auto decide = [&](const std::vector<LimitCheck>& request) {
    std::vector<Outcome> outcomes(request.size());
    EXPECT_EQ(node->apply(request, clock_, outcomes), StoreStatus::kOk);
    bool allowed = true;
    for (const Outcome& outcome : outcomes) allowed = allowed && outcome.allowed;
    return allowed;
  };
  EXPECT_TRUE(decide({{"k", &per_hour_, 100}, {"small", &small, 3}}));
  EXPECT_FALSE(decide({{"k", &per_hour_, 100}, {"small", &small, 3}}));
  EXPECT_EQ(applyOne(*node, 0).remaining, kLimit - 100);
  // 100 + 300 + 300 passes the share of 500 only in part: nothing is consumed.
  EXPECT_FALSE(decide({{"k", &per_hour_, 300}, {"k", &per_hour_, 300}}));
  EXPECT_EQ(applyOne(*node, 0).remaining, kLimit - 100);
  EXPECT_TRUE(decide({{"k", &per_hour_, 200}, {"k", &per_hour_, 200}}));
  EXPECT_EQ(applyOne(*node, 0).remaining, kLimit - 500);
}

// The syncs every interval push a key's units at once when they are a quarter of this node's
// share or more, and hold fewer back (for up to five intervals, sync_policy.h); syncNow() with
// no argument pushes everything.
TEST_F(SyncedStoreTest, ScheduledSyncsHoldBackUnitsFarFromTheLimit) {
  auto node = nodeThatPushed(10);
  EXPECT_EQ(usedInRedis(), 10u);
  // The share is now (1000 - 10) / 2 = 495, and a quarter of it (rounded down) 123.
  EXPECT_TRUE(applyOne(*node, 100).allowed);
  ASSERT_TRUE(node->syncNow(SyncedStore::Push::kDue));
  EXPECT_EQ(usedInRedis(), 10u);
  EXPECT_TRUE(applyOne(*node, 23).allowed);
  ASSERT_TRUE(node->syncNow(SyncedStore::Push::kDue));
  EXPECT_EQ(usedInRedis(), 133u);
  EXPECT_TRUE(applyOne(*node, 1).allowed);
  ASSERT_TRUE(node->syncNow(SyncedStore::Push::kDue));
  EXPECT_EQ(usedInRedis(), 133u);
  ASSERT_TRUE(node->syncNow());
  EXPECT_EQ(usedInRedis(), 134u);
}

// Units held back reach Redis through the syncs every interval alone, within five intervals
// (polled for up to 3 s, not timed).
TEST_F(SyncedStoreTest, UnitsHeldBackArePushedBySyncsInTheBackground) {
  auto node = makeNode(20 * kMicrosPerMilli);
  ASSERT_TRUE(syncUntilOk(*node));
  EXPECT_TRUE(applyOne(*node, 10).allowed);
  ASSERT_TRUE(node->syncNow());
  EXPECT_TRUE(applyOne(*node, 1).allowed);  // under a quarter share: held back
  std::uint64_t used = 0;
  const auto deadline = SteadyClock::now() + std::chrono::seconds(3);
  while (used != 11 && SteadyClock::now() < deadline) {
    used = usedInRedis();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(used, 11u);
}

// A request denied because this node's share ran out gets a fresh share at the next sync, even
// when the units held back were too few to be due by themselves.
TEST_F(SyncedStoreTest, AShareThatRanOutIsRenewedAtTheNextSync) {
  auto node = nodeThatPushed(10);
  // The share is (1000 - 10) / 2 = 495: 100 units are held back, and 400 more do not fit.
  EXPECT_TRUE(applyOne(*node, 100).allowed);
  EXPECT_FALSE(applyOne(*node, 400).allowed);
  ASSERT_TRUE(node->syncNow(SyncedStore::Push::kDue));
  EXPECT_EQ(usedInRedis(), 110u);
  EXPECT_TRUE(applyOne(*node, 400).allowed);  // the share is now (1000 - 110) / 2 = 445
}

// A node going away while Redis is frozen waits for its last push a second at most, not for a
// sync's deadline (here the ten-second interval). Checked on a watchdog thread, which thaws Redis
// if the node is still going after 5 s, so that the test ends either way.
TEST_F(SyncedStoreTest, ANodeGoingAwayDoesNotWaitOnAFrozenRedis) {
  auto node = makeNode(kManualSyncIntervalUs);
  ASSERT_TRUE(syncUntilOk(*node));
  EXPECT_TRUE(applyOne(*node, 10).allowed);
  Frozen frozen(redisPid(server_));
  auto gone = std::async(std::launch::async, [&] { node.reset(); });
  EXPECT_EQ(gone.wait_for(std::chrono::seconds(5)), std::future_status::ready)
      << "the node waited on the frozen Redis";
  frozen.thaw();
  gone.wait();
}

// A node going away while a sync that timed out is still queued on a frozen Redis does not
// push that sync's units again: Redis runs the queued sync once it resumes, and with the last
// push behind it counted them twice (7 + 13 admitted read 33).
TEST_F(SyncedStoreTest, ANodeGoingAwayDoesNotPushATimedOutSyncAgain) {
  // A sync's deadline is at least an interval: a short one times out soon.
  auto node = makeNode(200 * kMicrosPerMilli, 100 * kMicrosPerMilli);
  ASSERT_TRUE(syncUntilOk(*node));
  ASSERT_TRUE(applyOne(*node, 7).allowed);
  ASSERT_TRUE(syncUntilOk(*node));
  {
    Frozen frozen(redisPid(server_));
    ASSERT_TRUE(applyOne(*node, 13).allowed);
    EXPECT_FALSE(node->syncNow());  // times out; Redis holds the call
    auto gone = std::async(std::launch::async, [&] { node.reset(); });
    EXPECT_EQ(gone.wait_for(std::chrono::seconds(5)), std::future_status::ready);
    frozen.thaw();
    gone.wait();
  }
  EXPECT_EQ(usedInRedis(), 20u);
}

// A node going away (its store closed, as `sluice serve` does when it stops) pushes what it
// held back.
TEST_F(SyncedStoreTest, ANodeGoingAwayPushesWhatItHeldBack) {
  auto node = nodeThatPushed(10);
  EXPECT_TRUE(applyOne(*node, 5).allowed);
  ASSERT_TRUE(node->syncNow(SyncedStore::Push::kDue));  // held back: under a quarter share
  EXPECT_EQ(usedInRedis(), 10u);
  node.reset();
  EXPECT_EQ(usedInRedis(), 15u);
}

// A check's group names its counter too (the group is the hash tag of its Redis key): the same
// key under two groups is two counters, here and in Redis.
TEST_F(SyncedStoreTest, GroupsNameSeparateCounters) {
  auto node = makeNode(kManualSyncIntervalUs);
  ASSERT_TRUE(syncUntilOk(*node));
  const auto remaining = [&](std::string_view group, std::uint64_t cost) {
    const LimitCheck check{"k", &per_hour_, cost, group};
    Outcome outcome;
    EXPECT_EQ(node->apply(std::span(&check, 1), clock_, std::span(&outcome, 1)), StoreStatus::kOk);
    return outcome.remaining;
  };
  (void)remaining("tenant-a", 300);
  EXPECT_EQ(remaining("tenant-a", 0), kLimit - 300);
  EXPECT_EQ(remaining("tenant-b", 0), kLimit);
  EXPECT_EQ(remaining("", 0), kLimit);  // no group: the key alone
  ASSERT_TRUE(node->syncNow());
  // Only tenant-a's counter was pushed; the others were pulled and are still unused.
  const auto keys = server_.connect().command({"KEYS", "*"}).elements;
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_NE(keys[0].text.find("k|"), std::string::npos) << keys[0].text;
}

// While Redis is down a node keeps deciding alone at about its share of the rate: its failed
// pushes fold its units into its own view, which refills, instead of standing against its
// share for the whole outage (before, a key admitted one share, then denied until Redis came
// back). Over 1.5 s of outage at 100/s with two nodes that is the share of the burst (50) plus
// about 50/s; the bounds are loose, and the upper one is the whole rate over the time measured.
TEST_F(SyncedStoreTest, KeepsDecidingThroughAnOutage) {
  auto node = makeNode(20 * kMicrosPerMilli, 50 * kMicrosPerMilli);
  const LimitSpec bucket = spec(Algorithm::kTokenBucket, "100/s", 100);
  const auto [admitted, elapsed_s] = throughAnOutage(*node, {"outage", &bucket, 1}, 150, 10);
  EXPECT_GT(admitted, 75u) << "one share (50), then nothing";
  EXPECT_LE(static_cast<double>(admitted), 100.0 + 100.0 * elapsed_s);
}

// The same where the limit refills less than a unit per node each interval: 10/s over four
// nodes, synced every 50 ms, is half a unit an interval. Each failed push counts the node's
// unit as four; what the view has no room for is owed and taken as it refills, so the node goes
// on at about a quarter of the rate. Dropped, it admitted the whole 10/s. The upper bound is
// the share of the burst and of what refills over the time measured, with room to spare.
TEST_F(SyncedStoreTest, KeepsToItsShareThroughAnOutageWhenTheRateIsSlow) {
  auto node = makeNode(50 * kMicrosPerMilli, 50 * kMicrosPerMilli, /*nodes=*/4);
  const LimitSpec bucket = spec(Algorithm::kTokenBucket, "10/s", 10);
  const auto [admitted, elapsed_s] = throughAnOutage(*node, {"slow-outage", &bucket, 1}, 200, 1);
  EXPECT_GE(admitted, 2u) << "the node goes on deciding";
  EXPECT_LE(static_cast<double>(admitted), 3.0 + 1.5 * (10.0 + 10.0 * elapsed_s) / 4.0)
      << "over " << elapsed_s << " s";
}

// While a timed-out sync is still queued on its connection (Redis frozen), no further sync is
// sent behind it with the same units: the rounds count as failed without asking, so nothing
// piles up in the connection's buffers. After the thaw Redis holds exactly what was admitted.
TEST_F(SyncedStoreTest, NoSyncQueuesBehindOneThatTimedOut) {
  auto node = makeNode(20 * kMicrosPerMilli, 50 * kMicrosPerMilli);
  ASSERT_TRUE(applyOne(*node, 1).allowed);
  ASSERT_TRUE(syncUntilOk(*node));
  std::uint64_t admitted = 1;
  std::uint64_t sent_during_freeze = 0;
  {
    Frozen frozen(redisPid(server_));
    const std::uint64_t sent_before = node->syncsSent();
    for (int round = 0; round < 30; ++round) {  // bounded: 30 rounds of 10 ms
      const LimitCheck check{"k", &per_hour_, 1};
      Outcome outcome;
      (void)node->apply(std::span(&check, 1), clock_, std::span(&outcome, 1));
      admitted += outcome.allowed ? 1 : 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    sent_during_freeze = node->syncsSent() - sent_before;
    frozen.thaw();
  }
  // One sync goes out and times out; every round after it waits for that one to be answered.
  EXPECT_LE(sent_during_freeze, 1u);
  ASSERT_TRUE(syncUntilOk(*node));
  node.reset();  // pushes what it holds
  EXPECT_EQ(usedInRedis(), admitted);
}

// A sync round with nothing to send does not mark a node healthy while its last sync failed:
// with Redis down, decisions stay degraded even once no key is due a pull; they are normal
// again after a sync that reaches Redis.
TEST_F(SyncedStoreTest, AnEmptySyncDoesNotHideAnOutage) {
  auto node = makeNode(10 * kMicrosPerMilli);
  ASSERT_TRUE(syncUntilOk(*node));
  server_.stop();
  (void)applyOne(*node, 0, StoreStatus::kOk);  // the key is in use: the next sync pulls it
  EXPECT_FALSE(node->syncNow());
  // Past five intervals the key is no longer due a pull: syncs then have nothing to send.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  (void)node->syncNow();
  const LimitCheck other{"unused", &per_hour_, 0};
  Outcome outcome;
  EXPECT_EQ(node->apply(std::span(&other, 1), clock_, std::span(&outcome, 1)),
            StoreStatus::kDegraded);
  server_.restart();
  // Until a sync reaches the restarted Redis (the node reconnects after its backoff), the key
  // is in use, so each sync pulls it; rounds with nothing to ask do not say Redis is back.
  const LimitCheck again{"k", &per_hour_, 0};
  bool back = false;
  for (int attempt = 0; attempt < 600 && !back; ++attempt) {  // polls for 3 s at most
    (void)node->apply(std::span(&again, 1), clock_, std::span(&outcome, 1));
    back = node->syncNow();
    if (!back) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(back);
  (void)applyOne(*node, 0, StoreStatus::kOk);
}

// Decisions are made in Redis's time from this node's wall clock, whatever clock the caller
// passes: an offset learned against one clock is wrong on another. Here the caller's clock is
// an hour ahead (as a clock anchored once, before a wall-clock step, can be); a 5/hour window
// admits 5 across syncs, not a fresh share at every pull.
TEST_F(SyncedStoreTest, DecidesOnRedisTimeWhateverTheCallersClock) {
  SyncedStoreOptions options = smallTable(100);
  SyncedStore node(options);
  ASSERT_TRUE(syncUntilOk(node));
  const LimitSpec five = spec(Algorithm::kFixedWindow, "5/hour");
  FakeClock ahead(clock_.now() + kMicrosPerHour);
  std::uint64_t admitted = 0;
  for (int i = 0; i < 20; ++i) {
    const LimitCheck check{"skewed", &five, 1};
    Outcome outcome;
    (void)node.apply(std::span(&check, 1), ahead, std::span(&outcome, 1));
    admitted += outcome.allowed ? 1 : 0;
    ASSERT_TRUE(node.syncNow(SyncedStore::Push::kEverything));
  }
  EXPECT_EQ(admitted, 5u);
}

// The sliding window log has no compact state to sync: its checks are unavailable, and a
// request containing one consumes nothing from its other limits.
TEST_F(SyncedStoreTest, SlidingWindowLogIsUnavailable) {
  auto node = makeNode(kManualSyncIntervalUs);
  const LimitSpec log = spec(Algorithm::kSlidingWindowLog, "10/hour");
  (void)applyOne(*node, 1, StoreStatus::kUnavailable, &log);
  const std::vector<LimitCheck> request = {{"k", &per_hour_, 1}, {"log", &log, 1}};
  std::vector<Outcome> outcomes(request.size());
  EXPECT_EQ(node->apply(request, clock_, outcomes), StoreStatus::kUnavailable);
  EXPECT_EQ(applyOne(*node, 0).remaining, kLimit);
}

}  // namespace
}  // namespace sluice
