// The Lua script computes exactly what the C++ algorithms compute: seeded random request
// sequences, fed to both with the same instants, must give identical outcomes field by field,
// and sync replies must equal the C++ state bit for bit.
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "algorithm/compact_state.h"
#include "algorithm/sliding_window_log.h"
#include "support/redis_server.h"
#include "support/specs.h"
#include "traces/script_client.h"
#include "traces/trace_support.h"

namespace sluice::testing {
namespace {

using algorithm::CompactState;
using algorithm::SlidingWindowLog;

constexpr int kStepsPerSpec = 700;

struct SpecCase {
  const char* rate;
  std::uint64_t burst;
};

// Several specs per algorithm: odd rates (7/s, 3/min, 1000/day), long periods whose products
// pass 2^53 (20000/month), short ones, and the largest values lua_bounds.h accepts.
std::vector<LimitSpec> specsFor(Algorithm algorithm) {
  std::vector<SpecCase> cases;
  switch (algorithm) {
    case Algorithm::kFixedWindow:
      cases = {{"7/s", 0}, {"3/min", 0}, {"1000/day", 0}, {"20000/month", 0}, {"5/100ms", 0}};
      break;
    case Algorithm::kSlidingWindowLog:
      cases = {{"7/s", 0}, {"3/min", 0}, {"1000/day", 0}, {"10/h", 0}, {"5/100ms", 0}};
      break;
    case Algorithm::kSlidingWindowCounter:
      cases = {{"7/s", 0},         {"3/min", 0},        {"1000/day", 0},
               {"20000/month", 0}, {"2097151/year", 0}, {"7/3s", 0}};
      break;
    case Algorithm::kTokenBucketInterval:
      cases = {{"7/s", 20}, {"3/min", 3}, {"1000/day", 1000}, {"4/s", 9}, {"3/100ms", 10}};
      break;
    default:  // the draining buckets and GCRA
      cases = {{"7/s", 5},      {"3/min", 3},           {"1000/day", 50},           {"100/s", 20},
               {"3/100ms", 10}, {"20000/month", 20000}, {"1/1099511627776us", 8191}};
      break;
  }
  std::vector<LimitSpec> specs;
  for (const SpecCase& item : cases) {
    if (std::string_view(item.rate) == "1/1099511627776us") {
      // 2^40 µs per request, burst 8191: a scaled capacity of 2^53 − 2^40, just inside the bound.
      specs.push_back(LimitSpec::make(algorithm, Rate{1, Micros{1} << 40}, item.burst).value());
    } else {
      specs.push_back(spec(algorithm, item.rate, item.burst));
    }
  }
  return specs;
}

// The same spec with room for any cost a sync test adds, so that a C++ consume of it is the
// unconditional consume sync performs: the state's update does not depend on the limit.
LimitSpec generous(const LimitSpec& limit) {
  if (limit.algorithm() == Algorithm::kFixedWindow ||
      limit.algorithm() == Algorithm::kSlidingWindowCounter) {
    return LimitSpec::make(limit.algorithm(), Rate{4'294'967'295, limit.rate().period_us}, 0)
        .value();
  }
  for (std::uint64_t burst = 1'000'000;; burst /= 2) {
    Result<LimitSpec> made = LimitSpec::make(limit.algorithm(), limit.rate(), burst);
    if (made.ok()) return made.value();
  }
}

class AlgorithmTrace : public ::testing::TestWithParam<Algorithm> {
 protected:
  void SetUp() override {
    server_ = std::make_unique<RedisServer>();
    connection_ = std::make_unique<RedisConnection>(server_->port());
    script_ = std::make_unique<ScriptClient>(*connection_);
  }

  std::unique_ptr<RedisServer> server_;
  std::unique_ptr<RedisConnection> connection_;
  std::unique_ptr<ScriptClient> script_;
};

enum class StepKind { kDecide, kDecideThenRefund, kSync };

struct Step {
  StepKind kind;
  Micros at_us;
  std::uint64_t cost;
  Outcome expected;             // decide steps
  CompactState expected_state;  // sync steps
};

// A seeded trace with C++ expectations. With `refunds`, some decides are refunded at once (the
// C++ side then simply does not consume); with `syncs`, some steps consume unconditionally.
std::vector<Step> expectedTrace(const LimitSpec& limit, std::uint64_t seed, bool refunds,
                                bool syncs) {
  std::mt19937_64 random(seed);
  const bool is_log = limit.algorithm() == Algorithm::kSlidingWindowLog;
  const LimitSpec unconditional = is_log ? limit : generous(limit);
  CompactState state;
  SlidingWindowLog log;
  std::vector<Step> steps;
  Micros at_us = kJan2026 + static_cast<Micros>(random() % 1'000'000'000);
  for (int i = 0; i < kStepsPerSpec; ++i) {
    // A refund restores an equivalent state, not the same bits, and only equivalent for clocks
    // that do not step back.
    at_us = nextInstant(random, at_us, limit, /*may_step_back=*/!refunds);
    Step step{StepKind::kDecide, at_us, nextCost(random, limit), {}, {}};
    const auto dice = random() % 8;
    if (refunds && dice == 0) step.kind = StepKind::kDecideThenRefund;
    if (syncs && !is_log && dice == 1) {
      step.kind = StepKind::kSync;
      step.cost = random() % (2 * limit.limit() + 3);
      const Outcome forced = algorithm::consumeCompact(state, at_us, unconditional, step.cost);
      EXPECT_TRUE(forced.allowed) << "the generous spec must admit the sync's cost: "
                                  << unconditional.toString() << " " << describe(forced);
      step.expected_state = state;
    } else if (is_log) {
      SlidingWindowLog before = log;
      step.expected = log.consume(at_us, limit, step.cost);
      if (step.kind == StepKind::kDecideThenRefund) log = std::move(before);
    } else {
      CompactState before = state;
      step.expected = algorithm::consumeCompact(state, at_us, limit, step.cost);
      if (step.kind == StepKind::kDecideThenRefund) state = before;
    }
    steps.push_back(step);
  }
  return steps;
}

// Replays `steps` through the script (pipelined) and compares every reply.
void expectScriptAgrees(ScriptClient& script, const LimitSpec& limit, const std::string& key,
                        const std::vector<Step>& steps) {
  for (const Step& step : steps) {
    const ScriptCheck check[] = {{key, &limit, step.cost}};
    script.appendPersisted(step.kind == StepKind::kSync ? "sync" : "decide", step.at_us, check);
    if (step.kind == StepKind::kDecideThenRefund && step.expected.allowed && step.cost > 0) {
      script.appendPersisted("refund", step.at_us, check);
    }
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    const RedisReply reply = script.readPersisted();
    const std::string where = limit.toString() + " step " + std::to_string(i) + " at " +
                              std::to_string(step.at_us) + " cost " + std::to_string(step.cost);
    if (step.kind == StepKind::kSync) {
      const CompactState got = ScriptClient::parseSync(reply, 1).front();
      ASSERT_EQ(got.a, step.expected_state.a) << where;
      ASSERT_EQ(got.b, step.expected_state.b) << where;
      continue;
    }
    const DecideReply decided = ScriptClient::parseDecide(reply, 1);
    ASSERT_EQ(decided.now_us, step.at_us) << where;
    ASSERT_EQ(describe(decided.outcomes[0]), describe(step.expected)) << where;
    if (step.kind == StepKind::kDecideThenRefund && step.expected.allowed && step.cost > 0) {
      const RedisReply refunded = script.readPersisted();
      ASSERT_EQ(refunded.type, REDIS_REPLY_ARRAY) << where << ": " << refunded.text;
    }
  }
}

// Decides alone: every outcome field equals the C++ algorithm's, clock steps back included.
TEST_P(AlgorithmTrace, DecideMatchesCpp) {
  std::uint64_t seed = 100;
  for (const LimitSpec& limit : specsFor(GetParam())) {
    const auto steps = expectedTrace(limit, ++seed, false, false);
    expectScriptAgrees(*script_, limit, "decide:" + std::to_string(seed), steps);
  }
}

// Decides with refunds at once in between: a refund leaves exactly the state before the decide.
TEST_P(AlgorithmTrace, RefundRestoresWhatDecideConsumed) {
  std::uint64_t seed = 200;
  for (const LimitSpec& limit : specsFor(GetParam())) {
    const auto steps = expectedTrace(limit, ++seed, true, false);
    expectScriptAgrees(*script_, limit, "refund:" + std::to_string(seed), steps);
  }
}

// Whether syncs of up to twice the limit keep the state below what the script clamps a sync
// to (lua_bounds.h: it saturates rather than lose exactness).
bool syncStaysExact(const LimitSpec& limit) {
  constexpr std::uint64_t kTwoTo53 = std::uint64_t{1} << 53;
  const std::uint64_t most = 3 * limit.limit() + 3;
  switch (limit.algorithm()) {
    case Algorithm::kSlidingWindowCounter:
      return most < (std::uint64_t{1} << 21);
    case Algorithm::kTokenBucket:
    case Algorithm::kLeakyBucketMeter:
    case Algorithm::kLeakyBucketShaper:
    case Algorithm::kGcra:
      return most * static_cast<std::uint64_t>(limit.unitWeight()) < kTwoTo53;
    default:
      return true;
  }
}

// Syncs in between: each reply's (a, b) equals the C++ state after an unconditional consume,
// and later decides agree on the state sync left, even when it is over the limit.
TEST_P(AlgorithmTrace, SyncStateMatchesCpp) {
  if (GetParam() == Algorithm::kSlidingWindowLog) GTEST_SKIP() << "no compact state to sync";
  std::uint64_t seed = 300;
  for (const LimitSpec& limit : specsFor(GetParam())) {
    if (!syncStaysExact(limit)) continue;
    const auto steps = expectedTrace(limit, ++seed, false, true);
    expectScriptAgrees(*script_, limit, "sync:" + std::to_string(seed), steps);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, AlgorithmTrace,
                         ::testing::Values(Algorithm::kFixedWindow, Algorithm::kSlidingWindowLog,
                                           Algorithm::kSlidingWindowCounter,
                                           Algorithm::kTokenBucket, Algorithm::kTokenBucketInterval,
                                           Algorithm::kLeakyBucketMeter,
                                           Algorithm::kLeakyBucketShaper, Algorithm::kGcra),
                         [](const ::testing::TestParamInfo<Algorithm>& param_info) {
                           return std::string(algorithmName(param_info.param));
                         });

}  // namespace
}  // namespace sluice::testing
