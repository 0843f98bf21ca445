// Test helper: a real HTTP/1.1 upstream on 127.0.0.1, in-process on its own thread, for the
// gateway's end-to-end tests. Paths:
//   /echo                the request body back; every request header as X-Echo-<name>
//   /big?bytes=N         N bytes of a known pattern, with Content-Length
//   /big-chunked?bytes=N the same, chunked
//   /slow?ms=N           answers after N ms (a timer, no thread blocked)
//   /fail                closes the connection without answering
//   /then-close          200 "ok", kept alive by its headers, then the connection is closed (as
//                        an upstream's idle timeout would close a parked connection)
//   /until-close?bytes=N N bytes of the /big pattern with neither Content-Length nor chunking:
//                        the body ends when the upstream closes, right after writing it
//   /limits, /limits-garbage, /limits-slow?ms=N   dynamic-limit webhook answers
//   /limits-strict       /limits's answer to a body that is valid JSON (UTF-8 included), else 400
//   /late-extra          200 "ok", kept alive; 20 ms later, on the same connection, a second answer
//                        nobody asked for (body "INJECTED"), as an upstream that writes a body
//                        behind a HEAD answer or past its Content-Length does
//   /bad-status          an answer with the invalid status 000, then the connection is closed
//   /gzip-coded          a 200 with "Transfer-Encoding: gzip" (no chunked), then the close
//   /no-content          a 204 with "Content-Length: 5" (which a 204 may not carry), then the
//                        close
//   /early-close         413 as soon as the request header is read, the body left unread, then
//                        the connection is closed (the kernel resets it: unread data)
//   /early-hold          the same 413, but the connection stays open and is never read again
//                        (until the upstream stops), as an upstream that stops taking a body
//   /early-interim-hold  /early-hold's 413, behind an interim 100 Continue (in one write)
//   /endless-chunk-line  a chunked 200 whose first chunk-size line never ends: 4 MiB of a
//                        chunk extension, then the connection is closed
//   /ws                  a WebSocket request gets 101 (with an X-RateLimit-Limit: 100 of the
//                        upstream's own) and "hello" right behind it, then every
//                        byte echoed until the gateway's end of stream, answered with its own;
//                        any other request 426, with the request headers echoed as for /echo
//   /ws-unasked          101 whatever the request asked for, then the connection is closed
//   /own-rate-limit-fields  200 "ok" with X-RateLimit-Limit: 100, X-RateLimit-Remaining: 99 and
//                        RateLimit: "app";r=99;t=60, as an application reporting its own limit
//   anything else        200 "ok", with the request headers echoed as for /echo
// Every answer built from a request echoes its target in X-Echo-Target.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace sluice::testing {

// Byte i of a /big body.
inline char bigByte(std::size_t i) { return static_cast<char>('a' + (i * 7 + i / 251) % 26); }

inline std::string bigBody(std::size_t bytes) {
  std::string body(bytes, '\0');
  for (std::size_t i = 0; i < bytes; ++i) body[i] = bigByte(i);
  return body;
}

class TestUpstream {
 public:
  // The webhook answer /limits gives; set before requests arrive.
  std::string limits_answer = R"({"limits": []})";
  std::atomic<int> heads{0};             // request heads received (their bodies may follow)
  std::atomic<int> cut_mid_body{0};      // connections that ended after a head, its body unread
  std::atomic<int> requests{0};          // requests received
  std::atomic<int> connections{0};       // connections accepted
  std::atomic<int> in_flight{0};         // requests received and not yet answered
  std::atomic<int> closed_after{0};      // connections closed after answering /then-close
  std::atomic<int> late_extras{0};       // unasked answers written after /late-extra
  std::atomic<int> websockets{0};        // /ws requests switched to echoing
  std::atomic<int> websockets_ended{0};  // of those, ended by the gateway's end of stream

  TestUpstream();  // listening, on a thread of its own
  ~TestUpstream();
  TestUpstream(const TestUpstream&) = delete;
  TestUpstream& operator=(const TestUpstream&) = delete;

  [[nodiscard]] const boost::asio::ip::tcp::endpoint& endpoint() const { return endpoint_; }
  [[nodiscard]] std::string address() const {
    return "127.0.0.1:" + std::to_string(endpoint_.port());
  }

 private:
  struct Connection;  // one accepted connection, answering as the paths above say

  void accept();

  boost::asio::io_context io_;
  std::vector<std::shared_ptr<Connection>> held_;  // /early-hold's, until the upstream stops
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::ip::tcp::endpoint endpoint_;
  std::thread thread_;
};

}  // namespace sluice::testing
