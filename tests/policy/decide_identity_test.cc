// Who a request is counted as: API keys and their tiers, a key in doubt or missing, the client's
// address (forwarded, IPv6 networks), verified JWT claims and JSON-path selectors.
#include <jwt.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "policy/decide_fixture.h"

namespace sluice::policy {
namespace {

using sluice::testing::kJan2026;
using sluice::testing::policyFrom;

constexpr const char* kDecideSecret = "0123456789abcdef0123456789abcdef";

std::string hs256Token(const std::string& subject, std::int64_t expires_s, const char* secret) {
  jwt_t* token = nullptr;
  jwt_new(&token);
  jwt_add_grant(token, "sub", subject.c_str());
  jwt_add_grant_int(token, "exp", expires_s);
  jwt_set_alg(token, JWT_ALG_HS256, reinterpret_cast<const unsigned char*>(secret),
              static_cast<int>(std::strlen(secret)));
  char* encoded = jwt_encode_str(token);
  std::string text = encoded == nullptr ? "" : encoded;
  std::free(encoded);
  jwt_free(token);
  return text;
}

// Tiers: anonymous callers by address, known API keys by key with their tier's numbers, and an
// unknown key is no way around the anonymous limit.
TEST_F(DecideTest, TiersAndApiKeys) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/decide-keys.yaml") << "keys:\n  - { key: gold-key, tier: premium }\n";
  policy_ = policyFrom(R"(
identity: { keys_file: decide-keys.yaml }
tiers:
  anonymous: { rate: 1/min, burst: 2 }
  premium: { rate: 10/min, burst: 5 }
limits:
  - { name: per-client, key: client, from_tier: true }
)",
                       dir);
  ASSERT_NE(policy_, nullptr);
  EXPECT_TRUE(decideFor(request("/a")).allowed);
  EXPECT_TRUE(decideFor(request("/a")).allowed);
  EXPECT_FALSE(decideFor(request("/a")).allowed);
  RequestView unknown = request("/a");
  unknown.headers.emplace_back("Authorization", "Bearer made-up-key");
  EXPECT_FALSE(decideFor(unknown).allowed);  // same address, same anonymous counter
  RequestView premium = request("/a");
  premium.headers.emplace_back("Authorization", "Bearer gold-key");
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(decideFor(premium).allowed) << i;
  const PolicyDecision sixth = decideFor(premium);
  EXPECT_FALSE(sixth.allowed);
  EXPECT_EQ(sixth.binding()->spec->burst(), 5u);
  EXPECT_EQ(sixth.binding()->key.find("gold-key"), std::string::npos);  // hashed, never as is
}

// With a keys file, a key not in it is no key: an `api_key` limit keys it as when_missing says
// (the address by default). Each made-up key was a fresh counter. Without a keys file, any key
// is counted by itself, as the backend is the one that knows which exist.
TEST_F(DecideTest, UnknownApiKeysAreNoKeysWhenAKeysFileListsThem) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/listed-keys.yaml") << "keys:\n  - { key: gold-key, tier: premium }\n";
  const std::string limits = R"(
limits:
  - { name: per-key, key: api_key, rate: 1/min }
)";
  const auto with_key = [&](const std::string& key) {
    RequestView view = request("/a");
    view.headers.emplace_back("Authorization", "Bearer " + key);
    return view;
  };
  policy_ = policyFrom(
      "identity: { keys_file: listed-keys.yaml }\ntiers: { premium: { rate: 9/min } }\n" + limits,
      dir);
  ASSERT_NE(policy_, nullptr);
  EXPECT_TRUE(decideFor(with_key("made-up-1")).allowed);
  EXPECT_FALSE(decideFor(with_key("made-up-2")).allowed);  // the same address's counter
  EXPECT_FALSE(decideFor(request("/a")).allowed);          // as with no key at all
  EXPECT_TRUE(decideFor(with_key("gold-key")).allowed);    // a listed key has its own
  EXPECT_FALSE(decideFor(with_key("gold-key")).allowed);

  policy_ = policyFrom(limits, dir);
  ASSERT_NE(policy_, nullptr);
  EXPECT_TRUE(decideFor(with_key("made-up-3")).allowed);
  EXPECT_TRUE(decideFor(with_key("made-up-4")).allowed);
  EXPECT_FALSE(decideFor(with_key("made-up-4")).allowed);
}

// An API key read from a header of its own is a key even when it has the dots of a JWT: only the
// header that tokens are read from holds tokens. A key such as "acme.prod.7f3a" lost its tier.
TEST_F(DecideTest, AnApiKeyWithDotsIsAKeyOutsideTheTokensHeader) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/dotted-keys.yaml") << "keys:\n  - { key: acme.prod.7f3a, tier: premium }\n";
  policy_ = policyFrom(std::string("identity:\n  api_key_header: X-Api-Key\n"
                                   "  keys_file: dotted-keys.yaml\n"
                                   "  jwt: { header: X-Jwt, keys: [{ algorithm: HS256, secret: ") +
                           kDecideSecret + " }] }\n" +
                           "tiers: { anonymous: { rate: 1/min }, premium: { rate: 9/min } }\n"
                           "limits: [{ name: per-client, key: client, from_tier: true }]\n",
                       dir);
  ASSERT_NE(policy_, nullptr);
  RequestView keyed = request("/a");
  keyed.headers.emplace_back("X-Api-Key", "acme.prod.7f3a");
  EXPECT_EQ(resolveIdentity(*policy_, keyed, 0).tier, "premium");
}

// An API key header sent on two lines that differ is no key: the backend may read either (or both
// joined), so the caller is anonymous, as without one, rather than counted by the first while the
// backend serves the second. Lines that agree are the key.
TEST_F(DecideTest, AnApiKeyOnLinesThatDifferIsNone) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/two-keys.yaml") << "keys:\n  - { key: k1, tier: premium }\n"
                                           "  - { key: z1, tier: premium }\n";
  policy_ = policyFrom(
      "identity: { api_key_header: X-Api-Key, keys_file: two-keys.yaml }\n"
      "tiers: { anonymous: { rate: 1/min }, premium: { rate: 9/min } }\n"
      "limits:\n  - { name: per-client, key: client, from_tier: true }\n"
      "  - { name: per-key, key: api_key, when_missing: skip, rate: 5/min }\n",
      dir);
  ASSERT_NE(policy_, nullptr);
  RequestView both = request("/a");
  both.headers = {{"X-Api-Key", "z1"}, {"x-api-key", "k1"}};
  const RequestContext doubted = resolveIdentity(*policy_, both, 0);
  EXPECT_EQ(doubted.tier, "anonymous");
  EXPECT_FALSE(doubted.api_key_id.has_value());
  // The per-key limit is not skipped, as for a request without a key: it counts the address.
  const PolicyDecision decided = decideFor(both);
  ASSERT_EQ(decided.enforced_checks.size(), 2u);
  EXPECT_EQ(decided.enforced_checks[1].label, "per-key");
  both.headers = {{"X-Api-Key", "k1"}, {"X-Api-Key", " k1"}};  // one key, blanks aside
  EXPECT_EQ(resolveIdentity(*policy_, both, 0).tier, "premium");
}

// An empty API key field is no key: it shares the address's counter with requests sending none.
TEST_F(DecideTest, AnEmptyCredentialIsNone) {
  load(R"(
identity: { api_key_header: X-Api-Key }
limits:
  - { name: per-key, key: api_key, rate: 1/min }
)");
  RequestView empty = request("/a");
  empty.headers.emplace_back("X-Api-Key", "");
  EXPECT_TRUE(decideFor(empty).allowed);
  EXPECT_FALSE(decideFor(request("/a")).allowed);
}

// A credential in doubt (two keys on two lines, two tokens) counts by address in the same
// counter as no credential at all: a counter of its own gave an anonymous client a second budget
// for the asking. An empty json: value is none, as an empty header is.
TEST_F(DecideTest, ACredentialInDoubtSharesTheAddressCounterWithNone) {
  load(R"(
identity: { api_key_header: X-Api-Key }
limits:
  - { name: per-key, key: api_key, rate: 1/min }
  - { name: per-id, key: "json:$.request.http.headers['X-Id'][0]", rate: 1/min }
)");
  RequestView doubted = request("/a");
  doubted.headers = {{"X-Api-Key", "k1"}, {"X-Api-Key", "k2"}, {"X-Id", "one"}};
  EXPECT_TRUE(decideFor(doubted).allowed);
  RequestView none = request("/a");
  none.headers = {{"X-Id", "two"}};
  EXPECT_FALSE(decideFor(none).allowed);

  RequestView empty_id = request("/a", "198.51.100.8");
  empty_id.headers = {{"X-Id", ""}};
  EXPECT_TRUE(decideFor(empty_id).allowed);
  // Another address sending it empty has its own counter, not the first one's.
  RequestView other = request("/a", "198.51.100.9");
  other.headers = {{"X-Id", ""}};
  EXPECT_TRUE(decideFor(other).allowed);
}

// Blanks around a key are not part of it: a backend that splits on whitespace reads one key, and
// as keys of their own, each spelling was a fresh counter.
TEST_F(DecideTest, BlanksAroundACredentialAreNotPartOfIt) {
  load(R"(
identity: { api_key_header: Authorization }
limits:
  - { name: per-key, key: api_key, rate: 2/min }
)");
  const auto with_auth = [&](const std::string& value, const std::string& ip) {
    RequestView view = request("/a", ip);
    view.headers.emplace_back("Authorization", value);
    return view;
  };
  EXPECT_TRUE(decideFor(with_auth("Bearer K1", "198.51.100.1")).allowed);
  EXPECT_TRUE(decideFor(with_auth("bearer   K1 ", "198.51.100.2")).allowed);
  EXPECT_FALSE(decideFor(with_auth("Bearer\tK1", "198.51.100.3")).allowed);
  // No token, or no "Bearer" scheme: no key, so the address counts.
  EXPECT_TRUE(decideFor(with_auth("Bearer   ", "198.51.100.4")).allowed);
  EXPECT_TRUE(decideFor(with_auth("BearerK1", "198.51.100.4")).allowed);
  EXPECT_FALSE(decideFor(request("/a", "198.51.100.4")).allowed);
}

// A missing key part falls back to the address, or skips the limit.
TEST_F(DecideTest, WhenMissing) {
  load(R"(
limits:
  - { name: by-user, key: "header:X-User", rate: 1/min }
  - { name: by-team, key: "header:X-Team", rate: 1/min, when_missing: skip }
)");
  const PolicyDecision first = decideFor(request("/"));
  ASSERT_EQ(first.enforced_checks.size(), 1u);
  EXPECT_EQ(first.enforced_checks[0].key, "7:by-useri12:198.51.100.7");  // the address fallback
  EXPECT_FALSE(decideFor(request("/")).allowed);
  RequestView user = request("/");
  user.headers.emplace_back("x-user", "alice");
  user.headers.emplace_back("X-Team", "red");
  EXPECT_TRUE(decideFor(user).allowed);
  EXPECT_EQ(decideFor(user).enforced_checks.size(), 2u);
}

// A header value that spells the address fallback does not touch the address's counter.
TEST_F(DecideTest, HeaderValuesCannotSpellTheFallback) {
  load("limits:\n  - { name: by-user, key: \"header:X-User\", rate: 1/min }\n");
  RequestView crafted = request("/", "192.0.2.9");
  crafted.headers.emplace_back("X-User", "i12:198.51.100.7");
  EXPECT_TRUE(decideFor(crafted).allowed);
  EXPECT_TRUE(decideFor(request("/")).allowed);  // 198.51.100.7's own counter is untouched
}

// X-Forwarded-For counts only from a trusted proxy; a client cannot pick its own address.
TEST_F(DecideTest, ForwardedForOnlyFromTrustedProxies) {
  load(R"(
identity: { trusted_proxies: [10.0.0.0/8] }
limits:
  - { name: per-ip, key: ip, rate: 1/min }
)");
  RequestView spoofed = request("/", "198.51.100.7");
  spoofed.headers.emplace_back("X-Forwarded-For", "203.0.113.99");
  EXPECT_EQ(resolveIdentity(*policy_, spoofed, 0).client_ip, "198.51.100.7");
  RequestView proxied = request("/", "10.1.2.3");
  proxied.headers.emplace_back("X-Forwarded-For", "203.0.113.99, 10.9.9.9");
  // A Forwarded header the proxy does not maintain reaches us from the client, unchanged:
  // it is ignored unless configured as the proxy's header.
  proxied.headers.emplace_back("Forwarded", "for=198.18.0.1");
  EXPECT_EQ(resolveIdentity(*policy_, proxied, 0).client_ip, "203.0.113.99");
}

// An IPv6 client is counted by its /64 (identity.ipv6_prefix): a fresh address from its own
// network is no fresh limit. Behind a trusted proxy as when connected directly; 128 counts
// each address apart.
TEST_F(DecideTest, IPv6ClientsCountByTheirNetwork) {
  const std::string limits = R"(
limits:
  - { name: per-ip, key: ip, rate: 1/min }
  - { name: per-client, match: { path_prefix: /c }, key: client, rate: 1/min }
)";
  load("identity: { trusted_proxies: [10.0.0.0/8] }\n" + limits);
  EXPECT_TRUE(decideFor(request("/", "2001:db8:1:2::1")).allowed);
  EXPECT_FALSE(decideFor(request("/", "2001:db8:1:2:ffff::2")).allowed);
  RequestView proxied = request("/", "10.0.0.1");
  proxied.headers.emplace_back("X-Forwarded-For", "2001:db8:1:2:abcd::3");
  EXPECT_FALSE(decideFor(proxied).allowed);
  EXPECT_EQ(resolveIdentity(*policy_, proxied, 0).client_ip, "2001:db8:1:2:abcd::3");
  EXPECT_EQ(resolveIdentity(*policy_, proxied, 0).client_network, "2001:db8:1:2::/64");
  EXPECT_TRUE(decideFor(request("/", "2001:db8:1:3::1")).allowed);  // another network
  EXPECT_TRUE(decideFor(request("/c", "2001:db8:9:9::1")).allowed);
  EXPECT_FALSE(decideFor(request("/c", "2001:db8:9:9::2")).allowed);  // client falls back too

  // A trusted proxy is one host of its data centre's /64: counted by its own address (here as
  // the client, when it forwards no header), apart from its neighbours.
  load("identity: { trusted_proxies: [2001:db8:aa::1/128, 2001:db8:aa::2/128] }\n" + limits);
  EXPECT_TRUE(decideFor(request("/", "2001:db8:aa::1")).allowed);
  EXPECT_TRUE(decideFor(request("/", "2001:db8:aa::2")).allowed);
  EXPECT_TRUE(decideFor(request("/", "2001:db8:aa::3")).allowed);  // not trusted: the /64's
  EXPECT_FALSE(decideFor(request("/", "2001:db8:aa::4")).allowed);

  load("identity: { ipv6_prefix: 128 }\n" + limits);
  EXPECT_TRUE(decideFor(request("/", "2001:db8:5:2::1")).allowed);
  EXPECT_TRUE(decideFor(request("/", "2001:db8:5:2::2")).allowed);
  EXPECT_FALSE(decideFor(request("/", "2001:db8:5:2::2")).allowed);
}

// JWT claims key a limit only after verification: forged, unsigned and expired tokens fall
// back to the address.
TEST_F(DecideTest, JwtClaimsOnlyWhenVerified) {
  load(std::string(R"(
identity:
  jwt:
    keys: [{ algorithm: HS256, secret: ")") +
       kDecideSecret + R"(" }]
limits:
  - { name: per-user, key: "jwt:sub", rate: 5/min }
)");
  const std::int64_t now_s = kJan2026 / kMicrosPerSecond;
  const auto keyFor = [&](const std::string& token) {
    RequestView view = request("/");
    view.headers.emplace_back("Authorization", "Bearer " + token);
    const RequestContext context = resolveIdentity(*policy_, view, now_s);
    return planChecks(*policy_, context).at(0).key;
  };
  const std::string by_address = "8:per-useri12:198.51.100.7";
  EXPECT_EQ(keyFor(hs256Token("alice", now_s + 60, kDecideSecret)), "8:per-userk5:alice");
  EXPECT_EQ(keyFor(hs256Token("alice", now_s - 60, kDecideSecret)), by_address);
  EXPECT_EQ(keyFor(hs256Token("alice", now_s + 60, "another-secret-another-secret-xx")),
            by_address);
  // alg none: header {"alg":"none"}, payload {"sub":"mallory"}, no signature.
  EXPECT_EQ(keyFor("eyJhbGciOiJub25lIn0.eyJzdWIiOiJtYWxsb3J5In0."), by_address);
}

// JSON-path selectors read the request document.
TEST_F(DecideTest, JsonPathSelector) {
  load(R"(
limits:
  - { name: per-user, key: "json:$.request.http.headers['X-User-Id'][0]", rate: 5/min }
)");
  RequestView view = request("/");
  view.headers.emplace_back("x-user-id", "u-17");
  const RequestContext context = resolveIdentity(*policy_, view, 0);
  EXPECT_EQ(planChecks(*policy_, context).at(0).key, "8:per-userk4:u-17");
}

}  // namespace
}  // namespace sluice::policy
