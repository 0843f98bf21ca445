#include "policy/policy_loader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "policy/request_view.h"
#include "support/policy_text.h"

namespace sluice::policy {
namespace {

using testing::describeErrors;
using testing::errorsOf;
using testing::hasError;
using testing::policyFrom;

// The shipped example configuration loads.
TEST(PolicyLoader, ExampleConfigLoads) {
  const LoadResult loaded = loadPolicy(SLUICE_SOURCE_DIR "/examples/sluice.yaml");
  ASSERT_NE(loaded.policy, nullptr) << describeErrors(loaded.errors);
  EXPECT_EQ(loaded.policy->limits.size(), 5u);
  EXPECT_EQ(loaded.policy->tiers.size(), 4u);
  EXPECT_EQ(loaded.policy->api_key_tiers.size(), 3u);
}

// A complete limit: match, key, algorithm, rate, burst, cost, action, status.
TEST(PolicyLoader, ParsesALimit) {
  const PolicyPtr policy = policyFrom(R"(
limits:
  - name: login
    match: { method: [post, PUT], path_prefix: /login }
    key: [ip, header:X-User]
    algorithm: sliding_window
    rate: 10/h
    cost: 2
    action: throttle
    max_delay: 1500ms
    deny_status: 503
    when_missing: skip
)");
  ASSERT_NE(policy, nullptr);
  const Limit& limit = policy->limits.at(0);
  EXPECT_EQ(limit.name, "login");
  EXPECT_TRUE(limit.match.matches("POST", "/login/x"));
  EXPECT_FALSE(limit.match.matches("GET", "/login"));
  EXPECT_EQ(limit.key.text(), "ip+header:X-User");
  EXPECT_EQ(limit.spec->algorithm(), Algorithm::kSlidingWindowCounter);
  EXPECT_EQ(limit.spec->rate().count, 10u);
  EXPECT_EQ(limit.cost, 2u);
  EXPECT_EQ(limit.action, Action::kThrottle);
  EXPECT_EQ(limit.max_delay_us, 1500 * kMicrosPerMilli);
  EXPECT_EQ(limit.deny_status, 503);
  EXPECT_EQ(limit.when_missing, WhenMissing::kSkip);
}

// Route patterns are normalized as request paths are, so that none is written in a way that
// could never match; `*` is any method, and a method must be a token.
TEST(PolicyLoader, RoutePatternsMatchNormalizedPaths) {
  const PolicyPtr policy = policyFrom(R"(
limits:
  - { name: glob, rate: 1/s, match: { path_glob: "/users/*/" } }
  - { name: encoded, rate: 1/s, match: { path_prefix: "/caf%C3%A9" } }
  - { name: directory, rate: 1/s, match: { path_prefix: "/api/" } }
  - { name: dots, rate: 1/s, match: { path: "/a/./b/../c" } }
  - { name: any, rate: 1/s, match: { method: "*", path: /x } }
  - { name: custom, rate: 1/s, match: { method: [purge, GET], path: /x } }
  - { name: anycase, rate: 1/s, match: { path: /Login, case_sensitive: false } }
)");
  ASSERT_NE(policy, nullptr);
  const auto& limits = policy->limits;
  EXPECT_TRUE(limits[0].match.matches("GET", "/users/42"));  // "/users/42/" arrives as this
  EXPECT_FALSE(limits[0].match.matches("GET", "/users/42/posts"));
  EXPECT_TRUE(limits[1].match.matches("GET", normalizePath("/caf%C3%A9/menu")));
  EXPECT_TRUE(limits[2].match.matches("GET", "/api/items"));
  EXPECT_TRUE(limits[2].match.matches("GET", "/api"));
  EXPECT_FALSE(limits[2].match.matches("GET", "/apix"));
  EXPECT_TRUE(limits[3].match.matches("GET", "/a/c"));
  EXPECT_TRUE(limits[4].match.matches("DELETE", "/x"));
  EXPECT_TRUE(limits[5].match.matches("PURGE", "/x"));
  EXPECT_FALSE(limits[5].match.matches("POST", "/x"));
  EXPECT_TRUE(limits[6].match.matches("POST", "/LOGIN"));
  EXPECT_FALSE(limits[0].match.matches("GET", "/USERS/42"));  // case-sensitive unless told
  const std::vector<std::string> errors = errorsOf(R"(limits:
  - { name: a, rate: 1/s, match: { method: "GE T", path: /x } }
  - { name: b, rate: 1/s, match: { path: "/search?q=1" } }
  - { name: c, rate: 1/s, match: { path_glob: "/files/%2A" } }
  - { name: d, rate: 1/s, match: { path: /x, case_sensitive: sometimes } }
  - { name: e, rate: 1/s, match: { method: GET, case_sensitive: false } }
)");
  EXPECT_TRUE(hasError(errors, 2, "\"GE T\" is not a method")) << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 3, "a query never matches")) << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 4, "write it without %")) << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 5, "case_sensitive")) << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 6, "case_sensitive needs a path")) << describeErrors(errors);
  // An entry of a block list is reported at its own line.
  const std::vector<std::string> entry = errorsOf(
      "limits:\n  - name: a\n    rate: 1/s\n    match:\n      method:\n        - GET\n"
      "        - \"PO ST\"\n");
  EXPECT_TRUE(hasError(entry, 7, "\"PO ST\" is not a method")) << describeErrors(entry);
  // "/files/." names the directory: below it, not any path starting "/files".
  const PolicyPtr directory =
      policyFrom("limits: [{ name: a, rate: 1/s, match: { path_prefix: /files/. } }]\n");
  ASSERT_NE(directory, nullptr);
  EXPECT_TRUE(directory->limits[0].match.matches("GET", "/files/x"));
  EXPECT_FALSE(directory->limits[0].match.matches("GET", "/filesystem"));
}

// Every problem is reported, each with its line, in one pass.
TEST(PolicyLoader, ReportsEveryErrorWithItsLine) {
  const std::vector<std::string> errors = errorsOf(R"(server:
  listen: 127.0.0.1:8080
  threads: lots
store: { type: etcd }
tiers:
  free: { burst: 3 }
limits:
  - name: a
    rate: 10/fortnight
  - name: a
    rate: 5/s
    algorithm: magic
  - name: c
    rate: 5/s
    action: throttle
  - name: d
    rate: 5/s
    burst: 0
    algorithm: gcra
  - name: e
    rate: 5/s
    key: bogus
    colour: blue
  - name: f
  - name: g
    from_tier: true
    rate: 1/s
    deny_status: 200
)");
  EXPECT_TRUE(hasError(errors, 3, "server.threads")) << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 4, "store.type must be memory, redis")) << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 6, "tier free needs a rate")) << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 9, "unknown period unit \"fortnight\"")) << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 10, "used twice")) << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 12, "algorithm \"magic\" is unknown")) << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 13, "needs max_delay")) << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 18, "burst (capacity) must be at least 1"))
      << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 22, "key part \"bogus\" is unknown")) << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 23, "unknown key \"colour\"")) << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 24, "needs a rate")) << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 25, "remove them here")) << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 28, "deny_status must be 400..599")) << describeErrors(errors);
}

// A value that cannot be read is reported once, by what reads it, not again by a range check
// or a requirement that then saw it as missing or zero.
TEST(PolicyLoader, AnUnreadableValueIsReportedOnce) {
  const std::vector<std::string> errors = errorsOf(R"(server:
  request_timeout: soon
  max_body_bytes: lots
  max_header_bytes: -1
limits:
  - { name: a, key: ip, rate: 5/s, action: throttle, max_delay: later }
  - { name: b, key: ip, rate: 5/s, action: throttle, max_delay: 0s }
)");
  EXPECT_EQ(errors.size(), 5u) << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 2, "server.request_timeout: duration \"soon\""))
      << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 3, "server.max_body_bytes must be a whole number"))
      << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 4, "server.max_header_bytes must be a whole number"))
      << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 6, "a.max_delay: duration \"later\"")) << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 7, "b throttles and needs max_delay")) << describeErrors(errors);
}

// The store section: a shared store with its failure policy, which limits inherit unless they
// say otherwise; bad values are reported with their lines.
TEST(PolicyLoader, ReadsSharedStoreSettings) {
  const PolicyPtr policy = policyFrom(R"(store:
  type: redis_cluster
  addresses: [127.0.0.1:7000, redis-b:7001]
  timeout: 15ms
  on_error: local
  sluice_nodes: 3
  connections: 4
limits:
  - name: a
    rate: 5/s
  - name: b
    rate: 5/s
    on_error: deny
)");
  EXPECT_EQ(policy->store.type, StoreSettings::Type::kRedisCluster);
  EXPECT_EQ(policy->store.addresses, (std::vector<std::string>{"127.0.0.1:7000", "redis-b:7001"}));
  EXPECT_EQ(policy->store.timeout_us, 15'000);
  EXPECT_EQ(policy->store.sluice_nodes, 3u);
  EXPECT_EQ(policy->store.connections, 4u);
  EXPECT_EQ(policy->limits[0].on_error, OnStoreError::kLocal);
  EXPECT_EQ(policy->limits[1].on_error, OnStoreError::kDeny);

  const std::vector<std::string> errors = errorsOf(R"(store:
  type: redis
  addresses: [127.0.0.1:6379, 127.0.0.1:6380]
  timeout: 5s
  on_error: maybe
  address: nowhere
  calls_in_flight: 65
limits:
  - name: a
    rate: 5/s
    on_error: sometimes
)");
  EXPECT_TRUE(hasError(errors, 4, "store.timeout")) << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 5, "store.on_error must be allow, deny or local"))
      << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 6, "must be host:port")) << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 7, "store.calls_in_flight is at most 64")) << describeErrors(errors);
  EXPECT_TRUE(hasError(errors, 11, "on_error must be allow, deny or local"))
      << describeErrors(errors);
  EXPECT_TRUE(hasError(errorsOf("store:\n  type: redis\n  calls_in_flight: 0\n"), 3,
                       "store.calls_in_flight"))
      << describeErrors(errorsOf("store:\n  type: redis\n  calls_in_flight: 0\n"));
}

// Redis AUTH: an inline password (redacted for /admin/config) or one from the environment, with
// an ACL user's name; two sources, an unset variable or a name without a password are refused.
TEST(PolicyLoader, ReadsRedisCredentials) {
  const PolicyPtr inline_password = policyFrom(
      "store: { type: redis, username: limiter, password: hunter2-redis }\n"
      "limits: [ { name: a, rate: 5/s } ]\n");
  ASSERT_NE(inline_password, nullptr);
  EXPECT_EQ(inline_password->store.username, "limiter");
  EXPECT_EQ(inline_password->store.password, "hunter2-redis");
  EXPECT_EQ(inline_password->redacted_yaml.find("hunter2"), std::string::npos);
  EXPECT_NE(inline_password->redacted_yaml.find("<redacted>"), std::string::npos);

  ::setenv("SLUICE_TEST_REDIS_PASSWORD", "from-the-environment", 1);
  const PolicyPtr from_env = policyFrom(
      "store: { type: synced, password_env: SLUICE_TEST_REDIS_PASSWORD }\n"
      "limits: [ { name: a, rate: 5/s } ]\n");
  ASSERT_NE(from_env, nullptr);
  EXPECT_EQ(from_env->store.password, "from-the-environment");
  EXPECT_TRUE(from_env->store.username.empty());

  const std::vector<std::string> errors = errorsOf(R"(store:
  type: redis
  password: a
  password_env: SLUICE_TEST_REDIS_PASSWORD
limits: [ { name: a, rate: 5/s } ]
)");
  EXPECT_TRUE(hasError(errors, 2, "give password or password_env, not both"))
      << describeErrors(errors);
  EXPECT_TRUE(hasError(errorsOf("store:\n  password_env: SLUICE_TEST_UNSET_VARIABLE\n"), 2,
                       "SLUICE_TEST_UNSET_VARIABLE is not set"))
      << describeErrors(errorsOf("store:\n  password_env: SLUICE_TEST_UNSET_VARIABLE\n"));
  EXPECT_TRUE(
      hasError(errorsOf("store:\n  username: limiter\n"), 2, "store.username needs a password"))
      << describeErrors(errorsOf("store:\n  username: limiter\n"));
  EXPECT_TRUE(hasError(errorsOf("store:\n  password: \"\"\n"), 2, "store.password is empty"))
      << describeErrors(errorsOf("store:\n  password: \"\"\n"));
}

// A Unix socket address for a plain Redis; a cluster's nodes are host:port.
TEST(PolicyLoader, ReadsAUnixSocketAddress) {
  const PolicyPtr policy = policyFrom(
      "store: { type: synced, address: unix:/run/redis/redis.sock }\n"
      "limits: [ { name: a, rate: 5/s } ]\n");
  ASSERT_NE(policy, nullptr);
  EXPECT_EQ(policy->store.addresses, std::vector<std::string>{"unix:/run/redis/redis.sock"});
  const std::string cluster = "store:\n  type: redis_cluster\n  addresses: [unix:/run/r.sock]\n";
  EXPECT_TRUE(hasError(errorsOf(cluster), 3, "a Redis Cluster's nodes are host:port"))
      << describeErrors(errorsOf(cluster));
  EXPECT_TRUE(hasError(errorsOf("store:\n  address: \"unix:\"\n"), 2, "must be host:port"))
      << describeErrors(errorsOf("store:\n  address: \"unix:\"\n"));
  EXPECT_TRUE(hasError(errorsOf("store:\n  address: unix:relative.sock\n"), 2, "unix:/path"))
      << describeErrors(errorsOf("store:\n  address: unix:relative.sock\n"));
  // sockaddr_un holds 107 bytes and a NUL: a longer path would be cut short (another socket).
  const std::string longest = "/" + std::string(106, 's');
  EXPECT_NE(policyFrom("store: { type: redis, address: \"unix:" + longest +
                       "\" }\nlimits: [ { name: a, rate: 5/s } ]\n"),
            nullptr);
  const std::string too_long = "store:\n  address: \"unix:" + longest + "s\"\n";
  EXPECT_TRUE(hasError(errorsOf(too_long), 2, "a Unix socket path is at most 107 bytes, not 108"))
      << describeErrors(errorsOf(too_long));
  const std::string with_nul = "store:\n  address: \"unix:/run/r\\0.sock\"\n";
  EXPECT_TRUE(hasError(errorsOf(with_nul), 2, "cannot hold a NUL byte"))
      << describeErrors(errorsOf(with_nul));
}

// A trusted proxy that is no network is reported at its own entry.
TEST(PolicyLoader, TrustedProxyErrorsAreAtTheirEntry) {
  const std::vector<std::string> errors = errorsOf(
      "identity:\n  trusted_proxies:\n    - 10.0.0.0/8\n    - 10.0.0.0/33\n"
      "limits: [{ name: a, rate: 1/s }]\n");
  EXPECT_TRUE(hasError(errors, 4, "identity.trusted_proxies: ")) << describeErrors(errors);
}

// Each of a cluster's addresses is reported at its own line, not the list's.
TEST(PolicyLoader, StoreAddressErrorsAreAtTheirEntry) {
  const std::string yaml =
      "store:\n  type: redis_cluster\n  addresses:\n    - 127.0.0.1:7000\n    - redis-b\n"
      "    - unix:/run/r.sock\n";
  EXPECT_TRUE(hasError(errorsOf(yaml), 5, "store address \"redis-b\" must be host:port"))
      << describeErrors(errorsOf(yaml));
  EXPECT_TRUE(hasError(errorsOf(yaml), 6, "a Redis Cluster's nodes are host:port"))
      << describeErrors(errorsOf(yaml));
  EXPECT_TRUE(hasError(errorsOf("store:\n  type: redis_cluster\n  addresses: []\n"), 3,
                       "must name at least one server"));
}

// store.database for a plain Redis; a cluster has database 0 only.
TEST(PolicyLoader, ReadsTheRedisDatabase) {
  const PolicyPtr policy =
      policyFrom("store: { type: redis, database: 3 }\nlimits: [ { name: a, rate: 5/s } ]\n");
  ASSERT_NE(policy, nullptr);
  EXPECT_EQ(policy->store.database, 3);
  const std::string cluster = "store:\n  type: redis_cluster\n  database: 1\n";
  EXPECT_TRUE(hasError(errorsOf(cluster), 3, "a Redis Cluster has database 0 only"))
      << describeErrors(errorsOf(cluster));
  EXPECT_TRUE(hasError(errorsOf("store:\n  database: -1\n"), 2, "store.database"))
      << describeErrors(errorsOf("store:\n  database: -1\n"));
}

// YAML syntax errors carry their line too; an empty or wrong-shaped file is refused.
TEST(PolicyLoader, SyntaxAndShape) {
  EXPECT_TRUE(hasError(errorsOf("limits:\n  - name: [unclosed\n"), 3, ""))
      << describeErrors(errorsOf("limits:\n  - name: [unclosed\n"));
  EXPECT_FALSE(errorsOf("").empty());
  EXPECT_FALSE(errorsOf("- just\n- a list\n").empty());
  EXPECT_TRUE(hasError(errorsOf("limits: []\n"), 1, "at least one limit"));
  const LoadResult missing = loadPolicy("/nonexistent/sluice.yaml");
  ASSERT_EQ(missing.errors.size(), 1u);
  EXPECT_NE(missing.errors[0].find("cannot read"), std::string::npos);
}

// Only regular files are read, up to 64 MiB: a FIFO as the configuration or the keys file hung
// `validate`, and a reload's I/O loop, until a writer came; /dev/zero grew memory without end.
TEST(PolicyLoader, ReadsRegularFilesOnly) {
  const std::string dir = ::testing::TempDir();
  const std::string fifo = dir + "/sluice-fifo-" + std::to_string(::getpid());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {fifo, std::string("/dev/zero"), dir}) {
    const LoadResult loaded = loadPolicy(path);
    ASSERT_EQ(loaded.errors.size(), 1u) << path;
    EXPECT_NE(loaded.errors[0].find("not a regular file"), std::string::npos) << loaded.errors[0];
  }
  const std::vector<std::string> keys =
      errorsOf("limits: [{ name: a, rate: 1/s }]\nidentity: { keys_file: " + fifo + " }\n");
  ASSERT_FALSE(keys.empty());
  EXPECT_NE(keys[0].find("not a regular file"), std::string::npos) << describeErrors(keys);
  ::unlink(fifo.c_str());
}

// An empty keys_file (a template whose variable was unset) is refused at its line: it read as no
// keys file, and every listed key's client fell to the anonymous tier without a word.
TEST(PolicyLoader, AnEmptyKeysFileIsRefused) {
  const std::vector<std::string> errors =
      errorsOf("limits: [{ name: a, rate: 1/s }]\nidentity:\n  keys_file: \"\"\n");
  ASSERT_EQ(errors.size(), 1u) << describeErrors(errors);
  EXPECT_NE(errors[0].find(":3:14: identity.keys_file must not be empty"), std::string::npos)
      << errors[0];
}

// A path holding a NUL byte (YAML's "\0" escape) is refused at its line: the system calls would
// end it there and open another file ("keys.yaml\0.bak" read keys.yaml).
TEST(PolicyLoader, APathHoldingANulByteIsRefused) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/nul-keys.yaml") << "keys:\n  - { key: k1, tier: free }\n";
  const std::vector<std::string> keys =
      errorsOf("limits: [{ name: a, rate: 1/s }]\nidentity:\n  keys_file: \"" + dir +
               "/nul-keys.yaml\\0.bak\"\n");
  ASSERT_EQ(keys.size(), 1u) << describeErrors(keys);
  EXPECT_NE(keys[0].find(":3:14: identity.keys_file holds a NUL byte"), std::string::npos)
      << keys[0];
  const std::vector<std::string> jwt = errorsOf(
      "limits: [{ name: a, rate: 1/s }]\nidentity:\n  jwt:\n    keys:\n"
      "      - { algorithm: RS256, public_key_file: \"k.pem\\0\" }\n");
  ASSERT_EQ(jwt.size(), 1u) << describeErrors(jwt);
  EXPECT_TRUE(hasError(jwt, 5, "public_key_file holds a NUL byte")) << describeErrors(jwt);
}

// server.admin_hosts is compared with Host's name as that is read: in lower case, without a
// final dot (with one, "metrics.internal." matched no request).
TEST(PolicyLoader, AdminHostsAreReadAsHostNamesAreCompared) {
  const PolicyPtr policy = policyFrom(
      "server: { admin_hosts: [Metrics.Internal., sluice-admin] }\nlimits: [{ name: a, "
      "rate: 1/s }]\n");
  ASSERT_NE(policy, nullptr);
  EXPECT_EQ(policy->server.admin_hosts,
            (std::vector<std::string>{"metrics.internal", "sluice-admin"}));
}

// Tiers and a keys file: keys map to tiers, by value or by SHA-256; unknown tiers are errors.
TEST(PolicyLoader, KeysFile) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/keys-good.yaml") << "keys:\n  - { key: k1, tier: gold }\n"
                                            "  - { sha256: "
                                         << std::string(64, 'a') << ", tier: gold }\n";
  std::ofstream(dir + "/keys-bad.yaml") << "keys:\n  - { key: k2, tier: platinum }\n";
  const std::string base =
      "tiers:\n  gold: { rate: 10/s }\nlimits:\n  - { name: a, rate: 1/s }\n"
      "identity:\n  keys_file: ";
  const PolicyPtr policy = policyFrom(base + "keys-good.yaml\n", dir);
  ASSERT_NE(policy, nullptr);
  EXPECT_EQ(policy->api_key_tiers.size(), 2u);
  // The same key twice would take the later tier without a word.
  std::ofstream(dir + "/keys-twice.yaml") << "keys:\n  - { key: k1, tier: gold }\n"
                                             "  - { key: k1, tier: gold }\n";
  const std::vector<std::string> twice = errorsOf(base + "keys-twice.yaml\n", dir);
  ASSERT_FALSE(twice.empty());
  EXPECT_NE(twice[0].find("keys-twice.yaml:3:"), std::string::npos) << describeErrors(twice);
  EXPECT_NE(twice[0].find("already listed"), std::string::npos) << describeErrors(twice);
  // An empty key (a template's unset variable) would give its tier to every empty header.
  std::ofstream(dir + "/keys-empty.yaml") << "keys:\n  - { key: \"\", tier: gold }\n";
  const std::vector<std::string> empty = errorsOf(base + "keys-empty.yaml\n", dir);
  ASSERT_FALSE(empty.empty());
  EXPECT_NE(empty[0].find("keys-empty.yaml:2:"), std::string::npos) << describeErrors(empty);
  EXPECT_NE(empty[0].find("must not be empty"), std::string::npos) << describeErrors(empty);
  // Requests' keys are read without blanks around them: such an entry could never match.
  for (const std::string key : {" k3", "k3 ", "   "}) {
    std::ofstream(dir + "/keys-blank.yaml")
        << "keys:\n  - { key: \"" << key << "\", tier: gold }\n";
    const std::vector<std::string> blank = errorsOf(base + "keys-blank.yaml\n", dir);
    ASSERT_FALSE(blank.empty()) << '"' << key << '"';
    EXPECT_NE(blank[0].find("keys-blank.yaml:2:"), std::string::npos) << describeErrors(blank);
    EXPECT_NE(blank[0].find("must not begin or end with a blank"), std::string::npos)
        << describeErrors(blank);
  }
  // No header holds a control character, so no request could present such a key.
  std::ofstream(dir + "/keys-control.yaml") << "keys:\n  - { key: \"line\\nbreak\", tier: gold }\n";
  const std::vector<std::string> control = errorsOf(base + "keys-control.yaml\n", dir);
  ASSERT_EQ(control.size(), 1u) << describeErrors(control);
  EXPECT_NE(control[0].find("keys-control.yaml:2:"), std::string::npos) << control[0];
  EXPECT_NE(control[0].find("control character"), std::string::npos) << control[0];
  // With identity.jwt reading the same header, a key with two dots is read as a token: it could
  // never be presented. On a header of its own it is a key.
  std::ofstream(dir + "/keys-dots.yaml") << "keys:\n  - { key: pk.live.abc123, tier: gold }\n";
  const std::string jwt =
      "  jwt: { keys: [{ algorithm: HS256, secret: 0123456789abcdef0123456789abcdef }] }\n";
  const std::vector<std::string> dots = errorsOf(base + "keys-dots.yaml\n" + jwt, dir);
  ASSERT_EQ(dots.size(), 1u) << describeErrors(dots);
  EXPECT_NE(dots[0].find("keys-dots.yaml:2:"), std::string::npos) << dots[0];
  EXPECT_NE(dots[0].find("reads as a JWT in Authorization"), std::string::npos) << dots[0];
  EXPECT_NE(policyFrom(base + "keys-dots.yaml\n" + jwt + "  api_key_header: X-Api-Key\n", dir),
            nullptr);
  // A keys file is YAML, which is Unicode, as every config file (a Latin-1 key can be listed by
  // its sha256).
  std::ofstream(dir + "/keys-latin1.yaml") << "keys:\n  - { key: caf\xe9, tier: gold }\n";
  const std::vector<std::string> latin1 = errorsOf(base + "keys-latin1.yaml\n", dir);
  ASSERT_EQ(latin1.size(), 1u) << describeErrors(latin1);
  EXPECT_NE(latin1[0].find("keys-latin1.yaml:2:15: the file is not UTF-8"), std::string::npos)
      << describeErrors(latin1);
  const std::vector<std::string> errors = errorsOf(base + "keys-bad.yaml\n", dir);
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].find("keys-bad.yaml:2:"), std::string::npos) << describeErrors(errors);
  EXPECT_NE(errors[0].find("tier \"platinum\" is not defined"), std::string::npos)
      << describeErrors(errors);
  // A second list beside keys: would give its keys no tier without a word; an entry without a
  // tier says it needs one, and a key that is a list says so alone (not "empty" as well).
  std::ofstream(dir + "/keys-odd.yaml") << "keys:\n  - { key: f }\n  - { key: [x], tier: gold }\n"
                                           "extra_keys:\n  - { key: a2, tier: gold }\n";
  const std::vector<std::string> odd = errorsOf(base + "keys-odd.yaml\n", dir);
  ASSERT_EQ(odd.size(), 3u) << describeErrors(odd);
  EXPECT_NE(odd[0].find("keys-odd.yaml:4:1: unknown key \"extra_keys\" in a keys file"),
            std::string::npos)
      << describeErrors(odd);
  EXPECT_NE(odd[1].find("keys-odd.yaml:2:5: a keys entry needs a tier"), std::string::npos)
      << describeErrors(odd);
  EXPECT_NE(odd[2].find("keys-odd.yaml:3:12: key must be a single value"), std::string::npos)
      << describeErrors(odd);
  // A field that is not one value is said so once: not "already listed", "not defined" or
  // "64 hex digits" besides.
  std::ofstream(dir + "/keys-lists.yaml")
      << "keys:\n  - { key: [y], tier: gold }\n  - { key: [z], tier: gold }\n"
         "  - { key: k9, tier: [gold] }\n  - { sha256: [x], tier: gold }\n";
  const std::vector<std::string> lists = errorsOf(base + "keys-lists.yaml\n", dir);
  ASSERT_EQ(lists.size(), 4u) << describeErrors(lists);
  for (const std::string& error : lists) {
    EXPECT_NE(error.find("must be a single value"), std::string::npos) << describeErrors(lists);
  }
}

// Limits a shared store cannot hold are refused, for the store the file names and, on a
// reload, for the store the process runs: a file edited to `type: memory` with a sliding log
// was reloaded into a running synced store, which then denied every request to that limit.
TEST(PolicyLoader, LimitsMustFitTheStoreRunning) {
  const std::string logs =
      "limits:\n  - { name: logged, algorithm: sliding_window_log, rate: 5/min }\n";
  const LoadResult synced_file =
      loadPolicyText("store: { type: synced, address: 127.0.0.1:6379 }\n" + logs, "t.yaml", "");
  ASSERT_EQ(synced_file.policy, nullptr);
  EXPECT_NE(synced_file.errors[0].find("t.yaml:3:"), std::string::npos) << synced_file.errors[0];
  EXPECT_NE(synced_file.errors[0].find("the synced store cannot share a sliding window log"),
            std::string::npos)
      << synced_file.errors[0];
  ASSERT_NE(loadPolicyText(logs, "t.yaml", "").policy, nullptr);  // memory holds any limit

  StoreSettings running;
  running.type = StoreSettings::Type::kSynced;
  running.addresses = {"127.0.0.1:6379"};
  const LoadResult reload = loadPolicyText(logs, "t.yaml", "", &running);
  ASSERT_EQ(reload.policy, nullptr);
  EXPECT_NE(reload.errors[0].find("the synced store this process runs"), std::string::npos)
      << reload.errors[0];
  running.type = StoreSettings::Type::kRedis;
  EXPECT_NE(loadPolicyText(logs, "t.yaml", "", &running).policy, nullptr);  // Redis holds logs
  // A limit's on_error is the file's store's business: a file moving a synced process to Redis
  // may set it (the store changes at restart).
  running.type = StoreSettings::Type::kSynced;
  const LoadResult moving = loadPolicyText(
      "store: { type: redis, address: 127.0.0.1:6379 }\n"
      "limits: [{ name: login, rate: 5/min, on_error: deny }]\n",
      "t.yaml", "", &running);
  EXPECT_NE(moving.policy, nullptr) << (moving.errors.empty() ? "" : moving.errors[0]);
}

// Secrets never appear in the configuration the admin endpoint shows.
TEST(PolicyLoader, RedactsSecrets) {
  const PolicyPtr policy = policyFrom(R"(
identity:
  jwt:
    keys:
      - { algorithm: HS256, secret: hunter2-hunter2-hunter2-hunter2-hunter2 }
limits:
  - { name: a, rate: 1/s, key: "jwt:sub" }
)");
  ASSERT_NE(policy, nullptr);
  EXPECT_EQ(policy->redacted_yaml.find("hunter2"), std::string::npos);
  EXPECT_NE(policy->redacted_yaml.find("<redacted>"), std::string::npos);
}

// Settings that were accepted and then misbehaved (found by a black-box run) are refused at
// their line: an HMAC key read from a public key file (anyone could sign), two key sources, a
// rate-limit header renamed to a framing header, a second YAML document (dropped unread), a
// port past 65535, a timeout no request can meet, an empty method list (it matched every
// method), a tier's burst or daily quota of 0 (it meant the default, and no quota).
// The limits are required, except beside envoy_rls: a lyft drop-in keeps its limits in the
// lyft files, and the HTTP doors then limit nothing.
TEST(PolicyLoader, OnlyAnEnvoyDeploymentMayListNoLimits) {
  EXPECT_TRUE(hasError(errorsOf("server: { threads: 1 }\n"), 1, "must list at least one limit"));
  EXPECT_TRUE(hasError(errorsOf("limits: []\n"), 1, "must list at least one limit"));
  EXPECT_TRUE(hasError(errorsOf("limits: { name: a, rate: 1/s }\n"), 1,
                       "limits: must be a list of limits"));
  const std::string envoy = "envoy_rls: { config_dir: /etc/ratelimit }\n";
  for (const std::string& yaml : {envoy, envoy + "limits: []\n", envoy + "limits:\n"}) {
    const PolicyPtr policy = policyFrom(yaml);
    ASSERT_NE(policy, nullptr) << yaml;
    EXPECT_TRUE(policy->limits.empty());
  }
  EXPECT_TRUE(hasError(errorsOf(envoy + "limits: { name: a }\n"), 2, "must be a list"));
}

// A key written twice in one mapping is an error at the second: readers would take the first
// and silently drop the other. Anywhere in the file, the front doors' sections too; a mapping
// repeated by an alias is one mapping, not a duplicate.
TEST(PolicyLoader, DuplicateKeysAreErrors) {
  const std::vector<std::string> in_limit =
      errorsOf("limits:\n  - name: a\n    rate: 1000/min\n    rate: 5/min\n");
  EXPECT_TRUE(hasError(in_limit, 4, "key \"rate\" appears twice in one mapping (first at line 3)"))
      << describeErrors(in_limit);
  const std::vector<std::string> tiers = errorsOf(
      "tiers:\n  gold: { rate: 10/s }\n  gold: { rate: 1000/s }\nlimits: [{ name: a, rate: 1/s "
      "}]\n");
  EXPECT_TRUE(hasError(tiers, 3, "key \"gold\" appears twice")) << describeErrors(tiers);
  const std::vector<std::string> gateway = errorsOf(
      "limits: [{ name: a, rate: 1/s }]\ngateway:\n  listen: 127.0.0.1:1\n"
      "  listen: 127.0.0.1:2\n");
  EXPECT_TRUE(hasError(gateway, 4, "key \"listen\" appears twice")) << describeErrors(gateway);
  const PolicyPtr aliased = policyFrom(
      "tiers:\n  anonymous: &same { rate: 10/s, burst: 20 }\n  gold: *same\n  silver: *same\n"
      "limits: [{ name: a, from_tier: true }]\n");
  ASSERT_NE(aliased, nullptr);
  EXPECT_EQ(aliased->tiers.at("silver").burst, 20u);
}

// Booleans as YAML 1.1 spells them, in any case.
TEST(PolicyLoader, BooleansInAnyCase) {
  for (const char* yes : {"true", "True", "TRUE", "yes", "Yes", "on", "ON"}) {
    const PolicyPtr policy = policyFrom(std::string("tiers:\n  anonymous: { unlimited: ") + yes +
                                        " }\nlimits: [{ name: a, from_tier: true }]\n");
    ASSERT_NE(policy, nullptr) << yes;
    EXPECT_TRUE(policy->tiers.at("anonymous").unlimited) << yes;
  }
  EXPECT_TRUE(hasError(errorsOf("tiers:\n  anonymous: { unlimited: maybe }\n"
                                "limits: [{ name: a, from_tier: true }]\n"),
                       2, "must be true or false, not \"maybe\""));
}

}  // namespace
}  // namespace sluice::policy
