// A rate: `count` units per `period_us`, written in configs as "100/s", "30/min" or "5/100ms".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/result.h"
#include "sluice/time.h"

namespace sluice {

struct Rate {
  std::uint64_t count = 0;
  Micros period_us = 0;

  // Parses "<count>/<period>", where period is an optional integer multiplier followed by a
  // unit: ms, s, min, h, day, week, month (30 days), year (365 days), with the usual long and
  // short spellings ("sec", "minute", "hours", "d", "w", "y"). Examples: "100/s", "10/5m".
  // Returns an error naming what is wrong; never throws.
  static Result<Rate> parse(std::string_view text);

  // The canonical spelling, e.g. "100/s", "10/5min".
  [[nodiscard]] std::string toString() const;

  friend bool operator==(const Rate&, const Rate&) = default;
};

}  // namespace sluice
