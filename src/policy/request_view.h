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
  std::string path;    // normalized (normalizePath): what limits match and `path` keys count
  // The path with each %2F read as '/', when that reads otherwise (else empty): nginx reads them
  // so, and a backend behind it sees /x%2F..%2Flogin as /login. Limits match either reading.
  std::string slash_path;
  // Header lines as received; names compare case-insensitively. Repeated names keep all lines.
  std::vector<std::pair<std::string, std::string>> headers;
  boost::asio::ip::address peer;  // the TCP peer (or the client ip a caller vouches for)
  std::uint64_t cost = 1;         // weight of the request; 0 peeks

  // The first line named `name` (any case), or nullopt.
  [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const noexcept;
  // Every line named `name` (any case) joined with ", ", as HTTP combines repeated fields.
  [[nodiscard]] std::string joinedHeader(std::string_view name) const;
  // Sets path and slash_path from the request target's path as sent.
  void setPath(std::string_view raw);
};

// The path as a backend will see it, so a limit on /login cannot be dodged with /%6Cogin,
// //login, /login/, /a/../login or /login;a=b: segment parameters (";...") dropped,
// percent-encodings decoded (but %2F, which would change the segments), runs of '/' merged,
// "." and ".." segments resolved (never above the root), a trailing '/' dropped, query and
// fragment removed.
// Never throws but for allocation. With kSeparator, %2F is read as '/' (as nginx reads it).
enum class EncodedSlash { kData, kSeparator };
[[nodiscard]] std::string normalizePath(std::string_view raw,
                                        EncodedSlash encoded_slash = EncodedSlash::kData);

// ASCII case-insensitive equality, for header names.
[[nodiscard]] bool equalsIgnoreCase(std::string_view a, std::string_view b) noexcept;

// Whether `name` is an HTTP token (RFC 9110 5.6.2): what a header field name, and a cookie name,
// are made of (letters, digits and !#$%&'*+-.^_`|~).
[[nodiscard]] bool isHttpToken(std::string_view name) noexcept;

}  // namespace sluice::policy
