#include "sluice/rate.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

struct RateCase {
  const char* text;
  std::uint64_t count;
  Micros period_us;
};

class RateParseTest : public ::testing::TestWithParam<RateCase> {};

// Every unit the issue names parses to the right period.
TEST_P(RateParseTest, ParsesUnits) {
  const Result<Rate> parsed = Rate::parse(GetParam().text);
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed.value().count, GetParam().count);
  EXPECT_EQ(parsed.value().period_us, GetParam().period_us);
}

INSTANTIATE_TEST_SUITE_P(
    Units, RateParseTest,
    ::testing::Values(
        RateCase{"100/s", 100, kMicrosPerSecond}, RateCase{"30/min", 30, kMicrosPerMinute},
        RateCase{"10/h", 10, kMicrosPerHour}, RateCase{"1000/day", 1000, kMicrosPerDay},
        RateCase{"5000/week", 5000, kMicrosPerWeek},
        RateCase{"20000/month", 20000, 30 * kMicrosPerDay},
        RateCase{"1/year", 1, 365 * kMicrosPerDay}, RateCase{"5/100ms", 5, 100 * kMicrosPerMilli},
        RateCase{"10/5m", 10, 5 * kMicrosPerMinute},
        RateCase{" 7 / 2 hours ", 7, 2 * kMicrosPerHour}, RateCase{"3/sec", 3, kMicrosPerSecond},
        // Every short unit's plural, as the README says.
        RateCase{"3/secs", 3, kMicrosPerSecond}, RateCase{"3/mins", 3, kMicrosPerMinute},
        RateCase{"3/2hrs", 3, 2 * kMicrosPerHour}, RateCase{"1/2years", 1, 730 * kMicrosPerDay}));

// Malformed rates are refused with a message that names the problem.
TEST(RateParse, RejectsMalformed) {
  EXPECT_NE(Rate::parse("100").error().find("expected <count>/<period>"), std::string::npos);
  EXPECT_NE(Rate::parse("x/s").error().find("whole number"), std::string::npos);
  EXPECT_NE(Rate::parse("-1/s").error().find("whole number"), std::string::npos);
  EXPECT_NE(Rate::parse("10/fortnight").error().find("unknown period unit \"fortnight\""),
            std::string::npos);
  EXPECT_NE(Rate::parse("10/0s").error().find("longer than zero"), std::string::npos);
  EXPECT_NE(Rate::parse("10/99999999999999999year").error().find("too"), std::string::npos);
  EXPECT_FALSE(Rate::parse("").ok());
}

// toString gives back a spelling that parses to the same rate.
TEST(RateFormat, RoundTrips) {
  for (const char* text : {"100/s", "30/min", "10/5min", "1000/day", "5/100ms", "20000/month"}) {
    const Rate rate = Rate::parse(text).value();
    EXPECT_EQ(Rate::parse(rate.toString()).value(), rate) << text << " -> " << rate.toString();
  }
  EXPECT_EQ(Rate::parse("30/min").value().toString(), "30/min");
}

}  // namespace
}  // namespace sluice
