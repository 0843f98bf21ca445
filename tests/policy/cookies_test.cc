#include "policy/cookies.h"

#include <gtest/gtest.h>

namespace sluice::policy {
namespace {

// Each of several cookies is found by name, whatever the spacing around it.
TEST(FindCookie, FindsEachOfSeveralCookies) {
  constexpr std::string_view kHeader = "session=abc123; theme=dark;lang=en ;  tz = UTC ";
  EXPECT_EQ(findCookie(kHeader, "session"), "abc123");
  EXPECT_EQ(findCookie(kHeader, "theme"), "dark");
  EXPECT_EQ(findCookie(kHeader, "lang"), "en");
  EXPECT_EQ(findCookie(kHeader, "tz"), "UTC");
  EXPECT_EQ(findCookie("\tsolo=1\t", "solo"), "1");
}

// Surrounding double quotes are removed; inner or lone quotes are kept.
TEST(FindCookie, RemovesSurroundingQuotes) {
  EXPECT_EQ(findCookie(R"(a="quoted value"; b=2)", "a"), "quoted value");
  EXPECT_EQ(findCookie(R"(a="")", "a"), "");
  EXPECT_EQ(findCookie(R"(a=")", "a"), "\"");
  EXPECT_EQ(findCookie(R"(a=x"y"z)", "a"), R"(x"y"z)");
}

// A missing cookie is nullopt; a present but empty one is "".
TEST(FindCookie, MissingIsNulloptEmptyIsEmpty) {
  EXPECT_EQ(findCookie("a=1; b=2", "c"), std::nullopt);
  EXPECT_EQ(findCookie("", "a"), std::nullopt);
  EXPECT_EQ(findCookie("a; b=2", "a"), std::nullopt);  // no '=': not a cookie pair
  EXPECT_EQ(findCookie("a=1", ""), std::nullopt);
  EXPECT_EQ(findCookie("=1", ""), std::nullopt);
  EXPECT_EQ(findCookie("a=; b=2", "a"), "");
}

// Names match whole: "id" is not found inside "user-id" or "idx", nor they in "id".
TEST(FindCookie, NamesMatchWhole) {
  constexpr std::string_view kHeader = "user-id=42; idx=7; id=9";
  EXPECT_EQ(findCookie(kHeader, "id"), "9");
  EXPECT_EQ(findCookie(kHeader, "user-id"), "42");
  EXPECT_EQ(findCookie("user-id=42", "id"), std::nullopt);
  EXPECT_EQ(findCookie("id=9", "user-id"), std::nullopt);
}

// Names compare case-sensitively, and the first occurrence wins.
TEST(FindCookie, CaseSensitiveAndFirstWins) {
  EXPECT_EQ(findCookie("ID=1; id=2", "id"), "2");
  EXPECT_EQ(findCookie("ID=1", "id"), std::nullopt);
  EXPECT_EQ(findCookie("id=first; id=second", "id"), "first");
}

// The value keeps any '=' after the first.
TEST(FindCookie, ValueMayContainEquals) {
  EXPECT_EQ(findCookie("token=YWJj==; x=1", "token"), "YWJj==");
}

}  // namespace
}  // namespace sluice::policy
