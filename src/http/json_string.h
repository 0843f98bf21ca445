// JSON string literals for the bodies Sluice writes by hand (the decision API, denials).
#pragma once

#include <string>
#include <string_view>

namespace sluice::http {

// Appends `text` as a JSON string literal, quotes included: '"' and '\\' escaped, control
// characters as \u00XX, every other byte as it is.
void appendJsonString(std::string& out, std::string_view text);

}  // namespace sluice::http
