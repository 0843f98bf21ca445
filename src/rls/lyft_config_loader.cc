// Loading lyft/ratelimit's YAML into a LyftConfig (lyft_config.h): every file's domain and its
// nested descriptors, read as lyft reads them (go-yaml v2's numbers and flags), with the checks
// lyft makes at load time and the bounds that keep a hostile file from costing unbounded time or
// memory; every problem is reported with its file, line and column. Reading the directory is
// lyft_config_dir.cc.
#include "rls/lyft_config.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <unordered_map>

#include "policy/key_selector.h"
#include "policy/yaml_fields.h"
#include "policy/yaml_merge_keys.h"
#include "rls/go_yaml_number.h"

namespace sluice::rls {
namespace {

using policy::Errors;

// requests_per_unit as lyft reads it into its uint32 field (go_yaml_number.h). A quoted value is a
// string to lyft's YAML library, which refuses it for a number field, and so is one tagged !!str.
std::optional<std::uint64_t> requestsPerUnit(const YAML::Node& node, Errors& errors) {
  const auto text = policy::scalar(node, "requests_per_unit", errors);
  if (!text) return std::nullopt;
  const std::string& tag = node.Tag();
  if (tag != "?" && tag != "tag:yaml.org,2002:int" && tag != "tag:yaml.org,2002:float") {
    errors.add(node, "requests_per_unit: must be a number, not a string (\"" + *text +
                         "\" quoted is a string to lyft/ratelimit too)");
    return std::nullopt;
  }
  std::string problem;
  const auto value = goYamlUnsigned(*text, problem);
  if (!value) errors.add(node, "requests_per_unit: \"" + *text + "\" " + problem);
  return value;
}

// A flag as lyft's YAML library (YAML 1.1) reads one into a bool field: the spellings it lists,
// each in the three cases it lists (y and n included, tRuE not). A quoted value, or one tagged
// !!str, is a string, which it refuses for a bool.
std::optional<bool> lyftFlag(const YAML::Node& node, const std::string& name, Errors& errors) {
  if (node.IsNull()) return false;  // `shadow_mode:` left empty: the field's zero value, to lyft
  const auto text = policy::scalar(node, name, errors);
  if (!text) return std::nullopt;
  const std::string& tag = node.Tag();
  if (tag != "?" && tag != "tag:yaml.org,2002:bool") {
    errors.add(node, name + ": must be true or false, not a string (\"" + *text +
                         "\" quoted is a string to lyft/ratelimit too)");
    return std::nullopt;
  }
  static constexpr std::string_view kTrue[] = {"y",    "Y",    "yes", "Yes", "YES", "true",
                                               "True", "TRUE", "on",  "On",  "ON"};
  static constexpr std::string_view kFalse[] = {"n",     "N",     "no",  "No",  "NO", "false",
                                                "False", "FALSE", "off", "Off", "OFF"};
  if (std::find(std::begin(kTrue), std::end(kTrue), *text) != std::end(kTrue)) return true;
  if (std::find(std::begin(kFalse), std::end(kFalse), *text) != std::end(kFalse)) return false;
  errors.add(node, name + " must be true or false, not \"" + *text + "\"");
  return std::nullopt;
}

// The parts of a lyft file, and which keys each takes. lyft checks a file's keys against one
// list, wherever they stand, and its decoder then drops those out of place without a word:
// `shadow_mode` inside a rate_limit loads and does nothing. Here that is an error saying where
// the key belongs.
enum LyftPart : unsigned { kFile = 1, kDescriptor = 2, kRateLimit = 4, kReplaces = 8 };

struct LyftKey {
  std::string_view name;
  unsigned parts;  // LyftPart bits
};

// In the order each part's keys are listed in errors.
constexpr LyftKey kLyftKeys[] = {
    {"domain", kFile},
    {"key", kDescriptor},
    {"value", kDescriptor},
    {"rate_limit", kDescriptor},
    {"descriptors", kFile | kDescriptor},
    {"shadow_mode", kDescriptor},
    {"detailed_metric", kDescriptor},
    {"value_to_metric", kDescriptor},
    {"share_threshold", kDescriptor},
    {"metadata", kDescriptor},
    {"quota_mode", kDescriptor},
    {"unit", kRateLimit},
    {"requests_per_unit", kRateLimit},
    {"unlimited", kRateLimit},
    {"name", kRateLimit | kReplaces},
    {"replaces", kRateLimit},
};

// Where keys of `parts` belong, for an error: "a descriptor", "a rate_limit or a replaces entry".
std::string lyftPlacesText(unsigned parts) {
  static constexpr std::pair<LyftPart, std::string_view> kPlaces[] = {
      {kFile, "the file's top level"},
      {kDescriptor, "a descriptor"},
      {kRateLimit, "a rate_limit"},
      {kReplaces, "a replaces entry"}};
  std::string text;
  for (const auto& [part, place] : kPlaces) {
    if ((parts & part) != 0) text += (text.empty() ? "" : " or ") + std::string(place);
  }
  return text;
}

// How an error names the mapping of `part` it found a key in.
std::string lyftPartName(LyftPart part) {
  switch (part) {
    case kFile:
      return "the config file";
    case kDescriptor:
      return "a descriptor";
    case kRateLimit:
      return "rate_limit";
    case kReplaces:
      return "a replaces entry";
  }
  return "";
}

// Whether a field is given and not null: lyft reads a null as the field's zero value.
bool present(const YAML::Node& node) { return node && !node.IsNull(); }

// A string field as lyft reads it: a null is "" (its zero value), so `key: ~` is an empty key,
// reported as one, not as "not a single value".
std::optional<std::string> lyftText(const YAML::Node& node, const std::string& name,
                                    Errors& errors) {
  if (node.IsNull()) return std::string();
  return policy::scalar(node, name, errors);
}

// policy::checkKeys for `part` of a lyft file, the keys it takes read from kLyftKeys; a key of
// lyft's that belongs elsewhere says where.
void checkLyftKeys(const YAML::Node& map, LyftPart part, Errors& errors) {
  std::vector<std::string_view> known;
  for (const LyftKey& key : kLyftKeys) {
    if ((key.parts & part) != 0) known.push_back(key.name);
  }
  std::vector<std::string> misplaced;
  for (const auto& entry : map) {
    const std::string key = entry.first.Scalar();
    const auto found = std::find_if(std::begin(kLyftKeys), std::end(kLyftKeys),
                                    [&](const LyftKey& lyft) { return lyft.name == key; });
    // Unknown anywhere (checkKeys below says so), or in its place.
    if (found == std::end(kLyftKeys) || (found->parts & part) != 0) continue;
    errors.add(entry.first, key + ": belongs in " + lyftPlacesText(found->parts) + ", not in " +
                                lyftPartName(part) +
                                " (lyft/ratelimit takes it here and ignores it without a word)");
    misplaced.push_back(key);
  }
  known.insert(known.end(), misplaced.begin(), misplaced.end());
  policy::checkKeys(map, lyftPartName(part), known, errors);
}

}  // namespace

namespace {

// The names of the rules `rule` stands in for when both match one request.
bool loadReplaces(const YAML::Node& list, RateLimitRule& rule, Errors& errors) {
  if (!list.IsSequence()) {
    errors.add(list, "replaces: must be a list of {name: ...}");
    return false;
  }
  bool ok = true;
  for (const YAML::Node& item : list) {
    if (!policy::isMap(item, "a replaces entry", errors)) {
      ok = false;
      continue;
    }
    checkLyftKeys(item, kReplaces, errors);
    const auto name = item["name"] ? lyftText(item["name"], "name", errors) : std::nullopt;
    if (!name || name->empty()) {
      errors.add(item, "replaces: each entry needs a non-empty name");
    } else if (*name == rule.name) {
      errors.add(item, "replaces: a rule cannot replace itself (\"" + *name + "\")");
    } else {
      rule.replaces.push_back(*name);
      continue;
    }
    ok = false;
  }
  return ok;
}

}  // namespace

// Turns YAML into a LyftConfig, reporting every problem to `errors` and carrying on.
class LyftConfigBuilder {
 public:
  // YAML aliases repeat a subtree without repeating its text, so a few KB nested a few levels
  // deep can stand for millions of descriptors (lyft's YAML library refuses such files as
  // "excessive aliasing"). Real configs have hundreds; past this bound, counted over all the
  // files of a directory (eight files of 100,000 each took 12 s and 1.25 GB to load), the file
  // that passes it is refused.
  static constexpr std::size_t kMaxNodes = 100'000;

  explicit LyftConfigBuilder(LyftConfig& config) : config_(config) {}

  void addDomain(const YAML::Node& root, Errors& errors);

 private:
  void loadLevel(const YAML::Node& list, const std::string& stat_prefix, DescriptorLevel& level,
                 Errors& errors);
  std::optional<DescriptorNode> loadNode(const YAML::Node& node, const std::string& stat_prefix,
                                         Errors& errors);
  std::optional<RateLimitRule> loadRule(const YAML::Node& node, Errors& errors);
  static void index(DescriptorLevel& level, const YAML::Node& yaml, Errors& errors);
  bool withinBounds(const YAML::Node& list, Errors& errors);

  LyftConfig& config_;
  std::map<std::string, std::string, std::less<>> domain_files_;  // domain → the file defining it
  std::size_t nodes_ = 0;  // descriptors in the files taken so far, aliases expanded
};

void LyftConfigBuilder::addDomain(const YAML::Node& root, Errors& errors) {
  // Every file under config_dir is read, whatever its name, so a stray one lands here.
  if (!policy::isMap(root, "a lyft/ratelimit config file (every file under config_dir is one)",
                     errors)) {
    return;
  }
  checkLyftKeys(root, kFile, errors);
  std::optional<std::string> name;
  if (!root["domain"]) {
    errors.add(root, "domain: is required");
  } else if ((name = lyftText(root["domain"], "domain", errors)) && name->empty()) {
    errors.add(root["domain"], "domain: must not be empty");
    name.reset();
  }
  Domain domain;
  if (name) domain.name = *name;
  if (root["descriptors"] && withinBounds(root["descriptors"], errors)) {
    loadLevel(root["descriptors"], domain.name, domain.descriptors, errors);
  }
  if (!name) return;
  // Both files named: files load in path order, so the one reported is not always the newer.
  if (const auto defined = domain_files_.find(*name); defined != domain_files_.end()) {
    errors.add(root["domain"], "domain \"" + *name + "\" is already defined by " + defined->second);
    return;
  }
  domain_files_.emplace(*name, errors.source());
  config_.domains_.emplace(*name, std::move(domain));
}

void LyftConfigBuilder::loadLevel(const YAML::Node& list, const std::string& stat_prefix,
                                  DescriptorLevel& level, Errors& errors) {
  if (list.IsNull()) return;
  if (!list.IsSequence()) {
    errors.add(list, "descriptors: must be a list");
    return;
  }
  for (const YAML::Node& item : list) {
    std::optional<DescriptorNode> node = loadNode(item, stat_prefix, errors);
    if (!node) continue;
    level.nodes.push_back(std::move(*node));
    index(level, item, errors);
  }
}

namespace {

constexpr std::size_t kCounting = std::numeric_limits<std::size_t>::max();

// How many descriptors `list` (a `descriptors:` value) stands for once its aliases are expanded,
// counted up to `bound` + 1; kCounting when an alias makes a list contain itself. Each distinct
// list is counted once (by its place in the text, which its aliases share), so this takes time
// in the size of the text, not of the expansion.
std::size_t expandedSize(const YAML::Node& list, std::size_t bound,
                         std::unordered_map<std::size_t, std::size_t>& sizes) {
  if (!list.IsSequence()) return 0;
  const auto [known, fresh] = sizes.emplace(list.Mark().pos, kCounting);
  if (!fresh) return known->second;  // kCounting while still being counted: a cycle
  std::size_t size = 0;
  for (const YAML::Node& item : list) {
    const std::size_t children =
        item.IsMap() && item["descriptors"] ? expandedSize(item["descriptors"], bound, sizes) : 0;
    if (children == kCounting) return kCounting;
    size = std::min(size + 1 + children, bound + 1);
  }
  sizes[list.Mark().pos] = size;
  return size;
}

}  // namespace

bool LyftConfigBuilder::withinBounds(const YAML::Node& list, Errors& errors) {
  std::unordered_map<std::size_t, std::size_t> sizes;
  const std::size_t room = kMaxNodes - nodes_;
  const std::size_t size = expandedSize(list, room, sizes);
  if (size == kCounting) {
    errors.add(list, "descriptors: a YAML alias makes a descriptor list contain itself");
    return false;
  }
  if (size > room) {
    errors.add(list, "descriptors: more than " + std::to_string(kMaxNodes) + " descriptors" +
                         (nodes_ > 0 ? " with the files before this one" : "") +
                         " (counting nested descriptors, and each use of a YAML alias as a "
                         "copy of its subtree); the file is refused");
    return false;
  }
  nodes_ += size;
  return true;
}

std::optional<DescriptorNode> LyftConfigBuilder::loadNode(const YAML::Node& yaml,
                                                          const std::string& stat_prefix,
                                                          Errors& errors) {
  if (!policy::isMap(yaml, "a descriptor", errors)) return std::nullopt;
  // lyft's quota mode changes what over-limit means: refused by name, not as a misspelt key.
  if (yaml["quota_mode"]) {
    errors.add(yaml["quota_mode"],
               "quota_mode is a lyft/ratelimit setting Sluice does not support (remove it: the "
               "descriptor's limit is then enforced as any other)");
  }
  checkLyftKeys(yaml, kDescriptor, errors);
  const Errors::Near near(errors, yaml);  // a rate_limit a merge built has no line
  DescriptorNode node;
  bool ok = true;
  std::optional<std::string> key;
  if (!yaml["key"]) {
    errors.add(yaml, "key: is required in a descriptor");
  } else if ((key = lyftText(yaml["key"], "key", errors)) && key->empty()) {
    errors.add(yaml["key"], "key: must not be empty");
  }
  ok = key && !key->empty();
  if (ok) node.key = *key;
  // An empty or missing value (`value: ""`, `value:`) is no value, as in lyft: the node
  // matches the key with any value.
  if (yaml["value"] && !yaml["value"].IsNull()) {
    node.value = policy::scalar(yaml["value"], "value", errors);
    ok = ok && node.value.has_value();
    if (node.value && node.value->empty()) node.value.reset();
    node.pattern = node.value && node.value->find('*') != std::string::npos;
  }
  const auto flag = [&](const char* name) {
    return yaml[name] ? lyftFlag(yaml[name], name, errors).value_or(false) : false;
  };
  node.shadow_mode = flag("shadow_mode");
  node.detailed_metric = flag("detailed_metric");
  node.share_threshold = flag("share_threshold");
  (void)flag("value_to_metric");  // a stats naming choice; validated, no effect here
  if (node.share_threshold && !node.pattern) {
    errors.add(yaml["share_threshold"], "share_threshold: needs a value with a '*' wildcard");
    ok = false;
  }
  node.stat_key = stat_prefix + "." + node.key + (node.value ? "_" + *node.value : "");
  // A null (`rate_limit:` left empty, or ~) is none, as lyft reads a null: the field's zero value.
  // So are the nulls in a rate_limit below (requests_per_unit 0, no name, no replaces).
  if (present(yaml["rate_limit"])) {
    node.rate_limit = loadRule(yaml["rate_limit"], errors);
    ok = ok && node.rate_limit.has_value();
  }
  if (yaml["descriptors"]) loadLevel(yaml["descriptors"], node.stat_key, node.children, errors);
  if (!ok) return std::nullopt;
  return node;
}

std::optional<RateLimitRule> LyftConfigBuilder::loadRule(const YAML::Node& yaml, Errors& errors) {
  if (!policy::isMap(yaml, "rate_limit", errors)) return std::nullopt;
  checkLyftKeys(yaml, kRateLimit, errors);
  RateLimitRule rule;
  bool ok = true;
  if (yaml["unlimited"])
    rule.unlimited = lyftFlag(yaml["unlimited"], "unlimited", errors).value_or(false);
  if (yaml["name"]) rule.name = lyftText(yaml["name"], "name", errors).value_or("");
  if (yaml["unit"]) {
    // A null unit (`unit:` or `unit: ~`, as a template that renders nothing writes) is "" to
    // lyft, as any null is the field's zero value there.
    const auto text = yaml["unit"].IsNull() ? std::optional<std::string>("")
                                            : policy::scalar(yaml["unit"], "unit", errors);
    const auto unit = text ? parseUnit(*text) : std::nullopt;
    if (rule.unlimited) {
      // As lyft reads it: only a real unit contradicts unlimited; an empty or unknown one, as a
      // template may write (unit: ""), is ignored.
      if (unit) errors.add(yaml["unit"], "unit: must not be given with unlimited: true");
      ok = text.has_value() && !unit;
    } else {
      if (text && !unit) {
        errors.add(
            yaml["unit"],
            "unit: \"" + *text + "\" is not a unit (second, minute, hour, day, week, month, year)");
      }
      ok = unit.has_value();
      if (unit) rule.unit = *unit;
    }
  } else if (!rule.unlimited) {
    errors.add(yaml,
               "rate_limit: needs a unit (second, minute, hour, day, ...) or unlimited: true");
    ok = false;
  }
  if (present(yaml["requests_per_unit"])) {
    const auto count = requestsPerUnit(yaml["requests_per_unit"], errors);
    if (count && *count > std::numeric_limits<std::uint32_t>::max()) {
      errors.add(yaml["requests_per_unit"],
                 "requests_per_unit: must fit 32 bits (at most 4294967295)");
    }
    ok = ok && count && *count <= std::numeric_limits<std::uint32_t>::max();
    if (ok) rule.requests_per_unit = static_cast<std::uint32_t>(*count);
  }
  if (present(yaml["replaces"])) ok = loadReplaces(yaml["replaces"], rule, errors) && ok;
  if (!ok) return std::nullopt;
  if (!rule.unlimited && rule.requests_per_unit > 0) {
    Result<LimitSpec> spec =
        LimitSpec::fixedWindow(Rate{rule.requests_per_unit, unitMicros(rule.unit)});
    if (!spec.ok()) {
      errors.add(yaml, "rate_limit: " + spec.error());
      return std::nullopt;
    }
    rule.spec = std::move(spec).value();
  }
  return rule;
}

// Adds the last node of `level` to its indexes; a second node for the same key and value
// would never be reached, so it is an error, as in lyft.
void LyftConfigBuilder::index(DescriptorLevel& level, const YAML::Node& yaml, Errors& errors) {
  const std::size_t index = level.nodes.size() - 1;
  const DescriptorNode& node = level.nodes.back();
  DescriptorLevel::KeyNodes& nodes = level.by_key[node.key];
  bool duplicate = false;
  if (!node.value) {
    duplicate = nodes.any_value.has_value();
    if (!duplicate) nodes.any_value = index;
  } else if (node.pattern) {
    for (const std::size_t other : nodes.patterns) {
      duplicate = duplicate || *level.nodes[other].value == *node.value;
    }
    if (!duplicate) nodes.patterns.push_back(index);
  } else {
    duplicate = !nodes.exact.emplace(*node.value, index).second;
  }
  if (duplicate) {
    errors.add(yaml, "duplicate descriptor: key \"" + node.key + "\"" +
                         (node.value ? " with value \"" + *node.value + "\"" : " without a value") +
                         " is already defined at this level");
  }
}

LyftLoadResult loadLyftConfigTexts(std::span<const LyftSource> sources) {
  auto config = std::make_shared<LyftConfig>();
  LyftConfigBuilder builder(*config);
  std::vector<std::string> all_errors;
  for (const LyftSource& source : sources) {
    Errors errors(source.name);
    // Envoy sends descriptors as UTF-8: no rule spelled otherwise could match, and its name
    // would break the metrics page. lyft's loader refuses such a file too, and one holding a
    // control character ("control characters are not allowed", says its YAML library).
    policy::checkConfigText(source.yaml, errors);
    if (!errors.empty()) {
      for (std::string& error : errors.take()) all_errors.push_back(std::move(error));
      continue;
    }
    try {
      // One domain per file. lyft/ratelimit drops a second document without a word; here it
      // is an error at its line, as in Sluice's own config.
      const YAML::Node document = policy::onlyDocument(source.yaml, errors);
      policy::checkDuplicateKeys(document, errors);
      policy::resolveMergeKeys(document, errors);
      builder.addDomain(document, errors);
    } catch (const YAML::Exception& error) {
      errors.add(error);
    } catch (const std::exception& error) {
      // Out of memory, most likely: the file is refused, and a reload keeps the old config.
      errors.add(YAML::Mark::null_mark(), std::string("cannot be loaded: ") + error.what());
    }
    for (std::string& error : errors.take()) all_errors.push_back(std::move(error));
  }
  if (!all_errors.empty()) return {nullptr, std::move(all_errors), std::nullopt};
  config->shareCountsByName();
  return {std::move(config), {}, std::nullopt};
}

}  // namespace sluice::rls
