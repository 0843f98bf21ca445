// YAML 1.1 merge keys (`<<: *defaults`), which yaml-cpp reads as an ordinary key named "<<" but
// lyft/ratelimit's YAML library applies: lyft config files may share settings that way, so the
// Envoy door resolves them before reading a file.
#pragma once

#include <yaml-cpp/yaml.h>

#include "policy/yaml_fields.h"

namespace sluice::policy {

// In every mapping of `root` with a "<<" key, whose value is a mapping or a list of mappings,
// applies those mappings as go-yaml v2 does: in the order written, the merged keys set over the
// keys before the "<<" and under the keys after it; of a list, an earlier mapping's keys win; a
// mapping met again (merged over a mapping, or a mapping over a merged one) is merged key by key
// rather than replaced. Resolves the merged mappings' own merge keys first. Another value (an
// alias to a list included), or a mapping that merges itself, is reported and left out. Changes
// the nodes in place: an alias shares them, as it shares their other keys.
void resolveMergeKeys(YAML::Node root, Errors& errors);

}  // namespace sluice::policy
