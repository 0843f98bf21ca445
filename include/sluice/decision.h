// The request side and the answer side of the engine: limits to check, and one decision.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include <boost/container/small_vector.hpp>

#include "sluice/limit_spec.h"
#include "sluice/outcome.h"
#include "sluice/time.h"

namespace sluice {

// What a limit does when its shared store (Redis) cannot answer in time.
enum class OnStoreError : std::uint8_t {
  kAllow,  // fail open: admit (the industry default: Envoy, lyft/ratelimit)
  kDeny,   // fail closed: deny with reason kStoreUnavailable
  kLocal,  // keep enforcing on this node alone, at the limit divided by the node count
};

// One limit to check for a request. The key names the counter: checks with the same key,
// algorithm and period share state (for token buckets, leaky buckets and GCRA, also the same
// count), so give distinct limits distinct keys (e.g. "login:" + ip).
struct LimitCheck {
  LimitCheck() = default;
  // Implicit, so `{key, &spec}` and `{key, &spec, cost}` read as before the optional fields.
  LimitCheck(std::string_view check_key, const LimitSpec* check_spec, std::uint64_t check_cost = 1,
             std::string_view check_group = {},
             OnStoreError check_on_error = OnStoreError::kAllow) noexcept
      : key(check_key),
        spec(check_spec),
        cost(check_cost),
        group(check_group),
        on_error(check_on_error) {}

  std::string_view key;
  const LimitSpec* spec = nullptr;  // never null; must outlive the call
  std::uint64_t cost = 1;           // 0 peeks without consuming
  // Checks with equal groups live together in a Redis Cluster (one hash slot), so they decide in
  // one atomic step; e.g. a client's limits all group on the client's identity. Empty: the key.
  std::string_view group;
  OnStoreError on_error = OnStoreError::kAllow;
};

// The engine's answer for a list of checks: allowed only if every limit allows, and then every
// limit is consumed; when any limit denies, none is.
struct Decision {
  static constexpr std::size_t kNoLimit = std::numeric_limits<std::size_t>::max();

  bool allowed = true;
  // True when the limits were decided without their shared store (Redis unreachable or too
  // slow): each limit's on_error policy (allow, deny, or a local per-node limit) decided instead.
  bool degraded = false;
  // Index into `statuses` of the limit that decided: when denied, the denying limit with the
  // longest retry_after; when allowed, the limit with the fewest units remaining (of those,
  // the one longest until full).
  // kNoLimit when no limit was checked.
  std::size_t binding = kNoLimit;
  Micros retry_after_us = 0;  // the binding limit's, 0 when allowed
  Micros delay_us = 0;        // the longest shaper delay among the limits, 0 if none
  // One entry per check, in request order. When the decision is a denial, the limits that
  // would have allowed show their state as it is (nothing was consumed).
  boost::container::small_vector<Outcome, 4> statuses;

  [[nodiscard]] const Outcome* bindingStatus() const noexcept {
    return binding == kNoLimit ? nullptr : &statuses[binding];
  }
};

}  // namespace sluice
