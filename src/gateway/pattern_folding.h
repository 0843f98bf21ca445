// How the DDoS guard reads a request target before looking for its suspicious patterns, and how
// it reads the patterns themselves: as the software behind the gateway may read them, so that a
// spelling the backend, its database or a browser would undo does not hide a pattern.
//   - Percent escapes are decoded (a query's '+' is a blank), up to four times, against repeated
//     encoding; so are IIS's %uXXXX escapes, its full-width ASCII (U+FF01..U+FF5E) read as ASCII.
//   - In the path, overlong UTF-8 spellings of ASCII characters (%C0%AE for '.') are read as the
//     character, as old decoders did. Not in the query: the same bytes are text in EUC-KR, GBK
//     and Shift-JIS, and a Korean search for "JavaScript은" would read "javascript:".
//   - Control characters other than blanks are dropped (old browsers skipped a NUL inside
//     "javascript:"), letters are lower case, and runs of blanks are one space.
// Comments and blanks have several readings, each matched in turn (Reading):
//   - to a database, an SQL comment is a blank: /* */ (but MySQL and MariaDB run what /*! */ and
//     /*M! */ hold), and "--" or "#" up to a line break, which some databases read as comments
//     and others do not. A comment never closed is kept: skipping to the end would hide all that
//     follows it;
//   - to a browser, a comment hides nothing (`/*<script>*/` is a script): the markers are blanks
//     and what they hold is kept. This also reads comments nested as PostgreSQL nests them;
//   - URL parsers remove tabs and line breaks wherever they are ("jav%09ascript:").
#pragma once

#include <string>
#include <string_view>

namespace sluice::gateway {

// Decoding rounds in all: a target encoded up to four times is seen as plain text. Bounded, for
// each round copies the target (a chain of %25s would otherwise take as many rounds as it is
// long).
inline constexpr int kDecodingRounds = 4;

// A target decoded as above, and where its query starts: the '?' that started it in the target,
// not one decoded from the path's %3F.
struct DecodedTarget {
  DecodedTarget(std::string_view decoded, std::size_t query) : text(decoded), query_at(query) {}
  explicit DecodedTarget(std::string_view decoded) : text(decoded), query_at(decoded.find('?')) {}
  std::string_view text;
  std::size_t query_at;  // its '?' in text; npos: no query
};

// `target` decoded. Its text is `target` itself when there is nothing to decode, else a view of
// `buffer`, which holds the decoding.
[[nodiscard]] DecodedTarget decodedForMatching(std::string_view target, std::string& buffer);

enum class Comments {
  kBlockFolded,   // a closed /* */ is a blank; "--" and "#" are text
  kAllFolded,     // and so is "--" or "#" up to a line break
  kMarkersBlank,  // "/*", "*/", "--" and "#" are blanks, and what comments hold is kept
};

struct Reading {
  Comments comments = Comments::kBlockFolded;
  bool url_blanks_removed = false;  // tab, CR and LF removed rather than a blank
};

// What decoded text holds that the readings read differently.
enum Holds : unsigned {
  kHoldsBlockComment = 1,  // "/*"
  kHoldsLineComment = 2,   // "--" or "#"
  kHoldsLineBreak = 4,     // CR or LF
  kHoldsTab = 8,
};
[[nodiscard]] unsigned whatItHolds(std::string_view decoded) noexcept;

// Folds decoded text into `folded` (replacing what it held) in one reading. Returns what the
// text holds, as whatItHolds(decoded.text) would, found along the way: no second pass.
unsigned foldDecoded(DecodedTarget decoded, Reading reading, std::string& folded);

// Whether decoded text holds a control character other than a blank, or an overlong UTF-8
// spelling (read as the ASCII it spells, a control character perhaps): what a configured
// pattern may not hold, since targets are read without them.
[[nodiscard]] bool holdsControlOrOverlong(std::string_view decoded) noexcept;

// Decoded, then folded in the first reading. Never throws but for allocation.
[[nodiscard]] std::string foldForMatching(std::string_view target);
// The same into `folded` (replacing what it held), so a caller can keep one buffer.
void foldForMatching(std::string_view target, std::string& folded);

}  // namespace sluice::gateway
