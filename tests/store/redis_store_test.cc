// RedisStore against a real redis-server: the same decisions as MemoryStore, all-or-nothing
// requests, exact admission under concurrency, batching. What callers see when Redis fails is
// in redis_store_failure_test.cc.
#include "store/redis/redis_store.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "store/memory_store.h"
#include "store/redis/script_call.h"
#include "store/redis/script_protocol.h"
#include "store/redis_store_fixture.h"
#include "support/packed_reply.h"
#include "support/tcp_proxy.h"

namespace sluice {
namespace {

using testing::describe;
using testing::kHangAfter;
using testing::kJan2026;
using testing::kRelaxedTimeoutUs;
using testing::RedisStoreTest;
using testing::spec;
using testing::SteadyClock;

// One limit per algorithm: slow enough (per day) that the real time a test takes refills
// nothing, and fast enough (per second) for traces that cross many periods.
struct AlgorithmCase {
  Algorithm algorithm;
  std::uint64_t burst;
};

std::string caseName(const ::testing::TestParamInfo<AlgorithmCase>& info) {
  return std::string(algorithmName(info.param.algorithm));
}

const AlgorithmCase kAlgorithms[] = {
    {Algorithm::kFixedWindow, 0},          {Algorithm::kSlidingWindowLog, 0},
    {Algorithm::kSlidingWindowCounter, 0}, {Algorithm::kTokenBucket, 4},
    {Algorithm::kTokenBucketInterval, 6},  {Algorithm::kLeakyBucketMeter, 3},
    {Algorithm::kLeakyBucketShaper, 5},    {Algorithm::kGcra, 3}};

class RedisStoreAlgorithmTest : public RedisStoreTest,
                                public ::testing::WithParamInterface<AlgorithmCase> {};

// Replayed at the caller's instants, a random trace of single checks decides exactly as
// MemoryStore does, field by field.
TEST_P(RedisStoreAlgorithmTest, TraceMatchesMemoryStore) {
  auto store = makeStore(kRelaxedTimeoutUs, true);
  MemoryStore memory;
  const LimitSpec limit = spec(GetParam().algorithm, "7/s", GetParam().burst);
  std::mt19937_64 random(static_cast<std::uint64_t>(GetParam().algorithm) + 11);
  clock_.set(kJan2026 + 123'456);
  for (int request = 0; request < 60; ++request) {
    clock_.set(testing::nextInstant(random, clock_.now(), limit, false));
    const LimitCheck check{"trace", &limit, testing::nextCost(random, limit)};
    Outcome expected;
    Outcome got;
    ASSERT_EQ(memory.apply(std::span(&check, 1), clock_, std::span(&expected, 1)),
              StoreStatus::kOk);
    ASSERT_EQ(store->apply(std::span(&check, 1), clock_, std::span(&got, 1)), StoreStatus::kOk);
    EXPECT_EQ(describe(got), describe(expected)) << "request " << request << " cost " << check.cost;
  }
}

// At Redis's own clock, a burst of unit requests onto a fresh key admits as many as
// MemoryStore admits at one instant (the limit, or the shaper's queue).
TEST_P(RedisStoreAlgorithmTest, BurstAtRedisTimeAdmitsTheLimit) {
  const std::uint64_t burst = GetParam().burst == 0 ? 0 : 10 * GetParam().burst;
  const LimitSpec limit = spec(GetParam().algorithm, "30/day", burst);
  MemoryStore memory;
  std::uint64_t expected = 0;
  std::uint64_t admitted = 0;
  for (std::uint64_t i = 0; i < limit.limit() + 5; ++i) {
    expected += applyOne(memory, limit, "burst", 1).allowed ? 1 : 0;
    admitted += applyOne(*store_, limit, "burst", 1).allowed ? 1 : 0;
  }
  EXPECT_EQ(admitted, expected);
  EXPECT_GE(admitted, limit.limit());
}

// Costs the script cannot hold exactly (2^53 and up) are denied as exceeding the limit, as
// MemoryStore denies them, and do not fail the call: a script error would fail every request
// batched with them and count against the circuit breaker.
TEST_P(RedisStoreAlgorithmTest, HugeCostsAreDeniedAsMemoryStoreDeniesThem) {
  const LimitSpec limit = spec(GetParam().algorithm, "30/day", GetParam().burst);
  MemoryStore memory;
  for (const std::uint64_t cost :
       {(std::uint64_t{1} << 53) - 1, std::uint64_t{1} << 53, std::uint64_t{1} << 63,
        std::numeric_limits<std::uint64_t>::max()}) {
    const Outcome expected = applyOne(memory, limit, "huge", cost);
    const Outcome got = applyOne(*store_, limit, "huge", cost);
    EXPECT_FALSE(got.allowed) << cost;
    EXPECT_EQ(got.reason, DenyReason::kCostExceedsLimit) << cost;
    // (reset_after differs: Redis's clock is not the test's, and windows align to it.)
    EXPECT_EQ(got.reason, expected.reason) << cost;
    EXPECT_EQ(got.limit, expected.limit) << cost;
    EXPECT_EQ(got.remaining, expected.remaining) << cost;
    EXPECT_EQ(got.retry_after_us, expected.retry_after_us) << cost;
  }
  EXPECT_TRUE(applyOne(*store_, limit, "huge", 1).allowed);  // nothing was consumed
}

// Eight threads hammering one key with blocking calls admit exactly what one thread would.
TEST_P(RedisStoreAlgorithmTest, ThreadsOnOneKeyAdmitExactlyTheLimit) {
  const std::uint64_t burst = GetParam().burst == 0 ? 0 : 200;
  const LimitSpec limit = spec(GetParam().algorithm, "200/day", burst);
  MemoryStore memory;
  std::uint64_t expected = 0;
  for (int i = 0; i < 8 * 40; ++i) expected += applyOne(memory, limit, "shared", 1).allowed ? 1 : 0;

  std::atomic<std::uint64_t> admitted{0};
  std::atomic<std::uint64_t> unavailable{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      const LimitCheck check{"shared", &limit, 1};
      for (int i = 0; i < 40; ++i) {
        Outcome outcome;
        const StoreStatus status =
            store_->apply(std::span(&check, 1), clock_, std::span(&outcome, 1));
        if (status != StoreStatus::kOk) ++unavailable;
        if (status == StoreStatus::kOk && outcome.allowed) ++admitted;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(unavailable.load(), 0u);
  EXPECT_EQ(admitted.load(), expected);
  EXPECT_GE(admitted.load(), limit.limit());
}

INSTANTIATE_TEST_SUITE_P(Algorithms, RedisStoreAlgorithmTest, ::testing::ValuesIn(kAlgorithms),
                         caseName);

// A request whose second limit denies consumes nothing from its first; the first reports its
// state as it is, as in MemoryStore.
TEST_F(RedisStoreTest, MultiCheckIsAllOrNothing) {
  auto store = makeStore(kRelaxedTimeoutUs, true);
  MemoryStore memory;
  const LimitSpec three = spec(Algorithm::kTokenBucket, "3/hour", 3);
  const LimitSpec one = spec(Algorithm::kFixedWindow, "1/hour");
  const std::vector<LimitCheck> request = {{"client", &three, 1}, {"route", &one, 1}};
  for (int round = 0; round < 3; ++round) {
    std::vector<Outcome> expected(request.size());
    std::vector<Outcome> got(request.size());
    ASSERT_EQ(memory.apply(request, clock_, expected), StoreStatus::kOk);
    ASSERT_EQ(store->apply(request, clock_, got), StoreStatus::kOk);
    for (std::size_t i = 0; i < request.size(); ++i) {
      EXPECT_EQ(describe(got[i]), describe(expected[i])) << "round " << round << " check " << i;
    }
    EXPECT_EQ(got[1].allowed, round == 0);
  }
  // Only the first round consumed: two of three left.
  EXPECT_EQ(applyOne(*store, three, "client", 0).remaining, 2u);
}

// Every applyAsync calls back exactly once, on success and on a timeout whose reply comes late.
TEST_F(RedisStoreTest, ApplyAsyncCallsBackExactlyOnce) {
  constexpr int kCalls = 100;
  const LimitCheck check{"async", &five_per_day_, 1};
  std::vector<Outcome> outcomes(kCalls);
  std::vector<std::atomic<int>> calls(kCalls);
  std::atomic<int> finished{0};
  std::atomic<int> allowed_ok{0};
  for (int i = 0; i < kCalls; ++i) {
    store_->applyAsync(std::span(&check, 1), clock_, std::span(&outcomes[i], 1),
                       [&, i](StoreStatus status) {
                         if (status == StoreStatus::kOk && outcomes[i].allowed) ++allowed_ok;
                         ++calls[i];
                         ++finished;
                       });
  }
  const auto deadline = SteadyClock::now() + kHangAfter;
  while (finished.load() < kCalls && SteadyClock::now() < deadline) std::this_thread::yield();
  ASSERT_EQ(finished.load(), kCalls);
  // A blocking call goes through the same loop and connections: any duplicate callback for
  // the calls above would have run by the time it returns.
  EXPECT_FALSE(applyOne(*store_, five_per_day_, "async", 1).allowed);
  EXPECT_EQ(finished.load(), kCalls);
  for (int i = 0; i < kCalls; ++i) EXPECT_EQ(calls[i].load(), 1) << "call " << i;
  EXPECT_EQ(allowed_ok.load(), 5);
}

// Requests that arrive while the store's calls are in flight go to Redis together, in a few
// batch calls, and each is still decided all-or-nothing on its own. CLIENT PAUSE holds the
// first calls in Redis, so everything else queues behind them whatever the machine's speed.
TEST_F(RedisStoreTest, RequestsQueuedBehindBusyCallsAreBatched) {
  constexpr int kRequests = 200;
  const LimitSpec shared = spec(Algorithm::kFixedWindow, "50/day");
  const LimitSpec own = spec(Algorithm::kGcra, "1/day", 1);
  std::vector<std::string> own_keys;
  for (int i = 0; i < kRequests; ++i) own_keys.push_back("own:" + std::to_string(i));
  std::vector<std::vector<LimitCheck>> requests;
  for (int i = 0; i < kRequests; ++i) {
    requests.push_back({{"shared", &shared, 1}, {own_keys[i], &own, 1}});
  }
  std::vector<std::vector<Outcome>> outcomes(kRequests, std::vector<Outcome>(2));
  std::vector<StoreStatus> statuses(kRequests, StoreStatus::kUnavailable);
  std::atomic<int> finished{0};

  auto admin = server_.connect();
  ASSERT_EQ(admin.command({"CONFIG", "RESETSTAT"}).text, "OK");
  ASSERT_EQ(admin.command({"CLIENT", "PAUSE", "300", "ALL"}).text, "OK");
  for (int i = 0; i < kRequests; ++i) {
    store_->applyAsync(requests[i], clock_, outcomes[i], [&, i](StoreStatus status) {
      statuses[i] = status;
      ++finished;
    });
  }
  ASSERT_TRUE(testing::allFinished(finished, kRequests)) << finished.load() << " finished";
  // One call was in flight (calls_in_flight), and the 199 requests at most behind it (398
  // checks) fit in four batches of at most 128 checks: far fewer script calls than requests.
  const std::string stats = admin.command({"INFO", "commandstats"}).text;
  const auto at = stats.find("cmdstat_evalsha:calls=");
  ASSERT_NE(at, std::string::npos) << stats;
  EXPECT_LE(std::stoi(stats.substr(at + 22)), 5) << stats;

  int admitted = 0;
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_EQ(statuses[i], StoreStatus::kOk) << "request " << i;
    const bool allowed = outcomes[i][0].allowed && outcomes[i][1].allowed;
    admitted += allowed ? 1 : 0;
    // All-or-nothing: a denied request left its own key untouched.
    const Outcome own_now = applyOne(*store_, own, own_keys[i], 0);
    EXPECT_EQ(own_now.remaining, allowed ? 0u : 1u) << "request " << i;
  }
  EXPECT_EQ(admitted, 50);
}

// A call's deadline is its own, from when it is sent, whatever its requests waited behind the
// call before it. Here Redis is a round trip of 200 ms away and the timeout 350 ms: requests
// that queued behind the first call (200 ms) had 150 ms left for their own call, which then
// timed out, though Redis answered each call in time.
TEST_F(RedisStoreTest, ABatchSentAfterAWaitHasAWholeTimeout) {
  testing::TcpProxy far_away(server_.port());
  far_away.delayEach(std::chrono::milliseconds(100));
  RedisStoreOptions options;
  options.port = far_away.port();
  options.timeout_us = 350 * kMicrosPerMilli;
  options.connections = 1;
  RedisStore store(options);
  const LimitSpec limit = spec(Algorithm::kFixedWindow, "50/day");
  // Connected once a decision comes back (bounded).
  const SystemClock clock;
  const LimitCheck first{"far:0", &limit, 0};
  Outcome outcome;
  const auto connected_by = SteadyClock::now() + kHangAfter;
  while (store.apply(std::span(&first, 1), clock, std::span(&outcome, 1)) != StoreStatus::kOk &&
         SteadyClock::now() < connected_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling a connecting client
  }
  constexpr int kRequests = 8;
  std::vector<LimitCheck> checks;
  std::vector<std::string> keys;  // what the checks' keys view
  for (int i = 0; i < kRequests; ++i) keys.push_back("far:" + std::to_string(i));
  for (int i = 0; i < kRequests; ++i) checks.push_back({keys[i], &limit, 1});
  std::vector<Outcome> outcomes(kRequests);
  std::vector<StoreStatus> statuses(kRequests, StoreStatus::kUnavailable);
  std::atomic<int> finished{0};
  const auto send = [&](int i) {
    store.applyAsync(std::span(&checks[i], 1), clock, std::span(&outcomes[i], 1),
                     [&, i](StoreStatus status) {
                       statuses[i] = status;
                       ++finished;
                     });
  };
  // The first goes out alone; the others, sent while it is out (its round trip is 200 ms), wait
  // for it, then go as one batch.
  send(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // sequencing, not timing
  for (int i = 1; i < kRequests; ++i) send(i);
  ASSERT_TRUE(testing::allFinished(finished, kRequests)) << finished.load() << " finished";
  for (int i = 0; i < kRequests; ++i) EXPECT_EQ(statuses[i], StoreStatus::kOk) << "request " << i;
}

// ScriptCall::refund cuts one request's checks out of a batch call: refunding each admitted
// request of a batch, at the time the batch ran, leaves every key as if it had never run.
TEST_F(RedisStoreTest, RefundOfABatchRequestUndoesExactlyThatRequest) {
  const LimitSpec shared = spec(Algorithm::kFixedWindow, "3/hour");
  const LimitSpec bucket = spec(Algorithm::kTokenBucket, "5/hour", 5);
  const LimitSpec log = spec(Algorithm::kSlidingWindowLog, "4/hour");
  const std::vector<std::vector<LimitCheck>> requests = {
      {{"shared", &shared, 2}, {"b1", &bucket, 1}},                    // admitted
      {{"shared", &shared, 2}},                                        // denied: 1 left
      {{"b1", &bucket, 3}, {"log", &log, 2}, {"shared", &shared, 1}},  // admitted
      {{"b2", &bucket, 4}, {"log", &log, 1}},                          // admitted
  };
  std::vector<redis::ScriptCall> decides;
  for (const auto& request : requests) {
    decides.push_back(redis::ScriptCall::make("decide", "sluice:", request, std::nullopt));
  }
  const redis::ScriptCall batch = redis::ScriptCall::batch(decides);
  // Each of the three specs is sent once for the whole batch: EVALSHA sha n, 8 keys, op and
  // time, the specs, the 4 request sizes as 4 runs (no two neighbours are equal), then a run
  // per check (no two neighbours share both spec and cost).
  EXPECT_EQ(batch.strings.size(),
            3 + 8 + 2 + (1 + 3 * redis::kArgsPerSpec) + (1 + 4 * 2) + 8 * redis::kArgsPerCheckRun);
  auto connection = server_.connect();
  const testing::RedisReply reply =
      connection.command(std::vector<std::string>(batch.strings.begin(), batch.strings.end()));
  const std::vector<long long> numbers = testing::packedNumbers(reply);
  ASSERT_EQ(numbers.size(), 1 + 8 * redis::kDecideFieldsPerCheck);
  const Micros now_us = numbers[0];
  std::size_t first = 0;
  std::vector<bool> admitted;
  for (const auto& request : requests) {
    bool all = true;
    for (std::size_t i = 0; i < request.size(); ++i) {
      all = all && numbers[1 + (first + i) * redis::kDecideFieldsPerCheck] == 1;
    }
    admitted.push_back(all);
    if (all) {
      const redis::ScriptCall refund = batch.refund(first, request.size(), now_us);
      const testing::RedisReply refunded = connection.command(
          std::vector<std::string>(refund.strings.begin(), refund.strings.end()));
      EXPECT_EQ(refunded.elements.size(), 1u) << refunded.text;
    }
    first += request.size();
  }
  ASSERT_EQ(admitted, (std::vector<bool>{true, false, true, true}));
  // The store's own peeks (same key prefix) find every limit full.
  for (const auto& request : requests) {
    for (const LimitCheck& check : request) {
      const Outcome peek = applyOne(*store_, *check.spec, check.key, 0);
      EXPECT_EQ(peek.remaining, peek.limit) << check.key;
    }
  }
}

// Equal neighbours travel as runs: five one-check requests of one spec and cost, then a request
// of two checks, then one more of one check, go out as three runs of requests and three runs of
// checks, and Redis decides each request as it would decide it alone.
TEST_F(RedisStoreTest, ABatchSendsEqualNeighboursAsRuns) {
  const LimitSpec bucket = spec(Algorithm::kTokenBucket, "5/hour", 2);
  const std::vector<std::vector<LimitCheck>> requests = {
      {{"k1", &bucket, 1}}, {{"k2", &bucket, 1}},
      {{"k1", &bucket, 1}}, {{"k1", &bucket, 1}},                      // the third on k1: denied
      {{"k3", &bucket, 1}}, {{"k2", &bucket, 1}, {"k3", &bucket, 2}},  // k3 would be at 3 of 2
      {{"k4", &bucket, 1}},
  };
  std::vector<redis::ScriptCall> decides;
  for (const auto& request : requests) {
    decides.push_back(redis::ScriptCall::make("decide", "sluice:", request, std::nullopt));
  }
  const redis::ScriptCall batch = redis::ScriptCall::batch(decides);
  // Requests: 5 of one check, 1 of two, 1 of one. Checks: 6 at cost 1, 1 at cost 2, 1 at cost 1.
  EXPECT_EQ(batch.strings.size(),
            3 + 8 + 2 + (1 + redis::kArgsPerSpec) + (1 + 3 * 2) + 3 * redis::kArgsPerCheckRun);
  auto connection = server_.connect();
  const testing::RedisReply reply =
      connection.command(std::vector<std::string>(batch.strings.begin(), batch.strings.end()));
  const std::vector<long long> numbers = testing::packedNumbers(reply);
  ASSERT_EQ(numbers.size(), 1 + 8 * redis::kDecideFieldsPerCheck);
  std::vector<bool> allowed;
  for (std::size_t i = 0; i < 8; ++i) {
    allowed.push_back(numbers[1 + i * redis::kDecideFieldsPerCheck] == 1);
  }
  EXPECT_EQ(allowed, (std::vector<bool>{true, true, true, false, true, true, false, true}));
  // The denied two-check request consumed nothing: k2 holds one unit, k3 one, k4 one.
  for (const char* key : {"k2", "k3", "k4"}) {
    EXPECT_EQ(applyOne(*store_, bucket, key, 0).remaining, 1u) << key;
  }
}

}  // namespace
}  // namespace sluice
