// RFC 9112's rules for a request's head (how its body is framed, its Host), shared by the two
// doors that read HTTP/1 requests themselves (the HTTP server, and the gateway's sessions).
#pragma once

#include <algorithm>
#include <iterator>
#include <optional>
#include <string_view>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/message.hpp>

namespace sluice::server {

struct HeadRefusal {
  unsigned status;  // 400 or 501
  const char* message;
};

// Why a request's Transfer-Encoding cannot be read, or nullopt (none, or chunked alone). A last
// coding other than chunked leaves the body's end unknown (6.3): read as "no body", its bytes
// would be taken for a next request, one smuggled past whatever stands in front; in HTTP/1.0
// any Transfer-Encoding is faulty framing (6.1). Both get 400. A coding before chunked (gzip,
// chunked) would be passed on still encoded, and decoding it is not implemented: 501, as nginx
// answers. `chunked`: what the parser made of the header.
template <class Fields>
std::optional<HeadRefusal> transferEncodingRefusal(
    const boost::beast::http::header<true, Fields>& header, bool chunked) {
  namespace http = boost::beast::http;
  const auto [first, last] = header.equal_range(http::field::transfer_encoding);
  if (first == last) return std::nullopt;
  if (!chunked || header.version() < 11) {
    return HeadRefusal{400,
                       "a request body needs a Content-Length, or chunked as its last "
                       "transfer coding (and none in a version 1.0 request)"};
  }
  // The codings of every Transfer-Encoding field, as one list (RFC 9110 5.3), whose empty
  // elements count for nothing (5.6.1): "chunked," and ", chunked" are chunked alone. Walked
  // here, not by Beast's token_list, which ends a list at its first character that is not a
  // token's and so would take "chunked;x" or "chunked x" for chunked alone.
  std::size_t codings = 0;
  bool chunked_alone = true;
  for (auto field = first; field != last; ++field) {
    std::string_view list = field->value();
    while (!list.empty()) {
      const std::size_t comma = std::min(list.find(','), list.size());
      std::string_view coding = list.substr(0, comma);
      list.remove_prefix(std::min(comma + 1, list.size()));
      while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t'))
        coding.remove_prefix(1);
      while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t'))
        coding.remove_suffix(1);
      if (coding.empty()) continue;
      ++codings;
      chunked_alone = chunked_alone && boost::beast::iequals(coding, "chunked");
    }
  }
  if (codings != 1 || !chunked_alone) {
    return HeadRefusal{501, "no transfer coding but chunked is taken"};
  }
  return std::nullopt;
}

// Whether `host` is a Host field's host[:port] (RFC 3986 3.2.2: a registered name, an IPv4 or a
// bracketed IPv6 address): no user info, path, query or blank. Empty is allowed (RFC 9112 3.2).
inline bool isAuthority(std::string_view host) noexcept {
  constexpr std::string_view kMarks = "-._~!$&'()*+,;=:[]%";
  return std::all_of(host.begin(), host.end(), [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           kMarks.find(c) != std::string_view::npos;
  });
}

// Why a request's Host is refused (400), or nullopt: none in HTTP/1.1, two, or one that is no
// host[:port] (RFC 9112 3.2 has a server answer all three with 400).
template <class Fields>
std::optional<HeadRefusal> hostRefusal(const boost::beast::http::header<true, Fields>& header) {
  namespace http = boost::beast::http;
  const std::size_t hosts = header.count(http::field::host);
  if (hosts > 1) return HeadRefusal{400, "the request has more than one Host field"};
  if (hosts == 0 && header.version() >= 11) {
    return HeadRefusal{400, "an HTTP/1.1 request needs a Host field"};
  }
  if (hosts == 1 && !isAuthority(header[http::field::host])) {
    return HeadRefusal{400, "the Host field is not a host[:port]"};
  }
  return std::nullopt;
}

// Why a request's head is refused, by both rules above, or nullopt. Each door answers a refusal
// with its status and message, and closes the connection without reading on.
template <class Fields>
std::optional<HeadRefusal> headRefusal(const boost::beast::http::header<true, Fields>& header,
                                       bool chunked) {
  if (auto refusal = transferEncodingRefusal(header, chunked)) return refusal;
  return hostRefusal(header);
}

// Drops the empty lines (CRLF, or a bare LF) ahead of a request-line, as RFC 9112 2.2 has a
// server do: some clients send one after a POST body, and the parser takes it for a malformed
// request (a 400 and the close would lose the requests pipelined behind). Whether any went.
inline bool dropLeadingEmptyLines(boost::beast::flat_buffer& buffer) {
  const auto* bytes = static_cast<const char*>(buffer.data().data());
  std::size_t empty = 0;
  while (empty < buffer.size() && (bytes[empty] == '\r' || bytes[empty] == '\n')) ++empty;
  buffer.consume(empty);
  return empty > 0;
}

}  // namespace sluice::server
