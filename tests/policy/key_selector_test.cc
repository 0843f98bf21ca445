#include "policy/key_selector.h"

#include <gtest/gtest.h>

#include "policy/api_key_hash.h"

namespace sluice::policy {
namespace {

// What a test reads for a part in doubt, which the caller counts by address (no key is spelt).
constexpr std::string_view kInDoubt = "(in doubt)";

// The key, kInDoubt, or nullopt for a missing part.
std::optional<std::string> keyOrOutcome(const KeySelector& selector, const RequestContext& context,
                                        std::string_view route) {
  std::string out;
  switch (selector.appendKey(context, route, out)) {
    case KeySelector::Read::kKeyed:
      return out;
    case KeySelector::Read::kInDoubt:
      return std::string(kInDoubt);
    case KeySelector::Read::kMissing:
      break;
  }
  return std::nullopt;
}

// "<length>:<text>", as counter keys spell each part.
std::string part(std::string_view text) {
  std::string out;
  appendCounterPart(out, text);
  return out;
}

class KeySelectorTest : public ::testing::Test {
 protected:
  KeySelectorTest() : context_(view_) {
    view_.method = "POST";
    view_.path = "/orders/7";
    view_.headers = {{"X-User-Id", "u1"}, {"Cookie", "theme=dark; user-id=\"u2\"; id=short"}};
    context_.client_ip = "192.0.2.5";
    context_.client_network = "192.0.2.5";
    context_.api_key_id = hashApiKey("secret-key");
    context_.tier = "free";
  }
  std::optional<std::string> key(std::vector<std::string> parts,
                                 std::string_view route = "POST /orders/*") {
    Result<KeySelector> selector = KeySelector::parse(parts);
    EXPECT_TRUE(selector.ok()) << (selector.ok() ? "" : selector.error());
    if (!selector.ok()) return std::nullopt;
    return keyOrOutcome(selector.value(), context_, route);
  }

  RequestView view_;
  RequestContext context_;
};

// Each part reads its own piece of the request; parts join with '|'.
TEST_F(KeySelectorTest, PartsAndCombinations) {
  EXPECT_EQ(key({"global"}), "6:global");
  EXPECT_EQ(key({"ip"}), "9:192.0.2.5");
  EXPECT_EQ(key({"header:x-user-id"}), "2:u1");
  EXPECT_EQ(key({"cookie:user-id"}), "2:u2");
  EXPECT_EQ(key({"cookie:id"}), "5:short");
  EXPECT_EQ(key({"tier", "method", "path"}), "4:free4:POST9:/orders/7");
  EXPECT_EQ(key({"ip", "route"}), "9:192.0.2.514:POST /orders/*");
  EXPECT_EQ(key({"api_key"}), part(hashApiKey("secret-key")));
  EXPECT_EQ(key({"api_key"})->find("secret"), std::string::npos);
}

// `client` is the API key only when the key is known; otherwise the address.
TEST_F(KeySelectorTest, ClientPrefersKnownKeys) {
  EXPECT_EQ(key({"client"}), "9:192.0.2.5");
  context_.api_key_known = true;
  EXPECT_EQ(key({"client"}), part(hashApiKey("secret-key")));
}

// Parts are length-prefixed, so values containing separators cannot spell other keys.
TEST_F(KeySelectorTest, ValuesCannotForgeOtherKeys) {
  view_.headers = {{"A", "x"}, {"B", "y|z"}};
  const auto split_one_way = key({"header:A", "header:B"});
  view_.headers = {{"A", "x|y"}, {"B", "z"}};
  EXPECT_NE(key({"header:A", "header:B"}), split_one_way);
}

// Cookies split over several Cookie lines are all read: a line ahead of the session ("Cookie:
// theme=dark") hid it, and the limit keyed on it saw none. Values compare decoded, as PHP and
// Express read them. A name sent with two values is in doubt, counted by address: backends take
// the first or the last, and keying either let a client vary the other to mint counters.
TEST_F(KeySelectorTest, CookiesOnEveryLine) {
  view_.headers = {{"Cookie", "theme=dark"},
                   {"cookie", "session=s2; id=first"},
                   {"Cookie", "id=second; session=s%32"}};
  EXPECT_EQ(key({"cookie:session"}), "2:s2");
  EXPECT_EQ(key({"cookie:id"}), kInDoubt);
  EXPECT_EQ(key({"cookie:nope"}), std::nullopt);
  view_.headers = {{"Cookie", "session=; session=S%31%"}};  // an empty one is none
  EXPECT_EQ(key({"cookie:session"}), "3:S1%");
  // A value with a blank or a comma, which Python's SimpleCookie splits into other cookies
  // ("sid=JUNK sid=REAL" is sid=REAL to it), is in doubt: each junk prefix minted a counter.
  for (const char* line : {"session=JUNK session=REAL", "session=a,session=b", "session=\"a b\""}) {
    view_.headers = {{"Cookie", line}};
    EXPECT_EQ(key({"cookie:session"}), kInDoubt) << line;
  }
  // So is one with a backslash: Python's parsers resolve escapes in a quoted value, so "\a\bc"
  // and "\141bc" are both abc to a Flask or Django backend. Unquoted, a backslash is still
  // outside what RFC 6265 allows in a value, and held in doubt too.
  for (const char* line : {R"(session="\a\bc")", R"(session="\141bc")", R"(session=a\b\c)"}) {
    view_.headers = {{"Cookie", line}};
    EXPECT_EQ(key({"cookie:session"}), kInDoubt) << line;
  }
}

// A json: header path finds the header in whatever case either side spells it: the document
// holds each header under its canonical and lower-case spellings, and ['X-USER-ID'] (or
// ['X-API-Key'] for X-Api-Key) matched neither, so its limit never applied.
TEST_F(KeySelectorTest, JsonHeaderPathsReadAnyCase) {
  for (const char* spelled : {"X-User-Id", "x-user-id", "X-USER-ID", "x-User-ID"}) {
    EXPECT_EQ(key({std::string("json:$.request.http.headers['") + spelled + "'][0]"}), "2:u1")
        << spelled;
  }
}

// A header sent on two lines that differ is in doubt, as a cookie with two values: backends take
// the first, the last or both joined, so keying the first let a client put a fresh value there
// and its own in the second line, for the backend. Lines that agree are one value.
TEST_F(KeySelectorTest, AHeaderOnLinesThatDifferCountsByAddress) {
  view_.headers = {{"X-User", "x1"}, {"x-user", "bob"}};
  EXPECT_EQ(key({"header:X-User"}), kInDoubt);
  view_.headers = {{"X-User", "bob"}, {"X-USER", "bob"}};
  EXPECT_EQ(key({"header:X-User"}), "3:bob");
  // A key or token header in doubt: api_key and jwt: parts count by address, never skipped.
  context_.api_key_id.reset();
  context_.api_key_in_doubt = true;
  context_.token_in_doubt = true;
  EXPECT_EQ(key({"api_key"}), kInDoubt);
  EXPECT_EQ(key({"jwt:sub"}), kInDoubt);
}

// The JSON document's cookies read as cookie: key parts read them; a name with two values is
// null there, which a path finds as no value.
TEST(RequestDocument, CookiesReadAsCookieKeysReadThem) {
  RequestView view;
  view.headers = {{"Cookie", "a=; a=S%31; b=x; c=1; d=JUNK d=REAL; e=\"\\141\""},
                  {"Cookie", "b=y; c=%31"}};
  const RequestContext context(view);
  const auto& cookies = context.document().at("request").at("http").at("cookies");
  EXPECT_EQ(cookies.at("a").as_string(), "S1");
  EXPECT_TRUE(cookies.at("b").is_null());
  EXPECT_EQ(cookies.at("c").as_string(), "1");
  EXPECT_TRUE(cookies.at("d").is_null());  // a value some backends split into other cookies
  EXPECT_TRUE(cookies.at("e").is_null());  // a value some backends unescape
}

// A json: part finding a cookie that is null (sent with two values) counts by address, as
// cookie: does; any other null, a JWT claim's, is no value, as jwt: reads it.
TEST(RequestDocument, OnlyACookieInDoubtCountsByAddress) {
  RequestView view;
  view.headers = {{"Cookie", "sid=a; sid=b"}};
  RequestContext context(view);
  context.client_ip = "192.0.2.5";
  context.client_network = "192.0.2.5";
  context.claims = boost::json::object{{"org", nullptr}};
  const auto key = [&](const std::string& part) -> std::optional<std::string> {
    const Result<KeySelector> selector = KeySelector::parse({part});
    return keyOrOutcome(selector.value(), context, "* *");
  };
  EXPECT_EQ(key("json:$.request.http.cookies.sid"), kInDoubt);
  EXPECT_EQ(key("json:$.request.parsed_token.payload.org"), std::nullopt);
  EXPECT_EQ(key("jwt:org"), std::nullopt);
}

// A json: part reads doubt as the other parts do: any line of a header sent on lines that
// differ (`[0]` keyed the first line, which a client could vary per request while a backend
// reads the last), the token's claims while the token is in doubt (read as missing, they let
// `when_missing: skip` skip the limit), and a cookie name with blanks around it, which
// cookie: reads as the same name (helper's findings).
TEST(RequestDocument, JsonPartsReadDoubtAsTheOtherPartsDo) {
  RequestView view;
  view.headers = {{"X-User-Id", "r17"},
                  {"x-user-id", "alice"},
                  {"X-Agreed", "a"},
                  {"X-Agreed", "a"},
                  {"Cookie", "sid=r17; sid =carol"}};
  RequestContext context(view);
  context.client_network = "192.0.2.5";
  context.token_in_doubt = true;  // no claims, as when two tokens are sent
  const auto key = [&](const std::string& part) -> std::optional<std::string> {
    return keyOrOutcome(KeySelector::parse({part}).value(), context, "* *");
  };
  EXPECT_EQ(key("json:$.request.http.headers['X-User-Id'][0]"), kInDoubt);
  EXPECT_EQ(key("json:$.request.http.headers['x-user-id'][1]"), kInDoubt);
  EXPECT_EQ(key("header:X-User-Id"), kInDoubt);
  EXPECT_EQ(key("json:$.request.http.headers['X-Agreed'][0]"), "1:a");
  EXPECT_EQ(key("json:$.request.parsed_token.payload.sub"), kInDoubt);
  EXPECT_EQ(key("jwt:sub"), kInDoubt);
  EXPECT_EQ(key("json:$.request.http.cookies.sid"), kInDoubt);
  EXPECT_EQ(key("cookie:sid"), kInDoubt);
  context.token_in_doubt = false;  // no token at all: its claims are missing, not in doubt
  EXPECT_EQ(key("json:$.request.parsed_token.payload.sub"), std::nullopt);
}

// An empty value is none for json: and jwt: parts too, as for header: and cookie: ones: counted
// as a value, every client sending it empty would share one counter, which one could spend.
TEST(RequestDocument, AnEmptyValueIsNone) {
  RequestView view;
  view.headers = {{"X-Id", ""}, {"X-Name", "n1"}};  // (an empty line before another: in doubt)
  RequestContext context(view);
  context.client_network = "192.0.2.5";
  context.claims = boost::json::object{{"sub", ""}, {"org", "o1"}};
  const auto key = [&](const std::string& part) -> std::optional<std::string> {
    return keyOrOutcome(KeySelector::parse({part}).value(), context, "* *");
  };
  EXPECT_EQ(key("json:$.request.http.headers['X-Id'][0]"), std::nullopt);
  EXPECT_EQ(key("json:$.request.http.headers['X-Name'][0]"), "2:n1");
  EXPECT_EQ(key("json:$.request.parsed_token.payload.sub"), std::nullopt);
  EXPECT_EQ(key("jwt:sub"), std::nullopt);
  EXPECT_EQ(key("jwt:org"), "2:o1");
}

// A missing part makes the whole key missing; so does an empty header or cookie value, which
// would otherwise be one counter shared by every client sending it empty.
TEST_F(KeySelectorTest, MissingParts) {
  EXPECT_EQ(key({"ip", "header:X-Absent"}), std::nullopt);
  view_.headers = {{"X-Empty", ""}, {"Cookie", "session=; id=7"}};
  EXPECT_EQ(key({"header:X-Empty"}), std::nullopt);
  EXPECT_EQ(key({"cookie:session"}), std::nullopt);
  EXPECT_EQ(key({"cookie:id"}), "1:7");
  EXPECT_EQ(key({"cookie:nope"}), std::nullopt);
  EXPECT_EQ(key({"jwt:sub"}), std::nullopt);
  context_.api_key_id.reset();
  EXPECT_EQ(key({"api_key"}), std::nullopt);
}

// Unknown parts and empty names are configuration errors.
TEST(KeySelectorParse, Errors) {
  EXPECT_NE(KeySelector::parse({"ipv4"}).error().find("unknown"), std::string::npos);
  EXPECT_NE(KeySelector::parse({"header:"}).error().find("a name must follow"), std::string::npos);
  EXPECT_NE(KeySelector::parse({"json:$.a["}).error().find("json:$.a["), std::string::npos);
  EXPECT_FALSE(KeySelector::parse({}).ok());
}

// A json: path that can select no value in the request document (a misspelt member, a header's
// list of lines, an object) left the limit keyed by address, or skipped, for every request,
// without a word: it is refused, saying why. Paths that can select a value load.
TEST(KeySelectorParse, JsonPathsMustBeAbleToSelectAValue) {
  for (const char* path :
       {"$.request.http.headers['X-User-Id'][0]", "$.request.http.headers.x-id[1]",
        "$.request.http.cookies['sid']", "$.request.http.method", "$.request.http.path",
        "$.request.client_ip", "$.request.parsed_token.payload.sub",
        "$.request.parsed_token.payload.org.teams[0]"}) {
    EXPECT_TRUE(KeySelector::parse({std::string("json:") + path}).ok()) << path;
  }
  const auto problem = [](const std::string& path) {
    const Result<KeySelector> parsed = KeySelector::parse({"json:" + path});
    return parsed.ok() ? std::string("(loaded)") : parsed.error();
  };
  EXPECT_NE(problem("$.req.http.method").find("start at $.request"), std::string::npos);
  EXPECT_NE(problem("$.request.http.header['X-User-Id'][0]").find("holds method, path, headers"),
            std::string::npos);
  EXPECT_NE(problem("$.request.http.headers['X-User-Id']").find("add [0]"), std::string::npos);
  EXPECT_NE(problem("$.request.http.headers[0]").find("name a header"), std::string::npos);
  EXPECT_NE(problem("$.request.http.cookies").find("name a cookie"), std::string::npos);
  EXPECT_NE(problem("$.request.http.cookies.sid[0]").find("goes past a cookie's value"),
            std::string::npos);
  EXPECT_NE(problem("$.request.client_ip.v4").find("goes past the client address"),
            std::string::npos);
  EXPECT_NE(problem("$.request.parsed_token.payload").find("name a claim"), std::string::npos);
  EXPECT_NE(problem("$.request.parsed_token.header.alg").find("only payload"), std::string::npos);
  EXPECT_NE(problem("$.request").find("an object"), std::string::npos);
  // A path under parsed_token reads a verified token's claims, as a jwt: part does.
  EXPECT_TRUE(
      KeySelector::parse({"json:$.request.parsed_token.payload.sub"}).value().readsJwtClaims());
  EXPECT_FALSE(KeySelector::parse({"json:$.request.client_ip"}).value().readsJwtClaims());
}

}  // namespace
}  // namespace sluice::policy
