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

}  // namespace
}  // namespace sluice::http
