// The client helpers read what Sluice's own refusals say: a 429's headers as the HTTP layer
// renders them, parsed back by serverWait.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "http/rate_limit_headers.h"
#include "sluice/server_wait.h"

namespace sluice {
namespace {

std::string headerIn(const http::HeaderList& headers, std::string_view name) {
  const auto found = std::find_if(headers.begin(), headers.end(),
                                  [&](const auto& header) { return header.first == name; });
  return found == headers.end() ? "" : found->second;
}

// Two limits, the hourly one used up for another 12.3 s: the wait is its Retry-After, rounded up
// to whole seconds, and the RateLimit field alone says as much.
TEST(SluiceHeadersTest, ARefusalsWaitReadsBackFromEitherField) {
  Decision decision;
  Outcome minute;
  minute.allowed = true;
  minute.limit = 100;
  minute.remaining = 40;
  minute.reset_after_us = 30 * kMicrosPerSecond;
  Outcome hour;
  hour.allowed = false;
  hour.reason = DenyReason::kOverLimit;
  hour.limit = 1000;
  hour.reset_after_us = 50 * kMicrosPerMinute;
  hour.retry_after_us = 12'300'000;
  decision.statuses.push_back(minute);
  decision.statuses.push_back(hour);
  summarize(decision);
  const std::vector<http::LimitLabel> labels{{"per-minute", kMicrosPerMinute},
                                             {"per-hour", kMicrosPerHour}};
  http::HeaderList headers;
  http::appendRateLimitHeaders(decision, labels, http::HeaderOptions{}, headers);

  const std::string retry_after = headerIn(headers, "Retry-After");
  const std::string rate_limit = headerIn(headers, "RateLimit");
  ASSERT_FALSE(retry_after.empty());
  ASSERT_FALSE(rate_limit.empty());
  EXPECT_EQ(serverWait(retry_after, rate_limit, 0), 13 * kMicrosPerSecond);
  EXPECT_EQ(serverWait("", rate_limit, 0), 13 * kMicrosPerSecond) << rate_limit;
}

// A concurrency refusal: Retry-After says one second; its RateLimit item has no t, so alone it
// says nothing of when.
TEST(SluiceHeadersTest, AConcurrencyRefusalsWaitIsItsRetryAfter) {
  http::HeaderList headers;
  http::appendConcurrencyHeaders("uploads", 2, http::HeaderOptions{}, headers);
  const std::string rate_limit = headerIn(headers, "RateLimit");
  EXPECT_EQ(serverWait(headerIn(headers, "Retry-After"), rate_limit, 0), kMicrosPerSecond);
  EXPECT_FALSE(serverWait("", rate_limit, 0).has_value()) << rate_limit;
}

}  // namespace
}  // namespace sluice
