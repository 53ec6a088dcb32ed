// Hands memory the process freed back to the system. glibc keeps what a
// thread frees in that thread's arena and returns it only when asked, so
// without this kiln's RSS follows the most it ever held (a forgetting pass's
// two dictionaries, an attack's partial requests, the symbolizer's DWARF),
// not what it holds. Elsewhere (macOS) the allocator returns memory itself.
#pragma once

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace kiln::storage {

inline void ReleaseFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace kiln::storage
