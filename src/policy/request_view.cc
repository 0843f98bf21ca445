#include "policy/request_view.h"

#include <algorithm>
#include <vector>

#include "policy/percent_decoding.h"

namespace sluice::policy {

bool equalsIgnoreCase(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return lowerAscii(x) == lowerAscii(y);
         });
}

std::string_view trimBlanks(std::string_view text) noexcept {
  const std::size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

bool isHttpToken(std::string_view name) noexcept {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

namespace {

// True when normalizing would give `path` back unchanged: it starts with '/', has no escapes,
// and every segment is a plain name (no empty, "." or ".." one, no trailing '/'). Most paths
// are, and for them normalizePath skips the decode buffer and the segment list.
bool alreadyNormal(std::string_view path, PathReading reading) noexcept {
  if (path == "/") return true;
  if (path.empty() || path.front() != '/' || path.back() == '/' ||
      path.find('%') != std::string_view::npos ||
      (reading.drops_parameters && path.find(';') != std::string_view::npos) ||
      (reading.backslash_separates && path.find('\\') != std::string_view::npos)) {
    return false;
  }
  std::size_t start = 1;
  while (true) {
    const std::size_t slash = path.find('/', start);
    const std::string_view segment = path.substr(start, slash - start);
    if (segment.empty() || segment == "." || segment == "..") return false;
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

}  // namespace

std::string normalizePath(std::string_view raw, PathReading reading) {
  // A fragment is never sent, but a client may: backends (and nginx's $uri) drop it, so a limit
  // on /login must match /login#x.
  raw = raw.substr(0, raw.find_first_of("?#"));
  if (alreadyNormal(raw, reading)) return std::string(raw);
  // Decode. Segment parameters go before decoding, as servlet containers drop them before
  // mapping (an encoded ';', %3B, is data), and an encoded slash stays encoded unless the
  // reading takes it for a boundary.
  std::string decoded;
  decoded.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == ';' && reading.drops_parameters) {
      // Up to the next separator: a '\' is one too, when the reading takes it for one.
      const std::size_t end = raw.find_first_of(reading.backslash_separates ? "/\\" : "/", i);
      i = std::min(end, raw.size()) - 1;
    } else if (raw[i] == '\\' && reading.backslash_separates) {
      decoded += '/';
    } else if (raw[i] == '%' && i + 2 < raw.size() && hexDigitValue(raw[i + 1]) >= 0 &&
               hexDigitValue(raw[i + 2]) >= 0) {
      const char c = static_cast<char>(hexDigitValue(raw[i + 1]) * 16 + hexDigitValue(raw[i + 2]));
      if (c == '/' && !reading.encoded_slash_separates) {
        decoded += "%2F";
      } else {
        decoded += c;
      }
      i += 2;
    } else {
      decoded += raw[i];
    }
  }
  // Resolve segments.
  std::vector<std::string_view> segments;
  std::string_view rest(decoded);
  while (!rest.empty()) {
    const std::size_t slash = rest.find('/');
    const std::string_view segment = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (segment.empty() || segment == ".") continue;
    if (segment == "..") {
      if (!segments.empty()) segments.pop_back();
      continue;
    }
    segments.push_back(segment);
  }
  std::string path;
  for (std::string_view segment : segments) {
    path += '/';
    path += segment;
  }
  if (path.empty()) path = "/";
  return path;
}

void RequestView::setPath(std::string_view raw) {
  path = normalizePath(raw);
  other_paths.clear();
  folded_path.clear();
  const std::string_view sent = raw.substr(0, raw.find_first_of("?#"));
  const bool slashes =
      sent.find("%2F") != std::string_view::npos || sent.find("%2f") != std::string_view::npos;
  const bool parameters = sent.find(';') != std::string_view::npos;
  const bool backslashes = sent.find('\\') != std::string_view::npos;
  if (!slashes && !parameters && !backslashes) return;  // one reading: most paths
  // Every combination of the readings this path calls for, the one taking all of them last.
  for (unsigned mask = 1; mask < 8; ++mask) {
    const PathReading reading{.encoded_slash_separates = (mask & 1) != 0,
                              .drops_parameters = (mask & 2) != 0,
                              .backslash_separates = (mask & 4) != 0};
    if ((reading.encoded_slash_separates && !slashes) ||
        (reading.drops_parameters && !parameters) ||
        (reading.backslash_separates && !backslashes)) {
      continue;
    }
    std::string other = normalizePath(raw, reading);
    if (other == path) continue;
    if (reading.encoded_slash_separates == slashes && reading.drops_parameters == parameters &&
        reading.backslash_separates == backslashes) {
      folded_path = other;  // every reading this path has
    }
    if (std::find(other_paths.begin(), other_paths.end(), other) == other_paths.end()) {
      other_paths.push_back(std::move(other));
    }
  }
}

std::optional<std::string_view> RequestView::header(std::string_view name) const noexcept {
  for (const auto& [key, value] : headers) {
    if (equalsIgnoreCase(key, name)) return std::string_view(value);
  }
  return std::nullopt;
}

std::optional<std::string_view> RequestView::agreedHeader(std::string_view name, bool& in_doubt,
                                                          LineReading read) const {
  std::optional<std::string_view> agreed;
  for (const auto& [key, value] : headers) {
    if (!equalsIgnoreCase(key, name)) continue;
    const std::optional<std::string_view> found =
        read == nullptr ? std::optional<std::string_view>(value) : read(name, value);
    if (!found) continue;
    if (!agreed) {
      agreed = found;
    } else if (*agreed != *found) {
      in_doubt = true;
      return std::nullopt;
    }
  }
  return agreed;
}

std::string RequestView::joinedHeader(std::string_view name) const {
  std::string joined;
  for (const auto& [key, value] : headers) {
    if (!equalsIgnoreCase(key, name)) continue;
    if (!joined.empty()) joined += ", ";
    joined += value;
  }
  return joined;
}

}  // namespace sluice::policy
