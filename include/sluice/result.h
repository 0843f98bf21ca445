// A value or an error message: how start-up and configuration code reports what went wrong
// without exceptions on the decision path.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace sluice {

struct Error {
  std::string message;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : value_(std::move(error)) {}  // NOLINT: implicit by design

  [[nodiscard]] bool ok() const noexcept { return std::holds_alternative<T>(value_); }
  explicit operator bool() const noexcept { return ok(); }

  // Preconditions: ok() for value(), !ok() for error().
  [[nodiscard]] const T& value() const& {
    assert(ok());
    return std::get<T>(value_);
  }
  [[nodiscard]] T&& value() && {
    assert(ok());
    return std::get<T>(std::move(value_));
  }
  [[nodiscard]] const std::string& error() const {
    assert(!ok());
    return std::get<Error>(value_).message;
  }

 private:
  std::variant<T, Error> value_;
};

}  // namespace sluice
