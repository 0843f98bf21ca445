#include "gateway/dynamic_limits.h"

#include <algorithm>

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
  std::uint64_t millis = 0;
  if (value->is_int64() && value->as_int64() >= 0) {
    millis = static_cast<std::uint64_t>(value->as_int64());
  } else if (value->is_uint64()) {
    millis = value->as_uint64();
  } else {
    return Error{std::string(name) + " must be a duration such as \"1s\" or milliseconds"};
  }
  // The bound parseDuration puts on durations written as text; past it the product overflows.
  if (millis > static_cast<std::uint64_t>(kMicrosPerYear * 100 / kMicrosPerMilli)) {
    return Error{std::string(name) + " is too long"};
  }
  return static_cast<Micros>(millis) * kMicrosPerMilli;
}

Result<std::uint64_t> countField(const boost::json::object& entry, std::string_view name) {
  const boost::json::value* value = entry.if_contains(name);
  if (value == nullptr) return std::uint64_t{0};
  if (value->is_int64() && value->as_int64() > 0)
    return static_cast<std::uint64_t>(value->as_int64());
  if (value->is_uint64() && value->as_uint64() > 0) return value->as_uint64();
  return Error{std::string(name) + " must be a whole number above zero"};
}

// The key as the limit's name shows it (in headers, JSON answers and logs): control bytes are
// percent-encoded. A webhook may build keys from what the client sent (the path, decoded, is
// in its request), and a CR LF written into X-Sluice-Limit on a monitor route would start a
// header, or a whole request, of the client's making on the upstream connection.
std::string printableKey(std::string_view key) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(key.size());
  for (const char c : key) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) {
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    } else {
      out += c;
    }
  }
  return out;
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
      return Error{"limit \"" + printableKey(key->as_string()) + "\": " + limit.error()};
    policy::Limit made = std::move(limit).value();
    made.name = "dynamic:" + printableKey(key->as_string());
    made.from_webhook = true;
    // 'w' marks the webhook's counters: no policy key begins with it, so none is shared.
    std::string counter = "w";
    policy::appendCounterPart(counter, key->as_string());
    // A key given twice is two limits on it, each with its own count: one counter for both
    // took a unit for each per request.
    if (std::find(limits->keys.begin(), limits->keys.end(), counter) != limits->keys.end()) {
      policy::appendCounterPart(counter, std::to_string(limits->limits.size()));
    }
    limits->keys.push_back(std::move(counter));
    limits->limits.push_back(std::move(made));
  }
  return DynamicLimitsPtr(std::move(limits));
}

void decideWithDynamic(const policy::Policy& policy, const policy::RequestContext& context,
                       const DynamicLimitsPtr& dynamic, Engine& engine, Micros already_waited_us,
                       policy::DecisionHandler done, const policy::HeldOn& held_on) {
  if (dynamic == nullptr || dynamic->limits.empty()) {
    return policy::decideAsync(policy, context, engine, already_waited_us, std::move(done),
                               held_on);
  }
  // The webhook's limits join the policy's, decided with them all-or-nothing, by the policy's
  // rules (actions, throttling, on_error, grouping); `dynamic` outlives the decision.
  std::vector<policy::PlannedCheck> planned = policy::planChecks(policy, context);
  for (std::size_t i = 0; i < dynamic->limits.size(); ++i) {
    const policy::Limit& limit = dynamic->limits[i];
    planned.push_back({&limit, &*limit.spec, dynamic->keys[i], limit.name, 1});
  }
  policy::decidePlannedAsync(
      std::move(planned), engine, already_waited_us,
      [dynamic, done = std::move(done)](policy::PolicyDecision&& decision) {
        done(std::move(decision));
      },
      held_on);
}

}  // namespace sluice::gateway
