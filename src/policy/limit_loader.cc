#include "policy/limit_loader.h"

#include <algorithm>
#include <set>

#include "policy/store_loader.h"

namespace sluice::policy {
namespace {

// A held request holds a connection; minutes of holding would let a few clients use them up.
constexpr Micros kMaxThrottleDelayUs = 60 * kMicrosPerSecond;

// An HTTP method is a token (RFC 9110 §9.1): letters, digits and a few marks; custom methods such
// as PURGE are allowed.
bool isMethodToken(std::string_view method) {
  constexpr std::string_view kMarks = "!#$%&'*+-.^_`|~";
  return !method.empty() && std::all_of(method.begin(), method.end(), [&](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || kMarks.find(c) != kMarks.npos;
  });
}

// Request paths are matched normalized (decoded, dot segments resolved, no trailing '/'), so a
// pattern written otherwise could never match: it is normalized the same way. A prefix naming a
// directory ("/api/", "/api/.") keeps its trailing '/', which means "below this directory".
std::string normalizedPattern(const std::string& path, RouteMatch::PathKind kind) {
  std::string normal = normalizePath(path);
  const bool directory = path.ends_with('/') || path.ends_with("/.") || path.ends_with("/..");
  if (kind == RouteMatch::PathKind::kPrefix && directory && normal != "/") normal += '/';
  return normal;
}

// How long a leaky_bucket_shaper's last place waits: (burst - 1) emission intervals.
long double shaperHoldUs(const LimitSpec& spec) noexcept {
  return static_cast<long double>(spec.burst() - 1) *
         static_cast<long double>(spec.rate().period_us) /
         static_cast<long double>(spec.rate().count);
}

// A shaper holds an admitted request until its slot, as far as its queue reaches: the last place
// in a queue of `burst` waits (burst - 1) emission intervals.
// Each held request holds a connection, so that is bounded as a throttle's max_delay is (1/h
// with a queue of 1000 held connections for up to 41 days, and the clients gone meanwhile).
std::optional<std::string> shaperHoldProblem(const LimitSpec& spec) {
  if (spec.algorithm() != Algorithm::kLeakyBucketShaper) return std::nullopt;
  const long double hold_us = shaperHoldUs(spec);
  if (hold_us <= static_cast<long double>(kMaxThrottleDelayUs)) return std::nullopt;
  return "a leaky_bucket_shaper holds a request up to (burst - 1) / rate (" +
         std::to_string(static_cast<std::uint64_t>(hold_us / kMicrosPerSecond)) +
         "s here), and must not hold one over 60s: lower the burst or raise the rate";
}

// A window allows its rate's count per period: another burst would be ignored, and read as if
// it held. (One equal to the count says what the window does, and is taken.)
std::optional<std::string> windowBurstProblem(Algorithm algorithm, const Rate& rate,
                                              std::uint64_t burst) {
  if (burst == rate.count ||
      (algorithm != Algorithm::kFixedWindow && algorithm != Algorithm::kSlidingWindowLog &&
       algorithm != Algorithm::kSlidingWindowCounter)) {
    return std::nullopt;
  }
  return std::string(algorithmName(algorithm)) +
         " allows the rate's count per window, and takes no other burst (a bucket or gcra does)";
}

void compileTierSpecs(Limit& limit, const YAML::Node& node, const Policy& policy, Errors& errors) {
  if (policy.tiers.empty()) {
    errors.add(node,
               "limit " + limit.name + " takes its numbers from_tier, but no tiers are defined");
    return;
  }
  for (const auto& [name, tier] : policy.tiers) {
    if (tier.unlimited || tier.rate.count == 0)
      continue;  // a tier without a usable rate is reported already (loadTiers)
    Result<LimitSpec> spec =
        LimitSpec::make(limit.algorithm, tier.rate, tier.burst == 0 ? tier.rate.count : tier.burst);
    if (!spec.ok()) {
      errors.add(node, "limit " + limit.name + " with tier " + name + ": " + spec.error());
      continue;
    }
    if (const auto problem = shaperHoldProblem(spec.value())) {
      errors.add(node, "limit " + limit.name + " with tier " + name + ": " + *problem);
    }
    limit.tier_specs.emplace(name, std::move(spec).value());
    if (tier.daily_quota > 0) {
      Result<LimitSpec> daily = LimitSpec::fixedWindow(Rate{tier.daily_quota, kMicrosPerDay});
      if (!daily.ok()) continue;  // reported at the tier's daily_quota (loadTiers)
      limit.tier_daily_specs.emplace(name, std::move(daily).value());
    }
  }
}

// Cost, action, throttle delay, deny status and what to do when a key part is missing.
void loadBehaviour(const YAML::Node& node, const std::string& where, Limit& limit, Errors& errors) {
  if (node["cost"]) {
    limit.cost = unsignedValue(node["cost"], where + ".cost", errors);
    // Every request would be a peek: the limit would count nothing and never deny.
    if (limit.cost == 0U)
      errors.add(node["cost"],
                 where + ".cost 0 would make the limit count nothing; give 1 or more");
  }
  if (node["deny_status"]) {
    const auto status =
        unsignedValue(node["deny_status"], where + ".deny_status", errors).value_or(429);
    if (status < 400 || status > 599)
      errors.add(node["deny_status"], where + ".deny_status must be 400..599");
    limit.deny_status = static_cast<int>(status);
  }
  if (node["action"]) {
    const std::string action = scalar(node["action"], where + ".action", errors).value_or("");
    if (action == "reject")
      limit.action = Action::kReject;
    else if (action == "throttle")
      limit.action = Action::kThrottle;
    else if (action == "shadow")
      limit.action = Action::kShadow;
    else
      errors.add(node["action"], where + ".action must be reject, throttle or shadow");
  }
  // A max_delay that is no duration is reported once, by durationValue.
  const std::optional<Micros> max_delay =
      node["max_delay"] ? durationValue(node["max_delay"], where + ".max_delay", errors)
                        : std::nullopt;
  limit.max_delay_us = max_delay.value_or(0);
  const bool no_delay = !node["max_delay"] || (max_delay && *max_delay <= 0);
  if (limit.action == Action::kThrottle && no_delay) {
    errors.add(node, where + " throttles and needs max_delay, e.g. max_delay: 2s");
  }
  // Only a throttle waits: elsewhere the setting would be ignored, and read as if it held.
  if (node["max_delay"] && limit.action != Action::kThrottle) {
    errors.add(node["max_delay"], where + ".max_delay applies to action: throttle only");
  }
  // A held request holds a connection; minutes of holding would let a few clients use them up.
  if (limit.max_delay_us > kMaxThrottleDelayUs) {
    errors.add(node["max_delay"], where + ".max_delay must be at most 60s");
  }
  if (node["on_error"]) {
    limit.on_error =
        onStoreErrorValue(node["on_error"], where + ".on_error", errors).value_or(limit.on_error);
  }
  if (node["when_missing"]) {
    const std::string value =
        scalar(node["when_missing"], where + ".when_missing", errors).value_or("");
    if (value == "ip")
      limit.when_missing = WhenMissing::kUseIp;
    else if (value == "skip")
      limit.when_missing = WhenMissing::kSkip;
    else
      errors.add(node["when_missing"], where + ".when_missing must be ip or skip");
  }
}

// The spec: fixed numbers from rate and burst, or the caller's tier's.
void loadNumbers(const YAML::Node& node, const std::string& where, const Policy& policy,
                 Limit& limit, Errors& errors) {
  if (limit.from_tier) {
    if (node["rate"] || node["burst"])
      errors.add(node, where + " takes rate and burst from_tier; remove them here");
    compileTierSpecs(limit, node, policy, errors);
  } else if (!node["rate"]) {
    errors.add(node, where + " needs a rate (e.g. rate: 100/min) or from_tier: true");
  } else if (auto rate = rateValue(node["rate"], where + ".rate", errors)) {
    const std::optional<std::uint64_t> read_burst =
        node["burst"] ? unsignedValue(node["burst"], where + ".burst", errors) : rate->count;
    if (!read_burst) return;  // reported: no second error about the burst it was not
    const std::uint64_t burst = *read_burst;
    if (const auto problem = windowBurstProblem(limit.algorithm, *rate, burst)) {
      errors.add(node["burst"], where + ".burst: " + *problem);
    }
    Result<LimitSpec> spec = LimitSpec::make(limit.algorithm, *rate, burst);
    if (spec.ok()) {
      if (const auto problem = shaperHoldProblem(spec.value())) {
        errors.add(node["burst"] ? node["burst"] : node["rate"], where + ": " + *problem);
      }
      limit.spec = std::move(spec).value();
    } else {
      errors.add(node["burst"] ? node["burst"] : node["rate"], where + ": " + spec.error());
    }
  }
}

void loadLimit(const YAML::Node& node, Policy& policy, Errors& errors,
               std::set<std::string>& names) {
  if (!isMap(node, "a limit", errors)) return;
  checkKeys(node, "a limit",
            {"name", "match", "key", "algorithm", "rate", "burst", "cost", "action", "max_delay",
             "deny_status", "when_missing", "from_tier", "on_error"},
            errors);
  Limit limit;
  limit.on_error = policy.store.on_error;
  if (!node["name"]) {
    errors.add(node, "a limit needs a name");
  } else {
    limit.name = scalar(node["name"], "limit name", errors).value_or("");
    if (!isPlainName(limit.name)) {
      errors.add(node["name"], "a limit name must be non-empty, at most " +
                                   std::to_string(kMaxNameBytes) +
                                   " bytes, without control characters");
    } else if (!names.insert(limit.name).second) {
      errors.add(node["name"], "limit name \"" + limit.name + "\" is used twice");
    }
  }
  const std::string where = "limit " + limit.name;
  if (node["match"]) limit.match = loadMatchSection(node["match"], where + ".match", errors);
  std::vector<std::string> key_parts = node["key"] ? stringList(node["key"], where + ".key", errors)
                                                   : std::vector<std::string>{"client"};
  Result<KeySelector> key = KeySelector::parse(key_parts);
  if (key.ok()) {
    limit.key = std::move(key).value();
    if (limit.key.readsJwtClaims() && !policy.jwt) {
      // Without a verifier no request has claims: every one would fall back to its address.
      errors.add(node["key"], where +
                                  ".key reads a JWT claim, but identity.jwt is not set up (or was "
                                  "refused: see its errors)");
    }
  } else if (!node["key"]) {
    errors.add(node, where + ": " + key.error());
  } else {
    // At the part's own line in a list: the first part that does not parse alone.
    YAML::Node at = node["key"];
    for (const std::string& part : key_parts) {
      if (!KeySelector::parse({part}).ok()) {
        at = entryOf(node["key"], part);
        break;
      }
    }
    errors.add(at, where + ": " + key.error());
  }
  if (node["algorithm"]) {
    const std::string name = scalar(node["algorithm"], where + ".algorithm", errors).value_or("");
    if (auto algorithm = parseAlgorithm(name)) {
      limit.algorithm = *algorithm;
    } else {
      errors.add(node["algorithm"],
                 where + ".algorithm \"" + name +
                     "\" is unknown (fixed_window, sliding_window_log, sliding_window, "
                     "token_bucket, token_bucket_interval, leaky_bucket, "
                     "leaky_bucket_shaper, gcra)");
    }
  }
  if (node["from_tier"])
    limit.from_tier = boolValue(node["from_tier"], where + ".from_tier", errors).value_or(false);
  loadBehaviour(node, where, limit, errors);
  loadNumbers(node, where, policy, limit, errors);
  // A fixed cost past what the limit can ever hold denies every request, for good.
  if (limit.cost) {
    const auto check_cost = [&](const LimitSpec& spec, const std::string& whose) {
      if (*limit.cost > spec.limit()) {
        errors.add(node["cost"], where + ".cost " + std::to_string(*limit.cost) + " is more than" +
                                     whose + " holds (" + std::to_string(spec.limit()) +
                                     "), so no request could ever pass");
      }
    };
    if (limit.spec) check_cost(*limit.spec, " the limit");
    for (const auto& [tier, spec] : limit.tier_specs)
      check_cost(spec, " tier " + tier + "'s limit");
    for (const auto& [tier, daily] : limit.tier_daily_specs) {
      check_cost(daily, " tier " + tier + "'s daily quota");
    }
  }
  policy.limits.push_back(std::move(limit));
}

}  // namespace

RouteMatch loadRouteFields(const YAML::Node& node, const std::string& what, Errors& errors) {
  std::vector<std::string> methods;
  bool any_method = false;
  if (node["method"]) {
    // An empty list would match every method, the opposite of what it reads as.
    if (node["method"].IsSequence() && node["method"].size() == 0) {
      errors.add(node["method"], what + ".method: an empty list; leave it out to match any method");
    }
    for (const std::string& written : stringList(node["method"], what + ".method", errors)) {
      std::string method = written;
      for (char& c : method) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
      if (method == "*") {
        any_method = true;  // as the route's description writes "any"
      } else if (!isMethodToken(method)) {
        errors.add(entryOf(node["method"], written),
                   what + ".method: \"" + method + "\" is not a method");
      } else {
        methods.push_back(method);
      }
    }
  }
  if (any_method) methods.clear();
  int paths = 0;
  RouteMatch::PathKind kind = RouteMatch::PathKind::kAny;
  std::string path;
  for (const auto& [key, path_kind] : {std::pair{"path", RouteMatch::PathKind::kExact},
                                       std::pair{"path_prefix", RouteMatch::PathKind::kPrefix},
                                       std::pair{"path_glob", RouteMatch::PathKind::kGlob}}) {
    if (!node[key]) continue;
    ++paths;
    kind = path_kind;
    const std::string field = what + "." + key;
    path = scalar(node[key], field, errors).value_or("");
    if (!path.starts_with("/")) {
      errors.add(node[key], field + " must start with /");
    } else if (path.find('?') != std::string::npos) {
      errors.add(node[key], field + " matches the path alone: a query never matches");
    } else if (path_kind == RouteMatch::PathKind::kGlob && path.find('%') != std::string::npos) {
      // Decoding would turn %2A into a wildcard: a glob is written as the path reads decoded.
      errors.add(node[key], field + " is matched against decoded paths: write it without %");
    } else {
      path = normalizedPattern(path, path_kind);
    }
  }
  if (paths > 1) errors.add(node, what + " takes one of path, path_prefix, path_glob");
  bool case_sensitive = true;
  if (node["case_sensitive"]) {
    const std::string field = what + ".case_sensitive";
    case_sensitive = boolValue(node["case_sensitive"], field, errors).value_or(true);
    if (!case_sensitive && paths == 0) errors.add(node["case_sensitive"], field + " needs a path");
  }
  return RouteMatch(std::move(methods), kind, std::move(path), case_sensitive);
}

RouteMatch loadMatchSection(const YAML::Node& node, const std::string& what, Errors& errors) {
  if (!isMap(node, what, errors)) return {};
  checkKeys(node, what, {"method", "path", "path_prefix", "path_glob", "case_sensitive"}, errors);
  return loadRouteFields(node, what, errors);
}

void loadTiers(const YAML::Node& node, Policy& policy, Errors& errors) {
  if (!isMap(node, "tiers", errors)) return;
  for (const auto& entry : node) {
    Tier tier;
    tier.name = entry.first.Scalar();
    const YAML::Node spec = entry.second;
    const std::string where = "tier " + tier.name;
    if (tier.name.empty()) errors.add(entry.first, "a tier needs a name");
    if (!isMap(spec, where, errors)) continue;
    checkKeys(spec, where, {"rate", "burst", "daily_quota", "unlimited"}, errors);
    if (spec["unlimited"])
      tier.unlimited = boolValue(spec["unlimited"], where + ".unlimited", errors).value_or(false);
    if (spec["rate"]) {
      const std::optional<Rate> rate = rateValue(spec["rate"], where + ".rate", errors);
      if (rate && rate->count == 0) {
        // Its limits would have no spec, and a limit without one is skipped: no limit at all.
        errors.add(spec["rate"], where + ".rate: must allow at least 1 request per period");
      }
      tier.rate = rate.value_or(Rate{});
    }
    // 0 is what an absent burst or quota means (the rate's count, and no quota): written out,
    // it reads as "none allowed", so it is refused, as a limit's burst of 0 is.
    // A value that is no number is reported once, by unsignedValue.
    if (spec["burst"]) {
      const auto burst = unsignedValue(spec["burst"], where + ".burst", errors);
      tier.burst = burst.value_or(0);
      if (burst == 0u) errors.add(spec["burst"], where + ".burst must be at least 1");
    }
    if (spec["daily_quota"]) {
      const auto quota = unsignedValue(spec["daily_quota"], where + ".daily_quota", errors);
      tier.daily_quota = quota.value_or(0);
      if (quota == 0u) {
        errors.add(spec["daily_quota"], where +
                                            ".daily_quota must be at least 1 (leave it out "
                                            "for no daily quota)");
      } else if (quota) {
        // At its own line, and whether or not a limit takes its numbers from the tiers: it was
        // reported at each such limit, and not at all without one.
        const Result<LimitSpec> daily = LimitSpec::fixedWindow(Rate{*quota, kMicrosPerDay});
        if (!daily.ok()) errors.add(spec["daily_quota"], where + ".daily_quota: " + daily.error());
      }
    }
    if (!tier.unlimited && !spec["rate"])
      errors.add(spec, where + " needs a rate, or unlimited: true");
    if (tier.unlimited && (spec["rate"] || spec["burst"] || spec["daily_quota"])) {
      errors.add(spec, where + " is unlimited and cannot also have a rate, burst or daily_quota");
    }
    policy.tiers[tier.name] = tier;
  }
}

void loadLimits(const YAML::Node& limits, const YAML::Node& tiers, Policy& policy, Errors& errors) {
  std::set<std::string> names;
  for (const auto& limit : limits) loadLimit(limit, policy, errors, names);
  // A tier's daily quota is named "<limit>:daily" in headers and metrics: a limit of that name
  // too would make two policies of one name, and merge their metrics.
  std::size_t index = 0;
  for (const Limit& limit : policy.limits) {
    if (!limit.tier_daily_specs.empty() && names.contains(limit.name + ":daily")) {
      errors.add(limits.IsSequence() && index < limits.size() ? limits[index] : limits,
                 "limit \"" + limit.name + ":daily\" has the name of " + limit.name +
                     "'s daily quota; rename one");
    }
    ++index;
  }
  const bool tiered = std::any_of(policy.limits.begin(), policy.limits.end(),
                                  [](const Limit& limit) { return limit.from_tier; });
  if (tiered && !policy.tiers.empty() && !policy.tiers.contains(kAnonymousTier)) {
    // Otherwise callers without a known key would silently have no tier limit at all.
    errors.add(tiers,
               "a limit takes its numbers from_tier, so tiers.anonymous must be defined "
               "(anonymous: {unlimited: true} exempts callers without a key)");
  }
}

Micros longestHoldUs(const Policy& policy) noexcept {
  Micros throttle_us = 0;
  long double shaper_us = 0;
  const auto shaper = [&shaper_us](const LimitSpec& spec) {
    if (spec.algorithm() == Algorithm::kLeakyBucketShaper) {
      shaper_us = std::max(shaper_us, shaperHoldUs(spec));
    }
  };
  for (const Limit& limit : policy.limits) {
    if (limit.action == Action::kThrottle) throttle_us = std::max(throttle_us, limit.max_delay_us);
    if (limit.spec) shaper(*limit.spec);
    for (const auto& [tier, spec] : limit.tier_specs) shaper(spec);
  }
  // Loaded limits keep each within kMaxThrottleDelayUs; the bound guards the conversion.
  return throttle_us + static_cast<Micros>(std::min<long double>(shaper_us, kMaxThrottleDelayUs));
}

}  // namespace sluice::policy
