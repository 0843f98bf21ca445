// The "ip:port" of a listener or an upstream, as every config section names one. Only IP
// literals: nothing here resolves names, so a slow DNS can never stall a start or a request.
#pragma once

#include <string_view>

#include <boost/asio/ip/tcp.hpp>

#include "sluice/result.h"

namespace sluice::policy {

// "127.0.0.1:8080", "[::1]:0"; the port is 0..65535 (0 asks a listener for any free port).
// The error says what is wrong.
Result<boost::asio::ip::tcp::endpoint> parseEndpoint(std::string_view address);

// Whether two listeners would take the same port, so the second could not bind ("address
// already in use"): the same fixed port on the same address, or on any address (0.0.0.0, ::)
// and another; an IPv4-mapped address (::ffff:a.b.c.d) is its IPv4 address. Port 0 picks a free
// port each time, and never clashes.
[[nodiscard]] bool sameListeningPort(const boost::asio::ip::tcp::endpoint& a,
                                     const boost::asio::ip::tcp::endpoint& b) noexcept;

// Whether connecting to `destination` reaches `listener` on this host for certain: the same
// fixed port, and the same address, or a loopback (or unspecified) destination and a listener
// on every address of its family (an IPv6 wildcard takes IPv4 too). Another address might be
// this host's too; that is not known here.
[[nodiscard]] bool reachesListener(const boost::asio::ip::tcp::endpoint& listener,
                                   const boost::asio::ip::tcp::endpoint& destination) noexcept;

}  // namespace sluice::policy
