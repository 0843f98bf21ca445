// How the DDoS guard reads a request target before looking for its suspicious patterns, and how
// it reads the patterns themselves: as the software behind the gateway may read them, so that a
// spelling the backend, its database or a browser would undo does not hide a pattern.
//   - Percent escapes are decoded (a query's '+' is a blank), up to four times, against repeated
//     encoding; so are IIS's %uXXXX escapes.
//   - Overlong UTF-8 spellings of ASCII characters (%C0%AE for '.') are read as the character,
//     as old decoders did.
//   - Control characters other than blanks are dropped: browsers remove them from a URL
//     ("javas\0cript:").
//   - Letters are lower case, and runs of blanks are one space.
//   - SQL comments are one space, as they are to a database: /* */, and "--" or "#" up to a line
//     break. A MySQL /*! */ comment is code to MySQL: its markers are a space, its content kept.
//     A comment never closed is kept, since skipping to the end would hide all that follows.
// Since a comment can also hide what it holds (a browser reads `/*<script>*/` as a script),
// the guard also matches the folding with comments kept (Comments::kKept).
#pragma once

#include <string>
#include <string_view>

namespace sluice::gateway {

// Decoding rounds in all: a target encoded up to four times is seen as plain text. Bounded, for
// each round copies the target (a chain of %25s would otherwise take as many rounds as it is
// long).
inline constexpr int kDecodingRounds = 4;

// `target` decoded as above. Returns `target` itself when there is nothing to decode, else a
// view of `buffer`, which holds the decoding.
[[nodiscard]] std::string_view decodedForMatching(std::string_view target, std::string& buffer);

enum class Comments { kFolded, kKept };

// Folds decoded text into `folded` (replacing what it held). Returns whether an SQL comment was
// folded, so that the text with comments kept reads differently.
bool foldDecoded(std::string_view decoded, Comments comments, std::string& folded);

// Decoded, then folded with comments as one space. Never throws but for allocation.
[[nodiscard]] std::string foldForMatching(std::string_view target);
// The same into `folded` (replacing what it held), so a caller can keep one buffer.
void foldForMatching(std::string_view target, std::string& folded);

}  // namespace sluice::gateway
