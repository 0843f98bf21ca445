#include "gateway/webhook_cache.h"

namespace sluice::gateway {

WebhookCache::Probe WebhookCache::probe(const std::string& key, Micros now_us, Waiter waiter) {
  std::lock_guard lock(mutex_);
  auto found = entries_.find(key);
  if (found != entries_.end()) {
    Entry& entry = found->second;
    if (entry.fetching) {
      entry.waiters.push_back(std::move(waiter));
      return {Probe::Kind::kQueued, nullptr};
    }
    if (now_us < entry.expires_us) return {Probe::Kind::kHit, entry.limits};
    entry.fetching = true;  // expired: this caller refreshes it
    return {Probe::Kind::kFetch, nullptr};
  }
  if (entries_.size() >= max_entries_) makeRoom(now_us);
  entries_[key].fetching = true;
  return {Probe::Kind::kFetch, nullptr};
}

std::vector<WebhookCache::Waiter> WebhookCache::complete(const std::string& key,
                                                         DynamicLimitsPtr limits,
                                                         Micros expires_us) {
  std::lock_guard lock(mutex_);
  Entry& entry = entries_[key];
  entry.fetching = false;
  entry.expires_us = expires_us;
  entry.limits = std::move(limits);
  return std::exchange(entry.waiters, {});
}

std::size_t WebhookCache::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

void WebhookCache::makeRoom(Micros now_us) {
  boost::unordered::erase_if(entries_, [now_us](const auto& item) {
    return !item.second.fetching && item.second.expires_us <= now_us;
  });
  if (entries_.size() < max_entries_) return;
  boost::unordered::erase_if(entries_, [](const auto& item) { return !item.second.fetching; });
}

}  // namespace sluice::gateway
