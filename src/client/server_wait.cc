#include "sluice/server_wait.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "client/field_cursor.h"
#include "client/http_date.h"

namespace sluice {
namespace {

using client::Cursor;
using client::isAlpha;
using client::isDigit;

std::string_view trimmed(std::string_view text) noexcept {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// Seconds as microseconds, saturating: a wait of 10^13 s is "longer than anyone waits" anyway.
Micros secondsToMicros(std::uint64_t seconds) noexcept {
  constexpr auto kMaxSeconds =
      static_cast<std::uint64_t>(std::numeric_limits<Micros>::max() / kMicrosPerSecond);
  return seconds >= kMaxSeconds ? std::numeric_limits<Micros>::max()
                                : static_cast<Micros>(seconds) * kMicrosPerSecond;
}

// One bare item of a Structured Field (RFC 9651 3.3): an Integer's value is kept in `integer`;
// a Decimal, String, Token, Byte Sequence, Boolean, Date or Display String is stepped over.
// False when the text is none of them.
bool readBareItem(Cursor& in, std::optional<std::int64_t>& integer) {
  integer.reset();
  const char first = in.peek();
  if (first == '-' || isDigit(first)) {
    const bool negative = in.take('-');
    const auto whole = in.digits(15, true);
    if (!whole) return false;
    if (in.take('.')) return in.digits(3, true).has_value();  // a Decimal
    integer = negative ? -static_cast<std::int64_t>(*whole) : static_cast<std::int64_t>(*whole);
    return true;
  }
  if (in.take('"') || (in.take('%') && in.take('"'))) {  // String, Display String
    while (!in.done()) {
      const char c = in.peek();
      if (in.take('"')) return true;
      if (in.take('\\')) {
        if (!in.take('"') && !in.take('\\')) return false;
      } else if (c < 0x20 || c > 0x7e || !in.take(c)) {
        return false;
      }
    }
    return false;  // unterminated
  }
  if (first == '*' || isAlpha(first)) {  // Token
    in.takeWhile([](char c) {
      return isAlpha(c) || isDigit(c) ||
             std::string_view("!#$%&'*+-.^_`|~:/").find(c) != std::string_view::npos;
    });
    return true;
  }
  if (in.take(':')) {  // Byte Sequence
    in.takeWhile(
        [](char c) { return isAlpha(c) || isDigit(c) || c == '+' || c == '/' || c == '='; });
    return in.take(':');
  }
  if (in.take('?')) return in.take('0') || in.take('1');  // Boolean
  // Date: '@' and an Integer, read here rather than by a call of this function, which recursed
  // once per '@' (a header of 200,000 of them overflowed the stack).
  if (in.take('@')) {
    const char sign_or_digit = in.peek();
    const bool read = (sign_or_digit == '-' || isDigit(sign_or_digit)) &&
                      readBareItem(in, integer) && integer.has_value();
    integer.reset();  // a Date, not an Integer: `t=@5` says no wait of 5 s
    return read;
  }
  return false;
}

// A member's parameters (;key[=value]...): the Integer values of `r` and `t`. False when they do
// not parse, or r or t is there but no Integer of zero or more.
bool readParameters(Cursor& in, std::optional<std::int64_t>& r, std::optional<std::int64_t>& t) {
  while (in.take(';')) {
    in.takeWhile([](char c) { return c == ' '; });
    const char first = in.peek();
    if (!(first == '*' || (first >= 'a' && first <= 'z'))) return false;
    const std::string_view key = in.takeWhile([](char c) {
      return (c >= 'a' && c <= 'z') || isDigit(c) || c == '_' || c == '-' || c == '.' || c == '*';
    });
    std::optional<std::int64_t> integer;
    const bool valued = in.take('=');
    if (valued && !readBareItem(in, integer)) return false;
    if (key == "r" || key == "t") {
      if (!valued || !integer || *integer < 0) return false;
      (key == "r" ? r : t) = integer;
    }
  }
  return true;
}

}  // namespace

std::optional<Micros> parseRateLimitWait(std::string_view value) {
  Cursor in(trimmed(value));
  std::optional<std::int64_t> longest;
  while (!in.done()) {
    std::optional<std::int64_t> ignored;
    std::optional<std::int64_t> r;
    std::optional<std::int64_t> t;
    if (in.take('(')) {  // an Inner List: its items' parameters are not the member's
      for (;;) {
        in.takeWhile([](char c) { return c == ' '; });
        if (in.take(')')) break;
        std::optional<std::int64_t> item_r;
        std::optional<std::int64_t> item_t;
        if (!readBareItem(in, ignored) || !readParameters(in, item_r, item_t)) return std::nullopt;
        if (in.peek() != ' ' && in.peek() != ')') return std::nullopt;
      }
    } else if (!readBareItem(in, ignored)) {
      return std::nullopt;
    }
    if (!readParameters(in, r, t)) return std::nullopt;
    if (r == 0 && t) longest = std::max(longest.value_or(0), *t);
    in.takeWhile([](char c) { return c == ' ' || c == '\t'; });
    if (in.done()) break;
    if (!in.take(',')) return std::nullopt;
    in.takeWhile([](char c) { return c == ' ' || c == '\t'; });
    if (in.done()) return std::nullopt;  // a trailing comma
  }
  if (!longest) return std::nullopt;
  return secondsToMicros(static_cast<std::uint64_t>(*longest));
}

std::optional<Micros> serverWait(std::string_view retry_after, std::string_view rate_limit,
                                 Micros now_unix_us) {
  if (auto wait = parseRetryAfter(retry_after, now_unix_us)) return wait;
  return parseRateLimitWait(rate_limit);
}

std::optional<Micros> parseRetryAfter(std::string_view value, Micros now_unix_us) {
  value = trimmed(value);
  if (value.empty()) return std::nullopt;
  if (isDigit(value.front())) {
    std::uint64_t seconds = 0;
    for (char c : value) {
      if (!isDigit(c)) return std::nullopt;
      seconds = std::min<std::uint64_t>(seconds * 10 + static_cast<std::uint64_t>(c - '0'),
                                        std::uint64_t{1} << 50);  // saturates, never wraps
    }
    return secondsToMicros(seconds);
  }
  const auto at = client::parseHttpDate(value, now_unix_us);
  if (!at) return std::nullopt;
  return std::max<Micros>(*at - now_unix_us, 0);
}

}  // namespace sluice
