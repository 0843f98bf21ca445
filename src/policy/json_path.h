// A small JSONPath subset, enough to name one value in the request document for a key selector:
//   $.request.http.headers['X-User-Id'][0]    $.request.parsed_token.payload.sub
//   $["a"]["b"]                                $.items[2].name
// There are no wildcards, filters, slices or recursive descent: a path selects at most one value.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <boost/json/value.hpp>

#include "sluice/result.h"

namespace sluice::policy {

class JsonPath {
 public:
  // Parses `text`: the root `$`, then any number of steps:
  //   .name                  name of letters, digits, '_' and '-'
  //   ['name'] or ["name"]   any name; inside the quotes `\\`, `\'` and `\"` stand for \ ' "
  //   [index]                a non-negative decimal array index
  // No whitespace is allowed. The error gives the 1-based column and what was expected there.
  static Result<JsonPath> parse(std::string_view text);

  // Thread-safe. The value at the path inside `document`, or nullptr when a step is missing (no
  // such member, index past the end) or meets the wrong type (a name on a non-object, an index on
  // a non-array). The pointer is into `document`.
  [[nodiscard]] const boost::json::value* find(const boost::json::value& document) const noexcept;

  // Thread-safe. The selected value as key text: a string as it is, a number or bool as its JSON
  // text (what boost::json::serialize writes); nullopt when missing, null, an object or an array.
  [[nodiscard]] std::optional<std::string> findText(const boost::json::value& document) const;

  // Whether the path's first steps are the member names `names`, however written (.a or ['a']).
  [[nodiscard]] bool startsWith(std::initializer_list<std::string_view> names) const noexcept;
  // The member name of step `index` (0 is the first after `$`), or nullopt when the path is
  // shorter or that step is an array index.
  [[nodiscard]] std::optional<std::string_view> memberAt(std::size_t index) const noexcept;

  // Lower-cases the member name of step `index`, if it is one (ASCII letters only).
  void lowerMemberAt(std::size_t index) noexcept;

  // How many steps follow `$`.
  [[nodiscard]] std::size_t steps() const noexcept { return steps_.size(); }

  // The expression as it was parsed, for error messages.
  [[nodiscard]] const std::string& text() const noexcept { return text_; }

 private:
  using Step = std::variant<std::string, std::size_t>;  // a member name or an array index

  JsonPath(std::string text, std::vector<Step> steps)
      : text_(std::move(text)), steps_(std::move(steps)) {}

  std::string text_;
  std::vector<Step> steps_;
};

}  // namespace sluice::policy
