// Rendering a Decision for HTTP clients: the rate-limit response headers (de facto X-RateLimit-*,
// IETF draft-10 RateLimit / RateLimit-Policy, Retry-After) and the JSON body of a 429.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/policy.h"
#include "sluice/decision.h"
#include "sluice/limit_spec.h"
#include "sluice/time.h"

namespace sluice::http {

// Every header name can be renamed by config (e.g. lower case for HTTP/2, or a vendor prefix).
// The defaults are policy::kHeaderFamilies', in its order.
struct HeaderNames {
  std::string limit{policy::kHeaderFamilies[0].default_name};
  std::string remaining{policy::kHeaderFamilies[1].default_name};
  std::string reset{policy::kHeaderFamilies[2].default_name};
  std::string retry_after{policy::kHeaderFamilies[3].default_name};
  std::string ratelimit{policy::kHeaderFamilies[4].default_name};
  std::string ratelimit_policy{policy::kHeaderFamilies[5].default_name};
};

// Which header families to emit.
struct HeaderOptions {
  bool x_ratelimit = true;  // X-RateLimit-Limit / -Remaining / -Reset (reset = delta seconds)
  bool ietf = true;         // IETF draft-10 RateLimit + RateLimit-Policy
  bool retry_after = true;  // Retry-After on denials (whole seconds, rounded up)
  HeaderNames names;
};

// What the renderer needs to know about each limit of the decision, parallel to
// decision.statuses.
struct LimitLabel {
  std::string_view name;  // policy name, e.g. "per-client"; any bytes (sanitized when rendered)
  // The window its quota (q=, the Outcome's limit) is granted in, for w= (whole seconds, rounded
  // up, at least 1): quotaWindowUs.
  Micros window_us = 0;
};

// The time in which `spec` grants its whole quota (its limit) at its rate: the period of a window
// limit, and burst / rate for a bucket or GCRA (in whole refill steps for the interval bucket).
// A burst of 100 at 10/min is "q=100;w=600": a
// client that paces itself by the policy keeps to 10/min, where "q=100;w=60" would promise ten
// times the rate.
[[nodiscard]] Micros quotaWindowUs(const LimitSpec& spec) noexcept;

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// The largest Structured Field Integer (15 digits). Every number rendered is capped at it.
inline constexpr std::int64_t kMaxHeaderInteger = 999'999'999'999'999;

// Whole seconds for a header: ceil(us / 1e6); 0 for 0 and for negative durations. kNever maps
// to kMaxHeaderInteger, larger than any finite duration renders (kNever - 1 renders as
// 9'223'372'036'855), so "never" stays distinguishable and still parses as an SF Integer and
// as delay-seconds. Thread-safe, never throws.
[[nodiscard]] std::int64_t headerSeconds(Micros us) noexcept;

// Thread-safe, never throws except std::bad_alloc. Appends the configured headers for
// `decision` to `out`, in this order:
//   X-RateLimit-Limit, -Remaining, -Reset  the binding status (reset = headerSeconds of its
//                                          reset_after_us); absent when statuses is empty.
//   RateLimit-Policy, RateLimit            one item per status, `"<name>";q=<limit>;w=<s>` and
//                                          `"<name>";r=<remaining>;t=<s>`, joined by ", ";
//                                          absent when statuses is empty.
//   Retry-After                            denials only, headerSeconds(retry_after_us); absent
//                                          when the wait is kNever (cost exceeds the limit).
// Names become valid SF Strings: bytes outside printable ASCII become '_', '"' and '\' are
// escaped. Precondition (asserted): labels.size() == decision.statuses.size(); in a release
// build a status without a label renders with an empty name and no w=.
// The options a policy's `headers:` section asks for (families on or off, renamed headers).
[[nodiscard]] HeaderOptions headerOptionsFor(const policy::HeaderSettings& settings);

void appendRateLimitHeaders(const Decision& decision, std::span<const LimitLabel> labels,
                            const HeaderOptions& options, HeaderList& out);
// The same headers as header lines ("Name: value\r\n" each) appended to `lines`: a proxy
// writing a response head takes them as they are, with no allocation per header.
void appendRateLimitHeaderLines(const Decision& decision, std::span<const LimitLabel> labels,
                                const HeaderOptions& options, std::string& lines);

// Thread-safe, never throws except std::bad_alloc. Appends the configured headers of a refusal
// by a concurrency limit (`name`, at most `max_in_flight` requests in flight per key), in the
// order above: X-RateLimit-Limit and -Remaining (0; no -Reset, as nothing frees a slot at a
// known time); `RateLimit-Policy: "<name>";q=<max>;qu="concurrent-requests"` and
// `RateLimit: "<name>";r=0`, the draft's quota unit for in-flight requests; `Retry-After: 1`,
// the shortest wait a client can be told, since a slot frees when any request of the key ends.
void appendConcurrencyHeaders(std::string_view name, std::uint64_t max_in_flight,
                              const HeaderOptions& options, HeaderList& out);

// Thread-safe, never throws except std::bad_alloc. The JSON body of a denial:
//   {"error":"rate_limited","message":"...","limit":"<binding name>","retry_after":<seconds>}
// retry_after is headerSeconds(decision.retry_after_us), or null when the binding outcome's
// reason is cost_exceeds_limit (the message then says the cost can never fit). The name is
// sanitized as in the headers, so it matches the RateLimit item; `limit` is null when no limit
// binds. Precondition: labels parallel to decision.statuses.
[[nodiscard]] std::string deniedBody(const Decision& decision, std::span<const LimitLabel> labels);

}  // namespace sluice::http
