#include "policy/freed_memory.h"

#include <malloc.h>

namespace sluice::policy {

void releaseFreedMemory() noexcept { ::malloc_trim(0); }

}  // namespace sluice::policy
