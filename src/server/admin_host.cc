#include "server/admin_host.h"

#include <unistd.h>

#include <array>
#include <string>

#include <boost/beast/core/string.hpp>

namespace sluice::server {

namespace {

bool isAddress(std::string_view text) {
  boost::system::error_code ec;
  (void)boost::asio::ip::make_address(std::string(text), ec);
  return !ec;
}

}  // namespace

bool hostNamesThisMachine(std::string_view host, std::string_view machine_name,
                          std::span<const std::string> allowed) {
  if (host.empty()) return true;
  if (host.front() == '[') {  // "[v6]" or "[v6]:port"
    const std::size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    const std::string_view after = host.substr(close + 1);
    return (after.empty() || after.front() == ':') && isAddress(host.substr(1, close - 1));
  }
  std::string_view name = host.substr(0, host.rfind(':'));
  if (isAddress(name)) return true;
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  constexpr std::string_view kLocalhost = "localhost";
  constexpr std::string_view kUnderLocalhost = ".localhost";
  if (!machine_name.empty() && boost::beast::iequals(name, machine_name)) return true;
  for (const std::string& listed : allowed) {
    if (boost::beast::iequals(name, listed)) return true;
  }
  return boost::beast::iequals(name, kLocalhost) ||
         (name.size() > kUnderLocalhost.size() &&
          boost::beast::iequals(name.substr(name.size() - kUnderLocalhost.size()),
                                kUnderLocalhost));
}

bool isLoopbackPeer(const boost::asio::ip::address& peer) {
  if (peer.is_v6() && peer.to_v6().is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, peer.to_v6()).is_loopback();
  }
  return peer.is_loopback();
}

std::string thisMachineName() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) return "";
  return name.data();
}

}  // namespace sluice::server
