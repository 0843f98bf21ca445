#include "http/json_string.h"

namespace sluice::http {

void appendJsonString(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  // Runs of bytes that need no escape (nearly every name and value) go in one append.
  std::size_t run_start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte != '"' && byte != '\\') continue;
    out.append(text.data() + run_start, i - run_start);
    run_start = i + 1;
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
