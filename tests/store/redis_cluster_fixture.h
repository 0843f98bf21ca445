// The fixture of the Redis Cluster store tests: a real three-master cluster started for each test
// (support/redis_cluster.h), stores made on it directly or as `sluice serve` makes them, and
// helpers to place a check on a chosen master. redis_cluster_test.cc covers decisions and
// routing (MOVED, ASK, discovery); redis_cluster_failure_test.cc masters that die or never
// answer.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "server/store_factory.h"
#include "sluice/decision.h"
#include "store/redis/cluster_slots.h"
#include "store/redis/cluster_store.h"
#include "store/redis/redis_keys.h"
#include "support/redis_cluster.h"
#include "support/specs.h"

namespace sluice::testing {

inline constexpr char kClusterKeyPrefix[] = "test:";

class RedisClusterStoreTest : public ::testing::Test {
 protected:
  RedisClusterStoreTest() : cluster_(std::make_unique<RedisCluster>()) {}

  // A store seeded with `seeds` (default: every node), once it has fetched the slot table.
  std::unique_ptr<RedisClusterStore> makeStore(std::vector<std::string> seeds = {},
                                               Micros timeout_us = 2'000'000) {
    if (seeds.empty()) {
      for (std::size_t i = 0; i < cluster_->size(); ++i) seeds.push_back(cluster_->address(i));
    }
    auto store = std::make_unique<RedisClusterStore>(
        RedisClusterStoreOptions{.seeds = seeds,
                                 .connections = 2,
                                 .timeout_us = timeout_us,
                                 .key_prefix = kClusterKeyPrefix});
    // A watchdog, not a timing assertion: the table comes as soon as a seed connects.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!store->ready() && std::chrono::steady_clock::now() < deadline) {
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
    settings.key_prefix = kClusterKeyPrefix;
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
    return redis::hashSlot(redis::redisKey(kClusterKeyPrefix, check));
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

}  // namespace sluice::testing
