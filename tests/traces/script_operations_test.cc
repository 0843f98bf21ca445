// The script's operations beyond single decisions: TTLs on written keys, refunds after other
// admissions, sync's refusal of the sliding log, and malformed calls.
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
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

// A limit of every algorithm. The fixed window is a day: a TTL that ends at the window's end
// would, for a minute-long window, be reached within seconds one run in a few dozen.
std::vector<LimitSpec> oneLimitPerAlgorithm() {
  return {spec(Algorithm::kFixedWindow, "10/day"),
          spec(Algorithm::kSlidingWindowLog, "10/min"),
          spec(Algorithm::kSlidingWindowCounter, "10/min"),
          spec(Algorithm::kTokenBucket, "7/min", 5),
          spec(Algorithm::kTokenBucketInterval, "3/min", 9),
          spec(Algorithm::kLeakyBucketMeter, "7/min", 5),
          spec(Algorithm::kLeakyBucketShaper, "7/min", 5),
          spec(Algorithm::kGcra, "7/min", 5)};
}

class ScriptOperations : public ::testing::Test {
 protected:
  ScriptOperations()
      : server_(std::make_unique<RedisServer>()),
        connection_(server_->port()),
        script_(connection_) {}

  long long pttl(const std::string& key) { return connection_.command({"PTTL", key}).integer; }

  std::unique_ptr<RedisServer> server_;
  RedisConnection connection_;
  ScriptClient script_;
};

// A written key expires when its state is back to full, to the millisecond (rounded up); the
// script reads Redis TIME here, so the TTL is in Redis's own clock.
TEST_F(ScriptOperations, WrittenKeysExpireWhenFull) {
  const std::vector<LimitSpec> specs = oneLimitPerAlgorithm();
  for (const LimitSpec& limit : specs) {
    const std::string key = "ttl:" + limit.toString();
    const ScriptCheck check[] = {{key, &limit, 3}};
    const DecideReply reply = script_.decide(std::nullopt, check);
    ASSERT_TRUE(reply.outcomes[0].allowed) << limit.toString();
    Micros full_at_us = 0;
    if (limit.algorithm() == Algorithm::kSlidingWindowLog) {
      algorithm::SlidingWindowLog log;
      (void)log.consume(reply.now_us, limit, 3);
      full_at_us = log.fullAt(limit);
    } else {
      CompactState state;
      (void)algorithm::consumeCompact(state, reply.now_us, limit, 3);
      full_at_us = algorithm::compactFullAt(state, limit);
    }
    const Micros expected_ms = (full_at_us - reply.now_us + 999) / 1000;
    const long long ttl_ms = pttl(key);
    // Read after the call: at most the expected TTL, and not much less (a generous bound for a
    // loaded machine; the TTLs here are 8 seconds or more).
    EXPECT_LE(ttl_ms, expected_ms) << limit.toString();
    EXPECT_GT(ttl_ms, expected_ms - 5000) << limit.toString();
    EXPECT_GT(expected_ms, 8000) << limit.toString();
  }
}

// A refund that brings a key back to full deletes it, as a full state equals an unused key.
TEST_F(ScriptOperations, RefundToFullDeletesTheKey) {
  const LimitSpec limit = spec(Algorithm::kFixedWindow, "10/min");
  const ScriptCheck check[] = {{"refunded", &limit, 4}};
  const DecideReply reply = script_.decide(std::nullopt, check);
  ASSERT_GT(pttl("refunded"), 0);
  const RedisReply refunded = script_.call("refund", reply.now_us, check);
  ASSERT_EQ(refunded.type, REDIS_REPLY_ARRAY) << refunded.text;
  EXPECT_EQ(refunded.elements.at(0).integer, reply.now_us);
  EXPECT_EQ(pttl("refunded"), -2);  // no such key
}

// A refund after later admissions never gives back more than the key would have had without
// the refunded consumption: a decide right after equals, or is stricter than, the C++ state
// that never saw it.
TEST_F(ScriptOperations, RefundAfterLaterAdmissionsIsConservative) {
  for (const Algorithm algorithm :
       {Algorithm::kTokenBucket, Algorithm::kTokenBucketInterval, Algorithm::kGcra,
        Algorithm::kFixedWindow, Algorithm::kSlidingWindowCounter}) {
    const LimitSpec limit = spec(algorithm, "10/s", 10);
    const std::string key = "late:" + limit.toString();
    CompactState without;  // C++: only the admissions that were not refunded
    Micros at_us = kJan2026;
    const ScriptCheck first[] = {{key, &limit, 6}};
    ASSERT_TRUE(script_.decidePersisted(at_us, first).outcomes[0].allowed);
    const ScriptCheck second[] = {{key, &limit, 2}};
    for (const Micros later_us : {Micros{150'000}, Micros{250'000}}) {
      ASSERT_TRUE(script_.decidePersisted(at_us + later_us, second).outcomes[0].allowed);
      ASSERT_TRUE(algorithm::consumeCompact(without, at_us + later_us, limit, 2).allowed);
    }
    ASSERT_EQ(script_.callPersisted("refund", at_us, first).type, REDIS_REPLY_ARRAY);
    const Micros probe_us = at_us + 300'000;
    const ScriptCheck peek[] = {{key, &limit, 0}};
    const Outcome got = script_.decidePersisted(probe_us, peek).outcomes[0];
    const Outcome bound = algorithm::consumeCompact(without, probe_us, limit, 0);
    EXPECT_LE(got.remaining, bound.remaining) << limit.toString();
  }
}

// A GCRA refund gives back only what cannot have drained since the key's latest write, also when
// the consumption came after a later one (the clock stepped back): admitted 6 at T, then 2 at
// T - 100 ms, the refund of those 2 at T - 100 ms returns 100 ms of their 200 ms, since the
// latest write was at T. A request of one check decides on a state read fresh for it, refund
// instant included (a stale or zero one would return all 200 ms: reset 700 ms, 3 remaining).
TEST_F(ScriptOperations, GcraRefundAfterAClockStepBackKeepsWhatMayHaveDrained) {
  const LimitSpec gcra = spec(Algorithm::kGcra, "10/s", 10);  // 100 ms per request
  const Micros later_us = kJan2026 + 1'000'000;
  const Micros earlier_us = later_us - 100'000;
  const ScriptCheck six[] = {{"stepped", &gcra, 6}};
  const ScriptCheck two[] = {{"stepped", &gcra, 2}};
  const ScriptCheck other[] = {{"other", &gcra, 1}};
  const ScriptCheck peek[] = {{"stepped", &gcra, 0}};
  ASSERT_TRUE(script_.decidePersisted(later_us, six).outcomes[0].allowed);
  // A decide of another key first, so that a state left over from it would show.
  ASSERT_TRUE(script_.decidePersisted(earlier_us - 500'000, other).outcomes[0].allowed);
  ASSERT_TRUE(script_.decidePersisted(earlier_us, two).outcomes[0].allowed);
  ASSERT_EQ(script_.callPersisted("refund", earlier_us, two).type, REDIS_REPLY_ARRAY);
  const Outcome got = script_.decidePersisted(earlier_us, peek).outcomes[0];
  EXPECT_EQ(got.reset_after_us, 800'000);  // the TAT is T + 700 ms
  EXPECT_EQ(got.remaining, 2u);
}

// Sync is for compact states only: a sliding log in the call is an error, and nothing of the
// call is written.
TEST_F(ScriptOperations, SyncRefusesTheSlidingLog) {
  const LimitSpec bucket = spec(Algorithm::kTokenBucket, "10/s", 5);
  const LimitSpec log = spec(Algorithm::kSlidingWindowLog, "10/s");
  const ScriptCheck checks[] = {{"synced", &bucket, 2}, {"logged", &log, 1}};
  const RedisReply reply = script_.call("sync", kJan2026, checks);
  ASSERT_TRUE(reply.isError());
  EXPECT_NE(reply.text.find("sliding window log"), std::string::npos) << reply.text;
  EXPECT_EQ(connection_.command({"EXISTS", "synced"}).integer, 0);
  EXPECT_EQ(connection_.command({"EXISTS", "logged"}).integer, 0);
}

// Sync replies carry the state; a missing key with nothing to add is the zero state.
TEST_F(ScriptOperations, SyncOfNothingIsTheZeroState) {
  const LimitSpec gcra = spec(Algorithm::kGcra, "10/s", 5);
  const ScriptCheck check[] = {{"nothing", &gcra, 0}};
  const auto states = ScriptClient::parseSync(script_.call("sync", kJan2026, check), 1);
  EXPECT_EQ(states[0].a, 0);
  EXPECT_EQ(states[0].b, 0);
  EXPECT_EQ(connection_.command({"EXISTS", "nothing"}).integer, 0);
}

// Keys written in the earlier layout (a hash of decimal fields a, b; a list of "at:units"
// entries) are read as they were, and the next write replaces them with the current layout.
TEST_F(ScriptOperations, KeysInTheEarlierLayoutAreRead) {
  const Micros at_us = kJan2026 + 123'456;
  for (const LimitSpec& limit :
       {spec(Algorithm::kGcra, "10/s", 5), spec(Algorithm::kTokenBucket, "7/min", 5),
        spec(Algorithm::kSlidingWindowCounter, "10/min")}) {
    const std::string key = "legacy:" + limit.toString();
    CompactState state;
    ASSERT_TRUE(algorithm::consumeCompact(state, at_us, limit, 3).allowed);
    connection_.command({"HSET", key, "a", std::to_string(state.a), "b", std::to_string(state.b)});
    const ScriptCheck check[] = {{key, &limit, 1}};
    const Outcome expected = algorithm::consumeCompact(state, at_us + 1000, limit, 1);
    EXPECT_EQ(describe(script_.decidePersisted(at_us + 1000, check).outcomes[0]),
              describe(expected))
        << limit.toString();
    EXPECT_EQ(connection_.command({"TYPE", key}).text, "string") << limit.toString();
  }
  const LimitSpec limit = spec(Algorithm::kSlidingWindowLog, "10/s");
  algorithm::SlidingWindowLog log;
  ASSERT_TRUE(log.consume(at_us, limit, 3).allowed);
  ASSERT_TRUE(log.consume(at_us + 500, limit, 2).allowed);
  connection_.command(
      {"RPUSH", "legacy:log", std::to_string(at_us) + ":3", std::to_string(at_us + 500) + ":2"});
  const ScriptCheck check[] = {{"legacy:log", &limit, 4}};
  const Outcome expected = log.consume(at_us + 1000, limit, 4);
  EXPECT_EQ(describe(script_.decidePersisted(at_us + 1000, check).outcomes[0]), describe(expected));
  EXPECT_EQ(connection_.command({"TYPE", "legacy:log"}).text, "string");
  const ScriptCheck peek[] = {{"legacy:log", &limit, 6}};
  EXPECT_EQ(describe(script_.decidePersisted(at_us + 2000, peek).outcomes[0]),
            describe(log.consume(at_us + 2000, limit, 6)));
}

// A key holding what the script never writes (another program's value under the same name, or
// bytes written by hand) reads as absent, and the next write replaces it. It raised a script
// error: every request batched with that key failed, and in synced mode every sync after it.
TEST_F(ScriptOperations, ForeignValuesReadAsAbsent) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::string nans(16, '\0');
  std::memcpy(nans.data(), &nan, sizeof nan);
  std::memcpy(nans.data() + 8, &inf, sizeof inf);
  std::string huge(16, '\0');
  const double big = 1e300;
  std::memcpy(huge.data(), &big, sizeof big);
  std::memcpy(huge.data() + 8, &big, sizeof big);
  const auto two = [](double a, double b) {  // a compact state's two fields, as packed
    std::string bytes(16, '\0');
    std::memcpy(bytes.data(), &a, sizeof a);
    std::memcpy(bytes.data() + 8, &b, sizeof b);
    return bytes;
  };
  const std::string halves = two(1.7e15, 0.5);
  const Micros now_us = kJan2026 + 99;
  // Beside an instant the algorithms read as current, a fraction, and a number far past what the
  // script writes: read as they were, they made every reply unreadable while the key grew.
  const std::string fraction_now = two(static_cast<double>(now_us), 0.5);
  const std::string past_exact_now = two(static_cast<double>(now_us), 0x1p62);
  const std::string between_now = two(static_cast<double>(now_us), 0x1p53 + 2);  // 2^53..2^54
  const std::vector<std::vector<std::string>> writes = {
      {"SET", "", "garbage"},           // a string of another length
      {"SET", "", nans},                // 16 bytes, not finite numbers
      {"SET", "", huge},                // 16 bytes, numbers no int64 holds
      {"SET", "", halves},              // 16 bytes: a log entry of half a unit
      {"SET", "", fraction_now},        // 16 bytes: a fraction of a field
      {"SET", "", past_exact_now},      // 16 bytes: a field past 2^54
      {"SET", "", between_now},         // 16 bytes: a second field past 2^53
      {"RPUSH", "", "x", "1:2:3"},      // a list (the sliding log's old layout reads its entries)
      {"SADD", "", "member"},           // a set
      {"ZADD", "", "1", "member"},      // a sorted set
      {"HSET", "", "other", "field"}};  // a hash without the old layout's fields
  const std::vector<LimitSpec> specs = oneLimitPerAlgorithm();
  for (const LimitSpec& limit : specs) {
    const ScriptCheck fresh[] = {{"fresh:" + limit.toString(), &limit, 2}};
    const Outcome expected = script_.decide(now_us, fresh).outcomes[0];
    ASSERT_TRUE(expected.allowed) << limit.toString();
    for (std::vector<std::string> write : writes) {
      const std::string key = "foreign:" + limit.toString();
      connection_.command({"DEL", key});
      write[1] = key;
      connection_.command(write);
      const ScriptCheck check[] = {{key, &limit, 2}};
      const RedisReply reply = script_.call("decide", now_us, check);
      ASSERT_NE(reply.type, REDIS_REPLY_ERROR)
          << limit.toString() << " " << write[0] << ": " << reply.text;
      EXPECT_EQ(describe(ScriptClient::parseDecide(reply, 1).outcomes[0]), describe(expected))
          << limit.toString() << " " << write[0];
      EXPECT_EQ(connection_.command({"TYPE", key}).text, "string") << limit.toString();
      if (limit.algorithm() == Algorithm::kSlidingWindowLog) continue;  // no sync for logs
      connection_.command({"DEL", key});
      connection_.command(write);
      const RedisReply synced = script_.call("sync", now_us, check);
      ASSERT_NE(synced.type, REDIS_REPLY_ERROR) << limit.toString() << " " << synced.text;
    }
  }
}

// A first field within the range the script accepts (2^54) but 2^53 µs or more ahead of now.
// Every algorithm's reply stays readable. GCRA reads such a TAT as absent, since no state it
// writes is that far ahead; the TAT's distance from now was sent as the reset, which no reply
// number carries, so every decision on the key came back unreadable (degraded) until it expired.
// The others read it as a clock that stepped back, as the C++ algorithms do.
TEST_F(ScriptOperations, AFieldFarAheadOfNowLeavesRepliesReadable) {
  std::string far_ahead(16, '\0');
  const double a = 0x1p54 - 2;  // even, so exact
  std::memcpy(far_ahead.data(), &a, sizeof a);
  const Micros now_us = kJan2026 + 99;
  for (const LimitSpec& limit : oneLimitPerAlgorithm()) {
    if (limit.algorithm() == Algorithm::kSlidingWindowLog) continue;  // entries, not fields
    const std::string key = "ahead:" + limit.toString();
    connection_.command({"SET", key, far_ahead});
    const ScriptCheck check[] = {{key, &limit, 2}};
    const RedisReply reply = script_.call("decide", now_us, check);
    ASSERT_NE(reply.type, REDIS_REPLY_ERROR) << limit.toString() << ": " << reply.text;
    DecideReply decided;
    ASSERT_NO_THROW(decided = ScriptClient::parseDecide(reply, 1)) << limit.toString();
    if (limit.algorithm() != Algorithm::kGcra) continue;
    const ScriptCheck fresh[] = {{"fresh:" + limit.toString(), &limit, 2}};
    EXPECT_EQ(describe(decided.outcomes[0]), describe(script_.decide(now_us, fresh).outcomes[0]));
  }
}

// A batch decides each of its requests exactly as that request's own decide call would, in
// order and all-or-nothing per request: here against the same requests sent one call each on
// keys of their own, and a sliding log and a request with two checks of one key included.
TEST_F(ScriptOperations, BatchDecidesEachRequestAsItsOwnDecide) {
  const LimitSpec shared = spec(Algorithm::kFixedWindow, "3/hour");
  const LimitSpec own = spec(Algorithm::kTokenBucket, "5/hour", 5);
  const LimitSpec log = spec(Algorithm::kSlidingWindowLog, "2/hour");
  const auto requests = [&](const std::string& prefix) {
    return std::vector<std::vector<ScriptCheck>>{
        {{prefix + "shared", &shared, 2}, {prefix + "own1", &own, 1}},  // admitted
        {{prefix + "shared", &shared, 2}},                              // denied: 1 left
        {{prefix + "own1", &own, 1}, {prefix + "log", &log, 1}, {prefix + "shared", &shared, 1}},
        {{prefix + "own2", &own, 5}, {prefix + "shared", &shared, 1}},  // denied by shared
        {{prefix + "own2", &own, 3}, {prefix + "own2", &own, 3}},       // 6 of 5: denied
        {{prefix + "log", &log, 1}, {prefix + "own2", &own, 4}},        // admitted
    };
  };
  const Micros now_us = kJan2026 + 17;

  // One batch call of the requests; each spec is sent once for all of them.
  const auto batch_requests = requests("batch:");
  std::size_t total = 0;
  for (const auto& request : batch_requests) total += request.size();
  const std::vector<std::string> batch = script_.batchArguments(now_us, batch_requests);
  const DecideReply batched = ScriptClient::parseDecide(connection_.command(batch), total);

  std::size_t at = 0;
  std::vector<bool> admitted;
  for (const auto& request : requests("single:")) {
    const DecideReply single = script_.decide(now_us, request);
    bool all = true;
    for (std::size_t i = 0; i < request.size(); ++i, ++at) {
      EXPECT_EQ(describe(batched.outcomes[at]), describe(single.outcomes[i]))
          << "request " << admitted.size() << " check " << i;
      all = all && single.outcomes[i].allowed;
    }
    admitted.push_back(all);
  }
  EXPECT_EQ(admitted, (std::vector<bool>{true, false, true, false, false, true}));
  // Both ways left the same state behind.
  for (const char* key : {"shared", "own1", "own2"}) {
    const LimitSpec& limit = std::string(key) == "shared" ? shared : own;
    const ScriptCheck peek_batch[] = {{std::string("batch:") + key, &limit, 0}};
    const ScriptCheck peek_single[] = {{std::string("single:") + key, &limit, 0}};
    EXPECT_EQ(describe(script_.decide(now_us, peek_batch).outcomes[0]),
              describe(script_.decide(now_us, peek_single).outcomes[0]))
        << key;
  }
}

// A long reply goes out in pieces of 512 numbers, in order. Lua passes at most 8,000 values to
// one C call, so 1,200 checks (8,401 numbers) in one pack would fail. Each check's remaining
// tells where it stands.
TEST_F(ScriptOperations, ALongReplyIsPackedInPiecesInOrder) {
  const LimitSpec bucket = spec(Algorithm::kTokenBucket, "4/hour", 4);
  std::vector<ScriptCheck> checks;
  for (std::size_t i = 0; i < 1200; ++i) {
    checks.push_back({"long:" + std::to_string(i), &bucket, i % 5});
  }
  const DecideReply reply = script_.decide(kJan2026, checks);
  ASSERT_EQ(reply.outcomes.size(), checks.size());
  EXPECT_EQ(reply.now_us, kJan2026);
  for (std::size_t i = 0; i < checks.size(); ++i) {
    EXPECT_TRUE(reply.outcomes[i].allowed) << i;
    EXPECT_EQ(reply.outcomes[i].remaining, 4 - i % 5) << i;
  }
}

// A batch whose runs of requests do not cover its keys exactly is an error.
TEST_F(ScriptOperations, MalformedBatchIsAnError) {
  const LimitSpec bucket = spec(Algorithm::kTokenBucket, "10/s", 5);
  const ScriptCheck check[] = {{"k", &bucket, 1}};
  // EVALSHA sha 1 k decide now 1 <6 spec fields> 1 1 1: the request runs go after the spec (at
  // 13): how many runs, then per run how many requests and how many checks each.
  std::vector<std::string> args = script_.arguments("decide", kJan2026, check);
  args[4] = "batch";
  args.insert(args.begin() + 13, {"1", "1", "2"});  // one request of two checks, but one key
  EXPECT_TRUE(connection_.command(args).isError());
  args[15] = "1";
  EXPECT_FALSE(connection_.command(args).isError());
  args[14] = "2";  // two requests of one check
  EXPECT_TRUE(connection_.command(args).isError());
  args[14] = "0";  // a run of no requests
  EXPECT_TRUE(connection_.command(args).isError());
  args[14] = "9007199254740991";  // refused before it is expanded (see MalformedCallsAreErrors)
  EXPECT_TRUE(connection_.command(args).isError());
  args[14] = "1";
  args[13] = "0";  // no runs
  EXPECT_TRUE(connection_.command(args).isError());
  args[13] = "2";  // a second run, past the keys
  args.insert(args.begin() + 16, {"1", "1"});
  EXPECT_TRUE(connection_.command(args).isError());
}

// Malformed calls are errors, not guesses.
TEST_F(ScriptOperations, MalformedCallsAreErrors) {
  const LimitSpec bucket = spec(Algorithm::kTokenBucket, "10/s", 5);
  const ScriptCheck check[] = {{"k", &bucket, 1}};
  EXPECT_TRUE(script_.call("consume", kJan2026, check).isError());
  // EVALSHA sha 1 k decide now 1 <6 spec fields>, then the run of checks at 13: how many, the
  // spec, the cost.
  const std::vector<std::string> good = script_.arguments("decide", kJan2026, check);
  EXPECT_FALSE(connection_.command(good).isError());
  std::vector<std::string> args = good;
  args.pop_back();  // one argument short
  EXPECT_TRUE(connection_.command(args).isError());
  args.push_back("1.5");  // not an integer
  EXPECT_TRUE(connection_.command(args).isError());
  for (const char* index : {"0", "2", "-1", "1.5", "x"}) {  // a spec the call does not have
    args = good;
    args[14] = index;
    EXPECT_TRUE(connection_.command(args).isError()) << index;
  }
  // Runs that do not cover the one key; the largest count must be refused before the script
  // expands it (a loop to 2^53 would hold Redis until this connection's 5 s timeout throws).
  for (const char* checks : {"0", "2", "-1", "x", "9007199254740991"}) {
    args = good;
    args[13] = checks;
    EXPECT_TRUE(connection_.command(args).isError()) << checks;
  }
  args = good;
  args.insert(args.end(), {"1", "1", "1"});  // a second run, past the keys
  EXPECT_TRUE(connection_.command(args).isError());
  // No keys, and a spec cut short after the fields its algorithm reads (a fixed window reads
  // count and period_us, not burst, unit_weight or drain_per_us).
  args = {good[0], good[1], "0", "decide", good[5], "1", "0", "10", "1000000"};
  EXPECT_TRUE(connection_.command(args).isError());
  args.insert(args.end(), {"1", "1", "1"});  // whole, it is a call of no checks
  EXPECT_FALSE(connection_.command(args).isError());
  args = good;
  args[6] = "0";  // no specs
  EXPECT_TRUE(connection_.command(args).isError());
  args = good;
  args[7] = "8";  // no such algorithm
  EXPECT_TRUE(connection_.command(args).isError());
}

// The server helper restarts on the same port with an empty data set.
TEST_F(ScriptOperations, RedisServerRestartsOnTheSamePort) {
  const int port = server_->port();
  connection_.command({"SET", "x", "1"});
  server_->restart();
  EXPECT_EQ(server_->port(), port);
  RedisConnection fresh(port);
  EXPECT_EQ(fresh.command({"EXISTS", "x"}).integer, 0);
}

}  // namespace
}  // namespace sluice::testing
