// Percent-decoding (RFC 3986 2.1), as backends decode paths, queries and cookie values.
#pragma once

#include <string>
#include <string_view>

namespace sluice::policy {

// 0..15 for a hex digit (either case), else -1.
[[nodiscard]] int hexDigitValue(char c) noexcept;

// `text` with every %XX decoded; a '%' not followed by two hex digits stays as it is. With
// `plus_is_space`, '+' is a space (a form-encoded query). Never throws but for allocation.
[[nodiscard]] std::string percentDecoded(std::string_view text, bool plus_is_space = false);

}  // namespace sluice::policy
