// Reading typed fields out of YAML while collecting every error with its file, line and column:
// the shared vocabulary of the configuration loaders.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "policy/utf8.h"
#include "sluice/rate.h"
#include "sluice/result.h"
#include "sluice/time.h"

namespace sluice::policy {

// Collects errors with their place in the file; every check reports and carries on, so one run
// of `sluice validate` lists every problem.
// How an error names its place: "source:line:column: ", or "source: " for a null mark.
inline std::string placeText(const std::string& source, const YAML::Mark& mark) {
  if (mark.is_null()) return source + ": ";
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1) +
         ": ";
}

class Errors {
 public:
  explicit Errors(std::string source) : source_(std::move(source)) {}

  // Control characters in the message (a config value quoted in it) are written as \xNN
  // (printableText): a newline or an escape sequence in a value forged a second error line in
  // `validate`'s output and a log line of its own on reload, and reached terminals raw.
  void add(const YAML::Mark& given, const std::string& message) {
    list_.push_back(printableText(placeText(source_, given.is_null() ? near_ : given) + message));
  }

  // While alive, an error on a node without a place is reported at `node`'s place: a mapping a
  // merge key (<<) built is a new node, which yaml-cpp gives no line, so its errors said only
  // the file. Set it at a mapping whose merged children are read (a lyft descriptor).
  class Near {
   public:
    Near(Errors& errors, const YAML::Node& node) : errors_(errors), saved_(errors.near_) {
      if (!node.Mark().is_null()) errors_.near_ = node.Mark();
    }
    ~Near() { errors_.near_ = saved_; }
    Near(const Near&) = delete;
    Near& operator=(const Near&) = delete;

   private:
    Errors& errors_;
    YAML::Mark saved_;
  };
  void add(const YAML::Node& node, const std::string& message) { add(node.Mark(), message); }
  // The YAML parser's error, at its place, in words a reader of the file can act on.
  void add(const YAML::Exception& error);
  [[nodiscard]] bool empty() const noexcept { return list_.empty(); }
  std::vector<std::string> take() { return std::move(list_); }
  [[nodiscard]] const std::string& source() const noexcept { return source_; }

 private:
  std::string source_;
  std::vector<std::string> list_;
  YAML::Mark near_ = YAML::Mark::null_mark();  // see Near
};

// The place of byte `offset` of `text`, for an error found in the text before YAML reads it.
[[nodiscard]] YAML::Mark markAt(std::string_view text, std::size_t offset);

// The first byte of `text` that a configuration file must not hold, as an error at its place,
// or nothing; checked before YAML reads the text, whose parser would report such a byte as some
// other mistake, elsewhere, or read past it:
// - a byte that is not well-formed UTF-8: names and keys become metric labels, JSON and headers,
//   which must be UTF-8, and a matcher spelled in other bytes could never match what clients
//   send as UTF-8;
// - a control character other than tab and line breaks (a NUL, an escape, C1's U+009B), which
//   YAML does not allow in a file (YAML 1.2, 5.1; NEL, U+0085, it reads as a line break);
// - a carriage return not followed by a line feed: YAML reads it as a line break, yaml-cpp as
//   none, so a file with old Mac line ends would read as one line.
void checkConfigText(std::string_view text, Errors& errors);

// Reports every mapping in the document that names a key twice. The readers below look a key up
// by name and get its first entry, so the second would be silently ignored (YAML says a key is
// unique). Each node is visited once, however often aliases repeat it.
void checkDuplicateKeys(const YAML::Node& root, Errors& errors);

// The place of the key `name` in `map`, or nullopt when `map` is no mapping or lacks the key.
// The key's place, not its value's: a value may be an alias, which has its anchor's place, and
// a block mapping's place is that of its first entry.
[[nodiscard]] std::optional<YAML::Mark> keyMark(const YAML::Node& map, std::string_view name);

// Each reader reports a problem (naming `what`) and returns nullopt / a default, so loading goes on
// and one run of `sluice validate` lists every problem.
void checkKeys(const YAML::Node& map, const std::string& where,
               std::span<const std::string_view> allowed, Errors& errors);
inline void checkKeys(const YAML::Node& map, const std::string& where,
                      std::initializer_list<std::string_view> allowed, Errors& errors) {
  checkKeys(map, where, std::span(allowed.begin(), allowed.size()), errors);
}
bool isMap(const YAML::Node& node, const std::string& what, Errors& errors);
std::optional<std::string> scalar(const YAML::Node& node, const std::string& what, Errors& errors);
// A file or directory path: a scalar without a NUL byte (a YAML "\0" escape), which the system
// calls would take for the path's end, opening another file.
std::optional<std::string> pathValue(const YAML::Node& node, const std::string& what,
                                     Errors& errors);
std::optional<std::uint64_t> unsignedValue(const YAML::Node& node, const std::string& what,
                                           Errors& errors);
std::optional<bool> boolValue(const YAML::Node& node, const std::string& what, Errors& errors);
std::optional<Micros> durationValue(const YAML::Node& node, const std::string& what,
                                    Errors& errors);
std::optional<Rate> rateValue(const YAML::Node& node, const std::string& what, Errors& errors);
std::vector<std::string> stringList(const YAML::Node& node, const std::string& what,
                                    Errors& errors);
// The text's one YAML document (a null node for none). Those after a `---` would be dropped
// without a word (YAML::Load reads the first), so a second one is an error at its place,
// unless it is empty.
YAML::Node onlyDocument(const std::string& text, Errors& errors);
// Where a value that stringList(list) returned is written, for an error at its own line: the
// first entry that is `value`, or `list` itself when it is a single value.
YAML::Node entryOf(const YAML::Node& list, std::string_view value);
// A name that goes into headers, metrics labels, logs or other settings (a limit's, an
// upstream's): not empty, at most kMaxNameBytes, and no control character (C0, DEL or C1),
// which would end a header or log line early, break a Prometheus scrape, or steer the terminal
// a log is read on. The bound keeps every header that names it within what HTTP stacks take: a
// 70,000-byte limit name made a header value Beast refuses by throwing, which ended the process.
inline constexpr std::size_t kMaxNameBytes = 200;
[[nodiscard]] bool isPlainName(std::string_view name) noexcept;

// The most a configuration file (policy, keys, JWT key, lyft file) may hold: far above any real
// one, and a bound on what a reload reads and parses.
inline constexpr std::uintmax_t kMaxConfigFileBytes = 64u << 20;
// The whole file, or why not ("<path>: cannot read the file: ..."). Only a regular file of at
// most kMaxConfigFileBytes is read: a FIFO would block the reading thread (a reload's: an I/O
// loop's) until a writer came, and /dev/zero would grow memory without end.
Result<std::string> readFile(const std::string& path);
// `path` relative to the configuration's directory, unless absolute.
std::string resolvePath(const std::string& base_dir, const std::string& path);

}  // namespace sluice::policy
