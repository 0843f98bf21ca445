// A left-to-right reader of one HTTP field value, for the client's small parsers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sluice::client {

inline bool isDigit(char c) noexcept { return c >= '0' && c <= '9'; }
inline bool isAlpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

class Cursor {
 public:
  explicit Cursor(std::string_view text) noexcept : text_(text) {}

  [[nodiscard]] bool done() const noexcept { return at_ == text_.size(); }
  [[nodiscard]] char peek() const noexcept { return done() ? '\0' : text_[at_]; }
  bool take(char c) noexcept {
    if (peek() != c) return false;
    ++at_;
    return true;
  }
  bool take(std::string_view word) noexcept {
    if (text_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }
  // Exactly `count` digits (or up to `count` when `at_most`), as a number; nullopt otherwise.
  std::optional<std::uint64_t> digits(std::size_t count, bool at_most = false) noexcept {
    std::uint64_t value = 0;
    std::size_t taken = 0;
    while (taken < count && isDigit(peek())) {
      value = value * 10 + static_cast<std::uint64_t>(text_[at_++] - '0');
      ++taken;
    }
    if (taken == 0 || (!at_most && taken != count)) return std::nullopt;
    return value;
  }
  std::string_view letters() noexcept {
    const std::size_t start = at_;
    while (isAlpha(peek())) ++at_;
    return text_.substr(start, at_ - start);
  }
  template <class Predicate>
  std::string_view takeWhile(Predicate wanted) noexcept {
    const std::size_t start = at_;
    while (!done() && wanted(text_[at_])) ++at_;
    return text_.substr(start, at_ - start);
  }

 private:
  std::string_view text_;
  std::size_t at_ = 0;
};

}  // namespace sluice::client
