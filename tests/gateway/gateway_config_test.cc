// The gateway: section of the configuration: what it accepts and how it reports mistakes.
#include "gateway/gateway_config.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gateway/ddos_guard.h"

namespace sluice::gateway {
namespace {

Result<std::optional<GatewaySettings>> load(const std::string& yaml) {
  return loadGatewaySettingsText(yaml, "test.yaml");
}

// A full section loads with every field in place.
TEST(GatewayConfigTest, LoadsAFullSection) {
  const auto loaded = load(R"(
limits: []
gateway:
  listen: 127.0.0.1:8000
  max_connections: 500
  connect_timeout: 1s
  response_timeout: 5s
  websocket_idle_timeout: 2m
  upstreams:
    app: 127.0.0.1:9000
    admin: { address: "[::1]:9001", max_idle: 4, idle_timeout: 5s }
  routes:
    - { path_prefix: /admin, method: [get, POST], upstream: admin, mode: monitor }
    - { path_prefix: /, upstream: app }
  guard: { global_rps: 5000, max_connections_per_ip: 50, patterns: [default, "DROP DATABASE"] }
  concurrency:
    - { name: uploads, match: { path_prefix: /upload }, key: client, max_in_flight: 3 }
  webhook: { url: "http://127.0.0.1:7000/limits", timeout: 50ms, cache_ttl: 30s }
)");
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  ASSERT_TRUE(loaded.value().has_value());
  const GatewaySettings& settings = *loaded.value();
  EXPECT_EQ(settings.max_connections, 500u);
  EXPECT_EQ(settings.connect_timeout_us, kMicrosPerSecond);
  EXPECT_EQ(settings.websocket_idle_timeout_us, 120 * kMicrosPerSecond);
  ASSERT_EQ(settings.upstreams.size(), 2u);
  EXPECT_EQ(settings.upstreams[1].endpoint.port(), 9001);
  EXPECT_EQ(settings.upstreams[1].host, "[::1]:9001");  // the Host sent when a request has none
  EXPECT_EQ(settings.upstreams[0].host, "127.0.0.1:9000");
  EXPECT_EQ(settings.upstreams[1].max_idle_per_thread, 4u);
  EXPECT_EQ(settings.upstreams[1].idle_timeout_us, 5 * kMicrosPerSecond);
  EXPECT_EQ(settings.upstreams[0].idle_timeout_us, 60 * kMicrosPerSecond);  // nginx's default
  ASSERT_EQ(settings.routes.size(), 2u);
  EXPECT_EQ(settings.routes[0].upstream, 1u);
  EXPECT_EQ(settings.routes[0].mode, RouteMode::kMonitor);
  EXPECT_TRUE(settings.routes[0].match.matches("GET", "/admin/x"));
  EXPECT_FALSE(settings.routes[0].match.matches("PUT", "/admin/x"));
  EXPECT_EQ(settings.guard.global_rps, 5000u);
  EXPECT_EQ(settings.guard.patterns.back(), "drop database");
  EXPECT_EQ(settings.guard.patterns.size(), GuardSettings::defaultPatterns().size() + 1);
  ASSERT_EQ(settings.concurrency.size(), 1u);
  EXPECT_EQ(settings.concurrency[0].max_in_flight, 3u);
  ASSERT_TRUE(settings.webhook.has_value());
  EXPECT_EQ(settings.webhook->path, "/limits");
  EXPECT_EQ(settings.webhook->server.endpoint.port(), 7000);
  EXPECT_EQ(settings.webhook->timeout_us, 50 * kMicrosPerMilli);
}

// A link-local upstream keeps its zone for routing, but the Host sent for a request without one
// names the address alone: an IP literal in a Host field has no room for a zone.
TEST(GatewayConfigTest, AZonedUpstreamsHostHasNoZone) {
  const auto loaded =
      load("gateway:\n  upstreams: { a: \"[fe80::1%lo]:9000\" }\n  routes: [ { upstream: a } ]\n");
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  const Upstream& upstream = loaded.value()->upstreams.at(0);
  EXPECT_NE(upstream.endpoint.address().to_v6().scope_id(), 0u);
  EXPECT_EQ(upstream.host, "[fe80::1]:9000");
}

// No gateway: section is not an error: the gateway is simply off.
TEST(GatewayConfigTest, AbsentSectionIsNullopt) {
  const auto loaded = load("limits: []\n");
  ASSERT_TRUE(loaded.ok());
  EXPECT_FALSE(loaded.value().has_value());
}

// The default guard patterns are on unless turned off with an empty list.
TEST(GatewayConfigTest, DefaultPatternsAndTurningThemOff) {
  const std::string base =
      "gateway:\n  upstreams: { a: 127.0.0.1:1 }\n  routes: [ { upstream: a } ]\n";
  EXPECT_EQ(load(base).value()->guard.patterns, GuardSettings::defaultPatterns());
  EXPECT_TRUE(load(base + "  guard: { patterns: [] }\n").value()->guard.patterns.empty());
  // `default` in any case: "Default" read as a literal pattern turned the built-in list off.
  EXPECT_EQ(load(base + "  guard: { patterns: [Default] }\n").value()->guard.patterns,
            GuardSettings::defaultPatterns());
}

// Custom patterns are folded as targets are, so one written encoded, in capitals or with a
// comment or two blanks matches what it says; one that folds to nothing is an error.
TEST(GatewayConfigTest, CustomPatternsAreFoldedAsTargetsAre) {
  const std::string base =
      "gateway:\n  upstreams: { a: 127.0.0.1:1 }\n  routes: [ { upstream: a } ]\n";
  const auto loaded =
      load(base + "  guard: { patterns: ['%3CScript', 'UNION  SELECT', 'union/**/all select'] }\n");
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_EQ(loaded.value()->guard.patterns,
            (std::vector<std::string>{"<script", "union select", "union all select"}));
  FakeClock clock;
  DdosGuard guard(loaded.value()->guard, clock);
  EXPECT_EQ(guard.suspiciousPattern("/a?q=%3cSCRIPT%3e"), "<script");
  EXPECT_EQ(guard.suspiciousPattern("/a?q=1+union+all+select+2"), "union all select");
  for (const char* blank : {"''", "'  '", "'/**/'"}) {
    const auto refused = load(base + "  guard: { patterns: [" + blank + "] }\n");
    ASSERT_FALSE(refused.ok()) << blank;
    EXPECT_NE(refused.error().find("empty or blank pattern"), std::string::npos) << refused.error();
  }
  // Targets are matched without their control characters: "%00.jpg" would read ".jpg".
  for (const char* control : {"'%00.jpg'", "'..%2500'", "\"a\\x01b\"", "'%c0%80.jpg'"}) {
    const auto refused = load(base + "  guard: { patterns: [" + control + "] }\n");
    ASSERT_FALSE(refused.ok()) << control;
    EXPECT_NE(refused.error().find("holding a control character or an overlong"), std::string::npos)
        << refused.error();
  }
  // At the pattern's own line in a block list.
  const auto listed = load(base + "  guard:\n    patterns:\n      - default\n      - '%00.jpg'\n");
  ASSERT_FALSE(listed.ok());
  EXPECT_NE(listed.error().find("test.yaml:7:9: gateway.guard.patterns has a pattern holding"),
            std::string::npos)
      << listed.error();
}

// The listener's address is checked as serve will bind it: `validate` passed "localhost:8000"
// and "127.0.0.1:http", and serve then failed to start.
TEST(GatewayConfigTest, ListenIsAnIpAndPort) {
  for (const char* bad :
       {"localhost:8000", "127.0.0.1:http", "127.0.0.1:70000", ":8000", "::1:8000"}) {
    const auto loaded = load(std::string("gateway: { listen: \"") + bad + "\" }\n");
    ASSERT_FALSE(loaded.ok()) << bad;
    EXPECT_NE(loaded.error().find("gateway.listen must be an IP address and port"),
              std::string::npos)
        << loaded.error();
  }
  const auto good = load("gateway: { listen: \"[::1]:0\" }\n");
  ASSERT_FALSE(good.ok());  // no upstreams or routes, but the address is fine
  EXPECT_EQ(good.error().find("gateway.listen"), std::string::npos) << good.error();
}

// A section without upstreams or routes is reported at the `gateway` key, as other mistakes at
// their place (the block mapping's own place is that of its first entry).
TEST(GatewayConfigTest, MissingUpstreamsAndRoutesAreReportedAtTheSection) {
  const auto loaded = load("limits: []\ngateway:\n  # the door\n\n  listen: 127.0.0.1:0\n");
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().find("test.yaml:2:1: gateway.upstreams must map at least one name"),
            std::string::npos)
      << loaded.error();
  EXPECT_NE(loaded.error().find("test.yaml:2:1: gateway.routes must list at least one route"),
            std::string::npos)
      << loaded.error();
}

// Every mistake is reported with file:line:column, all in one run.
TEST(GatewayConfigTest, ReportsEveryErrorWithItsPlace) {
  const auto loaded = load(R"(gateway:
  upstreams:
    app: localhost:9000
  routes:
    - { path_prefix: api, upstream: nope, mode: loud }
  guard: { global_rps: lots }
  webhook: { url: "https://example.com/x" }
  colour: blue
)");
  ASSERT_FALSE(loaded.ok());
  const std::string& errors = loaded.error();
  EXPECT_NE(errors.find("test.yaml:3:10: gateway.upstreams.app must be an IP address and port"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("test.yaml:5:22: gateway.routes[0].path_prefix must start with /"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("upstream \"nope\" is not one of gateway.upstreams"), std::string::npos);
  EXPECT_NE(errors.find("mode must be enforce or monitor"), std::string::npos);
  EXPECT_NE(errors.find("global_rps must be a whole number"), std::string::npos);
  EXPECT_NE(errors.find("gateway.webhook.url must be http://"), std::string::npos);
  EXPECT_NE(errors.find("test.yaml:8:3: unknown key \"colour\""), std::string::npos) << errors;
}

// An upstream written as a mapping without its address is an error at its line, and the file's
// other errors are still reported: the missing key made yaml-cpp throw "invalid node", with no
// line, in place of all of them.
TEST(GatewayConfigTest, AnUpstreamWithoutItsAddressIsReportedWithTheOtherErrors) {
  const auto loaded = load(R"(gateway:
  upstreams:
    app: { max_idle: 3 }
  routes: [ { path_prefix: /, upstream: app } ]
  guard: { global_rps: -5 }
)");
  ASSERT_FALSE(loaded.ok());
  const std::string& errors = loaded.error();
  EXPECT_NE(errors.find("test.yaml:3:10: gateway.upstreams.app needs an address"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("global_rps must be a whole number"), std::string::npos) << errors;
  EXPECT_EQ(errors.find("invalid node"), std::string::npos) << errors;
}

// An upstream at the gateway's own listener would loop each request back to the gateway. Only
// what surely reaches this host is refused: another address may be a backend's on its own host.
TEST(GatewayConfigTest, AnUpstreamAtTheGatewaysOwnListenerIsRefused) {
  const auto refusal = [](const std::string& listen, const std::string& upstream) {
    const auto loaded =
        load("gateway:\n  listen: \"" + listen + "\"\n  upstreams:\n    app: { address: \"" +
             upstream + "\" }\n  routes: [ { path_prefix: /, upstream: app } ]\n");
    return loaded.ok() ? std::string() : loaded.error();
  };
  for (const auto& [listen, upstream] : std::vector<std::pair<std::string, std::string>>{
           {"127.0.0.1:8000", "127.0.0.1:8000"},
           {"0.0.0.0:8000", "127.0.0.1:8000"},
           {"[::]:8000", "[::1]:8000"},
           {"127.0.0.1:8000", "0.0.0.0:8000"},
           {"127.0.0.1:8000", "[::ffff:127.0.0.1]:8000"},
           {"[::]:8000", "127.0.0.1:8000"},
           {"[::1]:8000", "[::]:8000"}}) {
    EXPECT_NE(refusal(listen, upstream)
                  .find("test.yaml:4:21: gateway.upstreams.app is the gateway's own listener"),
              std::string::npos)
        << listen << " -> " << upstream << ": " << refusal(listen, upstream);
  }
  for (const auto& [listen, upstream] :
       std::vector<std::pair<std::string, std::string>>{{"127.0.0.1:8000", "127.0.0.1:8001"},
                                                        {"0.0.0.0:8000", "10.0.0.5:8000"},
                                                        {"127.0.0.1:0", "127.0.0.1:8000"},
                                                        {"127.0.0.2:8000", "127.0.0.1:8000"},
                                                        {"0.0.0.0:8000", "[::1]:8000"},
                                                        {"127.0.0.1:8000", "[::]:8000"},
                                                        {"[::1]:8000", "0.0.0.0:8000"}}) {
    EXPECT_EQ(refusal(listen, upstream), "") << listen << " -> " << upstream;
  }
}

// A header limit that would refuse ordinary requests, or that the parser cannot hold, is an
// error at its line (0 answered every request 431; 2^32 wrapped to 0; above 64 KiB one field
// could outgrow Beast's field table, which throws: the process ended).
TEST(GatewayConfigTest, HeaderLimitIsBounded) {
  const std::string base =
      "gateway:\n  upstreams: { a: 127.0.0.1:1 }\n  routes: [ { upstream: a } ]\n";
  for (const char* bytes : {"0", "1023", "65537", "1048576", "4294967296"}) {
    const auto loaded = load(base + "  max_header_bytes: " + bytes + "\n");
    ASSERT_FALSE(loaded.ok()) << bytes;
    EXPECT_NE(loaded.error().find("test.yaml:4:21: gateway.max_header_bytes must be 1024 to 65536"),
              std::string::npos)
        << loaded.error();
  }
  EXPECT_EQ(load(base + "  max_header_bytes: 1024\n").value()->max_header_bytes, 1024u);
  EXPECT_EQ(load(base + "  max_header_bytes: 65536\n").value()->max_header_bytes, 65536u);
}

// A WebSocket idle timeout of nothing would close every tunnel at once: an error at its line.
TEST(GatewayConfigTest, WebSocketIdleTimeoutIsPositive) {
  const std::string base =
      "gateway:\n  upstreams: { a: 127.0.0.1:1 }\n  routes: [ { upstream: a } ]\n";
  const auto loaded = load(base + "  websocket_idle_timeout: 0s\n");
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().find("test.yaml:4:27: gateway.websocket_idle_timeout"),
            std::string::npos)
      << loaded.error();
  EXPECT_EQ(load(base).value()->websocket_idle_timeout_us, 300 * kMicrosPerSecond);
}

// The webhook's path is written into its request-line as it is: anything that would end that
// line early is an error at its place.
TEST(GatewayConfigTest, WebhookPathMustBeOneRequestTarget) {
  const std::string base =
      "gateway:\n  upstreams: { a: 127.0.0.1:1 }\n  routes: [ { upstream: a } ]\n";
  for (const std::string path : {"/x y", "/x\\r\\nHost: evil", "/x\\ty", "/x#top"}) {
    const auto loaded = load(base + "  webhook: { url: \"http://127.0.0.1:7000" + path + "\" }\n");
    ASSERT_FALSE(loaded.ok()) << path;
    EXPECT_NE(loaded.error().find("test.yaml:4:19: gateway.webhook.url's path must not hold"),
              std::string::npos)
        << loaded.error();
  }
  EXPECT_TRUE(load(base + "  webhook: { url: \"http://127.0.0.1:7000/limits?v=1%20x\" }\n").ok());
}

// A concurrency key that reads a JWT claim needs identity.jwt, as a rate limit's does: without
// it no request has claims.
TEST(GatewayConfigTest, ConcurrencyKeyReadingAClaimNeedsJwt) {
  const std::string gateway =
      "gateway:\n  upstreams: { a: 127.0.0.1:1 }\n  routes: [ { upstream: a } ]\n"
      "  concurrency: [ { name: c, key: 'jwt:sub', max_in_flight: 1 } ]\n";
  const auto refused = load(gateway);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("test.yaml:4:34: gateway.concurrency[0].key reads a JWT claim"),
            std::string::npos)
      << refused.error();
  EXPECT_TRUE(load("identity:\n  jwt: { keys: [] }\n" + gateway).ok());
}

// Names go into headers and logs, and routes name upstreams: an empty one, one with a control
// character, or a key that is no text is an error at its place.
TEST(GatewayConfigTest, NamesAreNonEmptyText) {
  const std::string routes = "  routes: [ { upstream: a } ]\n";
  const auto keyed =
      load("gateway:\n  upstreams: { a: 127.0.0.1:1, ? { x: 1 } : 127.0.0.1:2 }\n" + routes);
  ASSERT_FALSE(keyed.ok());
  EXPECT_NE(keyed.error().find("an upstream name must be text"), std::string::npos)
      << keyed.error();
  const auto empty = load("gateway:\n  upstreams: { a: 127.0.0.1:1, '': 127.0.0.1:2 }\n" + routes);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().find("an upstream name must be text"), std::string::npos)
      << empty.error();
  for (const std::string name : {"''", "\"a\\nb\""}) {
    const auto loaded = load("gateway:\n  upstreams: { a: 127.0.0.1:1 }\n" + routes +
                             "  concurrency: [ { name: " + name + ", max_in_flight: 1 } ]\n");
    ASSERT_FALSE(loaded.ok()) << name;
    EXPECT_NE(loaded.error().find("test.yaml:4:"), std::string::npos) << loaded.error();
    EXPECT_NE(loaded.error().find("gateway.concurrency[0].name must be non-empty"),
              std::string::npos)
        << loaded.error();
  }
}

// An upstream's idle timeout of nothing would close each connection as it is parked: an error at
// its line.
TEST(GatewayConfigTest, UpstreamIdleTimeoutIsPositive) {
  const auto loaded = load(
      "gateway:\n  upstreams: { a: { address: 127.0.0.1:1, idle_timeout: 0ms } }\n"
      "  routes: [ { upstream: a } ]\n");
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().find("test.yaml:2:57: gateway.upstreams.a.idle_timeout must be longer"),
            std::string::npos)
      << loaded.error();
}

// Routes read their patterns as limits do: `*` is any method, a glob ending in / matches the
// normalized paths it names, and a method must be a token.
TEST(GatewayConfigTest, RoutesMatchAsLimitsDo) {
  const auto loaded = load(R"(gateway:
  upstreams: { a: 127.0.0.1:1 }
  routes:
    - { method: "*", path_glob: "/users/*/", upstream: a }
    - { path_prefix: /, upstream: a }
)");
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  const Route& users = loaded.value()->routes[0];
  EXPECT_TRUE(users.match.matches("DELETE", "/users/42"));
  EXPECT_FALSE(users.match.matches("GET", "/users/42/posts"));
  const auto bad = load(
      "gateway:\n  upstreams: { a: 127.0.0.1:1 }\n  routes: [ { method: \"GE T\", upstream: a } "
      "]\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("\"GE T\" is not a method"), std::string::npos) << bad.error();
}

// Routes and upstreams are required.
TEST(GatewayConfigTest, NeedsUpstreamsAndRoutes) {
  const auto loaded = load("gateway: { listen: 127.0.0.1:8000 }\n");
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().find("gateway.upstreams must map"), std::string::npos);
  EXPECT_NE(loaded.error().find("gateway.routes must list"), std::string::npos);
}

// A concurrency limit needs max_in_flight ≥ 1 and a valid key.
TEST(GatewayConfigTest, ConcurrencyLimitErrors) {
  const auto loaded = load(R"(gateway:
  upstreams: { a: 127.0.0.1:1 }
  routes: [ { upstream: a } ]
  concurrency:
    - { key: "bogus:x", max_in_flight: 0 }
    - { key: ip }
    - { name: c, max_in_flight: 5 }
    - { name: c, max_in_flight: 1 }
)");
  ASSERT_FALSE(loaded.ok());
  // One name, one counter: the two would count each other's requests.
  EXPECT_NE(loaded.error().find("gateway.concurrency[3].name \"c\" is already used"),
            std::string::npos)
      << loaded.error();
  EXPECT_NE(loaded.error().find("gateway.concurrency[0].key"), std::string::npos);
  EXPECT_NE(loaded.error().find("max_in_flight must be at least 1"), std::string::npos);
  EXPECT_NE(loaded.error().find("gateway.concurrency[1] needs max_in_flight"), std::string::npos);
  // A concurrency limit named as a rate limit: the answers' RateLimit fields would name two
  // policies alike.
  const auto same_name = load(R"(limits:
  - { name: pc, rate: 5/min }
gateway:
  upstreams: { a: 127.0.0.1:1 }
  routes: [ { upstream: a } ]
  concurrency:
    - { name: pc, max_in_flight: 1 }
)");
  ASSERT_FALSE(same_name.ok());
  EXPECT_NE(same_name.error().find("test.yaml:7:15: gateway.concurrency[0].name \"pc\" is a "
                                   "limit's name too"),
            std::string::npos)
      << same_name.error();
  // So is a tier limit's daily quota's, and a default name says it is one.
  const auto daily = load(R"(tiers:
  anonymous: { rate: 5/min, daily_quota: 100 }
limits:
  - { name: api, from_tier: true }
  - { name: concurrency-1, rate: 5/min }
gateway:
  upstreams: { a: 127.0.0.1:1 }
  routes: [ { upstream: a } ]
  concurrency:
    - { name: "api:daily", max_in_flight: 1 }
    - { max_in_flight: 1 }
)");
  ASSERT_FALSE(daily.ok());
  EXPECT_NE(daily.error().find("gateway.concurrency[0].name \"api:daily\" is a limit's name too"),
            std::string::npos)
      << daily.error();
  EXPECT_NE(daily.error().find("gateway.concurrency[1] has no name, and its default "
                               "\"concurrency-1\" is a limit's name too"),
            std::string::npos)
      << daily.error();
}

}  // namespace
}  // namespace sluice::gateway
