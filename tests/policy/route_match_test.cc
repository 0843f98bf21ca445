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

// Request paths arrive without a trailing '/' (`/p/` reads as `/p`): a glob ending in `/**` or
// `/*` takes that directory in, as the path before normalization matched; `/p/**` let the `/p/`
// index page by. Nothing else widens: `/p/*/x` does not take `/p/x`, nor `/p/**` `/pq`.
TEST(RouteMatch, AGlobEndingInStarsTakesInItsDirectory) {
  const RouteMatch deep({}, RouteMatch::PathKind::kGlob, "/p/**");
  EXPECT_TRUE(deep.matches("GET", "/p"));
  EXPECT_TRUE(deep.matches("GET", "/p/a/b"));
  EXPECT_FALSE(deep.matches("GET", "/pq"));
  EXPECT_FALSE(deep.matches("GET", "/"));
  const RouteMatch one({}, RouteMatch::PathKind::kGlob, "/users/*/posts/*");
  EXPECT_TRUE(one.matches("GET", "/users/7/posts"));
  EXPECT_TRUE(one.matches("GET", "/users/7/posts/9"));
  EXPECT_FALSE(one.matches("GET", "/users/7"));
  const RouteMatch inner({}, RouteMatch::PathKind::kGlob, "/p/*/x");
  EXPECT_FALSE(inner.matches("GET", "/p/x"));
  const RouteMatch folded({}, RouteMatch::PathKind::kGlob, "/API/**", false);
  EXPECT_TRUE(folded.matches("GET", "/api"));
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

// A backend answers HEAD with its GET handler: a GET limit that let HEAD by would be dodged.
TEST(RouteMatch, GetTakesInHead) {
  const RouteMatch reports({"GET"}, RouteMatch::PathKind::kPrefix, "/reports/");
  EXPECT_TRUE(reports.matches("HEAD", "/reports/q3"));
  EXPECT_FALSE(reports.matches("POST", "/reports/q3"));
  const RouteMatch upload({"POST", "PUT"}, RouteMatch::PathKind::kExact, "/upload");
  EXPECT_FALSE(upload.matches("HEAD", "/upload"));
}

// Routes are case-sensitive, as paths are (RFC 3986); case_sensitive: false is for backends that
// route /LOGIN to /login.
TEST(RouteMatch, CaseInsensitivePaths) {
  EXPECT_FALSE(RouteMatch({}, RouteMatch::PathKind::kExact, "/login").matches("POST", "/LOGIN"));
  const RouteMatch exact({}, RouteMatch::PathKind::kExact, "/login", false);
  EXPECT_TRUE(exact.matches("POST", "/LOGIN"));
  EXPECT_TRUE(exact.matches("POST", "/Login"));
  EXPECT_FALSE(exact.matches("POST", "/logins"));
  const RouteMatch prefix({}, RouteMatch::PathKind::kPrefix, "/Api/", false);
  EXPECT_TRUE(prefix.matches("GET", "/API/items"));
  EXPECT_TRUE(prefix.matches("GET", "/api"));  // the directory itself
  EXPECT_FALSE(prefix.matches("GET", "/apis"));
  const RouteMatch glob({}, RouteMatch::PathKind::kGlob, "/users/*/Posts", false);
  EXPECT_TRUE(glob.matches("GET", "/USERS/Ann/posts"));
  EXPECT_FALSE(glob.matches("GET", "/users/ann/x/posts"));
  EXPECT_TRUE(globMatches("/a/*B", "/A/xb", true));
  EXPECT_FALSE(globMatches("/a/*B", "/A/xb"));
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

// The readings normalizing leaves open: %2F as '/' (nginx), segment parameters dropped before
// mapping (servlet containers), or neither (most backends: ';' and %2F are data).
TEST(NormalizePath, Readings) {
  const PathReading slashes{.encoded_slash_separates = true};
  const PathReading parameters{.drops_parameters = true};
  EXPECT_EQ(normalizePath("/login;jsessionid=1"), "/login;jsessionid=1");
  EXPECT_EQ(normalizePath("/login;jsessionid=1", parameters), "/login");
  EXPECT_EQ(normalizePath("/api;v=2/login;x/", parameters), "/api/login");
  EXPECT_EQ(normalizePath("/admin/..;/login"), "/admin/..;/login");
  EXPECT_EQ(normalizePath("/admin/..;/login", parameters), "/login");
  EXPECT_EQ(normalizePath("/;/login", parameters), "/login");
  EXPECT_EQ(normalizePath("/a%3Bb", parameters), "/a;b");  // an encoded ';' is data
  EXPECT_EQ(normalizePath("/x%2F..%2Flogin", slashes), "/login");
  EXPECT_EQ(normalizePath("/a%2fb%2F", slashes), "/a/b");
  // '\' as '/' (WHATWG URL parsers); an encoded one stays data, as it does there.
  const PathReading backslashes{.backslash_separates = true};
  EXPECT_EQ(normalizePath("/x\\..\\login"), "/x\\..\\login");
  EXPECT_EQ(normalizePath("/x\\..\\login", backslashes), "/login");
  EXPECT_EQ(normalizePath("/login\\", backslashes), "/login");
  EXPECT_EQ(normalizePath("/x%5C..%5Clogin", backslashes), "/x\\..\\login");
  // A parameter ends at a '\' too, when that reading takes it for a separator.
  EXPECT_EQ(normalizePath("/a;p\\login",
                          PathReading{.drops_parameters = true, .backslash_separates = true}),
            "/a/login");
}

// A request keeps the other readings of its path only where they differ, and its folded path
// (every reading at once) for `path` keys.
TEST(NormalizePath, RequestsKeepTheReadingsThatDiffer) {
  RequestView view;
  view.setPath("/login?next=%2Fhome;x");
  EXPECT_EQ(view.path, "/login");
  EXPECT_TRUE(view.other_paths.empty());
  EXPECT_EQ(view.foldedPath(), "/login");
  view.setPath("/x%2F..%2Flogin");
  EXPECT_EQ(view.path, "/x%2F..%2Flogin");
  EXPECT_EQ(view.other_paths, std::vector<std::string>{"/login"});
  EXPECT_EQ(view.foldedPath(), "/login");
  view.setPath("/admin/..;/x%2F..%2Flogin");
  EXPECT_EQ(view.path, "/admin/..;/x%2F..%2Flogin");
  EXPECT_EQ(view.other_paths,
            (std::vector<std::string>{"/admin/..;/login", "/x%2F..%2Flogin", "/login"}));
  EXPECT_EQ(view.foldedPath(), "/login");
  // A limit on /admin/ meets it (as nginx reads it), and so does one on /login (as Tomcat does).
  EXPECT_TRUE(RouteMatch({}, RouteMatch::PathKind::kPrefix, "/admin/").matches(view));
  EXPECT_TRUE(RouteMatch({}, RouteMatch::PathKind::kExact, "/login").matches(view));
  // Backslashes, which nginx passes on as they are and Node's URL reads as '/': a limit on
  // /login meets /x\..\login and /login\ (they escaped it), and both count as /login.
  for (const char* spelling : {"/x\\..\\login", "/login\\", "/x/..\\login"}) {
    view.setPath(spelling);
    EXPECT_TRUE(RouteMatch({}, RouteMatch::PathKind::kExact, "/login").matches(view)) << spelling;
    EXPECT_EQ(view.foldedPath(), "/login") << spelling;
  }
}

}  // namespace
}  // namespace sluice::policy
