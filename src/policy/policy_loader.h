// YAML → Policy, reporting every problem with file, line and what is wrong.
#pragma once

#include <string>
#include <vector>

#include "policy/policy.h"

namespace sluice::policy {

struct LoadResult {
  PolicyPtr policy;                 // null when there were errors
  std::vector<std::string> errors;  // "file:line:column: message", in file order
};

// Reads and validates the configuration at `path` (and the keys file it names). Never throws.
// A reload gives `running_store`, the store the process runs (its settings change at restart
// only): the limits must fit it too, not only the store the file names.
[[nodiscard]] LoadResult loadPolicy(const std::string& path,
                                    const StoreSettings* running_store = nullptr);

// The same, from YAML text; `source` names it in messages, `base_dir` resolves relative files.
[[nodiscard]] LoadResult loadPolicyText(const std::string& yaml, const std::string& source,
                                        const std::string& base_dir,
                                        const StoreSettings* running_store = nullptr);

}  // namespace sluice::policy
