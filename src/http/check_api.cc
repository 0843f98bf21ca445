#include "http/check_api.h"

#include <algorithm>
#include <initializer_list>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "policy/client_ip.h"
#include "policy/origin_form.h"

namespace sluice::http {
namespace {

namespace json = boost::json;

std::optional<std::uint64_t> costOf(const json::object& object, std::string& error) {
  const json::value* cost = object.if_contains("cost");
  if (cost == nullptr) return 1;
  if (cost->is_uint64()) return cost->as_uint64();
  if (cost->is_int64() && cost->as_int64() >= 0)
    return static_cast<std::uint64_t>(cost->as_int64());
  error = "\"cost\" must be a whole number of 0 or more";
  return std::nullopt;
}

std::optional<std::string> stringField(const json::object& object, std::string_view name,
                                       bool required, std::string& error) {
  const json::value* value = object.if_contains(name);
  if (value == nullptr) {
    if (required) error = "\"" + std::string(name) + "\" is required";
    return std::nullopt;
  }
  if (!value->is_string()) {
    error = "\"" + std::string(name) + "\" must be a string";
    return std::nullopt;
  }
  return std::string(value->as_string());
}

// The first field of `object` that is not one of `known`, if any: a misspelt field ("cots": 5)
// would otherwise be ignored, and the request charged 1.
std::optional<std::string> unknownField(const json::object& object,
                                        std::initializer_list<std::string_view> known) {
  for (const auto& [name, value] : object) {
    if (std::find(known.begin(), known.end(), std::string_view(name)) == known.end()) {
      return std::string(name);
    }
  }
  return std::nullopt;
}

Result<policy::RequestView> parseRequest(const json::value& value,
                                         const boost::asio::ip::address& peer) {
  if (!value.is_object()) return Error{"\"request\" must be an object"};
  const json::object& object = value.as_object();
  if (const auto field = unknownField(object, {"method", "path", "client_ip", "headers"})) {
    return Error{"request: unknown field \"" + *field +
                 "\" (a request takes method, path, client_ip and headers)"};
  }
  std::string error;
  policy::RequestView view;
  view.method = stringField(object, "method", false, error).value_or("GET");
  for (char& c : view.method) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  const std::string path = stringField(object, "path", false, error).value_or("/");
  if (!error.empty()) return Error{"request: " + error};
  // A caller may pass the target as the client sent it, in absolute form, as the auth door's
  // original URI may be: its path is the path (else no path-matched limit would apply).
  view.setPath(policy::originTarget(path));
  view.peer = peer;
  if (const json::value* ip = object.if_contains("client_ip")) {
    if (!ip->is_string()) return Error{"request: \"client_ip\" must be a string"};
    const auto address = policy::parseBareAddress(ip->as_string());
    if (!address) {
      return Error{"request: \"client_ip\" is not an IP address (without a port or zone id)"};
    }
    view.peer = *address;
  }
  if (const json::value* headers = object.if_contains("headers")) {
    if (!headers->is_object()) return Error{"request: \"headers\" must be an object"};
    for (const auto& [name, header_value] : headers->as_object()) {
      if (header_value.is_string()) {
        // As an HTTP parser hands a value on: without the blanks around it (RFC 9110 5.5), so
        // the decision API reads "K1 " as /v1/auth and the gateway read it.
        view.headers.emplace_back(std::string(name),
                                  std::string(policy::trimBlanks(header_value.as_string())));
      } else if (header_value.is_array()) {
        for (const json::value& line : header_value.as_array()) {
          if (!line.is_string()) return Error{"request: header values must be strings"};
          view.headers.emplace_back(std::string(name),
                                    std::string(policy::trimBlanks(line.as_string())));
        }
      } else {
        return Error{"request: header \"" + std::string(name) + "\" must be a string or a list"};
      }
    }
  }
  return view;
}

Result<CheckItem> parseItem(const json::value& value, const boost::asio::ip::address& peer) {
  if (!value.is_object()) return Error{"a check must be a JSON object"};
  const json::object& object = value.as_object();
  std::string error;
  CheckItem item;
  const auto cost = costOf(object, error);
  if (!cost) return Error{error};
  item.cost = *cost;
  if (const json::value* request = object.if_contains("request")) {
    // A named limit beside it would be ignored, the request decided on every limit it matches.
    if (const auto field = unknownField(object, {"request", "cost"})) {
      return Error{"\"" + *field +
                   "\" does not go with \"request\" (a check takes request and cost, or limit, "
                   "key, tier and cost)"};
    }
    Result<policy::RequestView> view = parseRequest(*request, peer);
    if (!view.ok()) return Error{view.error()};
    item.request = std::move(view).value();
    item.request->cost = item.cost;
    return item;
  }
  if (const auto field = unknownField(object, {"limit", "key", "tier", "cost"})) {
    return Error{"unknown field \"" + *field +
                 "\" (a check takes limit, key, tier and cost, or request and cost)"};
  }
  const auto limit = stringField(object, "limit", true, error);
  const auto key = stringField(object, "key", true, error);
  const auto tier = stringField(object, "tier", false, error);
  if (!error.empty()) return Error{error + " (or give \"request\")"};
  item.limit = *limit;
  item.key = *key;
  if (tier) item.tier = *tier;
  return item;
}

}  // namespace

Result<CheckBody> parseCheckBody(std::string_view text, const boost::asio::ip::address& peer) {
  // The parsed document lives only for this call: parse into a stack buffer, not the heap.
  unsigned char scratch[8192];
  json::monotonic_resource resource(scratch, sizeof scratch);
  boost::system::error_code ec;
  const json::value root = json::parse(text, ec, &resource);
  if (ec) return Error{"the body is not valid JSON: " + ec.message()};
  CheckBody body;
  if (root.is_object() && root.as_object().contains("checks")) {
    if (const auto field = unknownField(root.as_object(), {"checks"})) {
      return Error{"unknown field \"" + *field +
                   "\" beside \"checks\" (a batch holds checks only)"};
    }
    const json::value& checks = root.as_object().at("checks");
    if (!checks.is_array()) return Error{"\"checks\" must be an array"};
    if (checks.as_array().empty() || checks.as_array().size() > kMaxBatchChecks) {
      return Error{"\"checks\" must hold 1 to " + std::to_string(kMaxBatchChecks) + " checks"};
    }
    body.batch = true;
    for (std::size_t i = 0; i < checks.as_array().size(); ++i) {
      Result<CheckItem> item = parseItem(checks.as_array()[i], peer);
      if (!item.ok()) return Error{"checks[" + std::to_string(i) + "]: " + item.error()};
      body.items.push_back(std::move(item).value());
    }
    return body;
  }
  Result<CheckItem> item = parseItem(root, peer);
  if (!item.ok()) return Error{item.error()};
  body.items.push_back(std::move(item).value());
  return body;
}

LimitLabels enforcedLabels(const policy::PolicyDecision& decision) {
  LimitLabels labels;
  labels.reserve(decision.enforced_checks.size());
  for (const policy::PlannedCheck& check : decision.enforced_checks) {
    labels.push_back({check.label, quotaWindowUs(*check.spec)});
  }
  return labels;
}

// Written straight into one string rather than through a JSON DOM: building and serializing a
// boost::json object cost more than the decision itself (measured: 10% of the server's time in
// Boost.JSON plus most of the malloc traffic).
std::string renderDecision(const policy::PolicyDecision& decision, const HeaderList& headers,
                           Micros delayed_us) {
  std::string out;
  out.reserve(512 + 160 * decision.enforced.statuses.size());
  const auto number = [&out](std::uint64_t value) { out += std::to_string(value); };
  const auto millis = [&out](Micros us) {
    if (us == kNever) {
      out += "null";
    } else {
      out += std::to_string((us + kMicrosPerMilli - 1) / kMicrosPerMilli);
    }
  };
  const Outcome* binding = decision.enforced.bindingStatus();
  out += "{\"allowed\":";
  out += decision.allowed ? "true" : "false";
  out += ",\"status\":";
  number(static_cast<std::uint64_t>(decision.status));
  out += ",\"limit\":";
  if (binding != nullptr) {
    appendJsonString(out, decision.binding()->label);
    out += ",\"remaining\":";
    number(binding->remaining);
    out += ",\"reset_after_ms\":";
    millis(binding->reset_after_us);
  } else {
    out += "null,\"remaining\":null,\"reset_after_ms\":null";
  }
  out += ",\"retry_after_ms\":";
  millis(decision.allowed ? 0 : decision.enforced.retry_after_us);
  out += ",\"delayed_ms\":";
  millis(delayed_us);
  // A shaper's later slot that was not waited for here (a batch item): go on at it.
  if (decision.allowed && decision.hold_us > 0) {
    out += ",\"hold_ms\":";
    millis(decision.hold_us);
  }
  // Decided without the shared store (Redis down or slow): each limit's on_error decided.
  if (decision.enforced.degraded) out += ",\"degraded\":true";
  out += ",\"limits\":[";
  for (std::size_t i = 0; i < decision.enforced.statuses.size(); ++i) {
    const Outcome& outcome = decision.enforced.statuses[i];
    out += i == 0 ? "{\"name\":" : ",{\"name\":";
    appendJsonString(out, decision.enforced_checks[i].label);
    out += ",\"allowed\":";
    out += outcome.allowed ? "true" : "false";
    out += ",\"limit\":";
    number(outcome.limit);
    out += ",\"remaining\":";
    number(outcome.remaining);
    out += ",\"reset_after_ms\":";
    millis(outcome.reset_after_us);
    out += ",\"retry_after_ms\":";
    millis(outcome.retry_after_us);
    out += ",\"reason\":\"";
    out += denyReasonName(outcome.reason);
    out += "\"}";
  }
  out += "],\"shadow_denied\":[";
  bool first = true;
  for (std::size_t i = 0; i < decision.shadow.statuses.size(); ++i) {
    if (decision.shadow.statuses[i].allowed) continue;
    if (!first) out += ',';
    first = false;
    appendJsonString(out, decision.shadow_checks[i].label);
  }
  out += "],\"headers\":{";
  for (std::size_t i = 0; i < headers.size(); ++i) {
    if (i > 0) out += ',';
    appendJsonString(out, headers[i].first);
    out += ':';
    appendJsonString(out, headers[i].second);
  }
  out += "}}";
  return out;
}

}  // namespace sluice::http
