// appendJsonString: the string literals of the bodies Sluice writes by hand.
#include "http/json_string.h"

#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace sluice::http {
namespace {

std::string literal(std::string_view text) {
  std::string out;
  appendJsonString(out, text);
  return out;
}

TEST(JsonStringTest, PlainTextIsQuotedAsItIs) {
  EXPECT_EQ(literal(""), R"("")");
  EXPECT_EQ(literal("per-client"), R"("per-client")");
  EXPECT_EQ(literal("X-RateLimit-Remaining"), R"("X-RateLimit-Remaining")");
}

TEST(JsonStringTest, QuotesAndBackslashesAreEscapedWhereverTheyStand) {
  EXPECT_EQ(literal(R"(")"), R"("\"")");
  EXPECT_EQ(literal(R"(\)"), R"("\\")");
  EXPECT_EQ(literal(R"(a"b\c)"), R"("a\"b\\c")");
  EXPECT_EQ(literal(R"("edge\)"), R"("\"edge\\")");
}

TEST(JsonStringTest, ControlCharactersAreUnicodeEscapes) {
  EXPECT_EQ(literal(std::string_view("\0", 1)), R"("\u0000")");
  EXPECT_EQ(literal("line\nbreak\ttab"), R"("line\u000abreak\u0009tab")");
  EXPECT_EQ(literal("\x1f"), R"("\u001f")");
}

TEST(JsonStringTest, OtherBytesPassThrough) {
  EXPECT_EQ(literal("\x7f"), "\"\x7f\"");
  EXPECT_EQ(literal("café ☕"), "\"café ☕\"");
  EXPECT_EQ(literal(" "), R"(" ")");
}

TEST(JsonStringTest, AppendsAfterWhatIsThere) {
  std::string out = "{\"name\":";
  appendJsonString(out, "a\"b");
  out += '}';
  EXPECT_EQ(out, R"({"name":"a\"b"})");
}

}  // namespace
}  // namespace sluice::http
