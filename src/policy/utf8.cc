#include "policy/utf8.h"

namespace sluice::policy {

Utf8Sequence utf8SequenceAt(std::string_view text, std::size_t at) noexcept {
  const auto lead = static_cast<unsigned char>(text[at]);
  std::size_t length = 0;
  unsigned char low = 0x80;  // the range of the second byte
  unsigned char high = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;
    if (lead == 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;
  } else {
    return {1, false};
  }
  for (std::size_t k = 1; k < length; ++k) {
    if (at + k >= text.size()) return {k, false};
    const auto byte = static_cast<unsigned char>(text[at + k]);
    if (byte < low || byte > high) return {k, false};
    low = 0x80;
    high = 0xbf;
  }
  return {length, true};
}

std::optional<unsigned> controlCharacterAt(std::string_view text, std::size_t at) noexcept {
  const auto byte = static_cast<unsigned char>(text[at]);
  if (byte < 0x20 || byte == 0x7f) return byte;
  if (byte == 0xc2 && at + 1 < text.size()) {
    const auto next = static_cast<unsigned char>(text[at + 1]);
    if (next >= 0x80 && next <= 0x9f) return next;  // U+0080..U+009F is C2 80..C2 9F
  }
  return std::nullopt;
}

std::size_t firstIllFormedUtf8(std::string_view text) noexcept {
  std::size_t at = 0;
  while (at < text.size()) {
    if (static_cast<unsigned char>(text[at]) < 0x80) {
      ++at;
      continue;
    }
    const Utf8Sequence sequence = utf8SequenceAt(text, at);
    if (!sequence.well_formed) return at;
    at += sequence.length;
  }
  return std::string_view::npos;
}

std::string printableText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t at = 0; at < text.size();) {
    const std::optional<unsigned> control = controlCharacterAt(text, at);
    if (!control) {
      out += text[at++];
      continue;
    }
    static constexpr char kHex[] = "0123456789ABCDEF";
    out += "\\x";
    out += kHex[(*control >> 4) & 0xF];
    out += kHex[*control & 0xF];
    at += *control >= 0x80 ? 2 : 1;  // C1 characters take two bytes in UTF-8
  }
  return out;
}

}  // namespace sluice::policy
