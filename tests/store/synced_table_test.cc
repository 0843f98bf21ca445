// SyncedStore's table: what a synced node forgets. Idle keys go once they are back to full; a
// table at max_keys forgets keys back to full first, then the least recently used pushed keys,
// and never units not yet in Redis. On one real redis-server.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "store/synced_store_fixture.h"
#include "support/redis_server.h"
#include "support/specs.h"

namespace sluice {
namespace {

using testing::kLimit;
using testing::kManualSyncIntervalUs;
using testing::spec;
using testing::SteadyClock;
using testing::SyncedStoreTest;

// A key unused for idle_after is forgotten at a sync once its deltas are pushed and it is back
// to full. One in use is kept, and so is one with usage left in its limit: forgetting that would
// let its client start over from a full limit here when it returns.
TEST_F(SyncedStoreTest, IdleKeysAreForgottenOnceFull) {
  SyncedStoreOptions options;
  options.port = static_cast<std::uint16_t>(server_.port());
  options.sync_interval_us = kManualSyncIntervalUs;
  options.idle_after_us = 1;  // anything not used since the last sync
  SyncedStore node(options);
  ASSERT_TRUE(syncUntilOk(node));
  const LimitSpec refills_fast =
      spec(Algorithm::kTokenBucket, "1000/s", 1000);  // a unit a millisecond
  const LimitCheck first{"first", &refills_fast, 1};
  const LimitCheck second{"second", &refills_fast, 1};
  const LimitCheck quota{"quota", &per_hour_, 1};
  Outcome outcome;
  for (const LimitCheck* check : {&first, &second, &quota})
    ASSERT_EQ(node.apply(std::span(check, 1), clock_, std::span(&outcome, 1)), StoreStatus::kOk);
  EXPECT_EQ(node.keyCount(), 3u);
  ASSERT_TRUE(node.syncNow());  // pushes the deltas: no key may go before that
  EXPECT_EQ(node.keyCount(), 3u);
  ASSERT_EQ(node.apply(std::span(&second, 1), clock_, std::span(&outcome, 1)), StoreStatus::kOk);
  const auto refill = [] { std::this_thread::sleep_for(std::chrono::milliseconds(10)); };
  refill();
  ASSERT_TRUE(node.syncNow());  // "first" is pushed, full again and unused since
  EXPECT_EQ(node.keyCount(), 2u);
  refill();
  ASSERT_TRUE(node.syncNow());  // now "second" too
  EXPECT_EQ(node.keyCount(), 1u);
  ASSERT_TRUE(node.syncNow());  // "quota" stays: an hour's window with a unit used
  EXPECT_EQ(node.keyCount(), 1u);
  const LimitCheck peek{"quota", &per_hour_, 0};
  ASSERT_EQ(node.apply(std::span(&peek, 1), clock_, std::span(&outcome, 1)), StoreStatus::kOk);
  EXPECT_EQ(outcome.remaining, kLimit - 1);
}

// lost), so a table full of those denies new keys until a sync has pushed them.
TEST_F(SyncedStoreTest, AFullTableForgetsPushedKeysAndLosesNoUnits) {
  constexpr std::size_t kMaxKeys = 64;
  SyncedStore node(smallTable(kMaxKeys));
  ASSERT_TRUE(syncUntilOk(node));
  const auto use = [&](SyncedStore& on, const std::string& key, std::uint64_t cost) {
    const LimitCheck check{key, &per_hour_, cost};
    Outcome outcome;
    const StoreStatus status = on.apply(std::span(&check, 1), clock_, std::span(&outcome, 1));
    return status == StoreStatus::kOk && outcome.allowed ? outcome.remaining : kLimit + 1;
  };
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < kMaxKeys; ++i) {
    keys.push_back("first-" + std::to_string(i));
    ASSERT_EQ(use(node, keys.back(), 1), kLimit - 1);
  }
  ASSERT_EQ(node.keyCount(), kMaxKeys);
  EXPECT_EQ(use(node, "while-unpushed", 1), kLimit + 1);  // every key has a unit pending
  EXPECT_EQ(node.evictions(), 0u);
  ASSERT_TRUE(node.syncNow());  // now Redis holds every unit
  keys.push_back("fresh");
  EXPECT_EQ(use(node, keys.back(), 1), kLimit - 1);
  EXPECT_GE(node.evictions(), 1u);
  EXPECT_EQ(node.keyCount(), kMaxKeys + 1 - node.evictions());

  // Three more tables' worth of new keys, each admitted once there is room, then pushed.
  for (std::size_t i = 0; i < 3 * kMaxKeys; ++i) {
    keys.push_back("churn-" + std::to_string(i));
    if (use(node, keys.back(), 1) == kLimit - 1) continue;
    ASSERT_TRUE(node.syncNow());
    ASSERT_EQ(use(node, keys.back(), 1), kLimit - 1) << keys.back();
  }
  ASSERT_TRUE(node.syncNow());
  EXPECT_LE(node.keyCount(), kMaxKeys);
  EXPECT_GE(node.evictions(), 3 * kMaxKeys);

  // Every key's unit is in Redis, the forgotten keys' too: a node with room reads 1 used each.
  auto reader = makeNode(kManualSyncIntervalUs);
  for (const std::string& key : keys) (void)use(*reader, key, 0);  // in use: the sync pulls them
  ASSERT_TRUE(syncUntilOk(*reader));
  for (const std::string& key : keys) EXPECT_EQ(use(*reader, key, 0), kLimit - 1) << key;
}

// A table full of units not pushed yet does not wait for the next interval (ten seconds here)
// to make room: the denied request asks for a sync at once.
TEST_F(SyncedStoreTest, ATableFullOfUnpushedUnitsSyncsAtOnce) {
  constexpr std::size_t kMaxKeys = 16;
  SyncedStore node(smallTable(kMaxKeys));
  ASSERT_TRUE(syncUntilOk(node));
  std::vector<std::string> keys;
  const auto use = [&](const std::string& key) {
    const LimitCheck check{key, &per_hour_, 1};
    Outcome outcome;
    return node.apply(std::span(&check, 1), clock_, std::span(&outcome, 1));
  };
  for (std::size_t i = 0; i < kMaxKeys; ++i)
    ASSERT_EQ(use("k" + std::to_string(i)), StoreStatus::kOk);
  ASSERT_EQ(use("one-too-many"), StoreStatus::kUnavailable);
  const auto give_up = SteadyClock::now() + std::chrono::seconds(3);  // well before the interval
  StoreStatus status = StoreStatus::kUnavailable;
  while (status == StoreStatus::kUnavailable && SteadyClock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // polling, not timing
    status = use("one-too-many");
  }
  EXPECT_EQ(status, StoreStatus::kOk);
  EXPECT_GE(node.evictions(), 1u);
}

// While Redis is unreachable nothing can be pushed, so a full table's denials ask for no early
// syncs: each would fail at once, and they would run back to back.
TEST_F(SyncedStoreTest, AFullTableAsksNoEarlySyncWhileSyncsFail) {
  SyncedStoreOptions options = smallTable(4);
  options.timeout_us = 50'000;
  SyncedStore node(options);
  ASSERT_TRUE(syncUntilOk(node));
  server_.stop();
  const auto use = [&](const std::string& key) {
    const LimitCheck check{key, &per_hour_, 1};
    Outcome outcome;
    return node.apply(std::span(&check, 1), clock_, std::span(&outcome, 1));
  };
  for (int i = 0; i < 4; ++i) ASSERT_NE(use("k" + std::to_string(i)), StoreStatus::kUnavailable);
  EXPECT_FALSE(node.syncNow());  // Redis is gone: the units stay pending
  const std::uint64_t sent = node.syncsSent();
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(use("new" + std::to_string(i)), StoreStatus::kUnavailable);
  EXPECT_FALSE(node.syncNow());  // after any sync the denials asked for, on the same loop
  EXPECT_EQ(node.syncsSent(), sent + 1);
}

// A full table first forgets keys that are back to full, which costs nothing, and only then
// keys with usage left. With a thousand such keys, every shard has some.
TEST_F(SyncedStoreTest, AFullTableForgetsFullKeysFirst) {
  constexpr std::size_t kFullKeys = 1000;
  constexpr std::size_t kQuotaKeys = 24;
  SyncedStore node(smallTable(kFullKeys + kQuotaKeys));
  ASSERT_TRUE(syncUntilOk(node));
  const LimitSpec refills_fast = spec(Algorithm::kTokenBucket, "1000/s", 1000);
  const auto use = [&](const std::string& key, const LimitSpec& limit, std::uint64_t cost) {
    const LimitCheck check{key, &limit, cost};
    Outcome outcome;
    EXPECT_EQ(node.apply(std::span(&check, 1), clock_, std::span(&outcome, 1)), StoreStatus::kOk);
    return outcome.remaining;
  };
  for (std::size_t i = 0; i < kQuotaKeys; ++i)
    (void)use("quota-" + std::to_string(i), per_hour_, 1);
  for (std::size_t i = 0; i < kFullKeys; ++i)
    (void)use("fast-" + std::to_string(i), refills_fast, 1);
  ASSERT_TRUE(node.syncNow());
  std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the fast keys refill
  (void)use("new", per_hour_, 1);
  ASSERT_GE(node.evictions(), 1u);
  const std::size_t count = node.keyCount();
  for (std::size_t i = 0; i < kQuotaKeys; ++i)
    EXPECT_EQ(use("quota-" + std::to_string(i), per_hour_, 0), kLimit - 1) << i;
  EXPECT_EQ(node.keyCount(), count) << "a quota key was forgotten";
}

// A few long-idle keys (quotas with usage left) do not make a full table forget every recent
// key of a shard: it forgets about an eighth of the shard, oldest first, not the whole span's
// last bucket.
TEST_F(SyncedStoreTest, AFewIdleKeysDoNotMakeEvictionForgetEverything) {
  constexpr std::size_t kOldKeys = 64;
  constexpr std::size_t kRecentKeys = 1536;
  SyncedStore node(smallTable(kOldKeys + kRecentKeys));
  ASSERT_TRUE(syncUntilOk(node));
  const auto use = [&](const std::string& key) {
    const LimitCheck check{key, &per_hour_, 1};
    Outcome outcome;
    EXPECT_EQ(node.apply(std::span(&check, 1), clock_, std::span(&outcome, 1)), StoreStatus::kOk);
  };
  for (std::size_t i = 0; i < kOldKeys; ++i) use("old-" + std::to_string(i));
  ASSERT_TRUE(node.syncNow());
  // The old keys' last use must lie well before the recent ones'; waiting is how.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (std::size_t i = 0; i < kRecentKeys; ++i) use("recent-" + std::to_string(i));
  ASSERT_TRUE(node.syncNow());  // every key pushed, so every key may be forgotten
  use("new");
  // A shard holds about 100 of the 1,600 keys: an eighth is about 13, and the narrowing takes
  // at most twice what it wants; before it, the whole shard went.
  EXPECT_GE(node.evictions(), 1u);
  EXPECT_LE(node.evictions(), 40u);
}

// Four threads on a table far too small for their keys, with syncs running every 10 ms, until
// the table has turned over several times: what the node admitted is exactly what Redis holds
// once it has pushed, eviction or not. (Per key it can be more than the limit: a key forgotten
// with usage left decides against a full limit until its next pull.)
TEST_F(SyncedStoreTest, EvictionUnderConcurrentLoadLosesNoUnits) {
  constexpr std::size_t kKeys = 500;
  constexpr std::size_t kThreads = 4;
  constexpr std::size_t kMaxRequestsPerThread = 1'000'000;
  constexpr std::size_t kMaxKeys = 32;
  SyncedStoreOptions options = smallTable(kMaxKeys);
  options.sync_interval_us = 10'000;
  auto node = std::make_unique<SyncedStore>(options);
  ASSERT_TRUE(syncUntilOk(*node));
  const auto give_up = SteadyClock::now() + std::chrono::seconds(5);  // a bound, not a measure
  std::atomic<std::uint64_t> admitted{0};
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (std::size_t i = 0; i < kMaxRequestsPerThread; ++i) {
        if (i % 64 == 0 && (node->evictions() >= 8 * kMaxKeys || SteadyClock::now() > give_up))
          return;
        const std::string key = "k" + std::to_string((i * 7 + t * 131) % kKeys);
        const LimitCheck check{key, &per_hour_, 1};
        Outcome outcome;
        // Degraded (no sync has completed lately, as on a loaded machine) still decides: an
        // admission counts in Redis once pushed, whatever the status said.
        const StoreStatus status =
            node->apply(std::span(&check, 1), clock_, std::span(&outcome, 1));
        if ((status == StoreStatus::kOk || status == StoreStatus::kDegraded) && outcome.allowed)
          admitted.fetch_add(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_GE(node->evictions(), 8 * kMaxKeys);
  EXPECT_GT(admitted.load(), 0u);
  node.reset();  // a node going away pushes what it holds

  // A fixed window's state in Redis is two little-endian doubles: the window's start and its
  // count (main.lua). Summed over every key, that is what Redis counted.
  const auto summed = server_.connect().command(
      {"EVAL",
       "local sum = 0 for _, key in ipairs(redis.call('KEYS', '*')) do "
       "local start, count = struct.unpack('<dd', redis.call('GET', key)) sum = sum + count end "
       "return sum",
       "0"});
  EXPECT_EQ(summed.integer, static_cast<long long>(admitted.load()));
}

}  // namespace
}  // namespace sluice
