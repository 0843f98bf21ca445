// Envoy's ShouldRateLimit without the network: a RateLimitRequest becomes engine checks, and the
// engine's decisions become a RateLimitResponse. Plain functions and a small async joiner, so
// every rule of the protocol is unit-tested without gRPC.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <grpcpp/support/status.h>

#include "engine/engine.h"
#include "envoy/service/ratelimit/v3/rls.pb.h"
#include "http/rate_limit_headers.h"
#include "rls/lyft_config.h"
#include "sluice/decision.h"
#include "sluice/time.h"

namespace sluice::rls {

using RateLimitRequest = envoy::service::ratelimit::v3::RateLimitRequest;
using RateLimitResponse = envoy::service::ratelimit::v3::RateLimitResponse;

struct DeciderOptions {
  // Fill response_headers_to_add from the enforced descriptors that have a limit: the
  // X-RateLimit set for the one closest to its limit, and Retry-After when over the limit.
  bool response_headers = false;
  http::HeaderOptions headers{.x_ratelimit = true, .ietf = false, .retry_after = true, .names = {}};
  // Every OVER_LIMIT answer becomes OK, descriptors are still counted (lyft's SHADOW_MODE).
  bool shadow_mode = false;
  // A domain without a config file fails the RPC with NOT_FOUND. When false, it is answered OK
  // without limits, as lyft does (Envoy cannot tell a typo from an unlimited domain then).
  bool unknown_domain_is_error = true;
  // Bounds on one request; more is INVALID_ARGUMENT. Envoy sends a handful of each.
  std::size_t max_descriptors = 64;
  std::size_t max_entries = 32;
};

// An RPC that fails instead of answering: bad input, unknown domain, store unavailable.
struct RpcError {
  grpc::StatusCode code = grpc::StatusCode::UNKNOWN;
  std::string message;
};

// What one request descriptor turned into.
struct PlannedDescriptor {
  enum class Kind : std::uint8_t {
    kNoRule,      // nothing matched, the match has no rate_limit, or a matched rule was replaced
    kUnlimited,   // rate_limit.unlimited
    kLimited,     // counted by the engine
    kAlwaysOver,  // requests_per_unit 0: any hit is over the limit
  };
  Kind kind = Kind::kNoRule;
  bool shadow = false;
  std::uint32_t requests_per_unit = 0;
  Unit unit = Unit::kUnknown;
  std::string name;                      // the rule's name, for current_limit.name
  const DescriptorNode* node = nullptr;  // the matched config node; null for an override
  std::optional<LimitSpec> override_spec;
  std::string counter_key;
  std::string detailed_key;  // detailed_metric rules: "domain.key_value..." with request values
  std::uint64_t hits = 1;
  std::size_t group = 0;  // which engine call counts it (see RlsPlan::groups)
  std::size_t index = 0;  // its place in that call
};

class RlsPlan {
 public:
  // Validates `request` and matches each descriptor against `config`. Thread-safe. `now_us` is
  // when the request arrived (for the reset of a limit that never admits).
  [[nodiscard]] static std::variant<std::unique_ptr<RlsPlan>, RpcError> make(
      LyftConfigPtr config, const RateLimitRequest& request, const DeciderOptions& options,
      Micros now_us);

  // The engine calls to make, each one all-or-nothing: [0] holds every enforced descriptor (a
  // request over one limit consumes from none), then one call per shadow descriptor, so a shadow
  // rule is counted on its own and never decides for the others. Empty calls are possible.
  [[nodiscard]] const std::vector<std::vector<LimitCheck>>& groups() const noexcept {
    return groups_;
  }
  [[nodiscard]] std::span<const PlannedDescriptor> descriptors() const noexcept {
    return descriptors_;
  }

  // Fills `response` from one decision per group. An error when the store could not decide an
  // enforced descriptor (Envoy's failure_mode_deny then decides).
  [[nodiscard]] std::optional<RpcError> render(std::span<const Decision> decisions,
                                               const DeciderOptions& options,
                                               RateLimitResponse& response) const;

 private:
  RlsPlan() = default;
  void buildGroups();
  void addHeaders(std::span<const Decision> decisions, const DeciderOptions& options,
                  bool over_limit, RateLimitResponse& response) const;

  LyftConfigPtr config_;  // keeps the matched nodes and their specs alive
  Micros now_us_ = 0;
  std::vector<PlannedDescriptor> descriptors_;
  std::vector<std::vector<LimitCheck>> groups_;
};

class RlsDecider {
 public:
  // Both must outlive the decider.
  RlsDecider(Engine& engine, const Clock& clock, DeciderOptions options)
      : engine_(engine), clock_(clock), options_(std::move(options)) {}

  using Done = std::function<void(std::optional<RpcError>)>;

  // Thread-safe, never throws but std::bad_alloc. Decides `request` against `config` and writes
  // the answer into `response`, which must stay valid until `done` runs. `done` runs exactly
  // once, with nullopt on success: possibly before this returns, possibly on a store's thread.
  void decideAsync(LyftConfigPtr config, const RateLimitRequest& request,
                   RateLimitResponse& response, Done done);

  // Blocking form of decideAsync for tests and tools; waits only when the store is remote.
  [[nodiscard]] std::optional<RpcError> decide(LyftConfigPtr config,
                                               const RateLimitRequest& request,
                                               RateLimitResponse& response);

  [[nodiscard]] const DeciderOptions& options() const noexcept { return options_; }

 private:
  Engine& engine_;
  const Clock& clock_;
  DeciderOptions options_;
};

}  // namespace sluice::rls
