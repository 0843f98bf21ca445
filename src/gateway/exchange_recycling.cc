// Where exchanges' memory comes from: a small per-thread stack of freed blocks in front of the
// heap (proxy_exchange.h says why).
#include <cstddef>
#include <new>

#include "gateway/freed_blocks.h"
#include "gateway/proxy_exchange.h"

namespace sluice::gateway {
namespace {

// Enough for the exchanges one loop has in flight at a burst's end.
thread_local FreedBlocks<256> freed;

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
