// YAML → Policy, reporting every problem with file, line and what is wrong.
#pragma once

#include <string>
#include <vector>

#include "policy/policy.h"
#include "sluice/result.h"

namespace sluice::policy {

struct LoadResult {
  PolicyPtr policy;                 // null when there were errors
  std::vector<std::string> errors;  // "file:line:column: message", in file order
};

// What a reload, `serve` or `validate` says, after the file's name, when reading a
// configuration ran out of memory (std::bad_alloc) instead of ending the process.
inline constexpr const char* kOutOfMemoryReading =
    "not enough memory to read it (the YAML parser holds a few hundred bytes per value: a file "
    "of a few megabytes of short values can take gigabytes)";

// The configuration file as read once: a reload hands the same text to every part that reads a
// section of it (the policy, each front door's), so that no part reads a later version of the
// file than another. (Read twice, a file replaced between the reads was judged half old, half
// new, and a valid reload was refused for the errors of the next version.)
struct ConfigFile {
  std::string path;  // names the file in messages
  std::string text;
  // The folder relative paths in the file are read from.
  [[nodiscard]] std::string baseDir() const;
};

// The file at `path`, or why not (readFile's reasons).
[[nodiscard]] Result<ConfigFile> readConfigFile(const std::string& path);

// Reads and validates the configuration at `path` (and the keys file it names). Never throws.
// A reload gives `running_store`, the store the process runs (its settings change at restart
// only): the limits must fit it too, not only the store the file names.
[[nodiscard]] LoadResult loadPolicy(const std::string& path,
                                    const StoreSettings* running_store = nullptr);

// The same, from a file already read.
[[nodiscard]] LoadResult loadPolicy(const ConfigFile& file,
                                    const StoreSettings* running_store = nullptr);

// The same, from YAML text; `source` names it in messages, `base_dir` resolves relative files.
[[nodiscard]] LoadResult loadPolicyText(const std::string& yaml, const std::string& source,
                                        const std::string& base_dir,
                                        const StoreSettings* running_store = nullptr);

}  // namespace sluice::policy
