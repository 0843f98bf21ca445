// A door's section (gateway:, envoy_rls:) is read once, when the door opens; a reload reads the
// file again for the limits. What a reload says when the section it finds is not the one the
// door runs with, shared by the doors.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sluice/result.h"

namespace sluice::policy {

// A warning when the section as the reload found it (`now`: an error, no section, or settings
// whose section_text differs from `running_text`) is not what the door runs with, saying that
// `door` keeps its settings until restart and what does reload (`reloads`); nullopt when the
// section is unchanged. `Settings` has the section_text its loader recorded.
template <typename Settings>
[[nodiscard]] std::optional<std::string> sectionRestartWarning(
    std::string_view section, std::string_view door, std::string_view reloads,
    const std::string& running_text, const Result<std::optional<Settings>>& now) {
  const std::string name(section);
  const std::string kept =
      "; " + std::string(door) + " keeps its settings until restart (" + std::string(reloads) + ")";
  if (!now.ok()) return name + ": the section now has errors" + kept + ":\n" + now.error();
  if (!now.value()) return name + ": the section was removed" + kept;
  if (now.value()->section_text != running_text) {
    return name + ": settings changed; they take effect at restart (" + std::string(reloads) + ")";
  }
  return std::nullopt;
}

}  // namespace sluice::policy
