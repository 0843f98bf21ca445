#include "policy/cookies.h"

#include "policy/request_view.h"

namespace sluice::policy {

std::optional<std::string_view> findCookie(std::string_view cookie_header,
                                           std::string_view name) noexcept {
  return nextCookie(cookie_header, name);
}

bool backendsMayReadOtherwise(std::string_view value) noexcept {
  return value.find_first_of(" \t,\\") != std::string_view::npos;
}

std::optional<std::string_view> nextCookie(std::string_view& rest, std::string_view name) noexcept {
  if (name.empty()) return std::nullopt;
  while (!rest.empty()) {
    const std::size_t semicolon = rest.find(';');
    const std::string_view pair = rest.substr(0, semicolon);
    rest = semicolon == std::string_view::npos ? std::string_view{} : rest.substr(semicolon + 1);
    const std::size_t equals = pair.find('=');
    if (equals == std::string_view::npos || trimBlanks(pair.substr(0, equals)) != name) continue;
    std::string_view value = trimBlanks(pair.substr(equals + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    return value;
  }
  return std::nullopt;
}

}  // namespace sluice::policy
