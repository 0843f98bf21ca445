// A small per-thread stack of freed memory blocks of one size, in front of the heap: the gateway
// makes and drops an exchange (and, for a body, a chunk buffer) per request, and at a kilobyte
// and more each would be a large request to malloc, which then sweeps its small-block lists
// every time. Blocks are plain memory, so one freed on another thread than the one that made it
// simply joins that thread's stack. Internal to src/gateway.
#pragma once

#include <cstddef>
#include <new>

namespace sluice::gateway {

// Declare one thread_local per kind of block. kKept: the most it holds; more go to the heap.
template <std::size_t kKept>
class FreedBlocks {
 public:
  FreedBlocks() = default;
  FreedBlocks(const FreedBlocks&) = delete;
  FreedBlocks& operator=(const FreedBlocks&) = delete;

  // At thread exit. A block freed later on this thread (a static's destructor) goes to the
  // heap: the members stay readable, as they are plain values in the thread's storage.
  ~FreedBlocks() {
    closed_ = true;
    while (count_ > 0) ::operator delete(blocks_[--count_]);
  }

  // A kept block, or nullptr when there is none.
  void* take() noexcept { return count_ == 0 ? nullptr : blocks_[--count_]; }

  // Keeps `block` (from ::operator new) for a later take(); false when full or closed: the
  // caller frees it.
  bool keep(void* block) noexcept {
    if (closed_ || count_ == kKept) return false;
    blocks_[count_++] = block;
    return true;
  }

 private:
  void* blocks_[kKept];
  std::size_t count_ = 0;
  bool closed_ = false;
};

}  // namespace sluice::gateway
