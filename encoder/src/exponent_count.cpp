// Per-chunk exponent counts, the parallel pass behind exponent_histogram() and plan_group().
#include "exponent_count.h"

#include <algorithm>

#include "parallel_chunks.h"

namespace df11 {
namespace {

void count_chunk(const MemberStream& stream, uint64_t begin, uint64_t end, ChunkCounts& out) {
  ExponentCounts counts{};
  stream.for_each_piece(begin, end, [&](const uint16_t* p, uint64_t count, uint64_t) {
    count_exponents(p, count, counts);
  });
  for (int e = 0; e < 256; ++e) {
    uint32_t sum = 0;
    for (const auto& sub : counts.sub) sum += sub[e];
    out[e] = sum;
  }
}

}  // namespace

std::vector<ChunkCounts> count_chunk_exponents(
    const MemberStream& stream, uint64_t chunk_weights,
    const std::function<void(uint64_t, uint64_t)>& weights_read,
    const std::function<void(uint64_t, uint64_t)>& weights_to_read) {
  const uint64_t n_chunks = (stream.size() + chunk_weights - 1) / chunk_weights;
  std::vector<ChunkCounts> chunks(n_chunks);
  parallel_for_chunks(0, n_chunks, [&](uint64_t c) {
    const uint64_t begin = c * chunk_weights;
    const uint64_t end = std::min(stream.size(), begin + chunk_weights);
    if (weights_to_read) weights_to_read(begin, end);
    count_chunk(stream, begin, end, chunks[c]);
    if (weights_read) weights_read(begin, end);
  });
  return chunks;
}

}  // namespace df11
