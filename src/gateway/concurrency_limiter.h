// Stripe's concurrent-requests limiter: at most N requests in flight per key. A request holds a
// Permit while it is in flight; the permit gives its slot back when destroyed, so every exit
// path (response done, upstream error, client gone, timeout, exception) releases it.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <boost/unordered/unordered_flat_map.hpp>

namespace sluice::gateway {

class ConcurrencyLimiter {
 public:
  class Permit {
   public:
    Permit(Permit&& other) noexcept;
    Permit& operator=(Permit&& other) noexcept;
    Permit(const Permit&) = delete;
    Permit& operator=(const Permit&) = delete;
    ~Permit();

   private:
    friend class ConcurrencyLimiter;
    Permit(std::shared_ptr<ConcurrencyLimiter> limiter, std::string key)
        : limiter_(std::move(limiter)), key_(std::move(key)) {}
    void release() noexcept;
    std::shared_ptr<ConcurrencyLimiter> limiter_;  // null once released or moved from
    std::string key_;
  };

  // Limiters are shared with their permits, which may outlive the gateway's other state.
  static std::shared_ptr<ConcurrencyLimiter> create();

  // Thread-safe. A permit when fewer than `max_in_flight` permits of `key` are held, else
  // nullopt.
  [[nodiscard]] std::optional<Permit> tryAcquire(std::string_view key, std::size_t max_in_flight);

  // Thread-safe. Permits of `key` held now.
  [[nodiscard]] std::size_t inFlight(std::string_view key) const;

 private:
  ConcurrencyLimiter() = default;
  void release(const std::string& key) noexcept;

  // Sharded by key hash, so two I/O threads rarely meet on one lock.
  static constexpr std::size_t kShards = 16;
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const noexcept {
      return std::hash<std::string_view>{}(key);
    }
  };
  struct Shard {
    mutable std::mutex mutex;
    boost::unordered_flat_map<std::string, std::size_t, KeyHash, std::equal_to<>>
        in_flight;  // only keys with permits
  };
  Shard& shardOf(std::string_view key) const noexcept;

  std::weak_ptr<ConcurrencyLimiter> self_;
  mutable std::array<Shard, kShards> shards_;
};

}  // namespace sluice::gateway
