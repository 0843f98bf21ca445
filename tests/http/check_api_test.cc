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

// A path passed in absolute form, as a client may send a request target, is read by its path,
// as the auth door reads an original URI: read as a path of its own, "http://app.example/login"
// matched no /login limit.
TEST(CheckApi, AnAbsoluteFormPathIsReadByItsPath) {
  const auto path = [](const std::string& given) {
    const auto body = parseCheckBody(R"({"request": {"path": ")" + given + R"("}})", kPeer);
    EXPECT_TRUE(body.ok()) << body.error();
    return body.ok() ? body.value().items.at(0).request->path : std::string();
  };
  EXPECT_EQ(path("http://app.example/login?a=1"), "/login");
  EXPECT_EQ(path("HTTPS://app.example"), "/");
  EXPECT_EQ(path("/login"), "/login");
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

// client_ip is a bare address: a zone id ("::1%4") would make one address many keys, and a port
// or a name is no address at all. An IPv4 address in IPv6's mapped form is accepted.
TEST(CheckApi, ClientIpIsABareAddress) {
  const auto peer_of = [](const std::string& client_ip) {
    return parseCheckBody(R"({"request": {"client_ip": ")" + client_ip + R"("}})", kPeer);
  };
  for (const char* refused :
       {"::1%4", "fe80::1%eth0", "192.0.2.9:80", "[::1]", "localhost", "", "192.0.2.9 "}) {
    const auto body = peer_of(refused);
    ASSERT_FALSE(body.ok()) << refused;
    EXPECT_EQ(body.error(),
              "request: \"client_ip\" is not an IP address (without a port or zone id)")
        << refused;
  }
  for (const char* accepted : {"192.0.2.9", "2001:db8::1", "::ffff:192.0.2.9"}) {
    const auto body = peer_of(accepted);
    ASSERT_TRUE(body.ok()) << accepted << ": " << body.error();
    EXPECT_EQ(body.value().items.at(0).request->peer, boost::asio::ip::make_address(accepted));
  }
}

}  // namespace
}  // namespace sluice::http
