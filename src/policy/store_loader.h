// Reads the `store:` section: which store holds the limits' state, and how it behaves when a
// shared store is slow or gone.
#pragma once

#include <string_view>

#include <yaml-cpp/yaml.h>

#include "policy/policy.h"
#include "policy/yaml_fields.h"

namespace sluice::policy {

void loadStore(const YAML::Node& node, StoreSettings& store, Errors& errors);

// Whether a store of `type` takes the store: setting `key` (as written: "address",
// "password_env"). The loader refuses the others, which so hold their defaults; a reload reports
// edits only to the settings the new type takes.
[[nodiscard]] bool storeSettingApplies(StoreSettings::Type type, std::string_view key);

// "allow" | "deny" | "local"; nullopt (and an error naming `what`) for anything else.
std::optional<OnStoreError> onStoreErrorValue(const YAML::Node& node, const std::string& what,
                                              Errors& errors);

// Reports a limit's on_error on the synced store, which never applies it. For the file's own
// store only: a reload's file may name another store type than the one running.
void checkLimitsOnError(const YAML::Node& limits, const StoreSettings& store, Errors& errors);

// Reports the limits `store` (when shared) cannot hold exactly: numbers beyond what the Redis
// script computes exactly (lua_bounds.h), and sliding window logs in the synced store. `limits`
// is the limits: sequence the policy's limits were read from, for line numbers; `which` names
// the store in messages ("the Redis store").
void checkLimitsFitStore(const YAML::Node& limits, const Policy& policy, const StoreSettings& store,
                         const std::string& which, Errors& errors);

}  // namespace sluice::policy
