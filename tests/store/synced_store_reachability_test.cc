// A synced node's view of whether Redis is there: decisions are marked degraded while it is
// not, and a path to Redis that went silent is replaced, though the node sends nothing more
// while its last sync is overdue.
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "store/redis/synced_store.h"
#include "store/synced_store_fixture.h"
#include "support/tcp_proxy.h"

namespace sluice::testing {
namespace {

// A node syncing every 20 ms through `proxy`, its calls timing out at 50 ms.
std::unique_ptr<SyncedStore> nodeThrough(const TcpProxy& proxy) {
  SyncedStoreOptions options;
  options.port = proxy.port();
  options.sync_interval_us = 20 * kMicrosPerMilli;
  options.timeout_us = 50 * kMicrosPerMilli;
  return std::make_unique<SyncedStore>(options);
}

// Decides a peek of key "k" every 10 ms until the store answers `wanted`; false after `limit`.
bool answersWithin(SyncedStore& node, const LimitSpec& spec, const Clock& clock, StoreStatus wanted,
                   std::chrono::milliseconds limit) {
  const LimitCheck check{"k", &spec, 0};
  Outcome outcome;
  const auto deadline = SteadyClock::now() + limit;
  while (SteadyClock::now() < deadline) {
    if (node.apply(std::span(&check, 1), clock, std::span(&outcome, 1)) == wanted) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// The path to Redis goes silent (no FIN, no RST). The sync on it times out, and the node holds
// back every later one until that one is answered, so no call times out again: the pool must
// still look for the silent path, probe, and replace it. It did not: the node stayed degraded
// for as long as the kernel kept the dead connection.
TEST_F(SyncedStoreTest, ASilentPathToRedisIsReplaced) {
  TcpProxy proxy(server_.port());
  auto node = nodeThrough(proxy);
  // A sync that reached Redis, so the connection to black-hole is there (a new node's first
  // answers are normal before it has connected at all).
  ASSERT_TRUE(syncUntilOk(*node));
  ASSERT_TRUE(answersWithin(*node, per_hour_, clock_, StoreStatus::kOk, std::chrono::seconds(3)));
  const std::size_t accepted_before = proxy.accepted();
  proxy.blackHole();
  ASSERT_TRUE(
      answersWithin(*node, per_hour_, clock_, StoreStatus::kDegraded, std::chrono::seconds(3)));
  // A second of silence, then the probe: well within 5 s.
  EXPECT_TRUE(answersWithin(*node, per_hour_, clock_, StoreStatus::kOk, std::chrono::seconds(5)));
  EXPECT_GT(proxy.accepted(), accepted_before);  // the probe's connection, and new ones
}

// With no connection up, a round with nothing to sync does not count as a sync that reached
// Redis: the first decision after a quiet spell is marked degraded, not only the ones after a
// sync of its key has failed.
TEST_F(SyncedStoreTest, ANodeWithNoConnectionSaysSoAfterAQuietSpell) {
  server_.stop();
  SyncedStoreOptions options;
  options.port = static_cast<std::uint16_t>(server_.port());
  options.sync_interval_us = 20 * kMicrosPerMilli;
  auto node = std::make_unique<SyncedStore>(options);
  // Longer than the ten intervals without a sync after which decisions are degraded.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const LimitCheck check{"k", &per_hour_, 1};
  Outcome outcome;
  EXPECT_EQ(node->apply(std::span(&check, 1), clock_, std::span(&outcome, 1)),
            StoreStatus::kDegraded);
}

}  // namespace
}  // namespace sluice::testing
