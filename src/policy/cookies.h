// Reading one cookie out of a Cookie request header, for key selectors that key on a cookie.
#pragma once

#include <optional>
#include <string_view>

namespace sluice::policy {

// Thread-safe, never throws, allocates nothing. The value of cookie `name` in a Cookie header
// value ("a=1; b=2"), or nullopt. Names compare case-sensitively and whole ("id" does not find
// "user-id"); the first occurrence wins. Surrounding whitespace is ignored, and surrounding
// double quotes on the value are removed. A cookie that is present but empty ("a=") gives "".
// An empty `name` finds nothing. The view points into `cookie_header`.
[[nodiscard]] std::optional<std::string_view> findCookie(std::string_view cookie_header,
                                                         std::string_view name) noexcept;

// Whether backends may read a cookie value (as findCookie gives it) as something else: it holds
// a character RFC 6265 keeps out of values that parsers treat specially. Some split on a blank
// or a comma (Python's SimpleCookie reads "sid=JUNK sid=REAL" as sid=REAL); Python's parsers
// (Flask, Django, Starlette, aiohttp) resolve backslash escapes in a quoted value, so "\a\bc"
// and "\141bc" are both abc to them. Such a value is in doubt, as a cookie sent with two values
// is: keying it would let a client mint a counter per spelling.
[[nodiscard]] bool backendsMayReadOtherwise(std::string_view value) noexcept;

// findCookie's next occurrence in `rest`, which moves past it: a loop reads every occurrence.
[[nodiscard]] std::optional<std::string_view> nextCookie(std::string_view& rest,
                                                         std::string_view name) noexcept;

}  // namespace sluice::policy
