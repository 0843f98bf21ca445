// The DDoS guard: cheap checks that run before any per-client work (identity, keys, the store),
// so a flood costs the gateway as little as possible. A global requests/s ceiling (→ 503),
// suspicious patterns in the path and query (→ 400) and a cap on connections per client address.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/ip/address.hpp>
#include <boost/unordered/unordered_flat_map.hpp>

#include "gateway/gateway_config.h"
#include "sluice/time.h"

namespace sluice::gateway {

struct GuardCounters {
  std::uint64_t over_global_rate = 0;     // answered 503
  std::uint64_t suspicious = 0;           // answered 400
  std::uint64_t over_ip_connections = 0;  // connections refused
};

class DdosGuard {
 public:
  // `clock` must outlive the guard.
  DdosGuard(const GuardSettings& settings, const Clock& clock);

  // Thread-safe, lock-free. True when the request fits under the global ceiling (always, with
  // no ceiling). One second's worth of requests may come at once (a GCRA with burst = rps).
  [[nodiscard]] bool admitGlobal() noexcept;

  // Thread-safe. The first configured pattern found in `target` (path and query as sent), as
  // pattern_folding.h reads it, with SQL comments folded or kept, or else in its path as a
  // backend maps it (lower case, policy::normalizePath with %2F as a separator and segment
  // parameters dropped); nullopt when clean. Counts a hit.
  [[nodiscard]] std::optional<std::string> suspiciousPattern(std::string_view target);

  // A connection slot for one client address; releases it when destroyed.
  class ConnectionTicket {
   public:
    ConnectionTicket(ConnectionTicket&& other) noexcept;
    ConnectionTicket& operator=(ConnectionTicket&&) = delete;
    ConnectionTicket(const ConnectionTicket&) = delete;
    ~ConnectionTicket();

   private:
    friend class DdosGuard;
    ConnectionTicket(DdosGuard* guard, const boost::asio::ip::address& address)
        : guard_(guard), address_(address) {}
    DdosGuard* guard_;
    boost::asio::ip::address address_;
  };

  // Thread-safe. A ticket, or nullopt when `address` already has max_connections_per_ip open.
  // An IPv6 address counts as its /ipv6_prefix network, as per-address limits count it
  // (policy::addressNetwork). The guard must outlive its tickets.
  [[nodiscard]] std::optional<ConnectionTicket> admitConnection(
      const boost::asio::ip::address& address, unsigned ipv6_prefix);

  [[nodiscard]] GuardCounters counters() const noexcept;

 private:
  void release(const boost::asio::ip::address& address) noexcept;

  const Clock& clock_;
  std::int64_t interval_ns_ = 0;   // 0: no global ceiling
  std::int64_t tolerance_ns_ = 0;  // how far ahead of now the schedule may run (the burst)
  std::atomic<std::int64_t> theoretical_arrival_ns_{0};
  std::vector<std::string> patterns_;
  std::size_t max_connections_per_ip_;
  std::mutex connections_mutex_;
  boost::unordered_flat_map<boost::asio::ip::address, std::size_t,
                            std::hash<boost::asio::ip::address>>
      connections_;
  std::atomic<std::uint64_t> over_global_rate_{0};
  std::atomic<std::uint64_t> suspicious_{0};
  std::atomic<std::uint64_t> over_ip_connections_{0};
};

}  // namespace sluice::gateway
