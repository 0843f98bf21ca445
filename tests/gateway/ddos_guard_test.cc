// The DDoS guard: the global ceiling on a fake clock, the patterns, the connection cap.
#include "gateway/ddos_guard.h"
#include "gateway/pattern_folding.h"

#include <gtest/gtest.h>

namespace sluice::gateway {
namespace {

class DdosGuardTest : public ::testing::Test {
 protected:
  FakeClock clock_{1'000 * kMicrosPerSecond};
};

// 10/s: ten at once (one second's worth), the eleventh waits exactly 100 ms.
TEST_F(DdosGuardTest, GlobalCeilingEdges) {
  GuardSettings settings;
  settings.global_rps = 10;
  DdosGuard guard(settings, clock_);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(guard.admitGlobal()) << i;
  EXPECT_FALSE(guard.admitGlobal());
  clock_.advance(100 * kMicrosPerMilli - 1);
  EXPECT_FALSE(guard.admitGlobal());
  clock_.advance(1);
  EXPECT_TRUE(guard.admitGlobal());
  EXPECT_FALSE(guard.admitGlobal());
  EXPECT_EQ(guard.counters().over_global_rate, 3u);
}

// No ceiling configured: everything passes.
TEST_F(DdosGuardTest, NoCeiling) {
  DdosGuard guard(GuardSettings{}, clock_);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(guard.admitGlobal());
}

// Encodings, case, blanks and SQL comments do not hide a pattern.
TEST_F(DdosGuardTest, PatternsSeeThroughEncoding) {
  GuardSettings settings;
  settings.patterns = GuardSettings::defaultPatterns();
  DdosGuard guard(settings, clock_);
  EXPECT_EQ(guard.suspiciousPattern("/search?q=1+UNION++SELECT+x"), "union select");
  EXPECT_EQ(guard.suspiciousPattern("/search?q=1%20union/**/select%20x"), "union select");
  EXPECT_EQ(guard.suspiciousPattern("/a?x=%253Cscript%253E"), "<script");
  EXPECT_EQ(guard.suspiciousPattern("/static/..%2F..%2Fetc%2Fpasswd"), "../");
  EXPECT_EQ(guard.suspiciousPattern("/a?name=x'%20OR%20'1'='1"), "' or '1'='1");
  EXPECT_EQ(guard.suspiciousPattern("/api/users/42?sort=name&select=all"), std::nullopt);
  EXPECT_EQ(guard.suspiciousPattern("/blog/unions-and-selects"), std::nullopt);
  // An SQL comment never closed hides nothing after it.
  EXPECT_EQ(guard.suspiciousPattern("/y?a=/*&q=%3Cscript%3Ealert(1)"), "<script");
  EXPECT_EQ(guard.suspiciousPattern("/a/*/x?f=../../../etc/passwd"), "../");
  // Encoded three times; a path parameter hiding "../" from a server that drops it; a tab
  // inside a scheme, which a browser removes; a parenthesis in place of the blank.
  EXPECT_EQ(guard.suspiciousPattern("/a?x=%25253Cscript%25253E"), "<script");
  EXPECT_EQ(guard.suspiciousPattern("/app/..;/manager/html"), "..;");
  EXPECT_EQ(guard.suspiciousPattern("/app/..;x/manager/html"), "..;");
  EXPECT_EQ(guard.suspiciousPattern("/r?to=java%09script:alert(1)"), "javascript:");
  EXPECT_EQ(guard.suspiciousPattern("/s?q=1%20UNION(SELECT%20pw%20FROM%20u)"), "union(select");
  EXPECT_EQ(guard.suspiciousPattern("/app;jsessionid=1/..x/page"), std::nullopt);
  EXPECT_EQ(guard.counters().suspicious, 12u);
}

// Spellings that a database, a browser or an old decoder undoes do not hide a pattern: SQL line
// comments and MySQL's executed comments, a script inside a comment, a NUL inside a scheme,
// IIS's %u escapes, overlong UTF-8. Look-alikes that undo to nothing suspicious stay clean.
TEST_F(DdosGuardTest, PatternsSeeThroughWhatBackendsUndo) {
  GuardSettings settings;
  settings.patterns = GuardSettings::defaultPatterns();
  DdosGuard guard(settings, clock_);
  EXPECT_EQ(guard.suspiciousPattern("/s?q=1%20union--%0aselect%20pw"), "union select");
  EXPECT_EQ(guard.suspiciousPattern("/s?q=1%20UNION--x%0d%0aSELECT%20pw"), "union select");
  EXPECT_EQ(guard.suspiciousPattern("/s?q=1%20union%23x%0aselect%20pw"), "union select");
  EXPECT_EQ(guard.suspiciousPattern("/s?q=1%20union/*!50000select*/%20pw"), "union select");
  EXPECT_EQ(guard.suspiciousPattern("/s?q=1%20union/*!select*/%20pw"), "union select");
  EXPECT_EQ(guard.suspiciousPattern("/c?q=/*%3Cscript%3Ealert(1)*/"), "<script");
  EXPECT_EQ(guard.suspiciousPattern("/c?q=x--%3Cscript%3E%0a"), "<script");
  EXPECT_EQ(guard.suspiciousPattern("/r?to=javas%00cript:alert(1)"), "javascript:");
  EXPECT_EQ(guard.suspiciousPattern("/a?x=%u003Cscript%U003e"), "<script");
  EXPECT_EQ(guard.suspiciousPattern("/a?x=%25u003cscript"), "<script");
  EXPECT_EQ(guard.suspiciousPattern("/static/%c0%ae%c0%ae/%c0%ae%c0%ae/etc"), "../");
  EXPECT_EQ(guard.suspiciousPattern("/static/%e0%80%ae%e0%80%ae%c0%af/x"), "../");
  EXPECT_EQ(guard.suspiciousPattern("/static/..%f0%80%80%afetc"), "../");
  // A "--" that is no comment to MySQL does not swallow what follows it up to a line break, nor
  // does one inside an executed comment; nested comments (PostgreSQL); MariaDB's /*M! */; a
  // blank before a parenthesis; a tab or line break anywhere in a scheme, which URL parsers
  // remove; IIS's full-width ASCII.
  EXPECT_EQ(guard.suspiciousPattern("/p?id=1--1%20union/**/select%20pw&z=%0a"), "union select");
  EXPECT_EQ(guard.suspiciousPattern("/p?id=1/*!1--1*/%0aunion/**/select"), "union select");
  EXPECT_EQ(guard.suspiciousPattern("/x?q=1+union/*/**/*/select+1"), "union select");
  EXPECT_EQ(guard.suspiciousPattern("/x?q=1+union/*M!100000+select*/+1"), "union select");
  EXPECT_EQ(guard.suspiciousPattern("/x?q=sleep/**/(5)"), "sleep(");
  // An encoded '?' in the path does not make the rest of the path a query; a line break inside a
  // block comment still calls for the reading of line comments.
  EXPECT_EQ(guard.suspiciousPattern("/static/%3f/%c0%ae%c0%ae/x?a=1"), "../");
  EXPECT_EQ(guard.suspiciousPattern("/a/%253f/..%c0%af..%c0%afwin.ini?"), "../");
  EXPECT_EQ(guard.suspiciousPattern("/p?id=1%23/*%0aunion%23x%0aselect+pw+from+u%23*/"),
            "union select");
  EXPECT_EQ(guard.suspiciousPattern("/r?url=jav%09ascript:alert(1)"), "javascript:");
  EXPECT_EQ(guard.suspiciousPattern("/r?url=j%0D%0Aavascript:x"), "javascript:");
  EXPECT_EQ(guard.suspiciousPattern("/a?x=%uff1cscript%uff1e"), "<script");
  EXPECT_EQ(guard.counters().suspicious, 24u);
  // Near misses: a "--" with no line break after it; a title with a parenthesis; comments that
  // join nothing suspicious.
  for (const char* target :
       {"/blog/a--b?q=x%0ay", "/docs/c%23?page=1%0a2", "/name/%u00e9t%C3%A9", "/c?q=/*comment*/x",
        "/s?q=union%20x%0aselect", "/a%c0?b=%e0%80", "/p?q=union--x+select",
        "/search?q=Sleep+(2023+film)", "/p?q=union/*x*/all+the+select", "/q?a=java+scr%0aipt%3a"}) {
    EXPECT_EQ(guard.suspiciousPattern(target), std::nullopt) << target;
  }
  // Overlong UTF-8 is read in the path only: in a query the same bytes are text in legacy
  // encodings. EUC-KR "JavaScript은 무엇인가" and "..유", GBK "sleep括号".
  for (const char* target : {"/search?q=JavaScript%C0%BA+%B9%AB%BE%F9%C0%CE%B0%A1",
                             "/search?q=..%C0%AF", "/search?q=sleep%C0%A8%BA%C5"}) {
    EXPECT_EQ(guard.suspiciousPattern(target), std::nullopt) << target;
  }
}

// A path is also matched as a backend maps it (and as the limits read it): "." segments,
// doubled slashes, segment parameters and %2F do not hide a pattern. Paths that map to nothing
// suspicious stay clean, and the query is not mapped as a path.
TEST_F(DdosGuardTest, PatternsSeeThroughPathSpellings) {
  GuardSettings settings;
  settings.patterns = GuardSettings::defaultPatterns();
  DdosGuard guard(settings, clock_);
  for (const char* target : {"/etc/./passwd", "/etc//passwd", "/ETC/%2E/Passwd", "/etc;v=1/passwd",
                             "/etc%2Fpasswd", "/a/./etc/passwd?x=1"}) {
    EXPECT_EQ(guard.suspiciousPattern(target), "/etc/passwd") << target;
  }
  for (const char* target : {"/static/./app.js", "//a//b/", "/app;jsessionid=1/page", "/docs/%2E/x",
                             "/a?next=/etc/./x"}) {
    EXPECT_EQ(guard.suspiciousPattern(target), std::nullopt) << target;
  }
  EXPECT_EQ(guard.counters().suspicious, 6u);
}

// The folding itself: decoded up to four times, lower case, blanks and comments to one space.
TEST(FoldForMatchingTest, Folds) {
  EXPECT_EQ(foldForMatching("/A%2541?Q=a+B%20%20c/*x*/d"), "/aa?q=a b c d");
  EXPECT_EQ(foldForMatching("/A%25252541"), "/aa");      // four rounds
  EXPECT_EQ(foldForMatching("/A%2525252541"), "/a%41");  // a fifth is not taken
  EXPECT_EQ(foldForMatching("/bad%zz%"), "/bad%zz%");
  EXPECT_EQ(foldForMatching("/a/*/B?c=/*d"), "/a/*/b?c=/*d");  // comments never closed stay
  // Many that never close (each once searched the rest of the target: quadratic time), and a
  // closed one before them.
  std::string unclosed = "/x/*1*/y";
  for (int i = 0; i < 1000; ++i) unclosed += "/*A";
  std::string expected = "/x y";
  for (int i = 0; i < 1000; ++i) expected += "/*a";
  EXPECT_EQ(foldForMatching(unclosed), expected);
  // Nothing to decode: folded in place of the copies.
  EXPECT_EQ(foldForMatching("/Api/X?Q=UNION/**/Select\t\t1"), "/api/x?q=union select 1");
  // IIS's escapes; control characters dropped; overlong UTF-8 read as ASCII in the path; MySQL's
  // executed comments with their content kept; line comments are text in the first reading.
  EXPECT_EQ(foldForMatching("/A%u0041%U0062%uFF21%u00E9"), "/aaba\xC3\xA9");
  EXPECT_EQ(foldForMatching("/a%00b\001c%7F"), "/abc");
  EXPECT_EQ(foldForMatching("/%C0%AE%E0%81%81%F0%80%80%AF%C0?%C0%AE"), "/.a/\xC0?\xC0\xAE");
  EXPECT_EQ(foldForMatching("a/*!123 B*/c/*!*/d/*M!1e*/"), "a b c d e ");
  EXPECT_EQ(foldForMatching("a--x\nb#y"), "a--x b#y");
  std::string buffer = "left over from before";
  foldForMatching("/A?B", buffer);
  EXPECT_EQ(buffer, "/a?b");
}

// The other readings of comments and blanks.
TEST(FoldForMatchingTest, OtherReadings) {
  const auto fold = [](std::string_view text, Reading reading) {
    std::string folded;
    foldDecoded(DecodedTarget(text), reading, folded);
    return folded;
  };
  const Reading all_folded{Comments::kAllFolded};
  EXPECT_EQ(fold("a--x\nb#y\rc--d", all_folded), "a b c--d");       // to a line break only
  EXPECT_EQ(fold("a--b#c--d\ne--f", all_folded), "a e--f");         // the first runs to the break
  EXPECT_EQ(fold("a/*!b--c*/\nd/**/e", all_folded), "a b--c d e");  // none inside /*! */
  const Reading markers{Comments::kMarkersBlank};
  EXPECT_EQ(fold("a/*<b>*/c--d#e/*!12f", markers), "a <b> c d e f");
  EXPECT_EQ(fold("a/*/**/*/b", markers), "a b");
  const Reading url{Comments::kBlockFolded, true};
  EXPECT_EQ(fold("j\ta\r\nva script:/**/x", url), "java script: x");
  // Overlong UTF-8 only before the query's '?', wherever the text has others.
  std::string folded;
  foldDecoded(DecodedTarget("/?\xC0\xAE", 1), {}, folded);
  EXPECT_EQ(folded, "/?\xC0\xAE");
  foldDecoded(DecodedTarget("/?\xC0\xAE?", 4), {}, folded);
  EXPECT_EQ(folded, "/?.?");
  EXPECT_EQ(whatItHolds("a-b/c*d"), 0u);
  EXPECT_EQ(whatItHolds("a/*b--c#\n\t"),
            kHoldsBlockComment | kHoldsLineComment | kHoldsLineBreak | kHoldsTab);
}

// Tickets count connections per address and give them back when destroyed.
TEST_F(DdosGuardTest, ConnectionCapPerAddress) {
  GuardSettings settings;
  settings.max_connections_per_ip = 2;
  DdosGuard guard(settings, clock_);
  const auto a = boost::asio::ip::make_address("192.0.2.1");
  const auto b = boost::asio::ip::make_address("192.0.2.2");
  auto first = guard.admitConnection(a, 64);
  auto second = guard.admitConnection(a, 64);
  ASSERT_TRUE(first && second);
  EXPECT_FALSE(guard.admitConnection(a, 64));
  EXPECT_TRUE(guard.admitConnection(b, 64));
  first.reset();
  EXPECT_TRUE(guard.admitConnection(a, 64));
  EXPECT_EQ(guard.counters().over_ip_connections, 1u);
}

// An IPv6 client's connections count by its network, as its requests do.
TEST_F(DdosGuardTest, IPv6ConnectionsCountByNetwork) {
  GuardSettings settings;
  settings.max_connections_per_ip = 1;
  DdosGuard guard(settings, clock_);
  const auto a = boost::asio::ip::make_address("2001:db8:1:2::1");
  const auto b = boost::asio::ip::make_address("2001:db8:1:2::2");
  auto first = guard.admitConnection(a, 64);
  ASSERT_TRUE(first);
  EXPECT_FALSE(guard.admitConnection(b, 64));
  EXPECT_TRUE(guard.admitConnection(b, 128));
  first.reset();  // given back under the network it was counted as
  EXPECT_TRUE(guard.admitConnection(b, 64));
}

}  // namespace
}  // namespace sluice::gateway
