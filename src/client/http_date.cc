#include "client/http_date.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <limits>

#include "client/field_cursor.h"

namespace sluice::client {
namespace {

std::optional<unsigned> monthNumber(std::string_view name) noexcept {
  constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const auto found = std::find(kMonths.begin(), kMonths.end(), name);
  if (found == kMonths.end()) return std::nullopt;
  return static_cast<unsigned>(found - kMonths.begin()) + 1;
}

struct DateParts {
  std::uint64_t year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  bool two_digit_year = false;  // RFC 850's: `year` is then in now's century
};

// RFC 9110 5.6.7's "50 years", as Gregorian years of 365.2425 days.
constexpr Micros kFiftyYearsUs = 50LL * 31'556'952 * kMicrosPerSecond;

bool readClock(Cursor& in, DateParts& parts) noexcept {
  const auto hour = in.digits(2);
  if (!hour || !in.take(':')) return false;
  const auto minute = in.digits(2);
  if (!minute || !in.take(':')) return false;
  const auto second = in.digits(2);
  if (!second) return false;
  parts.hour = *hour, parts.minute = *minute, parts.second = *second;
  return true;
}

bool readMonth(Cursor& in, DateParts& parts) noexcept {
  const auto month = monthNumber(in.letters());
  if (!month) return false;
  parts.month = *month;
  return true;
}

// The three HTTP-date formats (RFC 9110 5.6.7), after the day name:
//   IMF-fixdate  Sun, 06 Nov 1994 08:49:37 GMT
//   RFC 850      Sunday, 06-Nov-94 08:49:37 GMT
//   asctime      Sun Nov  6 08:49:37 1994
// `now_year` places RFC 850's two-digit year in now's century (parseHttpDate moves it back).
std::optional<DateParts> readHttpDate(std::string_view text, std::int64_t now_year) noexcept {
  Cursor in(text);
  const std::string_view day_name = in.letters();
  DateParts parts;
  if (day_name.size() == 3 && in.take(' ')) {  // asctime
    if (!readMonth(in, parts) || !in.take(' ')) return std::nullopt;
    in.take(' ');  // a one-digit day is padded with a space
    const auto day = in.digits(2, true);
    if (!day || !in.take(' ') || !readClock(in, parts) || !in.take(' ')) return std::nullopt;
    const auto year = in.digits(4);
    if (!year) return std::nullopt;
    parts.day = *day, parts.year = *year;
  } else if (day_name.size() >= 6 && in.take(", ")) {  // RFC 850
    const auto day = in.digits(2);
    if (!day || !in.take('-') || !readMonth(in, parts) || !in.take('-')) return std::nullopt;
    const auto year = in.digits(2);
    if (!year || !in.take(' ') || !readClock(in, parts) || !in.take(" GMT")) return std::nullopt;
    const std::int64_t full_year = now_year - now_year % 100 + static_cast<std::int64_t>(*year);
    if (full_year < 100) return std::nullopt;  // before year 100: no earlier century to move to
    parts.day = *day, parts.year = static_cast<std::uint64_t>(full_year);
    parts.two_digit_year = true;
  } else if (day_name.size() == 3 && in.take(", ")) {  // IMF-fixdate
    const auto day = in.digits(2);
    if (!day || !in.take(' ') || !readMonth(in, parts) || !in.take(' ')) return std::nullopt;
    const auto year = in.digits(4);
    if (!year || !in.take(' ') || !readClock(in, parts) || !in.take(" GMT")) return std::nullopt;
    parts.day = *day, parts.year = *year;
  } else {
    return std::nullopt;
  }
  if (!in.done()) return std::nullopt;
  return parts;
}

std::optional<Micros> unixMicros(const DateParts& parts) noexcept {
  using namespace std::chrono;
  const year_month_day date{year{static_cast<int>(parts.year)},
                            month{static_cast<unsigned>(parts.month)},
                            day{static_cast<unsigned>(parts.day)}};
  if (!date.ok() || parts.hour > 23 || parts.minute > 59 || parts.second > 60) {
    return std::nullopt;  // 60: a leap second
  }
  const std::int64_t seconds =
      sys_days(date).time_since_epoch().count() * 86'400 +
      static_cast<std::int64_t>(parts.hour * 3600 + parts.minute * 60 + parts.second);
  return seconds * kMicrosPerSecond;
}

std::int64_t yearOf(Micros unix_us) noexcept {
  using namespace std::chrono;
  const sys_days day = floor<days>(sys_time<microseconds>(microseconds(unix_us)));
  return static_cast<int>(year_month_day(day).year());
}

}  // namespace

std::optional<Micros> parseHttpDate(std::string_view text, Micros now_unix_us) {
  auto parts = readHttpDate(text, yearOf(now_unix_us));
  if (!parts) return std::nullopt;
  const std::optional<Micros> at = unixMicros(*parts);
  if (!at || !parts->two_digit_year) return at;
  // The two digits were read in now's century. RFC 9110 5.6.7: a year that reads more than 50
  // years ahead of now is the latest past year with those digits. Compared as instants, not
  // years: seen from June 2026, "01-Dec-76" is 1976 (2076 would be 50.5 years ahead), which
  // the years alone kept as 2076. So the date is the one within 50 years of now either way:
  // seen from the last seconds of 2099, "01-Jan-00" is 2100, seconds ahead, not 2000.
  if (now_unix_us > std::numeric_limits<Micros>::max() - kFiftyYearsUs ||
      now_unix_us < std::numeric_limits<Micros>::min() + kFiftyYearsUs) {
    return at;
  }
  if (*at > now_unix_us + kFiftyYearsUs) {
    parts->year -= 100;
    return unixMicros(*parts);
  }
  if (*at <= now_unix_us - kFiftyYearsUs) {
    parts->year += 100;
    return unixMicros(*parts);
  }
  return at;
}

}  // namespace sluice::client
