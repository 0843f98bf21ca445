#include "rls/rls_decider.h"

#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "store/memory_store.h"
#include "support/deferred_store.h"
#include "support/lyft_configs.h"

namespace sluice::rls {
namespace {

using Code = RateLimitResponse::Code;
using sluice::testing::DeferredStore;
using sluice::testing::kLyftConfigDir;

// A minute boundary, so minute windows start exactly here.
constexpr Micros kDeciderStart = 1'800'000'000LL * kMicrosPerSecond;

struct Entry {
  std::string key;
  std::string value;
};

struct DescriptorSpec {
  std::vector<Entry> entries;
  std::optional<std::uint64_t> hits;
  std::optional<std::pair<std::uint32_t, int>> limit;  // requests_per_unit, RateLimitUnit
};

RateLimitRequest makeRequest(const std::string& domain, const std::vector<DescriptorSpec>& specs,
                             std::uint32_t hits_addend = 0) {
  RateLimitRequest request;
  request.set_domain(domain);
  request.set_hits_addend(hits_addend);
  for (const DescriptorSpec& spec : specs) {
    auto& descriptor = *request.add_descriptors();
    for (const Entry& entry : spec.entries) {
      auto& added = *descriptor.add_entries();
      added.set_key(entry.key);
      added.set_value(entry.value);
    }
    if (spec.hits) descriptor.mutable_hits_addend()->set_value(*spec.hits);
    if (spec.limit) {
      descriptor.mutable_limit()->set_requests_per_unit(spec.limit->first);
      descriptor.mutable_limit()->set_unit(
          static_cast<envoy::type::v3::RateLimitUnit>(spec.limit->second));
    }
  }
  return request;
}

class RlsDeciderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LyftLoadResult loaded = loadLyftConfigDir(kLyftConfigDir);
    ASSERT_NE(loaded.config, nullptr);
    config_ = loaded.config;
  }

  RateLimitResponse decide(const std::vector<DescriptorSpec>& specs, std::uint32_t hits = 0) {
    RateLimitResponse response;
    RlsDecider decider(engine_, clock_, options_);
    const auto error = decider.decide(config_, makeRequest("envoy", specs, hits), response);
    EXPECT_FALSE(error.has_value()) << error->message;
    return response;
  }
  Code overall(const std::vector<DescriptorSpec>& specs, std::uint32_t hits = 0) {
    return decide(specs, hits).overall_code();
  }
  std::optional<RpcError> failure(const RateLimitRequest& request) {
    RateLimitResponse response;
    RlsDecider decider(engine_, clock_, options_);
    return decider.decide(config_, request, response);
  }
  static std::string header(const RateLimitResponse& response, const std::string& name) {
    for (const auto& header : response.response_headers_to_add()) {
      if (header.key() == name) return header.value();
    }
    return "<absent>";
  }

  FakeClock clock_{kDeciderStart};
  MemoryStore store_;
  Engine engine_{store_, clock_};
  DeciderOptions options_;
  LyftConfigPtr config_;
};

const DescriptorSpec kAddress{{{"remote_address", "10.0.0.1"}}, {}, {}};

// Within the limit: OK with the configured limit, what remains and the time to the window's end.
TEST_F(RlsDeciderTest, WithinLimitReportsLimitRemainingAndReset) {
  clock_.advance(15 * kMicrosPerSecond + 250'000);
  const RateLimitResponse response = decide({kAddress});
  EXPECT_EQ(response.overall_code(), RateLimitResponse::OK);
  ASSERT_EQ(response.statuses_size(), 1);
  const auto& status = response.statuses(0);
  EXPECT_EQ(status.code(), RateLimitResponse::OK);
  EXPECT_EQ(status.current_limit().requests_per_unit(), 3u);
  EXPECT_EQ(status.current_limit().unit(), RateLimitResponse::RateLimit::MINUTE);
  EXPECT_EQ(status.limit_remaining(), 2u);
  // 44.75 s to the minute's end, in whole seconds rounded up, as lyft answers.
  EXPECT_EQ(status.duration_until_reset().seconds(), 45);
  EXPECT_EQ(status.duration_until_reset().nanos(), 0);
  EXPECT_TRUE(response.response_headers_to_add().empty());
}

// The fourth hit of 3/min is over the limit until the minute ends: 1 µs before, still over.
TEST_F(RlsDeciderTest, OverLimitUntilTheWindowEnds) {
  for (int i = 0; i < 3; ++i) EXPECT_EQ(overall({kAddress}), RateLimitResponse::OK);
  const RateLimitResponse over = decide({kAddress});
  EXPECT_EQ(over.overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(over.statuses(0).code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(over.statuses(0).limit_remaining(), 0u);
  EXPECT_EQ(over.statuses(0).duration_until_reset().seconds(), 60);
  clock_.advance(kMicrosPerMinute - 1);
  EXPECT_EQ(overall({kAddress}), RateLimitResponse::OVER_LIMIT);
  clock_.advance(1);
  EXPECT_EQ(overall({kAddress}), RateLimitResponse::OK);
  // Another address has its own counter.
  EXPECT_EQ(overall({{{{"remote_address", "10.0.0.2"}}, {}, {}}}), RateLimitResponse::OK);
}

// hits_addend: the request's applies to every descriptor, 0 counts as 1.
TEST_F(RlsDeciderTest, RequestHitsAddend) {
  EXPECT_EQ(decide({kAddress}, 2).statuses(0).limit_remaining(), 1u);
  EXPECT_EQ(overall({kAddress}, 2), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(decide({kAddress}, 0).statuses(0).limit_remaining(), 0u);
}

// A descriptor's own hits_addend overrides the request's; an explicit 0 checks without counting.
TEST_F(RlsDeciderTest, DescriptorHitsAddend) {
  const DescriptorSpec three{kAddress.entries, 3, {}};
  const DescriptorSpec peek{kAddress.entries, 0, {}};
  EXPECT_EQ(decide({peek}, 5).statuses(0).limit_remaining(), 3u);
  EXPECT_EQ(decide({three}, 1).statuses(0).limit_remaining(), 0u);
  const RateLimitResponse peeked = decide({peek});
  EXPECT_EQ(peeked.overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(peeked.statuses(0).limit_remaining(), 0u);
}

// Descriptors are all-or-nothing: when one is over, the others are not counted.
TEST_F(RlsDeciderTest, AllOrNothingAcrossDescriptors) {
  const DescriptorSpec generic{{{"generic_key", "g"}}, {}, {}};
  EXPECT_EQ(overall({generic}), RateLimitResponse::OK);
  EXPECT_EQ(overall({generic}), RateLimitResponse::OK);  // 2/s used up
  const RateLimitResponse both = decide({kAddress, generic});
  EXPECT_EQ(both.overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(both.statuses(0).code(), RateLimitResponse::OK);
  EXPECT_EQ(both.statuses(0).limit_remaining(), 3u);  // as it is: nothing consumed
  EXPECT_EQ(both.statuses(1).code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(decide({kAddress}).statuses(0).limit_remaining(), 2u);
}

// Shadow rules are counted and reported, never enforced, and never block the others.
TEST_F(RlsDeciderTest, ShadowModeCountsButAllows) {
  const DescriptorSpec shadow{{{"shadow_key", "s"}}, {}, {}};
  EXPECT_EQ(overall({shadow}), RateLimitResponse::OK);
  const RateLimitResponse second = decide({shadow, kAddress});
  EXPECT_EQ(second.overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(second.statuses(0).code(), RateLimitResponse::OK);
  EXPECT_EQ(second.statuses(0).limit_remaining(), 0u);
  EXPECT_EQ(second.statuses(0).current_limit().requests_per_unit(), 1u);
  EXPECT_EQ(second.statuses(1).limit_remaining(), 2u);  // counted although the shadow is over
  const EntryView entries[] = {{"shadow_key", "s"}};
  const DescriptorNode* node = LyftConfig::match(*config_->domain("envoy"), entries, nullptr);
  EXPECT_EQ(node->stats->shadow_over_limit.load(), 1u);
  EXPECT_EQ(node->stats->over_limit.load(), 0u);
}

// unlimited: OK, no current limit, remaining the largest uint32, as lyft answers.
TEST_F(RlsDeciderTest, Unlimited) {
  const RateLimitResponse response = decide({{{{"generic_key", "vip"}}, {}, {}}});
  EXPECT_EQ(response.statuses(0).code(), RateLimitResponse::OK);
  EXPECT_FALSE(response.statuses(0).has_current_limit());
  EXPECT_EQ(response.statuses(0).limit_remaining(), 4'294'967'295u);
}

// No matching rule: OK with nothing else set.
TEST_F(RlsDeciderTest, NoRule) {
  const RateLimitResponse response =
      decide({{{{"nothing", "x"}}, {}, {}}, {{{"whitelisted", "x"}}, {}, {}}});
  EXPECT_EQ(response.overall_code(), RateLimitResponse::OK);
  for (const auto& status : response.statuses()) {
    EXPECT_EQ(status.code(), RateLimitResponse::OK);
    EXPECT_FALSE(status.has_current_limit());
    EXPECT_FALSE(status.has_duration_until_reset());
  }
}

// A matched rule named in another matched rule's replaces does not apply.
TEST_F(RlsDeciderTest, Replaces) {
  const DescriptorSpec daily{{{"tenant", "t"}}, {}, {}};
  const DescriptorSpec burst{{{"tenant_burst", "t"}}, {}, {}};
  const RateLimitResponse both = decide({daily, burst});
  EXPECT_FALSE(both.statuses(0).has_current_limit());
  EXPECT_EQ(both.statuses(1).current_limit().name(), "tenant-burst");
  // The daily rule was not counted; alone, it applies.
  EXPECT_EQ(decide({daily}).statuses(0).limit_remaining(), 99u);
}

// A limit carried in the request is used instead of the config, with the same counter.
TEST_F(RlsDeciderTest, LimitOverride) {
  const DescriptorSpec overridden{kAddress.entries, {}, std::pair{1u, 1}};
  const RateLimitResponse first = decide({overridden});
  EXPECT_EQ(first.statuses(0).current_limit().requests_per_unit(), 1u);
  EXPECT_EQ(first.statuses(0).current_limit().unit(), RateLimitResponse::RateLimit::SECOND);
  EXPECT_EQ(overall({overridden}), RateLimitResponse::OVER_LIMIT);
  // An override on a key the config does not know still limits; shadow mode does not apply.
  EXPECT_EQ(overall({{{{"shadow_key", "s"}}, {}, std::pair{1u, 2}}}), RateLimitResponse::OK);
  EXPECT_EQ(overall({{{{"shadow_key", "s"}}, {}, std::pair{1u, 2}}}),
            RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(overall({{{{"free", "x"}}, {}, std::pair{0u, 3}}}), RateLimitResponse::OVER_LIMIT);
}

// requests_per_unit 0 denies every counted hit.
TEST_F(RlsDeciderTest, ZeroRequestsPerUnit) {
  const RateLimitResponse response = decide({{{{"blocked", "x"}}, {}, {}}});
  EXPECT_EQ(response.overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(response.statuses(0).duration_until_reset().seconds(), 1);
  EXPECT_EQ(overall({{{{"blocked", "x"}}, 0, {}}}), RateLimitResponse::OK);
}

// A rule (or override) of 0 per unit denies the request, so, all-or-nothing, the request's
// other descriptors are not counted either; they report what they have left.
TEST_F(RlsDeciderTest, ZeroRequestsPerUnitCountsNothingElse) {
  const DescriptorSpec blocked{{{"blocked", "x"}}, {}, {}};
  const DescriptorSpec zero_override{{{"free", "x"}}, {}, std::pair{0u, 3}};
  for (const DescriptorSpec& always_over : {blocked, zero_override}) {
    const RateLimitResponse response = decide({always_over, kAddress});
    EXPECT_EQ(response.overall_code(), RateLimitResponse::OVER_LIMIT);
    EXPECT_EQ(response.statuses(1).code(), RateLimitResponse::OK);
    EXPECT_EQ(response.statuses(1).limit_remaining(), 3u);  // as it is: nothing consumed
  }
  EXPECT_EQ(decide({kAddress}).statuses(0).limit_remaining(), 2u);
}

// Wildcard values: counted per value, or together with share_threshold.
TEST_F(RlsDeciderTest, WildcardCounters) {
  EXPECT_EQ(overall({{{{"user", "basic-a"}}, {}, {}}}), RateLimitResponse::OK);
  EXPECT_EQ(overall({{{{"user", "basic-b"}}, {}, {}}}), RateLimitResponse::OK);
  EXPECT_EQ(overall({{{{"pool", "shared-a"}}, {}, {}}}), RateLimitResponse::OK);
  EXPECT_EQ(overall({{{{"pool", "shared-b"}}, {}, {}}}), RateLimitResponse::OK);
  EXPECT_EQ(overall({{{{"pool", "shared-c"}}, {}, {}}}), RateLimitResponse::OVER_LIMIT);
}

// Nested descriptors count the whole tuple.
TEST_F(RlsDeciderTest, NestedDescriptor) {
  const DescriptorSpec post{{{"destination_cluster", "backend"}, {"header_match", "post"}}, {}, {}};
  const RateLimitResponse response = decide({post});
  EXPECT_EQ(response.statuses(0).current_limit().name(), "backend-post");
  EXPECT_EQ(response.statuses(0).current_limit().unit(), RateLimitResponse::RateLimit::HOUR);
  EXPECT_EQ(response.statuses(0).limit_remaining(), 4u);
}

// With response headers on: the X-RateLimit set of the closest limit, Retry-After when over.
TEST_F(RlsDeciderTest, ResponseHeaders) {
  options_.response_headers = true;
  const DescriptorSpec generic{{{"generic_key", "g"}}, {}, {}};
  const RateLimitResponse ok = decide({kAddress, generic});
  EXPECT_EQ(header(ok, "X-RateLimit-Limit"), "2");
  EXPECT_EQ(header(ok, "X-RateLimit-Remaining"), "1");
  EXPECT_EQ(header(ok, "X-RateLimit-Reset"), "1");
  EXPECT_EQ(header(ok, "Retry-After"), "<absent>");
  EXPECT_EQ(overall({generic}), RateLimitResponse::OK);
  const RateLimitResponse over = decide({kAddress, generic});
  EXPECT_EQ(header(over, "X-RateLimit-Remaining"), "0");
  EXPECT_EQ(header(over, "Retry-After"), "1");
}

// Renamed headers (lyft's set) carry the same values under the new names.
TEST_F(RlsDeciderTest, RenamedResponseHeaders) {
  options_.response_headers = true;
  options_.headers.names.limit = "RateLimit-Limit";
  options_.headers.names.remaining = "RateLimit-Remaining";
  options_.headers.names.reset = "RateLimit-Reset";
  const DescriptorSpec generic{{{"generic_key", "g"}}, {}, {}};
  const RateLimitResponse ok = decide({kAddress, generic});
  EXPECT_EQ(header(ok, "RateLimit-Limit"), "2");
  EXPECT_EQ(header(ok, "RateLimit-Remaining"), "1");
  EXPECT_EQ(header(ok, "RateLimit-Reset"), "1");
  EXPECT_EQ(header(ok, "X-RateLimit-Limit"), "<absent>");
}

// A request denied for asking more than is left (2 of 3, then 2 with 1 left) says 0 remaining in
// its header as in its status, as lyft's does.
TEST_F(RlsDeciderTest, OverLimitHeaderSaysNothingRemains) {
  options_.response_headers = true;
  EXPECT_EQ(overall({kAddress}, 2), RateLimitResponse::OK);
  const RateLimitResponse over = decide({kAddress}, 2);
  EXPECT_EQ(over.overall_code(), RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(over.statuses(0).limit_remaining(), 0u);
  EXPECT_EQ(header(over, "X-RateLimit-Remaining"), "0");
}

// A descriptor without entries matches nothing: OK without a limit, as lyft answers it, and the
// request's other descriptors are decided as usual.
TEST_F(RlsDeciderTest, DescriptorWithoutEntriesMatchesNothing) {
  const DescriptorSpec empty{{}, {}, {}};
  const RateLimitResponse response = decide({empty, kAddress});
  EXPECT_EQ(response.overall_code(), RateLimitResponse::OK);
  ASSERT_EQ(response.statuses_size(), 2);
  EXPECT_EQ(response.statuses(0).code(), RateLimitResponse::OK);
  EXPECT_FALSE(response.statuses(0).has_current_limit());
  EXPECT_EQ(response.statuses(1).limit_remaining(), 2u);
}

// Global shadow mode answers OK overall even when a limit is over; the descriptor's own code
// still says it is over, as lyft leaves it.
TEST_F(RlsDeciderTest, GlobalShadowMode) {
  options_.shadow_mode = true;
  const RateLimitResponse response = decide({{{{"blocked", "x"}}, {}, {}}});
  EXPECT_EQ(response.overall_code(), RateLimitResponse::OK);
  EXPECT_EQ(response.statuses(0).code(), RateLimitResponse::OVER_LIMIT);
}

// A SECOND limit's reset is a whole second, never 0: Envoy's X-RateLimit-Reset reads the
// seconds only, and 0.6 s read 0.
TEST_F(RlsDeciderTest, ResetIsWholeSecondsAndNeverZero) {
  clock_.advance(400'000);  // 0.6 s before the second ends
  const RateLimitResponse response = decide({{{{"tenant_burst", "x"}}, {}, {}}});
  ASSERT_EQ(response.statuses_size(), 1);
  EXPECT_EQ(response.statuses(0).duration_until_reset().seconds(), 1);
  EXPECT_EQ(response.statuses(0).duration_until_reset().nanos(), 0);
}

// Bad requests fail the RPC with a status that says what is wrong.
TEST_F(RlsDeciderTest, BadRequests) {
  const auto code = [&](const RateLimitRequest& request) {
    const auto error = failure(request);
    return error ? error->code : grpc::StatusCode::OK;
  };
  EXPECT_EQ(code(makeRequest("", {kAddress})), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(code(makeRequest("envoy", {})), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(code(makeRequest("envoy", {{{{"", "x"}}, {}, {}}})),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(code(makeRequest("envoy", {{kAddress.entries, {}, std::pair{1u, 0}}})),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(code(makeRequest("envoy", std::vector<DescriptorSpec>(65, kAddress))),
            grpc::StatusCode::INVALID_ARGUMENT);
  const DescriptorSpec long_tuple{std::vector<Entry>(33, Entry{"k", "v"}), {}, {}};
  EXPECT_EQ(code(makeRequest("envoy", {long_tuple})), grpc::StatusCode::INVALID_ARGUMENT);
  const auto unknown = failure(makeRequest("nope", {kAddress}));
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ(unknown->code, grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(unknown->message.find("\"nope\""), std::string::npos);
  // A long name is quoted cut short (a client reads the message only up to its metadata limit,
  // 8 KB by default), at a character's start.
  const auto long_name = failure(makeRequest("\xc3\xa9" + std::string(9000, 'u'), {kAddress}));
  ASSERT_TRUE(long_name.has_value());
  EXPECT_EQ(long_name->code, grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(long_name->message, "no rate limit configuration for domain \"\xc3\xa9" +
                                    std::string(254, 'u') + "\"... (9002 bytes)");
  const auto cut_inside = failure(makeRequest(std::string(255, 'u') + "\xc3\xa9", {kAddress}));
  ASSERT_TRUE(cut_inside.has_value());
  EXPECT_EQ(cut_inside->message, "no rate limit configuration for domain \"" +
                                     std::string(255, 'u') + "\"... (257 bytes)");
  // lyft's behaviour on request: an unknown domain has no limits.
  options_.unknown_domain_is_error = false;
  EXPECT_EQ(code(makeRequest("nope", {kAddress})), grpc::StatusCode::OK);
}

// The answer is written once, after the last of the engine calls completes.
TEST_F(RlsDeciderTest, CompletesAfterTheLastDeferredCall) {
  DeferredStore store;
  Engine engine(store, clock_);
  RlsDecider decider(engine, clock_, options_);
  RateLimitResponse response;
  int calls = 0;
  decider.decideAsync(config_, makeRequest("envoy", {kAddress, {{{"shadow_key", "s"}}, {}, {}}}),
                      response, [&](std::optional<RpcError> error) {
                        EXPECT_FALSE(error.has_value());
                        ++calls;
                      });
  ASSERT_EQ(store.pending.size(), 2u);  // the enforced call and the shadow rule's own
  store.pending[1]();
  EXPECT_EQ(calls, 0);
  store.pending[0]();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(response.statuses_size(), 2);
}

// A store that cannot answer fails the RPC with UNAVAILABLE, so Envoy's failure mode decides.
TEST_F(RlsDeciderTest, StoreUnavailable) {
  DeferredStore store;
  store.unavailable = true;
  Engine engine(store, clock_);
  RlsDecider decider(engine, clock_, options_);
  RateLimitResponse response;
  std::optional<RpcError> result;
  decider.decideAsync(config_, makeRequest("envoy", {kAddress}), response,
                      [&](std::optional<RpcError> error) { result = std::move(error); });
  for (auto& run : store.pending) run();
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->code, grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace sluice::rls
