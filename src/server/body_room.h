// Room in a connection's read buffer for a message body, and giving it back. Both front doors
// that read bodies (the decision API's HttpServer, the gateway's ProxySession) use it, one per
// read buffer.
//
// Why: Beast reads as much as the buffer has room for, and at least 512 bytes. A body's bytes
// leave the buffer as they come (the parser moves them into the body), so the buffer never grew
// by itself, and a body arrived 512 bytes a read: a 2 MB gateway download took 3,900 reads and
// as many writes, a 1 MB decision API body 1,900 reads. So a body that still has bytes to come
// once its head is read gets up to kMostBytes of room. Not a body that came whole with its
// head: most are small, and 64 KiB reserved and freed for each cost small requests throughput.
//
// Only room that was made is given back: shrinking any buffer over a few kilobytes made a
// client whose header blocks are larger regrow its buffer on every request, and a backlog of
// pipelined requests was copied whole on every one of them.
#pragma once

#include <algorithm>
#include <cstddef>

#include <boost/beast/core/flat_buffer.hpp>

namespace sluice::server {

class BodyRoom {
 public:
  // The most room a body gets: one read's worth, as Beast reads at most 64 KiB at a time.
  static constexpr std::size_t kMostBytes = 64 * 1024;

  // Makes room in `buffer` (beyond what it holds) for the next `bytes_to_come` of a body, up to
  // kMostBytes, and within the buffer's max_size: reserve would raise max_size past it, lifting
  // the bound that stops a chunk-size line that never ends.
  void make(boost::beast::flat_buffer& buffer, std::size_t bytes_to_come) {
    const std::size_t room =
        std::min({bytes_to_come, kMostBytes, buffer.max_size() - buffer.size()});
    if (buffer.capacity() - buffer.size() >= room) return;
    buffer.reserve(buffer.size() + room);
    made_ = true;
  }

  // Gives back the room make() made, keeping what `buffer` holds (a pipelined request, say).
  // Only with no read out into `buffer`: a read waiting in the reactor writes where the room was
  // (the gateway's client watch did, once an exchange ended: the next request went to freed
  // memory).
  void giveBack(boost::beast::flat_buffer& buffer) {
    if (!made_) return;
    made_ = false;
    buffer.shrink_to_fit();
  }

 private:
  bool made_ = false;  // since the last giveBack()
};

}  // namespace sluice::server
