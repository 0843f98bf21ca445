// Client side: how long a response asks its client to wait before calling again, read from the
// fields a rate limiter sends (Sluice's own, or any other that follows the standards).
#pragma once

#include <optional>
#include <string_view>

#include "sluice/time.h"

namespace sluice {

// From Retry-After when it is there and well formed (clients must give it precedence, says the
// RateLimit draft), else from the IETF RateLimit field: the longest `t` among the policies it
// reports used up (r=0). nullopt when neither says; a malformed field is ignored, as the draft
// asks of clients. Empty views stand for absent fields. `now_unix_us` turns an HTTP-date into a
// wait.
[[nodiscard]] std::optional<Micros> serverWait(std::string_view retry_after,
                                               std::string_view rate_limit, Micros now_unix_us);

// Retry-After (RFC 9110 10.2.3): delay-seconds, or an HTTP-date in any of the three formats a
// recipient must accept (IMF-fixdate, RFC 850, asctime). A date in the past is a zero wait.
[[nodiscard]] std::optional<Micros> parseRetryAfter(std::string_view value, Micros now_unix_us);

// The IETF RateLimit field (draft-ietf-httpapi-ratelimit-headers-10: a Structured Fields list of
// `"policy";r=<remaining>;t=<seconds>` items): the longest t of an item with r=0, or nullopt
// when no used-up item gives a t, or the field does not parse.
[[nodiscard]] std::optional<Micros> parseRateLimitWait(std::string_view value);

}  // namespace sluice
