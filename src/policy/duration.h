// Durations in configs: "250ms", "3s", "1m" / "1min", "2h", "1d", or a bare number of seconds.
#pragma once

#include <string_view>

#include "sluice/result.h"
#include "sluice/time.h"

namespace sluice::policy {

[[nodiscard]] Result<Micros> parseDuration(std::string_view text);

}  // namespace sluice::policy
