// Coding one chunk of a group: its codes, sign/mantissa bytes, gap fields and the output
// positions of blocks whose first code it holds (spec 3.4-3.6; encoder/NOTES.md).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "df11/encoder.h"
#include "df11/member_stream.h"

namespace df11 {

// The code in the form the inner loop wants.
struct EncodeTables {
  uint64_t left[256];   // code bits << (64 - length): MSB-first, ready to OR into a buffer
  uint8_t length[256];  // 0 = exponent has no code
  // length, or kNoCodeStepLength where there is none: the inner loop's sums of lengths then
  // exceed a step's word, so the uncommon path, not every weight, checks for missing codes.
  uint8_t step_length[256];
  // The same for pairs of consecutive exponents, indexed by the two exponent bytes as a
  // little-endian 16-bit load gives them (first | second << 8): the two codes concatenated,
  // and their summed length, or kNoCodePairStepLength where either has no code. Entries of
  // pair_left are only written (and read) where pair_step_length is a length.
  std::unique_ptr<uint64_t[]> pair_left;        // 65536 entries
  std::unique_ptr<uint8_t[]> pair_step_length;  // 65536 entries
};
constexpr uint8_t kNoCodeStepLength = 64;
constexpr uint8_t kNoCodePairStepLength = 128;
Result<EncodeTables> make_encode_tables(const Code& code);

// Blocks whose first code lies in one chunk: always consecutive block numbers.
struct ChunkBlocks {
  bool any = false;
  uint64_t first_block = 0;
  uint64_t last_block = 0;
  uint32_t first_position = 0;  // output position of first_block
  uint32_t last_position = 0;   // output position of last_block
  uint32_t max_inner = 0;       // max weights of blocks first_block .. last_block - 1
};

// Per-thread buffers reused across chunks.
struct ChunkScratch {
  std::vector<uint8_t> codes;
  std::vector<uint8_t> gaps;
};

// Codes chunk `chunk` of `plan` into `out` (see encode_group_range for the sharing rules).
// kInvalidArgument if the members do not code to the planned number of bits.
Status encode_chunk(const MemberStream& stream, const GroupPlan& plan, const EncodeTables& tables,
                    uint64_t chunk, const GroupOutput& out, ChunkScratch& scratch,
                    ChunkBlocks& blocks);

}  // namespace df11
