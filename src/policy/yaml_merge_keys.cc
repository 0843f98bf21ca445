#include "policy/yaml_merge_keys.h"

#include <cstddef>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sluice::policy {
namespace {

constexpr const char* kMergeKey = "<<";

bool isMergeKey(const YAML::Node& key) {
  // A quoted "<<" (tag "!") is an ordinary key, as in YAML 1.1.
  return key.IsScalar() && key.Scalar() == kMergeKey && key.Tag() != "!";
}

// How much merging one file may do. Merges of aliases of merges grow exponentially with their
// nesting (a 679-byte file took over 15 minutes); lyft's YAML library refuses such files as
// excessive aliasing. Entries written, and mappings merged into mappings (each builds a new
// mapping, which yaml-cpp joins to the document's node memory at a cost that grows with it):
// real files merge a few defaults, far below either.
constexpr std::size_t kMaxMergedEntries = 100'000;
constexpr std::size_t kMaxDeepMerges = 1'000;

struct MergeBudget {
  std::size_t entries = kMaxMergedEntries;
  std::size_t deep_merges = kMaxDeepMerges;
  [[nodiscard]] bool spent() const { return entries == 0 || deep_merges == 0; }
};

// A mapping's entries in order, found by their (scalar) key.
class Entries {
 public:
  explicit Entries(MergeBudget& budget) : budget_(budget) {}

  // As go-yaml v2 decodes into a value already set: a mapping into a mapping merges key by key,
  // all the way down; anything else replaces it. Does nothing once the budget is spent.
  void assign(const YAML::Node& key, const YAML::Node& value) {
    if (budget_.spent()) return;
    --budget_.entries;
    const std::string name = key.IsScalar() ? key.Scalar() : std::string();
    const auto found = index_.find(name);
    if (name.empty() || found == index_.end()) {
      if (!name.empty()) index_.emplace(name, list_.size());
      list_.emplace_back(key, value);
      return;
    }
    YAML::Node& existing = list_[found->second].second;
    existing.reset(merged(existing, value));  // rebound: operator= would write into the node
  }

  [[nodiscard]] const std::vector<std::pair<YAML::Node, YAML::Node>>& list() const { return list_; }

 private:
  YAML::Node merged(const YAML::Node& earlier, const YAML::Node& later) {
    if (!(earlier.IsMap() && later.IsMap()) || budget_.spent()) return later;
    --budget_.deep_merges;
    Entries both(budget_);
    for (const auto& entry : earlier) both.assign(entry.first, entry.second);
    for (const auto& entry : later) both.assign(entry.first, entry.second);
    YAML::Node map(YAML::NodeType::Map);  // new: the two may be shared through aliases
    for (const auto& [key, value] : both.list()) map.force_insert(key, value);
    return map;
  }

  MergeBudget& budget_;
  std::vector<std::pair<YAML::Node, YAML::Node>> list_;
  std::unordered_map<std::string, std::size_t> index_;
};

class MergeResolver {
 public:
  explicit MergeResolver(Errors& errors) : errors_(errors) {}

  // Nodes are told apart by their place in the text, which an alias shares with its anchor.
  // `merged_into`: the node is the value of a merge key, resolved before its keys are taken.
  void resolve(YAML::Node node, bool merged_into = false) {
    if (!(node.IsMap() || node.IsSequence())) return;
    const auto [state, fresh] = states_.emplace(node.Mark().pos, State::kResolving);
    if (!fresh) {
      if (state->second == State::kResolving && merged_into) {
        errors_.add(node, "a merge key (<<) makes this mapping merge itself");
      }
      return;  // a list that contains itself is reported where descriptors are read
    }
    if (node.IsSequence()) {
      for (YAML::Node item : node) resolve(item);
    } else {
      resolveMap(node);
    }
    states_[node.Mark().pos] = State::kResolved;
  }

 private:
  enum class State { kResolving, kResolved };

  void resolveMap(YAML::Node map) {
    bool merges = false;
    for (const auto& entry : map) merges = merges || isMergeKey(entry.first);
    if (!merges) {
      for (auto entry : map) resolve(entry.second);
      return;
    }
    // As go-yaml v2 (lyft's YAML library) reads them: in the order written, a merge setting its
    // mappings' keys over those before it, and keys after it over its own.
    Entries entries(budget_);
    for (auto entry : map) {
      if (overBudget(entry.first)) return;
      if (!isMergeKey(entry.first)) {
        resolve(entry.second);
        entries.assign(entry.first, entry.second);
        continue;
      }
      for (YAML::Node source : sources(entry.first, entry.second)) {
        resolve(source, /*merged_into=*/true);
        for (const auto& merged : source) entries.assign(merged.first, merged.second);
      }
    }
    if (overBudget(map)) return;
    const YAML::Node& view = map;  // looked up const: the mutable operator[] would add keys
    for (const auto& [key, value] : entries.list()) {
      if (key.IsScalar() && view[key.Scalar()]) map.remove(key.Scalar());
    }
    while (view[kMergeKey]) map.remove(kMergeKey);
    for (const auto& [key, value] : entries.list()) map.force_insert(key, value);
  }

  // Whether merging has done all it may in this file; says so once, at `where`.
  bool overBudget(const YAML::Node& where) {
    if (!budget_.spent()) return false;
    if (!std::exchange(budget_reported_, true)) {
      errors_.add(where, "merge keys (<<) here expand too far (more than " +
                             std::to_string(kMaxMergedEntries) + " entries or " +
                             std::to_string(kMaxDeepMerges) +
                             " merged mappings): excessive aliasing");
    }
    return true;
  }

  // The mappings a merge key's value stands for, in the order they apply: for a list, the last
  // first, so that an earlier mapping's keys win. Reports any other value.
  std::vector<YAML::Node> sources(const YAML::Node& key, const YAML::Node& value) {
    std::vector<YAML::Node> found;
    if (value.IsMap()) {
      found.push_back(value);
    } else if (value.IsSequence() && value.Mark().pos > key.Mark().pos) {
      for (std::size_t i = value.size(); i-- > 0;) {
        if (value[i].IsMap()) {
          found.push_back(value[i]);
        } else {
          errors_.add(value[i], "a merge key (<<) takes a mapping or a list of mappings");
        }
      }
    } else if (value.IsSequence()) {
      // An alias to a list (its anchor comes before the key), refused as go-yaml v2 does; told
      // at the "<<", since an alias carries its anchor's place.
      errors_.add(key,
                  "a merge key (<<) takes a mapping or a list of mappings, not an alias to "
                  "a list");
    } else {
      errors_.add(value, "a merge key (<<) takes a mapping or a list of mappings");
    }
    return found;
  }

  Errors& errors_;
  std::unordered_map<std::size_t, State> states_;
  MergeBudget budget_;
  bool budget_reported_ = false;
};

}  // namespace

void resolveMergeKeys(YAML::Node root, Errors& errors) { MergeResolver(errors).resolve(root); }

}  // namespace sluice::policy
