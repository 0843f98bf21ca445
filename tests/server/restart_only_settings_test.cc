// What a reload reports as waiting for a restart: the server's and the store's settings that
// differ between the policy running and the one reloaded.
#include "server/restart_only_settings.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "policy/policy_loader.h"

namespace sluice::server {
namespace {

// The policy of `store_section` (a store: line) with one limit; the test fails on load errors.
policy::PolicyPtr policyWithStore(const std::string& store_section) {
  policy::LoadResult loaded = policy::loadPolicyText(
      store_section + "\nlimits:\n  - { name: a, key: ip, algorithm: gcra, rate: 10/s }\n",
      "test.yaml", "");
  EXPECT_NE(loaded.policy, nullptr) << (loaded.errors.empty() ? "" : loaded.errors.front());
  return loaded.policy;
}

std::vector<std::string> changes(const std::string& running, const std::string& reloaded) {
  const policy::PolicyPtr from = policyWithStore(running);
  const policy::PolicyPtr to = policyWithStore(reloaded);
  if (from == nullptr || to == nullptr) return {"(a policy did not load)"};
  return restartOnlyChanges(*from, *to);
}

// A switch of store type names the type, and of the new type's settings only those it takes:
// the Redis settings a memory store cannot have are not "changed" to their defaults.
TEST(RestartOnlySettingsTest, ASwitchToMemoryNamesTheTypeAlone) {
  EXPECT_EQ(changes("store: { type: redis, address: 10.0.0.5:6390, password: p, timeout: 50ms, "
                    "key_prefix: 'x:', breaker_failures: 9 }",
                    "store: { type: memory }"),
            (std::vector<std::string>{
                "store.type changed from redis to memory; it takes effect at restart"}));
}

// From redis to synced: what synced takes and differs is named (its address, its sync
// interval); what it does not take (breaker settings) is not.
TEST(RestartOnlySettingsTest, ASwitchToSyncedNamesWhatSyncedTakes) {
  EXPECT_EQ(changes("store: { type: redis, address: 10.0.0.5:6390, breaker_failures: 9, "
                    "connections: 4 }",
                    "store: { type: synced, address: 10.0.0.6:6390, sync_interval: 50ms }"),
            (std::vector<std::string>{
                "store.type changed from redis to synced; it takes effect at restart",
                "store.addresses changed from [10.0.0.5:6390] to [10.0.0.6:6390]; it takes "
                "effect at restart",
                "store.sync_interval changed from 100ms to 50ms; it takes effect at restart"}));
}

// From synced to redis: the sync interval, which redis does not take, is not "changed" to its
// default.
TEST(RestartOnlySettingsTest, ASwitchFromSyncedLeavesOutItsInterval) {
  EXPECT_EQ(changes("store: { type: synced, address: 10.0.0.5:6390, sync_interval: 50ms }",
                    "store: { type: redis, address: 10.0.0.5:6390 }"),
            (std::vector<std::string>{
                "store.type changed from synced to redis; it takes effect at restart"}));
}

// The same type: every edit is named, the password without its value.
TEST(RestartOnlySettingsTest, EditsWithinOneTypeAreEachNamed) {
  EXPECT_EQ(changes("store: { type: redis, address: 10.0.0.5:6390, password: old-secret }",
                    "store: { type: redis, address: 10.0.0.5:6390, password: new-secret, "
                    "breaker_cooldown: 2s, max_keys: 1000 }"),
            (std::vector<std::string>{
                "store.max_keys changed from 1000000 to 1000; it takes effect at restart",
                "store.password changed; it takes effect at restart",
                "store.breaker_cooldown changed from 1s to 2s; it takes effect at restart"}));
}

// From memory to redis, every Redis setting the file gives is named.
TEST(RestartOnlySettingsTest, ASwitchFromMemoryNamesTheNewSettings) {
  const std::vector<std::string> named =
      changes("store: { type: memory }", "store: { type: redis, address: 10.0.0.5:6390 }");
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0], "store.type changed from memory to redis; it takes effect at restart");
  EXPECT_EQ(named[1].rfind("store.addresses changed from [", 0), 0u) << named[1];
}

}  // namespace
}  // namespace sluice::server
