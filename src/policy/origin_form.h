// A request target in absolute form ("http://host/path?query", RFC 9112 3.2.2), as clients may
// send to a proxy and origin servers must accept: split into its authority and the origin-form
// target a server would read. The gateway routes by it; the auth door reads an original URI
// passed on in that form by its path, not as a path of its own that no limit matches.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sluice::policy {

struct OriginForm {
  std::string authority;
  std::string target;  // path and query
};

// "http://host:port/path?query" as ("host:port", "/path?query"); nullopt when `target` is not in
// absolute form. The scheme is case-insensitive; a missing path is "/".
[[nodiscard]] std::optional<OriginForm> originForm(std::string_view target);

// The path and query a target names: an absolute-form target's origin form, else the target as
// it is. For a passed-on target (the auth door's original URI, the decision API's path), whose
// authority counts for nothing.
[[nodiscard]] std::string originTarget(std::string_view target);

}  // namespace sluice::policy
