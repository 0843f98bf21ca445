// The tiers: and limits: sections of the configuration.
#pragma once

#include "policy/policy.h"
#include "policy/yaml_fields.h"

namespace sluice::policy {

void loadTiers(const YAML::Node& node, Policy& policy, Errors& errors);

// Every limit of the limits: list, after the tiers; `tiers` is that section (for its line, when a
// tier every tier-based limit needs is missing). Names must be unique.
void loadLimits(const YAML::Node& limits, const YAML::Node& tiers, Policy& policy, Errors& errors);

// The route fields of `node` (method, one of path, path_prefix, path_glob, and case_sensitive),
// its other keys
// left to the caller; errors name them `what`.<field>. Methods are tokens in any case, `*` any;
// patterns are normalized as request paths are, since a pattern written otherwise could never
// match. Limits' `match:` and the gateway's routes read them alike.
RouteMatch loadRouteFields(const YAML::Node& node, const std::string& what, Errors& errors);
// A `match:` mapping `what` holding only those fields.
RouteMatch loadMatchSection(const YAML::Node& node, const std::string& what, Errors& errors);

// The longest the policy's limits can hold a request before answering it: the longest throttle
// max_delay plus the longest shaper queue (each at most 60 s), for any tier. A drain waits this
// much longer for requests in flight, so that none held is cut off unanswered.
[[nodiscard]] Micros longestHoldUs(const Policy& policy) noexcept;

}  // namespace sluice::policy
