#include "http/json_string.h"

#include "policy/utf8.h"

namespace sluice::http {

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
      const policy::Utf8Sequence sequence = policy::utf8SequenceAt(text, i);
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
