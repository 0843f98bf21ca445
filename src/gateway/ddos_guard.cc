#include "gateway/ddos_guard.h"

#include <algorithm>

#include "gateway/pattern_folding.h"
#include "policy/client_ip.h"
#include "policy/request_view.h"

namespace sluice::gateway {

DdosGuard::DdosGuard(const GuardSettings& settings, const Clock& clock)
    : clock_(clock),
      patterns_(settings.patterns),
      max_connections_per_ip_(settings.max_connections_per_ip) {
  if (settings.global_rps > 0) {
    constexpr std::int64_t kNanosPerSecond = 1'000'000'000;
    interval_ns_ = std::max<std::int64_t>(
        1, kNanosPerSecond / static_cast<std::int64_t>(
                                 std::min<std::uint64_t>(settings.global_rps, kNanosPerSecond)));
    tolerance_ns_ = kNanosPerSecond - interval_ns_;
  }
}

bool DdosGuard::admitGlobal() noexcept {
  if (interval_ns_ == 0) return true;
  const std::int64_t now_ns = clock_.now() * 1000;
  std::int64_t tat = theoretical_arrival_ns_.load(std::memory_order_relaxed);
  while (true) {
    const std::int64_t start = std::max(tat, now_ns);
    if (start - now_ns > tolerance_ns_) {
      over_global_rate_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    if (theoretical_arrival_ns_.compare_exchange_weak(tat, start + interval_ns_,
                                                      std::memory_order_relaxed)) {
      return true;
    }
  }
}

std::optional<std::string> DdosGuard::suspiciousPattern(std::string_view target) {
  if (patterns_.empty()) return std::nullopt;
  // Every request is folded: keep the buffers, not a malloc each.
  thread_local std::string decoding;
  thread_local std::string folded;
  const DecodedTarget decoded = decodedForMatching(target, decoding);
  const auto found = [&](std::string_view subject) -> const std::string* {
    for (const std::string& pattern : patterns_) {
      if (subject.find(pattern) != std::string_view::npos) return &pattern;
    }
    return nullptr;
  };
  // The first reading; the others (pattern_folding.h) only when the target holds what they
  // read differently, which most targets do not.
  const unsigned holds = foldDecoded(decoded, Reading{}, folded);
  const std::string* pattern = found(folded);
  const auto other = [&](bool applies, Reading reading) {
    if (pattern != nullptr || !applies) return;
    foldDecoded(decoded, reading, folded);
    pattern = found(folded);
  };
  other((holds & kHoldsLineComment) != 0 && (holds & kHoldsLineBreak) != 0, {Comments::kAllFolded});
  other((holds & (kHoldsBlockComment | kHoldsLineComment)) != 0, {Comments::kMarkersBlank});
  other((holds & (kHoldsLineBreak | kHoldsTab)) != 0, {Comments::kBlockFolded, true});
  // The path as a backend maps it, when that differs: "." segments, doubled slashes and segment
  // parameters would otherwise hide a pattern the limits see through (/etc/./passwd and
  // /etc//passwd are /etc/passwd to the backend and to every limit).
  const std::string_view path = target.substr(0, target.find('?'));
  if (pattern == nullptr &&
      (path.find("//") != std::string_view::npos || path.find("/.") != std::string_view::npos ||
       path.find_first_of(";%") != std::string_view::npos)) {
    std::string mapped =
        policy::normalizePath(path, {.encoded_slash_separates = true, .drops_parameters = true});
    std::transform(mapped.begin(), mapped.end(), mapped.begin(), policy::lowerAscii);
    pattern = found(mapped);
  }
  if (pattern == nullptr) return std::nullopt;
  suspicious_.fetch_add(1, std::memory_order_relaxed);
  return *pattern;
}

std::optional<DdosGuard::ConnectionTicket> DdosGuard::admitConnection(
    const boost::asio::ip::address& peer, unsigned ipv6_prefix) {
  const boost::asio::ip::address address = policy::addressNetwork(peer, ipv6_prefix);
  if (max_connections_per_ip_ == 0) return ConnectionTicket(nullptr, address);
  std::lock_guard lock(connections_mutex_);
  std::size_t& open = connections_[address];
  if (open >= max_connections_per_ip_) {
    over_ip_connections_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  ++open;
  return ConnectionTicket(this, address);
}

void DdosGuard::release(const boost::asio::ip::address& address) noexcept {
  std::lock_guard lock(connections_mutex_);
  const auto found = connections_.find(address);
  if (found == connections_.end()) return;
  // Addresses with no connection are dropped, so the map holds only the connected ones.
  if (--found->second == 0) connections_.erase(found);
}

DdosGuard::ConnectionTicket::ConnectionTicket(ConnectionTicket&& other) noexcept
    : guard_(std::exchange(other.guard_, nullptr)), address_(other.address_) {}

DdosGuard::ConnectionTicket::~ConnectionTicket() {
  if (guard_ != nullptr) guard_->release(address_);
}

GuardCounters DdosGuard::counters() const noexcept {
  return {over_global_rate_.load(std::memory_order_relaxed),
          suspicious_.load(std::memory_order_relaxed),
          over_ip_connections_.load(std::memory_order_relaxed)};
}

}  // namespace sluice::gateway
