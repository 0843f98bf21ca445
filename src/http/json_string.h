// JSON string literals for the bodies Sluice writes by hand (the decision API, denials).
#pragma once

#include <string>
#include <string_view>

namespace sluice::http {

// Appends `text` as a JSON string literal, quotes included: '"' and '\\' escaped, control
// characters as \u00XX, each ill-formed UTF-8 sequence (a stray byte, a sequence cut short, an
// overlong encoding, a surrogate, past U+10FFFF) as \ufffd, every other byte as it is. The
// literal is valid UTF-8 whatever `text` holds (names and messages from files, Latin-1 keys).
void appendJsonString(std::string& out, std::string_view text);

}  // namespace sluice::http
