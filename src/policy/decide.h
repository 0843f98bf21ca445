// The policy's verdict on one request: which limits apply, their keys, and what the engine says,
// with actions applied (reject, throttle, shadow). Plain functions over plain types, so every
// front door shares them and tests need no server.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "policy/policy.h"
#include "policy/request_context.h"
#include "sluice/decision.h"

namespace sluice::policy {

// One limit's check for this request, with the key text it owns.
struct PlannedCheck {
  const Limit* limit = nullptr;
  const LimitSpec* spec = nullptr;
  std::string key;
  std::string label;  // the limit's name, or "<name>:daily" for a tier's daily quota
  std::uint64_t cost = 1;
  // The key's identity part, from group_offset for group_length bytes (to the end by default):
  // checks with the same identity (a client's limits, a tier's daily quota with them) group
  // together in a Redis Cluster. See LimitCheck::group.
  std::size_t group_offset = 0;
  std::size_t group_length = std::string::npos;
};

struct PolicyDecision {
  bool allowed = true;
  int status = 200;                           // 200, or the binding limit's deny status
  Decision enforced;                          // reject and throttle limits, all-or-nothing
  std::vector<PlannedCheck> enforced_checks;  // parallel to enforced.statuses
  // Shadow limits, decided apart and only for an admitted request; never blocks. Its statuses
  // parallel shadow_checks when decided, and are empty when not (a denied request).
  Decision shadow;
  std::vector<PlannedCheck> shadow_checks;
  // > 0: the binding limit throttles and allows after this wait, within its max_delay. The
  // caller waits and decides again (with `already_waited_us`).
  Micros throttle_wait_us = 0;
  // > 0: allowed, but a leaky-bucket shaper gave the request a slot this far in the future; the
  // caller holds it that long before letting it through.
  Micros hold_us = 0;
  // Not decided: requests are already held on this enforced check's throttle limit and key
  // (HeldOn), and this one joins them at the back of their line, to decide in its turn. The
  // index of that check in enforced_checks, or kNotQueued.
  static constexpr std::size_t kNotQueued = static_cast<std::size_t>(-1);
  std::size_t queue_behind = kNotQueued;

  [[nodiscard]] const PlannedCheck* binding() const noexcept {
    return enforced.binding == Decision::kNoLimit ? nullptr : &enforced_checks[enforced.binding];
  }
  // Names of the shadow limits that would have denied, joined with ", " as the shadow header
  // carries them; empty when none would.
  [[nodiscard]] std::string shadowDenials() const;
};

// A decision answered `elapsed_us` after it was made (held for a shaper's slot): its waits and
// resets count from when it was made, so each comes that much closer (none below 0), and the
// answer says how long from now. Remaining counts are left as decided.
void ageDecision(PolicyDecision& decision, Micros elapsed_us) noexcept;

// Whether a credential reads as a JWT (three parts joined by dots): in the header both tokens and
// API keys are read from, such a value is a token, never a key.
[[nodiscard]] bool looksLikeJwt(std::string_view credential) noexcept;

// Thread-safe. Client address, API key and tier, verified JWT claims. `now_s` is Unix seconds,
// for JWT expiry.
[[nodiscard]] RequestContext resolveIdentity(const Policy& policy, const RequestView& request,
                                             std::int64_t now_s);

// Thread-safe. The checks of every limit that applies to the request, in policy order.
[[nodiscard]] std::vector<PlannedCheck> planChecks(const Policy& policy,
                                                   const RequestContext& context);

// For `already_waited_us`: this request cannot wait (a batch item), so throttling denies.
inline constexpr Micros kCannotWait = kNever;

// Thread-safe, never throws but for allocation. Plans and decides. `already_waited_us` is how
// long a throttled request has waited so far (0 on the first pass), or kCannotWait.
[[nodiscard]] PolicyDecision decide(const Policy& policy, const RequestContext& context,
                                    Engine& engine, Micros already_waited_us = 0);

// Thread-safe. One named limit with a key the caller chose (the decision API's direct form);
// `tier` picks the numbers of a from_tier limit. Error when the limit or tier is unknown.
[[nodiscard]] Result<PolicyDecision> decideNamed(const Policy& policy, std::string_view limit_name,
                                                 std::string_view key, std::string_view tier,
                                                 std::uint64_t cost, Engine& engine,
                                                 Micros already_waited_us = 0);

// The non-blocking forms, for front doors on an event loop: `done` runs once with the decision,
// possibly before the call returns, possibly on a store's thread. Nothing passed in needs to
// outlive the call except the policy and the engine.
using DecisionHandler = std::function<void(PolicyDecision&&)>;
// Whether requests are held (waiting in line) on a throttle check's limit and key, other than
// the request being decided: a door that holds requests says, so that one which may still wait
// queues behind them (PolicyDecision::queue_behind) instead of taking the units they wait for.
// Called on the caller's thread, before deciding. Empty: nothing is held.
using HeldOn = std::function<bool(const PlannedCheck& throttle_check)>;
void decideAsync(const Policy& policy, const RequestContext& context, Engine& engine,
                 Micros already_waited_us, DecisionHandler done, const HeldOn& held_on = {});
// The same for checks the caller planned: planChecks' output, perhaps with checks of its own
// added (the gateway's webhook limits). The limits and specs they point to must outlive the
// call of `done`.
void decidePlannedAsync(std::vector<PlannedCheck> planned, Engine& engine, Micros already_waited_us,
                        DecisionHandler done, const HeldOn& held_on = {});
// Returns the error (and never calls `done`) when the limit or tier is unknown.
[[nodiscard]] std::optional<std::string> decideNamedAsync(
    const Policy& policy, std::string_view limit_name, std::string_view key, std::string_view tier,
    std::uint64_t cost, Engine& engine, Micros already_waited_us, DecisionHandler done,
    const HeldOn& held_on = {});

}  // namespace sluice::policy
