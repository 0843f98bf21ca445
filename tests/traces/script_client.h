// Test helper: calls the embedded Sluice Lua script (src/store/redis/scripts.h) on a real
// redis-server, speaking script_protocol.h, and turns its replies back into Outcomes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithm/compact_state.h"
#include "sluice/limit_spec.h"
#include "sluice/outcome.h"
#include "store/redis/script_protocol.h"
#include "store/redis/scripts.h"
#include "support/packed_reply.h"
#include "support/redis_server.h"

namespace sluice::testing {

struct ScriptCheck {
  std::string key;  // the Redis key
  const LimitSpec* spec = nullptr;
  std::uint64_t cost = 1;
};

struct DecideReply {
  Micros now_us = 0;
  std::vector<Outcome> outcomes;
};

class ScriptClient {
 public:
  explicit ScriptClient(RedisConnection& connection) : connection_(connection) {
    const RedisReply loaded =
        connection_.command({"SCRIPT", "LOAD", std::string(redis::sluiceScript())});
    if (loaded.type != REDIS_REPLY_STRING) {
      throw std::runtime_error("SCRIPT LOAD failed: " + loaded.text);
    }
    sha_ = loaded.text;
  }

  // The EVALSHA arguments for one call; no now_us reads Redis TIME. Checks that point at one
  // LimitSpec share its entry, as the stores' calls do.
  [[nodiscard]] std::vector<std::string> arguments(const std::string& op,
                                                   std::optional<Micros> now_us,
                                                   std::span<const ScriptCheck> checks) const {
    return layout(op, now_us, checks, {});
  }

  // One batch call of `requests`, each decided as its own decide call would be.
  [[nodiscard]] std::vector<std::string> batchArguments(
      std::optional<Micros> now_us, std::span<const std::vector<ScriptCheck>> requests) const {
    std::vector<ScriptCheck> all;
    std::vector<std::size_t> sizes;
    for (const auto& request : requests) {
      all.insert(all.end(), request.begin(), request.end());
      sizes.push_back(request.size());
    }
    return layout("batch", now_us, all, sizes);
  }

  // One call, as the stores make it. Keys keep the TTL the script gives them.
  RedisReply call(const std::string& op, std::optional<Micros> now_us,
                  std::span<const ScriptCheck> checks) {
    return connection_.command(arguments(op, now_us, checks));
  }

  DecideReply decide(std::optional<Micros> now_us, std::span<const ScriptCheck> checks) {
    return parseDecide(call("decide", now_us, checks), checks.size());
  }

  // Pipelined replay of simulated time: the call, then PERSIST on its keys in the same
  // MULTI/EXEC, so keys whose simulated TTL is short never expire in real time mid-trace (a full
  // state equals an absent key, so this changes no outcome). Read with readPersisted().
  void appendPersisted(const std::string& op, Micros now_us, std::span<const ScriptCheck> checks) {
    connection_.append({"MULTI"});
    connection_.append(arguments(op, now_us, checks));
    for (const ScriptCheck& check : checks) connection_.append({"PERSIST", check.key});
    connection_.append({"EXEC"});
    pending_persists_.push_back(checks.size());
  }

  // The script's reply to the oldest appendPersisted() not yet read.
  RedisReply readPersisted() {
    const std::size_t persists = pending_persists_.front();
    pending_persists_.pop_front();
    for (std::size_t i = 0; i < persists + 2; ++i) connection_.read();  // OK, QUEUED...
    RedisReply exec = connection_.read();
    if (exec.type != REDIS_REPLY_ARRAY || exec.elements.empty()) {
      throw std::runtime_error("EXEC failed: " + exec.text);
    }
    return exec.elements.front();
  }

  RedisReply callPersisted(const std::string& op, Micros now_us,
                           std::span<const ScriptCheck> checks) {
    appendPersisted(op, now_us, checks);
    return readPersisted();
  }

  DecideReply decidePersisted(Micros now_us, std::span<const ScriptCheck> checks) {
    return parseDecide(callPersisted("decide", now_us, checks), checks.size());
  }

  // The (a, b) states a sync reply gives, one per check.
  static std::vector<algorithm::CompactState> parseSync(const RedisReply& reply,
                                                        std::size_t checks) {
    expectIntegers(reply, 1 + 2 * checks);
    std::vector<algorithm::CompactState> states;
    for (std::size_t i = 0; i < checks; ++i) {
      states.push_back({reply.elements[1 + 2 * i].integer, reply.elements[2 + 2 * i].integer});
    }
    return states;
  }

  static DecideReply parseDecide(const RedisReply& reply, std::size_t checks) {
    const std::vector<long long> numbers = packedNumbers(reply);
    if (numbers.size() != 1 + redis::kDecideFieldsPerCheck * checks) {
      throw std::runtime_error("a decide reply of " + std::to_string(numbers.size()) +
                               " numbers for " + std::to_string(checks) + " checks");
    }
    DecideReply out;
    out.now_us = numbers[0];
    for (std::size_t i = 0; i < checks; ++i) {
      const auto field = [&](std::size_t index) {
        return numbers[1 + redis::kDecideFieldsPerCheck * i + index];
      };
      Outcome outcome;
      outcome.allowed = field(0) == 1;
      outcome.reason = static_cast<DenyReason>(field(1));
      outcome.limit = static_cast<std::uint64_t>(field(2));
      outcome.remaining = static_cast<std::uint64_t>(field(3));
      outcome.reset_after_us = field(4);
      outcome.retry_after_us = field(5) == redis::kNeverOnWire ? kNever : field(5);
      outcome.delay_us = field(6);
      out.outcomes.push_back(outcome);
    }
    return out;
  }

 private:
  static void expectIntegers(const RedisReply& reply, std::size_t count) {
    if (reply.type != REDIS_REPLY_ARRAY || reply.elements.size() != count) {
      throw std::runtime_error("unexpected script reply: " +
                               (reply.isError() ? reply.text : "wrong shape"));
    }
    for (const RedisReply& element : reply.elements) {
      if (element.type != REDIS_REPLY_INTEGER) throw std::runtime_error("non-integer in reply");
    }
  }

  // EVALSHA sha n keys... op now_us S specs... [R (1, size) per request] (1, spec index, cost)
  // per check.
  [[nodiscard]] std::vector<std::string> layout(const std::string& op, std::optional<Micros> now_us,
                                                std::span<const ScriptCheck> checks,
                                                std::span<const std::size_t> sizes) const {
    std::vector<std::string> args = {"EVALSHA", sha_, std::to_string(checks.size())};
    for (const ScriptCheck& check : checks) args.push_back(check.key);
    args.push_back(op);
    args.push_back(now_us ? std::to_string(*now_us) : "");
    std::vector<const LimitSpec*> specs;
    std::vector<std::size_t> spec_of;
    for (const ScriptCheck& check : checks) {
      const auto found = std::find(specs.begin(), specs.end(), check.spec);
      spec_of.push_back(static_cast<std::size_t>(found - specs.begin()) + 1);
      if (found == specs.end()) specs.push_back(check.spec);
    }
    args.push_back(std::to_string(specs.size()));
    for (const LimitSpec* spec : specs) {
      for (const std::uint64_t value :
           {std::uint64_t{static_cast<std::uint8_t>(spec->algorithm())}, spec->rate().count,
            static_cast<std::uint64_t>(spec->rate().period_us), spec->burst(),
            static_cast<std::uint64_t>(spec->unitWeight()),
            static_cast<std::uint64_t>(spec->drainPerMicro())}) {
        args.push_back(std::to_string(value));
      }
    }
    // Runs of equal consecutive entries, as script_protocol.h lays them out; every run here is
    // one entry long, so the tests also cover calls that gain nothing from runs.
    if (op == "batch") {
      args.push_back(std::to_string(sizes.size()));
      for (const std::size_t size : sizes) {
        args.push_back("1");
        args.push_back(std::to_string(size));
      }
    }
    for (std::size_t i = 0; i < checks.size(); ++i) {
      args.push_back("1");
      args.push_back(std::to_string(spec_of[i]));
      args.push_back(std::to_string(checks[i].cost));
    }
    return args;
  }

  RedisConnection& connection_;
  std::string sha_;
  std::deque<std::size_t> pending_persists_;
};

}  // namespace sluice::testing
