#include "policy/freed_memory.h"

#include <cstdlib>  // defines __GLIBC__ on glibc, which the test below needs

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sluice::policy {

void releaseFreedMemory() noexcept {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

}  // namespace sluice::policy
