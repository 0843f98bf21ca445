#include "gateway/concurrency_limiter.h"

#include <functional>

namespace sluice::gateway {

std::shared_ptr<ConcurrencyLimiter> ConcurrencyLimiter::create() {
  std::shared_ptr<ConcurrencyLimiter> limiter(new ConcurrencyLimiter());
  limiter->self_ = limiter;
  return limiter;
}

ConcurrencyLimiter::Shard& ConcurrencyLimiter::shardOf(std::string_view key) const noexcept {
  return shards_[std::hash<std::string_view>{}(key) % kShards];
}

std::optional<ConcurrencyLimiter::Permit> ConcurrencyLimiter::tryAcquire(
    std::string_view key, std::size_t max_in_flight) {
  Shard& shard = shardOf(key);
  {
    std::lock_guard lock(shard.mutex);
    auto found = shard.in_flight.find(key);
    if (found == shard.in_flight.end()) {
      if (max_in_flight == 0) return std::nullopt;
      shard.in_flight.emplace(std::string(key), 1);
    } else {
      if (found->second >= max_in_flight) return std::nullopt;
      ++found->second;
    }
  }
  return Permit(self_.lock(), std::string(key));
}

std::size_t ConcurrencyLimiter::inFlight(std::string_view key) const {
  Shard& shard = shardOf(key);
  std::lock_guard lock(shard.mutex);
  const auto found = shard.in_flight.find(key);
  return found == shard.in_flight.end() ? 0 : found->second;
}

void ConcurrencyLimiter::release(const std::string& key) noexcept {
  Shard& shard = shardOf(key);
  std::lock_guard lock(shard.mutex);
  const auto found = shard.in_flight.find(key);
  if (found == shard.in_flight.end()) return;
  // Keys with nothing in flight are dropped, so the map is as big as the traffic in flight.
  if (--found->second == 0) shard.in_flight.erase(found);
}

ConcurrencyLimiter::Permit::Permit(Permit&& other) noexcept
    : limiter_(std::move(other.limiter_)), key_(std::move(other.key_)) {}

ConcurrencyLimiter::Permit& ConcurrencyLimiter::Permit::operator=(Permit&& other) noexcept {
  if (this != &other) {
    release();
    limiter_ = std::move(other.limiter_);
    key_ = std::move(other.key_);
  }
  return *this;
}

ConcurrencyLimiter::Permit::~Permit() { release(); }

void ConcurrencyLimiter::Permit::release() noexcept {
  if (limiter_ == nullptr) return;
  limiter_->release(key_);
  limiter_.reset();
}

}  // namespace sluice::gateway
