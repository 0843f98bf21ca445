// The SyncedStore tests' fixture (synced_store_test.cc, synced_table_test.cc): nodes on one
// real redis-server, syncing by hand or on a short interval, and what Redis holds for a key.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "sluice/time.h"
#include "store/redis/synced_store.h"
#include "support/redis_server.h"
#include "support/specs.h"

namespace sluice::testing {

using SteadyClock = std::chrono::steady_clock;

constexpr std::uint64_t kLimit = 1000;
constexpr std::size_t kNodes = 2;
// The synced_store.h bound for a burst: (nodes − 1) / nodes of the limit.
constexpr std::uint64_t kBurstOvershoot = (kNodes - 1) * kLimit / kNodes;
// Long enough that the background sync never runs during a test: the test syncs by hand.
constexpr Micros kManualSyncIntervalUs = 10 * kMicrosPerSecond;

class SyncedStoreTest : public ::testing::Test {
 protected:
  // The counts below are of a 1000/hour fixed window, which rolls over at the top of the hour.
  // Every test here ends well within 30 s (the longest waits 5 s on a watchdog), so one that
  // would start in the hour's last 30 s waits for the new hour first, and then always runs.
  SyncedStoreTest() {
    const Micros left_us = kMicrosPerHour - clock_.now() % kMicrosPerHour;
    if (left_us < 30 * kMicrosPerSecond)
      std::this_thread::sleep_for(std::chrono::microseconds(left_us + kMicrosPerSecond));
  }

  std::unique_ptr<SyncedStore> makeNode(Micros sync_interval_us,
                                        Micros timeout_us = 5 * kMicrosPerSecond,
                                        std::size_t nodes = kNodes) {
    SyncedStoreOptions options;
    options.port = static_cast<std::uint16_t>(server_.port());
    options.sluice_nodes = nodes;
    options.sync_interval_us = sync_interval_us;
    options.timeout_us = timeout_us;
    return std::make_unique<SyncedStore>(options);
  }

  // A node syncing by hand whose table holds `max_keys` keys.
  SyncedStoreOptions smallTable(std::size_t max_keys) const {
    SyncedStoreOptions options;
    options.port = static_cast<std::uint16_t>(server_.port());
    options.sync_interval_us = kManualSyncIntervalUs;
    options.max_keys = max_keys;
    return options;
  }

  // Decides `check` once and syncs it, stops Redis, then decides it `per_round` times in each of
  // `rounds` rounds 10 ms apart (bounded): how many were admitted, over how many seconds.
  struct OutageCount {
    std::uint64_t admitted = 0;
    double elapsed_s = 0;
  };
  OutageCount throughAnOutage(SyncedStore& node, const LimitCheck& check, int rounds,
                              int per_round) {
    Outcome outcome;
    (void)node.apply(std::span(&check, 1), clock_, std::span(&outcome, 1));
    EXPECT_TRUE(syncUntilOk(node));
    server_.stop();
    OutageCount count;
    const auto started = std::chrono::steady_clock::now();
    for (int round = 0; round < rounds; ++round) {
      for (int i = 0; i < per_round; ++i) {
        (void)node.apply(std::span(&check, 1), clock_, std::span(&outcome, 1));
        count.admitted += outcome.allowed ? 1 : 0;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    count.elapsed_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return count;
  }

  // Syncs until a sync succeeds; false after 3 s. The first may fail while the node connects.
  static bool syncUntilOk(SyncedStore& node) {
    const auto deadline = SteadyClock::now() + std::chrono::seconds(3);
    while (SteadyClock::now() < deadline) {
      if (node.syncNow()) return true;
      // Polling a reconnecting client, not timing it.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  Outcome applyOne(SyncedStore& node, std::uint64_t cost, StoreStatus expected = StoreStatus::kOk,
                   const LimitSpec* limit = nullptr) {
    const LimitCheck check{"k", limit != nullptr ? limit : &per_hour_, cost};
    Outcome outcome;
    EXPECT_EQ(node.apply(std::span(&check, 1), clock_, std::span(&outcome, 1)), expected);
    return outcome;
  }

  // Unit requests until `node` denies; how many it admitted. Bounded by the limit.
  std::uint64_t spend(SyncedStore& node) {
    std::uint64_t admitted = 0;
    for (std::uint64_t i = 0; i <= kLimit; ++i) {
      if (!applyOne(node, 1).allowed) break;
      ++admitted;
    }
    return admitted;
  }

  // A node syncing by hand that admitted `units` on key "k" and pushed them: a key's first sync
  // is always due, as it learns the global state.
  std::unique_ptr<SyncedStore> nodeThatPushed(std::uint64_t units) {
    auto node = makeNode(kManualSyncIntervalUs);
    EXPECT_TRUE(syncUntilOk(*node));
    EXPECT_TRUE(applyOne(*node, units).allowed);
    EXPECT_TRUE(node->syncNow(SyncedStore::Push::kDue));
    return node;
  }

  // What Redis holds for key "k": the units a new node sees used once it has pulled the key.
  std::uint64_t usedInRedis() {
    auto reader = makeNode(kManualSyncIntervalUs);
    (void)applyOne(*reader, 0);  // the key is in use, so the next sync pulls it
    EXPECT_TRUE(syncUntilOk(*reader));
    return kLimit - applyOne(*reader, 0).remaining;  // a peek reports the global view
  }

  RedisServer server_;
  SystemClock clock_;  // the store adds Redis's offset itself; a fake instant would not match
  const LimitSpec per_hour_ = spec(Algorithm::kFixedWindow, "1000/hour");
};

}  // namespace sluice::testing
