// Fuzz target: the GPU's XXH3_64bits as its host emulation runs it (decoder/cuda/host/
// xxh3_core.h: every block's sums in parallel, the scramble chains, the finish, the short-input
// branches) against libxxhash's (df11::xxh3_64), on the input and on the input taken twice
// over (longer inputs: more blocks, other block and stripe borders).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "df11/hash.h"
#include "fuzz_check.h"
#include "xxh3_emulation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> in(data, size);
  FUZZ_CHECK(df11::cuda::xxh3_64_emulated(in, df11::xxh3_default_secret()) == df11::xxh3_64(in));
  std::vector<uint8_t> twice(data, data + size);
  twice.insert(twice.end(), data, data + size);
  FUZZ_CHECK(df11::cuda::xxh3_64_emulated(twice, df11::xxh3_default_secret()) ==
             df11::xxh3_64(twice));
  return 0;
}
