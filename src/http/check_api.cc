#include "http/check_api.h"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

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

Result<policy::RequestView> parseRequest(const json::value& value,
                                         const boost::asio::ip::address& peer) {
  if (!value.is_object()) return Error{"\"request\" must be an object"};
  const json::object& object = value.as_object();
  std::string error;
  policy::RequestView view;
  view.method = stringField(object, "method", false, error).value_or("GET");
  for (char& c : view.method) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  view.path = stringField(object, "path", false, error).value_or("/");
  if (!error.empty()) return Error{"request: " + error};
  if (const std::size_t query = view.path.find('?'); query != std::string::npos)
    view.path.resize(query);
  view.peer = peer;
  if (const json::value* ip = object.if_contains("client_ip")) {
    if (!ip->is_string()) return Error{"request: \"client_ip\" must be a string"};
    boost::system::error_code ec;
    view.peer = boost::asio::ip::make_address(std::string(ip->as_string()), ec);
    if (ec) return Error{"request: \"client_ip\" is not an IP address"};
  }
  if (const json::value* headers = object.if_contains("headers")) {
    if (!headers->is_object()) return Error{"request: \"headers\" must be an object"};
    for (const auto& [name, header_value] : headers->as_object()) {
      if (header_value.is_string()) {
        view.headers.emplace_back(std::string(name), std::string(header_value.as_string()));
      } else if (header_value.is_array()) {
        for (const json::value& line : header_value.as_array()) {
          if (!line.is_string()) return Error{"request: header values must be strings"};
          view.headers.emplace_back(std::string(name), std::string(line.as_string()));
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
    Result<policy::RequestView> view = parseRequest(*request, peer);
    if (!view.ok()) return Error{view.error()};
    item.request = std::move(view).value();
    item.request->cost = item.cost;
    return item;
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

json::value millis(Micros us) {
  if (us == kNever) return nullptr;
  return (us + kMicrosPerMilli - 1) / kMicrosPerMilli;
}

}  // namespace

Result<CheckBody> parseCheckBody(std::string_view text, const boost::asio::ip::address& peer) {
  boost::system::error_code ec;
  const json::value root = json::parse(text, ec);
  if (ec) return Error{"the body is not valid JSON: " + ec.message()};
  CheckBody body;
  if (root.is_object() && root.as_object().contains("checks")) {
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

std::vector<LimitLabel> enforcedLabels(const policy::PolicyDecision& decision) {
  std::vector<LimitLabel> labels;
  labels.reserve(decision.enforced_checks.size());
  for (const policy::PlannedCheck& check : decision.enforced_checks) {
    labels.push_back({check.label, check.spec->rate().period_us});
  }
  return labels;
}

std::string renderDecision(const policy::PolicyDecision& decision, const HeaderOptions& options,
                           Micros delayed_us) {
  json::object out;
  out["allowed"] = decision.allowed;
  out["status"] = decision.status;
  const Outcome* binding = decision.enforced.bindingStatus();
  out["limit"] = binding != nullptr ? json::value(decision.binding()->label) : json::value(nullptr);
  out["remaining"] = binding != nullptr ? json::value(binding->remaining) : json::value(nullptr);
  out["reset_after_ms"] =
      binding != nullptr ? millis(binding->reset_after_us) : json::value(nullptr);
  out["retry_after_ms"] =
      decision.allowed ? json::value(0) : millis(decision.enforced.retry_after_us);
  out["delayed_ms"] = millis(delayed_us);
  json::array limits;
  for (std::size_t i = 0; i < decision.enforced.statuses.size(); ++i) {
    const Outcome& outcome = decision.enforced.statuses[i];
    limits.push_back(json::object{{"name", decision.enforced_checks[i].label},
                                  {"allowed", outcome.allowed},
                                  {"limit", outcome.limit},
                                  {"remaining", outcome.remaining},
                                  {"reset_after_ms", millis(outcome.reset_after_us)},
                                  {"retry_after_ms", millis(outcome.retry_after_us)},
                                  {"reason", denyReasonName(outcome.reason)}});
  }
  out["limits"] = std::move(limits);
  json::array shadow;
  for (const std::string& name : decision.shadowDenials()) shadow.push_back(json::string(name));
  out["shadow_denied"] = std::move(shadow);
  HeaderList headers;
  const std::vector<LimitLabel> labels = enforcedLabels(decision);
  appendRateLimitHeaders(decision.enforced, labels, options, headers);
  json::object header_object;
  for (const auto& [name, value] : headers) header_object[name] = value;
  out["headers"] = std::move(header_object);
  return json::serialize(out);
}

}  // namespace sluice::http
