// XXH3 kernels beside the library's (xxh3_avx512.cpp), chosen at run time by xxh3.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace df11::detail {

// True if the build has the AVX-512 kernels and this CPU (and its OS) runs them.
bool xxh3_avx512_usable();

// `state` is an XXH3_state_t made by libxxhash (the same header, so the same layout).
void xxh3_update_avx512(void* state, const uint8_t* bytes, size_t size);
uint64_t xxh3_64_avx512(const uint8_t* bytes, size_t size);

}  // namespace df11::detail
