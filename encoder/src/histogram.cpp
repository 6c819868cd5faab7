// exponent_histogram(): the exponent counts of a run of weights, in parallel over fixed-size
// chunks. Integer sums do not depend on the order of reduction: deterministic.
#include "df11/encoder.h"
#include "df11/member_stream.h"
#include "exponent_count.h"

namespace df11 {

Histogram exponent_histogram(std::span<const uint16_t> weights) {
  constexpr uint64_t kHistogramChunk = uint64_t{1} << 20;
  const std::span<const uint16_t> one[1] = {weights};
  const MemberStream stream(one);
  Histogram h{};
  for (const ChunkCounts& counts : count_chunk_exponents(stream, kHistogramChunk)) {
    for (int e = 0; e < 256; ++e) h[e] += counts[e];
  }
  return h;
}

}  // namespace df11
