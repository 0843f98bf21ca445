// YAML 1.1 merge keys (`<<: *defaults`), which yaml-cpp reads as an ordinary key named "<<" but
// lyft/ratelimit's YAML library applies: lyft config files may share settings that way, so the
// Envoy door resolves them before reading a file.
#pragma once

#include <yaml-cpp/yaml.h>

#include "policy/yaml_fields.h"

namespace sluice::policy {

// In every mapping of `root` with a "<<" key, whose value is a mapping or a list of mappings,
// puts each key of those mappings that the mapping does not name itself (an earlier mapping of a
// list wins over a later one), then drops "<<". Resolves the merged mappings' own merge keys
// first. Another value, or a mapping that merges itself, is reported and left out. Changes the
// nodes in place: an alias shares them, as it shares their other keys.
void resolveMergeKeys(YAML::Node root, Errors& errors);

}  // namespace sluice::policy
