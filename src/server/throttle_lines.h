// Requests held by a throttle limit wait in line, one line per limit and key, so that when a
// unit frees one of them decides again, not all. Each held request used to wait the store's
// retry-after and decide again: N requests held on one key all woke at each freed unit, one
// got it and N - 1 waited again, so N requests cost about N² / 2 decisions (4,000 held took
// 12.7 s of CPU). In line, only the first waits for the unit; the others wait to be first,
// each with its own deadline (the limit's max_delay), and are served in the order they came.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

namespace sluice::server {

class ThrottleLines {
 public:
  class Place;

  // Thread-safe. Joins the line for `key` (the binding limit's name and counter key). When the
  // place is not first, `wake` is called once it becomes first, on the thread that made it so
  // (the caller posts to its own loop); it is never called for a place that is first at once,
  // or after the place is left.
  [[nodiscard]] Place join(std::string key, std::function<void()> wake);

  // Thread-safe: how many requests wait in the line for `key` (tests).
  [[nodiscard]] std::size_t waiting(const std::string& key) const;

 private:
  struct Waiter {
    std::uint64_t id;
    std::function<void()> wake;
  };
  void leave(const std::string& key, std::uint64_t id);

  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::deque<Waiter>> lines_;
  std::uint64_t next_id_ = 1;
};

// A request's place in a line; leaving it (reset, or destruction on any way out) wakes the next.
class ThrottleLines::Place {
 public:
  Place() = default;
  Place(Place&& other) noexcept { *this = std::move(other); }
  Place& operator=(Place&& other) noexcept;
  Place(const Place&) = delete;
  Place& operator=(const Place&) = delete;
  ~Place() { reset(); }

  void reset();
  [[nodiscard]] bool held() const noexcept { return lines_ != nullptr; }
  [[nodiscard]] bool first() const noexcept { return first_; }
  [[nodiscard]] const std::string& key() const noexcept { return key_; }
  // Called by the owner when its wake came: it is first now.
  void becameFirst() noexcept { first_ = true; }

 private:
  friend class ThrottleLines;
  Place(ThrottleLines* lines, std::string key, std::uint64_t id, bool first)
      : lines_(lines), key_(std::move(key)), id_(id), first_(first) {}

  ThrottleLines* lines_ = nullptr;
  std::string key_;
  std::uint64_t id_ = 0;
  bool first_ = false;
};

}  // namespace sluice::server
