// ChunkBuffer: taken on first use, the same while held, recycled on its thread once given back,
// and a whole kChunkBytes (the sanitizer tree checks the writes).
#include "gateway/chunk_buffer.h"

#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace sluice::gateway {
namespace {

TEST(ChunkBuffer, HeldFromFirstUseUntilReleased) {
  ChunkBuffer chunk;
  EXPECT_FALSE(chunk.held());
  char* data = chunk.data();
  ASSERT_NE(data, nullptr);
  EXPECT_TRUE(chunk.held());
  std::memset(data, 'x', kChunkBytes);
  EXPECT_EQ(chunk.data(), data) << "a held buffer changed";
  chunk.release();
  EXPECT_FALSE(chunk.held());
  chunk.release();  // twice is harmless
}

// A released buffer is the next one a session on the same thread takes: idle sessions hold
// none, and busy ones do not go to the heap for each body.
TEST(ChunkBuffer, AReleasedBufferIsTakenAgainOnItsThread) {
  ChunkBuffer first;
  char* data = first.data();
  first.release();
  ChunkBuffer second;
  EXPECT_EQ(second.data(), data);
}

// Past the kept few, buffers go back to the heap (the sanitizer tree's leak check sees any
// that does not), and every one taken is distinct while held.
TEST(ChunkBuffer, ManyAtOnceAreDistinct) {
  for (int round = 0; round < 2; ++round) {
    std::vector<ChunkBuffer> chunks(100);
    std::set<char*> seen;
    for (ChunkBuffer& chunk : chunks) {
      std::memset(chunk.data(), 'y', kChunkBytes);
      seen.insert(chunk.data());
    }
    EXPECT_EQ(seen.size(), chunks.size());
  }
}

// Each thread keeps its own: one released here is not what another thread takes (its loop's
// sessions never share a buffer with this one's).
TEST(ChunkBuffer, EachThreadKeepsItsOwn) {
  ChunkBuffer mine;
  char* released_here = mine.data();
  mine.release();
  char* taken_there = nullptr;
  std::thread other([&taken_there] {
    ChunkBuffer chunk;
    std::memset(chunk.data(), 'z', kChunkBytes);
    taken_there = chunk.data();
  });
  other.join();
  EXPECT_NE(taken_there, released_here);
  ChunkBuffer again;
  EXPECT_EQ(again.data(), released_here);
}

}  // namespace
}  // namespace sluice::gateway
