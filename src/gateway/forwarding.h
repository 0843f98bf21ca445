// What a reverse proxy changes in the messages it passes on: hop-by-hop headers removed (RFC 9110
// 7.6.1), X-Forwarded-For and X-Forwarded-Proto appended, the body framing re-stated, and the
// rate-limit headers added. Plain functions over Beast headers, so they are tested without
// sockets.
#pragma once

#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/message.hpp>

#include "gateway/field_arena.h"
#include "http/rate_limit_headers.h"

namespace sluice::gateway {

// The pieces of one gather write: at most a head, a chunk header, body bytes and the chunk's end
// (with the last chunk). A fixed array rather than a std::vector, because Asio copies the buffer
// sequence into its write operation, and copying a vector was an allocation per write.
class GatherList {
 public:
  void clear() noexcept { count_ = 0; }
  void push_back(boost::asio::const_buffer buffer) noexcept {
    assert(count_ < parts_.size());
    parts_[count_++] = buffer;
  }
  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  [[nodiscard]] const boost::asio::const_buffer* begin() const noexcept { return parts_.data(); }
  [[nodiscard]] const boost::asio::const_buffer* end() const noexcept {
    return parts_.data() + count_;
  }

 private:
  std::array<boost::asio::const_buffer, 4> parts_{};
  std::size_t count_ = 0;
};

// How a message body is delimited on the wire.
enum class Framing {
  kNone,        // no body
  kLength,      // Content-Length
  kChunked,     // Transfer-Encoding: chunked
  kUntilClose,  // a response read until the upstream closes (HTTP/1.0 style)
};

// Thread-safe. True for a header that concerns one connection only: the fixed list (Connection,
// Keep-Alive, Proxy-Connection, TE, Trailer, Transfer-Encoding, Upgrade, Proxy-Authenticate,
// Proxy-Authorization) and any name listed in `connection` (the message's Connection value).
[[nodiscard]] bool isHopByHop(std::string_view name, std::string_view connection) noexcept;

// Whether `request` asks to become a WebSocket (RFC 6455 4.1): an HTTP/1.1 GET whose Connection
// lists "upgrade" and whose Upgrade lists "websocket". Other upgrades (h2c, say) are not passed
// on: their requests would reach the upstream past the gateway's limits. Never throws but for
// allocation. Defined for beast's fields and ArenaFields.
template <class Fields>
[[nodiscard]] bool wantsWebSocket(const boost::beast::http::header<true, Fields>& request);

// Whether a response's Transfer-Encoding, when it has one, is chunked alone (one field).
template <class Fields>
[[nodiscard]] bool chunkedAlone(const boost::beast::http::header<false, Fields>& response);

// Whether an upstream's 101 switches to a WebSocket: its Upgrade lists "websocket".
template <class Fields>
[[nodiscard]] bool acceptsWebSocket(const boost::beast::http::header<false, Fields>& response);

// Appends the request head sent upstream: the request line as HTTP/1.1, end-to-end headers but
// Expect (the gateway answers 100-continue itself) and the X-Sluice-* decision headers (only the
// gateway writes those; nor X_Sluice_*, nor X_Forwarded_For or _Proto, which CGI-like upstreams
// read as the same fields), X-Forwarded-For and X-Forwarded-Proto with this hop appended, the body
// framing, `Connection: upgrade` and `Upgrade: websocket` when `websocket`, then `extra`. A
// request without Host (HTTP/1.0 may omit it, HTTP/1.1 may not) gets `default_host`, the
// upstream's address. Never throws but for allocation.
// Defined for beast's fields and ArenaFields.
template <class Fields>
void appendUpstreamRequestHead(const boost::beast::http::header<true, Fields>& request,
                               std::string_view peer_ip, std::string_view default_host,
                               Framing framing, std::uint64_t content_length, bool websocket,
                               const http::HeaderList& extra, std::string& out);

// Appends the head of an upstream's 101 answer to a WebSocket request, as the client gets it:
// the status line, end-to-end headers (Sec-WebSocket-Accept and the like), `Connection: upgrade`
// and `Upgrade: websocket`, then `extra_lines`, which replace the upstream's fields as for
// appendClientResponseHead. Never throws but for allocation.
template <class Fields>
void appendWebSocketAcceptHead(const boost::beast::http::header<false, Fields>& response,
                               std::string_view extra_lines, std::string& out,
                               std::span<const std::string_view> lists = {});

// Appends the response head sent to the client: the upstream's status line in the client's
// version, end-to-end headers, `framing` as re-stated for the client, Connection: close when
// `keep_alive` is false, then `extra_lines` as they are (header lines, each ending in CRLF, as
// appendHeaderLine writes them). An upstream field that `extra_lines` writes too is left out
// (the gateway's X-RateLimit-Remaining replaces the upstream's: RFC 9110 5.3 allows a field
// that is not a list once), unless it is named in `lists`, list fields whose items combine
// (RateLimit, RateLimit-Policy). Never throws but for allocation.
template <class Fields>
void appendClientResponseHead(const boost::beast::http::header<false, Fields>& response,
                              unsigned client_version, Framing framing,
                              std::optional<std::uint64_t> content_length, bool keep_alive,
                              std::string_view extra_lines, std::string& out,
                              std::span<const std::string_view> lists = {});

// Appends "name: value\r\n". The caller vouches for both (no CR or LF).
void appendHeaderLine(std::string_view name, std::string_view value, std::string& out);

// How the client gets a response body the upstream framed as `upstream`: chunked stays chunked
// for HTTP/1.1 clients, a read-until-close body becomes chunked for them; HTTP/1.0 clients get
// no chunking, and the connection closes after a body without a length.
[[nodiscard]] Framing clientFraming(Framing upstream, unsigned client_version) noexcept;

// The chunk-size line for `bytes` of data: "<hex>\r\n".
void appendChunkHeader(std::size_t bytes, std::string& out);

}  // namespace sluice::gateway
