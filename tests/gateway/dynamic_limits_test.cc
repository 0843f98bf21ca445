// The webhook's answers: what is accepted, what is garbage, and how they are decided.
#include "gateway/dynamic_limits.h"

#include <chrono>
#include <future>

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "store/failover_store.h"
#include "store/memory_store.h"
#include "store/redis/redis_store.h"
#include "support/policy_text.h"

namespace sluice::gateway {
namespace {

// burst per window, and one per interval, with durations as strings or milliseconds.
TEST(DynamicLimitsTest, ParsesBurstAndInterval) {
  const auto parsed = parseDynamicLimits(
      R"({"limits": [{"key": "user:1", "burst": 5, "window": "1m", "max_throttle": 2000},
                     {"key": "ip:2", "interval": "250ms"}]})");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const DynamicLimits& limits = *parsed.value();
  ASSERT_EQ(limits.limits.size(), 2u);
  EXPECT_EQ(limits.limits[0].name, "dynamic:user:1");
  EXPECT_EQ(limits.limits[0].spec->burst(), 5u);
  EXPECT_EQ(limits.limits[0].action, policy::Action::kThrottle);
  EXPECT_EQ(limits.limits[0].max_delay_us, 2 * kMicrosPerSecond);
  EXPECT_EQ(limits.limits[1].action, policy::Action::kReject);
  EXPECT_EQ(limits.limits[1].spec->burst(), 1u);
  EXPECT_NE(limits.keys[0], limits.keys[1]);
  EXPECT_TRUE(parseDynamicLimits(R"({"limits": []})").value()->limits.empty());
}

// A key built from what a client sent may hold control bytes (a webhook keying by the decoded
// path): it still counts as itself, but the name it shows, which goes into headers such as
// X-Sluice-Limit, has them percent-encoded, so no header line can end inside it.
TEST(DynamicLimitsTest, KeysWithControlBytesShowThemEncoded) {
  const auto parsed = parseDynamicLimits(
      R"({"limits": [{"key": "path:/x\r\nX-Injected: yes\u0000", "burst": 1},
                     {"key": "path:/x", "burst": 1}]})");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const DynamicLimits& limits = *parsed.value();
  EXPECT_EQ(limits.limits[0].name, "dynamic:path:/x%0D%0AX-Injected: yes%00");
  EXPECT_NE(limits.keys[0], limits.keys[1]);
  EXPECT_NE(limits.keys[0].find("\r\n"), std::string::npos);  // the counter is the key itself
}

// Garbage of every kind is an error with a reason, never a crash.
TEST(DynamicLimitsTest, RejectsGarbage) {
  for (const char* answer :
       {"", "not json", "[]", R"({"limits": 3})", R"({"limits": [{"burst": 1}]})",
        R"({"limits": [{"key": 7, "burst": 1}]})", R"({"limits": [{"key": "k"}]})",
        R"({"limits": [{"key": "k", "burst": -1}]})", R"({"limits": [{"key": "k", "burst": 1.5}]})",
        R"({"limits": [{"key": "k", "interval": "soon"}]})",
        R"({"limits": [{"key": "k", "burst": 1, "max_throttle": "2h"}]})",
        R"({"limits": [{"key": "k", "burst": 1, "window": 0}]})",
        // Milliseconds whose microseconds overflow (they wrapped to 1,384 µs and 384 µs).
        R"({"limits": [{"key": "k", "burst": 5, "window": 18446744073709553}]})",
        R"({"limits": [{"key": "k", "burst": 5, "max_throttle": 18446744073709552}]})",
        R"({"limits": [{"key": "k", "interval": 9223372036854775807}]})"}) {
    const auto parsed = parseDynamicLimits(answer);
    EXPECT_FALSE(parsed.ok()) << answer;
  }
  std::string many = R"({"limits": [)";
  for (int i = 0; i < 17; ++i) many += std::string(i ? "," : "") + R"({"key":"k","burst":1})";
  EXPECT_FALSE(parseDynamicLimits(many + "]}").ok());
}

// GET / from 192.0.2.1.
policy::RequestView getRoot() {
  policy::RequestView view;
  view.method = "GET";
  view.path = "/";
  view.peer = boost::asio::ip::make_address("192.0.2.1");
  return view;
}

// The webhook's limits and the policy's are all-or-nothing together: a denial by the dynamic
// limit consumes nothing from the policy's.
TEST(DynamicLimitsTest, DecidedAllOrNothingWithThePolicy) {
  FakeClock clock(1'000 * kMicrosPerSecond);
  MemoryStore store;
  Engine engine(store, clock);
  const auto policy = sluice::testing::policyFrom(
      "limits:\n  - { name: base, key: ip, algorithm: fixed_window, rate: 3/min }\n");
  const policy::RequestView view = getRoot();
  const policy::RequestContext context = policy::resolveIdentity(*policy, view, 1000);
  const auto parsed =
      parseDynamicLimits(R"({"limits": [{"key": "k", "burst": 1, "window": "1h"}]})");
  ASSERT_TRUE(parsed.ok());
  const DynamicLimitsPtr dynamic = parsed.value();
  // The memory store answers before decideWithDynamic returns.
  const auto decide = [&](const DynamicLimitsPtr& extra) {
    std::optional<policy::PolicyDecision> decided;
    decideWithDynamic(*policy, context, extra, engine, 0,
                      [&](policy::PolicyDecision&& decision) { decided = std::move(decision); });
    EXPECT_TRUE(decided.has_value());
    return decided.value_or(policy::PolicyDecision{});
  };
  EXPECT_TRUE(decide(dynamic).allowed);
  const policy::PolicyDecision denied = decide(dynamic);
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.binding()->label, "dynamic:k");
  // base was charged once: two more fit without the dynamic limit.
  EXPECT_TRUE(decide(nullptr).allowed);
  EXPECT_TRUE(decide(nullptr).allowed);
  EXPECT_FALSE(decide(nullptr).allowed);
}

// A key given twice is two limits, each counting on its own: two of burst 2 admit two requests.
// (One shared counter took a unit for each per request and admitted one.)
TEST(DynamicLimitsTest, AKeyGivenTwiceIsTwoLimits) {
  FakeClock clock(1'000 * kMicrosPerSecond);
  MemoryStore store;
  Engine engine(store, clock);
  const auto policy = sluice::testing::policyFrom(
      "limits:\n  - { name: roomy, key: ip, algorithm: token_bucket, rate: 100/s, burst: 100 }\n");
  const policy::RequestView view = getRoot();
  const policy::RequestContext context = policy::resolveIdentity(*policy, view, 1000);
  const auto parsed = parseDynamicLimits(
      R"({"limits": [{"key": "user:1", "burst": 2, "window": "1h"},
                     {"key": "user:1", "burst": 2, "window": "1h"}]})");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const DynamicLimitsPtr dynamic = parsed.value();
  const auto allowed = [&] {
    std::optional<policy::PolicyDecision> decided;
    decideWithDynamic(*policy, context, dynamic, engine, 0,
                      [&](policy::PolicyDecision&& decision) { decided = std::move(decision); });
    return decided.has_value() && decided->allowed;
  };
  EXPECT_TRUE(allowed());
  EXPECT_TRUE(allowed());
  EXPECT_FALSE(allowed());
}

// With webhook limits, the policy's limits keep their own settings: here on_error: deny, with a
// Redis store that cannot be reached (nothing listens on its port), denies the request.
TEST(DynamicLimitsTest, PolicyLimitsKeepTheirOnError) {
  std::uint16_t closed_port = 0;
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor probe(
        io, {boost::asio::ip::make_address("127.0.0.1"), 0});  // a free port, then closed
    closed_port = probe.local_endpoint().port();
  }
  RedisStoreOptions redis;
  redis.port = closed_port;
  FailoverStore store(std::make_unique<RedisStore>(redis), FailoverOptions{});
  FakeClock clock(1'000 * kMicrosPerSecond);
  Engine engine(store, clock);
  const auto policy = sluice::testing::policyFrom(
      "limits:\n  - { name: base, key: ip, rate: 3/min, on_error: deny }\n");
  const policy::RequestView view = getRoot();
  const policy::RequestContext context = policy::resolveIdentity(*policy, view, 1000);
  const auto parsed = parseDynamicLimits(R"({"limits": [{"key": "k", "burst": 5}]})");
  ASSERT_TRUE(parsed.ok());
  for (const DynamicLimitsPtr& extra : {DynamicLimitsPtr(), parsed.value()}) {
    // The store may answer on its own thread.
    std::promise<policy::PolicyDecision> decided;
    decideWithDynamic(*policy, context, extra, engine, 0, [&](policy::PolicyDecision&& decision) {
      decided.set_value(std::move(decision));
    });
    auto answer = decided.get_future();
    ASSERT_EQ(answer.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    const policy::PolicyDecision decision = answer.get();
    EXPECT_FALSE(decision.allowed) << (extra ? "with" : "without") << " webhook limits";
    EXPECT_TRUE(decision.enforced.degraded);
    ASSERT_NE(decision.binding(), nullptr);
    EXPECT_EQ(decision.binding()->label, "base");
  }
}

}  // namespace
}  // namespace sluice::gateway
