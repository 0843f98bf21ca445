#include "policy/header_settings_loader.h"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <utility>

namespace sluice::policy {
namespace {

// A header name is an HTTP token (RFC 9110 5.6.2).
bool isToken(std::string_view value) {
  return !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
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
      if (!isToken(*value))
        errors.add(entry.second, field + " \"" + *value + "\" is not a header name");
      headers.names[entry.first.Scalar()] = *value;
    }
  }
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
