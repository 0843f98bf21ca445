// Loading lyft/ratelimit's YAML as lyft loads it: what is refused (with file, line and column),
// how flags, numbers, units, merge keys and aliases are read, and which files of a directory
// count. (Matching descriptors against a loaded config: lyft_config_test.cc.)
#include "rls/lyft_config.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

namespace sluice::rls {
namespace {

std::vector<std::string> errorsOf(const std::string& yaml) {
  const LyftSource source{"cfg.yaml", yaml};
  LyftLoadResult loaded = loadLyftConfigTexts({&source, 1});
  EXPECT_EQ(loaded.config, nullptr);
  return loaded.errors;
}

bool anyContains(const std::vector<std::string>& errors, const std::string& text) {
  for (const std::string& error : errors) {
    if (error.find(text) != std::string::npos) return true;
  }
  return false;
}

// Every problem is reported with file, line and column, and loading goes on to find the rest.
TEST(LyftConfigErrorsTest, ReportsEveryProblemWithItsPlace) {
  const auto errors = errorsOf(
      "domain: d\n"
      "descriptors:\n"
      "  - key: a\n"
      "    rate_limit: { unit: fortnight, requests_per_unit: 1 }\n"
      "  - key: b\n"
      "    colour: red\n");
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].rfind("cfg.yaml:4:", 0), 0u) << errors[0];
  EXPECT_NE(errors[0].find("fortnight"), std::string::npos);
  EXPECT_EQ(errors[1].rfind("cfg.yaml:6:5:", 0), 0u) << errors[1];
  EXPECT_NE(errors[1].find("colour"), std::string::npos);
}

// Beside unlimited: true, lyft refuses only a real unit: an empty or unknown one, as a templated
// config tends to write, is ignored, and the rule is unlimited.
TEST(LyftConfigErrorsTest, AnEmptyOrUnknownUnitBesideUnlimitedIsIgnored) {
  for (const std::string unit : {"\"\"", "unknown", "fortnight", "~", ""}) {
    const LyftSource source{"cfg.yaml",
                            "domain: d\ndescriptors:\n  - key: a\n    rate_limit: "
                            "{unlimited: true, unit: " +
                                unit + "}\n"};
    const LyftLoadResult loaded = loadLyftConfigTexts({&source, 1});
    ASSERT_NE(loaded.config, nullptr) << unit << ": " << loaded.errors.at(0);
    const std::vector<EntryView> entries{{"a", "v"}};
    const DescriptorNode* node = LyftConfig::match(*loaded.config->domain("d"), entries, nullptr);
    ASSERT_NE(node, nullptr) << unit;
    EXPECT_TRUE(node->rate_limit->unlimited) << unit;
  }
  // Without unlimited, it is an error as before.
  EXPECT_TRUE(
      anyContains(errorsOf("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: \"\", "
                           "requests_per_unit: 1}\n"),
                  "is not a unit"));
}

// Flags read as lyft's YAML library reads a bool: its YAML 1.1 spellings (y and Y too), and a
// quoted value is a string, which it refuses.
TEST(LyftConfigErrorsTest, FlagsAreReadAsLyftReadsThem) {
  const auto shadowed = [](const std::string& flag) -> std::optional<bool> {
    const LyftSource source{"cfg.yaml",
                            "domain: d\ndescriptors:\n  - key: a\n    shadow_mode: " + flag +
                                "\n    rate_limit: {unit: second, requests_per_unit: 1}\n"};
    const LyftLoadResult loaded = loadLyftConfigTexts({&source, 1});
    if (loaded.config == nullptr) return std::nullopt;
    const std::vector<EntryView> entries{{"a", "v"}};
    return LyftConfig::match(*loaded.config->domain("d"), entries, nullptr)->shadow_mode;
  };
  for (const std::string yes : {"y", "Y", "yes", "True", "ON"})
    EXPECT_EQ(shadowed(yes), true) << yes;
  for (const std::string no : {"n", "NO", "false", "Off", "", "~"}) {
    EXPECT_EQ(shadowed(no), false) << no;  // a null flag is false, its zero value, to lyft
  }
  for (const std::string refused : {"\"true\"", "'yes'", "!!str true", "tRuE", "1"}) {
    EXPECT_EQ(shadowed(refused), std::nullopt) << refused;
  }
  EXPECT_TRUE(anyContains(errorsOf("domain: d\ndescriptors:\n  - key: a\n    rate_limit: "
                                   "{unlimited: \"true\"}\n"),
                          "quoted is a string"));
}

// The checks lyft makes at load time are made here too.
TEST(LyftConfigErrorsTest, RejectsWhatLyftRejects) {
  EXPECT_TRUE(anyContains(errorsOf("descriptors: []\n"), "domain: is required"));
  EXPECT_TRUE(anyContains(errorsOf("domain: ''\n"), "must not be empty"));
  EXPECT_TRUE(anyContains(errorsOf("domain: d\ndescriptors:\n  - value: x\n"), "key: is required"));
  EXPECT_TRUE(anyContains(
      errorsOf(
          "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unlimited: true, unit: second}\n"),
      "unlimited"));
  EXPECT_TRUE(anyContains(
      errorsOf("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {requests_per_unit: 1}\n"),
      "needs a unit"));
  EXPECT_TRUE(anyContains(errorsOf("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: "
                                   "second, requests_per_unit: 4294967296}\n"),
                          "32 bits"));
  EXPECT_TRUE(anyContains(errorsOf("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: "
                                   "second, replaces: [{name: ''}]}\n"),
                          "non-empty name"));
  EXPECT_TRUE(anyContains(errorsOf("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: "
                                   "second, name: x, replaces: [{name: x}]}\n"),
                          "cannot replace itself"));
  EXPECT_TRUE(anyContains(
      errorsOf("domain: d\ndescriptors:\n  - key: a\n    value: v\n  - key: a\n    value: v\n"),
      "duplicate descriptor"));
  EXPECT_TRUE(anyContains(
      errorsOf("domain: d\ndescriptors:\n  - key: a\n    value: v\n    share_threshold: true\n"),
      "wildcard"));
  EXPECT_TRUE(anyContains(errorsOf("domain: d\ndescriptors: [\n"), "cfg.yaml:"));
  // lyft's quota mode is named as what it is, not as a misspelt key.
  const auto quota = errorsOf("domain: d\ndescriptors:\n  - key: a\n    quota_mode: true\n");
  EXPECT_TRUE(anyContains(quota,
                          "cfg.yaml:4:17: quota_mode is a lyft/ratelimit setting Sluice "
                          "does not support"));
  EXPECT_EQ(quota.size(), 1u);
  // Envoy sends descriptors as UTF-8: a Latin-1 value could never match, and its rule's name
  // would make the metrics page invalid.
  EXPECT_TRUE(anyContains(errorsOf("domain: d\ndescriptors:\n  - key: k\n    value: caf\xe9\n"),
                          "cfg.yaml:4:15: the file is not UTF-8"));
  // Nor may it hold a control character, which YAML does not allow (here, a raw newline's
  // neighbour, a vertical tab, in a value).
  EXPECT_TRUE(anyContains(errorsOf("domain: d\ndescriptors:\n  - key: k\n    value: a\vb\n"),
                          "cfg.yaml:4:13: the file holds a control character (U+000B)"));
}

// `value: ""` and `value:` are no value, as lyft reads them: the node matches any value of the
// key, and it clashes with another key-only node of the same key.
TEST(LyftConfigValueTest, EmptyOrNullValueIsKeyOnly) {
  for (const std::string value : {"\"\"", "", "''"}) {
    const LyftSource source{"cfg.yaml",
                            "domain: d\ndescriptors:\n  - key: k\n    value: " + value +
                                "\n    rate_limit: {unit: minute, requests_per_unit: 1}\n"};
    const LyftLoadResult loaded = loadLyftConfigTexts({&source, 1});
    ASSERT_NE(loaded.config, nullptr) << value << ": " << loaded.errors.front();
    const Domain* domain = loaded.config->domain("d");
    ASSERT_NE(domain, nullptr);
    const std::vector<EntryView> any{{"k", "x"}};
    const DescriptorNode* node = LyftConfig::match(*domain, any, nullptr);
    ASSERT_NE(node, nullptr) << value;
    EXPECT_FALSE(node->value.has_value());
    EXPECT_EQ(node->stat_key, "d.k");
  }
  EXPECT_TRUE(
      anyContains(errorsOf("domain: d\ndescriptors:\n  - key: k\n  - key: k\n    value: ''\n"),
                  "duplicate descriptor"));
}

// A field left empty (or ~) is its zero value, as lyft reads any null: `rate_limit:` is no
// limit, `requests_per_unit:` 0 (always over), `name:` none, `replaces:` an empty list.
TEST(LyftConfigNullTest, NullFieldsAreTheirZeroValues) {
  const LyftSource source{"cfg.yaml",
                          "domain: d\ndescriptors:\n"
                          "  - key: open\n    rate_limit:\n"
                          "  - key: closed\n    rate_limit: {unit: minute, requests_per_unit: ~, "
                          "name: , replaces: }\n"};
  const LyftLoadResult loaded = loadLyftConfigTexts({&source, 1});
  ASSERT_NE(loaded.config, nullptr) << loaded.errors.front();
  const Domain& domain = *loaded.config->domain("d");
  const std::vector<EntryView> open{{"open", "x"}};
  const DescriptorNode* whitelisted = LyftConfig::match(domain, open, nullptr);
  ASSERT_NE(whitelisted, nullptr);
  EXPECT_FALSE(whitelisted->rate_limit.has_value());
  const std::vector<EntryView> closed{{"closed", "x"}};
  const DescriptorNode* zero = LyftConfig::match(domain, closed, nullptr);
  ASSERT_TRUE(zero != nullptr && zero->rate_limit.has_value());
  EXPECT_EQ(zero->rate_limit->requests_per_unit, 0u);
  EXPECT_EQ(zero->rate_limit->name, "");
  EXPECT_TRUE(zero->rate_limit->replaces.empty());
  // A null where lyft needs a non-empty string is empty to it, and said so here, once.
  const auto null_key = errorsOf("domain: d\ndescriptors:\n  - key: ~\n");
  ASSERT_EQ(null_key.size(), 1u);
  EXPECT_NE(null_key[0].find("key: must not be empty"), std::string::npos) << null_key[0];
  const auto null_domain = errorsOf("domain: ~\n");
  ASSERT_EQ(null_domain.size(), 1u);
  EXPECT_NE(null_domain[0].find("domain: must not be empty"), std::string::npos) << null_domain[0];
  const auto null_replaced = errorsOf(
      "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, replaces: [{name: "
      "~}]}\n");
  ASSERT_EQ(null_replaced.size(), 1u);
  EXPECT_NE(null_replaced[0].find("non-empty name"), std::string::npos) << null_replaced[0];
}

// lyft takes any of its keys anywhere and ignores those out of place: `shadow_mode` inside a
// rate_limit loads and shadows nothing. Here it is an error saying where the key belongs.
TEST(LyftConfigErrorsTest, AKeyOutOfPlaceSaysWhereItBelongs) {
  const auto errors = errorsOf(
      "domain: d\nname: top\ndescriptors:\n  - key: a\n    unit: minute\n"
      "    rate_limit: {unit: minute, requests_per_unit: 5, shadow_mode: true, colour: red}\n");
  EXPECT_TRUE(anyContains(errors,
                          "cfg.yaml:2:1: name: belongs in a rate_limit or a replaces "
                          "entry, not in the config file"));
  EXPECT_TRUE(anyContains(errors,
                          "cfg.yaml:5:5: unit: belongs in a rate_limit, not in a "
                          "descriptor"));
  EXPECT_TRUE(anyContains(errors, "shadow_mode: belongs in a descriptor, not in rate_limit"));
  EXPECT_TRUE(anyContains(errors, "unknown key \"colour\" in rate_limit"));
  EXPECT_EQ(errors.size(), 4u);
}

// A key written twice in one mapping is an error with its place, not the first one winning.
TEST(LyftConfigErrorsTest, DuplicateKeys) {
  const auto errors = errorsOf(
      "domain: d\ndescriptors:\n  - key: a\n"
      "    rate_limit: { unit: minute, requests_per_unit: 1, requests_per_unit: 100 }\n");
  EXPECT_TRUE(anyContains(errors, "cfg.yaml:4:")) << (errors.empty() ? "" : errors.front());
  EXPECT_TRUE(anyContains(errors, "key \"requests_per_unit\" appears twice"));
  EXPECT_TRUE(anyContains(errorsOf("domain: d\ndomain: e\n"), "key \"domain\" appears twice"));
}

// A file holds one domain: a second YAML document, which lyft drops without a word, is an error
// at its line rather than a domain lost.
TEST(LyftConfigErrorsTest, ASecondDocumentIsAnError) {
  const auto errors = errorsOf(
      "domain: a\ndescriptors:\n  - { key: k, rate_limit: { unit: second, requests_per_unit: 5 } "
      "}\n"
      "---\ndomain: b\ndescriptors: []\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].rfind("cfg.yaml:5:", 0), 0u) << errors[0];
  EXPECT_NE(errors[0].find("a second YAML document"), std::string::npos) << errors[0];
  // Document markers at the start, or an empty document at the end, as generators write, leave
  // one document.
  for (const char* yaml : {"---\ndomain: a\ndescriptors: []\n", "domain: a\ndescriptors: []\n---\n",
                           "domain: a\ndescriptors: []\n---\n# nothing\n...\n"}) {
    const LyftSource marked{"cfg.yaml", yaml};
    EXPECT_NE(loadLyftConfigTexts({&marked, 1}).config, nullptr) << yaml;
  }
}

// Aliases nested 6 deep and used 10 times at each level stand for a million descriptors in a
// few KB of YAML: the file is refused with one error naming it and its descriptors, instead of
// being built until memory runs out (or reported once per repeated duplicate).
TEST(LyftConfigErrorsTest, RefusesExcessiveAliasing) {
  std::string node = "&n0 {key: k0}";
  const auto uses = [](int anchor) {
    std::string text;
    for (int i = 0; i < 9; ++i) text += ", *n" + std::to_string(anchor);
    return text;
  };
  for (int depth = 1; depth <= 5; ++depth) {
    node = "&n" + std::to_string(depth) + " {key: k" + std::to_string(depth) + ", descriptors: [" +
           node + uses(depth - 1) + "]}";
  }
  const LyftSource source{"bomb.yaml", "domain: d\ndescriptors: [" + node + uses(5) + "]\n"};
  ASSERT_LT(source.yaml.size(), 4096u);
  const LyftLoadResult loaded = loadLyftConfigTexts({&source, 1});
  EXPECT_EQ(loaded.config, nullptr);
  ASSERT_EQ(loaded.errors.size(), 1u);
  EXPECT_EQ(loaded.errors[0].rfind("bomb.yaml:2:14: descriptors: more than 100000", 0), 0u)
      << loaded.errors[0];
}

// The bound holds for all the files of a directory together: eight files just under it each
// took 12 s and 1.25 GB to load. Here each of two files stands for 55,555 descriptors: the
// first is taken, the second refused.
TEST(LyftConfigErrorsTest, RefusesExcessiveAliasingOverSeveralFiles) {
  // `keys` siblings with keys a, b, ..., the first holding `inner` (anchored as &name) as its
  // descriptors and the others an alias of it: distinct keys, so no duplicate among siblings.
  const auto level = [](int keys, const std::string& name, const std::string& inner) {
    std::string text = "[";
    for (int i = 0; i < keys; ++i) {
      text += std::string(i == 0 ? "" : ", ") + "{key: " + static_cast<char>('a' + i);
      if (!inner.empty())
        text += ", descriptors: " + (i == 0 ? "&" + name + " " + inner : "*" + name);
      text += "}";
    }
    return text + "]";
  };
  std::string list = level(10, "", "");  // 10
  for (int depth = 1; depth <= 3; ++depth) list = level(10, "l" + std::to_string(depth), list);
  const std::string descriptors = "descriptors: " + level(5, "top", list) + "\n";  // 55,555
  const LyftSource sources[] = {{"one.yaml", "domain: one\n" + descriptors},
                                {"two.yaml", "domain: two\n" + descriptors}};
  const LyftLoadResult loaded = loadLyftConfigTexts(sources);
  EXPECT_EQ(loaded.config, nullptr);
  ASSERT_EQ(loaded.errors.size(), 1u);
  EXPECT_EQ(loaded.errors[0].rfind("two.yaml:2:14: descriptors: more than 100000 descriptors "
                                   "with the files before this one",
                                   0),
            0u)
      << loaded.errors[0];
  // Either file alone is taken.
  const LyftLoadResult one = loadLyftConfigTexts({&sources[1], 1});
  ASSERT_NE(one.config, nullptr) << (one.errors.empty() ? "" : one.errors[0]);
  EXPECT_EQ(one.config->domainCount(), 1u);
}

// YAML lets an alias refer to the list it is in: a list that contains itself is refused, not
// expanded until the stack runs out.
TEST(LyftConfigErrorsTest, RefusesAListThatContainsItself) {
  const auto errors = errorsOf("domain: d\ndescriptors: &x\n  - key: a\n    descriptors: *x\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_TRUE(anyContains(errors, "cfg.yaml:2:14: descriptors: a YAML alias makes")) << errors[0];
}

// requests_per_unit is read as lyft's YAML library reads it (YAML 1.1 integers): a file means the
// same number here as there, or is refused with its line.
TEST(LyftConfigNumbersTest, RequestsPerUnitReadsAsLyftReadsIt) {
  const LyftSource source{"numbers.yaml", R"(domain: d
descriptors:
  - { key: octal, rate_limit: { unit: second, requests_per_unit: 010 } }
  - { key: hex, rate_limit: { unit: second, requests_per_unit: 0x10 } }
  - { key: grouped, rate_limit: { unit: second, requests_per_unit: 1_000 } }
  - { key: exponent, rate_limit: { unit: second, requests_per_unit: 1e3 } }
  - { key: tagged, rate_limit: { unit: second, requests_per_unit: !!int 12 } }
)"};
  const LyftLoadResult loaded = loadLyftConfigTexts({&source, 1});
  ASSERT_NE(loaded.config, nullptr) << loaded.errors.front();
  const Domain& domain = *loaded.config->domain("d");
  for (const auto& [key, count] :
       {std::pair{"octal", 8u}, std::pair{"hex", 16u}, std::pair{"grouped", 1000u},
        std::pair{"exponent", 1000u}, std::pair{"tagged", 12u}}) {
    const std::vector<EntryView> entries{{key, "x"}};
    const DescriptorNode* node = LyftConfig::match(domain, entries, nullptr);
    ASSERT_TRUE(node != nullptr && node->rate_limit) << key;
    EXPECT_EQ(node->rate_limit->requests_per_unit, count) << key;
  }
  const std::string head = "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, ";
  const auto quoted = errorsOf(head + "requests_per_unit: '16'}\n");
  ASSERT_EQ(quoted.size(), 1U);
  EXPECT_EQ(quoted[0].rfind("cfg.yaml:4:", 0), 0U) << quoted[0];
  EXPECT_NE(quoted[0].find("must be a number, not a string"), std::string::npos) << quoted[0];
  EXPECT_TRUE(anyContains(errorsOf(head + "requests_per_unit: !!str 16}\n"), "not a string"));
  EXPECT_TRUE(anyContains(errorsOf(head + "requests_per_unit: 16.5}\n"), "must be a whole number"));
  EXPECT_TRUE(anyContains(errorsOf(head + "requests_per_unit: -1}\n"), "must not be negative"));
  EXPECT_TRUE(anyContains(errorsOf(head + "requests_per_unit: 0x1_0000_0000}\n"), "32 bits"));
}

// YAML merge keys, which lyft's YAML library applies: a descriptor or a rate_limit takes the keys
// of the mappings it merges that it does not set itself (of a list, the first mapping's win).
TEST(LyftConfigMergeKeysTest, MergedKeysAreRead) {
  const LyftSource source{"merge.yaml", R"(domain: d
descriptors:
  - &per_address
    key: remote_address
    rate_limit: &five_per_second { unit: second, requests_per_unit: 5 }
  - <<: *per_address
    key: user
  - key: path
    rate_limit:
      <<: [ { unit: minute, requests_per_unit: 10 }, *five_per_second ]
  - key: plan
    rate_limit:
      <<: *five_per_second
      requests_per_unit: 7
)"};
  const LyftLoadResult loaded = loadLyftConfigTexts({&source, 1});
  ASSERT_NE(loaded.config, nullptr) << loaded.errors.front();
  const Domain& domain = *loaded.config->domain("d");
  const auto rule = [&](const std::string& key) -> const RateLimitRule* {
    const std::vector<EntryView> entries{{key, "x"}};
    const DescriptorNode* node = LyftConfig::match(domain, entries, nullptr);
    return node != nullptr && node->rate_limit ? &*node->rate_limit : nullptr;
  };
  for (const auto& [key, unit, count] :
       {std::tuple{"remote_address", Unit::kSecond, 5u}, std::tuple{"user", Unit::kSecond, 5u},
        std::tuple{"path", Unit::kMinute, 10u}, std::tuple{"plan", Unit::kSecond, 7u}}) {
    const RateLimitRule* found = rule(key);
    ASSERT_NE(found, nullptr) << key;
    EXPECT_EQ(found->unit, unit) << key;
    EXPECT_EQ(found->requests_per_unit, count) << key;
  }
}

// Merges apply in the order written and mappings met again merge key by key, as go-yaml v2 (and
// so lyft) reads them: a rate_limit after a merge overrides only what it names, and a merge after
// a key overrides it. The anchored descriptor itself is left as it was.
TEST(LyftConfigMergeKeysTest, MergesApplyInOrderAndMergeMappingsDeeply) {
  const LyftSource source{"order.yaml", R"(domain: d
descriptors:
  - &base
    key: remote_address
    rate_limit: { unit: second, requests_per_unit: 10 }
  - <<: *base
    key: user
    rate_limit: { requests_per_unit: 5 }
  - rate_limit: { unit: minute, requests_per_unit: 100 }
    <<: *base
    key: plan
)"};
  const LyftLoadResult loaded = loadLyftConfigTexts({&source, 1});
  ASSERT_NE(loaded.config, nullptr) << loaded.errors.front();
  const Domain& domain = *loaded.config->domain("d");
  for (const auto& [key, unit, count] :
       {std::tuple{"remote_address", Unit::kSecond, 10u}, std::tuple{"user", Unit::kSecond, 5u},
        std::tuple{"plan", Unit::kSecond, 10u}}) {
    const std::vector<EntryView> entries{{key, "x"}};
    const DescriptorNode* node = LyftConfig::match(domain, entries, nullptr);
    ASSERT_TRUE(node != nullptr && node->rate_limit) << key;
    EXPECT_EQ(node->rate_limit->unit, unit) << key;
    EXPECT_EQ(node->rate_limit->requests_per_unit, count) << key;
  }
}

// A merge key whose value is not a mapping (or a list of them), or a mapping that merges itself,
// is an error at its place; a quoted "<<" is an ordinary key (and unknown here).
TEST(LyftConfigMergeKeysTest, BadMergesAreErrors) {
  EXPECT_TRUE(anyContains(errorsOf("domain: d\ndescriptors:\n  - key: a\n    <<: 5\n"),
                          "cfg.yaml:4:9: a merge key (<<) takes a mapping"));
  EXPECT_TRUE(anyContains(errorsOf("domain: d\ndescriptors:\n  - key: a\n    <<: [ 5 ]\n"),
                          "cfg.yaml:4:11: a merge key (<<) takes a mapping"));
  EXPECT_TRUE(anyContains(errorsOf("domain: d\ndescriptors:\n  - &a\n    key: a\n    <<: *a\n"),
                          "makes this mapping merge itself"));
  EXPECT_TRUE(anyContains(errorsOf("domain: d\ndescriptors:\n  - key: a\n    \"<<\": { key: b }\n"),
                          "unknown key \"<<\""));
  // An alias to a list is not a list of mappings to go-yaml v2 either.
  EXPECT_TRUE(anyContains(
      errorsOf("domain: d\ndescriptors:\n  - key: a\n    descriptors: &l [ { key: b } ]\n"
               "  - key: c\n    <<: *l\n"),
      "cfg.yaml:6:5: a merge key (<<) takes a mapping or a list of mappings, not an alias"));
  // A rate_limit a merge built is a new mapping, which yaml-cpp gives no line: its error is at
  // the descriptor that merged it (it said only the file).
  const auto merged = errorsOf(
      "domain: d\ndescriptors:\n  - key: n\n    rate_limit: {name: y}\n"
      "    <<: {rate_limit: {requests_per_unit: 3}}\n");
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(merged[0].rfind("cfg.yaml:3:5: rate_limit: needs a unit", 0), 0u) << merged[0];
  // A list that contains itself, without any merge, is not called a merge.
  const auto loop = errorsOf("domain: d\ndescriptors:\n  - &m {key: a, descriptors: [*m]}\n");
  EXPECT_FALSE(anyContains(loop, "merge")) << loop.front();
  EXPECT_TRUE(anyContains(loop, "contain itself")) << loop.front();
}

// Merges of aliases of merges grow exponentially with their nesting: a 679-byte file took over
// 15 minutes to load (and a reload by the watcher held an I/O thread). Such a file is refused as
// lyft's YAML library refuses it, at once.
TEST(LyftConfigMergeKeysTest, ExcessiveAliasingIsAnError) {
  std::string yaml = "domain: d\ndescriptors:\n  - key: k\n    metadata:\n      x0: &x0 {v: 1}\n";
  constexpr int kDepth = 8;
  for (int level = 1; level <= kDepth; ++level) {
    const std::string earlier = "*x" + std::to_string(level - 1);
    yaml += "      x" + std::to_string(level) + ": &x" + std::to_string(level) + " {";
    for (const char* key : {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}) {
      yaml += std::string(key) + ": " + earlier + (std::string(key) == "j" ? "" : ", ");
    }
    yaml += "}\n";
  }
  yaml += "      m:\n        <<: *x" + std::to_string(kDepth) + "\n        a: *x" +
          std::to_string(kDepth - 1) + "\n";
  EXPECT_TRUE(anyContains(errorsOf(yaml), "excessive aliasing"));
}

// Two files may not define the same domain; the error names both (files load in path order, so
// the one it is reported at may be the file that was there first).
TEST(LyftConfigErrorsTest, DuplicateDomain) {
  const LyftSource sources[] = {{"one.yaml", "domain: d\n"}, {"two.yaml", "domain: d\n"}};
  const LyftLoadResult loaded = loadLyftConfigTexts(sources);
  ASSERT_EQ(loaded.errors.size(), 1u);
  EXPECT_EQ(loaded.errors[0].rfind("two.yaml:1:", 0), 0u) << loaded.errors[0];
  EXPECT_NE(loaded.errors[0].find("domain \"d\" is already defined by one.yaml"), std::string::npos)
      << loaded.errors[0];
}

// A missing directory is an error; an empty one is a config without domains.
TEST(LyftConfigErrorsTest, Directories) {
  EXPECT_EQ(loadLyftConfigDir("/nonexistent/sluice").config, nullptr);
  const LyftLoadResult empty = loadLyftConfigTexts({});
  ASSERT_NE(empty.config, nullptr);
  EXPECT_EQ(empty.config->domainCount(), 0u);
}

// A fresh directory under the system's temporary one, removed with the object.
class TempDir {
 public:
  TempDir()
      : path_(std::filesystem::temp_directory_path() /
              ("sluice-lyft-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
               "-" + std::to_string(reinterpret_cast<std::uintptr_t>(this)))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  void write(const std::string& relative, const std::string& text) const {
    std::filesystem::create_directories((path_ / relative).parent_path());
    std::ofstream(path_ / relative) << text;
  }
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

// Every regular file under the directory is read, as lyft reads its tree: any name, in
// subdirectories too. Names starting with '.' are skipped, so a Kubernetes ConfigMap mount
// (files that are symlinks into `..data`, itself a symlink to a `..<timestamp>` directory) gives
// each domain once, and a swap of `..data` changes what is read.
TEST(LyftConfigDirTest, ReadsEveryFileButDotFilesAsLyftDoes) {
  const TempDir dir;
  dir.write("plain", "domain: plain\n");
  dir.write("team/nested.conf", "domain: nested\n");
  dir.write(".editor.swp", "{{{ not yaml");
  dir.write(".git/config", "[core]\n");
  dir.write("..2024_01_01/cm.yaml", "domain: first\n");
  std::filesystem::create_directory_symlink("..2024_01_01", dir.path() / "..data");
  std::filesystem::create_symlink("..data/cm.yaml", dir.path() / "cm.yaml");
  const LyftLoadResult loaded = loadLyftConfigDir(dir.path().string());
  ASSERT_NE(loaded.config, nullptr) << loaded.errors.front();
  EXPECT_EQ(loaded.config->domainCount(), 3u);
  EXPECT_NE(loaded.config->domain("plain"), nullptr);
  EXPECT_NE(loaded.config->domain("nested"), nullptr);
  EXPECT_NE(loaded.config->domain("first"), nullptr);

  // The ConfigMap is updated: a new timestamped directory, then `..data` renamed over.
  const std::optional<std::size_t> before = lyftConfigDirDigest(dir.path().string());
  dir.write("..2024_02_02/cm.yaml", "domain: second\n");
  std::filesystem::create_directory_symlink("..2024_02_02", dir.path() / "..data_tmp");
  std::filesystem::rename(dir.path() / "..data_tmp", dir.path() / "..data");
  EXPECT_NE(lyftConfigDirDigest(dir.path().string()), before);
  const LyftLoadResult swapped = loadLyftConfigDir(dir.path().string());
  ASSERT_NE(swapped.config, nullptr) << swapped.errors.front();
  EXPECT_NE(swapped.config->domain("second"), nullptr);
  EXPECT_EQ(swapped.config->domain("first"), nullptr);
}

// A file that is not a lyft config (a README beside the domains) is an error naming it, as in
// lyft, rather than silently skipped.
TEST(LyftConfigDirTest, AStrayFileIsAnErrorNamingIt) {
  const TempDir dir;
  dir.write("edge.yaml", "domain: edge\n");
  dir.write("docs/README.md", "# Rate limits\nSee the wiki.\n");
  const LyftLoadResult loaded = loadLyftConfigDir(dir.path().string());
  EXPECT_EQ(loaded.config, nullptr);
  const std::string readme = (dir.path() / "docs/README.md").string();
  ASSERT_FALSE(loaded.errors.empty());
  EXPECT_EQ(loaded.errors[0].rfind(readme + ":", 0), 0u) << loaded.errors[0];
  EXPECT_TRUE(anyContains(loaded.errors, "every file under config_dir"));
}

}  // namespace
}  // namespace sluice::rls
