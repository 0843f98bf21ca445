// Requests held by a throttle limit wait in line, one line per limit and key, so that when a
// unit frees one of them decides again, not all. Each held request used to wait the store's
// retry-after and decide again: N requests held on one key all woke at each freed unit, one
// got it and N - 1 waited again, so N requests cost about N² / 2 decisions (4,000 held took
// 12.7 s of CPU). In line, only the first waits for the unit; the others wait to be first,
// each with its own deadline (the limit's max_delay), and are served in the order they came.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "sluice/limit_spec.h"
#include "store/key_hash.h"

namespace sluice::server {

class ThrottleLines : public std::enable_shared_from_this<ThrottleLines> {
 public:
  class Place;
  // Told the id of the place that has just become first.
  using Wake = std::function<void(std::uint64_t id)>;

  // Made shared: a place keeps its lines alive, as the requests holding places may outlive
  // their door (the event loops destroy what they still hold after the door is gone).
  [[nodiscard]] static std::shared_ptr<ThrottleLines> make() {
    return std::shared_ptr<ThrottleLines>(new ThrottleLines());
  }

  // The line of the requests held on one limit (its label) and counter: the counter key and
  // what else names the counter in the store (key_hash.h: the algorithm, the period, and the
  // count where it is part of the counter). After a reload that gives the limit a new counter,
  // requests on it do not wait behind those held on the old one, which has no units for them;
  // after one that keeps the counter (a new burst, say), they still wait behind them.
  [[nodiscard]] static std::string lineKey(std::string_view label, std::string_view key,
                                           const LimitSpec& spec) {
    std::string line(label);
    line += '\n';
    line += key;
    line += '\n';
    line += std::to_string(static_cast<int>(spec.algorithm())) + ' ' +
            std::to_string(spec.rate().period_us);
    if (countIsPartOfTheCounter(spec.algorithm())) {
      line += ' ' + std::to_string(spec.rate().count);
    }
    return line;
  }

  // Thread-safe. Joins the line for `key` (the binding limit's name and counter key). When the
  // place is not first, `wake` is called once it becomes first, on the thread that made it so
  // (the caller posts to its own loop); it is never called for a place that is first at once,
  // or after the place is left.
  [[nodiscard]] Place join(std::string key, Wake wake);

  // Thread-safe: how many requests wait in the line for `key` (the first included).
  [[nodiscard]] std::size_t waiting(const std::string& key) const;
  // Thread-safe, lock-free: whether any line has a request in it. A door asks this first, so a
  // request with a throttle limit builds no line key and takes no lock while nothing is held.
  [[nodiscard]] bool anyHeld() const noexcept {
    return open_lines_.load(std::memory_order_acquire) > 0;
  }

 private:
  ThrottleLines() = default;

  struct Waiter {
    std::uint64_t id;
    Wake wake;
  };
  using Line = std::list<Waiter>;  // a place keeps its position: leaving is O(1) anywhere
  void leave(const std::string& key, Line::iterator position);

  mutable std::mutex mutex_;
  std::unordered_map<std::string, Line> lines_;
  std::atomic<std::size_t> open_lines_{0};  // lines_.size(), written under mutex_
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
  [[nodiscard]] std::uint64_t id() const noexcept { return id_; }
  [[nodiscard]] const std::string& key() const noexcept { return key_; }
  // Called by the owner when the wake for this place (its id) came: it is first now.
  void becameFirst() noexcept { first_ = true; }

 private:
  friend class ThrottleLines;
  Place(std::shared_ptr<ThrottleLines> lines, std::string key, Line::iterator position,
        std::uint64_t id, bool first)
      : lines_(std::move(lines)),
        key_(std::move(key)),
        position_(position),
        id_(id),
        first_(first) {}

  std::shared_ptr<ThrottleLines> lines_;
  std::string key_;
  Line::iterator position_{};
  std::uint64_t id_ = 0;
  bool first_ = false;
};

}  // namespace sluice::server
