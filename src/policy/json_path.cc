#include "policy/json_path.h"

#include <cstdio>
#include <utility>

#include <boost/json/serialize.hpp>

namespace sluice::policy {
namespace {

// Nine digits is far beyond any array a request document holds, and keeps the arithmetic clear
// of overflow without checks.
constexpr std::size_t kMaxIndexDigits = 9;

bool isNameChar(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

bool isDigit(char c) noexcept { return c >= '0' && c <= '9'; }

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  // The steps after `$`, or the first error.
  Result<std::vector<std::variant<std::string, std::size_t>>> steps() {
    std::vector<std::variant<std::string, std::size_t>> steps;
    if (!consume('$')) return fail("expected '$' to start the path");
    while (position_ < text_.size()) {
      if (consume('.')) {
        if (peekIs('.'))
          return fail("expected a name after '.' (recursive descent is not supported)");
        std::string name;
        while (position_ < text_.size() && isNameChar(text_[position_])) name += text_[position_++];
        if (name.empty()) {
          return fail(
              "expected a name of letters, digits, '_' or '-' after '.' (use ['...'] "
              "for other names)");
        }
        steps.emplace_back(std::move(name));
      } else if (consume('[')) {
        if (peekIs('\'') || peekIs('"')) {
          Result<std::string> name = quotedName();
          if (!name.ok()) return Error{name.error()};
          steps.emplace_back(std::move(name).value());
        } else if (position_ < text_.size() && isDigit(text_[position_])) {
          Result<std::size_t> index = arrayIndex();
          if (!index.ok()) return Error{index.error()};
          steps.emplace_back(index.value());
        } else if (peekIs('-')) {
          return fail("expected a non-negative index");
        } else {
          return fail("expected a quoted name or an index after '['");
        }
        if (!consume(']')) return fail("expected ']'");
      } else {
        return fail("expected '.' or '['");
      }
    }
    return steps;
  }

 private:
  // At the opening quote. The name up to the matching closing quote, escapes resolved.
  Result<std::string> quotedName() {
    const char quote = text_[position_++];
    std::string name;
    while (position_ < text_.size() && text_[position_] != quote) {
      if (text_[position_] == '\\') {
        ++position_;
        if (!peekIs('\\') && !peekIs('\'') && !peekIs('"')) {
          return fail("expected \\\\, \\' or \\\" after a backslash");
        }
      }
      name += text_[position_++];
    }
    if (!consume(quote)) {
      return fail(std::string("expected the closing ") + (quote == '"' ? "\"" : "'"));
    }
    return name;
  }

  // At the first digit.
  Result<std::size_t> arrayIndex() {
    const std::size_t start = position_;
    std::size_t index = 0;
    while (position_ < text_.size() && isDigit(text_[position_])) {
      if (position_ - start == kMaxIndexDigits) {
        return fail("expected ']': an index has at most " + std::to_string(kMaxIndexDigits) +
                    " digits");
      }
      index = index * 10 + static_cast<std::size_t>(text_[position_++] - '0');
    }
    return index;
  }

  bool peekIs(char c) const noexcept { return position_ < text_.size() && text_[position_] == c; }

  bool consume(char c) noexcept {
    if (!peekIs(c)) return false;
    ++position_;
    return true;
  }

  // "column 7: <expected>, found 'x'" with a 1-based column.
  Error fail(const std::string& expected) const {
    std::string found;
    if (position_ >= text_.size()) {
      found = "the end";
    } else if (const char c = text_[position_]; c >= 0x20 && c < 0x7f) {
      found = std::string("'") + c + "'";
    } else {
      char code[8];
      std::snprintf(code, sizeof code, "0x%02x", static_cast<unsigned char>(c));
      found = std::string("byte ") + code;
    }
    return Error{"json path column " + std::to_string(position_ + 1) + ": " + expected +
                 ", found " + found};
  }

  std::string_view text_;
  std::size_t position_ = 0;
};

}  // namespace

Result<JsonPath> JsonPath::parse(std::string_view text) {
  Result<std::vector<Step>> steps = Parser(text).steps();
  if (!steps.ok()) return Error{steps.error()};
  return JsonPath(std::string(text), std::move(steps).value());
}

const boost::json::value* JsonPath::find(const boost::json::value& document) const noexcept {
  const boost::json::value* current = &document;
  for (const Step& step : steps_) {
    if (const std::string* name = std::get_if<std::string>(&step)) {
      const boost::json::object* object = current->if_object();
      if (object == nullptr) return nullptr;
      current = object->if_contains(*name);
    } else {
      const boost::json::array* array = current->if_array();
      const std::size_t index = std::get<std::size_t>(step);
      if (array == nullptr || index >= array->size()) return nullptr;
      current = &(*array)[index];
    }
    if (current == nullptr) return nullptr;
  }
  return current;
}

bool JsonPath::startsWith(std::initializer_list<std::string_view> names) const noexcept {
  if (steps_.size() < names.size()) return false;
  std::size_t i = 0;
  for (const std::string_view name : names) {
    const auto* member = std::get_if<std::string>(&steps_[i++]);
    if (member == nullptr || *member != name) return false;
  }
  return true;
}

void JsonPath::lowerMemberAt(std::size_t index) noexcept {
  if (index >= steps_.size()) return;
  if (auto* member = std::get_if<std::string>(&steps_[index])) {
    for (char& c : *member) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
  }
}

std::optional<std::string_view> JsonPath::memberAt(std::size_t index) const noexcept {
  if (index >= steps_.size()) return std::nullopt;
  const auto* member = std::get_if<std::string>(&steps_[index]);
  if (member == nullptr) return std::nullopt;
  return std::string_view(*member);
}

std::optional<std::string> JsonPath::findText(const boost::json::value& document) const {
  const boost::json::value* value = find(document);
  if (value == nullptr) return std::nullopt;
  if (const boost::json::string* text = value->if_string()) return std::string(*text);
  if (value->is_number() || value->is_bool()) return boost::json::serialize(*value);
  return std::nullopt;
}

}  // namespace sluice::policy
