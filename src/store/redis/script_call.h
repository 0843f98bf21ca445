// One call of the Lua script (script_protocol.h) for a list of checks: the arguments going out,
// and the outcomes read back from the reply.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "algorithm/compact_state.h"
#include "sluice/decision.h"
#include "sluice/outcome.h"

struct redisReply;

namespace sluice::redis {

// The script's text and SHA-1, as EVALSHA names it.
struct Script {
  Script();
  std::string_view text;
  std::string sha1;  // 40 lowercase hex digits
};
const Script& sluiceLuaScript();

class ScriptCall {
 public:
  // "EVALSHA" sha numkeys key... op now_us specs... [requests] checks...; the strings own what
  // argv() views.
  std::vector<std::string> strings;
  std::size_t key_count = 0;  // the checks it carries

  // Builds a call of `op` ("decide" | "refund" | "sync") over `checks`; the cost of check i is
  // costs[i] when given, else checks[i].cost. `now_us`: nullopt lets Redis read TIME.
  static ScriptCall make(std::string_view op, std::string_view key_prefix,
                         std::span<const LimitCheck> checks, std::optional<Micros> now_us,
                         std::span<const std::uint64_t> costs = {});
  // The same with the Redis keys already made (redisKey()), one spec and cost per key.
  static ScriptCall make(std::string_view op, std::span<const std::string> keys,
                         std::span<const LimitSpec* const> specs,
                         std::span<const std::uint64_t> costs, std::optional<Micros> now_us);
  // One "batch" call of several decide calls (made without now_us), each one request; moves
  // their keys.
  static ScriptCall batch(std::span<ScriptCall> decides);
  // The "refund" call that undoes what this decide or batch call consumed for its checks
  // [first, first + count) (one request's run), decided at `now_us` (the time its reply gave).
  [[nodiscard]] ScriptCall refund(std::size_t first, std::size_t count, Micros now_us) const;
  // How many checks each request of this decide (one request) or batch call has, in order.
  [[nodiscard]] std::vector<std::size_t> requestSizes() const;
  [[nodiscard]] std::vector<std::string_view> argv() const;
  // The same call sent as EVAL with the script's text, for a Redis that has forgotten the script.
  [[nodiscard]] std::vector<std::string_view> evalArgv() const;
  [[nodiscard]] std::string_view key(std::size_t index) const { return strings[3 + index]; }

 private:
  // A spec as the script reads it (script_protocol.h); a call sends each distinct one once.
  struct SpecFields {
    int algorithm = 0;
    std::uint64_t count = 0;
    Micros period_us = 0;
    std::uint64_t burst = 0;
    std::int64_t unit_weight = 0;
    std::int64_t drain_per_us = 0;
    bool operator==(const SpecFields&) const = default;
  };
  static SpecFields fieldsOf(const LimitSpec& spec);

  // A call is built by start(), one add() per check (keys go straight to their place in
  // `strings`), then finish(), which appends what follows the keys.
  static ScriptCall start(std::string_view op, std::optional<Micros> now_us,
                          std::size_t expected_checks);
  void add(std::string key, const SpecFields& spec, std::uint64_t cost);
  void finish();
  // The arguments that say which requests a batch has, and each check's spec and cost, both as
  // runs of equal consecutive entries (script_protocol.h).
  void appendRequestRuns();
  void appendCheckRuns();

  std::string op_;
  std::optional<Micros> now_us_;
  std::vector<SpecFields> specs_;
  std::vector<std::uint32_t> spec_of_;      // per check: its spec's index in specs_
  std::vector<std::uint64_t> costs_;        // per check
  std::vector<std::size_t> request_sizes_;  // a batch's; empty for any other call
};

// True for an error reply saying the script is not loaded.
[[nodiscard]] bool isNoScript(const redisReply* reply) noexcept;
// The reply's error text, or empty when it is not an error reply.
[[nodiscard]] std::string_view errorText(const redisReply* reply) noexcept;

// A decide reply into outcomes (one per check) and the Redis time it was decided at. Error text
// for a malformed reply.
[[nodiscard]] std::optional<std::string> readDecideReply(const redisReply* reply,
                                                         std::span<Outcome> outcomes,
                                                         Micros& now_us);
// A batch reply: the shape for `total_checks` checks and the time, then, for each request, its
// checks (from `first`) into its outcomes. readDecideOutcomes reads only a reply whose shape
// readDecideShape accepted, for at least first + outcomes.size() checks.
[[nodiscard]] std::optional<std::string> readDecideShape(const redisReply* reply,
                                                         std::size_t total_checks, Micros& now_us);
[[nodiscard]] std::optional<std::string> readDecideOutcomes(const redisReply* reply,
                                                            std::size_t first,
                                                            std::span<Outcome> outcomes);
// For a decide or batch call answered as failed whose reply came after all: the refund calls
// that undo what it consumed, one per request the reply says was admitted (every check of the
// request allowed; a denied request consumed nothing). None for an error reply: nothing ran.
[[nodiscard]] std::vector<ScriptCall> refundsOfLateReply(const ScriptCall& decided,
                                                         const redisReply* reply);
// A sync reply into one state per check.
[[nodiscard]] std::optional<std::string> readSyncReply(const redisReply* reply,
                                                       std::span<algorithm::CompactState> states,
                                                       Micros& now_us);

}  // namespace sluice::redis
