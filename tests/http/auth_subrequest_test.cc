#include "http/auth_subrequest.h"

#include <gtest/gtest.h>

namespace sluice::http {
namespace {

namespace beast_http = boost::beast::http;

beast_http::request<beast_http::string_body> subrequest(
    std::initializer_list<std::pair<const char*, const char*>> headers) {
  beast_http::request<beast_http::string_body> request{beast_http::verb::get, "/v1/auth", 11};
  for (const auto& [name, value] : headers) request.set(name, value);
  return request;
}

const auto kProxy = boost::asio::ip::make_address("127.0.0.1");

// The original request comes from the configured headers, normalized; every header is kept.
TEST(AuthSubrequest, ReadsTheConfiguredHeaders) {
  const auto view = viewFromSubrequest(subrequest({{"X-Original-URI", "/api//%75sers/?page=2"},
                                                   {"X-Original-Method", "post"},
                                                   {"X-Api-Key", "k"}}),
                                       kProxy);
  EXPECT_EQ(view.method, "POST");
  EXPECT_EQ(view.path, "/api/users");
  EXPECT_EQ(view.header("x-api-key"), "k");
  EXPECT_EQ(view.peer, kProxy);
}

// Headers that are not configured are ignored, whoever sent them: with Traefik's names
// configured, a client's own X-Original-URI does not choose the path.
TEST(AuthSubrequest, IgnoresHeadersThatAreNotConfigured) {
  const auto request = subrequest({{"X-Original-URI", "/elsewhere"},
                                   {"X-Forwarded-Uri", "/login"},
                                   {"X-Forwarded-Method", "POST"}});
  const auto traefik = viewFromSubrequest(request, kProxy, "X-Forwarded-Uri", "X-Forwarded-Method");
  EXPECT_EQ(traefik.path, "/login");
  EXPECT_EQ(traefik.method, "POST");
  const auto nginx = viewFromSubrequest(subrequest({{"X-Forwarded-Uri", "/login"}}), kProxy);
  EXPECT_EQ(nginx.path, "/v1/auth");  // no X-Original-URI: the subrequest's own target
  EXPECT_EQ(nginx.method, "GET");
}

// A proxy may pass the original URI as the client sent it, in absolute form: its path is the
// path. Read as a path of its own, "http://evil.example/login" matched no /login limit.
TEST(AuthSubrequest, AnAbsoluteFormUriIsReadByItsPath) {
  EXPECT_EQ(
      viewFromSubrequest(subrequest({{"X-Original-URI", "http://evil.example/login?a=1"}}), kProxy)
          .path,
      "/login");
  EXPECT_EQ(
      viewFromSubrequest(subrequest({{"X-Original-URI", "HTTPS://evil.example"}}), kProxy).path,
      "/");
}

}  // namespace
}  // namespace sluice::http
