// The stream a message body is read through: a socket's reads, refused at once when the bytes
// the HTTP parser left unread hold a line feed without its carriage return.
//
// Why: Beast's parser ends a chunked body's last chunk and trailer only at CR LF CR LF, and
// passes over a bare LF while it looks for one. A client that ends its body with "0\n\n" (as
// lenient servers accept) was therefore left waiting, unanswered, until the connection's
// deadline closed it. Elsewhere Beast refuses a bare LF at once (400).
//
// Why the check is sound: a read is asked for only when the parser needs more bytes, and a
// body's bytes are taken by the parser as they come (a chunk's data, a Content-Length body),
// so what is left unread then is framing: a chunk-size line, the last chunk, trailer fields.
// Each of those lines ends in CR LF (RFC 9112 7.1), and the parser does not take a CR without
// the LF after it, so a LF first in those bytes is bare too.
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>

#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>

#include "server/drain_aware_socket.h"

namespace sluice::server {

// Whether `framing` holds a LF not preceded by a CR within it.
[[nodiscard]] inline bool holdsBareLineFeed(std::string_view framing) noexcept {
  for (std::size_t at = framing.find('\n'); at != std::string_view::npos;
       at = framing.find('\n', at + 1)) {
    if (at == 0 || framing[at - 1] != '\r') return true;
  }
  return false;
}

class BodyReads {
 public:
  using executor_type = DrainAwareSocket::executor_type;

  // Both must outlive the reads; `socket` may be changed between reads (attach).
  BodyReads(DrainAwareSocket& socket, const boost::beast::flat_buffer& buffer) noexcept
      : socket_(&socket), buffer_(&buffer) {}
  explicit BodyReads(const boost::beast::flat_buffer& buffer) noexcept : buffer_(&buffer) {}

  void attach(DrainAwareSocket& socket) noexcept { socket_ = &socket; }

  executor_type get_executor() noexcept { return socket_->get_executor(); }

  // As the socket's async_read_some, or fails with http::error::bad_chunk (nothing read).
  template <typename MutableBuffers, typename ReadToken>
  auto async_read_some(const MutableBuffers& buffers, ReadToken&& token) {
    const auto unread = buffer_->data();
    if (!holdsBareLineFeed({static_cast<const char*>(unread.data()), unread.size()})) {
      return socket_->async_read_some(buffers, std::forward<ReadToken>(token));
    }
    return boost::asio::async_initiate<ReadToken, void(boost::system::error_code, std::size_t)>(
        [this](auto handler) {
          boost::asio::post(
              socket_->get_executor(),
              boost::beast::bind_handler(std::move(handler), boost::beast::http::error::bad_chunk,
                                         std::size_t{0}));
        },
        token);
  }

 private:
  DrainAwareSocket* socket_ = nullptr;
  const boost::beast::flat_buffer* buffer_;
};

}  // namespace sluice::server
