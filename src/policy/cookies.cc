#include "policy/cookies.h"

namespace sluice::policy {
namespace {

std::string_view trim(std::string_view text) noexcept {
  constexpr std::string_view kWhitespace = " \t";
  const std::size_t first = text.find_first_not_of(kWhitespace);
  if (first == std::string_view::npos) return {};
  const std::size_t last = text.find_last_not_of(kWhitespace);
  return text.substr(first, last - first + 1);
}

}  // namespace

std::optional<std::string_view> findCookie(std::string_view cookie_header,
                                           std::string_view name) noexcept {
  return nextCookie(cookie_header, name);
}

std::optional<std::string_view> nextCookie(std::string_view& rest, std::string_view name) noexcept {
  if (name.empty()) return std::nullopt;
  while (!rest.empty()) {
    const std::size_t semicolon = rest.find(';');
    const std::string_view pair = rest.substr(0, semicolon);
    rest = semicolon == std::string_view::npos ? std::string_view{} : rest.substr(semicolon + 1);
    const std::size_t equals = pair.find('=');
    if (equals == std::string_view::npos || trim(pair.substr(0, equals)) != name) continue;
    std::string_view value = trim(pair.substr(equals + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    return value;
  }
  return std::nullopt;
}

}  // namespace sluice::policy
