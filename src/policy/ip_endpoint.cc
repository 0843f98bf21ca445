#include "policy/ip_endpoint.h"

#include <charconv>
#include <string>

namespace sluice::policy {

Result<boost::asio::ip::tcp::endpoint> parseEndpoint(std::string_view address) {
  const std::string quoted = "\"" + std::string(address) + "\"";
  const std::size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) return Error{quoted + ": expected host:port"};
  std::string_view host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    // "::1:80" is itself a whole IPv6 address: which colon starts the port cannot be known.
    return Error{quoted + ": an IPv6 address takes brackets before its port, as [::1]:80"};
  }
  const std::string_view digits = address.substr(colon + 1);
  unsigned port = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() ||
      port > 65535) {
    return Error{quoted + ": the port must be 0..65535"};
  }
  boost::system::error_code bad_address;
  const auto ip = boost::asio::ip::make_address(std::string(host), bad_address);
  if (bad_address) return Error{quoted + ": \"" + std::string(host) + "\" is not an IP address"};
  return boost::asio::ip::tcp::endpoint(ip, static_cast<unsigned short>(port));
}

namespace {

// An IPv4-mapped IPv6 address (::ffff:127.0.0.1) is the IPv4 address to the kernel: a dual-stack
// socket bound to it takes the IPv4 address's port.
boost::asio::ip::address unmapped(const boost::asio::ip::address& address) noexcept {
  if (address.is_v6() && address.to_v6().is_v4_mapped())
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6());
  return address;
}

}  // namespace

bool sameListeningPort(const boost::asio::ip::tcp::endpoint& a,
                       const boost::asio::ip::tcp::endpoint& b) noexcept {
  const auto first = unmapped(a.address());
  const auto second = unmapped(b.address());
  return a.port() != 0 && a.port() == b.port() &&
         (first == second || first.is_unspecified() || second.is_unspecified());
}

bool reachesListener(const boost::asio::ip::tcp::endpoint& listener,
                     const boost::asio::ip::tcp::endpoint& destination) noexcept {
  if (listener.port() == 0 || listener.port() != destination.port()) return false;
  const auto listening = unmapped(listener.address());
  auto reached = unmapped(destination.address());
  // Linux connects an unspecified destination (0.0.0.0, ::) to its family's loopback.
  if (reached.is_unspecified()) {
    reached = reached.is_v4() ? boost::asio::ip::address(boost::asio::ip::address_v4::loopback())
                              : boost::asio::ip::address(boost::asio::ip::address_v6::loopback());
  }
  if (listening == reached) return true;
  if (!listening.is_unspecified() || !reached.is_loopback()) return false;
  // A wildcard listener takes its own family's connections; an IPv6 one IPv4's too (Linux's
  // default, net.ipv6.bindv6only=0, which Asio's acceptor keeps).
  return listening.is_v6() || reached.is_v4();
}

}  // namespace sluice::policy
