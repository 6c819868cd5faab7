// exponent_histogram(): the group-wide exponent counts, in parallel over fixed-size chunks.
#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>

#include "df11/encoder.h"
#include "exponent_count.h"

namespace df11 {
namespace {

// Fixed chunking (independent of thread count); the sum of integer counts does not depend
// on the order of the reduction either, so the result is deterministic.
constexpr uint64_t kHistogramChunk = uint64_t{1} << 20;

}  // namespace

Histogram exponent_histogram(std::span<const uint16_t> weights) {
  const uint64_t n = weights.size();
  const uint64_t chunks = (n + kHistogramChunk - 1) / kHistogramChunk;
  return tbb::parallel_reduce(
      tbb::blocked_range<uint64_t>(0, chunks), Histogram{},
      [&](const tbb::blocked_range<uint64_t>& r, Histogram acc) {
        for (uint64_t c = r.begin(); c != r.end(); ++c) {
          const uint64_t begin = c * kHistogramChunk;
          const uint64_t count = std::min(kHistogramChunk, n - begin);
          ExponentCounts counts{};
          count_exponents(weights.data() + begin, count, counts);
          for (int k = 0; k < 4; ++k) {
            for (int e = 0; e < 256; ++e) acc[e] += counts.sub[k][e];
          }
        }
        return acc;
      },
      [](Histogram a, const Histogram& b) {
        for (int e = 0; e < 256; ++e) a[e] += b[e];
        return a;
      });
}

}  // namespace df11
