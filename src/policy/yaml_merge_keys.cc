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

// A mapping's entries in order, found by their (scalar) key.
class Entries {
 public:
  // As go-yaml v2 decodes into a value already set: a mapping into a mapping merges key by key,
  // all the way down; anything else replaces it.
  void assign(const YAML::Node& key, const YAML::Node& value) {
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
  static YAML::Node merged(const YAML::Node& earlier, const YAML::Node& later) {
    if (!(earlier.IsMap() && later.IsMap())) return later;
    Entries both;
    for (const auto& entry : earlier) both.assign(entry.first, entry.second);
    for (const auto& entry : later) both.assign(entry.first, entry.second);
    YAML::Node map(YAML::NodeType::Map);  // new: the two may be shared through aliases
    for (const auto& [key, value] : both.list()) map.force_insert(key, value);
    return map;
  }

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
    Entries entries;
    for (auto entry : map) {
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
    const YAML::Node& view = map;  // looked up const: the mutable operator[] would add keys
    for (const auto& [key, value] : entries.list()) {
      if (key.IsScalar() && view[key.Scalar()]) map.remove(key.Scalar());
    }
    while (view[kMergeKey]) map.remove(kMergeKey);
    for (const auto& [key, value] : entries.list()) map.force_insert(key, value);
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
};

}  // namespace

void resolveMergeKeys(YAML::Node root, Errors& errors) { MergeResolver(errors).resolve(root); }

}  // namespace sluice::policy
