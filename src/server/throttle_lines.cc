#include "server/throttle_lines.h"

#include <algorithm>
#include <utility>

namespace sluice::server {

ThrottleLines::Place ThrottleLines::join(std::string key, std::function<void()> wake) {
  std::lock_guard lock(mutex_);
  const std::uint64_t id = next_id_++;
  std::deque<Waiter>& line = lines_[key];
  const bool first = line.empty();
  line.push_back({id, first ? std::function<void()>() : std::move(wake)});
  return Place(this, std::move(key), id, first);
}

std::size_t ThrottleLines::waiting(const std::string& key) const {
  std::lock_guard lock(mutex_);
  const auto found = lines_.find(key);
  return found == lines_.end() ? 0 : found->second.size();
}

void ThrottleLines::leave(const std::string& key, std::uint64_t id) {
  std::function<void()> wake;
  {
    std::lock_guard lock(mutex_);
    const auto found = lines_.find(key);
    if (found == lines_.end()) return;
    std::deque<Waiter>& line = found->second;
    const auto waiter = std::find_if(line.begin(), line.end(),
                                     [id](const Waiter& entry) { return entry.id == id; });
    if (waiter == line.end()) return;
    const bool was_first = waiter == line.begin();
    line.erase(waiter);
    if (line.empty()) {
      lines_.erase(found);
    } else if (was_first) {
      wake = std::move(line.front().wake);  // called once: the entry keeps an empty function
    }
  }
  if (wake) wake();  // outside the lock: it may join or leave a line itself
}

ThrottleLines::Place& ThrottleLines::Place::operator=(Place&& other) noexcept {
  if (this != &other) {
    reset();
    lines_ = std::exchange(other.lines_, nullptr);
    key_ = std::move(other.key_);
    id_ = other.id_;
    first_ = other.first_;
  }
  return *this;
}

void ThrottleLines::Place::reset() {
  if (ThrottleLines* lines = std::exchange(lines_, nullptr)) lines->leave(key_, id_);
  first_ = false;
}

}  // namespace sluice::server
