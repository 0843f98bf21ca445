#include "gateway/pattern_folding.h"

#include <algorithm>

#include "policy/percent_decoding.h"

namespace sluice::gateway {
namespace {

constexpr std::size_t kNone = std::string_view::npos;

bool isBlank(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

bool isHex(char c) noexcept { return policy::hexDigitValue(c) >= 0; }

// "%XX" at `at`.
bool isByteEscape(std::string_view text, std::size_t at) noexcept {
  return at + 2 < text.size() && text[at] == '%' && isHex(text[at + 1]) && isHex(text[at + 2]);
}

// IIS's "%uXXXX" at `at`: a UTF-16 code unit.
bool isUnicodeEscape(std::string_view text, std::size_t at) noexcept {
  if (at + 5 >= text.size() || text[at] != '%' || (text[at + 1] != 'u' && text[at + 1] != 'U')) {
    return false;
  }
  for (std::size_t k = at + 2; k < at + 6; ++k) {
    if (!isHex(text[k])) return false;
  }
  return true;
}

// The value of hex digits (checked by the caller).
unsigned hexValue(std::string_view digits) noexcept {
  unsigned value = 0;
  for (const char digit : digits)
    value = value * 16 + static_cast<unsigned>(policy::hexDigitValue(digit));
  return value;
}

void appendUtf8(unsigned code_unit, std::string& out) {
  if (code_unit < 0x80) {
    out += static_cast<char>(code_unit);
  } else if (code_unit < 0x800) {
    out += static_cast<char>(0xC0 | (code_unit >> 6));
    out += static_cast<char>(0x80 | (code_unit & 0x3F));
  } else {  // a lone surrogate too: only ASCII matters to the patterns
    out += static_cast<char>(0xE0 | (code_unit >> 12));
    out += static_cast<char>(0x80 | ((code_unit >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_unit & 0x3F));
  }
}

// One level of decoding: %XX and %uXXXX; with `plus_is_space`, '+' is a blank. Anything else,
// a '%' that starts no escape included, stays as it is.
void decodeOnce(std::string_view text, bool plus_is_space, std::string& out) {
  const std::string_view specials = plus_is_space ? "%+" : "%";
  std::size_t i = 0;
  while (i < text.size()) {
    // Runs without a '%' (or '+') are copied whole: most of a target is plain.
    const std::size_t special = std::min(text.find_first_of(specials, i), text.size());
    out.append(text.substr(i, special - i));
    i = special;
    if (i == text.size()) break;
    if (isByteEscape(text, i)) {
      out += static_cast<char>(hexValue(text.substr(i + 1, 2)));
      i += 3;
    } else if (isUnicodeEscape(text, i)) {
      appendUtf8(hexValue(text.substr(i + 2, 4)), out);
      i += 6;
    } else {
      out += text[i] == '+' ? ' ' : text[i];
      i += 1;
    }
  }
}

// Whether `text` still holds an escape, so that decoding it again would change it.
bool hasEscape(std::string_view text) noexcept {
  for (std::size_t at = text.find('%'); at != kNone; at = text.find('%', at + 1)) {
    if (isByteEscape(text, at) || isUnicodeEscape(text, at)) return true;
  }
  return false;
}

bool isContinuation(unsigned char c) noexcept { return c >= 0x80 && c <= 0xBF; }

// An overlong UTF-8 spelling of an ASCII character at `at` (C0 AE, or E0 80 AE, for '.'):
// its length, and the character in `ascii`; 0 when there is none.
std::size_t overlongAscii(std::string_view text, std::size_t at, char& ascii) noexcept {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  if ((byte(at) == 0xC0 || byte(at) == 0xC1) && at + 1 < text.size() &&
      isContinuation(byte(at + 1))) {
    ascii = static_cast<char>(((byte(at) & 0x1F) << 6) | (byte(at + 1) & 0x3F));
    return 2;
  }
  if (byte(at) == 0xE0 && at + 2 < text.size() && (byte(at + 1) == 0x80 || byte(at + 1) == 0x81) &&
      isContinuation(byte(at + 2))) {
    ascii = static_cast<char>(((byte(at + 1) & 0x3F) << 6) | (byte(at + 2) & 0x3F));
    return 3;
  }
  return 0;
}

bool isDigit(char c) noexcept { return c >= '0' && c <= '9'; }

}  // namespace

std::string_view decodedForMatching(std::string_view target, std::string& buffer) {
  // Most targets have nothing to decode: then decoding would copy them unchanged.
  if (target.find_first_of("%+") == kNone) return target;
  buffer.clear();
  const std::size_t query = target.find('?');
  decodeOnce(target.substr(0, query), false, buffer);
  if (query != kNone) {
    buffer += '?';
    decodeOnce(target.substr(query + 1), true, buffer);
  }
  // Encoded again to slip past a filter that decodes once: %253Cscript, %25253Cscript.
  std::string again;
  for (int round = 1; round < kDecodingRounds && hasEscape(buffer); ++round) {
    again.clear();
    decodeOnce(buffer, false, again);
    buffer.swap(again);
  }
  return buffer;
}

bool foldDecoded(std::string_view text, Comments comments, std::string& folded) {
  // Folding never lengthens the text: written in place, without a capacity check per character.
  folded.resize(text.size());
  char* const out = folded.data();
  std::size_t length = 0;
  const bool fold_comments = comments == Comments::kFolded;
  bool folded_a_comment = false;
  // Once a comment is found never to close, none after it can: no more looking, or each `/*`
  // of a target made of them would search to its end (quadratic time on the I/O thread).
  bool comments_close = true;
  std::size_t executable_end = kNone;  // the "*/" of the MySQL /*! */ comment being read
  // The first line break at or after a line comment's start (kNone: none left), looked for
  // again only once passed: each of many "--" would otherwise search the rest of the target.
  std::size_t line_break = 0;
  bool line_break_known = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    const auto byte = static_cast<unsigned char>(c);
    if (byte > ' ' && byte < 0x7F && c != '/' && c != '*' && c != '#' && c != '-') {
      out[length++] = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);  // most characters
      continue;
    }
    if (fold_comments && i == executable_end) {
      executable_end = kNone;
      i += 1;
      c = ' ';
    } else if (fold_comments && executable_end == kNone && comments_close && c == '/' &&
               i + 1 < text.size() && text[i + 1] == '*') {
      // UNION/**/SELECT: a comment between keywords is whitespace to the database.
      const std::size_t end = text.find("*/", i + 2);
      if (end == kNone) {
        comments_close = false;
      } else if (text[i + 2] == '!') {
        // UNION/*!50000SELECT*/: MySQL runs what it holds (after a version, if any).
        std::size_t content = i + 3;
        while (content < end && isDigit(text[content])) ++content;
        executable_end = end;
        i = content - 1;
        c = ' ';
        folded_a_comment = true;
      } else {
        i = end + 1;
        c = ' ';
        folded_a_comment = true;
      }
    } else if (fold_comments &&
               (c == '#' || (c == '-' && i + 1 < text.size() && text[i + 1] == '-'))) {
      // UNION--x\nSELECT, UNION#x\nSELECT: a line comment, when a line break ends it.
      if (!line_break_known || (line_break != kNone && line_break < i)) {
        line_break = text.find_first_of("\r\n", i);
        line_break_known = true;
      }
      if (line_break != kNone) {
        i = line_break;
        c = ' ';
        folded_a_comment = true;
      }
    } else if (const std::size_t spelled = overlongAscii(text, i, c); spelled > 0) {
      i += spelled - 1;
    }
    if (isBlank(c)) {
      if (length > 0 && out[length - 1] == ' ') continue;
      c = ' ';
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      continue;  // a control character: browsers drop it from a URL
    }
    out[length++] = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  }
  folded.resize(length);
  return folded_a_comment;
}

void foldForMatching(std::string_view target, std::string& folded) {
  std::string buffer;
  foldDecoded(decodedForMatching(target, buffer), Comments::kFolded, folded);
}

std::string foldForMatching(std::string_view target) {
  std::string folded;
  foldForMatching(target, folded);
  return folded;
}

}  // namespace sluice::gateway
