// RedisClusterStore against a real three-master Redis Cluster: atomic decisions within a slot,
// consume-then-refund across slots, discovery from one seed, MOVED after a slot migration, ASK
// during one, a killed master, and one that was dead from the start. The script reads Redis TIME,
// and every limit is per day, so no limit refills during a test.
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "server/store_factory.h"
#include "sluice/decision.h"
#include "store/redis/cluster_slots.h"
#include "store/redis/cluster_store.h"
#include "store/redis/redis_keys.h"
#include "support/redis_cluster.h"
#include "support/specs.h"

namespace sluice::testing {
namespace {

using std::chrono::steady_clock;

constexpr char kPrefix[] = "test:";

class RedisClusterStoreTest : public ::testing::Test {
 protected:
  RedisClusterStoreTest() : cluster_(std::make_unique<RedisCluster>()) {}

  // A store seeded with `seeds` (default: every node), once it has fetched the slot table.
  std::unique_ptr<RedisClusterStore> makeStore(std::vector<std::string> seeds = {},
                                               Micros timeout_us = 2'000'000) {
    if (seeds.empty()) {
      for (std::size_t i = 0; i < cluster_->size(); ++i) seeds.push_back(cluster_->address(i));
    }
    auto store = std::make_unique<RedisClusterStore>(RedisClusterStoreOptions{
        .seeds = seeds, .connections = 2, .timeout_us = timeout_us, .key_prefix = kPrefix});
    // A watchdog, not a timing assertion: the table comes as soon as a seed connects.
    const auto deadline = steady_clock::now() + std::chrono::seconds(10);
    while (!store->ready() && steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_TRUE(store->ready());
    return store;
  }

  // The store as `sluice serve` makes it (FailoverStore around the cluster store), once it has
  // the slot table and a connection to each master: each of `checks` has been decided by Redis.
  // The node timeout is long, so live masters keep serving on a loaded machine, and so is the
  // breakers' cooldown: a breaker a dead master opens is still open at the end of a test.
  Result<server::StoreInstance> makeFactoryStore(const std::vector<LimitCheck>& checks) {
    policy::StoreSettings settings;
    settings.type = policy::StoreSettings::Type::kRedisCluster;
    settings.addresses.clear();
    for (std::size_t i = 0; i < cluster_->size(); ++i)
      settings.addresses.push_back(cluster_->address(i));
    settings.timeout_us = 300'000;
    settings.key_prefix = kPrefix;
    settings.breaker_cooldown_us = 600'000'000;
    Result<server::StoreInstance> made = server::makeStore(settings);
    if (!made.ok()) return made;
    // Polling until every check is decided by Redis, not timing it.
    for (const LimitCheck& check : checks) {
      const LimitCheck peek{check.key, check.spec, 0, check.group};
      bool answered = false;
      for (int attempt = 0; attempt < 100 && !answered; ++attempt) {
        Outcome outcome;
        answered = made.value().store->apply({&peek, 1}, clock_, {&outcome, 1}) == StoreStatus::kOk;
      }
      EXPECT_TRUE(answered) << check.group;
    }
    return made;
  }

  static int slotOf(const LimitCheck& check) {
    return redis::hashSlot(redis::redisKey(kPrefix, check));
  }

  // A group name, "<stem>-<n>", whose checks land on node `node`.
  std::string groupOnNode(const std::string& stem, std::size_t node) {
    for (int n = 0; n < 1000; ++n) {
      const std::string group = stem + "-" + std::to_string(n);
      if (cluster_->ownerOf(slotOf({"probe", &day_, 1, group})) == node) return group;
    }
    ADD_FAILURE() << "no group on node " << node;
    return stem;
  }

  // Decides one check and returns its outcome, expecting the store to answer.
  Outcome decide(Store& store, const LimitCheck& check) {
    Outcome outcome;
    EXPECT_EQ(store.apply({&check, 1}, clock_, {&outcome, 1}), StoreStatus::kOk) << check.key;
    return outcome;
  }

  std::unique_ptr<RedisCluster> cluster_;
  FakeClock clock_{kJan2026};  // unused by the store: Redis TIME decides
  LimitSpec day_ = spec(Algorithm::kFixedWindow, "1000000/day");
};

// With a password on every node (requirepass), the store AUTHs on each connection: the slot
// table comes, and each master decides its groups' checks.
TEST_F(RedisClusterStoreTest, DecidesOnEveryMasterWithAPassword) {
  std::vector<std::string> groups;  // found before the password: the helpers do not AUTH
  for (std::size_t node = 0; node < cluster_->size(); ++node) {
    groups.push_back(groupOnNode("auth", node));
  }
  std::vector<std::string> seeds;
  for (std::size_t node = 0; node < cluster_->size(); ++node) {
    ASSERT_EQ(cluster_->connect(node).command({"CONFIG", "SET", "requirepass", "s3cret"}).text,
              "OK");
    seeds.push_back(cluster_->address(node));
  }
  RedisClusterStore store(RedisClusterStoreOptions{.seeds = seeds,
                                                   .connections = 1,
                                                   .timeout_us = 2'000'000,
                                                   .key_prefix = kPrefix,
                                                   .auth = {.username = "", .password = "s3cret"}});
  // A watchdog, not a timing assertion: the table comes as soon as a seed lets the store in.
  const auto deadline = steady_clock::now() + std::chrono::seconds(10);
  while (!store.ready() && steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(store.ready());
  for (const std::string& group : groups) {
    EXPECT_EQ(decide(store, {"k", &day_, 1, group}).remaining, 999'999u) << group;
  }
}

// Checks of one group decide in one script call: under 8 threads, exactly the limit is
// admitted, and the other limit of the same request is consumed only by admitted requests.
TEST_F(RedisClusterStoreTest, OneSlotDecidesAtomicallyUnderContention) {
  auto store = makeStore();
  const LimitSpec small = spec(Algorithm::kTokenBucket, "300/day", 300);
  const LimitSpec large = spec(Algorithm::kTokenBucket, "5000/day", 5000);
  const LimitCheck checks[] = {{"small", &small, 1, "client-a"}, {"large", &large, 1, "client-a"}};
  ASSERT_EQ(slotOf(checks[0]), slotOf(checks[1]));
  std::atomic<int> admitted{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 60; ++i) {
        Outcome outcomes[2];
        if (store->apply(checks, clock_, outcomes) != StoreStatus::kOk) {
          ++failed;
        } else if (outcomes[0].allowed && outcomes[1].allowed) {
          ++admitted;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(admitted.load(), 300);
  EXPECT_EQ(decide(*store, {"large", &large, 0, "client-a"}).remaining, 5000u - 300u);
}

// Checks on two slots (on two masters): when one slot denies, the other's consumption is given
// back, and its outcome shows the state as it is.
TEST_F(RedisClusterStoreTest, ChecksOnTwoSlotsAreAllOrNothing) {
  auto store = makeStore();
  const LimitSpec five = spec(Algorithm::kFixedWindow, "5/day");
  const LimitSpec three = spec(Algorithm::kGcra, "3/day", 3);
  const std::string wide_group = groupOnNode("wide", 0);
  const std::string narrow_group = groupOnNode("narrow", 1);
  const LimitCheck checks[] = {{"wide", &five, 1, wide_group}, {"narrow", &three, 1, narrow_group}};
  for (int i = 0; i < 3; ++i) {
    Outcome outcomes[2];
    ASSERT_EQ(store->apply(checks, clock_, outcomes), StoreStatus::kOk);
    EXPECT_TRUE(outcomes[0].allowed && outcomes[1].allowed) << i;
  }
  Outcome outcomes[2];
  ASSERT_EQ(store->apply(checks, clock_, outcomes), StoreStatus::kOk);
  EXPECT_TRUE(outcomes[0].allowed);  // would have allowed; refunded
  EXPECT_EQ(outcomes[0].remaining, 2u);
  EXPECT_FALSE(outcomes[1].allowed);
  EXPECT_EQ(outcomes[1].reason, DenyReason::kOverLimit);
  // The refund left exactly two units of the five.
  EXPECT_EQ(decide(*store, {"wide", &five, 0, checks[0].group}).remaining, 2u);
  EXPECT_TRUE(decide(*store, {"wide", &five, 2, checks[0].group}).allowed);
  EXPECT_FALSE(decide(*store, {"wide", &five, 1, checks[0].group}).allowed);
}

// Under contention across slots nothing is over-admitted, and the refunds leave the wider
// limit holding exactly the admitted requests.
TEST_F(RedisClusterStoreTest, ConcurrentCrossSlotRequestsNeverOverAdmit) {
  auto store = makeStore();
  const LimitSpec wide = spec(Algorithm::kFixedWindow, "1000/day");
  const LimitSpec narrow = spec(Algorithm::kFixedWindow, "100/day");
  const std::string wide_group = groupOnNode("wide", 1);
  const std::string narrow_group = groupOnNode("narrow", 2);
  const LimitCheck checks[] = {{"wide", &wide, 1, wide_group},
                               {"narrow", &narrow, 1, narrow_group}};
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 30; ++i) {
        Outcome outcomes[2];
        EXPECT_EQ(store->apply(checks, clock_, outcomes), StoreStatus::kOk);
        if (outcomes[0].allowed && outcomes[1].allowed) ++admitted;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(admitted.load(), 100);
  EXPECT_EQ(decide(*store, {"wide", &wide, 0, checks[0].group}).remaining, 900u);
}

// A cross-slot request whose second slot times out is unavailable, and consumes nothing: the
// first slot's consumption is refunded though the request's time is spent, and the second
// slot's decide, which runs late when its master resumes, is refunded once its reply comes.
TEST_F(RedisClusterStoreTest, TimedOutCrossSlotRequestConsumesNothing) {
  constexpr Micros kTimeoutUs = 100'000;
  auto store = makeStore({}, kTimeoutUs);
  const LimitSpec five = spec(Algorithm::kFixedWindow, "5/day");
  const std::string quick_group = groupOnNode("quick", 0);
  const std::string paused_group = groupOnNode("paused", 1);
  const LimitCheck checks[] = {{"quick", &five, 1, quick_group},
                               {"paused", &five, 1, paused_group}};
  ASSERT_TRUE(decide(*store, checks[1]).allowed);  // a connection to node 1 is up
  RedisConnection admin = cluster_->connect(1);
  ASSERT_EQ(admin.command({"CLIENT", "PAUSE", "1000", "ALL"}).text, "OK");
  Outcome outcomes[2];
  EXPECT_EQ(store->apply(checks, clock_, outcomes), StoreStatus::kUnavailable);
  // The paused slot's call at least (the quick one's too, on a machine too loaded to answer it
  // within 100 ms; its late reply is then refunded, as the polling below shows).
  EXPECT_GE(store->callsOutOfTime(), 1u);
  // A request answered as failed is let go then, not when the paused node answers: its callback
  // holds the caller's request (in `sluice serve`, a client's session).
  {
    auto session = std::make_shared<std::promise<StoreStatus>>();
    std::future<StoreStatus> answered = session->get_future();
    Outcome async_outcomes[2];
    store->applyAsync(checks, clock_, async_outcomes,
                      [session](StoreStatus status) { session->set_value(status); });
    ASSERT_EQ(answered.wait_for(std::chrono::seconds(5)), std::future_status::ready);
    EXPECT_EQ(answered.get(), StoreStatus::kUnavailable);
    // The store's loop drops the callback right after it runs.
    for (int i = 0; i < 1000 && session.use_count() > 1; ++i) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    EXPECT_EQ(session.use_count(), 1) << "the failed request is held until its node answers";
  }
  // Polling until the refunds land (node 1 answers again after its pause), not timing them.
  // Peeks during the pause time out; they are retried.
  const auto remaining = [&](const LimitCheck& check) -> std::uint64_t {
    const LimitCheck peek{check.key, check.spec, 0, check.group};
    Outcome outcome;
    return store->apply({&peek, 1}, clock_, {&outcome, 1}) == StoreStatus::kOk ? outcome.remaining
                                                                               : 0;
  };
  const auto deadline = steady_clock::now() + std::chrono::seconds(5);
  std::uint64_t quick = 0;
  std::uint64_t paused = 0;
  while (steady_clock::now() < deadline) {
    quick = remaining(checks[0]);
    paused = remaining(checks[1]);
    if (quick == 5 && paused == 4) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(quick, 5u);
  EXPECT_EQ(paused, 4u);  // only the first, answered decide
}

// Seeded with one node, the store learns the other masters and decides keys on all three.
TEST_F(RedisClusterStoreTest, OneSeedDiscoversEveryMaster) {
  auto store = makeStore({cluster_->address(2)});
  const LimitSpec two = spec(Algorithm::kSlidingWindowCounter, "2/day");
  for (std::size_t node = 0; node < cluster_->size(); ++node) {
    const std::string group = groupOnNode("seeded", node);
    const LimitCheck check{"k", &two, 1, group};
    EXPECT_TRUE(decide(*store, check).allowed) << node;
    EXPECT_TRUE(decide(*store, check).allowed) << node;
    EXPECT_FALSE(decide(*store, check).allowed) << node;
  }
}

// A slot migrated to another master with its keys: the old master answers MOVED, the store
// follows it, and the key's state carries on where it was.
TEST_F(RedisClusterStoreTest, FollowsMovedAfterSlotMigration) {
  auto store = makeStore();
  const LimitSpec ten = spec(Algorithm::kTokenBucket, "10/day", 10);
  const std::string group = groupOnNode("moving", 0);
  const LimitCheck check{"moving", &ten, 1, group};
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(decide(*store, check).allowed);
  cluster_->migrateSlot(slotOf(check), 0, 1);
  ASSERT_EQ(cluster_->ownerOf(slotOf(check), 2), 1u);
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(decide(*store, check).allowed) << i;
  const Outcome denied = decide(*store, check);
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.remaining, 0u);
  EXPECT_EQ(cluster_->connect(1).command({"EXISTS", redis::redisKey(kPrefix, check)}).integer, 1);
}

// While a slot is migrating, a key the source does not hold is served by the importing node
// through ASK (with ASKING), on every call, and its count stays exact there.
TEST_F(RedisClusterStoreTest, FollowsAskDuringMigration) {
  auto store = makeStore();
  const LimitSpec three = spec(Algorithm::kFixedWindow, "3/day");
  const std::string group = groupOnNode("asked", 2);
  const LimitCheck check{"asked", &three, 1, group};
  const int slot = slotOf(check);
  cluster_->beginMigration(slot, 2, 0);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(decide(*store, check).allowed) << i;
  EXPECT_FALSE(decide(*store, check).allowed);
  RedisConnection source = cluster_->connect(2);
  EXPECT_EQ(source.command({"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot)}).integer, 0);
  RedisConnection target = cluster_->connect(0);
  target.append({"ASKING"});
  target.append({"EXISTS", redis::redisKey(kPrefix, check)});
  EXPECT_FALSE(target.read().isError());
  EXPECT_EQ(target.read().integer, 1);
}

// While a slot is half migrated, a call whose keys are partly moved gets TRYAGAIN (nothing
// ran): the store asks again until the migration ends and MOVED sends it on. It failed at once,
// so a healthy cluster's reshard sent such requests to on_error.
TEST_F(RedisClusterStoreTest, AsksAgainWhileASlotIsHalfMigrated) {
  auto store = makeStore();  // a 2 s deadline per call
  const LimitSpec hundred = spec(Algorithm::kFixedWindow, "100/day");
  const std::string group = groupOnNode("half", 0);
  const LimitCheck both[] = {{"a", &hundred, 1, group}, {"b", &hundred, 1, group}};
  const int slot = slotOf(both[0]);
  ASSERT_EQ(slotOf(both[1]), slot);
  for (const LimitCheck& check : both) ASSERT_TRUE(decide(*store, check).allowed);
  cluster_->beginMigration(slot, 0, 1);
  const RedisReply moved =
      cluster_->connect(0).command({"MIGRATE", "127.0.0.1", std::to_string(cluster_->port(1)),
                                    redis::redisKey(kPrefix, both[0]), "0", "5000"});
  ASSERT_FALSE(moved.isError()) << moved.text;
  // The migration ends a little later, while the call is asking again.
  std::thread finisher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    cluster_->migrateSlot(slot, 0, 1);
  });
  Outcome outcomes[2];
  const StoreStatus status = store->apply(both, clock_, outcomes);
  finisher.join();
  EXPECT_EQ(status, StoreStatus::kOk);
  EXPECT_TRUE(outcomes[0].allowed && outcomes[1].allowed);
  EXPECT_EQ(outcomes[0].remaining, 98u);
  EXPECT_EQ(outcomes[1].remaining, 98u);
}

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

// Redirections are read from Redis's error text; an omitted host is the asked node's.
TEST(ClusterRedirect, ReadsMovedAndAsk) {
  const auto moved = redis::readRedirect("MOVED 3999 127.0.0.1:6381", "10.0.0.1");
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(moved->kind, redis::Redirect::Kind::kMoved);
  EXPECT_EQ(moved->slot, 3999);
  EXPECT_EQ(moved->address, "127.0.0.1:6381");
  const auto ask = redis::readRedirect("ASK 16383 :7000", "10.0.0.1");
  ASSERT_TRUE(ask.has_value());
  EXPECT_EQ(ask->kind, redis::Redirect::Kind::kAsk);
  EXPECT_EQ(ask->address, "10.0.0.1:7000");
  EXPECT_FALSE(redis::readRedirect("MOVED 16384 127.0.0.1:1", "h"));
  EXPECT_FALSE(redis::readRedirect("MOVED 12 ?:0", "h"));
  EXPECT_FALSE(redis::readRedirect("TRYAGAIN Multiple keys request during rehashing", "h"));
  EXPECT_FALSE(redis::readRedirect("CLUSTERDOWN The cluster is down", "h"));
}

}  // namespace
}  // namespace sluice::testing
