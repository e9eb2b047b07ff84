#include "yolotrain/lifecycle/memory/host_memory.hpp"

#include <limits>  // also defines __GLIBC__ where it is glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace yolotrain::lifecycle {

#if defined(__GLIBC__)

bool keep_freed_host_memory() noexcept {
  constexpr int kMiB = 1 << 20;
  // mallopt returns 1 on success. The mmap threshold's maximum is 32 MiB on 64-bit glibc; larger
  // blocks are still mapped and unmapped per allocation.
  const bool mmap = mallopt(M_MMAP_THRESHOLD, 32 * kMiB) == 1;
  const bool trim = mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max()) == 1;  // 2 GiB
  const bool pad = mallopt(M_TOP_PAD, 64 * kMiB) == 1;
  return mmap && trim && pad;
}

bool release_freed_host_memory() noexcept { return malloc_trim(0) == 1; }

#else

bool keep_freed_host_memory() noexcept { return false; }
bool release_freed_host_memory() noexcept { return false; }

#endif

}  // namespace yolotrain::lifecycle
