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
  std::string path;    // without the query string
  // Header lines as received; names compare case-insensitively. Repeated names keep all lines.
  std::vector<std::pair<std::string, std::string>> headers;
  boost::asio::ip::address peer;  // the TCP peer (or the client ip a caller vouches for)
  std::uint64_t cost = 1;         // weight of the request; 0 peeks

  // The first line named `name` (any case), or nullopt.
  [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const noexcept;
  // Every line named `name` (any case) joined with ", ", as HTTP combines repeated fields.
  [[nodiscard]] std::string joinedHeader(std::string_view name) const;
};

// The path as a backend will see it, so a limit on /login cannot be dodged with /%6Cogin,
// //login, /login/, /a/../login or /login;a=b: segment parameters (";...") dropped,
// percent-encodings decoded (but %2F, which would change the segments), runs of '/' merged,
// "." and ".." segments resolved (never above the root), a trailing '/' dropped, query and
// fragment removed.
// Never throws but for allocation.
[[nodiscard]] std::string normalizePath(std::string_view raw);

// ASCII case-insensitive equality, for header names.
[[nodiscard]] bool equalsIgnoreCase(std::string_view a, std::string_view b) noexcept;

// Whether `name` is an HTTP token (RFC 9110 5.6.2): what a header field name, and a cookie name,
// are made of (letters, digits and !#$%&'*+-.^_`|~).
[[nodiscard]] bool isHttpToken(std::string_view name) noexcept;

}  // namespace sluice::policy
