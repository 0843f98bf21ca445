// Telling well-formed UTF-8 from bytes that are not (Unicode 15, 3.9), for what Sluice writes
// where UTF-8 is required (JSON bodies, metric labels) and reads where it must be (the config
// file, lyft files).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::policy {

struct Utf8Sequence {
  std::size_t length;  // well-formed: the whole sequence; ill-formed: the bytes to replace
  bool well_formed;
};

// The UTF-8 sequence that starts at text[at], a byte >= 0x80 (Unicode 15, table 3-7). An
// ill-formed one spans its lead byte and the continuation bytes that fit it, so that each such
// maximal subpart becomes one U+FFFD (Unicode 15, 3.9): a stray continuation byte, a lead byte
// that can never start one (C0, C1, F5..FF: overlong or past U+10FFFF), or a sequence cut short.
// The second byte's narrower ranges after E0, ED, F0 and F4 refuse overlong encodings,
// surrogates (U+D800..U+DFFF) and code points past U+10FFFF.
[[nodiscard]] Utf8Sequence utf8SequenceAt(std::string_view text, std::size_t at) noexcept;

// The offset of the first byte of `text` that is not part of well-formed UTF-8, or npos.
[[nodiscard]] std::size_t firstIllFormedUtf8(std::string_view text) noexcept;

// The control character that starts at byte `at` of UTF-8 `text`, or nothing: C0 (U+0000 to
// U+001F), DEL (U+007F), or C1 (U+0080 to U+009F, two bytes in UTF-8), which terminals also
// obey (U+009B starts an escape sequence).
[[nodiscard]] std::optional<unsigned> controlCharacterAt(std::string_view text,
                                                         std::size_t at) noexcept;

// `text` with each control character (as controlCharacterAt finds them) written as \xNN, for a
// line of output or log that carries text from a file: a newline or an escape sequence in a
// config value forged a second error line, or a log line, and reached terminals raw.
[[nodiscard]] std::string printableText(std::string_view text);

}  // namespace sluice::policy
