#include "gateway/chunk_buffer.h"

#include <new>

#include "gateway/freed_blocks.h"

namespace sluice::gateway {

// Instantiated whole here: GCC 12 otherwise left the destructor that the thread_local's exit
// registration needs undefined (a link error).
template class FreedBlocks<32>;

namespace {

// 2 MiB a thread at most: enough for the bodies one loop moves at once in a busy spell; the
// rest go back to the heap.
thread_local FreedBlocks<32> freed;

}  // namespace

char* ChunkBuffer::data() {
  if (data_ == nullptr) {
    void* block = freed.take();
    data_ = static_cast<char*>(block != nullptr ? block : ::operator new(kChunkBytes));
  }
  return data_;
}

void ChunkBuffer::release() noexcept {
  if (data_ == nullptr) return;
  if (!freed.keep(data_)) ::operator delete(data_);
  data_ = nullptr;
}

}  // namespace sluice::gateway
