// Limits that come from the dynamic-limit webhook rather than the configuration: parsed from its
// JSON answer, and decided together with the policy's limits, all-or-nothing.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "policy/decide.h"
#include "policy/policy.h"
#include "sluice/result.h"

namespace sluice::gateway {

struct DynamicLimits {
  std::vector<policy::Limit> limits;  // spec set; action reject, or throttle up to max_throttle
  std::vector<std::string> keys;      // counter keys, parallel to limits
};
using DynamicLimitsPtr = std::shared_ptr<const DynamicLimits>;

// Bounds on one answer: a webhook cannot make the gateway check hundreds of limits a request.
inline constexpr std::size_t kMaxDynamicLimits = 16;
inline constexpr std::size_t kMaxDynamicKeyBytes = 256;

// Parses {"limits": [{"key": "user:42", "burst": 10, "window": "1s", "max_throttle": "2s"},
// {"key": "ip:1.2.3.4", "interval": "100ms"}]}. `interval`: one request per interval (a GCRA,
// burst `burst` or 1). Otherwise `burst` requests per `window` (default 1s). Durations are
// strings ("250ms") or numbers of milliseconds. `max_throttle` > 0 throttles up to it (at most
// 60s) instead of rejecting. An empty list means no extra limits. Error names what is wrong.
// Never throws.
[[nodiscard]] Result<DynamicLimitsPtr> parseDynamicLimits(std::string_view json);

// Thread-safe. policy::decideAsync over the policy's limits plus `dynamic` (null: none),
// checked in one all-or-nothing engine call; throttle, shadow and deny status as in
// policy::decide. `done` runs once, possibly before the call returns, possibly on a store's
// thread. The policy and the engine must outlive `done`. `held_on`: as for policy::decideAsync.
void decideWithDynamic(const policy::Policy& policy, const policy::RequestContext& context,
                       const DynamicLimitsPtr& dynamic, Engine& engine, Micros already_waited_us,
                       policy::DecisionHandler done, const policy::HeldOn& held_on = {});

}  // namespace sluice::gateway
