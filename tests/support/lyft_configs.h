// Where the Envoy door's tests find their lyft/ratelimit-style domain files (tests/rls/configs),
// shared by every test file that loads them.
#pragma once

#include <string>

namespace sluice::testing {

inline const std::string kLyftConfigDir = std::string(SLUICE_SOURCE_DIR) + "/tests/rls/configs";

}  // namespace sluice::testing
