// The admin listener's defence against DNS rebinding: a web page from a name its owner then
// points at 127.0.0.1 is, to the browser, still its own origin, so its scripts could read the
// admin paths (the configuration, the metrics) of a Sluice on the browser's machine. Such a
// request names the page's host in Host; a tool asking a loopback listener names an address or
// localhost.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <boost/asio/ip/address.hpp>

namespace sluice::server {

// Whether a Host field (with or without a port) names the machine it reached in a way no page's
// owner controls: an IPv4 or IPv6 address, `localhost`, a name under `.localhost` (which
// browsers keep on the loopback, RFC 6761), or `machine_name` (the host's own name, which
// Debian's /etc/hosts puts on 127.0.1.1), in any case and with or without a final dot. An empty
// Host counts (an HTTP/1.0 tool's request; a browser always sends one).
// `allowed` adds names (lower case) the machine answers to by its operator's say-so, as
// server.admin_hosts lists them.
[[nodiscard]] bool hostNamesThisMachine(std::string_view host, std::string_view machine_name,
                                        std::span<const std::string> allowed = {});

// Whether a connection's peer is this machine's loopback (an IPv4-mapped one included): the
// browser a rebinding page runs in, when the admin listener is on this machine's loopback.
[[nodiscard]] bool isLoopbackPeer(const boost::asio::ip::address& peer);

// gethostname(), or "" when it fails.
[[nodiscard]] std::string thisMachineName();

}  // namespace sluice::server
