// The execution layout (spec/EXEC_LAYOUT.md): one BF16 matrix packed for a fused GEMV/GEMM at
// 12 bits per weight, transcoded from DF11 (or from BF16) at load time. This header owns the
// bytes only: constants, geometry (where each part lies), the header, and the structural and
// full validators. Encoding lives in encoder/ (exec_encode.h), decoding in decoder/
// (exec_decode.h) and decoder/cuda (cuda_exec.h). Plain C++, usable from CUDA device code for
// the constexpr parts (the kernels index the same way).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "df11/status.h"

namespace df11 {

// spec/EXEC_LAYOUT.md section 1.2: limits and constants (one name each, spec <-> code).
inline constexpr uint32_t kExecMagic = 0x31584644;  // "DFX1" little-endian
inline constexpr uint16_t kExecVersion = 1;
inline constexpr uint32_t kExecHeaderBytes = 64;
inline constexpr uint32_t kExecCodeBits = 4;  // the code plane's bits per weight
// spec/EXEC_LAYOUT.md section 2.1: where each header field lies, in bytes from the blob's start
// (little-endian; reserved bytes are 0).
inline constexpr uint32_t kExecMagicOffset = 0;         // u32 magic
inline constexpr uint32_t kExecVersionOffset = 4;       // u16 version
inline constexpr uint32_t kExecHeaderBytesOffset = 6;   // u16 header_bytes
inline constexpr uint32_t kExecRowsOffset = 8;          // u32 rows
inline constexpr uint32_t kExecColsOffset = 12;         // u32 cols
inline constexpr uint32_t kExecBaseOffset = 16;         // u8 base
inline constexpr uint32_t kExecCodeBitsOffset = 17;     // u8 code_bits
inline constexpr uint32_t kExecReservedOffset = 18;     // u16 reserved
inline constexpr uint32_t kExecNExceptionsOffset = 20;  // u32 n_exceptions
inline constexpr uint32_t kExecTotalBytesOffset = 24;   // u64 total_bytes
inline constexpr uint32_t kExecHeaderFieldsEnd = 32;    // bytes 32..63 are reserved
inline constexpr uint32_t kExecStripRows = 16;          // Strip_Rows: rows of one strip
inline constexpr uint32_t kExecStepCols = 32;           // Step_Cols: columns of one step
inline constexpr uint32_t kExecTileSteps = 8;           // Tile_Steps: steps of one tile
inline constexpr uint32_t kExecLanes = 32;              // lanes of one step
inline constexpr uint32_t kExecSlots = 16;              // weights per lane and step
inline constexpr uint32_t kExecWindow = 15;             // Window_Codes: codes 0..14 are base + code
inline constexpr uint32_t kExecExceptionCode = 15;
inline constexpr uint32_t kExecMaxBase = 240;                   // Max_Base: base + 15 fits a byte
inline constexpr uint32_t kExecMaxDim = 1u << 28;               // Max_Exec_Dim: rows and cols
inline constexpr uint64_t kExecMaxWeights = uint64_t{1} << 36;  // Max_Exec_Weights
inline constexpr uint32_t kExecPlaneAlign = 16;
// Bytes per step of each plane: 32 lanes x 16 slots (1 byte, then 4 bits each).
inline constexpr uint32_t kExecStepBytes = kExecLanes * kExecSlots;          // 512
inline constexpr uint32_t kExecStepCodeBytes = kExecLanes * kExecSlots / 2;  // 256

// Where every part of one matrix's blob lies (spec 2.2), in bytes from the blob's start.
struct ExecGeometry {
  uint32_t rows = 0, cols = 0;
  uint64_t strips = 0;           // ceil(rows / 16)
  uint64_t steps = 0;            // per strip: ceil(cols / 32)
  uint64_t tiles_per_strip = 0;  // ceil(steps / 8)
  uint64_t tiles = 0;            // strips * tiles_per_strip
  uint64_t tile_offsets = 0;     // u32 [tiles + 1]
  uint64_t byte_plane = 0;       // strips * steps * 512 bytes
  uint64_t code_plane = 0;       // strips * steps * 256 bytes
  uint64_t exceptions = 0;       // u8 [n_exceptions]
  uint64_t fixed_bytes = 0;      // everything before the exceptions
  // The whole blob for n exceptions: the exceptions padded to 16 bytes.
  uint64_t total_bytes(uint64_t n_exceptions) const {
    return (exceptions + n_exceptions + kExecPlaneAlign - 1) / kExecPlaneAlign * kExecPlaneAlign;
  }
};

// Geometry of a rows x cols matrix; kInvalidArgument outside 1..Max_Exec_Dim or above
// Max_Exec_Weights (spec 1.2). `what` names the matrix in the message.
Result<ExecGeometry> exec_geometry(uint32_t rows, uint32_t cols, const std::string& what);

// The header's fields (spec 2.1).
struct ExecHeader {
  uint32_t rows = 0, cols = 0;
  uint32_t base = 0;  // the window's first exponent
  uint32_t n_exceptions = 0;
  uint64_t total_bytes = 0;
};

void write_exec_header(const ExecHeader& h, std::span<uint8_t, kExecHeaderBytes> out);

// What both execution layouts' headers share (this spec's H1 and H6, EXEC_COMPACT.md's H1 and
// H5). write_exec_header_start: magic, version 1 and header_bytes 64 at offsets 0, 4 and 6.
// check_exec_header_start: the blob holds those 64 bytes with them (`layout` names the layout
// in the message: "an execution-layout", "a compact execution-layout"). check_exec_blob_size:
// the header's total_bytes `total` is the `want` its fields give (kBadGroup otherwise) and the
// blob holds them (kTruncated otherwise). check_exec_output: an
// output of `n` weights for a rows x cols matrix (kInvalidArgument otherwise).
void write_exec_header_start(uint8_t* header, uint32_t magic);
Status check_exec_header_start(std::span<const uint8_t> blob, uint32_t magic, const char* layout,
                               const std::string& what);
Status check_exec_blob_size(std::span<const uint8_t> blob, uint64_t total, uint64_t want,
                            const std::string& what);
Status check_exec_output(size_t n, uint32_t rows, uint32_t cols, const std::string& what);

// Reads and checks the header alone (spec 3, rules H1..H6) against a blob of `blob_bytes`:
// kTruncated if shorter than its total, kBadGroup for any other field out of range.
Result<ExecHeader> read_exec_header(std::span<const uint8_t> blob, const std::string& what);

// The steps [first_step, end_step) of strip `strip` that tile t covers (spec 2.2).
struct ExecTileSteps {
  uint64_t strip, first_step, end_step;
};
constexpr ExecTileSteps exec_tile_steps(const ExecGeometry& g, uint64_t t) {
  const uint64_t first = (t % g.tiles_per_strip) * kExecTileSteps;
  const uint64_t end = first + kExecTileSteps < g.steps ? first + kExecTileSteps : g.steps;
  return ExecTileSteps{t / g.tiles_per_strip, first, end};
}

// Row and column of slot j of lane `lane` of step q of strip s (spec 2.3); they may lie past
// the matrix (padding).
struct ExecRowCol {
  uint64_t row, col;
};
constexpr ExecRowCol exec_row_col(uint64_t s, uint64_t q, uint32_t lane, uint32_t j) {
  return ExecRowCol{s * kExecStripRows + 8 * (j / 8) + lane / 4,
                    q * kExecStepCols + 8 * (lane % 4) + j % 8};
}

// Storage position of weight (r, c) (spec 2.3): byte index in the byte plane (relative to the
// plane), and the code's byte (relative to the code plane) and nibble (0 low, 1 high).
struct ExecSlot {
  uint64_t byte;
  uint64_t code_byte;
  uint32_t nibble;
};
constexpr ExecSlot exec_slot(uint64_t steps, uint32_t r, uint32_t c) {
  const uint64_t s = r / kExecStripRows, q = c / kExecStepCols;
  const uint32_t g = r % kExecStripRows, cc = c % kExecStepCols;
  const uint32_t lane = 4 * (g % 8) + cc / 8;
  const uint32_t slot = 8 * (g / 8) + cc % 8;
  const uint64_t lane_index = (s * steps + q) * kExecLanes + lane;
  return ExecSlot{lane_index * kExecSlots + slot,
                  lane_index * (kExecSlots / 2) + (slot / 8) * 4 + slot % 4, (slot / 4) % 2};
}

// The pair word of two neighbouring weights (spec 2.4): P = rotl32(w1 << 16 | w0, 1). Its
// bytes 1 and 3 are the two BF16 exponents, bytes 0 and 2 go to the byte plane.
constexpr uint32_t exec_pair_word(uint16_t w0, uint16_t w1) {
  const uint32_t w = uint32_t{w1} << 16 | w0;
  return w << 1 | w >> 31;
}
// And back: the two weights of P (low half w0).
constexpr uint32_t exec_unpair_word(uint32_t p) { return p >> 1 | p << 31; }

// The code of slot j of a lane (spec 2.3): codes8 is the lane's 8 bytes of the code plane.
constexpr uint32_t exec_code(const uint8_t* codes8, uint32_t j) {
  return (codes8[(j / 8) * 4 + j % 4] >> (4 * ((j / 4) % 2))) & 0xF;
}

// Decodes one lane of one step (spec 2.5): bytes16 and codes8 are its parts of the two planes,
// `exc` the matrix's exceptions and *cursor the index of the next one (advanced past those
// this lane uses; the caller bounds it: at most 16 are read from *cursor on). Writes the 16
// weights of the lane's slots in slot order, padding positions included (the caller drops
// them). Used by the validator and the CPU decoder alike.
inline void exec_decode_lane(const uint8_t* bytes16, const uint8_t* codes8, uint32_t base,
                             const uint8_t* exc, uint64_t* cursor, uint16_t (&out)[kExecSlots]) {
  uint32_t e[kExecSlots];
  for (uint32_t j = 0; j < kExecSlots; ++j) {
    const uint32_t code = exec_code(codes8, j);
    e[j] = code < kExecExceptionCode ? base + code : exc[(*cursor)++];
  }
  for (uint32_t k = 0; k < kExecSlots / 2; ++k) {
    const uint32_t p = uint32_t{bytes16[2 * k]} | e[2 * k] << 8 |
                       uint32_t{bytes16[2 * k + 1]} << 16 | e[2 * k + 1] << 24;
    const uint32_t w = exec_unpair_word(p);
    out[2 * k] = static_cast<uint16_t>(w);
    out[2 * k + 1] = static_cast<uint16_t>(w >> 16);
  }
}

// Whether the byte-plane bytes of pair slots j, j + 1 of a lane (bytes2: the lane's bytes j and
// j + 1) are what an encoder writes where weight w0 (pad0) or w1 (pad1) lies past the matrix
// (spec 3, P3): 0 for a padding pair; where only w1 is padding, w1's sign bit (bit 0 of byte j)
// is 0 and byte j + 1 holds w0's sign alone.
constexpr bool exec_padding_bytes_ok(const uint8_t* bytes2, bool pad0, bool pad1) {
  if (pad0) return bytes2[0] == 0 && bytes2[1] == 0;
  return !pad1 || ((bytes2[0] & 1) == 0 && (bytes2[1] >> 1) == 0);
}

// Full validation (spec 3, rules H1..H6 and P1..P4): the header, the tile offsets, and that
// every code, every padding byte and every exception is what the encoder would write for the
// weights the blob decodes to. O(weights). Returns the header.
Result<ExecHeader> validate_exec_matrix(std::span<const uint8_t> blob, const std::string& what);

}  // namespace df11
