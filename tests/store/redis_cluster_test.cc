// RedisClusterStore against a real three-master Redis Cluster: atomic decisions within a slot,
// consume-then-refund across slots, discovery from one seed, MOVED after a slot migration, ASK
// during one (masters that fail: redis_cluster_failure_test.cc). The script reads Redis TIME,
// and every limit is per day, so no limit refills during a test.
#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "sluice/decision.h"
#include "store/redis/cluster_slots.h"
#include "store/redis/cluster_store.h"
#include "store/redis/redis_keys.h"
#include "store/redis_cluster_fixture.h"

namespace sluice::testing {
namespace {

using std::chrono::steady_clock;

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
                                                   .key_prefix = kClusterKeyPrefix,
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
  EXPECT_EQ(
      cluster_->connect(1).command({"EXISTS", redis::redisKey(kClusterKeyPrefix, check)}).integer,
      1);
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
  target.append({"EXISTS", redis::redisKey(kClusterKeyPrefix, check)});
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
                                    redis::redisKey(kClusterKeyPrefix, both[0]), "0", "5000"});
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
