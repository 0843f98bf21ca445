#include "store/redis/script_call.h"

#include <algorithm>
#include <bit>
#include <cstdint>

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

// Calls emit(first, end) for each run [first, end) of the indexes below `count`, in order, where
// a run is the longest stretch of indexes i for which same(first, i).
template <typename Same, typename Emit>
void forEachRun(std::size_t count, Same same, Emit emit) {
  for (std::size_t first = 0; first < count;) {
    std::size_t end = first + 1;
    while (end < count && same(first, end)) ++end;
    emit(first, end);
    first = end;
  }
}

// Number `index` of a packed reply (script_protocol.h): a little-endian IEEE double that must
// hold an integer below 2^53 in magnitude, as every number the script computes does.
bool readPacked(const redisReply* reply, std::size_t index, long long& value) {
  const auto* bytes =
      reinterpret_cast<const unsigned char*>(reply->str) + kBytesPerPackedNumber * index;
  std::uint64_t bits = 0;
  for (std::size_t b = kBytesPerPackedNumber; b-- > 0;) bits = bits << 8 | bytes[b];
  const double number = std::bit_cast<double>(bits);
  constexpr auto kBound = static_cast<double>(kExactIntegersBelow);
  if (!(number > -kBound && number < kBound)) return false;  // NaN fails too
  value = static_cast<long long>(number);
  return static_cast<double>(value) == number;
}

// Why a reply that did not come, or came as an error, has no result.
std::optional<std::string> missingOrError(const redisReply* reply) {
  if (reply == nullptr) return "no reply";
  if (reply->type == REDIS_REPLY_ERROR) return std::string(errorText(reply));
  return std::nullopt;
}

std::optional<std::string> checkArray(const redisReply* reply, std::size_t expected) {
  if (auto error = missingOrError(reply)) return error;
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
  ScriptCall call = start(op, now_us, checks.size());
  for (std::size_t i = 0; i < checks.size(); ++i) {
    call.add(redisKey(key_prefix, checks[i]), fieldsOf(*checks[i].spec),
             costs.empty() ? checks[i].cost : costs[i]);
  }
  call.finish();
  return call;
}

ScriptCall ScriptCall::make(std::string_view op, std::span<const std::string> keys,
                            std::span<const LimitSpec* const> specs,
                            std::span<const std::uint64_t> costs, std::optional<Micros> now_us) {
  ScriptCall call = start(op, now_us, keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) call.add(keys[i], fieldsOf(*specs[i]), costs[i]);
  call.finish();
  return call;
}

ScriptCall ScriptCall::batch(std::span<ScriptCall> decides) {
  std::size_t total_checks = 0;
  for (const ScriptCall& decide : decides) total_checks += decide.key_count;
  ScriptCall call = start("batch", std::nullopt, total_checks);
  for (ScriptCall& decide : decides) {
    for (std::size_t i = 0; i < decide.key_count; ++i) {
      call.add(std::move(decide.strings[3 + i]), decide.specs_[decide.spec_of_[i]],
               decide.costs_[i]);
    }
    call.request_sizes_.push_back(decide.key_count);
  }
  call.finish();
  return call;
}

ScriptCall ScriptCall::refund(std::size_t first, std::size_t count, Micros now_us) const {
  ScriptCall call = start("refund", now_us, count);
  for (std::size_t i = first; i < first + count; ++i)
    call.add(std::string(key(i)), specs_[spec_of_[i]], costs_[i]);
  call.finish();
  return call;
}

std::vector<std::size_t> ScriptCall::requestSizes() const {
  if (request_sizes_.empty()) return {key_count};
  return request_sizes_;
}

ScriptCall::SpecFields ScriptCall::fieldsOf(const LimitSpec& spec) {
  return {.algorithm = static_cast<int>(spec.algorithm()),
          .count = spec.rate().count,
          .period_us = spec.rate().period_us,
          .burst = spec.burst(),
          .unit_weight = spec.unitWeight(),
          .drain_per_us = spec.drainPerMicro()};
}

ScriptCall ScriptCall::start(std::string_view op, std::optional<Micros> now_us,
                             std::size_t expected_checks) {
  ScriptCall call;
  call.op_ = op;
  call.now_us_ = now_us;
  // Room for the usual call: its keys, one spec, one run of requests, one run of checks.
  call.strings.reserve(3 + expected_checks + 3 + kArgsPerSpec + 3 + kArgsPerCheckRun);
  call.strings.emplace_back("EVALSHA");
  call.strings.emplace_back(sluiceLuaScript().sha1);
  call.strings.emplace_back();  // the key count, once known
  call.spec_of_.reserve(expected_checks);
  call.costs_.reserve(expected_checks);
  return call;
}

void ScriptCall::add(std::string key, const SpecFields& spec, std::uint64_t cost) {
  // Calls carry few distinct specs (the limits of a policy), so a linear search is short.
  const auto found = std::find(specs_.begin(), specs_.end(), spec);
  spec_of_.push_back(static_cast<std::uint32_t>(found - specs_.begin()));
  if (found == specs_.end()) specs_.push_back(spec);
  // The script takes integers below 2^53 only, and refuses the whole call otherwise (a batch:
  // every request in it). Every spec's limit is far below that (lua_bounds.h), so any larger
  // cost decides as this one does: it exceeds the limit.
  costs_.push_back(std::min(cost, kExactIntegersBelow - 1));
  strings.push_back(std::move(key));
  ++key_count;
}

void ScriptCall::finish() {
  strings[2] = std::to_string(key_count);
  strings.push_back(op_);
  strings.push_back(now_us_ ? std::to_string(*now_us_) : std::string());
  strings.push_back(std::to_string(specs_.size()));
  for (const SpecFields& spec : specs_) {
    strings.push_back(std::to_string(spec.algorithm));
    strings.push_back(std::to_string(spec.count));
    strings.push_back(std::to_string(spec.period_us));
    strings.push_back(std::to_string(spec.burst));
    strings.push_back(std::to_string(spec.unit_weight));
    strings.push_back(std::to_string(spec.drain_per_us));
  }
  if (!request_sizes_.empty()) appendRequestRuns();
  appendCheckRuns();
}

void ScriptCall::appendRequestRuns() {
  const std::size_t runs_at = strings.size();
  strings.emplace_back();  // how many runs, once known
  std::size_t runs = 0;
  forEachRun(
      request_sizes_.size(),
      [&](std::size_t first, std::size_t i) { return request_sizes_[i] == request_sizes_[first]; },
      [&](std::size_t first, std::size_t end) {
        strings.push_back(std::to_string(end - first));
        strings.push_back(std::to_string(request_sizes_[first]));
        ++runs;
      });
  strings[runs_at] = std::to_string(runs);
}

void ScriptCall::appendCheckRuns() {
  forEachRun(
      key_count,
      [&](std::size_t first, std::size_t i) {
        return spec_of_[i] == spec_of_[first] && costs_[i] == costs_[first];
      },
      [&](std::size_t first, std::size_t end) {
        strings.push_back(std::to_string(end - first));
        strings.push_back(std::to_string(spec_of_[first] + 1));  // the script counts from 1
        strings.push_back(std::to_string(costs_[first]));
      });
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
  if (auto error = missingOrError(reply)) return error;
  if (reply->type != REDIS_REPLY_STRING ||
      reply->len != kBytesPerPackedNumber * (1 + total_checks * kDecideFieldsPerCheck)) {
    return "unexpected reply shape from the sluice script";
  }
  long long now = 0;
  if (!readPacked(reply, 0, now)) return "the script's time is not an integer";
  now_us = now;
  return std::nullopt;
}

std::optional<std::string> readDecideOutcomes(const redisReply* reply, std::size_t first,
                                              std::span<Outcome> outcomes) {
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    long long fields[kDecideFieldsPerCheck];
    for (std::size_t f = 0; f < kDecideFieldsPerCheck; ++f) {
      if (!readPacked(reply, 1 + (first + i) * kDecideFieldsPerCheck + f, fields[f]) ||
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
