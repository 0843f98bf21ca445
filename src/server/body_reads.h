// The stream a message body is read through: a socket's reads, refused at once when the bytes
// the HTTP parser left unread end in a line ending it will never accept.
//
// Why: Beast's parser ends a chunked body's last chunk and trailer only at CR LF CR LF, and a
// chunk-size line only at CR LF, and passes over a bare LF (or CR) while it looks for one. A
// client that ends its body with "0\n\n" (as lenient servers accept) was therefore left
// waiting, unanswered, until the connection's deadline closed it.
//
// Why the check is sound: a read is asked for only when the parser needs more bytes, and a
// body's bytes are taken by the parser as they come (a chunk's data, a Content-Length body),
// so what is left unread then is framing: a chunk-size line, the last chunk, trailer fields.
// Each of those lines ends in CR LF (RFC 9112 7.1), and the parser takes no CR without the LF
// after it, so a LF first in those bytes is bare too. No valid body is refused.
//
// Why the last bytes are enough: a client waits once it has sent what it takes for the end,
// an empty line after the last line. Unless both line endings are CR LF (which ends the parse),
// the last four bytes then hold a bare LF or a CR followed by something else ("\n\n",
// "\r\n\n", "1\n\r\n", "\r\r\n"). A bad ending further back is either followed by more
// bytes still to come or reported by the parser once the CR LF CR LF arrives. Looking at four
// bytes per read keeps a slow client's thousand one-byte reads from costing a million.
// What stays unseen: a lone CR at the very end, where an LF may yet come.
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

// Whether the last four bytes of `unread` hold a line ending no HTTP parser accepts: a LF
// without a CR before it, or a CR with something other than a LF after it.
[[nodiscard]] inline bool endsInBadLineEnding(std::string_view unread) noexcept {
  for (std::size_t at = unread.size() > 4 ? unread.size() - 4 : 0; at < unread.size(); ++at) {
    if (unread[at] == '\n' && (at == 0 || unread[at - 1] != '\r')) return true;
    if (unread[at] == '\r' && at + 1 < unread.size() && unread[at + 1] != '\n') return true;
  }
  return false;
}

// Reads through `Stream` (a DrainAwareSocket in both doors; a test stream in tests).
template <typename Stream>
class BasicBodyReads {
 public:
  using executor_type = typename Stream::executor_type;

  // Both must outlive the reads; `stream` may be changed between reads (attach).
  BasicBodyReads(Stream& stream, const boost::beast::flat_buffer& buffer) noexcept
      : stream_(&stream), buffer_(&buffer) {}
  explicit BasicBodyReads(const boost::beast::flat_buffer& buffer) noexcept : buffer_(&buffer) {}

  void attach(Stream& stream) noexcept { stream_ = &stream; }

  executor_type get_executor() noexcept { return stream_->get_executor(); }

  // As the stream's async_read_some, or fails with http::error::bad_chunk (nothing read).
  template <typename MutableBuffers, typename ReadToken>
  auto async_read_some(const MutableBuffers& buffers, ReadToken&& token) {
    const auto unread = buffer_->data();
    if (!endsInBadLineEnding({static_cast<const char*>(unread.data()), unread.size()})) {
      return stream_->async_read_some(buffers, std::forward<ReadToken>(token));
    }
    return boost::asio::async_initiate<ReadToken, void(boost::system::error_code, std::size_t)>(
        [this](auto handler) {
          boost::asio::post(
              stream_->get_executor(),
              boost::beast::bind_handler(std::move(handler), boost::beast::http::error::bad_chunk,
                                         std::size_t{0}));
        },
        token);
  }

 private:
  Stream* stream_ = nullptr;
  const boost::beast::flat_buffer* buffer_;
};

using BodyReads = BasicBodyReads<DrainAwareSocket>;

}  // namespace sluice::server
