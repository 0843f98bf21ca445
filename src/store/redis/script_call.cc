#include "store/redis/script_call.h"

#include <algorithm>

#include <hiredis/hiredis.h>
#include <openssl/sha.h>

#include "store/redis/redis_keys.h"
#include "store/redis/script_protocol.h"
#include "store/redis/scripts.h"

namespace sluice::redis {
namespace {

bool readInteger(const redisReply* element, long long& value) {
  if (element == nullptr || element->type != REDIS_REPLY_INTEGER) return false;
  value = element->integer;
  return true;
}

std::optional<std::string> checkArray(const redisReply* reply, std::size_t expected) {
  if (reply == nullptr) return "no reply";
  if (reply->type == REDIS_REPLY_ERROR) return std::string(errorText(reply));
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements != expected) {
    return "unexpected reply shape from the sluice script";
  }
  return std::nullopt;
}

}  // namespace

Script::Script() : text(sluiceScript()) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  static constexpr char kHex[] = "0123456789abcdef";
  for (const unsigned char byte : digest) {
    sha1 += kHex[byte >> 4];
    sha1 += kHex[byte & 0xf];
  }
}

const Script& sluiceLuaScript() {
  static const Script script;
  return script;
}

ScriptCall ScriptCall::make(std::string_view op, std::string_view key_prefix,
                            std::span<const LimitCheck> checks, std::optional<Micros> now_us,
                            std::span<const std::uint64_t> costs) {
  std::vector<std::string> keys;
  std::vector<const LimitSpec*> specs;
  std::vector<std::uint64_t> all_costs;
  keys.reserve(checks.size());
  specs.reserve(checks.size());
  all_costs.reserve(checks.size());
  for (std::size_t i = 0; i < checks.size(); ++i) {
    keys.push_back(redisKey(key_prefix, checks[i]));
    specs.push_back(checks[i].spec);
    all_costs.push_back(costs.empty() ? checks[i].cost : costs[i]);
  }
  return make(op, keys, specs, all_costs, now_us);
}

ScriptCall ScriptCall::make(std::string_view op, std::span<const std::string> keys,
                            std::span<const LimitSpec* const> specs,
                            std::span<const std::uint64_t> costs, std::optional<Micros> now_us) {
  ScriptCall call;
  call.strings.reserve(5 + keys.size() * (1 + kArgsPerCheck));
  call.strings.emplace_back("EVALSHA");
  call.strings.emplace_back(sluiceLuaScript().sha1);
  call.strings.push_back(std::to_string(keys.size()));
  call.key_count = keys.size();
  for (const std::string& key : keys) call.strings.push_back(key);
  call.strings.emplace_back(op);
  call.strings.push_back(now_us ? std::to_string(*now_us) : std::string());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const LimitSpec& spec = *specs[i];
    call.strings.push_back(std::to_string(static_cast<int>(spec.algorithm())));
    call.strings.push_back(std::to_string(spec.rate().count));
    call.strings.push_back(std::to_string(spec.rate().period_us));
    call.strings.push_back(std::to_string(spec.burst()));
    call.strings.push_back(std::to_string(spec.unitWeight()));
    call.strings.push_back(std::to_string(spec.drainPerMicro()));
    call.strings.push_back(std::to_string(costs[i]));
  }
  return call;
}

ScriptCall ScriptCall::batch(std::span<ScriptCall> decides) {
  // A decide call's strings: EVALSHA sha n key_1..key_n "decide" now_us args...
  constexpr std::size_t kKeysAt = 3;
  std::size_t total_checks = 0;
  for (const ScriptCall& decide : decides) total_checks += decide.key_count;
  ScriptCall call;
  call.key_count = total_checks;
  call.strings.reserve(6 + decides.size() + total_checks * (1 + kArgsPerCheck));
  call.strings.emplace_back("EVALSHA");
  call.strings.emplace_back(sluiceLuaScript().sha1);
  call.strings.push_back(std::to_string(total_checks));
  for (ScriptCall& decide : decides) {
    for (std::size_t i = 0; i < decide.key_count; ++i)
      call.strings.push_back(std::move(decide.strings[kKeysAt + i]));
  }
  call.strings.emplace_back("batch");
  call.strings.emplace_back();  // Redis TIME
  call.strings.push_back(std::to_string(decides.size()));
  for (const ScriptCall& decide : decides) call.strings.push_back(decide.strings[2]);
  for (ScriptCall& decide : decides) {
    const std::size_t args_at = kKeysAt + decide.key_count + 2;
    for (std::size_t i = args_at; i < decide.strings.size(); ++i)
      call.strings.push_back(std::move(decide.strings[i]));
  }
  return call;
}

ScriptCall ScriptCall::refund(std::size_t first, std::size_t count, Micros now_us) const {
  const std::size_t args_at = argsAt();
  ScriptCall call;
  call.key_count = count;
  call.strings.reserve(5 + count * (1 + kArgsPerCheck));
  call.strings.emplace_back("EVALSHA");
  call.strings.emplace_back(sluiceLuaScript().sha1);
  call.strings.push_back(std::to_string(count));
  for (std::size_t i = first; i < first + count; ++i) call.strings.emplace_back(key(i));
  call.strings.emplace_back("refund");
  call.strings.push_back(std::to_string(now_us));
  const auto args = strings.begin() + static_cast<std::ptrdiff_t>(args_at + first * kArgsPerCheck);
  call.strings.insert(call.strings.end(), args,
                      args + static_cast<std::ptrdiff_t>(count * kArgsPerCheck));
  return call;
}

// Either call's strings: EVALSHA sha n key_1..key_n op now_us [R size_1..size_R] args...
bool ScriptCall::isBatch() const { return strings[3 + key_count] == "batch"; }

std::size_t ScriptCall::argsAt() const {
  const std::size_t after_time = 3 + key_count + 2;
  return isBatch() ? after_time + 1 + std::stoull(strings[after_time]) : after_time;
}

std::vector<std::size_t> ScriptCall::requestSizes() const {
  if (!isBatch()) return {key_count};
  const std::size_t requests_at = 3 + key_count + 2;
  std::vector<std::size_t> sizes(std::stoull(strings[requests_at]));
  for (std::size_t r = 0; r < sizes.size(); ++r)
    sizes[r] = std::stoull(strings[requests_at + 1 + r]);
  return sizes;
}

std::vector<std::string_view> ScriptCall::argv() const {
  return std::vector<std::string_view>(strings.begin(), strings.end());
}

std::vector<std::string_view> ScriptCall::evalArgv() const {
  std::vector<std::string_view> argv = this->argv();
  argv[0] = "EVAL";
  argv[1] = sluiceLuaScript().text;
  return argv;
}

bool isNoScript(const redisReply* reply) noexcept {
  return errorText(reply).starts_with("NOSCRIPT");
}

std::string_view errorText(const redisReply* reply) noexcept {
  if (reply == nullptr || reply->type != REDIS_REPLY_ERROR) return {};
  return std::string_view(reply->str, reply->len);
}

std::optional<std::string> readDecideReply(const redisReply* reply, std::span<Outcome> outcomes,
                                           Micros& now_us) {
  if (auto error = readDecideShape(reply, outcomes.size(), now_us)) return error;
  return readDecideOutcomes(reply, 0, outcomes);
}

std::optional<std::string> readDecideShape(const redisReply* reply, std::size_t total_checks,
                                           Micros& now_us) {
  if (auto error = checkArray(reply, 1 + total_checks * kDecideFieldsPerCheck)) return error;
  long long now = 0;
  if (!readInteger(reply->element[0], now)) return "the script's time is not an integer";
  now_us = now;
  return std::nullopt;
}

std::optional<std::string> readDecideOutcomes(const redisReply* reply, std::size_t first,
                                              std::span<Outcome> outcomes) {
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    long long fields[kDecideFieldsPerCheck];
    for (std::size_t f = 0; f < kDecideFieldsPerCheck; ++f) {
      if (!readInteger(reply->element[1 + (first + i) * kDecideFieldsPerCheck + f], fields[f]) ||
          (fields[f] < 0 && !(f == 5 && fields[f] == kNeverOnWire))) {
        return "the script's outcome is not a non-negative integer";
      }
    }
    if (fields[1] > static_cast<long long>(DenyReason::kStoreUnavailable))
      return "the script gave an unknown reason";
    Outcome& outcome = outcomes[i];
    outcome.allowed = fields[0] != 0;
    outcome.reason = static_cast<DenyReason>(fields[1]);
    outcome.limit = static_cast<std::uint64_t>(fields[2]);
    outcome.remaining = static_cast<std::uint64_t>(fields[3]);
    outcome.reset_after_us = fields[4];
    outcome.retry_after_us = fields[5] == kNeverOnWire ? kNever : fields[5];
    outcome.delay_us = fields[6];
  }
  return std::nullopt;
}

std::optional<std::string> readSyncReply(const redisReply* reply,
                                         std::span<algorithm::CompactState> states,
                                         Micros& now_us) {
  if (auto error = checkArray(reply, 1 + states.size() * 2)) return error;
  long long now = 0;
  if (!readInteger(reply->element[0], now)) return "the script's time is not an integer";
  now_us = now;
  for (std::size_t i = 0; i < states.size(); ++i) {
    long long a = 0;
    long long b = 0;
    if (!readInteger(reply->element[1 + 2 * i], a) || !readInteger(reply->element[2 + 2 * i], b))
      return "the script's state is not two integers";
    states[i] = {a, b};
  }
  return std::nullopt;
}

std::vector<ScriptCall> refundsOfLateReply(const ScriptCall& decided, const redisReply* reply) {
  Micros now_us = 0;
  if (readDecideShape(reply, decided.key_count, now_us)) return {};
  std::vector<ScriptCall> refunds;
  std::vector<Outcome> outcomes;
  std::size_t first = 0;
  for (const std::size_t size : decided.requestSizes()) {
    outcomes.resize(size);
    const bool consumed =
        !readDecideOutcomes(reply, first, outcomes) &&
        std::all_of(outcomes.begin(), outcomes.end(), [](const Outcome& o) { return o.allowed; });
    if (consumed) refunds.push_back(decided.refund(first, size, now_us));
    first += size;
  }
  return refunds;
}

}  // namespace sluice::redis
