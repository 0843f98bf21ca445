#include "policy/route_match.h"

#include <algorithm>

#include "policy/request_view.h"

namespace sluice::policy {

namespace {

bool startsWith(std::string_view text, std::string_view prefix, bool case_sensitive) noexcept {
  if (case_sensitive) return text.starts_with(prefix);
  return text.size() >= prefix.size() && equalsIgnoreCase(text.substr(0, prefix.size()), prefix);
}

bool methodListed(const std::vector<std::string>& methods, std::string_view method) noexcept {
  if (methods.empty() || std::find(methods.begin(), methods.end(), method) != methods.end()) {
    return true;
  }
  return method == "HEAD" && std::find(methods.begin(), methods.end(), "GET") != methods.end();
}

std::string describeRoute(const std::vector<std::string>& methods_list, RouteMatch::PathKind kind,
                          const std::string& path) {
  std::string methods;
  for (const std::string& method : methods_list) methods += (methods.empty() ? "" : "|") + method;
  if (methods.empty()) methods = "*";
  switch (kind) {
    case RouteMatch::PathKind::kAny:
      return methods + " *";
    case RouteMatch::PathKind::kPrefix:
      return methods + " " + path + "*";
    case RouteMatch::PathKind::kExact:
    case RouteMatch::PathKind::kGlob:
      return methods + " " + path;
  }
  return methods;
}

}  // namespace

RouteMatch::RouteMatch(std::vector<std::string> methods, PathKind kind, std::string path,
                       bool case_sensitive)
    : methods_(std::move(methods)),
      kind_(kind),
      path_(std::move(path)),
      case_sensitive_(case_sensitive),
      description_(describeRoute(methods_, kind_, path_)) {}

bool RouteMatch::matches(std::string_view method, std::string_view path) const noexcept {
  if (!methodListed(methods_, method)) return false;
  switch (kind_) {
    case PathKind::kAny:
      return true;
    case PathKind::kExact:
      return case_sensitive_ ? path == path_ : equalsIgnoreCase(path, path_);
    case PathKind::kPrefix:
      // Request paths arrive normalized without a trailing '/': "/api" is in "/api/".
      return startsWith(path, path_, case_sensitive_) ||
             (path_.size() == path.size() + 1 && path_.back() == '/' &&
              startsWith(path_, path, case_sensitive_));
    case PathKind::kGlob:
      return globMatches(path_, path, !case_sensitive_) || matchesAsDirectory(path);
  }
  return false;
}

// Request paths arrive normalized without a trailing '/', so `/api/` reads as `/api`: a glob
// ending in `/*` or `/**`, whose stars match the empty text after that '/', must take it in
// too (`/api/**` let the `/api/` index page by). As the prefix kind takes `/api` into `/api/`.
bool RouteMatch::matchesAsDirectory(std::string_view path) const noexcept {
  std::string_view pattern = path_;
  const std::size_t stars = pattern.ends_with("/**") ? 2 : pattern.ends_with("/*") ? 1 : 0;
  if (stars == 0) return false;
  pattern.remove_suffix(stars + 1);
  return globMatches(pattern, path, !case_sensitive_);
}

bool globMatches(std::string_view pattern, std::string_view text, bool ignore_case) noexcept {
  // Iterative matching with one backtrack point per star kind: no recursion, so a hostile path
  // cannot blow the stack, and no exponential blow-up. A segment star (`*`) is retried first;
  // when it cannot grow past a '/', the latest `**` absorbs one more character instead.
  constexpr std::size_t kNone = std::string_view::npos;
  std::size_t p = 0;
  std::size_t t = 0;
  std::size_t segment_p = kNone;  // pattern position after the latest `*`
  std::size_t segment_t = 0;      // text position that `*` currently stops at
  std::size_t deep_p = kNone;     // pattern position after the latest `**`
  std::size_t deep_t = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      if (p + 1 < pattern.size() && pattern[p + 1] == '*') {
        p += 2;
        deep_p = p;
        deep_t = t;
        segment_p = kNone;
      } else {
        ++p;
        segment_p = p;
        segment_t = t;
      }
    } else if (p < pattern.size() &&
               (pattern[p] == text[t] ||
                (ignore_case && lowerAscii(pattern[p]) == lowerAscii(text[t])))) {
      ++p;
      ++t;
    } else if (segment_p != kNone && text[segment_t] != '/') {
      p = segment_p;
      t = ++segment_t;
    } else if (deep_p != kNone) {
      segment_p = kNone;
      p = deep_p;
      t = ++deep_t;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace sluice::policy
