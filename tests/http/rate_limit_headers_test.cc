#include "http/rate_limit_headers.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include "engine/engine.h"
#include "policy/own_headers.h"
#include "sluice/outcome.h"
#include "support/specs.h"

namespace sluice::http {
namespace {

Outcome allowedStatus(std::uint64_t limit, std::uint64_t remaining, Micros reset_after_us) {
  Outcome outcome;
  outcome.allowed = true;
  outcome.limit = limit;
  outcome.remaining = remaining;
  outcome.reset_after_us = reset_after_us;
  return outcome;
}

Outcome deniedStatus(std::uint64_t limit, Micros reset_after_us, Micros retry_after_us,
                     DenyReason reason = DenyReason::kOverLimit) {
  Outcome outcome;
  outcome.allowed = false;
  outcome.reason = reason;
  outcome.limit = limit;
  outcome.remaining = 0;
  outcome.reset_after_us = reset_after_us;
  outcome.retry_after_us = retry_after_us;
  return outcome;
}

Decision decisionOf(std::vector<Outcome> statuses) {
  Decision decision;
  for (const Outcome& status : statuses) decision.statuses.push_back(status);
  summarize(decision);
  return decision;
}

boost::property_tree::ptree parseJson(const std::string& body) {
  std::istringstream stream(body);
  boost::property_tree::ptree tree;
  boost::property_tree::read_json(stream, tree);
  return tree;
}

constexpr Micros kMinute = kMicrosPerMinute;
constexpr Micros kHour = kMicrosPerHour;
constexpr Micros kSecond = kMicrosPerSecond;

class RateLimitHeadersTest : public ::testing::Test {
 protected:
  // Renders both ways and EXPECTs the header lines to say exactly what the list says.
  HeaderList render(const Decision& decision, const std::vector<LimitLabel>& labels) const {
    HeaderList headers;
    appendRateLimitHeaders(decision, labels, options_, headers);
    std::string expected_lines = "already here\r\n";
    for (const auto& [name, value] : headers) expected_lines += name + ": " + value + "\r\n";
    std::string lines = "already here\r\n";
    appendRateLimitHeaderLines(decision, labels, options_, lines);
    EXPECT_EQ(lines, expected_lines);
    return headers;
  }

  HeaderOptions options_;
  const std::vector<LimitLabel> default_only_{{"default", kMinute}};
  const std::vector<LimitLabel> default_and_hourly_{{"default", kMinute}, {"hourly", kHour}};
};

// The fact sheet's worked example: 100 per 60 s, 37 remaining, 12 s to reset.
TEST_F(RateLimitHeadersTest, WorkedExample) {
  const Decision decision = decisionOf({allowedStatus(100, 37, 12 * kSecond)});
  const HeaderList expected{
      {"X-RateLimit-Limit", "100"},
      {"X-RateLimit-Remaining", "37"},
      {"X-RateLimit-Reset", "12"},
      {"RateLimit-Policy", R"("default";q=100;w=60)"},
      {"RateLimit", R"("default";r=37;t=12)"},
  };
  EXPECT_EQ(render(decision, default_only_), expected);
}

// Two policies are joined by ", "; X-RateLimit-* describe the one with the fewest units left.
TEST_F(RateLimitHeadersTest, TwoPoliciesJoined) {
  const Decision decision =
      decisionOf({allowedStatus(100, 37, 12 * kSecond), allowedStatus(1000, 900, 2412 * kSecond)});
  const HeaderList expected{
      {"X-RateLimit-Limit", "100"},
      {"X-RateLimit-Remaining", "37"},
      {"X-RateLimit-Reset", "12"},
      {"RateLimit-Policy", R"("default";q=100;w=60, "hourly";q=1000;w=3600)"},
      {"RateLimit", R"("default";r=37;t=12, "hourly";r=900;t=2412)"},
  };
  EXPECT_EQ(render(decision, default_and_hourly_), expected);
}

// When the second policy has fewer units left, it binds the X-RateLimit-* headers.
TEST_F(RateLimitHeadersTest, XRateLimitFollowsTheBindingPolicy) {
  const Decision decision =
      decisionOf({allowedStatus(100, 37, 12 * kSecond), allowedStatus(1000, 5, 2412 * kSecond)});
  const HeaderList headers = render(decision, default_and_hourly_);
  ASSERT_GE(headers.size(), 3u);
  EXPECT_EQ(headers[0], (std::pair<std::string, std::string>{"X-RateLimit-Limit", "1000"}));
  EXPECT_EQ(headers[1], (std::pair<std::string, std::string>{"X-RateLimit-Remaining", "5"}));
  EXPECT_EQ(headers[2], (std::pair<std::string, std::string>{"X-RateLimit-Reset", "2412"}));
}

// A denial adds Retry-After, rounded up: 1.2 s → 2; the binding is the denying limit.
TEST_F(RateLimitHeadersTest, DenialAddsRetryAfterRoundedUp) {
  const Decision decision = decisionOf(
      {allowedStatus(100, 37, 12 * kSecond), deniedStatus(1000, 2412 * kSecond, 1'200'000)});
  ASSERT_FALSE(decision.allowed);
  const HeaderList expected{
      {"X-RateLimit-Limit", "1000"},
      {"X-RateLimit-Remaining", "0"},
      {"X-RateLimit-Reset", "2412"},
      {"RateLimit-Policy", R"("default";q=100;w=60, "hourly";q=1000;w=3600)"},
      // The denying policy's t is when the request fits again, as Retry-After says: the draft
      // says Retry-After should not point earlier than t. The allowed one's is until full.
      {"RateLimit", R"("default";r=37;t=12, "hourly";r=0;t=2)"},
      {"Retry-After", "2"},
  };
  EXPECT_EQ(render(decision, default_and_hourly_), expected);
}

// A cost that never fits has no time to wait for: t stays the time until the limit is full.
TEST_F(RateLimitHeadersTest, NeverFitsKeepsTheResetAsT) {
  const Decision decision =
      decisionOf({deniedStatus(100, 12 * kSecond, kNever, DenyReason::kCostExceedsLimit)});
  const HeaderList headers = render(decision, default_only_);
  const auto ratelimit = std::find_if(headers.begin(), headers.end(), [](const auto& header) {
    return header.first == "RateLimit";
  });
  ASSERT_NE(ratelimit, headers.end());
  EXPECT_EQ(ratelimit->second, R"("default";r=0;t=12)");
}

// An allowed decision never carries Retry-After, even when asked for.
TEST_F(RateLimitHeadersTest, AllowedHasNoRetryAfter) {
  const Decision decision = decisionOf({allowedStatus(100, 0, 12 * kSecond)});
  for (const auto& [name, value] : render(decision, default_only_)) {
    EXPECT_NE(name, "Retry-After") << value;
  }
}

// A store-unavailable denial waits 0 s, and says so: Retry-After: 0.
TEST_F(RateLimitHeadersTest, StoreUnavailableRetriesNow) {
  Outcome unavailable;
  unavailable.reason = DenyReason::kStoreUnavailable;
  const Decision decision = decisionOf({unavailable});
  const HeaderList headers = render(decision, default_only_);
  ASSERT_FALSE(headers.empty());
  EXPECT_EQ(headers.back(), (std::pair<std::string, std::string>{"Retry-After", "0"}));
}

// No limit checked: no header at all.
TEST_F(RateLimitHeadersTest, NoStatusesNoHeaders) {
  const Decision decision = decisionOf({});
  EXPECT_TRUE(render(decision, {}).empty());
}

// Headers are appended after whatever the list already holds.
TEST_F(RateLimitHeadersTest, AppendsToExistingHeaders) {
  HeaderList headers{{"Content-Type", "application/json"}};
  const Decision decision = decisionOf({allowedStatus(100, 37, 12 * kSecond)});
  appendRateLimitHeaders(decision, default_only_, options_, headers);
  ASSERT_EQ(headers.size(), 6u);
  EXPECT_EQ(headers[0].first, "Content-Type");
  EXPECT_EQ(headers[1].first, "X-RateLimit-Limit");
}

// Every header name can be renamed.
TEST_F(RateLimitHeadersTest, RenamedHeaders) {
  options_.names =
      HeaderNames{"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "retry-after",
                  "ratelimit",         "ratelimit-policy"};
  const Decision decision = decisionOf({deniedStatus(100, 12 * kSecond, 12 * kSecond)});
  const HeaderList expected{
      {"x-ratelimit-limit", "100"},
      {"x-ratelimit-remaining", "0"},
      {"x-ratelimit-reset", "12"},
      {"ratelimit-policy", R"("default";q=100;w=60)"},
      {"ratelimit", R"("default";r=0;t=12)"},
      {"retry-after", "12"},
  };
  EXPECT_EQ(render(decision, default_only_), expected);
}

// x_ratelimit off: only the IETF fields and Retry-After remain.
TEST_F(RateLimitHeadersTest, XRateLimitSwitchedOff) {
  options_.x_ratelimit = false;
  const Decision decision = decisionOf({deniedStatus(100, 12 * kSecond, 12 * kSecond)});
  const HeaderList expected{
      {"RateLimit-Policy", R"("default";q=100;w=60)"},
      {"RateLimit", R"("default";r=0;t=12)"},
      {"Retry-After", "12"},
  };
  EXPECT_EQ(render(decision, default_only_), expected);
}

// ietf off: only X-RateLimit-* and Retry-After remain.
TEST_F(RateLimitHeadersTest, IetfSwitchedOff) {
  options_.ietf = false;
  const Decision decision = decisionOf({deniedStatus(100, 12 * kSecond, 12 * kSecond)});
  const HeaderList expected{
      {"X-RateLimit-Limit", "100"},
      {"X-RateLimit-Remaining", "0"},
      {"X-RateLimit-Reset", "12"},
      {"Retry-After", "12"},
  };
  EXPECT_EQ(render(decision, default_only_), expected);
}

// retry_after off: a denial carries the limit headers only.
TEST_F(RateLimitHeadersTest, RetryAfterSwitchedOff) {
  options_.retry_after = false;
  const Decision decision = decisionOf({deniedStatus(100, 12 * kSecond, 12 * kSecond)});
  const HeaderList expected{
      {"X-RateLimit-Limit", "100"},
      {"X-RateLimit-Remaining", "0"},
      {"X-RateLimit-Reset", "12"},
      {"RateLimit-Policy", R"("default";q=100;w=60)"},
      {"RateLimit", R"("default";r=0;t=12)"},
  };
  EXPECT_EQ(render(decision, default_only_), expected);
}

// Everything off: nothing.
TEST_F(RateLimitHeadersTest, AllFamiliesSwitchedOff) {
  options_.x_ratelimit = false;
  options_.ietf = false;
  options_.retry_after = false;
  const Decision decision = decisionOf({deniedStatus(100, 12 * kSecond, 12 * kSecond)});
  EXPECT_TRUE(render(decision, default_only_).empty());
}

// A concurrency limit's refusal: in-flight requests as the draft's quota unit, nothing remaining,
// no reset (no slot frees at a known time), and the shortest Retry-After.
TEST_F(RateLimitHeadersTest, ConcurrencyRefusal) {
  HeaderList headers{{"Existing", "kept"}};
  appendConcurrencyHeaders("one \"at\" a time", 3, options_, headers);
  const HeaderList expected{
      {"Existing", "kept"},
      {"X-RateLimit-Limit", "3"},
      {"X-RateLimit-Remaining", "0"},
      {"RateLimit-Policy", R"("one \"at\" a time";q=3;qu="concurrent-requests")"},
      {"RateLimit", R"("one \"at\" a time";r=0)"},
      {"Retry-After", "1"},
  };
  EXPECT_EQ(headers, expected);
}

TEST_F(RateLimitHeadersTest, ConcurrencyRefusalFollowsTheFamiliesAndNames) {
  options_.x_ratelimit = false;
  options_.names.retry_after = "retry-after";
  HeaderList headers;
  appendConcurrencyHeaders("c", 2, options_, headers);
  const HeaderList expected{
      {"RateLimit-Policy", R"("c";q=2;qu="concurrent-requests")"},
      {"RateLimit", R"("c";r=0)"},
      {"retry-after", "1"},
  };
  EXPECT_EQ(headers, expected);
  options_.ietf = false;
  options_.retry_after = false;
  headers.clear();
  appendConcurrencyHeaders("c", 2, options_, headers);
  EXPECT_TRUE(headers.empty());
}

// Names become SF Strings: '"' and '\' escaped, control and non-ASCII bytes (each UTF-8 byte of
// "é") and '%' percent-encoded, so names that differ stay different.
TEST_F(RateLimitHeadersTest, NameEscaping) {
  const std::vector<LimitLabel> labels{{"a\"b\\c\td\xc3\xa9~%", kMinute}, {"caf\xc3\xa8", kMinute}};
  options_.x_ratelimit = false;
  const Decision decision =
      decisionOf({allowedStatus(100, 37, 12 * kSecond), allowedStatus(100, 37, 12 * kSecond)});
  const HeaderList expected{
      {"RateLimit-Policy", R"("a\"b\\c%09d%C3%A9~%25";q=100;w=60, "caf%C3%A8";q=100;w=60)"},
      {"RateLimit", R"("a\"b\\c%09d%C3%A9~%25";r=37;t=12, "caf%C3%A8";r=37;t=12)"},
  };
  EXPECT_EQ(render(decision, labels), expected);
}

// w= is whole seconds rounded up and at least 1: 500 ms → 1, 1.5 s → 2, 0 → 1.
TEST_F(RateLimitHeadersTest, WindowRoundsUpToAtLeastOneSecond) {
  const std::vector<LimitLabel> labels{
      {"half", 500 * kMicrosPerMilli}, {"one-and-half", 1'500 * kMicrosPerMilli}, {"none", 0}};
  options_.x_ratelimit = false;
  const Decision decision = decisionOf(
      {allowedStatus(5, 4, 1), allowedStatus(5, 4, 1), allowedStatus(5, 4, kSecond + 1)});
  const HeaderList expected{
      {"RateLimit-Policy", R"("half";q=5;w=1, "one-and-half";q=5;w=2, "none";q=5;w=1)"},
      {"RateLimit", R"("half";r=4;t=1, "one-and-half";r=4;t=1, "none";r=4;t=2)"},
  };
  EXPECT_EQ(render(decision, labels), expected);
}

// Integers above the SF limit of 15 digits are capped at 999999999999999.
TEST_F(RateLimitHeadersTest, IntegersCappedAtSfLimit) {
  const std::uint64_t huge = std::numeric_limits<std::uint64_t>::max();
  const Decision decision = decisionOf({allowedStatus(huge, huge, 12 * kSecond)});
  const HeaderList expected{
      {"X-RateLimit-Limit", "999999999999999"},
      {"X-RateLimit-Remaining", "999999999999999"},
      {"X-RateLimit-Reset", "12"},
      {"RateLimit-Policy", R"("default";q=999999999999999;w=60)"},
      {"RateLimit", R"("default";r=999999999999999;t=12)"},
  };
  EXPECT_EQ(render(decision, default_only_), expected);
}

// A cost larger than the limit never fits: no Retry-After, and the body's retry_after is null.
TEST_F(RateLimitHeadersTest, CostExceedsLimit) {
  const Decision decision =
      decisionOf({allowedStatus(100, 37, 12 * kSecond),
                  deniedStatus(1000, 2412 * kSecond, kNever, DenyReason::kCostExceedsLimit)});
  ASSERT_EQ(decision.binding, 1u);
  ASSERT_EQ(decision.retry_after_us, kNever);
  const HeaderList expected{
      {"X-RateLimit-Limit", "1000"},
      {"X-RateLimit-Remaining", "0"},
      {"X-RateLimit-Reset", "2412"},
      {"RateLimit-Policy", R"("default";q=100;w=60, "hourly";q=1000;w=3600)"},
      {"RateLimit", R"("default";r=37;t=12, "hourly";r=0;t=2412)"},
  };
  EXPECT_EQ(render(decision, default_and_hourly_), expected);

  const std::string body = deniedBody(decision, default_and_hourly_);
  const boost::property_tree::ptree json = parseJson(body);
  EXPECT_EQ(json.get<std::string>("error"), "rate_limited");
  EXPECT_EQ(json.get<std::string>("limit"), "hourly");
  EXPECT_NE(json.get<std::string>("message").find("never fit"), std::string::npos);
  EXPECT_NE(body.find(R"("retry_after":null})"), std::string::npos) << body;
}

// The denial body parses back: error, message, binding name, retry_after rounded up.
TEST_F(RateLimitHeadersTest, DeniedBodyParsesBack) {
  const Decision decision = decisionOf(
      {allowedStatus(100, 37, 12 * kSecond), deniedStatus(1000, 2412 * kSecond, 1'200'000)});
  const std::string body = deniedBody(decision, default_and_hourly_);
  EXPECT_EQ(body, R"({"error":"rate_limited","message":"Too many requests; retry after 2 s.",)"
                  R"("limit":"hourly","retry_after":2})");
  const boost::property_tree::ptree json = parseJson(body);
  EXPECT_EQ(json.get<std::string>("error"), "rate_limited");
  EXPECT_EQ(json.get<std::string>("message"), "Too many requests; retry after 2 s.");
  EXPECT_EQ(json.get<std::string>("limit"), "hourly");
  // Read as text: ptree's integer path trips a GCC 12 -Wmaybe-uninitialized false positive.
  EXPECT_EQ(json.get<std::string>("retry_after"), "2");
}

// A name with quotes, a backslash and non-ASCII bytes stays valid JSON, and matches the
// percent-encoded name the RateLimit header carries.
TEST_F(RateLimitHeadersTest, DeniedBodyEscapesTheName) {
  const std::vector<LimitLabel> labels{{"a\"b\\c\td\xc3\xa9", kMinute}};
  const Decision decision = decisionOf({deniedStatus(100, 12 * kSecond, 12 * kSecond)});
  const std::string body = deniedBody(decision, labels);
  EXPECT_NE(body.find(R"("limit":"a\"b\\c%09d%C3%A9")"), std::string::npos) << body;
  EXPECT_EQ(parseJson(body).get<std::string>("limit"), "a\"b\\c%09d%C3%A9");
}

// headerSeconds: whole seconds, rounded up, with the edges pinned.
// Thousands of limits on one request: each IETF list keeps its first items up to
// kMaxNameListBytes, plus the binding limit's item wherever it stands, so no value grows past
// what HTTP stacks take (Beast threw past 64 KiB, which ended the process). A few limits are
// listed whole, as before.
TEST_F(RateLimitHeadersTest, ManyLimitsListedWithinABudget) {
  std::vector<Outcome> statuses;
  std::vector<std::string> names;
  for (int i = 0; i < 3000; ++i) {
    statuses.push_back(allowedStatus(100, 50, 12 * kSecond));
    names.push_back("limit-number-" + std::to_string(i) + "-with-a-long-name");
  }
  std::vector<LimitLabel> labels;
  for (const std::string& name : names) labels.push_back({name, kMinute});
  statuses[2500] = allowedStatus(100, 1, 12 * kSecond);  // binds: the fewest left
  const Decision decision = decisionOf(statuses);
  const HeaderList headers = render(decision, labels);
  for (const auto& [name, value] : headers) {
    if (name != "RateLimit" && name != "RateLimit-Policy") continue;
    EXPECT_LE(value.size(), policy::kMaxNameListBytes + 100) << name;
    EXPECT_GT(value.size(), policy::kMaxNameListBytes - 100) << name;
    EXPECT_TRUE(value.starts_with("\"limit-number-0-with-a-long-name\";")) << name;
    EXPECT_NE(value.find("\"limit-number-2500-with-a-long-name\""), std::string::npos) << name;
    EXPECT_FALSE(value.ends_with(", ")) << name;
  }
  EXPECT_EQ(headers[1].second, "1");  // X-RateLimit-Remaining: the binding limit's, as ever
}

// The names of a header's items, in order.
std::vector<std::string> itemNames(const std::string& value) {
  std::vector<std::string> names;
  for (std::size_t at = value.find('"'); at != std::string::npos;) {
    const std::size_t end = value.find('"', at + 1);
    names.push_back(value.substr(at + 1, end - at - 1));
    const std::size_t next = value.find(", \"", end);
    at = next == std::string::npos ? next : next + 2;
  }
  return names;
}

// Past the budget both lists name the same limits, though their items differ in size: the first
// thirty with a huge t (a long RateLimit item, a short RateLimit-Policy one), the next thirty
// with a huge q. Each list chosen alone named limits the other did not, and a choice made by
// one list's sizes alone overran the other's bound.
TEST_F(RateLimitHeadersTest, BothListsNameTheSameLimits) {
  std::vector<Outcome> statuses;
  std::vector<std::string> names;
  for (int i = 0; i < 60; ++i) {
    statuses.push_back(i < 30 ? allowedStatus(5, 4, 4'000'000'000'000 * kSecond)
                              : allowedStatus(4'000'000'000'000'000, 0, kSecond));
    names.push_back("limit-" + std::to_string(100'000 + i));
  }
  statuses[59] = deniedStatus(5, kSecond, kSecond);  // binds
  std::vector<LimitLabel> labels;
  for (const std::string& name : names) labels.push_back({name, kMinute});
  const HeaderList headers = render(decisionOf(statuses), labels);
  std::vector<std::string> policy_names;
  std::vector<std::string> limit_names;
  for (const auto& [name, value] : headers) {
    if (name == "RateLimit-Policy") policy_names = itemNames(value);
    if (name == "RateLimit") limit_names = itemNames(value);
    if (name == "RateLimit" || name == "RateLimit-Policy") {
      EXPECT_LE(value.size(), policy::kMaxNameListBytes + 40) << name;  // + the binding item
    }
  }
  EXPECT_EQ(policy_names, limit_names);
  EXPECT_LT(policy_names.size(), 60u);
  ASSERT_FALSE(policy_names.empty());
  EXPECT_EQ(policy_names.front(), "limit-100000");
  EXPECT_EQ(policy_names.back(), "limit-100059");  // the binding one, whatever fits before it
}

struct SecondsCase {
  Micros us;
  std::int64_t seconds;
};

class HeaderSecondsTest : public ::testing::TestWithParam<SecondsCase> {};

// Each duration renders as the expected whole number of seconds.
TEST_P(HeaderSecondsTest, RoundsUp) {
  EXPECT_EQ(headerSeconds(GetParam().us), GetParam().seconds) << GetParam().us << " us";
}

INSTANTIATE_TEST_SUITE_P(Edges, HeaderSecondsTest,
                         ::testing::Values(SecondsCase{0, 0}, SecondsCase{-1, 0},
                                           SecondsCase{std::numeric_limits<Micros>::min(), 0},
                                           SecondsCase{1, 1}, SecondsCase{999'999, 1},
                                           SecondsCase{1'000'000, 1}, SecondsCase{1'000'001, 2},
                                           SecondsCase{1'200'000, 2}, SecondsCase{12 * kSecond, 12},
                                           SecondsCase{kNever - 1, 9'223'372'036'855},
                                           SecondsCase{kNever, kMaxHeaderInteger}));

// w= is the time the limit grants its quota in: the period for a window, burst / rate for a
// bucket, rounded up (to whole refill steps for the interval bucket).
TEST(QuotaWindowTest, ThePeriodForWindowsBurstOverRateForBuckets) {
  using testing::spec;
  EXPECT_EQ(quotaWindowUs(spec(Algorithm::kFixedWindow, "100/min")), kMicrosPerMinute);
  EXPECT_EQ(quotaWindowUs(spec(Algorithm::kSlidingWindowCounter, "1000/hour")), kMicrosPerHour);
  EXPECT_EQ(quotaWindowUs(spec(Algorithm::kTokenBucket, "10/min", 100)), 10 * kMicrosPerMinute);
  EXPECT_EQ(quotaWindowUs(spec(Algorithm::kGcra, "60/min", 4)), 4 * kMicrosPerSecond);
  EXPECT_EQ(quotaWindowUs(spec(Algorithm::kTokenBucket, "3/s", 2)), 666'667);
  // The interval bucket's tokens come in steps of 2 every 3 s: 5 take three steps, not 7.5 s.
  EXPECT_EQ(quotaWindowUs(spec(Algorithm::kTokenBucketInterval, "2/3s", 5)), 9 * kMicrosPerSecond);
  EXPECT_EQ(quotaWindowUs(spec(Algorithm::kTokenBucketInterval, "2/3s", 4)), 6 * kMicrosPerSecond);
}

}  // namespace
}  // namespace sluice::http
