// The headers Sluice writes beside the rate-limit header families: every door spells them from
// here, and a family's rename may not take one of their names.
#pragma once

#include <array>
#include <string_view>

namespace sluice::policy {

// The binding limit's deny status, on an auth door answer (nginx maps it to the client's status).
inline constexpr std::string_view kStatusHeader = "X-RateLimit-Status";
// The shadow limits that would have denied, comma-separated.
inline constexpr std::string_view kShadowHeader = "X-RateLimit-Shadow";
// "true" when the decision was made without the shared store, by the limits' on_error policies.
inline constexpr std::string_view kDegradedHeader = "X-RateLimit-Degraded";
// How long a throttle or shaper held the request, in milliseconds.
inline constexpr std::string_view kDelayedMsHeader = "X-RateLimit-Delayed-Ms";

inline constexpr std::array<std::string_view, 4> kOwnHeaders = {kStatusHeader, kShadowHeader,
                                                                kDegradedHeader, kDelayedMsHeader};

}  // namespace sluice::policy
