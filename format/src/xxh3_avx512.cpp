// XXH3 for CPUs with AVX-512F. This file alone is compiled with -mavx512f
// (format/CMakeLists.txt): xxHash's header in inline mode then builds its AVX-512 kernel,
// which hashes faster than the SSE2 kernel of Debian's libxxhash (BENCHMARKS.md "CPU
// checksums"). The digests are the same by definition of XXH3. xxh3.cpp calls these only
// after checking the CPU at run time.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "xxh3_kernels.h"

namespace df11::detail {

void xxh3_update_avx512(void* state, const uint8_t* bytes, size_t size) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state), bytes, size);
}

uint64_t xxh3_64_avx512(const uint8_t* bytes, size_t size) { return XXH3_64bits(bytes, size); }

}  // namespace df11::detail
