#include "gateway/dynamic_limits.h"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "policy/duration.h"
#include "policy/key_selector.h"

namespace sluice::gateway {
namespace {

constexpr Micros kMaxThrottleUs = 60 * kMicrosPerSecond;

// A duration as a string ("250ms") or a number of milliseconds.
Result<Micros> durationField(const boost::json::object& entry, std::string_view name,
                             Micros fallback) {
  const boost::json::value* value = entry.if_contains(name);
  if (value == nullptr) return fallback;
  if (value->is_string()) return policy::parseDuration(value->as_string());
  if (value->is_int64() && value->as_int64() >= 0) return value->as_int64() * kMicrosPerMilli;
  if (value->is_uint64()) return static_cast<Micros>(value->as_uint64()) * kMicrosPerMilli;
  return Error{std::string(name) + " must be a duration such as \"1s\" or milliseconds"};
}

Result<std::uint64_t> countField(const boost::json::object& entry, std::string_view name) {
  const boost::json::value* value = entry.if_contains(name);
  if (value == nullptr) return std::uint64_t{0};
  if (value->is_int64() && value->as_int64() > 0)
    return static_cast<std::uint64_t>(value->as_int64());
  if (value->is_uint64() && value->as_uint64() > 0) return value->as_uint64();
  return Error{std::string(name) + " must be a whole number above zero"};
}

Result<policy::Limit> limitFrom(const boost::json::object& entry) {
  const Result<Micros> interval = durationField(entry, "interval", 0);
  const Result<Micros> window = durationField(entry, "window", kMicrosPerSecond);
  const Result<Micros> max_throttle = durationField(entry, "max_throttle", 0);
  const Result<std::uint64_t> burst = countField(entry, "burst");
  for (const auto* failed : {&interval, &window, &max_throttle}) {
    if (!failed->ok()) return Error{failed->error()};
  }
  if (!burst.ok()) return Error{burst.error()};
  if (interval.value() <= 0 && burst.value() == 0) {
    return Error{"a limit needs interval or burst"};
  }
  if (max_throttle.value() > kMaxThrottleUs) return Error{"max_throttle must be at most 60s"};
  // One request per interval, or burst per window; a GCRA either way (burst = its tolerance).
  const Rate rate =
      interval.value() > 0 ? Rate{1, interval.value()} : Rate{burst.value(), window.value()};
  const std::uint64_t capacity = burst.value() > 0 ? burst.value() : 1;
  Result<LimitSpec> spec = LimitSpec::gcra(rate, capacity);
  if (!spec.ok()) return Error{spec.error()};
  policy::Limit limit;
  limit.name = "dynamic";
  limit.algorithm = Algorithm::kGcra;
  limit.spec = std::move(spec).value();
  limit.action = max_throttle.value() > 0 ? policy::Action::kThrottle : policy::Action::kReject;
  limit.max_delay_us = max_throttle.value();
  return limit;
}

}  // namespace

Result<DynamicLimitsPtr> parseDynamicLimits(std::string_view json) {
  boost::system::error_code ec;
  const boost::json::value root = boost::json::parse(json, ec);
  if (ec) return Error{"the answer is not JSON: " + ec.message()};
  const boost::json::value* list =
      root.is_object() ? root.as_object().if_contains("limits") : nullptr;
  if (list == nullptr || !list->is_array()) return Error{"the answer has no \"limits\" list"};
  if (list->as_array().size() > kMaxDynamicLimits) {
    return Error{"the answer has more than " + std::to_string(kMaxDynamicLimits) + " limits"};
  }
  auto limits = std::make_shared<DynamicLimits>();
  for (const boost::json::value& item : list->as_array()) {
    const boost::json::value* key =
        item.is_object() ? item.as_object().if_contains("key") : nullptr;
    if (key == nullptr || !key->is_string() || key->as_string().empty() ||
        key->as_string().size() > kMaxDynamicKeyBytes) {
      return Error{"each limit needs a \"key\" string of 1.." +
                   std::to_string(kMaxDynamicKeyBytes) + " bytes"};
    }
    Result<policy::Limit> limit = limitFrom(item.as_object());
    if (!limit.ok())
      return Error{"limit \"" + std::string(key->as_string()) + "\": " + limit.error()};
    policy::Limit made = std::move(limit).value();
    made.name = "dynamic:" + std::string(key->as_string());
    // 'w' marks the webhook's counters: no policy key begins with it, so none is shared.
    std::string counter = "w";
    policy::appendCounterPart(counter, key->as_string());
    limits->keys.push_back(std::move(counter));
    limits->limits.push_back(std::move(made));
  }
  return DynamicLimitsPtr(std::move(limits));
}

namespace {

std::vector<LimitCheck> engineChecks(const std::vector<policy::PlannedCheck>& planned) {
  std::vector<LimitCheck> checks;
  checks.reserve(planned.size());
  for (const auto& check : planned) checks.push_back({check.key, check.spec, check.cost});
  return checks;
}

// policy::decide's rules: a throttled pass decides nothing final, and shadow limits are counted
// on the final pass only. True when the shadow limits are to be checked now.
bool applyActions(policy::PolicyDecision& result, Micros already_waited_us) {
  result.allowed = result.enforced.allowed;
  if (!result.allowed) {
    const policy::Limit& limit = *result.binding()->limit;
    const Micros wait_us = result.enforced.retry_after_us;
    if (limit.action == policy::Action::kThrottle && wait_us != kNever &&
        already_waited_us <= limit.max_delay_us - wait_us) {
      result.throttle_wait_us = wait_us;
      return false;
    }
    result.status = limit.deny_status;
  } else {
    result.hold_us = result.enforced.delay_us;
  }
  return !result.shadow_checks.empty();
}

}  // namespace

void decideWithDynamic(const policy::Policy& policy, const policy::RequestContext& context,
                       const DynamicLimitsPtr& dynamic, Engine& engine, Micros already_waited_us,
                       policy::DecisionHandler done) {
  if (dynamic == nullptr || dynamic->limits.empty()) {
    return policy::decideAsync(policy, context, engine, already_waited_us, std::move(done));
  }
  struct Pending {
    DynamicLimitsPtr dynamic;  // the planned checks point into it
    policy::PolicyDecision result;
    std::vector<LimitCheck> checks;  // views the result's keys until the engine answers
    policy::DecisionHandler done;
  };
  auto pending = std::make_shared<Pending>();
  pending->dynamic = dynamic;
  pending->done = std::move(done);
  policy::PolicyDecision& result = pending->result;
  for (policy::PlannedCheck& check : policy::planChecks(policy, context)) {
    (check.limit->action == policy::Action::kShadow ? result.shadow_checks : result.enforced_checks)
        .push_back(std::move(check));
  }
  for (std::size_t i = 0; i < dynamic->limits.size(); ++i) {
    const policy::Limit& limit = dynamic->limits[i];
    result.enforced_checks.push_back({&limit, &*limit.spec, dynamic->keys[i], limit.name, 1});
  }
  pending->checks = engineChecks(result.enforced_checks);
  engine.checkAsync(pending->checks, [pending, &engine, already_waited_us](Decision&& enforced) {
    pending->result.enforced = std::move(enforced);
    if (!applyActions(pending->result, already_waited_us)) {
      return pending->done(std::move(pending->result));
    }
    pending->checks = engineChecks(pending->result.shadow_checks);
    engine.checkAsync(pending->checks, [pending](Decision&& shadow) {
      pending->result.shadow = std::move(shadow);
      pending->done(std::move(pending->result));
    });
  });
}

}  // namespace sluice::gateway
