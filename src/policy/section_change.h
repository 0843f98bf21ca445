// A door's section (gateway:, envoy_rls:) is read once, when the door opens; a reload reads the
// file again for the limits. What a reload says when the section it finds is not the one the
// door runs with, shared by the doors.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sluice/result.h"

namespace sluice::policy {

// What a reload says of a door's section that is not the one the door runs with: a warning, or
// an error (`refuses`: the reload is refused) when the section now has errors, which would stop
// the next start.
struct SectionChange {
  bool refuses = false;
  std::string text;
};

// The change when the section as the reload found it (`now`: an error, no section, or settings
// whose section_text differs from `running_text`) is not what the door runs with, saying that
// `door` keeps its settings until restart and what does reload (`reloads`); nullopt when the
// section is unchanged. `Settings` has the section_text its loader recorded.
template <typename Settings>
[[nodiscard]] std::optional<SectionChange> sectionRestartChange(
    std::string_view section, std::string_view door, std::string_view reloads,
    const std::string& running_text, const Result<std::optional<Settings>>& now) {
  const std::string name(section);
  const std::string kept =
      "; " + std::string(door) + " keeps its settings until restart (" + std::string(reloads) + ")";
  if (!now.ok()) {
    return SectionChange{
        .refuses = true,
        .text = name + ": the section now has errors, which would stop the next start:\n" +
                now.error()};
  }
  if (!now.value()) return SectionChange{.text = name + ": the section was removed" + kept};
  if (now.value()->section_text != running_text) {
    return SectionChange{.text = name + ": settings changed; they take effect at restart (" +
                                 std::string(reloads) + ")"};
  }
  return std::nullopt;
}

}  // namespace sluice::policy
