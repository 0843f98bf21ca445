// RedisClusterStore when masters fail, against a real three-master Redis Cluster: a killed
// master's slots are unavailable while the others decide, a denial stands whatever another
// slot's failure, only the failed slots' limits follow on_error, destruction answers what a
// frozen master holds, and a master (or a whole cluster) never reached fails at once instead of
// spending each call's timeout.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "server/store_factory.h"
#include "store/redis/cluster_store.h"
#include "store/redis_cluster_fixture.h"
#include "support/frozen_redis.h"

namespace sluice::testing {
namespace {

using std::chrono::steady_clock;

// A killed master: its slots' calls are unavailable (each ends by its deadline: a call that
// hung would hold the test until ctest's timeout), and the other masters' slots keep deciding.
TEST_F(RedisClusterStoreTest, KilledMastersSlotsAreUnavailableOthersDecide) {
  constexpr Micros kTimeoutUs = 300'000;
  auto store = makeStore({}, kTimeoutUs);
  const std::string lost_group = groupOnNode("lost", 1);
  const std::string kept_group = groupOnNode("kept", 0);
  const LimitCheck lost{"lost", &day_, 1, lost_group};
  const LimitCheck kept{"kept", &day_, 1, kept_group};
  ASSERT_TRUE(decide(*store, lost).allowed);
  cluster_->kill(1);
  for (int i = 0; i < 3; ++i) {
    Outcome outcome;
    EXPECT_EQ(store->apply({&lost, 1}, clock_, {&outcome, 1}), StoreStatus::kUnavailable);
  }
  EXPECT_TRUE(decide(*store, kept).allowed);
  // Without the limits' failure policy, a request touching both slots is unavailable as a whole.
  const LimitCheck both[] = {kept, lost};
  Outcome outcomes[2];
  EXPECT_EQ(store->apply(both, clock_, outcomes), StoreStatus::kUnavailable);
}

// A slot that denies settles a request even when another slot's master is dead: the request is
// denied, not handed to on_error (which may admit it) as unavailable.
TEST_F(RedisClusterStoreTest, ADenialStandsWhenAnotherSlotFails) {
  constexpr Micros kTimeoutUs = 300'000;
  auto store = makeStore({}, kTimeoutUs);
  const std::string spent_group = groupOnNode("spent", 0);
  const std::string lost_group = groupOnNode("lost", 1);
  const LimitCheck spend_all{"spent", &day_, day_.limit(), spent_group};
  const LimitCheck spent{"spent", &day_, 1, spent_group};
  const LimitCheck lost{"lost", &day_, 1, lost_group};
  ASSERT_TRUE(decide(*store, spend_all).allowed);
  ASSERT_FALSE(decide(*store, spent).allowed);
  cluster_->kill(1);
  const LimitCheck both[] = {spent, lost};
  Outcome outcomes[2];
  EXPECT_EQ(store->apply(both, clock_, outcomes), StoreStatus::kOk);
  EXPECT_FALSE(outcomes[0].allowed);
  EXPECT_EQ(outcomes[0].reason, DenyReason::kOverLimit);
  EXPECT_FALSE(outcomes[1].allowed);
  EXPECT_EQ(outcomes[1].reason, DenyReason::kStoreUnavailable);
}

// One master dead, as the factory builds the store (FailoverStore around the cluster store):
// the requests for its slots fail and go to on_error, but the requests for the live masters'
// slots are still decided by Redis. (One breaker over every call opened on the dead master's
// failures and sent the live masters' requests to on_error for its whole cooldown.) The node
// timeout is long, so the live masters keep serving.
TEST_F(RedisClusterStoreTest, ADeadMasterLeavesTheLiveMastersDecidedByRedis) {
  const std::string live_groups[] = {groupOnNode("live", 0), groupOnNode("live", 2)};
  const std::string lost_group = groupOnNode("lost", 1);
  const LimitCheck live[] = {{"live", &day_, 1, live_groups[0]},
                             {"live", &day_, 1, live_groups[1]}};
  const LimitCheck lost{"lost", &day_, 1, lost_group};
  Result<server::StoreInstance> made = makeFactoryStore({live[0], live[1], lost});
  ASSERT_TRUE(made.ok()) << made.error();
  Store& store = *made.value().store;
  cluster_->kill(1);
  for (int i = 0; i < 20; ++i) {
    Outcome outcome;
    EXPECT_EQ(store.apply({&lost, 1}, clock_, {&outcome, 1}), StoreStatus::kDegraded) << i;
    EXPECT_TRUE(outcome.allowed) << i;  // on_error: allow, the default
  }
  for (int i = 0; i < 20; ++i) {
    for (const LimitCheck& check : live) {
      Outcome outcome;
      EXPECT_EQ(store.apply({&check, 1}, clock_, {&outcome, 1}), StoreStatus::kOk)
          << check.group << " " << i;
    }
  }
}

// A request over a dead master's slot and a live one's, as the factory builds the store: Redis
// still decides the live slot's limit, and only the dead slot's limit follows its on_error.
// (The whole request used to go to on_error: a live limit with on_error: deny refused every
// such request as unavailable, and one with allow was not enforced at all.)
TEST_F(RedisClusterStoreTest, OnlyTheFailedSlotsLimitsFollowOnError) {
  const std::string live_group = groupOnNode("live", 0);
  const std::string lost_group = groupOnNode("lost", 1);
  const LimitSpec two = spec(Algorithm::kFixedWindow, "2/day");
  const LimitCheck live{"live", &day_, 1, live_group, OnStoreError::kDeny};
  const LimitCheck lost_allows{"lost", &day_, 1, lost_group, OnStoreError::kAllow};
  const LimitCheck lost_denies{"lost", &day_, 1, lost_group, OnStoreError::kDeny};
  const LimitCheck lost_local{"lost-local", &two, 1, lost_group, OnStoreError::kLocal};
  Result<server::StoreInstance> made = makeFactoryStore({live, lost_allows});
  ASSERT_TRUE(made.ok()) << made.error();
  Store& store = *made.value().store;
  const auto live_remaining = [&] {
    const LimitCheck peek{live.key, live.spec, 0, live.group};
    Outcome outcome;
    EXPECT_EQ(store.apply({&peek, 1}, clock_, {&outcome, 1}), StoreStatus::kOk);
    return outcome.remaining;
  };
  const std::uint64_t full = live_remaining();
  cluster_->kill(1);

  // The dead slot's limit allows on error: admitted, and the live limit counted in Redis.
  for (int i = 0; i < 3; ++i) {
    const LimitCheck both[] = {live, lost_allows};
    Outcome outcomes[2];
    EXPECT_EQ(store.apply(both, clock_, outcomes), StoreStatus::kDegraded) << i;
    EXPECT_TRUE(outcomes[0].allowed) << i;
    EXPECT_EQ(outcomes[0].remaining, full - 1 - static_cast<std::uint64_t>(i)) << i;
    EXPECT_TRUE(outcomes[1].allowed) << i;
  }
  EXPECT_EQ(live_remaining(), full - 3);

  // It denies on error: refused as unavailable, and the live limit's unit given back (the
  // answer does not wait for the refund, as a slot failed: polled, not timed).
  const auto live_comes_back_to = [&](std::uint64_t expected) {
    std::uint64_t seen = 0;
    for (int attempt = 0; attempt < 200 && seen != expected; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      seen = live_remaining();
    }
    return seen;
  };
  {
    const LimitCheck both[] = {lost_denies, live};
    Outcome outcomes[2];
    EXPECT_EQ(store.apply(both, clock_, outcomes), StoreStatus::kDegraded);
    EXPECT_FALSE(outcomes[0].allowed);
    EXPECT_EQ(outcomes[0].reason, DenyReason::kStoreUnavailable);
    EXPECT_EQ(outcomes[0].retry_after_us, kMicrosPerSecond);  // the default for unavailability
    EXPECT_TRUE(outcomes[1].allowed);  // its own limit admitted; the request is still refused
    EXPECT_EQ(outcomes[1].remaining, full - 3);
    EXPECT_EQ(live_comes_back_to(full - 3), full - 3);
  }

  // It enforces its share here, in the one count the whole-request fallback uses too: one unit
  // taken by a request on the dead slot alone, one with the live limit, and then refused, the
  // live limit's unit given back.
  {
    Outcome alone;
    EXPECT_EQ(store.apply({&lost_local, 1}, clock_, {&alone, 1}), StoreStatus::kDegraded);
    EXPECT_TRUE(alone.allowed);
  }
  for (int i = 0; i < 2; ++i) {
    const LimitCheck both[] = {live, lost_local};
    Outcome outcomes[2];
    EXPECT_EQ(store.apply(both, clock_, outcomes), StoreStatus::kDegraded) << i;
    EXPECT_EQ(outcomes[1].allowed, i == 0) << i;
    EXPECT_EQ(outcomes[0].remaining, full - 4) << i;
  }
  EXPECT_EQ(live_comes_back_to(full - 4), full - 4);
}

// A master that was dead before the store started (it never connected to it): the requests for
// its slots fail at once, once its first connects have been refused, instead of each waiting
// for a connection until its deadline; the other masters' slots keep deciding.
TEST_F(RedisClusterStoreTest, AMasterNeverConnectedToFailsFast) {
  constexpr Micros kTimeoutUs = 5'000'000;
  const std::string lost_group = groupOnNode("lost", 1);
  const std::string kept_group = groupOnNode("kept", 0);
  const LimitCheck lost{"lost", &day_, 1, lost_group};
  const LimitCheck kept{"kept", &day_, 1, kept_group};
  cluster_->kill(1);
  auto store = makeStore({}, kTimeoutUs);
  for (int i = 0; i < 3; ++i) {
    Outcome outcome;
    EXPECT_EQ(store->apply({&lost, 1}, clock_, {&outcome, 1}), StoreStatus::kUnavailable) << i;
  }
  // Failed, not timed out: waiting for a connection would have spent each call's deadline.
  EXPECT_EQ(store->callsOutOfTime(), 0u);
  EXPECT_TRUE(decide(*store, kept).allowed);
}

// Destroying the store while a frozen master holds calls fails each of them once, and a
// callback that asks again (as a shadow pass does) is answered too, once, unavailable: a request
// posted to the store's loop as it stops would never have been.
TEST_F(RedisClusterStoreTest, DestroyingTheStoreAnswersCallsInFlightAndFollowUps) {
  constexpr int kRequests = 10;
  auto store = makeStore();
  RedisClusterStore& cluster_store = *store;  // as the callbacks reach it while it is destroyed
  const std::string group = groupOnNode("held", 1);
  struct Answers {
    std::string key;
    LimitCheck check;
    LimitCheck follow_up;
    Outcome outcome;
    Outcome follow_up_outcome;
    std::atomic<int> answers{0};
    std::atomic<int> unavailable{0};
    std::atomic<int> follow_up_answers{0};
    std::atomic<int> follow_up_unavailable{0};
  };
  std::vector<std::unique_ptr<Answers>> requests;
  for (int i = 0; i < kRequests; ++i) {
    auto request = std::make_unique<Answers>();
    request->key = "held:" + std::to_string(i);
    request->check = LimitCheck{request->key, &day_, 1, group};
    request->follow_up = request->check;
    requests.push_back(std::move(request));
  }
  ASSERT_TRUE(decide(*store, requests[0]->check).allowed);  // node 1's connection is up
  {
    Frozen frozen(cluster_->pid(1));
    for (const auto& request : requests) {
      Answers& r = *request;
      cluster_store.applyAsync({&r.check, 1}, clock_, {&r.outcome, 1}, [&](StoreStatus status) {
        ++r.answers;
        if (status == StoreStatus::kUnavailable) ++r.unavailable;
        cluster_store.applyAsync({&r.follow_up, 1}, clock_, {&r.follow_up_outcome, 1},
                                 [&r](StoreStatus again) {
                                   ++r.follow_up_answers;
                                   if (again == StoreStatus::kUnavailable)
                                     ++r.follow_up_unavailable;
                                 });
      });
    }
    store.reset();
  }
  for (int i = 0; i < kRequests; ++i) {
    const Answers& r = *requests[i];
    EXPECT_EQ(r.answers.load(), 1) << i;
    EXPECT_EQ(r.unavailable.load(), 1) << i;
    EXPECT_EQ(r.follow_up_answers.load(), 1) << i;
    EXPECT_EQ(r.follow_up_unavailable.load(), 1) << i;
  }
}

// A cluster none of whose seeds can be reached (no slot table, ever): once the seeds' first
// connects have been refused, each request fails at once instead of waiting its whole timeout
// for a table; before, with no breaker in front of the cluster store, each took the timeout.
TEST(RedisClusterStoreUnreachable, FailsFastWithoutATable) {
  constexpr Micros kTimeoutUs = 5'000'000;
  // Ports nothing listens on: bound, then closed, by the kernel's choice.
  std::vector<std::string> seeds;
  for (int i = 0; i < 2; ++i) {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor probe(
        io, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    seeds.push_back("127.0.0.1:" + std::to_string(probe.local_endpoint().port()));
  }
  RedisClusterStore store(
      RedisClusterStoreOptions{.seeds = seeds, .connections = 1, .timeout_us = kTimeoutUs});
  const LimitSpec day = spec(Algorithm::kFixedWindow, "100/day");
  const LimitCheck check{"k", &day, 1};
  SystemClock clock;
  for (int i = 0; i < 3; ++i) {
    Outcome outcome;
    EXPECT_EQ(store.apply({&check, 1}, clock, {&outcome, 1}), StoreStatus::kUnavailable) << i;
  }
  // Failed, not timed out: waiting for a table would have spent each call's deadline.
  EXPECT_EQ(store.callsOutOfTime(), 0u);
  EXPECT_FALSE(store.ready());
}

}  // namespace
}  // namespace sluice::testing
