// The webhook cache: TTL edges on a fake clock, one fetch per shape, the entry bound.
#include "gateway/webhook_cache.h"

#include <gtest/gtest.h>

namespace sluice::gateway {
namespace {

DynamicLimitsPtr someLimits() {
  return parseDynamicLimits(R"({"limits":[{"key":"k","burst":1}]})").value();
}

// Miss → fetch; the answer is a hit until one microsecond before it expires, then a fetch again.
TEST(WebhookCacheTest, TtlEdges) {
  WebhookCache cache(10);
  EXPECT_EQ(cache.probe("a", 0, nullptr).kind, WebhookCache::Probe::Kind::kFetch);
  const DynamicLimitsPtr limits = someLimits();
  EXPECT_TRUE(cache.complete("a", limits, 1000).empty());
  const auto hit = cache.probe("a", 999, nullptr);
  EXPECT_EQ(hit.kind, WebhookCache::Probe::Kind::kHit);
  EXPECT_EQ(hit.limits, limits);
  EXPECT_EQ(cache.probe("a", 1000, nullptr).kind, WebhookCache::Probe::Kind::kFetch);
}

// While one fetch is under way, others with the same shape wait for it and get its answer.
TEST(WebhookCacheTest, OneFetchPerShape) {
  WebhookCache cache(10);
  ASSERT_EQ(cache.probe("a", 0, nullptr).kind, WebhookCache::Probe::Kind::kFetch);
  int woken = 0;
  DynamicLimitsPtr seen;
  auto waiter = [&](DynamicLimitsPtr limits) {
    ++woken;
    seen = std::move(limits);
  };
  EXPECT_EQ(cache.probe("a", 1, waiter).kind, WebhookCache::Probe::Kind::kQueued);
  EXPECT_EQ(cache.probe("a", 2, waiter).kind, WebhookCache::Probe::Kind::kQueued);
  EXPECT_EQ(cache.probe("b", 2, nullptr).kind, WebhookCache::Probe::Kind::kFetch);
  const DynamicLimitsPtr limits = someLimits();
  for (auto& wake : cache.complete("a", limits, 100)) wake(limits);
  EXPECT_EQ(woken, 2);
  EXPECT_EQ(seen, limits);
}

// A remembered failure is a hit with no limits until it expires.
TEST(WebhookCacheTest, RemembersFailures) {
  WebhookCache cache(10);
  (void)cache.probe("a", 0, nullptr);
  (void)cache.complete("a", nullptr, 50);
  const auto hit = cache.probe("a", 10, nullptr);
  EXPECT_EQ(hit.kind, WebhookCache::Probe::Kind::kHit);
  EXPECT_EQ(hit.limits, nullptr);
}

// Never more entries than the bound; expired ones go first, fetches in flight stay.
TEST(WebhookCacheTest, Bounded) {
  WebhookCache cache(4);
  for (int i = 0; i < 100; ++i) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_EQ(cache.probe(key, i, nullptr).kind, WebhookCache::Probe::Kind::kFetch);
    (void)cache.complete(key, nullptr, i + 2);
    ASSERT_LE(cache.size(), 4u);
  }
  (void)cache.probe("in-flight", 200, nullptr);
  for (int i = 0; i < 10; ++i) {
    const std::string key = "x" + std::to_string(i);
    (void)cache.probe(key, 200, nullptr);
    (void)cache.complete(key, nullptr, 1000);
  }
  EXPECT_EQ(cache.probe("in-flight", 201, [](DynamicLimitsPtr) {}).kind,
            WebhookCache::Probe::Kind::kQueued);
}

}  // namespace
}  // namespace sluice::gateway
