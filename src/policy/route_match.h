// Which requests a limit applies to: a method and a path, exact, by prefix or by glob.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "policy/request_view.h"

namespace sluice::policy {

class RouteMatch {
 public:
  enum class PathKind { kAny, kExact, kPrefix, kGlob };

  RouteMatch() = default;
  // `methods` upper case, empty for any; GET takes in HEAD, which backends answer with the GET
  // handler. For kGlob, `*` matches within one path segment and `**` across segments; e.g.
  // /users/*/posts, /static/**. Without `case_sensitive`, letters match in either case (ASCII),
  // for backends that route so: /LOGIN is then /login.
  RouteMatch(std::vector<std::string> methods, PathKind kind, std::string path,
             bool case_sensitive = true);

  // Thread-safe.
  [[nodiscard]] bool matches(std::string_view method, std::string_view path) const noexcept;
  // Whether the request's method and any reading of its path (path, other_paths) match.
  [[nodiscard]] bool matches(const RequestView& request) const noexcept {
    if (matches(request.method, request.path)) return true;
    for (const std::string& path : request.other_paths) {
      if (matches(request.method, path)) return true;
    }
    return false;
  }
  [[nodiscard]] bool caseSensitive() const noexcept { return case_sensitive_; }
  // e.g. "POST /login", "* /api/*" — for route keys and logs. Built once: `route` key parts
  // read it on every request.
  [[nodiscard]] const std::string& describe() const noexcept { return description_; }

 private:
  [[nodiscard]] bool matchesAsDirectory(std::string_view path) const noexcept;

  std::vector<std::string> methods_;
  PathKind kind_ = PathKind::kAny;
  std::string path_;
  bool case_sensitive_ = true;
  std::string description_ = "* *";
};

// `*` matches any run of characters except '/', `**` any run at all; with `ignore_case`, other
// characters match in either case (ASCII). Thread-safe.
[[nodiscard]] bool globMatches(std::string_view pattern, std::string_view text,
                               bool ignore_case = false) noexcept;

}  // namespace sluice::policy
