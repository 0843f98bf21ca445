// lyft/ratelimit's configuration, read as is: a directory of YAML files, one domain each, with
// nested descriptors. Loading reports every problem with file:line:column; matching follows the
// reference server (exact key and value first, then `*` patterns in load order, then the node
// that names only the key).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

#include "sluice/limit_spec.h"
#include "sluice/time.h"

namespace sluice::rls {

// The values of envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit.
enum class Unit : std::uint8_t {
  kUnknown = 0,
  kSecond = 1,
  kMinute = 2,
  kHour = 3,
  kDay = 4,
  kMonth = 5,
  kYear = 6,
  kWeek = 7,
};

// Case-insensitive "second", "minute", "hour", "day", "week", "month", "year"; as lyft does, any
// name of the response enum but UNKNOWN.
[[nodiscard]] std::optional<Unit> parseUnit(std::string_view name) noexcept;
// The window of a unit: 1 s … 365 days (month 30 days, year 365 days); 0 for kUnknown.
[[nodiscard]] Micros unitMicros(Unit unit) noexcept;

// Counts kept per configured rule, for metrics. Relaxed atomics: the numbers are statistics.
struct RuleCounts {
  // Thread-safe. Adds to total_hits, stopping at the top: hits_addend comes from the request,
  // and a counter that wrapped would read as a reset.
  void addHits(std::uint64_t hits) noexcept;

  std::atomic<std::uint64_t> total_hits{0};
  std::atomic<std::uint64_t> over_limit{0};
  std::atomic<std::uint64_t> shadow_over_limit{0};
};

struct RuleStats : RuleCounts {
  // detailed_metric rules also count per request tuple ("domain.key_value.key_value"), up to
  // kMaxDetailed tuples per rule of at most kMaxDetailedBytes each: the values come from
  // requests, so the series, and what /metrics prints, must be bounded. A tuple that is too long,
  // or new once kMaxDetailed are tracked, is counted in the rule's one overflow series.
  static constexpr std::size_t kMaxDetailed = 1000;
  static constexpr std::size_t kMaxDetailedBytes = 256;

  // Thread-safe. Adds to the tuple's counts, or to the overflow counts.
  void addDetailed(std::string_view tuple, std::uint64_t hits, bool over, bool shadow);
  using DetailedVisitor =
      std::function<void(const std::string&, std::uint64_t, std::uint64_t, std::uint64_t)>;
  // Thread-safe. Calls `visit` with each tuple's counts, sorted by tuple, then with
  // `overflow_name` and the overflow counts when something overflowed.
  void forEachDetailed(const std::string& overflow_name, const DetailedVisitor& visit) const;

 private:
  struct Counts {
    std::uint64_t total_hits = 0, over_limit = 0, shadow_over_limit = 0;
  };
  mutable std::mutex mutex_;
  std::map<std::string, Counts, std::less<>> detailed_;
  std::optional<Counts> overflow_;
};

struct RateLimitRule {
  std::uint32_t requests_per_unit = 0;
  Unit unit = Unit::kUnknown;
  std::string name;  // optional; what other rules' `replaces` refer to
  bool unlimited = false;
  std::vector<std::string> replaces;
  // A fixed window of requests_per_unit per unit; nullopt when unlimited or when
  // requests_per_unit is 0 (every hit is over the limit).
  std::optional<LimitSpec> spec;
};

struct DescriptorNode;

// The nodes of one nesting level and the indexes matching uses.
struct DescriptorLevel {
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const noexcept {
      return std::hash<std::string_view>{}(text);
    }
  };
  template <typename V>
  using StringMap = boost::unordered_flat_map<std::string, V, StringHash, std::equal_to<>>;
  struct KeyNodes {
    StringMap<std::size_t> exact;          // value → node index
    std::vector<std::size_t> patterns;     // nodes whose value has a '*', in load order
    std::optional<std::size_t> any_value;  // the node with no value
  };

  std::vector<DescriptorNode> nodes;  // in load order
  StringMap<KeyNodes> by_key;
};

struct DescriptorNode {
  std::string key;
  std::optional<std::string> value;  // nullopt: any value, each value counted apart
  bool pattern = false;              // value contains '*' (zero or more characters)
  bool share_threshold = false;      // a pattern whose matching values share one counter
  bool shadow_mode = false;
  bool detailed_metric = false;
  std::optional<RateLimitRule> rate_limit;
  // lyft's stats name: "domain.key_value.key" along the path from the domain.
  std::string stat_key;
  // Shared by every rule of the same stat_key (LyftConfig::shareCountsByName), and with those of
  // the config this one replaced, so a reload does not restart the rule's counters
  // (LyftConfig::keepCountsOf).
  std::shared_ptr<RuleStats> stats = std::make_shared<RuleStats>();
  DescriptorLevel children;
};

struct Domain {
  std::string name;
  DescriptorLevel descriptors;
};

// One request descriptor entry, as matching sees it.
struct EntryView {
  std::string_view key;
  std::string_view value;
};

class LyftConfig {
 public:
  // Thread-safe (immutable after loading). nullptr when the domain is not configured.
  [[nodiscard]] const Domain* domain(std::string_view name) const noexcept;
  [[nodiscard]] std::size_t domainCount() const noexcept { return domains_.size(); }

  // Thread-safe. The node matched at the last entry, or nullptr when the tuple matches no node
  // or is longer than the configured nesting. The node may have no rate_limit (a whitelist, or
  // a tuple shorter than the config). When a node is returned and `counter_key` is not null,
  // appends the counter identity of the tuple: domain and each entry length-prefixed, with a
  // shared pattern in place of the value for share_threshold nodes.
  [[nodiscard]] static const DescriptorNode* match(const Domain& domain,
                                                   std::span<const EntryView> entries,
                                                   std::string* counter_key);

  // Calls `visit` for every node with a rate limit, in load order (for metrics).
  void forEachRule(const std::function<void(const Domain&, const DescriptorNode&)>& visit) const;

  // Before this config is served in place of `previous`: each rule whose stat_key `previous`
  // also has takes over that rule's counts, as lyft's stats outlive a reload, so a Prometheus
  // counter does not fall back to 0 because the files changed. Not thread-safe: call it before
  // the config is shared.
  void keepCountsOf(const LyftConfig& previous);
  // Once loaded: rules of one stat_key (key "a.b", and key "a" with a nested "b") count in one
  // RuleStats, as lyft's statsd counters of one name add up. With a RuleStats each, a reload
  // could carry over only one of them, and the metric's sum fell back. Not thread-safe.
  void shareCountsByName();

 private:
  friend class LyftConfigBuilder;
  DescriptorLevel::StringMap<Domain> domains_;
};

using LyftConfigPtr = std::shared_ptr<const LyftConfig>;

struct LyftLoadResult {
  std::shared_ptr<LyftConfig> config;  // null when there were errors; not yet shared
  std::vector<std::string> errors;     // "file:line:column: message"
  // lyftConfigDirDigest of the files as this load read them (loadLyftConfigDir), whether they
  // loaded or not; nullopt when the directory could not be read.
  std::optional<std::size_t> digest;
};

// Reads every regular file under `dir`, recursively and whatever its name, as lyft does
// (sorted by path), each one domain; names starting with '.' (files and directories) are
// skipped, as a Kubernetes ConfigMap mount's `..data` holds the same files again. A file that
// is not a lyft config is an error naming it. An empty directory is a valid config with no
// domains. Never throws.
[[nodiscard]] LyftLoadResult loadLyftConfigDir(const std::string& dir);

// What loadLyftConfigDir would read from `dir`, as one number: the names and contents of the
// files it reads. Two reads of an unchanged directory give the same number; an edit, an
// added or removed file, or a swapped symlink (as Kubernetes updates a ConfigMap) changes it.
// nullopt when the directory or a file cannot be read.
[[nodiscard]] std::optional<std::size_t> lyftConfigDirDigest(const std::string& dir);

struct LyftSource {
  std::string name;  // used in messages, e.g. the file path
  std::string yaml;
};
// The same from texts in memory; each text is one domain. A file that stands for more than
// 100,000 descriptors (each use of a YAML alias repeats its subtree), or whose aliases make a
// list contain itself, is refused with one error, before anything is built.
[[nodiscard]] LyftLoadResult loadLyftConfigTexts(std::span<const LyftSource> sources);

// True when `text` matches `pattern`, where each '*' stands for zero or more characters.
[[nodiscard]] bool matchesPattern(std::string_view pattern, std::string_view text) noexcept;

}  // namespace sluice::rls
