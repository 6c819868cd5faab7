// Coding one chunk of a group: its codes, sign/mantissa bytes, gap fields and the output
// positions of blocks whose first code it holds (spec 3.4-3.6; encoder/NOTES.md).
#pragma once

#include <cstdint>
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
};
constexpr uint8_t kNoCodeStepLength = 64;
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
