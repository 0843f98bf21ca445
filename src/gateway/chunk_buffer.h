// The buffer a gateway session's body bytes pass through, held only while an exchange moves a
// body. Internal to src/gateway.
//
// Why not one per connection, kept: an idle kept-alive connection that had once moved a body
// then held 64 KiB for nothing, 640 MB for 10,000 of them. Why not one per request from the
// heap: a 64 KiB malloc and free per request, or worse, zeroed (clearing 64 KiB per request was
// a sixth of the gateway's CPU once). So each thread keeps a few freed ones (freed_blocks.h),
// and a session takes one when a body first moves and gives it back when its exchange ends.
#pragma once

#include <cstddef>

namespace sluice::gateway {

// Body bytes move through a buffer of this size: bodies of any size cost a session this much.
inline constexpr std::size_t kChunkBytes = 64 * 1024;

class ChunkBuffer {
 public:
  ChunkBuffer() = default;
  ~ChunkBuffer() { release(); }
  ChunkBuffer(const ChunkBuffer&) = delete;
  ChunkBuffer& operator=(const ChunkBuffer&) = delete;

  // kChunkBytes to read into and write from (not zeroed), taken on first use.
  [[nodiscard]] char* data();

  // Gives the buffer back, for this thread's next session that needs one. Only with no read or
  // write using it out: another session may take it at once.
  void release() noexcept;

  [[nodiscard]] bool held() const noexcept { return data_ != nullptr; }

 private:
  char* data_ = nullptr;
};

}  // namespace sluice::gateway
