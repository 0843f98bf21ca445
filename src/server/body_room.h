// Room in a connection's read buffer for a message body, and giving it back. Both front doors
// that read bodies (the decision API's HttpServer, the gateway's ProxySession) use these.
//
// Why: Beast reads as much as the buffer has room for, and at least 512 bytes. A body's bytes
// leave the buffer as they come (the parser moves them into the body), so the buffer never grew
// by itself, and a body arrived 512 bytes a read: a 2 MB gateway download took 3,900 reads and
// as many writes, a 1 MB decision API body 1,900 reads. So a body that still has bytes to come
// once its head is read gets up to kBodyRoomBytes of room. Not a body that came whole with its
// head: most are small, and 64 KiB reserved and freed for each cost small requests throughput.
#pragma once

#include <algorithm>
#include <cstddef>

#include <boost/beast/core/flat_buffer.hpp>

namespace sluice::server {

// The most room a body gets: one read's worth, as Beast reads at most 64 KiB at a time.
inline constexpr std::size_t kBodyRoomBytes = 64 * 1024;
// What a buffer keeps once a body is done: room for a usual request head.
inline constexpr std::size_t kIdleBufferBytes = 4096;

// Makes room in `buffer` (beyond what it holds) for the next `bytes_to_come` of a body, up to
// kBodyRoomBytes and within the buffer's max_size (reserve throws past it).
inline void roomForBody(boost::beast::flat_buffer& buffer, std::size_t bytes_to_come) {
  const std::size_t room =
      std::min({bytes_to_come, kBodyRoomBytes, buffer.max_size() - buffer.size()});
  if (buffer.capacity() - buffer.size() < room) buffer.reserve(buffer.size() + room);
}

// Gives a body's room back, keeping what a head needs. Only with no read out into `buffer`: a
// read waiting in the reactor writes where the room was (the gateway's client watch did, once
// an exchange ended: the next request went to freed memory).
inline void giveBackRoom(boost::beast::flat_buffer& buffer) {
  if (buffer.capacity() > kIdleBufferBytes) buffer.shrink_to_fit();
}

}  // namespace sluice::server
