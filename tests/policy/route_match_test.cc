#include "policy/route_match.h"

#include "policy/request_view.h"

#include <gtest/gtest.h>

namespace sluice::policy {
namespace {

// `*` stays within a segment; `**` crosses them; backtracking finds late matches.
TEST(Glob, SegmentAndDeepStars) {
  EXPECT_TRUE(globMatches("/users/*/posts", "/users/42/posts"));
  EXPECT_FALSE(globMatches("/users/*/posts", "/users/4/2/posts"));
  EXPECT_TRUE(globMatches("/static/**", "/static/a/b/c.css"));
  EXPECT_TRUE(globMatches("/**/x/*", "/a/x/b/x/c"));
  EXPECT_TRUE(globMatches("/a*b*c", "/aXbYbZc"));
  EXPECT_FALSE(globMatches("/a*b", "/a/b"));
  EXPECT_TRUE(globMatches("*", "anything-without-slash"));
  EXPECT_FALSE(globMatches("/exact", "/exact/more"));
  // A long hostile path finishes (no exponential backtracking).
  EXPECT_FALSE(globMatches("/**a**a**a**a**b", "/" + std::string(5000, 'a')));
}

// Methods and path kinds combine.
TEST(RouteMatch, MethodsAndPaths) {
  const RouteMatch login({"POST"}, RouteMatch::PathKind::kExact, "/login");
  EXPECT_TRUE(login.matches("POST", "/login"));
  EXPECT_FALSE(login.matches("GET", "/login"));
  EXPECT_FALSE(login.matches("POST", "/login/"));
  const RouteMatch any;
  EXPECT_TRUE(any.matches("DELETE", "/whatever"));
  EXPECT_EQ(login.describe(), "POST /login");
}

// Paths are compared as a backend will read them, so encodings and extra segments do not dodge a
// limit.
TEST(NormalizePath, AsTheBackendSeesIt) {
  EXPECT_EQ(normalizePath("/login"), "/login");
  EXPECT_EQ(normalizePath("/%6Cogin"), "/login");
  EXPECT_EQ(normalizePath("//login"), "/login");
  EXPECT_EQ(normalizePath("/./login/"), "/login");
  EXPECT_EQ(normalizePath("/a/b/../../login?x=1"), "/login");
  EXPECT_EQ(normalizePath("/../../login"), "/login");
  EXPECT_EQ(normalizePath("/login#a"), "/login");  // a fragment, which backends drop
  EXPECT_EQ(normalizePath("/login/#a?b=1"), "/login");
  EXPECT_EQ(normalizePath("/log%23in"), "/log#in");  // an encoded '#' is data
  EXPECT_EQ(normalizePath("/a%2Fb"), "/a%2Fb");      // an encoded slash is data, not a boundary
  EXPECT_EQ(normalizePath("/bad%zzescape%4"), "/bad%zzescape%4");
  EXPECT_EQ(normalizePath(""), "/");
  EXPECT_EQ(normalizePath("/"), "/");
  // Paths that are already normal come back as they are; ones that look it but are not do not.
  EXPECT_EQ(normalizePath("/api/v1/items.json"), "/api/v1/items.json");
  EXPECT_EQ(normalizePath("/.well-known/x/..."), "/.well-known/x/...");
  EXPECT_EQ(normalizePath("/a/."), "/a");
  EXPECT_EQ(normalizePath("/a/b/.."), "/a");
  EXPECT_EQ(normalizePath("/a//b"), "/a/b");
  EXPECT_EQ(normalizePath("/a/"), "/a");
  EXPECT_EQ(normalizePath("relative/path"), "/relative/path");
  EXPECT_EQ(normalizePath("/a%2fb"), "/a%2Fb");
  const RouteMatch api({}, RouteMatch::PathKind::kPrefix, "/api/");
  EXPECT_TRUE(api.matches("GET", normalizePath("/api/")));
  EXPECT_TRUE(api.matches("GET", normalizePath("/api//x")));
  EXPECT_FALSE(api.matches("GET", normalizePath("/apix")));
}

}  // namespace
}  // namespace sluice::policy
