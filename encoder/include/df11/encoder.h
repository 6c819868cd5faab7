// DF11 encoder: exponent histograms, length-limited Huffman codes, lookup tables and the
// bitstream with its gaps and output positions (spec/DF11.md sections 2 and 3).
//
// Two-phase, so that callers can size and place outputs before any byte is coded:
//   1. plan_group(members)   -> GroupPlan: histogram (TBB), optimal code, exact output sizes.
//   2. encode_group_range()  -> writes coded bytes for a range of chunks into caller buffers.
// encode_group() does both into owned buffers. All results are deterministic: the same input
// gives the same bytes at any thread count. Thread count comes from the caller's
// tbb::task_arena / global_control; nothing here creates threads of its own.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "df11/group.h"
#include "df11/status.h"

namespace df11 {

using Histogram = std::array<uint64_t, 256>;  // count of each 8-bit exponent value

// Exponent (bits 7..14) of each BF16 pattern in `weights`, counted in parallel.
Histogram exponent_histogram(std::span<const uint16_t> weights);

// A prefix code over exponent values, canonical (spec 2.3).
struct Code {
  std::array<uint8_t, 256> length{};  // 0 = symbol absent
  std::array<uint32_t, 256> bits{};   // code word, right-aligned, MSB sent first
  uint32_t max_length = 0;
};

// Optimal length-limited code lengths for `hist` (package-merge), length <= max_length,
// that also satisfy the LUT limit (at most kMaxSubtables subtables; spec 2.4). A histogram
// with one symbol gets a 1-bit code. kUncodable if a symbol >= 240 has a non-zero count;
// kInvalidArgument if the histogram is empty.
Result<Code> build_code(const Histogram& hist, uint32_t max_length = kMaxCodeLength);

// Lookup tables (spec 3.3) for a code: rows [root, subtables..., lengths], 256 bytes each.
Result<std::vector<uint8_t>> build_luts(const Code& code);

// Chunking of a group's concatenated weights. Chunks are the unit of parallel encoding.
inline constexpr uint64_t kDefaultChunkWeights = uint64_t{1} << 20;

struct GroupPlan {
  Code code;
  std::vector<uint8_t> luts;
  Histogram histogram{};
  uint64_t n_elements = 0;
  uint64_t n_bits = 0;                  // sum of code lengths
  uint64_t n_bytes = 0;                 // ceil(n_bits / 8)
  uint64_t n_blocks = 0;                // ceil(n_bytes / 4096)
  uint64_t gaps_bytes = 0;              // gap_bytes_for_blocks(n_blocks)
  uint64_t output_positions_bytes = 0;  // 4 * (n_blocks + 1)
  uint64_t chunk_weights = kDefaultChunkWeights;
  std::vector<uint64_t> chunk_bit_offset;  // size n_chunks + 1; [n_chunks] == n_bits
  std::vector<int64_t> split_positions;    // cumulative member ends except the last
  uint32_t max_block_weights = 0;          // filled by encode (0 until then)
  double entropy_bits = 0;                 // Shannon entropy of the histogram, bits/weight
  uint64_t n_chunks() const { return chunk_bit_offset.size() - 1; }
};

// Told by plan_group() and encode_group_range(), on the worker that read them, that the
// weights [begin, end) of the group's stream (one chunk, or the part of it in the call) have
// been read, so that a caller reading them from a mapping can drop their pages while other
// chunks are still being read. A hint: encode_group_range() may later read a weight or a
// few next to a range again (the previous chunk's last code, a block's size). Called
// concurrently from several threads; empty: nobody is told.
using WeightsRead = std::function<void(uint64_t begin, uint64_t end)>;
// The same calls' other hint, `weights_to_read`: told on the worker about to read them that
// the weights [begin, end) come next, so that a caller reading them from a mapping can map
// their pages in one call instead of faulting them in piece by piece. Same threads; empty:
// nobody is told.

// Members are concatenated in order (each flattened row-major) into one stream.
Result<GroupPlan> plan_group(std::span<const std::span<const uint16_t>> members,
                             uint64_t chunk_weights = kDefaultChunkWeights,
                             const WeightsRead& weights_read = {},
                             const WeightsRead& weights_to_read = {});

// A prediction of plan_group() for a group of `n_elements` weights in `n_members` members
// from a sample of its exponents (remote inspect reads a few KiB of each tensor, not the
// tensor): the code is built from `sample`, and n_bits is the sample's mean code length
// times n_elements, so the sizes are exact only when the sample's shares are the group's.
// `histogram` is the sample's, split_positions holds n_members - 1 placeholder zeros and
// chunk_bit_offset is {0, n_bits}: the plan sizes outputs, it cannot drive encode_group_range.
// kUncodable as build_code (an exponent >= 240 in the sample) or for n >= 2^32;
// kInvalidArgument for an empty sample or n_members outside [1, n_elements].
Result<GroupPlan> predict_group_plan(const Histogram& sample, uint64_t n_elements,
                                     size_t n_members);

// Destination spans, sized from the plan, zero-filled by the caller before the first call.
struct GroupOutput {
  std::span<uint8_t> encoded_exponent;  // plan.n_bytes, or a window of them (below)
  std::span<uint8_t> sign_mantissa;     // plan.n_elements, or a window of them
  std::span<uint8_t> output_positions;  // plan.output_positions_bytes
  std::span<uint8_t> gaps;              // plan.gaps_bytes
  // Windows: with these set (or the spans shorter than the plan's sizes), encoded_exponent
  // holds the stream's bytes [encoded_exponent_first, + its size) and sign_mantissa the
  // weights [sign_mantissa_first, + its size), so that a caller coding a group range by range
  // needs memory for one range at a time; a range call must lie inside both windows. The
  // first and last byte of a range's stream can also hold the neighbouring ranges' bits
  // (encoder/NOTES.md section 7): the caller ORs the windows' shared bytes together.
  uint64_t encoded_exponent_first = 0;  // bytes
  uint64_t sign_mantissa_first = 0;     // weights (= bytes)
};

// Codes chunks [first_chunk, last_chunk) (parallel inside). Calls on disjoint chunk ranges
// may run concurrently: bytes shared by neighbouring chunks are merged with atomic OR.
// Returns the largest number of weights in any block started inside the range, which the
// caller reduces over all ranges (blocks straddling ranges are counted exactly once, by the
// range holding the block's first code).
Result<uint32_t> encode_group_range(std::span<const std::span<const uint16_t>> members,
                                    const GroupPlan& plan, uint64_t first_chunk,
                                    uint64_t last_chunk, const GroupOutput& out,
                                    const WeightsRead& weights_read = {},
                                    const WeightsRead& weights_to_read = {});

// Plan + encode everything into owned buffers (luts and split_positions included).
// `plan_out`, if given, receives the plan with max_block_weights filled in.
Result<GroupBuffers> encode_group(std::span<const std::span<const uint16_t>> members,
                                  GroupPlan* plan_out = nullptr);

}  // namespace df11
