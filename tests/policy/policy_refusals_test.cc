// What a configuration is refused for, each with the line it names: settings that would only fail
// later, or would be ignored, misread or misbehave if they loaded.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "policy/policy_loader.h"
#include "support/policy_text.h"

namespace sluice::policy {
namespace {

using testing::describeErrors;
using testing::errorsOf;
using testing::hasError;
using testing::policyFrom;

// A configuration of one limit, to add a section to.
const std::string kOneLimit = "limits: [{ name: a, rate: 1/s }]\n";

// The configuration is refused with an error at `line` that mentions `text`.
void refused(const std::string& yaml, int line, const std::string& text) {
  const std::vector<std::string> errors = errorsOf(yaml);
  EXPECT_TRUE(hasError(errors, line, text)) << yaml << "\n" << describeErrors(errors);
}

// Settings that would only fail later are refused up front.
TEST(PolicyRefusals, SettingsThatWouldOnlyFailLaterAreRefused) {
  EXPECT_TRUE(
      hasError(errorsOf("server: { listen: localhost:8080 }\nlimits: [{ name: a, rate: 1/s }]\n"),
               1, "must be an IP address and port"));
  EXPECT_TRUE(hasError(errorsOf("headers: { names: { limit: \"X Limit\" } }\n"
                                "limits: [{ name: a, rate: 1/s }]\n"),
                       1, "is not a header name"));
  const std::vector<std::string> no_anonymous =
      errorsOf("tiers:\n  gold: { rate: 10/s }\nlimits:\n  - { name: a, from_tier: true }\n");
  EXPECT_TRUE(hasError(no_anonymous, 2, "tiers.anonymous must be defined"))
      << describeErrors(no_anonymous);
  EXPECT_TRUE(
      hasError(errorsOf("limits:\n  - { name: a, rate: 1/s, action: throttle, max_delay: 5m }\n"),
               2, "max_delay must be at most 60s"));
  const std::vector<std::string> claim_without_jwt =
      errorsOf("limits:\n  - { name: a, rate: 1/s, key: \"jwt:sub\" }\n");
  EXPECT_TRUE(hasError(claim_without_jwt, 2, "reads a JWT claim, but identity.jwt is not set up"))
      << describeErrors(claim_without_jwt);
  // A key part that cannot work is reported at its own line in a list, saying why.
  const std::vector<std::string> bad_part = errorsOf(
      "limits:\n  - name: a\n    rate: 1/s\n    key:\n      - ip\n      - \"json:$.req.x\"\n");
  EXPECT_TRUE(hasError(bad_part, 6,
                       "key part \"json:$.req.x\": the request document's paths start at "
                       "$.request"))
      << describeErrors(bad_part);
  // An admin host is compared with Host's name: one with a port could never match.
  EXPECT_TRUE(hasError(errorsOf("server:\n  admin_hosts:\n    - ok.internal\n    - "
                                "bad.internal:9090\nlimits: []\n"),
                       4, "server.admin_hosts: \"bad.internal:9090\" must be a host name"));
  EXPECT_TRUE(hasError(errorsOf("server: { admin_hosts: [\"*.corp\"] }\nlimits: []\n"), 1,
                       "without a port or a wildcard"));
  const std::vector<std::string> token_path_without_jwt = errorsOf(
      "limits:\n  - { name: a, rate: 1/s, key: \"json:$.request.parsed_token.payload.sub\" }\n");
  EXPECT_TRUE(
      hasError(token_path_without_jwt, 2, "reads a JWT claim, but identity.jwt is not set up"))
      << describeErrors(token_path_without_jwt);
  // A tier of 0 per period left its limits without a spec, and so without any limit at all.
  const std::vector<std::string> zero_tier =
      errorsOf("tiers:\n  anonymous: { rate: 0/min }\nlimits:\n  - { name: a, from_tier: true }\n");
  EXPECT_TRUE(hasError(zero_tier, 2, "tier anonymous.rate: must allow at least 1 request"))
      << describeErrors(zero_tier);
}

// Identity settings that could never take effect: unusable JWT keys (each at its own line), empty
// or malformed header and claim names, a leeway finer than the claims read, an IPv6 prefix out
// of range.
TEST(PolicyRefusals, AJwtKeyOrIdentityNameThatCannotWorkIsRefused) {
  const std::string limit = kOneLimit;
  refused("identity:\n  jwt:\n    keys:\n      - { algorithm: HS256, public_key_file: rsa.pub }\n" +
              limit,
          4, "a public key file would let anyone who has it sign tokens");
  refused(
      "identity:\n  jwt:\n    keys:\n      - { algorithm: HS256, secret: "
      "hunter2-hunter2-hunter2-hunter2-hunter2, secret_env: HOME }\n" +
          limit,
      4, "takes one of secret, secret_env or public_key_file");
  // Each unusable key at its own line, all of them: the list's first line named none.
  const std::vector<std::string> keys = errorsOf(
      "identity:\n  jwt:\n    keys:\n"
      "      - { algorithm: HS512, secret: hunter2-hunter2-hunter2-hunter2-hunter2 }\n"
      "      - { algorithm: HS256, secret: hunter2-hunter2-hunter2-hunter2-hunter2 }\n"
      "      - algorithm: HS256\n        secret: short\n" +
      limit);
  EXPECT_TRUE(hasError(keys, 4, "identity.jwt.keys[0]: unknown algorithm \"HS512\""))
      << describeErrors(keys);
  EXPECT_TRUE(hasError(keys, 6, "identity.jwt.keys[2] (HS256): the secret is 5 bytes"))
      << describeErrors(keys);
  EXPECT_EQ(keys.size(), 2u) << describeErrors(keys);
  // An empty header or claim name would turn that identity off without a word.
  refused("identity: { api_key_header: \"\" }\n" + limit, 1,
          "identity.api_key_header must not be empty");
  const std::string hs256 =
      "keys: [{ algorithm: HS256, secret: 0123456789abcdef0123456789abcdef }]";
  refused("identity:\n  jwt: { header: \"\", " + hs256 + " }\n" + limit, 2,
          "identity.jwt.header must not be empty");
  refused("identity:\n  jwt: { tier_claim: \"\", " + hs256 + " }\n" + limit, 2,
          "identity.jwt.tier_claim must not be empty");
  refused("identity:\n  jwt: { tier_claim: plan, " + hs256 + " }\n" + limit, 2,
          "identity.jwt.tier_claim names each token's tier, but no tiers are defined");
  // Nor can a name that is no header name ever match one.
  refused("identity: { api_key_header: \"X-Key\\r\\nFoo\" }\n" + limit, 1,
          // Control characters are escaped in messages (Errors::add).
          "identity.api_key_header \"X-Key\\x0D\\x0AFoo\" is not a header name");
  refused("identity:\n  jwt: { header: \"X Bad:\", " + hs256 + " }\n" + limit, 2,
          "identity.jwt.header \"X Bad:\" is not a header name");
  // exp and nbf are whole seconds; 999ms read as 0.
  refused("identity:\n  jwt: { leeway: 999ms, " + hs256 + " }\n" + limit, 2,
          "identity.jwt.leeway must be whole seconds");
  EXPECT_NE(policyFrom("identity:\n  jwt: { leeway: 2000ms, " + hs256 + " }\n" + limit), nullptr);
  // Past a day, at the leeway's own line (it was reported at the keys').
  const std::vector<std::string> long_leeway =
      errorsOf("identity:\n  jwt:\n    leeway: 30d\n    " + hs256 + "\n" + limit);
  EXPECT_TRUE(hasError(long_leeway, 3, "identity.jwt.leeway must be at most 86400s"))
      << describeErrors(long_leeway);
  EXPECT_EQ(long_leeway.size(), 1u) << describeErrors(long_leeway);
  // A mapping where the list of keys goes: that error alone, at its line (the redaction of the
  // secrets iterated it as a list, and added yaml-cpp's "invalid node" with no line).
  const std::vector<std::string> keys_map = errorsOf(
      "identity:\n  jwt:\n    keys: { algorithm: HS256, secret: 0123456789abcdef0123456789abcdef "
      "}\n" +
      limit);
  EXPECT_TRUE(hasError(keys_map, 3, "identity.jwt.keys must list at least one key"))
      << describeErrors(keys_map);
  EXPECT_EQ(keys_map.size(), 1u) << describeErrors(keys_map);
  for (const std::string bits : {"0", "129", "-1", "/64"}) {
    refused("identity: { ipv6_prefix: " + bits + " }\n" + limit, 1, "identity.ipv6_prefix");
  }
  EXPECT_EQ(policyFrom(limit)->ipv6_prefix, 64u);
  EXPECT_EQ(policyFrom("identity: { ipv6_prefix: 128 }\n" + limit)->ipv6_prefix, 128u);
}

TEST(PolicyRefusals, AValueThatIsNoNumberIsOneError) {
  const std::string limit = kOneLimit;
  // A value that is no number is one error, not a second one about the number it was read as.
  for (const std::string& yaml :
       {std::string("limits: [{ name: a, rate: 1/s, burst: +5 }]\n"),
        "identity:\n  jwt:\n    keys: [{ algorithm: HS256, secret: [a, b] }]\n" + limit,
        "tiers: { anonymous: { rate: 1/s, burst: -1 } }\n" + limit,
        "tiers: { anonymous: { rate: 1/s, daily_quota: -5 } }\n" + limit}) {
    EXPECT_EQ(errorsOf(yaml).size(), 1u) << yaml << describeErrors(errorsOf(yaml));
  }
}

// Rate-limit headers renamed to what the message already owns, or two to one name.
TEST(PolicyRefusals, AHeaderNameTheResponseCannotHaveIsRefused) {
  const std::string limit = kOneLimit;
  refused("headers: { names: { limit: Content-Length } }\n" + limit, 1,
          "is a header the message's framing or transport owns");
  // Two families under one name overwrite each other; Sluice's own headers are not free.
  refused("headers: { names: { limit: X-RateLimit-Remaining } }\n" + limit, 1,
          "limit and remaining are both named \"X-RateLimit-Remaining\"");
  refused("headers: { names: { retry_after: ratelimit-policy } }\n" + limit, 1,
          "are both named \"RateLimit-Policy\"");
  refused("headers: { names: { reset: X-RateLimit-Status } }\n" + limit, 1,
          "is a header Sluice sets itself");
}

// What the file holds, before what it says: a second document, bytes that are not UTF-8 or that
// YAML does not allow, old Mac line ends, nesting past the parser's depth.
TEST(PolicyRefusals, BytesAndDocumentsYamlDoesNotAllowAreRefused) {
  const std::string limit = kOneLimit;
  refused(limit + "---\nlimits: [{ name: b, rate: 1/s }]\n", 3, "a second YAML document");
  // A limit name in other bytes made /metrics invalid; a matcher could never match.
  refused("server: { threads: 1 }\nlimits: [{ name: \"caf\xe9\", rate: 1/s }]\n", 2,
          "the file is not UTF-8");
  EXPECT_NE(policyFrom("limits: [{ name: \"caf\xc3\xa9\", rate: 1/s }]\n"), nullptr);
  // Bytes YAML does not allow get a message of their own at their place, not the parser's
  // guess: a NUL (in a comment, where the parser would read past it), an escape, a DEL.
  refused(std::string("limits: [{ name: a, rate: 1/s }]\n# a") + '\0' + "b\n", 2,
          "the file holds a control character (U+0000), which YAML does not allow");
  refused("limits: [{ name: \"a\x1b[1m\", rate: 1/s }]\n", 1, "(U+001B)");
  refused("server: { threads: 1 }\nlimits: [{ name: a\x7f, rate: 1/s }]\n", 2, "(U+007F)");
  // C1's CSI (U+009B, C2 9B in UTF-8) starts a terminal escape as ESC [ does; NEL (U+0085) is a
  // line break to YAML, and other characters with a byte in 80..9F are no control characters.
  refused(
      "limits: [{ name: \"a\xc2\x9b"
      "31m\", rate: 1/s }]\n",
      1, "1:20: the file holds a control character (U+009B)");
  EXPECT_NE(policyFrom("limits: [{ name: \"\xc4\x80\xe2\x82\xac\", rate: 1/s }]\n# \xc2\x85\n"),
            nullptr);  // Ā€, and a NEL in a comment
  // After a byte order mark, columns count from the character after it, as the parser's do.
  refused("\xEF\xBB\xBFlimits: [{ name: \"\x01\", rate: 1/s }]\n", 1,
          "1:19: the file holds a control character (U+0001)");
  EXPECT_NE(policyFrom("limits:\r\n  - {\tname: a, rate: 1/s }\r\n"), nullptr);  // tab, CR LF
  // Old Mac line ends: yaml-cpp read the whole file as one line ("illegal map value").
  refused("limits:\r  - { name: a, rate: 1/s }\r", 1,
          "a line ends in a carriage return alone: end lines with LF or CR LF");
  // Nesting past the parser's depth: its own message was "bad file".
  refused("limits: " + std::string(3000, '[') + std::string(3000, ']') + "\n", 1,
          "the YAML is nested too deeply");
}

// Limit and tier settings that would be ignored, deny every request, hold connections too long, or
// never match.
TEST(PolicyRefusals, LimitSettingsThatWouldMisbehaveAreRefused) {
  const std::string limit = kOneLimit;
  // Settings that would be ignored, and read as if they held.
  refused("limits: [{ name: a, rate: 1/s, max_delay: 2s }]\n", 1,
          "max_delay applies to action: throttle only");
  for (const std::string window :
       {"fixed_window", "sliding_window_log", "sliding_window_counter"}) {
    refused("limits: [{ name: a, algorithm: " + window + ", rate: 1/s, burst: 5 }]\n", 1,
            window + " allows the rate's count per window, and takes no other burst");
    EXPECT_NE(policyFrom("limits: [{ name: a, algorithm: " + window + ", rate: 5/s, burst: 5 }]\n"),
              nullptr)
        << window;  // the count itself: what the window does
  }
  refused("tiers:\n  \"\": { rate: 1/s }\n" + limit, 2, "a tier needs a name");
  // A fixed cost past the limit's capacity denied every request, for good.
  refused("limits: [{ name: a, rate: 10/s, cost: 11 }]\n", 1,
          "limit a.cost 11 is more than the limit holds (10)");
  refused(
      "tiers: { anonymous: { rate: 10/s }, free: { rate: 5/s } }\n"
      "limits: [{ name: a, from_tier: true, cost: 6 }]\n",
      2, "limit a.cost 6 is more than tier free's limit holds (5)");
  EXPECT_NE(policyFrom("limits: [{ name: a, rate: 10/s, cost: 10 }]\n"), nullptr);
  // A fixed cost of 0 made every request a peek: a limit that counted nothing, never denied.
  refused("limits: [{ name: a, rate: 10/s, cost: 0 }]\n", 1,
          "limit a.cost 0 would make the limit count nothing; give 1 or more");
  refused(
      "tiers: { anonymous: { rate: 10/s, daily_quota: 4 } }\n"
      "limits: [{ name: a, from_tier: true, cost: 5 }]\n",
      2, "limit a.cost 5 is more than tier anonymous's daily quota holds (4)");
  // A tier serves every limit that takes its numbers: its burst is for the bucket and gcra ones,
  // and a window limit of the same tier takes the rate's count, not an error.
  EXPECT_NE(policyFrom("tiers: { anonymous: { rate: 10/min, burst: 3 } }\n"
                       "limits: [{ name: w, key: ip, from_tier: true, algorithm: fixed_window },\n"
                       "         { name: g, key: ip, from_tier: true, algorithm: gcra }]\n"),
            nullptr);
  // A shaper holds a request (and its connection) up to burst / rate: at most 60 s, as a throttle.
  refused(
      "limits: [{ name: a, algorithm: leaky_bucket_shaper, rate: 1/h, burst: 1000 }]\n", 1,
      "holds a request up to (burst - 1) / rate (3596400s here), and must not hold one over 60s");
  EXPECT_NE(policyFrom("limits: [{ name: a, algorithm: leaky_bucket_shaper, rate: 1/h }]\n"),
            nullptr);
  EXPECT_NE(policyFrom("limits: [{ name: a, algorithm: leaky_bucket_shaper, rate: 1/s, burst: 61 "
                       "}]\n"),
            nullptr);
  EXPECT_NE(
      policyFrom("limits: [{ name: a, algorithm: leaky_bucket_shaper, rate: 1/s, burst: 60 }]\n"),
      nullptr);
  refused(
      "tiers:\n  anonymous: { rate: 1/min, burst: 5 }\nlimits:\n  - { name: a, "
      "algorithm: leaky_bucket_shaper, from_tier: true }\n",
      4, "limit a with tier anonymous: a leaky_bucket_shaper holds a request up to");
  refused("limits: [{ name: a, rate: 1/s, match: { method: [] } }]\n", 1, "an empty list");
  refused("limits: [{ name: a, rate: 1/s, key: \"header:X-A:B\", when_missing: skip }]\n", 1,
          "is not a header or cookie name");
  refused("limits: [{ name: a, rate: 1/s, key: \"cookie:a;b\" }]\n", 1,
          "is not a header or cookie name");
  refused("limits: [{ name: \"\", rate: 1/s }]\n", 1, "must be non-empty");
  refused("limits: [{ name: \"a\\0b\", rate: 1/s }]\n", 1, "without control characters");
  refused("limits: [{ name: \"a\\x9b\", rate: 1/s }]\n", 1, "without control characters");  // C1
  // A name goes into every header that lists limits: 201 bytes is over the bound, 200 is not.
  refused("limits: [{ name: " + std::string(201, 'n') + ", rate: 1/s }]\n", 1, "at most 200 bytes");
  refused(
      "tiers:\n  anonymous: { rate: 3/min, burst: 0 }\nlimits: [{ name: a, from_tier: true }]\n", 2,
      "burst must be at least 1");
  refused(
      "tiers:\n  anonymous: { rate: 3/min, daily_quota: 0 }\nlimits: [{ name: a, from_tier: true "
      "}]\n",
      2, "daily_quota must be at least 1");
  // A quota past what a daily window counts, at the tier's line (it was reported at the limit
  // taking its numbers from the tiers, and not at all with none), and only there.
  for (const std::string limits :
       {"limits: [{ name: a, from_tier: true }]\n", "limits: [{ name: a, rate: 1/s }]\n"}) {
    const std::vector<std::string> quota =
        errorsOf("tiers:\n  anonymous: { rate: 1/s, daily_quota: 99999999999 }\n" + limits);
    EXPECT_TRUE(hasError(quota, 2, "tier anonymous.daily_quota: fixed_window 99999999999/day"))
        << describeErrors(quota);
    EXPECT_EQ(quota.size(), 1u) << describeErrors(quota);
  }
  // A tier's daily quota is "<limit>:daily" in headers and metrics: two policies of one name.
  refused(
      "tiers:\n  anonymous: { rate: 3/min, daily_quota: 100 }\nlimits:\n"
      "  - { name: pc, from_tier: true }\n  - { name: \"pc:daily\", rate: 3/h }\n",
      4, "has the name of pc's daily quota");
}

// Settings of another store, which would be ignored and read as if they held.
TEST(PolicyRefusals, StoreSettingsOfAnotherStoreAreRefused) {
  const std::string limit = kOneLimit;
  // Redis settings on the memory store (type left out) were ignored: limits per node.
  refused("store: { address: 127.0.0.1:6379, sluice_nodes: 3 }\n" + limit, 1,
          "store.address is a Redis setting, and this store is memory");
  refused("store: { type: memory, password: x }\n" + limit, 1, "store.password is a Redis setting");
  // A misspelt type says so, and not that the address beside it is a Redis setting.
  const std::vector<std::string> misspelt =
      errorsOf("store: { type: redsi, address: 127.0.0.1:6379 }\n" + limit);
  EXPECT_TRUE(hasError(misspelt, 1, "store.type must be")) << describeErrors(misspelt);
  EXPECT_FALSE(hasError(misspelt, 1, "is a Redis setting")) << describeErrors(misspelt);
  refused("store: { type: synced, address: 127.0.0.1:6379, on_error: deny }\n" + limit, 1,
          "store.on_error does not apply to the synced store");
  // A synced node decides alone through an outage: a limit's deny would never happen.
  refused(
      "store: { type: synced, address: 127.0.0.1:6379 }\n"
      "limits:\n  - { name: login, rate: 5/s, on_error: deny }\n",
      3, "limit login: on_error does not apply to the synced store");
  for (const std::string setting :
       {"connections: 4", "calls_in_flight: 2", "breaker_failures: 3", "breaker_cooldown: 1s"}) {
    refused(
        "store: { type: synced, address: 127.0.0.1:6379,\n  " + setting + " }\n" + limit, 2,
        "store." + setting.substr(0, setting.find(':')) + " does not apply to the synced store");
  }
  refused("store: { type: redis_cluster, address: 127.0.0.1:7000, calls_in_flight: 2 }\n" + limit,
          1, "store.calls_in_flight does not apply to redis_cluster");
  for (const std::string type : {"redis", "redis_cluster"}) {
    refused(
        "store: { type: " + type + ", address: 127.0.0.1:7000,\n  sync_interval: 50ms }\n" + limit,
        2, "store.sync_interval applies to the synced store only");
  }
  EXPECT_NE(policyFrom("store: { type: redis, address: 127.0.0.1:6379, calls_in_flight: 2,\n"
                       "  breaker_failures: 3 }\n"
                       "limits: [{ name: a, rate: 1/s, on_error: deny }]\n"),
            nullptr);
}

// Listeners and server limits that could not work.
TEST(PolicyRefusals, ServerSettingsOutOfRangeAreRefused) {
  const std::string limit = kOneLimit;
  refused("server: { listen: \"127.0.0.1:99999\" }\n" + limit, 1, "port (0..65535)");
  refused("server: { listen: \"127.0.0.1:abc\" }\n" + limit, 1, "port (0..65535)");
  refused("server: { request_timeout: 1us }\n" + limit, 1, "at least 1ms");
  refused("server: { max_body_bytes: 0 }\n" + limit, 1, "server.max_body_bytes must be 1 to");
  refused("server: { auth_uri_header: \"X Y\" }\n" + limit, 1, "must name a header");
  refused("server: { listen: 127.0.0.1:8080, admin: 127.0.0.1:8080 }\n" + limit, 1,
          "server.listen and server.admin name the same port");
  // Each at the line of the address, not the server section's.
  refused("server:\n  threads: 2\n  listen: 127.0.0.1:80800\n" + limit, 3, "server.listen must be");
  refused("server:\n  threads: 2\n  admin: localhost:9090\n" + limit, 3, "server.admin must be");
  refused("server:\n  listen: 127.0.0.1:8080\n  admin: 0.0.0.0:8080\n" + limit, 3,
          "server.listen and server.admin name the same port");
  refused("server:\n  threads: 2\n  listen: 127.0.0.1:9090\n" + limit, 3,
          "server.listen and server.admin name the same port");  // the default admin's port
  // A dual-stack socket on an IPv4-mapped address takes the IPv4 address's port.
  refused("server: { listen: 127.0.0.1:8080, admin: \"[::ffff:127.0.0.1]:8080\" }\n" + limit, 1,
          "server.listen and server.admin name the same port");
  // "::1:80" is a whole IPv6 address itself: which colon starts the port is a guess.
  refused("server: { listen: \"::1:8080\" }\n" + limit, 1,
          "an IPv6 address takes brackets before its port, as [::1]:80");
  refused("server: { max_header_bytes: 100 }\n" + limit, 1,
          "server.max_header_bytes must be 1024 to 65536");
  refused("server: { max_header_bytes: 65537 }\n" + limit, 1,
          "server.max_header_bytes must be 1024 to 65536");
}

}  // namespace
}  // namespace sluice::policy
