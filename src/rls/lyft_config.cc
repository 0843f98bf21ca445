// A loaded lyft config at work: matching a request's descriptor to its rule, as lyft matches,
// and the per-rule counts that outlive a reload. Loading the YAML is lyft_config_loader.cc.
#include "rls/lyft_config.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "policy/key_selector.h"

namespace sluice::rls {
namespace {

struct NamedUnit {
  std::string_view name;
  Unit unit;
  Micros window_us;
};

constexpr NamedUnit kUnits[] = {
    {"second", Unit::kSecond, kMicrosPerSecond}, {"minute", Unit::kMinute, kMicrosPerMinute},
    {"hour", Unit::kHour, kMicrosPerHour},       {"day", Unit::kDay, kMicrosPerDay},
    {"week", Unit::kWeek, kMicrosPerWeek},       {"month", Unit::kMonth, kMicrosPerMonth},
    {"year", Unit::kYear, kMicrosPerYear},
};

bool equalsIgnoreCase(std::string_view a, std::string_view b) noexcept {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return (x >= 'A' && x <= 'Z' ? x + 32 : x) == (y >= 'A' && y <= 'Z' ? y + 32 : y);
  });
}

const DescriptorNode* findAt(const DescriptorLevel& level, const EntryView& entry) {
  const auto key = level.by_key.find(entry.key);
  if (key == level.by_key.end()) return nullptr;
  const DescriptorLevel::KeyNodes& nodes = key->second;
  if (const auto exact = nodes.exact.find(entry.value); exact != nodes.exact.end()) {
    return &level.nodes[exact->second];
  }
  for (const std::size_t index : nodes.patterns) {
    if (matchesPattern(*level.nodes[index].value, entry.value)) return &level.nodes[index];
  }
  return nodes.any_value ? &level.nodes[*nodes.any_value] : nullptr;
}

}  // namespace

namespace {

std::uint64_t saturatingSum(std::uint64_t a, std::uint64_t b) noexcept {
  return b > std::numeric_limits<std::uint64_t>::max() - a
             ? std::numeric_limits<std::uint64_t>::max()
             : a + b;
}

}  // namespace

void RuleCounts::addHits(std::uint64_t hits) noexcept {
  std::uint64_t seen = total_hits.load(std::memory_order_relaxed);
  while (!total_hits.compare_exchange_weak(seen, saturatingSum(seen, hits),
                                           std::memory_order_relaxed)) {
  }
}

void RuleStats::addDetailed(std::string_view tuple, std::uint64_t hits, bool over, bool shadow) {
  std::lock_guard lock(mutex_);
  Counts* counts = nullptr;
  if (tuple.size() <= kMaxDetailedBytes) {
    auto found = detailed_.find(tuple);
    if (found == detailed_.end() && detailed_.size() < kMaxDetailed) {
      found = detailed_.emplace(std::string(tuple), Counts{}).first;
    }
    if (found != detailed_.end()) counts = &found->second;
  }
  if (counts == nullptr) counts = &(overflow_ ? *overflow_ : overflow_.emplace());
  counts->total_hits = saturatingSum(counts->total_hits, hits);
  if (over) ++(shadow ? counts->shadow_over_limit : counts->over_limit);
}

void RuleStats::forEachDetailed(const std::string& overflow_name,
                                const DetailedVisitor& visit) const {
  std::lock_guard lock(mutex_);
  for (const auto& [tuple, counts] : detailed_) {
    visit(tuple, counts.total_hits, counts.over_limit, counts.shadow_over_limit);
  }
  if (overflow_) {
    visit(overflow_name, overflow_->total_hits, overflow_->over_limit,
          overflow_->shadow_over_limit);
  }
}

std::optional<Unit> parseUnit(std::string_view name) noexcept {
  for (const NamedUnit& unit : kUnits) {
    if (equalsIgnoreCase(unit.name, name)) return unit.unit;
  }
  return std::nullopt;
}

Micros unitMicros(Unit unit) noexcept {
  for (const NamedUnit& named : kUnits) {
    if (named.unit == unit) return named.window_us;
  }
  return 0;
}

bool matchesPattern(std::string_view pattern, std::string_view text) noexcept {
  // Greedy glob with backtracking to the last '*': linear in practice, never exponential.
  std::size_t p = 0;
  std::size_t t = 0;
  std::size_t star = std::string_view::npos;
  std::size_t star_text = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_text = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++star_text;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

const Domain* LyftConfig::domain(std::string_view name) const noexcept {
  const auto found = domains_.find(name);
  return found == domains_.end() ? nullptr : &found->second;
}

const DescriptorNode* LyftConfig::match(const Domain& domain, std::span<const EntryView> entries,
                                        std::string* counter_key) {
  if (entries.empty()) return nullptr;
  const DescriptorLevel* level = &domain.descriptors;
  const DescriptorNode* node = nullptr;
  if (counter_key != nullptr) {
    *counter_key += 'E';  // policy counters start with a digit, so these never meet them
    policy::appendCounterPart(*counter_key, domain.name);
  }
  for (const EntryView& entry : entries) {
    if (level == nullptr) return nullptr;  // the tuple is longer than the config
    node = findAt(*level, entry);
    if (node == nullptr) return nullptr;
    if (counter_key != nullptr) {
      policy::appendCounterPart(*counter_key, entry.key);
      *counter_key += node->share_threshold ? '*' : '=';
      policy::appendCounterPart(*counter_key, node->share_threshold ? *node->value : entry.value);
    }
    level = node->children.nodes.empty() ? nullptr : &node->children;
  }
  return node;
}

namespace {

void visitLevel(const Domain& domain, const DescriptorLevel& level,
                const std::function<void(const Domain&, const DescriptorNode&)>& visit) {
  for (const DescriptorNode& node : level.nodes) {
    if (node.rate_limit) visit(domain, node);
    visitLevel(domain, node.children, visit);
  }
}

// Gives each rule of `level` the counts `kept` holds under its stat_key, if any.
void adoptCounts(DescriptorLevel& level,
                 const std::unordered_map<std::string_view, std::shared_ptr<RuleStats>>& kept) {
  for (DescriptorNode& node : level.nodes) {
    if (node.rate_limit) {
      const auto found = kept.find(node.stat_key);
      if (found != kept.end()) node.stats = found->second;
    }
    adoptCounts(node.children, kept);
  }
}

}  // namespace

void LyftConfig::forEachRule(
    const std::function<void(const Domain&, const DescriptorNode&)>& visit) const {
  std::vector<const Domain*> sorted;
  for (const auto& [name, domain] : domains_) sorted.push_back(&domain);
  std::sort(sorted.begin(), sorted.end(),
            [](const Domain* a, const Domain* b) { return a->name < b->name; });
  for (const Domain* domain : sorted) visitLevel(*domain, domain->descriptors, visit);
}

void LyftConfig::keepCountsOf(const LyftConfig& previous) {
  // One RuleStats per stat_key in `previous` (shareCountsByName): the first of each is all.
  std::unordered_map<std::string_view, std::shared_ptr<RuleStats>> kept;
  previous.forEachRule(
      [&](const Domain&, const DescriptorNode& node) { kept.emplace(node.stat_key, node.stats); });
  for (auto& [name, domain] : domains_) adoptCounts(domain.descriptors, kept);
}

void LyftConfig::shareCountsByName() {
  std::unordered_map<std::string_view, std::shared_ptr<RuleStats>> first;
  forEachRule(
      [&](const Domain&, const DescriptorNode& node) { first.emplace(node.stat_key, node.stats); });
  for (auto& [name, domain] : domains_) adoptCounts(domain.descriptors, first);
}

}  // namespace sluice::rls
