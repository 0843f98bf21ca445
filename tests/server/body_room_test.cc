// BodyRoom: room made for a body that is still coming, within the buffer's bound, and given
// back only when it was made, keeping what the buffer holds.
#include "server/body_room.h"

#include <string>

#include <gtest/gtest.h>
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/buffers_to_string.hpp>

namespace sluice::server {
namespace {

namespace beast = boost::beast;

void append(beast::flat_buffer& buffer, const std::string& bytes) {
  buffer.commit(boost::asio::buffer_copy(buffer.prepare(bytes.size()), boost::asio::buffer(bytes)));
}

std::string contents(const beast::flat_buffer& buffer) {
  return beast::buffers_to_string(buffer.data());
}

TEST(BodyRoom, MakesRoomUpToARead) {
  beast::flat_buffer buffer;
  BodyRoom room;
  room.make(buffer, 10'000);
  EXPECT_GE(buffer.capacity(), 10'000u);
  room.make(buffer, 10'000'000);  // a large body still gets a read's worth, no more
  EXPECT_GE(buffer.capacity(), BodyRoom::kMostBytes);
  EXPECT_LT(buffer.capacity(), 2 * BodyRoom::kMostBytes);
}

// The room stays within max_size, and max_size stays: Beast's reserve would raise it, lifting
// the bound that stops a chunk-size line that never ends.
TEST(BodyRoom, StaysWithinTheBuffersBound) {
  beast::flat_buffer buffer(8'000);
  append(buffer, std::string(3'000, 'h'));
  BodyRoom room;
  room.make(buffer, BodyRoom::kMostBytes);
  EXPECT_EQ(buffer.max_size(), 8'000u);
  EXPECT_LE(buffer.capacity(), 8'000u);
  EXPECT_EQ(contents(buffer), std::string(3'000, 'h'));
}

// Given back: what the buffer holds (a pipelined request) stays, the room goes.
TEST(BodyRoom, GivesBackTheRoomKeepingTheBytes) {
  beast::flat_buffer buffer;
  BodyRoom room;
  room.make(buffer, BodyRoom::kMostBytes);
  append(buffer, "GET /next HTTP/1.1\r\n\r\n");
  room.giveBack(buffer);
  EXPECT_EQ(contents(buffer), "GET /next HTTP/1.1\r\n\r\n");
  EXPECT_LT(buffer.capacity(), 4'096u);
}

// Room it did not make is not its to give: a buffer grown by a large header block, or holding
// a backlog of pipelined requests, is not shrunk (and copied) on every request.
TEST(BodyRoom, GivesBackOnlyTheRoomItMade) {
  beast::flat_buffer buffer;
  append(buffer, std::string(20'000, 'p'));
  const std::size_t grown = buffer.capacity();
  buffer.consume(100);
  BodyRoom room;
  room.giveBack(buffer);
  EXPECT_EQ(buffer.capacity(), grown);
  room.make(buffer, 100);  // room enough already: nothing made
  room.giveBack(buffer);
  EXPECT_EQ(buffer.capacity(), grown);
  room.make(buffer, BodyRoom::kMostBytes);
  room.giveBack(buffer);
  room.giveBack(buffer);  // once
  EXPECT_EQ(contents(buffer), std::string(19'900, 'p'));
}

}  // namespace
}  // namespace sluice::server
