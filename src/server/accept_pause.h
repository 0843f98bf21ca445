// What a listener does when accept() itself fails: out of file descriptors (EMFILE, ENFILE) or
// kernel memory (ENOBUFS, ENOMEM). The connection stays in the backlog, so accepting again at
// once fails again at once: the loop would spin at full CPU, log nothing, and starve the
// connections it serves. Instead accepting pauses briefly, as nginx does, and says why.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

namespace sluice::server {

// Logs `error` for the listener named `listener` (at most once a second across listeners), then
// calls `accept_again` after a short pause on the acceptor's executor, unless the acceptor was
// closed meanwhile (shutdown).
void pauseAccepting(const std::shared_ptr<boost::asio::ip::tcp::acceptor>& acceptor,
                    const boost::system::error_code& error, std::string_view listener,
                    std::function<void()> accept_again);

}  // namespace sluice::server
