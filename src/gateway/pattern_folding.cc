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
// a '%' that starts no escape included, stays as it is. Not policy::percentDecoded, which the
// limits use: %uXXXX is IIS's alone, and a limit's key must not read it.
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
      unsigned unit = hexValue(text.substr(i + 2, 4));
      // IIS maps full-width ASCII ("%uFF1C" for '<') to ASCII ("best fit").
      if (unit >= 0xFF01 && unit <= 0xFF5E) unit -= 0xFEE0;
      appendUtf8(unit, out);
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

// An overlong UTF-8 spelling of an ASCII character at `at` (C0 AE, E0 80 AE or F0 80 80 AE for
// '.'): its length, and the character in `ascii`; 0 when there is none.
std::size_t overlongAscii(std::string_view text, std::size_t at, char& ascii) noexcept {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  // The lead byte's own bits are zero in every overlong spelling of ASCII but the two-byte one,
  // and the continuation byte before the last holds at most one bit.
  std::size_t length = 0;
  if (byte(at) == 0xC0 || byte(at) == 0xC1) length = 2;
  if (byte(at) == 0xE0) length = 3;
  if (byte(at) == 0xF0) length = 4;
  if (length == 0 || at + length > text.size()) return 0;
  for (std::size_t k = at + 1; k < at + length; ++k) {
    if (!isContinuation(byte(k))) return 0;
  }
  for (std::size_t k = at + 1; k + 2 < at + length; ++k) {
    if (byte(k) != 0x80) return 0;
  }
  const unsigned high = length == 2 ? byte(at) & 0x1F : byte(at + length - 2) & 0x3F;
  if (length > 2 && high > 1) return 0;
  ascii = static_cast<char>((high << 6) | (byte(at + length - 1) & 0x3F));
  return length;
}

bool isDigit(char c) noexcept { return c >= '0' && c <= '9'; }

// One pass over decoded text in one reading. Folding never lengthens the text, so it is written
// in place, without a capacity check per character.
class Folder {
 public:
  Folder(DecodedTarget decoded, Reading reading, std::string& folded)
      : text_(decoded.text), reading_(reading), folded_(folded), query_(decoded.query_at) {
    folded_.resize(text_.size());
    out_ = folded_.data();
  }

  // Returns what the text holds (Holds flags), as whatItHolds would say, found along the way.
  unsigned run() {
    for (i_ = 0; i_ < text_.size(); ++i_) {
      const char c = text_[i_];
      const auto byte = static_cast<unsigned char>(c);
      if (byte > ' ' && byte < 0x7F && c != '/' && c != '*' && c != '#' && c != '-') {
        put(c);  // most characters
      } else {
        step(c);
      }
    }
    folded_.resize(length_);
    return holds_;
  }

 private:
  void step(char c) {
    if (c == '/' && next() == '*') {
      holds_ |= kHoldsBlockComment;
      if (commentStart()) return;
    } else if (c == '*' && next() == '/') {
      if (commentEnd()) return;
    } else if (c == '#' || (c == '-' && next() == '-')) {
      holds_ |= kHoldsLineComment;
      if (lineComment()) return;
    } else if (c == '\n' || c == '\r' || c == '\t') {
      holds_ |= c == '\t' ? kHoldsTab : kHoldsLineBreak;
      if (reading_.url_blanks_removed) return;
    } else if (i_ < query_) {
      if (const std::size_t spelled = overlongAscii(text_, i_, c); spelled > 0) i_ += spelled - 1;
    }
    const auto byte = static_cast<unsigned char>(c);
    if (isBlank(c)) return blank();
    if (byte < 0x20 || byte == 0x7F) return;  // a control character
    put(c);
  }

  // At "/*". Whether it was read as (the start of) a comment.
  bool commentStart() {
    const std::size_t executable = executableContent(i_ + 2);
    if (reading_.comments == Comments::kMarkersBlank) {
      i_ = (executable != kNone ? executable : i_ + 2) - 1;
      blank();
      return true;
    }
    if (executable_end_ != kNone || !comments_close_) return false;
    const std::size_t end = text_.find("*/", i_ + 2);
    if (end == kNone) {
      // None after it can close either: no more looking, or each `/*` of a target made of them
      // would search to its end (quadratic time on the I/O thread).
      comments_close_ = false;
      return false;
    }
    if (executable != kNone && executable <= end) {
      executable_end_ = end;  // UNION/*!50000SELECT*/: the content is read
      i_ = executable - 1;
    } else {
      holds_ |= whatItHolds(text_.substr(i_ + 2, end - i_ - 2));  // what the skip passes over
      i_ = end + 1;                                               // UNION/**/SELECT
      // SLEEP/**/(5): no blank before a parenthesis, so that "sleep(" matches it. (A pattern
      // "sleep (" would match what it takes a blank and a parenthesis to say in plain text.)
      if (end + 2 < text_.size() && text_[end + 2] == '(') return true;
    }
    blank();
    return true;
  }

  // After "/*" at `at`: where a MySQL "!" or MariaDB "M!" comment's content starts, past its
  // version number; kNone for an ordinary comment.
  [[nodiscard]] std::size_t executableContent(std::size_t at) const noexcept {
    if (at < text_.size() && (text_[at] == 'M' || text_[at] == 'm') && at + 1 < text_.size() &&
        text_[at + 1] == '!') {
      ++at;
    }
    if (at >= text_.size() || text_[at] != '!') return kNone;
    ++at;
    while (at < text_.size() && isDigit(text_[at])) ++at;
    return at;
  }

  // At "*/".
  bool commentEnd() {
    if (reading_.comments != Comments::kMarkersBlank && i_ != executable_end_) return false;
    executable_end_ = kNone;
    i_ += 1;
    blank();
    return true;
  }

  // At "--" or "#".
  bool lineComment() {
    if (reading_.comments == Comments::kMarkersBlank) {
      if (text_[i_] == '-') ++i_;
      blank();
      return true;
    }
    if (reading_.comments != Comments::kAllFolded || executable_end_ != kNone) return false;
    // The first line break at or after it, looked for again only once passed: each of many "--"
    // would otherwise search the rest of the target.
    if (!line_break_known_ || (line_break_ != kNone && line_break_ < i_)) {
      line_break_ = text_.find_first_of("\r\n", i_);
      line_break_known_ = true;
    }
    if (line_break_ == kNone) return false;  // to the end: it would hide all that follows
    i_ = line_break_;
    blank();
    return true;
  }

  [[nodiscard]] char next() const noexcept { return i_ + 1 < text_.size() ? text_[i_ + 1] : '\0'; }
  void blank() noexcept {
    if (length_ == 0 || out_[length_ - 1] != ' ') out_[length_++] = ' ';
  }
  void put(char c) noexcept {
    out_[length_++] = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  }

  std::string_view text_;
  Reading reading_;
  std::string& folded_;
  std::size_t query_;  // where the query starts (kNone: none)
  char* out_ = nullptr;
  std::size_t length_ = 0;
  std::size_t i_ = 0;
  unsigned holds_ = 0;
  bool comments_close_ = true;
  std::size_t executable_end_ = kNone;  // the "*/" of the /*! */ comment being read
  std::size_t line_break_ = 0;
  bool line_break_known_ = false;
};

}  // namespace

DecodedTarget decodedForMatching(std::string_view target, std::string& buffer) {
  const std::size_t query = target.find('?');
  // Most targets have nothing to decode: then decoding would copy them unchanged.
  if (target.find_first_of("%+") == kNone) return {target, query};
  // The path and the query are decoded apart, so that a %3F in the path does not end it.
  thread_local std::string path;
  thread_local std::string arguments;
  thread_local std::string again;
  path.clear();
  arguments.clear();
  decodeOnce(target.substr(0, query), false, path);
  if (query != kNone) decodeOnce(target.substr(query + 1), true, arguments);
  // Encoded again to slip past a filter that decodes once: %253Cscript, %25253Cscript.
  for (int round = 1; round < kDecodingRounds; ++round) {
    bool decoded = false;
    for (std::string* part : {&path, &arguments}) {
      if (!hasEscape(*part)) continue;
      again.clear();
      decodeOnce(*part, false, again);
      part->swap(again);
      decoded = true;
    }
    if (!decoded) break;
  }
  buffer = path;
  if (query == kNone) return {buffer, kNone};
  buffer += '?';
  buffer += arguments;
  return {buffer, path.size()};
}

unsigned whatItHolds(std::string_view text) noexcept {
  unsigned holds = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char next = i + 1 < text.size() ? text[i + 1] : '\0';
    switch (text[i]) {
      case '/':
        if (next == '*') holds |= kHoldsBlockComment;
        break;
      case '-':
        if (next == '-') holds |= kHoldsLineComment;
        break;
      case '#':
        holds |= kHoldsLineComment;
        break;
      case '\r':
      case '\n':
        holds |= kHoldsLineBreak;
        break;
      case '\t':
        holds |= kHoldsTab;
        break;
      default:
        break;
    }
  }
  return holds;
}

bool holdsControlOrOverlong(std::string_view text) noexcept {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    char ascii = 0;
    if ((byte < 0x20 && !isBlank(text[i])) || byte == 0x7F || overlongAscii(text, i, ascii) > 0) {
      return true;
    }
  }
  return false;
}

unsigned foldDecoded(DecodedTarget decoded, Reading reading, std::string& folded) {
  return Folder(decoded, reading, folded).run();
}

void foldForMatching(std::string_view target, std::string& folded) {
  std::string buffer;
  foldDecoded(decodedForMatching(target, buffer), Reading{}, folded);
}

std::string foldForMatching(std::string_view target) {
  std::string folded;
  foldForMatching(target, folded);
  return folded;
}

}  // namespace sluice::gateway
