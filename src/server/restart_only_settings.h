// The settings `sluice serve` reads once, at start: the listeners, the I/O threads, the HTTP
// server's limits and the store. A reload applies the rest of the file at once (limits, tiers,
// keys, identity, headers, the auth subrequest's settings, the limits' on_error); edits to these
// wait for a restart. Comparing them lets a reload say so instead of reporting every edit applied.
#pragma once

#include <string>
#include <vector>

#include "policy/policy.h"

namespace sluice::server {

// One line per restart-only setting that differs between the settings the process started with
// and a newly loaded file, naming the setting with both values; empty when none does. Of the
// store's settings, only those the reloaded store type takes (policy::storeSettingApplies).
[[nodiscard]] std::vector<std::string> restartOnlyChanges(const policy::Policy& running,
                                                          const policy::Policy& reloaded);

}  // namespace sluice::server
