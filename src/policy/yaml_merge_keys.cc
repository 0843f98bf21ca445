#include "policy/yaml_merge_keys.h"

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

namespace sluice::policy {
namespace {

constexpr const char* kMergeKey = "<<";

class MergeResolver {
 public:
  explicit MergeResolver(Errors& errors) : errors_(errors) {}

  // Nodes are told apart by their place in the text, which an alias shares with its anchor.
  void resolve(YAML::Node node) {
    if (!(node.IsMap() || node.IsSequence())) return;
    const auto [state, fresh] = states_.emplace(node.Mark().pos, State::kResolving);
    if (!fresh) {
      if (state->second == State::kResolving && node.IsMap()) {
        errors_.add(node, "a merge key (<<) makes this mapping merge itself");
      }
      return;
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
    YAML::Node sources;  // rebound with reset(): a Node's operator= assigns its content
    bool merges = false;
    for (auto entry : map) {
      if (entry.first.IsScalar() && entry.first.Scalar() == kMergeKey && entry.first.Tag() != "!") {
        sources.reset(entry.second);
        merges = true;
      } else {
        resolve(entry.second);
      }
    }
    if (!merges) return;
    std::vector<YAML::Node> merged;
    if (sources.IsMap()) {
      merged.push_back(sources);
    } else if (sources.IsSequence()) {
      for (YAML::Node source : sources) merged.push_back(source);
    }
    map.remove(kMergeKey);
    for (YAML::Node source : merged) {
      if (!source.IsMap()) {
        errors_.add(source, "a merge key (<<) takes a mapping or a list of mappings");
        continue;
      }
      resolve(source);
      for (auto entry : source) {
        if (!entry.first.IsScalar()) continue;
        const std::string key = entry.first.Scalar();
        // Looked up through a const view: the mutable operator[] would add the key.
        const YAML::Node& view = map;
        if (key != kMergeKey && !view[key]) map[key] = entry.second;
      }
    }
    if (merged.empty()) {
      errors_.add(sources, "a merge key (<<) takes a mapping or a list of mappings");
    }
  }

  Errors& errors_;
  std::unordered_map<std::size_t, State> states_;
};

}  // namespace

void resolveMergeKeys(YAML::Node root, Errors& errors) { MergeResolver(errors).resolve(root); }

}  // namespace sluice::policy
