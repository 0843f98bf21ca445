#include "store/huge_page_allocator.h"

#include <cstdint>

#include <sys/mman.h>
#include <unistd.h>

namespace sluice {
namespace {

std::size_t roundUpToPage(std::size_t bytes) noexcept {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

}  // namespace

void* mapHugePages(std::size_t bytes) noexcept {
  const std::size_t length = roundUpToPage(bytes);
  // Over-map by one huge page, then trim both ends so the start is 2 MiB aligned. The length is
  // not rounded to huge pages: the tail is backed by small pages rather than wasted.
  void* raw = mmap(nullptr, length + kHugePageBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  if (aligned > start) munmap(raw, aligned - start);
  const std::uintptr_t end = start + length + kHugePageBytes;
  if (end > aligned + length)
    munmap(reinterpret_cast<void*>(aligned + length), end - aligned - length);
  madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

void unmapHugePages(void* memory, std::size_t bytes) noexcept {
  munmap(memory, roundUpToPage(bytes));
}

}  // namespace sluice
