// An allocator for big hash tables that asks the kernel for 2 MiB pages. A million-key table
// spread over 4 KiB pages misses the TLB on nearly every lookup; huge pages remove most of those
// misses. Small allocations go to the ordinary allocator.
#pragma once

#include <cstddef>
#include <memory>
#include <new>

namespace sluice {

inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

// Maps `bytes` starting at a 2 MiB boundary and advises transparent huge pages for it (a no-op
// where THP is off). Returns nullptr when the mapping fails.
[[nodiscard]] void* mapHugePages(std::size_t bytes) noexcept;
void unmapHugePages(void* memory, std::size_t bytes) noexcept;

template <typename T>
class HugePageAllocator {
 public:
  using value_type = T;

  HugePageAllocator() noexcept = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}  // NOLINT: rebinding

  [[nodiscard]] T* allocate(std::size_t count) {
    const std::size_t bytes = count * sizeof(T);
    if (bytes < kHugePageBytes) return std::allocator<T>().allocate(count);
    void* memory = mapHugePages(bytes);
    if (memory == nullptr) throw std::bad_alloc();
    return static_cast<T*>(memory);
  }

  void deallocate(T* memory, std::size_t count) noexcept {
    const std::size_t bytes = count * sizeof(T);
    if (bytes < kHugePageBytes) {
      std::allocator<T>().deallocate(memory, count);
    } else {
      unmapHugePages(memory, bytes);
    }
  }

  friend bool operator==(const HugePageAllocator&, const HugePageAllocator&) noexcept {
    return true;
  }
};

}  // namespace sluice
