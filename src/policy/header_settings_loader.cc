#include "policy/header_settings_loader.h"

#include <string_view>
#include <utility>
#include <vector>

#include "policy/own_headers.h"
#include "policy/request_view.h"

namespace sluice::policy {
namespace {

// Headers the answer's framing, connection or identity depend on: a rate-limit header renamed
// to one of them would give a message two Content-Lengths, say, which a proxy in front could
// read either way (a desync).
bool isReserved(std::string_view name) {
  static constexpr std::string_view kReserved[] = {"content-length",
                                                   "transfer-encoding",
                                                   "connection",
                                                   "keep-alive",
                                                   "proxy-connection",
                                                   "upgrade",
                                                   "te",
                                                   "trailer",
                                                   "host",
                                                   "date",
                                                   "content-type",
                                                   "set-cookie",
                                                   "server",
                                                   "location",
                                                   "content-encoding"};
  for (std::string_view reserved : kReserved) {
    if (equalsIgnoreCase(name, reserved)) return true;
  }
  return false;
}

// The headers Sluice sets beside the rate-limit families, which no family may be renamed to.
bool isSluicesOwn(std::string_view name) {
  for (std::string_view own : kOwnHeaders) {
    if (equalsIgnoreCase(name, own)) return true;
  }
  return false;
}

// Two families under one name would overwrite each other (a Remaining value as the Limit) or
// make a list of another's value (RateLimit-Policy: 823), and the decision API's JSON would
// hold a key twice.
void checkNamesDistinct(const YAML::Node& names, const std::string& where,
                        const HeaderSettings& headers, Errors& errors) {
  std::vector<std::pair<std::string_view, std::string_view>> effective;  // family, name
  for (const HeaderFamily& family : kHeaderFamilies) {
    const auto renamed = headers.names.find(family.key);
    effective.emplace_back(family.key, renamed != headers.names.end()
                                           ? std::string_view(renamed->second)
                                           : family.default_name);
  }
  for (std::size_t i = 0; i < effective.size(); ++i) {
    const auto [family, name] = effective[i];
    const YAML::Node at = names[std::string(family)] ? names[std::string(family)] : names;
    if (isSluicesOwn(name) && headers.names.contains(family)) {
      errors.add(at, where + "." + std::string(family) + " \"" + std::string(name) +
                         "\" is a header Sluice sets itself");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (equalsIgnoreCase(name, effective[j].second)) {
        errors.add(at, where + ": " + std::string(effective[j].first) + " and " +
                           std::string(family) + " are both named \"" + std::string(name) + "\"");
      }
    }
  }
}

void loadNames(const YAML::Node& names, const std::string& where, HeaderSettings& headers,
               Errors& errors) {
  if (!isMap(names, where, errors)) return;
  checkKeys(names, where,
            {"limit", "remaining", "reset", "retry_after", "ratelimit", "ratelimit_policy"},
            errors);
  for (const auto& entry : names) {
    const std::string field = where + "." + entry.first.Scalar();
    if (auto value = scalar(entry.second, field, errors)) {
      if (!isHttpToken(*value)) {
        errors.add(entry.second, field + " \"" + *value + "\" is not a header name");
      } else if (isReserved(*value)) {
        errors.add(entry.second, field + " \"" + *value +
                                     "\" is a header the message's framing or transport owns");
      }
      headers.names[entry.first.Scalar()] = *value;
    }
  }
  checkNamesDistinct(names, where, headers, errors);
}

}  // namespace

void loadHeaderSettings(const YAML::Node& node, const std::string& where, HeaderSettings& headers,
                        Errors& errors) {
  if (!isMap(node, where, errors)) return;
  checkKeys(node, where, {"x_ratelimit", "ietf", "retry_after", "names"}, errors);
  for (const auto& [key, field] :
       {std::pair{"x_ratelimit", &headers.x_ratelimit}, std::pair{"ietf", &headers.ietf},
        std::pair{"retry_after", &headers.retry_after}}) {
    if (node[key]) *field = boolValue(node[key], where + "." + key, errors).value_or(*field);
  }
  if (node["names"]) loadNames(node["names"], where + ".names", headers, errors);
}

}  // namespace sluice::policy
