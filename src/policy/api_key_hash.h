// API keys never become store keys or log fields as they are: they are hashed first.
#pragma once

#include <string>
#include <string_view>

namespace sluice::policy {

// "k_" + the first 32 hex digits of SHA-256(key). Stable across processes and nodes, so counters
// in a shared store agree. Thread-safe.
[[nodiscard]] std::string hashApiKey(std::string_view key);

// Accepts "sha256:<64 hex digits>" as written in a keys file and returns the same form as
// hashApiKey, or an empty string when malformed.
[[nodiscard]] std::string apiKeyIdFromSha256(std::string_view spelled);

}  // namespace sluice::policy
