// How a request's limits decide together: all or nothing, shadow limits, throttling, the
// asynchronous path through a store that answers later, paths read either way, named limits.
// (Who the request is counted as: decide_identity_test.cc.)
#include "policy/decide.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "policy/decide_fixture.h"
#include "store/memory_store.h"
#include "support/deferred_store.h"
#include "support/policy_text.h"
#include "support/specs.h"

namespace sluice::policy {
namespace {

using sluice::testing::kJan2026;
using sluice::testing::policyFrom;

// nginx reads %2F as '/', so behind it /app/x%2F..%2Flogin is /app/login; a backend that keeps
// it encoded sees one segment. A limit meets the request under either reading.
TEST_F(DecideTest, EitherReadingOfAnEncodedSlashMeetsALimit) {
  load(R"(
limits:
  - { name: login, match: { path: /app/login }, rate: 1/min }
  - { name: files, match: { path_glob: "/files/*" }, rate: 1/min }
)");
  EXPECT_TRUE(decideFor(request("/app/login")).allowed);
  EXPECT_FALSE(decideFor(request("/app/x%2F..%2Flogin")).allowed);
  EXPECT_FALSE(decideFor(request("/app/login%2f")).allowed);
  EXPECT_TRUE(decideFor(request("/files/a%2Fb")).allowed);  // one segment, as data
  EXPECT_FALSE(decideFor(request("/files/c")).allowed);
}

// Segment parameters are dropped by servlet containers and data to the rest: /admin/..;/x is /x
// to Tomcat and under /admin/ to nginx. A limit meets the request under either reading.
TEST_F(DecideTest, EitherReadingOfSegmentParametersMeetsALimit) {
  load(R"(
limits:
  - { name: admin, match: { path_prefix: /admin/ }, rate: 1/min }
  - { name: login, match: { path: /login }, rate: 1/min }
)");
  EXPECT_TRUE(decideFor(request("/admin/a")).allowed);
  EXPECT_FALSE(decideFor(request("/admin/..;/x")).allowed);
  EXPECT_TRUE(decideFor(request("/login", "198.51.100.9")).allowed);
  EXPECT_FALSE(decideFor(request("/login;jsessionid=1", "198.51.100.9")).allowed);
}

// A `path` key counts the folded path: the spellings a backend reads as one resource (%2F, ';'
// parameters, and letter case for a limit matching in any case) are one counter, not one each.
TEST_F(DecideTest, PathKeysCountSpellingsOfOnePathAsOne) {
  load(R"(
limits:
  - { name: api, match: { path_prefix: /api/ }, key: [ip, path], rate: 1/min }
  - { name: any-case, match: { path: /login, case_sensitive: false }, key: path, rate: 1/min }
)");
  EXPECT_TRUE(decideFor(request("/api/b")).allowed);
  EXPECT_FALSE(decideFor(request("/1%2F..%2Fapi/b")).allowed);
  EXPECT_FALSE(decideFor(request("/api/b;v=2")).allowed);
  EXPECT_TRUE(decideFor(request("/api/c")).allowed);
  EXPECT_TRUE(decideFor(request("/LOGIN")).allowed);
  EXPECT_FALSE(decideFor(request("/Login")).allowed);
}

// What a store is asked: each check's counter key and its group (a Redis Cluster hash tag).
class GroupRecordingStore final : public Store {
 public:
  StoreStatus apply(std::span<const LimitCheck> checks, const Clock& clock,
                    std::span<Outcome> outcomes) noexcept override {
    for (const LimitCheck& check : checks) groups.emplace_back(check.key, check.group);
    return inner.apply(checks, clock, outcomes);
  }
  MemoryStore inner;
  std::vector<std::pair<std::string, std::string>> groups;
};

// A tier's daily quota shares its limit's group, so that in a Redis Cluster both live in one
// slot and one call decides them; its counter is still its own. By request and by name.
TEST_F(DecideTest, DailyQuotaSharesItsLimitsGroup) {
  load(R"(
tiers:
  anonymous: { rate: 10/min, daily_quota: 100 }
limits:
  - { name: per-client, key: client, from_tier: true }
)");
  GroupRecordingStore store;
  Engine engine(store, clock_);
  const RequestView view = request("/a");  // the context refers to it
  const RequestContext context = resolveIdentity(*policy_, view, clock_.now() / kMicrosPerSecond);
  ASSERT_TRUE(decide(*policy_, context, engine).allowed);
  ASSERT_TRUE(decideNamed(*policy_, "per-client", "caller", "anonymous", 1, engine).ok());
  ASSERT_EQ(store.groups.size(), 4u);
  for (const std::size_t first : {0u, 2u}) {
    const auto& [limit_key, limit_group] = store.groups[first];
    const auto& [daily_key, daily_group] = store.groups[first + 1];
    EXPECT_NE(limit_key, daily_key);
    EXPECT_FALSE(limit_group.empty());
    EXPECT_EQ(daily_group, limit_group) << first;
  }
}

// Several limits, all-or-nothing: a denial by one consumes none; the binding limit's status.
TEST_F(DecideTest, AllOrNothingAndDenyStatus) {
  load(R"(
limits:
  - { name: global, key: global, rate: 3/min, deny_status: 503 }
  - { name: per-ip, key: ip, rate: 1/min }
)");
  EXPECT_TRUE(decideFor(request("/", "192.0.2.1")).allowed);
  const PolicyDecision denied = decideFor(request("/", "192.0.2.1"));
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.status, 429);
  EXPECT_EQ(denied.binding()->label, "per-ip");
  EXPECT_TRUE(decideFor(request("/", "192.0.2.2")).allowed);  // global had 1 left after the denial
  EXPECT_TRUE(decideFor(request("/", "192.0.2.3")).allowed);
  const PolicyDecision global = decideFor(request("/", "192.0.2.4"));
  EXPECT_FALSE(global.allowed);
  EXPECT_EQ(global.status, 503);
}

// Shadow limits count and report but never block, and never block the enforced ones either.
TEST_F(DecideTest, ShadowNeverBlocks) {
  load(R"(
limits:
  - { name: watch, key: ip, rate: 1/min, action: shadow }
  - { name: real, key: ip, rate: 10/min }
)");
  EXPECT_TRUE(decideFor(request("/")).shadowDenials().empty());
  const PolicyDecision second = decideFor(request("/"));
  EXPECT_TRUE(second.allowed);
  EXPECT_EQ(second.shadowDenials(), "watch");
  EXPECT_EQ(second.enforced.statuses.at(0).remaining, 8u);
}

// X-RateLimit-Shadow's names are percent-encoded as the IETF lists' are, and a comma inside a
// name too, so that "a, b" and "c" read as two names, not three.
TEST_F(DecideTest, ShadowNamesStayApart) {
  load(R"(
limits:
  - { name: "a, b", key: ip, rate: 1/min, action: shadow }
  - { name: "c", key: ip, rate: 1/min, action: shadow }
  - { name: "café%", key: ip, rate: 1/min, action: shadow }
)");
  (void)decideFor(request("/"));
  EXPECT_EQ(decideFor(request("/")).shadowDenials(), "a%2C b, c, caf%C3%A9%25");
}

// A request an enforced limit denies is not counted against the shadow limits: enforced too, they
// would have taken nothing from it (all or nothing), so they could not have denied what follows.
TEST_F(DecideTest, DeniedRequestsAreNotCountedAgainstShadowLimits) {
  load(R"(
limits:
  - { name: watch, key: ip, rate: 3/min, action: shadow }
  - { name: real, key: ip, rate: 2/min }
)");
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(decideFor(request("/")).allowed) << i;
  for (int i = 0; i < 3; ++i) {
    const PolicyDecision denied = decideFor(request("/"));
    EXPECT_FALSE(denied.allowed) << i;
    EXPECT_TRUE(denied.shadowDenials().empty()) << i;
  }
  clock_.advance(30 * kMicrosPerSecond);  // one more for `real`; `watch` still has one left
  const PolicyDecision next = decideFor(request("/"));
  EXPECT_TRUE(next.allowed);
  EXPECT_TRUE(next.shadowDenials().empty());
}

// A store that answers later (as Redis does) takes decideAsync's callback path: two calls for a
// request with shadow limits, the decision delivered once, after the last one; the same
// decisions as the inline path gives on an in-process store.
TEST_F(DecideTest, AsyncPathThroughADeferredStoreDecidesAsInline) {
  load(R"(
limits:
  - { name: watch, key: ip, rate: 1/min, action: shadow }
  - { name: real, key: ip, rate: 2/min }
)");
  sluice::testing::DeferredStore deferred;
  Engine deferred_engine(deferred, clock_);
  ASSERT_FALSE(deferred_engine.decidesInline());
  ASSERT_TRUE(engine_.decidesInline());
  for (int i = 0; i < 3; ++i) {
    const RequestView view = request("/");  // the context refers to it
    const RequestContext context = resolveIdentity(*policy_, view, clock_.now() / kMicrosPerSecond);
    std::vector<PolicyDecision> answers;
    decideAsync(*policy_, context, deferred_engine, 0,
                [&](PolicyDecision&& decision) { answers.push_back(std::move(decision)); });
    // Enforced limits first; the shadow ones only once those allow.
    for (std::size_t calls = 0; calls < 2 && !deferred.pending.empty(); ++calls) {
      EXPECT_TRUE(answers.empty()) << "answered before the store did, request " << i;
      auto next = std::move(deferred.pending.front());
      deferred.pending.erase(deferred.pending.begin());
      next();
    }
    EXPECT_TRUE(deferred.pending.empty());
    ASSERT_EQ(answers.size(), 1u) << "request " << i;
    const PolicyDecision inline_decision = decideFor(request("/"));
    EXPECT_EQ(answers[0].allowed, inline_decision.allowed) << "request " << i;
    EXPECT_EQ(answers[0].status, inline_decision.status) << "request " << i;
    EXPECT_EQ(answers[0].shadowDenials(), inline_decision.shadowDenials()) << "request " << i;
    EXPECT_EQ(answers[0].enforced.statuses.at(0).remaining,
              inline_decision.enforced.statuses.at(0).remaining)
        << "request " << i;
  }
}

// Throttle: a wait within max_delay is returned to the caller; past it, a plain denial.
TEST_F(DecideTest, ThrottleWaitsWithinMaxDelay) {
  load(R"(
limits:
  - { name: slow, key: ip, algorithm: gcra, rate: 2/s, burst: 1, action: throttle, max_delay: 1s }
)");
  EXPECT_TRUE(decideFor(request("/")).allowed);
  const PolicyDecision wait = decideFor(request("/"));
  EXPECT_FALSE(wait.allowed);
  EXPECT_EQ(wait.throttle_wait_us, 500 * kMicrosPerMilli);
  clock_.advance(wait.throttle_wait_us);
  EXPECT_TRUE(decideFor(request("/"), wait.throttle_wait_us).allowed);
  const PolicyDecision too_long = decideFor(request("/"), 800 * kMicrosPerMilli);
  EXPECT_FALSE(too_long.allowed);
  EXPECT_EQ(too_long.throttle_wait_us, 0);
  EXPECT_EQ(too_long.status, 429);
}

// A request that a reject limit denies is rejected even when a throttle limit that denies it
// too has the longer wait (and so binds): the reject limit's action is not to wait. It used to be
// held for the throttle limit's wait and then admitted. While only throttle limits deny, it
// waits for the longest of their waits, within each one's max_delay.
TEST_F(DecideTest, ARejectLimitThatDeniesIsNotHeldByAThrottleLimit) {
  load(R"(
limits:
  - { name: rej, key: ip, algorithm: token_bucket, rate: 1/s, burst: 1, deny_status: 503 }
  - { name: thr5, key: ip, algorithm: gcra, rate: 1/5s, burst: 1, action: throttle, max_delay: 10s }
  - { name: thr2, key: [ip, path], algorithm: gcra, rate: 1/2s, burst: 1, action: throttle,
      max_delay: 3s, match: { path: /short } }
)");
  EXPECT_TRUE(decideFor(request("/")).allowed);
  const PolicyDecision both = decideFor(request("/"));
  EXPECT_FALSE(both.allowed);
  EXPECT_EQ(both.binding()->label, "thr5");  // the longer wait binds
  EXPECT_EQ(both.throttle_wait_us, 0);       // but rej denied too: no hold
  EXPECT_EQ(both.status, 503);               // and its status stands over thr5's

  clock_.advance(kMicrosPerSecond);  // rej has its unit back; thr5 still waits 4 s
  const PolicyDecision throttle_only = decideFor(request("/"));
  EXPECT_FALSE(throttle_only.allowed);
  EXPECT_EQ(throttle_only.throttle_wait_us, 4 * kMicrosPerSecond);

  // /short adds thr2 (max_delay 3 s): once both throttle limits deny, the wait is thr5's
  // 4 s, past what thr2 would hold a request, so it is denied.
  clock_.advance(5 * kMicrosPerSecond);
  EXPECT_TRUE(decideFor(request("/short")).allowed);
  clock_.advance(kMicrosPerSecond);
  const PolicyDecision past_one_max = decideFor(request("/short"));
  EXPECT_FALSE(past_one_max.allowed);
  EXPECT_EQ(past_one_max.binding()->label, "thr5");
  EXPECT_EQ(past_one_max.throttle_wait_us, 0);
}

// When the door says requests are held on a throttle check's limit and key, a request on its
// first pass is not decided: it queues behind them, and nothing is consumed. It decides as alone
// when it cannot wait (a batch item), has waited already (its turn came: deciding again, it went
// to the back of another line it met), asks for nothing (cost 0), could never fit (cost over
// the limit), or is refused now by a reject limit (found by a peek).
TEST_F(DecideTest, ARequestOnItsFirstPassQueuesBehindTheHeld) {
  load(R"(
limits:
  - { name: open, key: ip, rate: 5/min, deny_status: 503 }
  - { name: slow, key: ip, algorithm: gcra, rate: 2/s, burst: 10, action: throttle, max_delay: 1s }
)");
  std::vector<std::string> asked;
  const HeldOn held_on = [&](const PlannedCheck& check) {
    asked.push_back(check.label);
    return true;
  };
  const auto decideWith = [&](Micros waited_us, std::uint64_t cost = 1) {
    RequestView view = request("/");
    view.cost = cost;
    const RequestContext context = resolveIdentity(*policy_, view, clock_.now() / kMicrosPerSecond);
    std::optional<PolicyDecision> answer;
    decideAsync(
        *policy_, context, engine_, waited_us,
        [&](PolicyDecision&& decision) { answer = std::move(decision); }, held_on);
    EXPECT_TRUE(answer.has_value());
    return answer.value_or(PolicyDecision{});
  };
  const auto remaining = [&] {
    return decideWith(kCannotWait, 0).enforced.statuses.at(0).remaining;
  };
  const PolicyDecision queued = decideWith(0);
  EXPECT_EQ(asked, std::vector<std::string>{"slow"});  // only throttle checks are asked about
  ASSERT_NE(queued.queue_behind, PolicyDecision::kNotQueued);
  EXPECT_EQ(queued.enforced_checks[queued.queue_behind].label, "slow");
  EXPECT_FALSE(queued.allowed);
  EXPECT_EQ(remaining(), 5u);  // nothing consumed

  EXPECT_EQ(decideWith(kCannotWait).queue_behind, PolicyDecision::kNotQueued);
  const PolicyDecision again = decideWith(kMicrosPerMilli);  // it has waited: decides
  EXPECT_EQ(again.queue_behind, PolicyDecision::kNotQueued);
  EXPECT_TRUE(again.allowed);
  EXPECT_EQ(decideWith(0, 0).queue_behind, PolicyDecision::kNotQueued);   // a peek
  EXPECT_EQ(decideWith(0, 11).queue_behind, PolicyDecision::kNotQueued);  // over slow's burst

  for (std::uint64_t left = remaining(); left > 0; --left) {
    ASSERT_TRUE(decideWith(kCannotWait).allowed);  // open spent
  }
  const PolicyDecision refused = decideWith(0);
  EXPECT_EQ(refused.queue_behind, PolicyDecision::kNotQueued);  // open refuses it now
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.status, 503);
}

// A cost over any limit of the request never fits: it is denied at once, not queued behind
// the requests held on another of its limits to be denied in its turn (review finding).
TEST_F(DecideTest, ACostOverAnyLimitIsNotQueued) {
  load(R"(
limits:
  - { name: slow, key: ip, algorithm: gcra, rate: 2/s, burst: 10, action: throttle, max_delay: 1s }
  - { name: tiny, key: ip, algorithm: gcra, rate: 2/s, burst: 2, action: throttle, max_delay: 1s }
)");
  RequestView view = request("/");
  view.cost = 5;  // fits slow, never tiny
  const RequestContext context = resolveIdentity(*policy_, view, clock_.now() / kMicrosPerSecond);
  std::optional<PolicyDecision> answer;
  decideAsync(
      *policy_, context, engine_, 0,
      [&](PolicyDecision&& decision) { answer = std::move(decision); },
      [](const PlannedCheck&) { return true; });
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->queue_behind, PolicyDecision::kNotQueued);
  EXPECT_FALSE(answer->allowed);
  EXPECT_EQ(answer->enforced.retry_after_us, kNever);
}

// A throttle limit whose store cannot decide at all (a denial with no wait) denies with its
// status. It used to come back as a throttle wait of 0 with status 200: the gateway then sent
// "200 OK" with an error body, and an auth subrequest answered 200, which nginx lets through.
TEST_F(DecideTest, ThrottleLimitWithAStoreThatCannotDecideDenies) {
  load(R"(
limits:
  - { name: slow, key: ip, algorithm: gcra, rate: 2/s, burst: 1, action: throttle, max_delay: 1s }
)");
  sluice::testing::DeferredStore deferred;
  deferred.unavailable = true;
  Engine deferred_engine(deferred, clock_);
  const RequestView view = request("/");
  const RequestContext context = resolveIdentity(*policy_, view, clock_.now() / kMicrosPerSecond);
  std::optional<PolicyDecision> answer;
  decideAsync(*policy_, context, deferred_engine, 0,
              [&](PolicyDecision&& decision) { answer = std::move(decision); });
  ASSERT_EQ(deferred.pending.size(), 1u);
  deferred.pending.front()();
  ASSERT_TRUE(answer.has_value());
  EXPECT_FALSE(answer->allowed);
  EXPECT_EQ(answer->throttle_wait_us, 0);
  EXPECT_EQ(answer->status, 429);
  EXPECT_TRUE(answer->enforced.degraded);
}

// The decision API's direct form: a named limit with the caller's key.
TEST_F(DecideTest, NamedLimit) {
  load("limits:\n  - { name: login, key: ip, rate: 1/min }\n");
  EXPECT_TRUE(decideNamed(*policy_, "login", "k", "anonymous", 1, engine_).value().allowed);
  EXPECT_FALSE(decideNamed(*policy_, "login", "k", "anonymous", 1, engine_).value().allowed);
  EXPECT_FALSE(decideNamed(*policy_, "nope", "k", "anonymous", 1, engine_).ok());
  // A tier that is not defined is an error, though it would not change this limit's numbers.
  const Result<PolicyDecision> misspelt = decideNamed(*policy_, "login", "k", "premum", 1, engine_);
  ASSERT_FALSE(misspelt.ok());
  EXPECT_NE(misspelt.error().find("tier \"premum\" is not defined"), std::string::npos);
}

}  // namespace
}  // namespace sluice::policy
