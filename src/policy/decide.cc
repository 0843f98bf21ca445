#include "policy/decide.h"

#include <algorithm>

#include <boost/container/small_vector.hpp>
#include <boost/json/serialize.hpp>

#include "policy/api_key_hash.h"
#include "policy/own_headers.h"

namespace sluice::policy {
namespace {

constexpr std::string_view kBearer = "Bearer";

// The credential of one line of `header`: for Authorization, the token after the "Bearer"
// scheme; else the value. Blanks around it are not part of it: "Bearer  K" is the key K to a
// backend that splits on whitespace, and as a key of its own, each extra blank was a fresh
// counter.
std::optional<std::string_view> lineCredential(std::string_view header, std::string_view value) {
  std::string_view text = trimBlanks(value);
  if (equalsIgnoreCase(header, "authorization")) {
    if (text.size() <= kBearer.size() ||
        !equalsIgnoreCase(text.substr(0, kBearer.size()), kBearer) ||
        (text[kBearer.size()] != ' ' && text[kBearer.size()] != '\t')) {
      return std::nullopt;
    }
    text = trimBlanks(text.substr(kBearer.size()));
  }
  // An empty field is no credential: sent by a client whose key variable was unset, say.
  if (text.empty()) return std::nullopt;
  return text;
}

// The credential in `header`, the same on every line that holds one. Lines holding different
// ones set `in_doubt` and give none: backends read the first, the last or both joined, so
// reading either would let a client present one key to the limits and another to the backend.
std::optional<std::string_view> credential(const RequestView& request, std::string_view header,
                                           bool& in_doubt) {
  return request.agreedHeader(header, in_doubt, lineCredential);
}

// The limit's name (and tier, for tier limits) namespace its counters: two limits never share
// one, and a tier's numbers never apply to another tier's state.
std::string counterPrefix(const Limit& limit, std::string_view tier) {
  std::string key;
  appendCounterPart(key, limit.name);
  if (limit.from_tier) {
    key += '@';
    appendCounterPart(key, tier);
  }
  return key;
}

// The engine's view of planned checks. A request has a handful at most: they fit in place, and
// deciding allocates no list for them.
using EngineChecks = boost::container::small_vector<LimitCheck, 4>;

EngineChecks engineChecks(const std::vector<PlannedCheck>& planned) {
  EngineChecks checks;
  checks.reserve(planned.size());
  for (const PlannedCheck& check : planned) {
    checks.push_back({check.key, check.spec, check.cost,
                      std::string_view(check.key).substr(check.group_offset, check.group_length),
                      check.limit->on_error});
  }
  return checks;
}

}  // namespace

std::string PolicyDecision::shadowDenials() const {
  std::string names;
  for (std::size_t i = 0; i < shadow.statuses.size(); ++i) {
    if (shadow.statuses[i].allowed) continue;
    const std::size_t before = names.size();
    if (!names.empty()) names += ", ";
    appendPercentEncoded(names, shadow_checks[i].label, ",");
    if (names.size() > kMaxNameListBytes) {
      names.resize(before);  // the rest are left out (kMaxNameListBytes)
      break;
    }
  }
  return names;
}

RequestContext resolveIdentity(const Policy& policy, const RequestView& request,
                               std::int64_t now_s) {
  RequestContext context(request);
  const boost::asio::ip::address client =
      policy.client_ip.resolve(request.peer,
                               policy.forwarded_header == Policy::ForwardedHeader::kForwarded
                                   ? request.joinedHeader("forwarded")
                                   : std::string(),
                               policy.forwarded_header == Policy::ForwardedHeader::kXForwardedFor
                                   ? request.joinedHeader("x-forwarded-for")
                                   : std::string());
  context.client_ip = addressText(client);
  // The address is its own network but for IPv6 counted by a prefix: no second formatting then.
  const unsigned prefix = countedPrefix(policy.client_ip, client, policy.ipv6_prefix);
  context.client_network =
      client.is_v4() || prefix >= 128 ? context.client_ip : addressNetworkText(client, prefix);
  std::optional<std::string_view> token =
      policy.jwt ? credential(request, policy.jwt_header, context.token_in_doubt) : std::nullopt;
  if (token && looksLikeJwt(*token)) {
    context.claims = policy.jwt->verify(*token, now_s);
  }
  const auto api_key = credential(request, policy.api_key_header, context.api_key_in_doubt);
  // A JWT in the header that tokens are read from is a token, not an API key; an API key read
  // from a header of its own is a key, dots or not.
  if (api_key && !(policy.jwt && equalsIgnoreCase(policy.jwt_header, policy.api_key_header) &&
                   looksLikeJwt(*api_key))) {
    context.api_key_id = hashApiKey(*api_key);
    const auto tier = policy.api_key_tiers.find(*context.api_key_id);
    if (tier != policy.api_key_tiers.end()) {
      context.api_key_known = true;
      context.tier = tier->second;
    } else if (policy.api_keys_listed) {
      // Not in the keys file: no key at all, so an `api_key` limit falls back as when_missing
      // says. Counted by itself, each made-up key was a fresh counter, minted at will.
      context.api_key_id.reset();
    }
  }
  if (!context.api_key_known && context.claims && !policy.tier_claim.empty()) {
    const auto claim = context.claims->find(policy.tier_claim);
    if (claim != context.claims->end() && claim->value().is_string() &&
        policy.tiers.contains(std::string_view(claim->value().as_string()))) {
      context.tier = std::string(claim->value().as_string());
    }
  }
  return context;
}

std::vector<PlannedCheck> planChecks(const Policy& policy, const RequestContext& context) {
  std::vector<PlannedCheck> planned;
  for (const Limit& limit : policy.limits) {
    if (!limit.match.matches(context.request)) continue;
    const LimitSpec* spec = nullptr;
    const LimitSpec* daily = nullptr;
    if (limit.from_tier) {
      const auto tier_spec = limit.tier_specs.find(context.tier);
      if (tier_spec == limit.tier_specs.end()) continue;  // unlimited or unknown tier
      spec = &tier_spec->second;
      const auto daily_spec = limit.tier_daily_specs.find(context.tier);
      if (daily_spec != limit.tier_daily_specs.end()) daily = &daily_spec->second;
    } else {
      spec = &*limit.spec;
    }
    // The limit's name (and tier) namespace its counters, so two limits never share one.
    std::string key = counterPrefix(limit, context.tier);
    const std::size_t identity = key.size();  // the limit's name is not part of the group
    key += 'k';                               // the selector's parts follow
    const KeySelector::Read read =
        limit.key.appendKey(context, limit.match.describe(), key, !limit.match.caseSensitive());
    if (read != KeySelector::Read::kKeyed) {
      // A part in doubt is never skipped: the client could then skip the limit at will.
      if (read == KeySelector::Read::kMissing && limit.when_missing == WhenMissing::kSkip) {
        continue;
      }
      key.resize(identity);
      appendAddressFallback(context, key);
    }
    const std::uint64_t cost = limit.cost.value_or(context.request.cost);
    const std::size_t identity_length = key.size() - identity;
    std::string daily_key = daily != nullptr ? key + 'd' : std::string();
    planned.push_back({&limit, spec, std::move(key), limit.name, cost, identity});
    if (daily != nullptr) {
      // The daily counter's own key, in the same group as the limit's: one call decides both.
      planned.push_back({&limit, daily, std::move(daily_key), limit.name + ":daily", cost, identity,
                         identity_length});
    }
  }
  return planned;
}

namespace {

// Splits planned checks by action, reject/throttle ones first, then shadow ones.
PolicyDecision splitByAction(std::vector<PlannedCheck> planned) {
  PolicyDecision result;
  const auto is_shadow = [](const PlannedCheck& check) {
    return check.limit->action == Action::kShadow;
  };
  if (std::none_of(planned.begin(), planned.end(), is_shadow)) {
    result.enforced_checks = std::move(planned);  // the usual case: no list to build
    return result;
  }
  for (PlannedCheck& check : planned) {
    (is_shadow(check) ? result.shadow_checks : result.enforced_checks).push_back(std::move(check));
  }
  return result;
}

// Whether a denied request waits for its longest denial's retry and is decided again: only when
// every limit that denied it throttles and would wait that long (within its own max_delay). A
// reject limit among them rejects: the binding limit (the longest wait) used to decide alone,
// so a throttle limit with a longer wait held a request a reject limit had refused. Only a
// wait for units makes a throttle: a denial by a store that could not decide (its retry a
// guess) is a plain denial; held, requests would pile up on a broken store.
bool waitsForThrottle(const PolicyDecision& result, Micros already_waited_us) {
  const Micros wait_us = result.enforced.retry_after_us;
  if (wait_us <= 0 || wait_us == kNever) return false;
  for (std::size_t i = 0; i < result.enforced_checks.size(); ++i) {
    const Outcome& status = result.enforced.statuses[i];
    if (status.allowed) continue;
    const Limit& limit = *result.enforced_checks[i].limit;
    if (limit.action != Action::kThrottle || status.reason == DenyReason::kStoreUnavailable ||
        already_waited_us > limit.max_delay_us - wait_us) {
      return false;
    }
  }
  return true;
}

// What a denial answers: the deny_status of the first limit that refused it without offering to
// wait (a reject limit), else the binding limit's. A reject limit's refusal stands over a
// throttle limit's longer wait, as its status should.
int refusingStatus(const PolicyDecision& result) {
  for (std::size_t i = 0; i < result.enforced_checks.size(); ++i) {
    const Limit& limit = *result.enforced_checks[i].limit;
    if (!result.enforced.statuses[i].allowed && limit.action != Action::kThrottle) {
      return limit.deny_status;
    }
  }
  return result.binding()->limit->deny_status;
}

// Applies throttle and deny status to the enforced decision; true when the shadow limits
// should be decided too: the request is admitted, finally. A denied one is not counted against
// them: enforced beside the others, a shadow limit would have taken nothing from it (all or
// nothing), so counting it would preview denials the limit could never make.
bool applyActions(PolicyDecision& result, Micros already_waited_us) {
  result.allowed = result.enforced.allowed;
  if (!result.allowed) {
    if (waitsForThrottle(result, already_waited_us)) {
      // Not final: the caller waits and decides again. Shadow limits are counted once, on the
      // final pass, not on every pass of a throttled request.
      result.throttle_wait_us = result.enforced.retry_after_us;
      return false;
    }
    result.status = refusingStatus(result);
    return false;
  }
  result.hold_us = result.enforced.delay_us;  // a shaper's slot
  return !result.shadow_checks.empty();
}

// Decides the split checks at once, on the caller's thread (a store in this process).
PolicyDecision decideSplit(PolicyDecision result, Engine& engine, Micros already_waited_us) {
  result.enforced = engine.check(engineChecks(result.enforced_checks));
  if (applyActions(result, already_waited_us)) {
    result.shadow = engine.check(engineChecks(result.shadow_checks));
  }
  return result;
}

PolicyDecision decidePlanned(std::vector<PlannedCheck> planned, Engine& engine,
                             Micros already_waited_us) {
  return decideSplit(splitByAction(std::move(planned)), engine, already_waited_us);
}

// The enforced throttle check whose line the request joins instead of deciding, if any: one on
// which others are held. Only on a request's first pass: one that has waited (its turn came, or
// its unit's timer ran) decides, else a request under two throttle limits went from one line to
// the back of the other for as long as either had newcomers. Nor for a check that waits for
// nothing (cost 0, a peek) or could never fit (cost over the limit): either is answered at once.
std::size_t lineToQueueIn(const PolicyDecision& result, Micros already_waited_us,
                          const HeldOn& held_on) {
  if (!held_on || already_waited_us != 0) return PolicyDecision::kNotQueued;
  for (std::size_t i = 0; i < result.enforced_checks.size(); ++i) {
    const PlannedCheck& check = result.enforced_checks[i];
    if (check.limit->action != Action::kThrottle || check.cost == 0 || !held_on(check)) continue;
    // A cost over any of its limits never fits: denied at once, whatever line it would wait
    // in. (Looked at only here: most requests meet no held line.)
    const bool never_fits = std::any_of(
        result.enforced_checks.begin(), result.enforced_checks.end(),
        [](const PlannedCheck& planned) { return planned.cost > planned.spec->limit(); });
    return never_fits ? PolicyDecision::kNotQueued : i;
  }
  return PolicyDecision::kNotQueued;
}

// Whether a limit that does not throttle would refuse the request now, by a peek (costs 0) of
// the enforced checks: such a request is answered at once, as alone, not queued. A peek the
// store could not answer reads as its on_error says: refusing when that denies (or when the
// store is unavailable), and else as it reads, so the request queues and decides in its turn.
bool aRejectLimitRefuses(const PolicyDecision& result, const Decision& peeked) {
  for (std::size_t i = 0; i < result.enforced_checks.size(); ++i) {
    const PlannedCheck& check = result.enforced_checks[i];
    if (check.limit->action == Action::kThrottle || check.cost == 0) continue;
    const Outcome& status = peeked.statuses[i];
    if (!status.allowed || status.remaining < check.cost) return true;
  }
  return false;
}

bool hasRejectChecks(const PolicyDecision& result) {
  return std::any_of(result.enforced_checks.begin(), result.enforced_checks.end(),
                     [](const PlannedCheck& check) {
                       return check.limit->action != Action::kThrottle && check.cost > 0;
                     });
}

EngineChecks peekChecks(const std::vector<PlannedCheck>& planned) {
  EngineChecks checks = engineChecks(planned);
  for (LimitCheck& check : checks) check.cost = 0;
  return checks;
}

// A decision waiting for a store that answers later (a network store).
struct AsyncDecision {
  PolicyDecision result;
  EngineChecks checks;  // views the result's keys; alive until the engine answers
  DecisionHandler done;
};

// Decides the split checks now: at once for a store in this process, else when it answers.
void decideNow(PolicyDecision split, Engine& engine, Micros already_waited_us,
               DecisionHandler done) {
  // A store in this process answers at once: deciding directly saves the shared state and the
  // callbacks' allocations (a handful per request on the HTTP and gateway doors).
  if (engine.decidesInline()) return done(decideSplit(std::move(split), engine, already_waited_us));
  auto state = std::make_shared<AsyncDecision>();
  state->result = std::move(split);
  state->done = std::move(done);
  state->checks = engineChecks(state->result.enforced_checks);
  engine.checkAsync(state->checks, [state, &engine, already_waited_us](Decision&& enforced) {
    state->result.enforced = std::move(enforced);
    if (!applyActions(state->result, already_waited_us)) {
      return state->done(std::move(state->result));
    }
    state->checks = engineChecks(state->result.shadow_checks);
    engine.checkAsync(state->checks, [state](Decision&& shadow) {
      state->result.shadow = std::move(shadow);
      state->done(std::move(state->result));
    });
  });
}

// A request that would queue behind held ones: queued, unless a reject limit refuses it now
// (peeked first when it has any), which is answered at once as it would be alone.
void queueOrRefuse(PolicyDecision split, Engine& engine, DecisionHandler done) {
  const auto queued = [](PolicyDecision&& result, const DecisionHandler& answer) {
    result.allowed = false;  // not decided: it waits for its turn
    answer(std::move(result));
  };
  if (!hasRejectChecks(split)) return queued(std::move(split), done);
  const auto decide_or_queue = [&engine](PolicyDecision&& result, const Decision& peeked,
                                         DecisionHandler&& answer, const auto& queue) {
    if (!aRejectLimitRefuses(result, peeked)) return queue(std::move(result), answer);
    result.queue_behind = PolicyDecision::kNotQueued;
    decideNow(std::move(result), engine, 0, std::move(answer));
  };
  if (engine.decidesInline()) {
    const Decision peeked = engine.check(peekChecks(split.enforced_checks));
    return decide_or_queue(std::move(split), peeked, std::move(done), queued);
  }
  auto state = std::make_shared<AsyncDecision>();
  state->result = std::move(split);
  state->done = std::move(done);
  state->checks = peekChecks(state->result.enforced_checks);
  engine.checkAsync(state->checks, [state, decide_or_queue, queued](Decision&& peeked) {
    decide_or_queue(std::move(state->result), peeked, std::move(state->done), queued);
  });
}

}  // namespace

void decidePlannedAsync(std::vector<PlannedCheck> planned, Engine& engine, Micros already_waited_us,
                        DecisionHandler done, const HeldOn& held_on) {
  PolicyDecision split = splitByAction(std::move(planned));
  split.queue_behind = lineToQueueIn(split, already_waited_us, held_on);
  if (split.queue_behind != PolicyDecision::kNotQueued) {
    return queueOrRefuse(std::move(split), engine, std::move(done));
  }
  decideNow(std::move(split), engine, already_waited_us, std::move(done));
}

namespace {

// The planned checks of one named limit; error when the limit or tier is unknown; nullopt for
// an unlimited tier.
Result<std::optional<std::vector<PlannedCheck>>> planNamed(const Policy& policy,
                                                           std::string_view limit_name,
                                                           std::string_view key,
                                                           std::string_view tier,
                                                           std::uint64_t cost) {
  const Limit* limit = nullptr;
  for (const Limit& candidate : policy.limits) {
    if (candidate.name == limit_name) limit = &candidate;
  }
  if (limit == nullptr) return Error{"no limit named \"" + std::string(limit_name) + "\""};
  std::vector<PlannedCheck> planned;
  std::string counter = counterPrefix(*limit, tier);
  const std::size_t identity = counter.size();
  counter += 'n';  // a key the caller named
  appendCounterPart(counter, key);
  if (!limit->from_tier) {
    // The tier does not change this limit's numbers, but one that is not defined is a mistake
    // worth saying (a misspelt "premum" was answered as if it were any tier).
    if (tier != kAnonymousTier && !policy.tiers.contains(tier)) {
      return Error{"tier \"" + std::string(tier) + "\" is not defined in tiers"};
    }
    planned.push_back(
        {limit, &*limit->spec, counter, limit->name, limit->cost.value_or(cost), identity});
    return std::optional(std::move(planned));
  }
  const auto spec = limit->tier_specs.find(tier);
  if (spec == limit->tier_specs.end()) {
    if (!policy.tiers.contains(tier)) {
      return Error{"limit \"" + limit->name + "\" takes its numbers from the tier, and tier \"" +
                   std::string(tier) + "\" is not defined"};
    }
    return std::optional<std::vector<PlannedCheck>>();  // an unlimited tier
  }
  const std::uint64_t charged = limit->cost.value_or(cost);
  planned.push_back({limit, &spec->second, counter, limit->name, charged, identity});
  const auto daily = limit->tier_daily_specs.find(tier);
  if (daily != limit->tier_daily_specs.end()) {
    planned.push_back({limit, &daily->second, counter + 'd', limit->name + ":daily", charged,
                       identity, counter.size() - identity});
  }
  return std::optional(std::move(planned));
}

}  // namespace

bool looksLikeJwt(std::string_view credential) noexcept {
  return std::count(credential.begin(), credential.end(), '.') == 2;
}

void ageDecision(PolicyDecision& decision, Micros elapsed_us) noexcept {
  const auto closer = [elapsed_us](Micros& wait_us) {
    if (wait_us != kNever) wait_us = std::max<Micros>(0, wait_us - elapsed_us);
  };
  for (Decision* part : {&decision.enforced, &decision.shadow}) {
    closer(part->retry_after_us);
    closer(part->delay_us);
    for (Outcome& status : part->statuses) {
      closer(status.reset_after_us);
      closer(status.retry_after_us);
      closer(status.delay_us);
    }
  }
}

PolicyDecision decide(const Policy& policy, const RequestContext& context, Engine& engine,
                      Micros already_waited_us) {
  return decidePlanned(planChecks(policy, context), engine, already_waited_us);
}

Result<PolicyDecision> decideNamed(const Policy& policy, std::string_view limit_name,
                                   std::string_view key, std::string_view tier, std::uint64_t cost,
                                   Engine& engine, Micros already_waited_us) {
  auto planned = planNamed(policy, limit_name, key, tier, cost);
  if (!planned.ok()) return Error{planned.error()};
  std::optional<std::vector<PlannedCheck>> checks = std::move(planned).value();
  if (!checks) return PolicyDecision{};
  return decidePlanned(std::move(*checks), engine, already_waited_us);
}

void decideAsync(const Policy& policy, const RequestContext& context, Engine& engine,
                 Micros already_waited_us, DecisionHandler done, const HeldOn& held_on) {
  decidePlannedAsync(planChecks(policy, context), engine, already_waited_us, std::move(done),
                     held_on);
}

std::optional<std::string> decideNamedAsync(const Policy& policy, std::string_view limit_name,
                                            std::string_view key, std::string_view tier,
                                            std::uint64_t cost, Engine& engine,
                                            Micros already_waited_us, DecisionHandler done,
                                            const HeldOn& held_on) {
  auto planned = planNamed(policy, limit_name, key, tier, cost);
  if (!planned.ok()) return planned.error();
  std::optional<std::vector<PlannedCheck>> checks = std::move(planned).value();
  if (!checks) {
    done(PolicyDecision{});
    return std::nullopt;
  }
  decidePlannedAsync(std::move(*checks), engine, already_waited_us, std::move(done), held_on);
  return std::nullopt;
}

}  // namespace sluice::policy
