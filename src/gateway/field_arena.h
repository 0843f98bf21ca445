// The header fields of the messages one connection parses (its request, the upstream's
// response) are allocated from a block the connection keeps, not one malloc per field: the
// block is rewound when both parsers are gone, before the next request. A message with more
// fields than fit falls back to the heap. Internal to src/gateway.
#pragma once

#include <cstddef>
#include <memory>
#include <new>

#include <boost/beast/http/fields.hpp>

namespace sluice::gateway {

class FieldArena {
 public:
  static constexpr std::size_t kBytes = 8 * 1024;

  void* allocate(std::size_t bytes, std::size_t align) {
    if (align <= alignof(std::max_align_t)) {
      if (block_ == nullptr) block_ = std::make_unique_for_overwrite<std::byte[]>(kBytes);
      const std::size_t start = (used_ + align - 1) & ~(align - 1);
      if (start + bytes <= kBytes) {
        used_ = start + bytes;
        return block_.get() + start;
      }
    }
    return ::operator new(bytes, std::align_val_t(align));
  }

  void deallocate(void* pointer, std::size_t align) noexcept {
    const auto* byte = static_cast<const std::byte*>(pointer);
    if (block_ != nullptr && byte >= block_.get() && byte < block_.get() + kBytes) return;
    ::operator delete(pointer, std::align_val_t(align));
  }

  // Only when nothing allocated from the block is in use any more.
  void rewind() noexcept { used_ = 0; }

 private:
  std::unique_ptr<std::byte[]> block_;
  std::size_t used_ = 0;
};

template <class T>
class ArenaAllocator {
 public:
  using value_type = T;

  explicit ArenaAllocator(FieldArena& arena) noexcept : arena_(&arena) {}
  template <class U>
  ArenaAllocator(const ArenaAllocator<U>& other) noexcept  // NOLINT: allocator rebinding
      : arena_(other.arena()) {}

  T* allocate(std::size_t n) {
    return static_cast<T*>(arena_->allocate(n * sizeof(T), alignof(T)));
  }
  void deallocate(T* pointer, std::size_t) noexcept { arena_->deallocate(pointer, alignof(T)); }

  [[nodiscard]] FieldArena* arena() const noexcept { return arena_; }
  template <class U>
  bool operator==(const ArenaAllocator<U>& other) const noexcept {
    return arena_ == other.arena();
  }

 private:
  FieldArena* arena_;
};

using ArenaFields = boost::beast::http::basic_fields<ArenaAllocator<char>>;

}  // namespace sluice::gateway
