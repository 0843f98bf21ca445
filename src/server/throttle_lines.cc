#include "server/throttle_lines.h"

#include <utility>

namespace sluice::server {

ThrottleLines::Place ThrottleLines::join(std::string key, Wake wake) {
  std::lock_guard lock(mutex_);
  const std::uint64_t id = next_id_++;
  Line& line = lines_[key];
  open_lines_.store(lines_.size(), std::memory_order_release);
  const bool first = line.empty();
  const auto position = line.insert(line.end(), Waiter{id, first ? Wake() : std::move(wake)});
  return Place(shared_from_this(), std::move(key), position, id, first);
}

std::size_t ThrottleLines::waiting(const std::string& key) const {
  std::lock_guard lock(mutex_);
  const auto found = lines_.find(key);
  return found == lines_.end() ? 0 : found->second.size();
}

void ThrottleLines::leave(const std::string& key, Line::iterator position) {
  Wake wake;
  std::uint64_t woken = 0;
  {
    std::lock_guard lock(mutex_);
    const auto found = lines_.find(key);
    if (found == lines_.end()) return;
    Line& line = found->second;
    const bool was_first = position == line.begin();
    line.erase(position);
    if (line.empty()) {
      lines_.erase(found);
      open_lines_.store(lines_.size(), std::memory_order_release);
    } else if (was_first) {
      woken = line.front().id;
      wake = std::move(line.front().wake);  // called once: the entry keeps an empty function
    }
  }
  if (wake) wake(woken);  // outside the lock: it may join or leave a line itself
}

ThrottleLines::Place& ThrottleLines::Place::operator=(Place&& other) noexcept {
  if (this != &other) {
    reset();
    lines_ = std::move(other.lines_);
    key_ = std::move(other.key_);
    position_ = other.position_;
    id_ = other.id_;
    first_ = std::exchange(other.first_, false);
  }
  return *this;
}

void ThrottleLines::Place::reset() {
  if (std::shared_ptr<ThrottleLines> lines = std::move(lines_)) lines->leave(key_, position_);
  lines_ = nullptr;
  first_ = false;
}

}  // namespace sluice::server
