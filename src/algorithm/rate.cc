#include "sluice/rate.h"

#include <array>
#include <charconv>
#include <limits>

namespace sluice {
namespace {

struct UnitName {
  std::string_view name;
  Micros micros;
};

constexpr std::array<UnitName, 29> kUnits{{
    {"ms", kMicrosPerMilli},
    {"millisecond", kMicrosPerMilli},
    {"milliseconds", kMicrosPerMilli},
    {"s", kMicrosPerSecond},
    {"sec", kMicrosPerSecond},
    {"secs", kMicrosPerSecond},
    {"second", kMicrosPerSecond},
    {"seconds", kMicrosPerSecond},
    {"m", kMicrosPerMinute},
    {"min", kMicrosPerMinute},
    {"mins", kMicrosPerMinute},
    {"minute", kMicrosPerMinute},
    {"minutes", kMicrosPerMinute},
    {"h", kMicrosPerHour},
    {"hr", kMicrosPerHour},
    {"hrs", kMicrosPerHour},
    {"hour", kMicrosPerHour},
    {"hours", kMicrosPerHour},
    {"d", kMicrosPerDay},
    {"day", kMicrosPerDay},
    {"days", kMicrosPerDay},
    {"w", kMicrosPerWeek},
    {"week", kMicrosPerWeek},
    {"weeks", kMicrosPerWeek},
    {"month", kMicrosPerMonth},
    {"months", kMicrosPerMonth},
    {"y", kMicrosPerYear},
    {"year", kMicrosPerYear},
    {"years", kMicrosPerYear},
}};

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// Parses all of `text` as a non-negative integer.
bool parseWhole(std::string_view text, std::uint64_t& out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

Result<Rate> Rate::parse(std::string_view text) {
  const std::string quoted = "rate \"" + std::string(text) + "\"";
  const std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) {
    return Error{quoted + ": expected <count>/<period>, e.g. 100/s or 30/min"};
  }
  std::uint64_t count = 0;
  if (!parseWhole(trim(text.substr(0, slash)), count)) {
    return Error{quoted + ": the count must be a whole number"};
  }
  std::string_view period = trim(text.substr(slash + 1));
  std::size_t digits = 0;
  while (digits < period.size() && period[digits] >= '0' && period[digits] <= '9') ++digits;
  std::uint64_t multiplier = 1;
  if (digits > 0 && !parseWhole(period.substr(0, digits), multiplier)) {
    return Error{quoted + ": the period multiplier is too large"};
  }
  const std::string_view unit = trim(period.substr(digits));
  for (const UnitName& candidate : kUnits) {
    if (candidate.name != unit) continue;
    if (multiplier == 0) return Error{quoted + ": the period must be longer than zero"};
    if (multiplier >
        static_cast<std::uint64_t>(std::numeric_limits<Micros>::max() / candidate.micros)) {
      return Error{quoted + ": the period is too long"};
    }
    return Rate{count, static_cast<Micros>(multiplier) * candidate.micros};
  }
  return Error{quoted + ": unknown period unit \"" + std::string(unit) +
               "\" (use ms, s, min, h, day, week, month or year)"};
}

std::string Rate::toString() const {
  constexpr std::array<UnitName, 8> kCanonical{{{"year", kMicrosPerYear},
                                                {"month", kMicrosPerMonth},
                                                {"week", kMicrosPerWeek},
                                                {"day", kMicrosPerDay},
                                                {"h", kMicrosPerHour},
                                                {"min", kMicrosPerMinute},
                                                {"s", kMicrosPerSecond},
                                                {"ms", kMicrosPerMilli}}};
  std::string out = std::to_string(count) + "/";
  for (const UnitName& unit : kCanonical) {
    if (period_us <= 0 || period_us % unit.micros != 0) continue;
    const Micros multiplier = period_us / unit.micros;
    if (multiplier != 1) out += std::to_string(multiplier);
    return out + std::string(unit.name);
  }
  return out + std::to_string(period_us) + "us";
}

}  // namespace sluice
