#include "policy/request_view.h"

#include <algorithm>

namespace sluice::policy {

bool equalsIgnoreCase(std::string_view a, std::string_view b) noexcept {
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [&](char x, char y) { return lower(x) == lower(y); });
}

std::optional<std::string_view> RequestView::header(std::string_view name) const noexcept {
  for (const auto& [key, value] : headers) {
    if (equalsIgnoreCase(key, name)) return std::string_view(value);
  }
  return std::nullopt;
}

std::string RequestView::joinedHeader(std::string_view name) const {
  std::string joined;
  for (const auto& [key, value] : headers) {
    if (!equalsIgnoreCase(key, name)) continue;
    if (!joined.empty()) joined += ", ";
    joined += value;
  }
  return joined;
}

}  // namespace sluice::policy
