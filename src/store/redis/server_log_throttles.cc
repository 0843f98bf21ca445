#include "store/redis/server_log_throttles.h"

#include <mutex>
#include <unordered_map>

namespace sluice::redis {

std::shared_ptr<ServerLogThrottles> ServerLogThrottles::forServer(const std::string& address) {
  static std::mutex mutex;
  // Weak: a server no pool talks to any more (a reload replaced the store) is forgotten.
  static std::unordered_map<std::string, std::weak_ptr<ServerLogThrottles>> servers;
  const std::lock_guard lock(mutex);
  std::erase_if(servers, [](const auto& entry) { return entry.second.expired(); });
  std::weak_ptr<ServerLogThrottles>& known = servers[address];
  std::shared_ptr<ServerLogThrottles> throttles = known.lock();
  if (throttles == nullptr) {
    throttles = std::make_shared<ServerLogThrottles>();
    known = throttles;
  }
  return throttles;
}

}  // namespace sluice::redis
