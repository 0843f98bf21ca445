#include "rls/go_yaml_number.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <regex>

namespace sluice::rls {
namespace {

// `digits`, every one a digit of `base` (no sign), read as one number; nullopt when there are
// none, when one is not a digit of the base, or when the value passes 2^64 − 1.
std::optional<std::uint64_t> digitsValue(std::string_view digits, int base) {
  std::uint64_t value = 0;
  const char* const end = digits.data() + digits.size();
  const auto [stop, error] = std::from_chars(digits.data(), end, value, base);
  if (error != std::errc{} || stop != end) return std::nullopt;
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
    problem = "must be a whole number (lyft/ratelimit refuses a fraction too)";
  } else {
    return static_cast<std::uint64_t>(value);
  }
  return std::nullopt;
}

}  // namespace sluice::rls
