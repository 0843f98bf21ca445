#include "sluice/server_wait.h"

#include <limits>

#include <gtest/gtest.h>

namespace sluice {
namespace {

// 1994-11-06T08:49:37Z, the instant of RFC 9110's HTTP-date examples.
constexpr Micros kRfcExample = 784'111'777LL * kMicrosPerSecond;
constexpr Micros kSecond = kMicrosPerSecond;

TEST(RetryAfterTest, ReadsDelaySeconds) {
  EXPECT_EQ(parseRetryAfter("120", 0), 120 * kSecond);
  EXPECT_EQ(parseRetryAfter("0", 0), 0);
  EXPECT_EQ(parseRetryAfter(" 7\t", 0), 7 * kSecond);  // optional whitespace around the value
}

TEST(RetryAfterTest, AHugeDelaySaturatesInsteadOfWrapping) {
  const auto wait = parseRetryAfter("99999999999999999999999999", 0);
  ASSERT_TRUE(wait.has_value());
  EXPECT_GT(*wait, 1'000'000'000LL * kSecond);
}

TEST(RetryAfterTest, ReadsAllThreeHttpDateFormats) {
  const Micros now = kRfcExample - 30 * kSecond;
  EXPECT_EQ(parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now), 30 * kSecond);
  EXPECT_EQ(parseRetryAfter("Sunday, 06-Nov-94 08:49:37 GMT", now), 30 * kSecond);
  EXPECT_EQ(parseRetryAfter("Sun Nov  6 08:49:37 1994", now), 30 * kSecond);
}

TEST(RetryAfterTest, ADateInThePastIsNoWait) {
  EXPECT_EQ(parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", kRfcExample + kSecond), 0);
}

TEST(RetryAfterTest, ATwoDigitYearMoreThanFiftyYearsAheadIsInThePast) {
  // Seen from 2026: "30" is 2030, "99" is 1999 (RFC 9110 5.6.7).
  const Micros now_2026 = 1'767'225'600LL * kSecond;  // 2026-01-01T00:00:00Z
  const auto in_2030 = parseRetryAfter("Tuesday, 01-Jan-30 00:00:00 GMT", now_2026);
  ASSERT_TRUE(in_2030.has_value());
  EXPECT_EQ(*in_2030, (1'893'456'000LL - 1'767'225'600LL) * kSecond);
  EXPECT_EQ(parseRetryAfter("Friday, 01-Jan-99 00:00:00 GMT", now_2026), 0);
}

TEST(RetryAfterTest, FiftyYearsAheadIsMeasuredInTimeNotInYears) {
  // Seen from 2026-06-01: 01-Dec-76 would be 2076, 50.5 years ahead, so it is 1976 (no wait);
  // 01-Jan-76 is 49.6 years ahead, so it stays 2076.
  const Micros june_2026 = 1'780'272'000LL * kSecond;  // 2026-06-01T00:00:00Z
  EXPECT_EQ(parseRetryAfter("Tuesday, 01-Dec-76 00:00:00 GMT", june_2026), 0);
  const auto in_2076 = parseRetryAfter("Wednesday, 01-Jan-76 00:00:00 GMT", june_2026);
  ASSERT_TRUE(in_2076.has_value());
  EXPECT_EQ(*in_2076, (3'345'062'400LL - 1'780'272'000LL) * kSecond);  // to 2076-01-01
}

TEST(RetryAfterTest, ATwoDigitYearMoreThanFiftyYearsBehindIsInTheNextCentury) {
  // Seen from 2099-12-31T23:59:50Z, "01-Jan-00 00:00:10" is 2100, 20 s ahead (not 2000).
  const Micros end_of_2099 = 4'102'444'790LL * kSecond;
  EXPECT_EQ(parseRetryAfter("Friday, 01-Jan-00 00:00:10 GMT", end_of_2099), 20 * kSecond);
  EXPECT_EQ(parseRetryAfter("Fri, 01 Jan 2100 00:00:10 GMT", end_of_2099), 20 * kSecond);
  // Seen from 2080-01-01, "10" is 2110 (30 years ahead), "40" is 2040 (40 years behind).
  const Micros start_of_2080 = 3'471'292'800LL * kSecond;
  EXPECT_EQ(parseRetryAfter("Wednesday, 01-Jan-10 00:00:00 GMT", start_of_2080),
            (4'417'977'600LL - 3'471'292'800LL) * kSecond);
  EXPECT_EQ(parseRetryAfter("Sunday, 01-Jan-40 00:00:00 GMT", start_of_2080), 0);
}

TEST(RetryAfterTest, MalformedValuesAreIgnored) {
  for (const char* bad : {"", "  ", "-5", "1.5", "12abc", "soon", "Sun, 06 Nov 1994 08:49:37",
                          "Sun, 31 Feb 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT",
                          "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 6 Nov 1994 08:49:37 GMT",
                          "Sun, 06 Nov 1994 08:49:37 GMT trailing", "Sun Nov  6 08:49:37"}) {
    EXPECT_FALSE(parseRetryAfter(bad, kRfcExample).has_value()) << bad;
  }
}

TEST(RateLimitFieldTest, TheLongestTOfAUsedUpPolicyIsTheWait) {
  EXPECT_EQ(parseRateLimitWait(R"("default";r=0;t=30)"), 30 * kSecond);
  EXPECT_EQ(parseRateLimitWait(R"("burst";r=0;t=2, "day";r=0;t=3600)"), 3600 * kSecond);
  // A policy with quota left does not make the client wait.
  EXPECT_EQ(parseRateLimitWait(R"("burst";r=5;t=1, "day";r=0;t=60)"), 60 * kSecond);
}

TEST(RateLimitFieldTest, NoWaitWhenNothingIsUsedUpOrNoTIsGiven) {
  EXPECT_FALSE(parseRateLimitWait(R"("default";r=10;t=30)").has_value());
  EXPECT_FALSE(parseRateLimitWait(R"("default";r=0)").has_value());
  EXPECT_FALSE(parseRateLimitWait("").has_value());
}

TEST(RateLimitFieldTest, StepsOverOtherParametersAndItemTypes) {
  // A partition key (byte sequence), a token name, vendor parameters of every bare-item type.
  EXPECT_EQ(parseRateLimitWait(
                R"(user;r=0;t=9;pk=:cHJvamVjdDEyMw==:;acme-x="a,b;c";acme-y=?1;acme-z=1.5)"),
            9 * kSecond);
  EXPECT_EQ(parseRateLimitWait(R"(("a" "b");r=0;t=4)"), 4 * kSecond);  // an inner list
  EXPECT_EQ(parseRateLimitWait(R"("q\"uoted";r=0;t=5)"), 5 * kSecond);
}

TEST(RateLimitFieldTest, AMalformedFieldIsIgnoredWhole) {
  for (const char* bad :
       {R"("default";r=0;t=-1)", R"("default";r=0;t=1.5)", R"("default";r=0;t="30")",
        R"("default";r=0;t)", R"("open;r=0;t=3)", R"("a";r=0;t=3,)", R"("a";r=0;t=3 "b")",
        R"("a";R=0;t=3)", R"(("a";r=0;t=3)"}) {
    EXPECT_FALSE(parseRateLimitWait(bad).has_value()) << bad;
  }
}

// A Date is one '@' and an Integer (RFC 9651 3.3.7). Reading nested '@'s called the reader once
// per '@', and a server's header of 200,000 of them overflowed the client's stack.
TEST(RateLimitFieldTest, ADateIsOneAtSignAndAnInteger) {
  EXPECT_EQ(parseRateLimitWait(R"("a";r=0;t=4;since=@1659578233)"), 4 * kSecond);
  EXPECT_EQ(parseRateLimitWait(R"("a";r=0;t=4;since=@-5)"), 4 * kSecond);
  for (const char* bad :
       {R"("a";r=0;t=4;since=@@1)", R"("a";r=0;t=4;since=@x)", R"("a";r=0;t=4;since=@)",
        R"("a";r=0;t=4;since=@1.5)", R"("a";r=0;t=@4)", R"("a";r=@0;t=4)"}) {
    EXPECT_FALSE(parseRateLimitWait(bad).has_value()) << bad;
  }
  const std::string deep = std::string(200'000, '@') + "1;r=0;t=1";
  EXPECT_FALSE(parseRateLimitWait(deep).has_value());
  EXPECT_FALSE(serverWait("", deep, 0).has_value());
}

TEST(ServerWaitTest, RetryAfterTakesPrecedenceOverRateLimit) {
  EXPECT_EQ(serverWait("10", R"("default";r=0;t=30)", 0), 10 * kSecond);
  EXPECT_EQ(serverWait("", R"("default";r=0;t=30)", 0), 30 * kSecond);
  EXPECT_EQ(serverWait("garbage", R"("default";r=0;t=30)", 0), 30 * kSecond);
  EXPECT_FALSE(serverWait("", "", 0).has_value());
}

}  // namespace
}  // namespace sluice
