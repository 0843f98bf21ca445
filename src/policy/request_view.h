// What the policy sees of a request, whichever front door it came through: a plain view with
// no I/O types, so selectors and matching are unit-testable without a server.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/ip/address.hpp>

namespace sluice::policy {

struct RequestView {
  std::string method;  // upper case, e.g. "GET"
  std::string path;    // normalized (normalizePath), read literally: ';' and %2F are data
  // The other readings backends make of the same path, each kept only when it differs: %2F read
  // as '/' (nginx: /x%2F..%2Flogin is /login), segment parameters dropped (servlet containers:
  // /login;a=b is /login), '\' read as '/' (WHATWG URL parsers, as Node's: /x\..\login is
  // /login), and their combinations. Routes and limits match any reading (RouteMatch::matches).
  std::vector<std::string> other_paths;
  // Header lines as received; names compare case-insensitively. Repeated names keep all lines.
  std::vector<std::pair<std::string, std::string>> headers;
  boost::asio::ip::address peer;  // the TCP peer (or the client ip a caller vouches for)
  std::uint64_t cost = 1;         // weight of the request; 0 peeks

  // The first line named `name` (any case), or nullopt.
  [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const noexcept;
  // The value of the lines named `name` (any case) when they all say the same, or nullopt when
  // there is none. Two lines that differ set `in_doubt` and give nullopt: backends take the
  // first, the last or both joined, so a limit or an identity read from either would let a
  // client send its counter's value in one line and what the backend uses in the other.
  // `read` takes what counts from a line (name, value), nullopt when the line holds nothing
  // that does: only lines that hold something must agree. By default, the value as it is.
  using LineReading = std::optional<std::string_view> (*)(std::string_view name,
                                                          std::string_view value);
  [[nodiscard]] std::optional<std::string_view> agreedHeader(std::string_view name, bool& in_doubt,
                                                             LineReading read = nullptr) const;
  // Every line named `name` (any case) joined with ", ", as HTTP combines repeated fields.
  [[nodiscard]] std::string joinedHeader(std::string_view name) const;
  // Sets path and other_paths from the request target's path as sent.
  void setPath(std::string_view raw);
  // The reading a `path` key part counts: the most folded one (both readings at once), so that
  // spellings of one resource are one counter.
  [[nodiscard]] const std::string& foldedPath() const noexcept {
    return folded_path.empty() ? path : folded_path;
  }
  std::string folded_path;  // set by setPath when it differs from path
};

// How a backend reads what normalizing leaves open: whether %2F separates segments (nginx) or
// is data, whether a segment's parameters (";..." up to the next '/') are dropped before
// mapping (servlet containers) or are part of it, and whether a '\' separates segments (WHATWG
// URL parsers: browsers, Node's URL; an encoded one, %5C, stays data there too).
struct PathReading {
  bool encoded_slash_separates = false;
  bool drops_parameters = false;
  bool backslash_separates = false;
};

// The path as a backend will see it, so a limit on /login cannot be dodged with /%6Cogin,
// //login, /login/ or /a/../login: percent-encodings decoded (but %2F, unless the reading says
// so), runs of '/' merged, "." and ".." segments resolved (never above the root), a trailing
// '/' dropped, query and fragment removed; segment parameters dropped when the reading says so
// (then /a/..;/login is /login). Never throws but for allocation.
[[nodiscard]] std::string normalizePath(std::string_view raw, PathReading reading = {});

// ASCII lower case of one character; others as they are.
[[nodiscard]] constexpr char lowerAscii(char c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
}

// ASCII case-insensitive equality, for header names.
[[nodiscard]] bool equalsIgnoreCase(std::string_view a, std::string_view b) noexcept;

// `text` without the blanks (space, tab: HTTP's optional whitespace) around it.
[[nodiscard]] std::string_view trimBlanks(std::string_view text) noexcept;

// Whether `name` is an HTTP token (RFC 9110 5.6.2): what a header field name, and a cookie name,
// are made of (letters, digits and !#$%&'*+-.^_`|~).
[[nodiscard]] bool isHttpToken(std::string_view name) noexcept;

}  // namespace sluice::policy
