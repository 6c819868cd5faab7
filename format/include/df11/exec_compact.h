// The compact execution layout (spec/EXEC_COMPACT.md): one BF16 matrix in the 12-bit layout's
// geometry and byte plane, its exponents in a prefix code of at most 12 bits per exponent read
// by each lane of a tile from a bit range of its own: about 10.7 bits per weight on trained or
// Gaussian weights, below DF11's 10.8. This header owns the bytes only: constants, geometry,
// the header, the code's lookup table and the validator (which decodes as it checks). Encoding
// lives in encoder/ (exec_compact_encode.h), decoding to BF16 in decoder/ (exec_decode.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "df11/exec_layout.h"
#include "df11/status.h"

namespace df11 {

// spec/EXEC_COMPACT.md section 1.2 (the geometry's constants are the 12-bit layout's).
inline constexpr uint32_t kCompactMagic = 0x31434644;  // "DFC1" little-endian
inline constexpr uint16_t kCompactVersion = 1;
inline constexpr uint32_t kCompactHeaderBytes = 64;
inline constexpr uint32_t kCompactMaxCodeBits = 12;     // Max_Code_Bits: the longest code
inline constexpr uint32_t kCompactSymbols = 256;        // one code length per exponent
inline constexpr uint32_t kCompactLaneTableBytes = 34;  // per tile: u16 lane_base, 32 x u8
inline constexpr uint32_t kCompactMaxLaneDelta = 255;
// spec 2.1: the header's fields, in bytes from the blob's start (little-endian). Magic,
// version and header_bytes lie where the 12-bit layout's do (write_exec_header_start).
inline constexpr uint32_t kCompactRowsOffset = 8;         // u32 rows
inline constexpr uint32_t kCompactColsOffset = 12;        // u32 cols
inline constexpr uint32_t kCompactCodeBitsOffset = 16;    // u8 max_code_bits
inline constexpr uint32_t kCompactReservedOffset = 17;    // bytes 17..23 reserved
inline constexpr uint32_t kCompactTotalBytesOffset = 24;  // u64 total_bytes
inline constexpr uint32_t kCompactStreamBitsOffset = 32;  // u64 stream_bits
inline constexpr uint32_t kCompactHeaderFieldsEnd = 40;   // bytes 40..63 reserved

// Where every part of one matrix's blob lies (spec 2.2), in bytes from the blob's start.
struct CompactGeometry {
  ExecGeometry exec;         // strips, steps, tiles: the 12-bit layout's geometry
  uint64_t lengths = 0;      // u8 [256]: code length per exponent
  uint64_t tile_bits = 0;    // u64 [tiles + 1]: each tile's first stream bit
  uint64_t lane_tables = 0;  // [tiles] x 34 bytes
  uint64_t byte_plane = 0;   // strips * steps * 512 bytes, as in the 12-bit layout
  uint64_t stream = 0;       // the code stream, u64 words
  // Bytes of the stream part for `stream_bits` bits: whole words and one zero word more.
  static uint64_t stream_bytes(uint64_t stream_bits) { return 8 * ((stream_bits + 63) / 64 + 1); }
  uint64_t total_bytes(uint64_t stream_bits) const {
    return (stream + stream_bytes(stream_bits) + kExecPlaneAlign - 1) / kExecPlaneAlign *
           kExecPlaneAlign;
  }
};

// Geometry of a rows x cols matrix; kInvalidArgument outside the 12-bit layout's limits.
Result<CompactGeometry> compact_geometry(uint32_t rows, uint32_t cols, const std::string& what);

// The header's fields (spec 2.1).
struct CompactHeader {
  uint32_t rows = 0, cols = 0;
  uint64_t total_bytes = 0;
  uint64_t stream_bits = 0;
};

void write_compact_header(const CompactHeader& h, std::span<uint8_t, kCompactHeaderBytes> out);

// Reads and checks the header alone (spec 3, rules H1..H5) against a blob of `blob.size()`
// bytes: kTruncated if shorter than its total, kBadGroup for any other field out of range.
Result<CompactHeader> read_compact_header(std::span<const uint8_t> blob, const std::string& what);

// The prefix code given by 256 code lengths (spec 2.3): canonical codewords, written to the
// stream first bit first, and the table a decoder indexes with the next 12 stream bits.
struct CompactCode {
  std::array<uint8_t, kCompactSymbols> length{};  // 0: the exponent has no code
  std::array<uint32_t, kCompactSymbols> bits{};   // the codeword in stream order (bit 0 first)
  std::array<uint16_t, 1u << kCompactMaxCodeBits> table{};  // exponent | length << 8; 0: none
};

// The code of `lengths` (spec 2.3); kBadGroup naming `what` where a length exceeds 12, none is
// set, or their Kraft sum exceeds 1.
Result<CompactCode> compact_code(std::span<const uint8_t, kCompactSymbols> lengths,
                                 const std::string& what);

// Little-endian stream bits: `n` (<= 12) bits from bit `pos` of `stream` (bit i is bit i % 8
// of byte i / 8). The caller keeps pos / 8 + 2 inside the stream part (its zero word does).
inline uint32_t compact_peek(const uint8_t* stream, uint64_t pos, uint32_t n) {
  const uint8_t* b = stream + pos / 8;
  const uint32_t three = b[0] | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16;
  return (three >> (pos % 8)) & ((1u << n) - 1);
}

// Full validation (spec 3, rules H1..H5, C1, T1..T3, D1..D3, P1..P3), decoding every weight
// as it goes; where `out` is not empty (it must then hold rows * cols weights) the weights
// are written there, row-major, but only once the whole blob has been found valid is the
// result complete. O(weights). Returns the header.
Result<CompactHeader> validate_compact_matrix(std::span<const uint8_t> blob,
                                              const std::string& what,
                                              std::span<uint16_t> out = {});

}  // namespace df11
