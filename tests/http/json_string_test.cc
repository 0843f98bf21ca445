// appendJsonString: the string literals of the bodies Sluice writes by hand.
#include "http/json_string.h"

#include <string>
#include <string_view>

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>

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

TEST(JsonStringTest, WellFormedMultiByteCharactersAreKept) {
  for (const std::string_view text : {
           "\xc2\x80",          // U+0080, the first of two bytes
           "\xc3\xa9",          // é
           "\xdf\xbf",          // U+07FF
           "\xe0\xa0\x80",      // U+0800, the first of three bytes
           "\xe2\x82\xac",      // €
           "\xed\x9f\xbf",      // U+D7FF, just below the surrogates
           "\xee\x80\x80",      // U+E000, just above them
           "\xef\xbf\xbf",      // U+FFFF
           "\xf0\x90\x80\x80",  // U+10000, the first of four bytes
           "\xf0\x9f\x98\x80",  // 😀
           "\xf4\x8f\xbf\xbf",  // U+10FFFF, the last
       }) {
    EXPECT_EQ(literal(text), "\"" + std::string(text) + "\"") << text;
  }
  EXPECT_EQ(literal("a\xc3\xa9\"\xe2\x82\xac\n"), "\"a\xc3\xa9\\\"\xe2\x82\xac\\u000a\"");
}

// Each ill-formed sequence becomes one U+FFFD per maximal subpart (Unicode 15, 3.9): the lead and
// the continuation bytes that fit it, or one stray byte.
TEST(JsonStringTest, IllFormedUtf8IsReplaced) {
  // A stray continuation byte, or a byte that never starts a sequence.
  EXPECT_EQ(literal("a\x80"
                    "b"),
            R"("a\ufffdb")");
  EXPECT_EQ(literal("\xbf\xff\xfe"), R"("\ufffd\ufffd\ufffd")");
  // Latin-1: é is E9, the lead of a three-byte sequence, followed by no continuation.
  EXPECT_EQ(literal("caf\xe9"), R"("caf\ufffd")");
  EXPECT_EQ(literal("caf\xe9 ok"), R"("caf\ufffd ok")");
  // Cut short: what there is of the sequence is one replacement.
  EXPECT_EQ(literal("\xe2\x82"), R"("\ufffd")");
  EXPECT_EQ(literal("\xf0\x9f\x98x"), R"("\ufffdx")");
  EXPECT_EQ(literal("\xc3\xc3\xa9"), "\"\\ufffd\xc3\xa9\"");
  // Overlong encodings ('/' in two, three and four bytes).
  EXPECT_EQ(literal("\xc0\xaf"), R"("\ufffd\ufffd")");
  EXPECT_EQ(literal("\xc1\xbf"), R"("\ufffd\ufffd")");
  EXPECT_EQ(literal("\xe0\x80\xaf"), R"("\ufffd\ufffd\ufffd")");
  EXPECT_EQ(literal("\xf0\x80\x80\xaf"), R"("\ufffd\ufffd\ufffd\ufffd")");
  // Surrogates, which UTF-8 never encodes.
  EXPECT_EQ(literal("\xed\xa0\x80"), R"("\ufffd\ufffd\ufffd")");
  EXPECT_EQ(literal("\xed\xbf\xbf"), R"("\ufffd\ufffd\ufffd")");
  // Past U+10FFFF.
  EXPECT_EQ(literal("\xf4\x90\x80\x80"), R"("\ufffd\ufffd\ufffd\ufffd")");
  EXPECT_EQ(literal("\xf5\x80\x80\x80"), R"("\ufffd\ufffd\ufffd\ufffd")");
}

// Whatever the bytes, the literal parses as JSON (a JSON parser checks UTF-8): every pair of
// bytes, and every start of a four-byte sequence, behind and before ASCII.
TEST(JsonStringTest, EveryLiteralIsValidJson) {
  std::string text;
  const auto parses = [&] {
    boost::system::error_code ec;
    boost::json::parse(literal(text), ec);
    return !ec;
  };
  for (int first = 0; first < 256; ++first) {
    for (int second = 0; second < 256; ++second) {
      text = {'a', static_cast<char>(first), static_cast<char>(second), 'z'};
      ASSERT_TRUE(parses()) << first << " " << second;
    }
  }
  for (int lead = 0xf0; lead < 0x100; ++lead) {
    for (int second = 0x80; second < 0xc0; ++second) {
      text = {static_cast<char>(lead), static_cast<char>(second), '\x80', '\xbf'};
      ASSERT_TRUE(parses()) << lead << " " << second;
    }
  }
}

TEST(JsonStringTest, AppendsAfterWhatIsThere) {
  std::string out = "{\"name\":";
  appendJsonString(out, "a\"b");
  out += '}';
  EXPECT_EQ(out, R"({"name":"a\"b"})");
}

}  // namespace
}  // namespace sluice::http
