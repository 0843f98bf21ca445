// Reading which rate-limit headers to send, and under which names, from a YAML mapping: the
// policy's `headers:` section and the Envoy door's `envoy_rls.response_headers`, one vocabulary.
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

#include "policy/policy.h"
#include "policy/yaml_fields.h"

namespace sluice::policy {

// Reads {x_ratelimit, ietf, retry_after, names: {limit, remaining, reset, retry_after, ratelimit,
// ratelimit_policy}} from `node` into `headers`, keeping what is there for absent keys. `where`
// names the section in errors ("headers", "envoy_rls.response_headers").
void loadHeaderSettings(const YAML::Node& node, const std::string& where, HeaderSettings& headers,
                        Errors& errors);

}  // namespace sluice::policy
