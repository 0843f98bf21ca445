// The decision API's request body, read as the other doors read their requests.
#include "http/check_api.h"

#include <gtest/gtest.h>

namespace sluice::http {
namespace {

const boost::asio::ip::address kPeer = boost::asio::ip::make_address("192.0.2.1");

// Header values lose the blanks around them, as an HTTP parser drops them: the same key sent
// through /v1/check and /v1/auth is one counter.
TEST(CheckApi, HeaderValuesAreTrimmedAsHttpTrimsThem) {
  const auto body = parseCheckBody(
      R"({"request": {"path": "/a/../b;x=1", "headers": {"X-Api-Key": " K1\t", "X-Many": ["a ", " b"], "X-Blank": "  "}}})",
      kPeer);
  ASSERT_TRUE(body.ok()) << body.error();
  const policy::RequestView& view = *body.value().items.at(0).request;
  EXPECT_EQ(view.path, "/b;x=1");
  EXPECT_EQ(view.foldedPath(), "/b");
  EXPECT_EQ(view.header("x-api-key"), "K1");
  EXPECT_EQ(view.joinedHeader("X-Many"), "a, b");
  EXPECT_EQ(view.header("X-Blank"), "");
}

// A field the API does not know is refused, where it was ignored: a misspelt "cots": 5 charged
// 1, and a "limit" beside "request" was dropped, the request decided on every limit it matched.
TEST(CheckApi, UnknownFieldsAreRefused) {
  const auto refused = [](const std::string& text, const std::string& message) {
    const auto body = parseCheckBody(text, kPeer);
    ASSERT_FALSE(body.ok()) << text;
    EXPECT_NE(body.error().find(message), std::string::npos) << text << ": " << body.error();
  };
  refused(R"({"limit": "a", "key": "k", "cots": 5})", "unknown field \"cots\"");
  refused(R"({"limit": "a", "key": "k", "request": {"path": "/"}})",
          "\"limit\" does not go with \"request\"");
  refused(R"({"request": {"path": "/", "header": {"X": "y"}}})",
          "request: unknown field \"header\"");
  refused(R"({"checks": [{"limit": "a", "key": "k"}], "cost": 2})",
          "unknown field \"cost\" beside \"checks\"");
  refused(R"({"checks": [{"limit": "a", "key": "k", "tire": "free"}]})",
          "checks[0]: unknown field \"tire\"");
  for (
      const char* accepted :
      {R"({"limit": "a", "key": "k", "tier": "free", "cost": 2})",
       R"({"request": {"method": "GET", "path": "/", "client_ip": "192.0.2.9", "headers": {}}, "cost": 0})"}) {
    EXPECT_TRUE(parseCheckBody(accepted, kPeer).ok()) << accepted;
  }
}

}  // namespace
}  // namespace sluice::http
