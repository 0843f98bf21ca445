// The dynamic-limit webhook's answers, kept for a TTL per request shape (method, path and the
// configured headers), with one call in flight per shape: requests that miss while a call is
// under way wait for it instead of calling again. Bounded in entries. No I/O: the caller fetches.
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

#include "gateway/dynamic_limits.h"
#include "sluice/time.h"

namespace sluice::gateway {

class WebhookCache {
 public:
  // Runs with the answer; null means "no dynamic limits" (the webhook failed, or said none).
  using Waiter = std::function<void(DynamicLimitsPtr)>;

  struct Probe {
    enum class Kind {
      kHit,     // `limits` is the cached answer (null: a remembered failure)
      kFetch,   // nobody is fetching this shape: the caller must, then call complete()
      kQueued,  // a fetch is under way; `waiter` runs when it completes
    };
    Kind kind;
    DynamicLimitsPtr limits;
  };

  // Precondition: max_entries >= 1.
  explicit WebhookCache(std::size_t max_entries) : max_entries_(max_entries) {}

  // Thread-safe. `now_us` is the clock's now. `waiter` is kept only for kQueued.
  [[nodiscard]] Probe probe(const std::string& key, Micros now_us, Waiter waiter);

  // Thread-safe. Stores the fetch's answer until `expires_us` and returns the waiters queued
  // meanwhile, for the caller to run (outside the cache's lock).
  [[nodiscard]] std::vector<Waiter> complete(const std::string& key, DynamicLimitsPtr limits,
                                             Micros expires_us);

  [[nodiscard]] std::size_t size() const;

 private:
  struct Entry {
    Micros expires_us = 0;
    DynamicLimitsPtr limits;
    bool fetching = false;
    std::vector<Waiter> waiters;
  };
  // At the bound: drop expired answers, then, if still full, every answer (not the fetches in
  // flight). Amortized constant time per insert, and memory never grows past the bound.
  void makeRoom(Micros now_us);

  std::size_t max_entries_;
  mutable std::mutex mutex_;
  boost::unordered_flat_map<std::string, Entry> entries_;
};

}  // namespace sluice::gateway
