// The tiers: and limits: sections of the configuration.
#pragma once

#include "policy/policy.h"
#include "policy/yaml_fields.h"

namespace sluice::policy {

void loadTiers(const YAML::Node& node, Policy& policy, Errors& errors);

// Every limit of the limits: list, after the tiers; `tiers` is that section (for its line, when a
// tier every tier-based limit needs is missing). Names must be unique.
void loadLimits(const YAML::Node& limits, const YAML::Node& tiers, Policy& policy, Errors& errors);

}  // namespace sluice::policy
