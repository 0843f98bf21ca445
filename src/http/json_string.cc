#include "http/json_string.h"

namespace sluice::http {

namespace {

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
Utf8Sequence utf8SequenceAt(std::string_view text, std::size_t at) {
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

}  // namespace

void appendJsonString(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  // Runs of bytes that need no change (nearly every name and value, all ASCII) go in one append.
  std::size_t run_start = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x80 && byte != '"' && byte != '\\') {
      ++i;
      continue;
    }
    if (byte >= 0x80) {
      const Utf8Sequence sequence = utf8SequenceAt(text, i);
      if (!sequence.well_formed) {
        // JSON text is UTF-8 (RFC 8259 8.1): a parser refuses the whole body over one bad byte.
        out.append(text.data() + run_start, i - run_start);
        out += "\\ufffd";
        run_start = i + sequence.length;
      }
      i += sequence.length;
      continue;
    }
    out.append(text.data() + run_start, i - run_start);
    run_start = ++i;
    if (byte >= 0x20) {
      out += '\\';
      out += static_cast<char>(byte);
    } else {
      out += "\\u00";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    }
  }
  out.append(text.data() + run_start, text.size() - run_start);
  out += '"';
}

}  // namespace sluice::http
