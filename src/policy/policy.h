// A compiled, immutable policy: what `sluice serve` enforces. Built from YAML by loadPolicy()
// (policy_loader.h); swapped atomically on reload, so a request sees one whole policy.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/client_ip.h"
#include "policy/jwt_verifier.h"
#include "policy/key_selector.h"
#include "policy/route_match.h"
#include "sluice/decision.h"
#include "sluice/limit_spec.h"
#include "sluice/time.h"

namespace sluice::policy {

// The bounds of a max_header_bytes setting (the server's and the gateway's). Above 64 KiB one
// field could reach 65,534 bytes, which Beast's field table (16-bit lengths) refuses by throwing
// out of the parser: the process ended on one request. Below 1 KiB ordinary requests get 431.
inline constexpr std::size_t kMinHeaderBytes = 1024;
inline constexpr std::size_t kMaxHeaderBytes = 64 * 1024;

enum class Action {
  kReject,    // deny with the limit's status
  kThrottle,  // wait until the limit allows, up to max_delay, then proceed; longer → reject
  kShadow,    // never block; report what would have happened
};

enum class WhenMissing {
  kUseIp,  // a key part is missing (no header, no claim): key the request by client address
  kSkip,   // the limit does not apply to this request
};

// The tier of a client with no known key or tier claim; a request to the decision API names it
// unless it names another.
inline constexpr std::string_view kAnonymousTier = "anonymous";

struct Tier {
  std::string name;
  bool unlimited = false;
  Rate rate{};                    // sustained rate
  std::uint64_t burst = 0;        // 0: same as rate.count
  std::uint64_t daily_quota = 0;  // 0: none
};

struct Limit {
  std::string name;
  RouteMatch match;
  KeySelector key;
  std::optional<std::uint64_t> cost;  // fixed cost; otherwise the request's
  Action action = Action::kReject;
  Micros max_delay_us = 0;  // throttle only
  int deny_status = 429;
  WhenMissing when_missing = WhenMissing::kUseIp;
  // When a shared store cannot answer; store.on_error unless the limit says otherwise.
  OnStoreError on_error = OnStoreError::kAllow;
  Algorithm algorithm = Algorithm::kTokenBucket;
  // A fixed spec, or one per tier (and a daily quota per tier) when the limit takes its numbers
  // from the caller's tier.
  std::optional<LimitSpec> spec;
  bool from_tier = false;
  std::map<std::string, LimitSpec, std::less<>> tier_specs;
  std::map<std::string, LimitSpec, std::less<>> tier_daily_specs;
  // One of the gateway's dynamic limits, named by a key its webhook gave (often one per user or
  // address): metrics count these together, as a series per key would grow without bound.
  bool from_webhook = false;
};

struct ServerSettings {
  std::string listen = "127.0.0.1:8080";
  std::string admin = "127.0.0.1:9090";
  // Names (lower case, no port) an admin request from this machine's loopback may give in Host
  // besides an address, localhost and the machine's own name: a local reverse proxy that passes
  // the client's Host on (server/admin_host.h). Reloadable.
  std::vector<std::string> admin_hosts;
  unsigned threads = 0;  // 0: one per core
  std::size_t max_connections = 10'000;
  // A request, or the wait for the next one on a kept-alive connection, must arrive within this.
  Micros request_timeout_us = 10 * kMicrosPerSecond;
  std::size_t max_body_bytes = 1 << 20;
  // A request's header block, at most. nginx's auth_request passes a client's whole header on,
  // and nginx itself takes up to 4 x 8 KiB by default: a bigger bound here would be needed to
  // take all it passes.
  std::size_t max_header_bytes = 16 * 1024;
  // What the auth subrequest endpoint answers on a denial; 0 answers the limit's own deny
  // status. nginx's auth_request needs 403 (it turns any other status into 500).
  int auth_deny_status = 0;
  // Where the auth subrequest carries the original request (nginx: whatever proxy_set_header
  // names; Traefik forwardAuth: X-Forwarded-Uri and X-Forwarded-Method).
  std::string auth_uri_header = "X-Original-URI";
  std::string auth_method_header = "X-Original-Method";
};

// The rate-limit headers `headers.names` may rename: each family's key there, and its default.
struct HeaderFamily {
  std::string_view key;
  std::string_view default_name;
};
inline constexpr HeaderFamily kHeaderFamilies[] = {
    {"limit", "X-RateLimit-Limit"}, {"remaining", "X-RateLimit-Remaining"},
    {"reset", "X-RateLimit-Reset"}, {"retry_after", "Retry-After"},
    {"ratelimit", "RateLimit"},     {"ratelimit_policy", "RateLimit-Policy"}};

struct HeaderSettings {
  bool x_ratelimit = true;
  bool ietf = true;
  bool retry_after = true;
  std::map<std::string, std::string, std::less<>> names;  // family → header name overrides
};

// Where limit state lives (store_loader.cc reads it; the binary builds the store from it).
struct StoreSettings {
  enum class Type { kMemory, kRedis, kRedisCluster, kSynced };
  Type type = Type::kMemory;
  std::size_t max_keys = 1'000'000;  // in-memory keys: the memory store, and local fallbacks
  // redis and synced: one server; redis_cluster: seed nodes (the rest are discovered).
  std::vector<std::string> addresses = {"127.0.0.1:6379"};
  std::size_t connections = 2;  // per Redis server; a redis store opens them per I/O thread
  // redis: decide calls out at once per I/O thread; requests arriving meanwhile are batched into
  // the next call. More helps only when Redis is far away (a round trip of a millisecond or more).
  std::size_t calls_in_flight = 1;
  Micros timeout_us = 20'000;  // per Redis call; past it the limit's on_error decides
  OnStoreError on_error = OnStoreError::kAllow;  // the default for limits that don't say
  std::size_t sluice_nodes = 1;  // Sluice nodes sharing the limits; on_error: local divides by it
  Micros sync_interval_us = 100'000;  // synced: how often deltas are pushed and totals pulled
  std::string key_prefix = "sluice:";
  // Redis AUTH (store.password or password_env, and store.username for an ACL user); no password:
  // no AUTH.
  std::string username;
  std::string password;
  int database = 0;  // redis and synced: SELECTed on every connection
  // The circuit breaker: this many failures in a row stop calls to Redis for `cooldown`.
  std::size_t breaker_failures = 5;
  Micros breaker_cooldown_us = 1'000'000;

  [[nodiscard]] bool shared() const noexcept { return type != Type::kMemory; }
};

struct Policy {
  std::string source;  // the file it came from
  ServerSettings server;
  StoreSettings store;
  HeaderSettings headers;
  std::string api_key_header = "Authorization";  // "Authorization" reads "Bearer <key>"
  ClientIpResolver client_ip{{}};
  // Per-address limits count an IPv6 client by its /ipv6_prefix network (addressNetwork).
  unsigned ipv6_prefix = 64;
  // Which forwarding header the trusted proxies maintain; the other is ignored, because a proxy
  // passes a client's own copy of a header it does not set straight through.
  enum class ForwardedHeader { kXForwardedFor, kForwarded };
  ForwardedHeader forwarded_header = ForwardedHeader::kXForwardedFor;
  std::optional<JwtVerifier> jwt;
  std::string jwt_header = "Authorization";
  std::string tier_claim;  // a JWT claim naming the caller's tier; empty for none
  std::map<std::string, Tier, std::less<>> tiers;
  std::map<std::string, std::string, std::less<>> api_key_tiers;  // hashed key → tier
  // identity.keys_file was given: the keys in it are all there are, and any other is no key.
  bool api_keys_listed = false;
  std::vector<Limit> limits;
  // The configuration as loaded, secrets replaced, for GET /admin/config.
  std::string redacted_yaml;
};

using PolicyPtr = std::shared_ptr<const Policy>;

}  // namespace sluice::policy
