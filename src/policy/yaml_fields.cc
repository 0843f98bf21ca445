#include "policy/yaml_fields.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <yaml-cpp/depthguard.h>

#include "policy/duration.h"
#include "policy/utf8.h"

namespace sluice::policy {

// Reports keys of `map` not in `allowed`: a misspelt key would otherwise be silently ignored.
void checkKeys(const YAML::Node& map, const std::string& where,
               std::span<const std::string_view> allowed, Errors& errors) {
  for (const auto& entry : map) {
    const std::string key = entry.first.Scalar();
    bool known = false;
    for (std::string_view name : allowed) known = known || key == name;
    if (!known) {
      std::string list;
      for (std::string_view name : allowed) list += (list.empty() ? "" : ", ") + std::string(name);
      errors.add(entry.first,
                 "unknown key \"" + key + "\" in " + where + " (expected " + list + ")");
    }
  }
}

void checkDuplicateKeys(const YAML::Node& root, Errors& errors) {
  std::vector<YAML::Node> to_visit{root};
  std::unordered_set<std::size_t> visited;  // by position in the text: an alias is its anchor
  while (!to_visit.empty()) {
    const YAML::Node node = to_visit.back();
    to_visit.pop_back();
    if (!(node.IsMap() || node.IsSequence()) || !visited.insert(node.Mark().pos).second) continue;
    if (node.IsSequence()) {
      for (const auto& item : node) to_visit.push_back(item);
      continue;
    }
    // By name: comparing each key with every earlier one took 12 s for a mapping of 80,000.
    std::unordered_map<std::string, YAML::Mark> keys;
    for (const auto& entry : node) {
      const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : std::string();
      if (!key.empty()) {
        const auto [earlier, fresh] = keys.emplace(key, entry.first.Mark());
        if (!fresh) {
          errors.add(entry.first, "key \"" + key +
                                      "\" appears twice in one mapping (first at line " +
                                      std::to_string(earlier->second.line + 1) + ")");
        }
      }
      to_visit.push_back(entry.second);
    }
  }
}

std::optional<YAML::Mark> keyMark(const YAML::Node& map, std::string_view name) {
  if (!map.IsMap()) return std::nullopt;
  for (const auto& entry : map) {
    if (entry.first.IsScalar() && entry.first.Scalar() == name) return entry.first.Mark();
  }
  return std::nullopt;
}

bool isPlainName(std::string_view name) noexcept {
  if (name.empty() || name.size() > kMaxNameBytes) return false;
  for (std::size_t at = 0; at < name.size(); ++at) {
    if (controlCharacterAt(name, at)) return false;
  }
  return true;
}

bool isMap(const YAML::Node& node, const std::string& what, Errors& errors) {
  if (node.IsMap()) return true;
  errors.add(node, what + " must be a mapping");
  return false;
}

std::optional<std::string> scalar(const YAML::Node& node, const std::string& what, Errors& errors) {
  if (node.IsScalar()) return node.Scalar();
  errors.add(node, what + " must be a single value");
  return std::nullopt;
}

std::optional<std::string> pathValue(const YAML::Node& node, const std::string& what,
                                     Errors& errors) {
  auto text = scalar(node, what, errors);
  if (!text || text->find('\0') == std::string::npos) return text;
  errors.add(node, what + " holds a NUL byte, which no path can");
  return std::nullopt;
}

std::optional<std::uint64_t> unsignedValue(const YAML::Node& node, const std::string& what,
                                           Errors& errors) {
  const auto text = scalar(node, what, errors);
  if (!text) return std::nullopt;
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size()) {
    errors.add(node, what + " must be a whole number, not \"" + *text + "\"");
    return std::nullopt;
  }
  return value;
}

std::optional<bool> boolValue(const YAML::Node& node, const std::string& what, Errors& errors) {
  const auto text = scalar(node, what, errors);
  if (!text) return std::nullopt;
  // YAML 1.1's spellings, in any case (lyft/ratelimit's YAML reader takes True and TRUE).
  std::string lower = *text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "true" || lower == "yes" || lower == "on") return true;
  if (lower == "false" || lower == "no" || lower == "off") return false;
  errors.add(node, what + " must be true or false, not \"" + *text + "\"");
  return std::nullopt;
}

std::optional<Micros> durationValue(const YAML::Node& node, const std::string& what,
                                    Errors& errors) {
  const auto text = scalar(node, what, errors);
  if (!text) return std::nullopt;
  Result<Micros> parsed = parseDuration(*text);
  if (!parsed.ok()) {
    errors.add(node, what + ": " + parsed.error());
    return std::nullopt;
  }
  return parsed.value();
}

std::optional<Rate> rateValue(const YAML::Node& node, const std::string& what, Errors& errors) {
  const auto text = scalar(node, what, errors);
  if (!text) return std::nullopt;
  Result<Rate> parsed = Rate::parse(*text);
  if (!parsed.ok()) {
    errors.add(node, what + ": " + parsed.error());
    return std::nullopt;
  }
  return parsed.value();
}

// A scalar or a sequence of scalars, as a list.
std::vector<std::string> stringList(const YAML::Node& node, const std::string& what,
                                    Errors& errors) {
  std::vector<std::string> values;
  if (node.IsScalar()) {
    values.push_back(node.Scalar());
  } else if (node.IsSequence()) {
    for (const auto& item : node) {
      if (auto text = scalar(item, what + " entry", errors)) values.push_back(*text);
    }
  } else {
    errors.add(node, what + " must be a value or a list of values");
  }
  return values;
}

YAML::Node onlyDocument(const std::string& text, Errors& errors) {
  std::vector<YAML::Node> documents = YAML::LoadAll(text);
  if (documents.empty()) return YAML::Node();
  // An empty one (a `---` at the end, as some generators write) drops nothing.
  for (std::size_t i = 1; i < documents.size(); ++i) {
    if (documents[i].IsNull()) continue;
    errors.add(documents[i].Mark(), "a second YAML document (after ---): the file holds one");
    break;
  }
  return documents.front();
}

YAML::Node entryOf(const YAML::Node& list, std::string_view value) {
  if (list.IsSequence()) {
    for (const auto& item : list) {
      if (item.IsScalar() && item.Scalar() == value) return item;
    }
  }
  return list;
}

Result<std::string> readFile(const std::string& path) {
  const std::string cannot = path + ": cannot read the file";
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (ec) return Error{cannot + ": " + ec.message()};
  if (!std::filesystem::is_regular_file(status)) return Error{cannot + ": not a regular file"};
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return Error{cannot + ": " + ec.message()};
  if (size > kMaxConfigFileBytes) return Error{cannot + ": larger than 64 MiB"};
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  // The stream keeps no reason, but its open(2) leaves one in errno (a permission, mostly).
  if (!in) return Error{cannot + (errno != 0 ? ": " + std::string(std::strerror(errno)) : "")};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string resolvePath(const std::string& base_dir, const std::string& path) {
  if (path.empty() || path.front() == '/' || base_dir.empty()) return path;
  return base_dir + "/" + path;
}

YAML::Mark markAt(std::string_view text, std::size_t offset) {
  YAML::Mark mark = YAML::Mark::null_mark();
  const std::string_view before = text.substr(0, offset);
  mark.pos = static_cast<int>(offset);
  mark.line = static_cast<int>(std::count(before.begin(), before.end(), '\n'));
  std::size_t line_start = before.rfind('\n') + 1;  // 0 on the first line
  // yaml-cpp counts the first line's columns after a byte order mark, so its errors and these
  // agree.
  constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
  if (line_start == 0 && before.starts_with(kByteOrderMark)) line_start = kByteOrderMark.size();
  mark.column = static_cast<int>(offset - line_start);
  return mark;
}

void checkConfigText(std::string_view text, Errors& errors) {
  const std::size_t not_utf8 = firstIllFormedUtf8(text);
  const std::string_view checked = text.substr(0, not_utf8);
  for (std::size_t at = 0; at < checked.size(); ++at) {
    if (checked[at] == '\r' && (at + 1 == text.size() || text[at + 1] != '\n')) {
      errors.add(markAt(text, at),
                 "a line ends in a carriage return alone: end lines with LF or CR LF");
      return;
    }
    // YAML's own line break NEL (U+0085) aside, as YAML allows it.
    const std::optional<unsigned> control = controlCharacterAt(checked, at);
    if (control && *control != '\t' && *control != '\n' && *control != '\r' && *control != 0x85) {
      char code[8];
      std::snprintf(code, sizeof code, "U+%04X", *control);
      errors.add(markAt(text, at), std::string("the file holds a control character (") + code +
                                       "), which YAML does not allow");
      return;
    }
  }
  if (not_utf8 != std::string_view::npos)
    errors.add(markAt(text, not_utf8), "the file is not UTF-8");
}

void Errors::add(const YAML::Exception& error) {
  if (dynamic_cast<const YAML::DeepRecursion*>(&error) != nullptr) {
    add(error.mark, "the YAML is nested too deeply (brackets, braces or indents) to be read");
  } else {
    add(error.mark, error.msg);
  }
}

}  // namespace sluice::policy
