// Matching descriptors against lyft/ratelimit's YAML as lyft matches them: exact values before
// patterns before key-only entries, nested tuples, counter keys, rule flags and stats. (Loading
// and what it refuses: lyft_config_loader_test.cc.)
#include "rls/lyft_config.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/lyft_configs.h"

namespace sluice::rls {
namespace {

using sluice::testing::kLyftConfigDir;

class LyftConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LyftLoadResult loaded = loadLyftConfigDir(kLyftConfigDir);
    ASSERT_NE(loaded.config, nullptr) << (loaded.errors.empty() ? "" : loaded.errors.front());
    config_ = loaded.config;
    domain_ = config_->domain("envoy");
    ASSERT_NE(domain_, nullptr);
  }

  const DescriptorNode* match(std::vector<EntryView> entries, std::string* key = nullptr) const {
    return LyftConfig::match(*domain_, entries, key);
  }
  std::uint32_t limitOf(std::vector<EntryView> entries) const {
    const DescriptorNode* node = match(std::move(entries));
    return node != nullptr && node->rate_limit ? node->rate_limit->requests_per_unit : 0;
  }

  LyftConfigPtr config_;
  const Domain* domain_ = nullptr;
};

// Every file of the directory is one domain; .yaml and .yml are both read.
TEST_F(LyftConfigTest, LoadsEveryDomainFile) {
  EXPECT_EQ(config_->domainCount(), 2u);
  ASSERT_NE(config_->domain("other"), nullptr);
  EXPECT_EQ(config_->domain("nope"), nullptr);
}

// A key-only node matches any value of the key.
TEST_F(LyftConfigTest, KeyOnlyMatchesAnyValue) {
  EXPECT_EQ(limitOf({{"remote_address", "10.0.0.1"}}), 3u);
  EXPECT_EQ(limitOf({{"remote_address", ""}}), 3u);
}

// An exact key and value is preferred to the key-only node, whatever the file order.
TEST_F(LyftConfigTest, ExactValueBeatsKeyOnly) {
  const DescriptorNode* vip = match({{"generic_key", "vip"}});
  ASSERT_NE(vip, nullptr);
  EXPECT_TRUE(vip->rate_limit->unlimited);
  EXPECT_EQ(limitOf({{"generic_key", "other"}}), 2u);
}

// A '*' pattern is tried before the key-only node.
TEST_F(LyftConfigTest, PatternBeforeKeyOnly) {
  EXPECT_EQ(limitOf({{"user", "premium-alice"}}), 10u);
  EXPECT_EQ(limitOf({{"user", "premium-"}}), 10u);
  EXPECT_EQ(limitOf({{"user", "basic-bob"}}), 1u);
}

// The limit is the one at the last entry; a tuple shorter or longer than the config has none.
TEST_F(LyftConfigTest, NestedTupleMustMatchTheDepth) {
  EXPECT_EQ(limitOf({{"destination_cluster", "backend"}, {"header_match", "post"}}), 5u);
  EXPECT_EQ(limitOf({{"destination_cluster", "backend"}, {"remote_address", "1.2.3.4"}}), 4u);
  const DescriptorNode* parent = match({{"destination_cluster", "backend"}});
  ASSERT_NE(parent, nullptr);
  EXPECT_FALSE(parent->rate_limit.has_value());
  EXPECT_EQ(match({{"remote_address", "a"}, {"remote_address", "b"}}), nullptr);
  EXPECT_EQ(match({{"destination_cluster", "frontend"}, {"header_match", "post"}}), nullptr);
  EXPECT_EQ(match({{"destination_cluster", "backend"}, {"header_match", "get"}}), nullptr);
}

// Unknown keys and empty tuples match nothing; a node without rate_limit matches without a limit.
TEST_F(LyftConfigTest, UnknownAndWhitelisted) {
  EXPECT_EQ(match({{"unknown", "x"}}), nullptr);
  EXPECT_EQ(match({}), nullptr);
  const DescriptorNode* whitelisted = match({{"whitelisted", "x"}});
  ASSERT_NE(whitelisted, nullptr);
  EXPECT_FALSE(whitelisted->rate_limit.has_value());
}

// Each value has its own counter; share_threshold values share the pattern's counter.
TEST_F(LyftConfigTest, CounterKeys) {
  std::string a, b, shared_a, shared_b;
  ASSERT_NE(match({{"remote_address", "1.1.1.1"}}, &a), nullptr);
  ASSERT_NE(match({{"remote_address", "2.2.2.2"}}, &b), nullptr);
  EXPECT_NE(a, b);
  ASSERT_NE(match({{"pool", "shared-1"}}, &shared_a), nullptr);
  ASSERT_NE(match({{"pool", "shared-2"}}, &shared_b), nullptr);
  EXPECT_EQ(shared_a, shared_b);
  // Length-prefixed parts: "a_b"+"c" and "a"+"b_c" stay apart, unlike lyft's joined keys.
  std::string joined_one, joined_two;
  const LyftSource source{"x.yaml", "domain: d\ndescriptors:\n  - key: a_b\n  - key: a\n"};
  const LyftLoadResult loaded = loadLyftConfigTexts({&source, 1});
  ASSERT_NE(loaded.config, nullptr);
  const Domain& d = *loaded.config->domain("d");
  const EntryView one[] = {{"a_b", "c"}};
  const EntryView two[] = {{"a", "b_c"}};
  ASSERT_NE(LyftConfig::match(d, one, &joined_one), nullptr);
  ASSERT_NE(LyftConfig::match(d, two, &joined_two), nullptr);
  EXPECT_NE(joined_one, joined_two);
  EXPECT_EQ(joined_one.front(), 'E');  // never a digit, as policy counter keys start
}

// Flags and rule fields are read as lyft writes them.
TEST_F(LyftConfigTest, ReadsFlagsAndRules) {
  const DescriptorNode* shadow = match({{"shadow_key", "x"}});
  ASSERT_NE(shadow, nullptr);
  EXPECT_TRUE(shadow->shadow_mode);
  const DescriptorNode* burst = match({{"tenant_burst", "t"}});
  ASSERT_NE(burst, nullptr);
  EXPECT_EQ(burst->rate_limit->name, "tenant-burst");
  EXPECT_EQ(burst->rate_limit->replaces, std::vector<std::string>{"tenant-daily"});
  EXPECT_EQ(burst->stat_key, "envoy.tenant_burst");
  const DescriptorNode* blocked = match({{"blocked", "x"}});
  ASSERT_NE(blocked, nullptr);
  EXPECT_FALSE(blocked->rate_limit->spec.has_value());
  EXPECT_TRUE(match({{"detailed", "x"}})->detailed_metric);
  EXPECT_EQ(config_->domain("other")->descriptors.nodes[0].rate_limit->unit, Unit::kMinute);
}

// Past kMaxDetailed tuples, new ones are counted in the overflow series, so the detailed counts
// still add up to the rule's.
TEST(RuleStatsTest, DetailedTuplesBeyondTheBoundOverflow) {
  RuleStats stats;
  for (std::size_t i = 0; i < RuleStats::kMaxDetailed + 5; ++i) {
    stats.addDetailed("d.k_" + std::to_string(i), 1, false, false);
  }
  stats.addDetailed("d.k_0", 2, true, false);
  stats.addDetailed(std::string(RuleStats::kMaxDetailedBytes + 1, 'x'), 3, true, true);
  std::size_t series = 0;
  std::uint64_t hits = 0, over = 0, shadow = 0;
  stats.forEachDetailed("overflow", [&](const std::string& name, std::uint64_t total,
                                        std::uint64_t over_limit, std::uint64_t shadow_over) {
    ++series;
    hits += total;
    over += over_limit;
    shadow += shadow_over;
    if (name == "overflow") {
      EXPECT_EQ(total, 5u + 3u);
    }
  });
  EXPECT_EQ(series, RuleStats::kMaxDetailed + 1);
  EXPECT_EQ(hits, RuleStats::kMaxDetailed + 5 + 2 + 3);
  EXPECT_EQ(over, 1u);
  EXPECT_EQ(shadow, 1u);
}

// Units are case-insensitive names of the response enum, including week, month and year.
TEST(LyftUnitTest, ParsesUnits) {
  EXPECT_EQ(parseUnit("second"), Unit::kSecond);
  EXPECT_EQ(parseUnit("HOUR"), Unit::kHour);
  EXPECT_EQ(parseUnit("Week"), Unit::kWeek);
  EXPECT_EQ(parseUnit("year"), Unit::kYear);
  EXPECT_EQ(parseUnit("fortnight"), std::nullopt);
  EXPECT_EQ(parseUnit("unknown"), std::nullopt);
  EXPECT_EQ(unitMicros(Unit::kMonth), 30 * kMicrosPerDay);
}

// '*' stands for zero or more characters, anywhere and several times.
TEST(LyftPatternTest, Wildcards) {
  EXPECT_TRUE(matchesPattern("foo*", "foo"));
  EXPECT_TRUE(matchesPattern("foo*", "foobar"));
  EXPECT_TRUE(matchesPattern("*bar", "foobar"));
  EXPECT_TRUE(matchesPattern("a*b*c", "a-b-b-c"));
  EXPECT_TRUE(matchesPattern("*", ""));
  EXPECT_FALSE(matchesPattern("foo*", "fo"));
  EXPECT_FALSE(matchesPattern("a*b*c", "a-b-b-d"));
  EXPECT_FALSE(matchesPattern("*x*", std::string(10000, 'a')));
}

}  // namespace
}  // namespace sluice::rls
