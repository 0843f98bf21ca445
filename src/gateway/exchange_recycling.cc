// Where exchanges' memory comes from: a small per-thread stack of freed blocks in front of the
// heap (proxy_exchange.h says why). Blocks are plain memory, so one freed on another thread than
// the one that made it simply joins that thread's stack.
#include <cstddef>
#include <new>

#include "gateway/proxy_exchange.h"

namespace sluice::gateway {
namespace {

class FreedExchanges {
 public:
  // Enough for the exchanges one loop has in flight at a burst's end; more go back to the heap.
  static constexpr std::size_t kKept = 256;

  // At thread exit. An exchange freed later on this thread (a static's destructor) goes to
  // the heap: the members stay readable, as they are plain values in the thread's storage.
  ~FreedExchanges() {
    closed_ = true;
    while (count_ > 0) ::operator delete(blocks_[--count_]);
  }

  void* take() noexcept { return count_ == 0 ? nullptr : blocks_[--count_]; }

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

thread_local FreedExchanges freed;

}  // namespace

void* ProxySession::Exchange::operator new(std::size_t bytes) {
  if (bytes == sizeof(Exchange)) {
    if (void* block = freed.take()) return block;
  }
  return ::operator new(bytes);
}

void ProxySession::Exchange::operator delete(void* block, std::size_t bytes) noexcept {
  if (bytes == sizeof(Exchange) && freed.keep(block)) return;
  ::operator delete(block);
}

}  // namespace sluice::gateway
