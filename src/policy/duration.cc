#include "policy/duration.h"

#include <charconv>
#include <string>

namespace sluice::policy {

Result<Micros> parseDuration(std::string_view text) {
  std::uint64_t amount = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), amount);
  if (ec != std::errc() || end == text.data()) {
    return Error{"duration \"" + std::string(text) + "\": expected a number and a unit, e.g. 3s"};
  }
  const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  Micros unit_us = 0;
  if (unit == "us")
    unit_us = 1;
  else if (unit == "ms")
    unit_us = kMicrosPerMilli;
  else if (unit.empty() || unit == "s")
    unit_us = kMicrosPerSecond;
  else if (unit == "m" || unit == "min")
    unit_us = kMicrosPerMinute;
  else if (unit == "h")
    unit_us = kMicrosPerHour;
  else if (unit == "d")
    unit_us = kMicrosPerDay;
  else {
    return Error{"duration \"" + std::string(text) + "\": unknown unit \"" + std::string(unit) +
                 "\" (use us, ms, s, m, h or d)"};
  }
  if (amount > static_cast<std::uint64_t>(kMicrosPerYear * 100 / unit_us)) {
    return Error{"duration \"" + std::string(text) + "\" is too long"};
  }
  return static_cast<Micros>(amount) * unit_us;
}

}  // namespace sluice::policy
