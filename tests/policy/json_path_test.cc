#include "policy/json_path.h"

#include <string>

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace sluice::policy {
namespace {

// The shape RequestContext::document() builds, plus a few values of every JSON type.
const boost::json::value& requestDocument() {
  static const boost::json::value document = boost::json::parse(R"({
    "request": {
      "http": {
        "method": "GET",
        "headers": {"X-User-Id": ["u-42", "u-43"], "x-user-id": ["u-42", "u-43"]},
        "cookies": {"user-id": "c-7", "it's": "quoted", "back\\slash": "escaped"}
      },
      "client_ip": "192.0.2.1",
      "parsed_token": {"payload": {"sub": "alice", "org": 17, "admin": true}}
    },
    "a": {"b": "ab", "": "empty name", "with space": "spaced"},
    "items": [{"name": "first"}, {"name": "second"}, {"name": "third"}],
    "types": {"int": -12, "uint": 18446744073709551615, "double": 1.5, "true": true,
              "false": false, "null": null, "object": {}, "array": [], "string": ""}
  })");
  return document;
}

JsonPath parsed(std::string_view text) {
  Result<JsonPath> path = JsonPath::parse(text);
  EXPECT_TRUE(path.ok()) << text << ": " << path.error();
  return std::move(path).value();
}

std::optional<std::string> textAt(std::string_view path) {
  return parsed(path).findText(requestDocument());
}

// Each syntax form selects the value it names.
TEST(JsonPath, SelectsWithEverySyntaxForm) {
  EXPECT_EQ(textAt("$.request.http.headers['X-User-Id'][0]"), "u-42");
  EXPECT_EQ(textAt("$.request.http.headers['X-User-Id'][1]"), "u-43");
  EXPECT_EQ(textAt("$.request.http.cookies['user-id']"), "c-7");
  EXPECT_EQ(textAt("$.request.http.cookies.user-id"), "c-7");
  EXPECT_EQ(textAt("$.request.parsed_token.payload.sub"), "alice");
  EXPECT_EQ(textAt(R"($["a"]["b"])"), "ab");
  EXPECT_EQ(textAt(R"($['a']["b"])"), "ab");
  EXPECT_EQ(textAt("$.items[2].name"), "third");
  EXPECT_EQ(textAt("$.a['with space']"), "spaced");
  EXPECT_EQ(textAt("$.a['']"), "empty name");
}

// Backslash escapes the quote, the other quote and the backslash itself inside a quoted name.
TEST(JsonPath, QuotedNamesTakeEscapes) {
  EXPECT_EQ(textAt(R"($.request.http.cookies['it\'s'])"), "quoted");
  EXPECT_EQ(textAt(R"($.request.http.cookies["it's"])"), "quoted");
  EXPECT_EQ(textAt(R"($.request.http.cookies["it\'s"])"), "quoted");
  EXPECT_EQ(textAt(R"($.request.http.cookies['back\\slash'])"), "escaped");
  EXPECT_EQ(textAt(R"($["a"]["\"b\""])"), std::nullopt);  // the name is "b" with its quotes
}

// `$` alone is the document; find() points into the document, not at a copy.
TEST(JsonPath, RootAndFindPointIntoTheDocument) {
  EXPECT_EQ(parsed("$").find(requestDocument()), &requestDocument());
  const boost::json::value* items = parsed("$.items").find(requestDocument());
  ASSERT_NE(items, nullptr);
  EXPECT_EQ(parsed("$.items[1]").find(requestDocument()), &items->as_array()[1]);
}

// A step that names nothing yields nullptr, wherever it is in the path.
TEST(JsonPath, MissingStepsFindNothing) {
  for (const char* text : {"$.nope", "$.request.nope.sub", "$.request.http.headers['X-Nope'][0]",
                           "$.items[3]", "$.items[3].name", "$.items[999999999]", "$.a.B"}) {
    EXPECT_EQ(parsed(text).find(requestDocument()), nullptr) << text;
    EXPECT_EQ(parsed(text).findText(requestDocument()), std::nullopt) << text;
  }
}

// A name only steps into an object and an index only into an array.
TEST(JsonPath, WrongTypesFindNothing) {
  for (const char* text :
       {"$.items.name", "$.items['0']", "$.a[0]", "$.request.client_ip[0]", "$.request.client_ip.x",
        "$.types.int.x", "$.types.null[0]", "$.types.true.x"}) {
    EXPECT_EQ(parsed(text).find(requestDocument()), nullptr) << text;
  }
}

// Strings come out as they are, numbers and bools as JSON text; null, objects and arrays are no
// key.
TEST(JsonPath, TextOfEachType) {
  EXPECT_EQ(textAt("$.types.string"), "");
  EXPECT_EQ(textAt("$.types.int"), "-12");
  EXPECT_EQ(textAt("$.types.uint"), "18446744073709551615");
  EXPECT_EQ(textAt("$.request.parsed_token.payload.org"), "17");
  EXPECT_EQ(textAt("$.types.double"), boost::json::serialize(boost::json::value(1.5)));
  EXPECT_EQ(textAt("$.types.true"), "true");
  EXPECT_EQ(textAt("$.types.false"), "false");
  EXPECT_EQ(textAt("$.types.null"), std::nullopt);
  EXPECT_EQ(textAt("$.types.object"), std::nullopt);
  EXPECT_EQ(textAt("$.types.array"), std::nullopt);
  EXPECT_EQ(textAt("$.items"), std::nullopt);
}

// text() is the expression exactly as written.
TEST(JsonPath, KeepsItsText) { EXPECT_EQ(parsed(R"($["a"].b[0])").text(), R"($["a"].b[0])"); }

// The path is immutable: copies select the same value.
TEST(JsonPath, CopiesSelectTheSame) {
  const JsonPath original = parsed("$.items[0].name");
  const JsonPath copy = original;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(copy.findText(requestDocument()), "first");
  EXPECT_EQ(copy.text(), original.text());
}

struct ParseErrorCase {
  const char* text;
  const char* error;  // the whole message
};

class JsonPathParseErrorTest : public ::testing::TestWithParam<ParseErrorCase> {};

// Each malformed path is refused with its column, what was expected and what was found.
TEST_P(JsonPathParseErrorTest, NamesColumnAndExpectation) {
  const Result<JsonPath> path = JsonPath::parse(GetParam().text);
  ASSERT_FALSE(path.ok()) << GetParam().text;
  EXPECT_EQ(path.error(), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, JsonPathParseErrorTest,
    ::testing::Values(
        ParseErrorCase{"", "json path column 1: expected '$' to start the path, found the end"},
        ParseErrorCase{"request.sub",
                       "json path column 1: expected '$' to start the path, found 'r'"},
        ParseErrorCase{"$request", "json path column 2: expected '.' or '[', found 'r'"},
        ParseErrorCase{"$.",
                       "json path column 3: expected a name of letters, digits, '_' or '-' "
                       "after '.' (use ['...'] for other names), found the end"},
        ParseErrorCase{"$.a b", "json path column 4: expected '.' or '[', found ' '"},
        ParseErrorCase{"$.a.%",
                       "json path column 5: expected a name of letters, digits, '_' or "
                       "'-' after '.' (use ['...'] for other names), found '%'"},
        ParseErrorCase{"$..a",
                       "json path column 3: expected a name after '.' (recursive "
                       "descent is not supported), found '.'"},
        ParseErrorCase{"$.a[",
                       "json path column 5: expected a quoted name or an index after "
                       "'[', found the end"},
        ParseErrorCase{"$.a[*]",
                       "json path column 5: expected a quoted name or an index after "
                       "'[', found '*'"},
        ParseErrorCase{"$.a[ 0]",
                       "json path column 5: expected a quoted name or an index after "
                       "'[', found ' '"},
        ParseErrorCase{"$.a[-1]", "json path column 5: expected a non-negative index, found '-'"},
        ParseErrorCase{"$.a[1", "json path column 6: expected ']', found the end"},
        ParseErrorCase{"$.a[1:2]", "json path column 6: expected ']', found ':'"},
        ParseErrorCase{"$.a[1234567890]",
                       "json path column 14: expected ']': an index has at "
                       "most 9 digits, found '0'"},
        ParseErrorCase{"$['a", "json path column 5: expected the closing ', found the end"},
        ParseErrorCase{R"($["a'])", "json path column 7: expected the closing \", found the end"},
        ParseErrorCase{"$['a'", "json path column 6: expected ']', found the end"},
        ParseErrorCase{R"($['a\n'])",
                       R"(json path column 6: expected \\, \' or \" after a backslash, found 'n')"},
        ParseErrorCase{"$.a\x01", "json path column 4: expected '.' or '[', found byte 0x01"}));

}  // namespace
}  // namespace sluice::policy
