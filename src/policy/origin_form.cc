#include "policy/origin_form.h"

#include <algorithm>
#include <utility>

#include "policy/request_view.h"

namespace sluice::policy {

std::optional<OriginForm> originForm(std::string_view target) {
  const auto has_scheme = [&](std::string_view scheme) {
    if (target.size() < scheme.size()) return false;
    for (std::size_t i = 0; i < scheme.size(); ++i) {
      if (lowerAscii(target[i]) != scheme[i]) return false;
    }
    return true;
  };
  std::size_t start = 0;
  if (has_scheme("http://")) {
    start = 7;
  } else if (has_scheme("https://")) {
    start = 8;
  } else {
    return std::nullopt;
  }
  const std::size_t end = std::min(target.find_first_of("/?", start), target.size());
  OriginForm origin{std::string(target.substr(start, end - start)),
                    std::string(target.substr(end))};
  if (!origin.target.starts_with('/')) origin.target.insert(0, 1, '/');
  return origin;
}

std::string originTarget(std::string_view target) {
  if (auto origin = originForm(target)) return std::move(origin->target);
  return std::string(target);
}

}  // namespace sluice::policy
