// The headers Sluice writes beside the rate-limit header families: every door spells them from
// here, and a family's rename may not take one of their names.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace sluice::policy {

// The most bytes a header that lists limits by name (X-RateLimit-Shadow, RateLimit,
// RateLimit-Policy) carries, its binding limit's item aside: a request under thousands of
// limits made values past what HTTP stacks take (Beast refuses a field over 64 KiB by throwing;
// nginx reads a whole response header block into 4 KiB by default). Items past it are left
// out; the decision's JSON and the metrics still count every limit.
inline constexpr std::size_t kMaxNameListBytes = 1024;

// Appends `name` for a header value: bytes outside printable ASCII, '%' itself and any byte of
// `also` as %XX, so that distinct names stay distinct, a list's separator inside a name does not
// split it, and a client percent-decodes a name to match it to its limit.
inline void appendPercentEncoded(std::string& out, std::string_view name,
                                 std::string_view also = {}) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (const char byte : name) {
    const auto code = static_cast<unsigned char>(byte);
    if (code < 0x20 || code > 0x7E || byte == '%' || also.find(byte) != std::string_view::npos) {
      out += '%';
      out += kHex[code >> 4];
      out += kHex[code & 0xF];
    } else {
      out += byte;
    }
  }
}

// The binding limit's deny status, on an auth door answer (nginx maps it to the client's status).
inline constexpr std::string_view kStatusHeader = "X-RateLimit-Status";
// The shadow limits that would have denied, comma-separated, each percent-encoded (a comma in a
// name as %2C), at most kMaxNameListBytes.
inline constexpr std::string_view kShadowHeader = "X-RateLimit-Shadow";
// "true" when the decision was made without the shared store, by the limits' on_error policies.
inline constexpr std::string_view kDegradedHeader = "X-RateLimit-Degraded";
// How long a throttle or shaper held the request, in milliseconds.
inline constexpr std::string_view kDelayedMsHeader = "X-RateLimit-Delayed-Ms";

inline constexpr std::array<std::string_view, 4> kOwnHeaders = {kStatusHeader, kShadowHeader,
                                                                kDegradedHeader, kDelayedMsHeader};

}  // namespace sluice::policy
