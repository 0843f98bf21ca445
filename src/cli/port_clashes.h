// Two front doors configured on one port: `serve` could not bind the second. Both `validate`
// and `serve` look for this before any listener opens, so the error names the two settings and
// where they are written rather than the bind's "address already in use".
#pragma once

#include <string>
#include <vector>

#include "policy/policy.h"
#include "policy/policy_loader.h"

namespace sluice::cli {

// One error per pair of doors (envoy_rls, gateway, the server's two) on one port, as
// "file:line:column: a and b name the same port". server.listen against server.admin is the
// policy loader's own check, and a door section that does not load is its loader's to report.
// `policy` is what `file` loaded to: the doors' sections are read from the same text.
[[nodiscard]] std::vector<std::string> portClashes(const policy::ConfigFile& file,
                                                   const policy::Policy& policy);

}  // namespace sluice::cli
