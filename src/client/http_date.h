// HTTP-date (RFC 9110 5.6.7), as a Retry-After field may carry it.
#pragma once

#include <optional>
#include <string_view>

#include "sluice/time.h"

namespace sluice::client {

// The instant (microseconds since the Unix epoch) an HTTP-date names, in any of the three
// formats a recipient must accept: IMF-fixdate, RFC 850 and asctime. nullopt when `text` is
// none of them or names no real date. `now_unix_us` places RFC 850's two-digit year.
[[nodiscard]] std::optional<Micros> parseHttpDate(std::string_view text, Micros now_unix_us);

}  // namespace sluice::client
