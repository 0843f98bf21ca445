#include "rls/go_yaml_number.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <regex>

namespace sluice::rls {
namespace {

// The digits of `digits` in `base`, without overflow; nullopt when one is not a digit of the
// base, when there are none, or when the value passes 2^64 − 1.
std::optional<std::uint64_t> digitsValue(std::string_view digits, unsigned base) {
  if (digits.empty()) return std::nullopt;
  std::uint64_t value = 0;
  for (const char c : digits) {
    unsigned digit = base;
    if (c >= '0' && c <= '9') digit = static_cast<unsigned>(c - '0');
    if (c >= 'a' && c <= 'f') digit = static_cast<unsigned>(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') digit = static_cast<unsigned>(c - 'A' + 10);
    if (digit >= base) return std::nullopt;
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / base) return std::nullopt;
    value = value * base + digit;
  }
  return value;
}

// Go's strconv.ParseInt with base 0, as go-yaml calls it: an optional sign, then 0x / 0o / 0b
// for hexadecimal, octal and binary, a leading 0 for octal, else decimal. `negative` says
// whether the sign was a minus.
std::optional<std::uint64_t> goInteger(std::string_view text, bool& negative) {
  negative = false;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text.size() > 1 && text[0] == '0') {
    const char prefix = static_cast<char>(text[1] | 0x20);  // lower case
    if (prefix == 'x') return digitsValue(text.substr(2), 16);
    if (prefix == 'o') return digitsValue(text.substr(2), 8);
    if (prefix == 'b') return digitsValue(text.substr(2), 2);
    return digitsValue(text.substr(1), 8);
  }
  return digitsValue(text, 10);
}

}  // namespace

std::optional<std::uint64_t> goYamlUnsigned(std::string_view text, std::string& problem) {
  std::string plain;  // go-yaml drops every underscore before it reads a number
  for (const char c : text) {
    if (c != '_') plain += c;
  }
  bool negative = false;
  if (const auto integer = goInteger(plain, negative)) {
    if (negative && *integer != 0) {
      problem = "must not be negative";
      return std::nullopt;
    }
    return integer;
  }
  // Not an integer in any base (`09` is neither octal nor, for go-yaml, decimal): a YAML float
  // then, if it has the form of one.
  static const std::regex kYamlFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (!std::regex_match(plain, kYamlFloat)) {
    problem = "must be a whole number";
    return std::nullopt;
  }
  const double value = std::strtod(plain.c_str(), nullptr);
  if (value < 0) {
    problem = "must not be negative";
  } else if (value >= 18446744073709551616.0) {  // 2^64
    problem = "is too large";
  } else if (value != std::floor(value)) {
    problem = "must be a whole number (lyft/ratelimit would drop the fraction without a word)";
  } else {
    return static_cast<std::uint64_t>(value);
  }
  return std::nullopt;
}

}  // namespace sluice::rls
