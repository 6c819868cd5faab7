#include "df11/block_limits.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "df11/group.h"
#include "df11/tsan_edges.h"

namespace df11::app {

uint64_t block_starts_bound(const GroupPlan& plan) {
  uint32_t shortest = kMaxCodeLength;
  for (uint32_t len : plan.code.length) {
    if (len != 0) shortest = std::min(shortest, len);
  }
  return (kBitsPerBlock + shortest - 1) / shortest;
}

uint64_t max_block_weights(const MemberSpans& members, const GroupPlan& plan) {
  const uint64_t bound = block_starts_bound(plan);
  if (bound <= kMaxWeightsPerBlockCompat || plan.n_elements == 0) {
    // Not exact, but on the right side of the limit, which is all the caller decides on.
    return std::min<uint64_t>(bound, plan.n_elements);
  }
  std::vector<std::atomic<uint32_t>> starts(plan.n_blocks);
  const uint8_t* length = plan.code.length.data();
  char fork = 0, join = 0;  // df11/tsan_edges.h: TSan cannot see TBB's own ordering
  detail::tsan_release(&fork);
  tbb::parallel_for(uint64_t{0}, plan.n_chunks(), [&](uint64_t c) {
    detail::tsan_acquire(&fork);
    const uint64_t begin = c * plan.chunk_weights;
    const uint64_t end = std::min(plan.n_elements, begin + plan.chunk_weights);
    uint64_t bit = plan.chunk_bit_offset[c];
    uint64_t block = bit / kBitsPerBlock;
    uint32_t count = 0;
    members.stream().for_each_piece(begin, end, [&](const uint16_t* w, uint64_t n, uint64_t) {
      for (const uint16_t v : std::span(w, n)) {
        const uint64_t b = bit / kBitsPerBlock;
        if (b != block) {
          starts[block].fetch_add(count, std::memory_order_relaxed);
          block = b;
          count = 0;
        }
        ++count;
        bit += length[(v >> 7) & 0xff];
      }
    });
    if (count != 0) starts[block].fetch_add(count, std::memory_order_relaxed);
    detail::tsan_release(&join);
  });
  detail::tsan_acquire(&join);
  uint64_t most = 0;
  for (const auto& s : starts) most = std::max<uint64_t>(most, s.load(std::memory_order_relaxed));
  return most;
}

std::string compat_violation(const CompatSizes& sizes) {
  if (sizes.n_elements > kMaxElementsCompat) {
    return std::to_string(sizes.n_elements) + " weights, above the loader's limit of " +
           std::to_string(kMaxElementsCompat) +
           " (Max_Elements_Compat: its kernel counts weights in an int; --group-by tensor "
           "makes smaller groups)";
  }
  if (sizes.n_blocks > kMaxBlocksCompat) {
    return std::to_string(sizes.n_blocks) + " blocks of coded exponents, above the loader's " +
           "limit of " + std::to_string(kMaxBlocksCompat) +
           " (Max_Blocks_Compat: its kernel computes byte offsets in an int; --group-by tensor "
           "makes smaller groups)";
  }
  if (sizes.max_block_weights > kMaxWeightsPerBlockCompat) {
    return std::to_string(sizes.max_block_weights) +
           " weights would start in one 4096-byte block, above the loader's limit of " +
           std::to_string(kMaxWeightsPerBlockCompat) + " (too little entropy)";
  }
  return "";
}

}  // namespace df11::app
