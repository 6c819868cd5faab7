// A DF11 coded tensor group as it lies in a container: spans over its six stored tensors.
//
// spec/DF11.md section 3 defines every field; the constants below carry the spec's names
// (Max_Code_Length <-> kMaxCodeLength). This header has no codec logic: it only names the
// layout so that format/, encoder/ and decoder/ agree on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "df11/group_schema.h"
#include "df11/status.h"

namespace df11 {

// spec 3.1: geometry fixed by the published layout (dfloat11_config: bytes_per_thread 8,
// threads_per_block [512]).
inline constexpr uint32_t kBytesPerWindow = 8;     // Bytes_Per_Window (one GPU thread)
inline constexpr uint32_t kWindowsPerBlock = 512;  // Windows_Per_Block (threads per block)
inline constexpr uint32_t kBytesPerBlock = kBytesPerWindow * kWindowsPerBlock;  // 4096
inline constexpr uint32_t kBitsPerWindow = kBytesPerWindow * 8;                 // 64
inline constexpr uint64_t kBitsPerBlock = uint64_t{kBytesPerBlock} * 8;         // 32768
inline constexpr uint32_t kGapBits = 5;         // Gap_Bits: one packed field per window
inline constexpr uint32_t kMaxCodeLength = 32;  // Max_Code_Length (bits)
inline constexpr uint32_t kMaxSubtables = 16;   // Max_Subtables: rows 1..16 below the root
inline constexpr uint32_t kMaxLutRows = 1 + kMaxSubtables + 1;  // root + subtables + lengths
inline constexpr uint32_t kLutRowSize = 256;
inline constexpr uint32_t kFirstPointerEntry = 240;  // entries >= 240 point to row 256 - v
inline constexpr uint32_t kMaxCodableExponent = 239;
// spec 3.7: the official loader gives its kernel 512*4 + 4 + 2*max_block_weights bytes of
// shared memory without raising the 48 KiB default, so a compatible block holds at most this.
inline constexpr uint32_t kMaxWeightsPerBlockCompat = (49152 - (kWindowsPerBlock * 4 + 4)) / 2;
// spec 3.7: the kernel takes n_elements and n_bytes as int (Max_Elements_Compat = 2^31 - 1),
// and computes thread_id * 8 + 11 in int for the last thread, 512 * n_blocks - 1, which fits
// for n_blocks <= Max_Blocks_Compat.
inline constexpr uint64_t kMaxElementsCompat = 2'147'483'647;
inline constexpr uint64_t kMaxBlocksCompat = 524'287;
static_assert((uint64_t{kWindowsPerBlock} * kMaxBlocksCompat - 1) * kBytesPerWindow + 11 <=
                  kMaxElementsCompat &&
              (uint64_t{kWindowsPerBlock} * (kMaxBlocksCompat + 1) - 1) * kBytesPerWindow + 11 >
                  kMaxElementsCompat);

// The six stored tensors of one group (spec 3.2), all little-endian byte spans owned by the
// caller (usually a memory-mapped file). Nothing here is validated: call validate_group().
struct GroupView {
  std::span<const uint8_t> luts;              // U8 [n_luts, 256]
  std::span<const uint8_t> encoded_exponent;  // U8 [n_bytes], the bitstream
  std::span<const uint8_t> sign_mantissa;     // U8 [n_elements]
  std::span<const uint8_t> output_positions;  // U8 [4 * (n_blocks + 1)], little-endian uint32
  std::span<const uint8_t> gaps;              // U8 [ceil(5 * n_blocks * 512 / 8)]
  std::span<const uint8_t> split_positions;   // I64 little-endian, cumulative member ends
                                              // (excluding the last); empty for one member

  uint64_t n_elements() const { return sign_mantissa.size(); }
  uint64_t n_bytes() const { return encoded_exponent.size(); }
  uint64_t n_blocks() const { return (n_bytes() + kBytesPerBlock - 1) / kBytesPerBlock; }
  uint64_t n_windows() const { return n_blocks() * kWindowsPerBlock; }
  uint32_t n_luts() const { return static_cast<uint32_t>(luts.size() / kLutRowSize); }

  // The span of schema entry t (group_schema.h).
  std::span<const uint8_t> part(GroupTensor t) const {
    // (Through an alias: nvcc's host pass prints the plain declarator with parentheses that
    // the host compiler then warns about.)
    using Part = std::span<const uint8_t> GroupView::*;
    static constexpr Part kParts[kGroupTensorCount] = {
        &GroupView::luts,          &GroupView::encoded_exponent,
        &GroupView::sign_mantissa, &GroupView::output_positions,
        &GroupView::gaps,          &GroupView::split_positions};
    return this->*kParts[static_cast<size_t>(t)];
  }
};

// Owned buffers with the same meaning as GroupView (what the encoder produces).
struct GroupBuffers {
  std::vector<uint8_t> luts;
  std::vector<uint8_t> encoded_exponent;
  std::vector<uint8_t> sign_mantissa;
  std::vector<uint8_t> output_positions;
  std::vector<uint8_t> gaps;
  std::vector<uint8_t> split_positions;

  const std::vector<uint8_t>& part(GroupTensor t) const {
    using Part = std::vector<uint8_t> GroupBuffers::*;
    static constexpr Part kParts[kGroupTensorCount] = {
        &GroupBuffers::luts,          &GroupBuffers::encoded_exponent,
        &GroupBuffers::sign_mantissa, &GroupBuffers::output_positions,
        &GroupBuffers::gaps,          &GroupBuffers::split_positions};
    return this->*kParts[static_cast<size_t>(t)];
  }

  GroupView view() const {
    return GroupView{luts, encoded_exponent, sign_mantissa, output_positions,
                     gaps, split_positions};
  }
};

// Bytes of the packed gap array for n_blocks blocks: ceil(5 * n_blocks * 512 / 8).
inline uint64_t gap_bytes_for_blocks(uint64_t n_blocks) {
  return (n_blocks * kWindowsPerBlock * kGapBits + 7) / 8;
}

// Reads gap field w (spec 3.5): bits 5w..5w+4 of the array, MSB-first. Caller checks range.
inline uint32_t read_gap(std::span<const uint8_t> gaps, uint64_t w) {
  const uint64_t bit = w * kGapBits;
  const uint64_t byte = bit / 8;
  uint32_t two = uint32_t{gaps[byte]} << 8;
  if (byte + 1 < gaps.size()) two |= gaps[byte + 1];
  return (two >> (11 - (bit % 8))) & 0x1f;
}

inline uint32_t load_le32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
inline uint64_t load_le64(const uint8_t* p) {
  return uint64_t{load_le32(p)} | (uint64_t{load_le32(p + 4)} << 32);
}
inline void store_le32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v >> 16);
  p[3] = static_cast<uint8_t>(v >> 24);
}
inline void store_le64(uint8_t* p, uint64_t v) {
  store_le32(p, static_cast<uint32_t>(v));
  store_le32(p + 4, static_cast<uint32_t>(v >> 32));
}

// Output position b (spec 3.6). Caller checks b <= n_blocks.
inline uint32_t read_output_position(const GroupView& g, uint64_t b) {
  return load_le32(g.output_positions.data() + 4 * b);
}

// What validate_group() learned, for decoders to size their work.
struct GroupInfo {
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
  uint64_t n_blocks = 0;
  uint32_t n_luts = 0;
  uint32_t max_block_weights = 0;  // max over b of op[b+1] - op[b]
  uint8_t code_lengths[256] = {};  // from the last LUT row; 0 for symbols that no usable
                                   // entry decodes
  // spec 3.3: depth of each LUT row below the root (0 for the root, 1..3 for subtables): the
  // fewest pointer steps from the root; -1 for rows that no pointer within 4 levels reaches.
  int8_t lut_row_depth[kMaxLutRows] = {0,  -1, -1, -1, -1, -1, -1, -1, -1,
                                       -1, -1, -1, -1, -1, -1, -1, -1, -1};
  // Entries of reachable rows that no valid code can use (spec 3.3, unusable entries): a
  // symbol whose code length (0 included) does not fit its row's depth, or a pointer that
  // does not lead exactly one level down. Incomplete codes leave them (a 1-bit code uses
  // half the root) and the official encoder puts them where its EOF code would decode.
  // Decoders report kCorruptData when a code reaches one.
  uint32_t unusable_lut_entries = 0;
};

// Structural validation (spec 3.8), O(size of the small arrays + luts), no decoding:
// sizes consistent; every LUT pointer reachable from the root names a table row, not the
// lengths row (kBadLut otherwise; unusable entries are counted in GroupInfo, not rejected);
// output positions start at 0, never decrease, end at n_elements, give each block at most
// 32768 weights and leave no block but the last empty; n_elements <= 8 * n_bytes (a code is
// at least one bit); split positions strictly increase within (0, n). `what` prefixes every
// message (e.g. "model.safetensors: group 'model.layers.3'").
Result<GroupInfo> validate_group(const GroupView& group, const std::string& what);

}  // namespace df11
