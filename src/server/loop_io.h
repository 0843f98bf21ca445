// The socket and timer types of the server's loops. Each loop is one io_context run by one
// thread (io_pool.h), and its connections and timers never leave it.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>

#include <boost/asio/basic_stream_socket.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace sluice::server {

// A socket and a timer of one loop (io_context), typed with the loop's own executor rather than
// the type-erased any_io_executor: every asynchronous operation copies and destroys its I/O
// object's executor and tracks work on it, which through the type erasure costs calls and
// branches (measured on the gateway: about 1% of its CPU in the erasure's copy and destroy).
using LoopSocket =
    boost::asio::basic_stream_socket<boost::asio::ip::tcp, boost::asio::io_context::executor_type>;
using LoopTimer =
    boost::asio::basic_waitable_timer<std::chrono::steady_clock,
                                      boost::asio::wait_traits<std::chrono::steady_clock>,
                                      boost::asio::io_context::executor_type>;

// What one non-blocking peek at a connected socket sees: > 0 that many bytes (at most `size`)
// wait to be read and are copied to `into`, 0 the peer closed (or half-closed) its side, < 0
// nothing yet (errno EAGAIN) or an error (errno says). How the server and the gateway look at
// what the other end sent, or whether it is still there, without reading it.
inline ssize_t peekBytes(int native_handle, char* into, std::size_t size) noexcept {
  return ::recv(native_handle, into, size, MSG_PEEK | MSG_DONTWAIT);
}

inline ssize_t peekOneByte(int native_handle) noexcept {
  char byte = 0;
  return peekBytes(native_handle, &byte, 1);
}

}  // namespace sluice::server
