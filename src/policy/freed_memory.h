// After a config load: big files (a lyft directory of tens of thousands of descriptors, a keys
// file of a hundred thousand keys) take hundreds of megabytes while they are parsed (YAML nodes,
// then the config built from them), and when a reload replaces the config the old one is freed
// too. glibc keeps such freed memory in its free lists rather than giving it back, so a process
// that reloaded once stayed at its peak. A reload is rare, and handing the free pages back costs
// a few milliseconds.
#pragma once

namespace sluice::policy {

// Thread-safe. Gives the memory the allocator holds free back to the system (glibc's
// malloc_trim; nothing elsewhere). It locks each malloc arena in turn while it trims it, so
// threads allocating meanwhile may wait for it: call it once per load, not per request.
void releaseFreedMemory() noexcept;

}  // namespace sluice::policy
