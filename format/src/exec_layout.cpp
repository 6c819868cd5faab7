// The execution layout's bytes (spec/EXEC_LAYOUT.md): geometry, header, validation.
#include "df11/exec_layout.h"

#include <algorithm>

#include "df11/group.h"  // load_le32, store_le32, load_le64, store_le64

namespace df11 {
namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
uint64_t round_up(uint64_t a, uint64_t b) { return ceil_div(a, b) * b; }

Status bad(const std::string& what, const std::string& msg) {
  return Status(ErrorCode::kBadGroup, what + ": " + msg);
}

}  // namespace

Result<ExecGeometry> exec_geometry(uint32_t rows, uint32_t cols, const std::string& what) {
  // spec 1.2: 1 <= rows, cols <= Max_Exec_Dim and rows * cols <= Max_Exec_Weights, so every
  // size below fits 64 bits with room to spare (no checked arithmetic needed past this).
  if (rows == 0 || cols == 0 || rows > kExecMaxDim || cols > kExecMaxDim ||
      uint64_t{rows} * cols > kExecMaxWeights) {
    return Status(ErrorCode::kInvalidArgument,
                  what + ": shape " + std::to_string(rows) + " x " + std::to_string(cols) +
                      " is outside the execution layout's limits (1.." +
                      std::to_string(kExecMaxDim) + " each, at most 2^36 weights)");
  }
  ExecGeometry g;
  g.rows = rows;
  g.cols = cols;
  g.strips = ceil_div(rows, kExecStripRows);
  g.steps = ceil_div(cols, kExecStepCols);
  g.tiles_per_strip = ceil_div(g.steps, kExecTileSteps);
  g.tiles = g.strips * g.tiles_per_strip;
  g.tile_offsets = kExecHeaderBytes;
  g.byte_plane = round_up(g.tile_offsets + 4 * (g.tiles + 1), kExecPlaneAlign);
  g.code_plane = g.byte_plane + g.strips * g.steps * kExecStepBytes;
  g.exceptions = g.code_plane + g.strips * g.steps * kExecStepCodeBytes;
  g.fixed_bytes = g.exceptions;
  return g;
}

void write_exec_header_start(uint8_t* header, uint32_t magic) {
  store_le32(header + kExecMagicOffset, magic);
  header[kExecVersionOffset] = static_cast<uint8_t>(kExecVersion);
  header[kExecVersionOffset + 1] = static_cast<uint8_t>(kExecVersion >> 8);
  header[kExecHeaderBytesOffset] = static_cast<uint8_t>(kExecHeaderBytes);
  header[kExecHeaderBytesOffset + 1] = 0;
}

Status check_exec_header_start(std::span<const uint8_t> blob, uint32_t magic, const char* layout,
                               const std::string& what) {
  if (blob.size() < kExecHeaderBytes) {
    return Status(ErrorCode::kTruncated, what + ": " + std::to_string(blob.size()) +
                                             " bytes, shorter than the 64-byte header");
  }
  const uint8_t* p = blob.data();
  if (load_le32(p + kExecMagicOffset) != magic) {
    return bad(what, std::string("not ") + layout + " matrix (magic)");
  }
  const uint32_t version = p[kExecVersionOffset] | uint32_t{p[kExecVersionOffset + 1]} << 8;
  if (version != kExecVersion) {
    return bad(what, "version " + std::to_string(version) + ", this reader knows 1");
  }
  if ((p[kExecHeaderBytesOffset] | uint32_t{p[kExecHeaderBytesOffset + 1]} << 8) !=
      kExecHeaderBytes) {
    return bad(what, "header size is not 64");
  }
  return Status::ok();
}

Status check_exec_blob_size(std::span<const uint8_t> blob, uint64_t total, uint64_t want,
                            const std::string& what) {
  if (total != want) {
    return bad(what, "total_bytes " + std::to_string(total) + ", the layout gives " +
                         std::to_string(want));
  }
  if (blob.size() < want) {
    return Status(ErrorCode::kTruncated, what + ": " + std::to_string(blob.size()) +
                                             " bytes, the header says " + std::to_string(want));
  }
  return Status::ok();
}

Status check_exec_output(size_t n, uint32_t rows, uint32_t cols, const std::string& what) {
  if (n != uint64_t{rows} * cols) {
    return Status(ErrorCode::kInvalidArgument, what + ": output of " + std::to_string(n) +
                                                   " weights for a " + std::to_string(rows) +
                                                   " x " + std::to_string(cols) + " matrix");
  }
  return Status::ok();
}

void write_exec_header(const ExecHeader& h, std::span<uint8_t, kExecHeaderBytes> out) {
  std::fill(out.begin(), out.end(), uint8_t{0});
  uint8_t* p = out.data();
  write_exec_header_start(p, kExecMagic);
  store_le32(p + kExecRowsOffset, h.rows);
  store_le32(p + kExecColsOffset, h.cols);
  p[kExecBaseOffset] = static_cast<uint8_t>(h.base);
  p[kExecCodeBitsOffset] = kExecCodeBits;
  store_le32(p + kExecNExceptionsOffset, h.n_exceptions);
  store_le64(p + kExecTotalBytesOffset, h.total_bytes);
}

Result<ExecHeader> read_exec_header(std::span<const uint8_t> blob, const std::string& what) {
  // H1: magic, version, header size, code bits.
  DF11_RETURN_IF_ERROR(check_exec_header_start(blob, kExecMagic, "an execution-layout", what));
  const uint8_t* p = blob.data();
  if (p[kExecCodeBitsOffset] != kExecCodeBits) return bad(what, "code bits are not 4");
  // H2: reserved bytes are zero.
  if (p[kExecReservedOffset] != 0 || p[kExecReservedOffset + 1] != 0 ||
      std::any_of(p + kExecHeaderFieldsEnd, p + kExecHeaderBytes,
                  [](uint8_t b) { return b != 0; })) {
    return bad(what, "a reserved header byte is not zero");
  }
  ExecHeader h;
  h.rows = load_le32(p + kExecRowsOffset);
  h.cols = load_le32(p + kExecColsOffset);
  h.base = p[kExecBaseOffset];
  h.n_exceptions = load_le32(p + kExecNExceptionsOffset);
  h.total_bytes = load_le64(p + kExecTotalBytesOffset);
  // H3: the shape within the limits.
  Result<ExecGeometry> g = exec_geometry(h.rows, h.cols, what);
  if (!g.is_ok()) return bad(what, "header: " + g.status().message());
  // H4: base <= Max_Base.
  if (h.base > kExecMaxBase) {
    return bad(what, "base " + std::to_string(h.base) + " is above Max_Base (240)");
  }
  // H5: at most one exception per weight, and the total is what the geometry gives.
  if (h.n_exceptions > uint64_t{h.rows} * h.cols) {
    return bad(what, std::to_string(h.n_exceptions) + " exceptions for " +
                         std::to_string(uint64_t{h.rows} * h.cols) + " weights");
  }
  // H5 (total_bytes) and H6: the blob holds what the header says.
  DF11_RETURN_IF_ERROR(
      check_exec_blob_size(blob, h.total_bytes, g->total_bytes(h.n_exceptions), what));
  return h;
}

Result<ExecHeader> validate_exec_matrix(std::span<const uint8_t> blob, const std::string& what) {
  DF11_ASSIGN_OR_RETURN(const ExecHeader h, read_exec_header(blob, what));
  DF11_ASSIGN_OR_RETURN(const ExecGeometry g, exec_geometry(h.rows, h.cols, what));
  const uint8_t* const p = blob.data();
  const uint8_t* const exc = p + g.exceptions;
  const auto zero = [&](uint64_t from, uint64_t to) {
    return std::all_of(p + from, p + to, [](uint8_t b) { return b == 0; });
  };
  // P1: alignment padding is zero.
  if (!zero(g.tile_offsets + 4 * (g.tiles + 1), g.byte_plane) ||
      !zero(g.exceptions + h.n_exceptions, h.total_bytes)) {
    return bad(what, "a padding byte between or after the parts is not zero");
  }
  // P2: tile offsets start at 0, end at n_exceptions, and count each tile's code 15s (below).
  if (load_le32(p + g.tile_offsets) != 0 ||
      load_le32(p + g.tile_offsets + 4 * g.tiles) != h.n_exceptions) {
    return bad(what, "tile offsets do not run from 0 to n_exceptions");
  }
  uint64_t cursor = 0;
  for (uint64_t t = 0; t < g.tiles; ++t) {
    const uint64_t begin = load_le32(p + g.tile_offsets + 4 * t);
    const uint64_t end = load_le32(p + g.tile_offsets + 4 * (t + 1));
    if (begin != cursor || end < begin || end > h.n_exceptions) {
      return bad(what, "tile " + std::to_string(t) + ": exception offsets " +
                           std::to_string(begin) + ".." + std::to_string(end) +
                           " are not consecutive");
    }
    const ExecTileSteps ts = exec_tile_steps(g, t);
    const uint64_t s = ts.strip;
    for (uint64_t q = ts.first_step; q < ts.end_step; ++q) {
      for (uint32_t lane = 0; lane < kExecLanes; ++lane) {
        const uint64_t li = (s * g.steps + q) * kExecLanes + lane;
        const uint8_t* bytes = p + g.byte_plane + li * kExecSlots;
        const uint8_t* codes = p + g.code_plane + li * (kExecSlots / 2);
        // P3: padding positions (past rows or cols) have code 0 and the bytes an
        // encoder writes for a +0 weight there.
        for (uint32_t j = 0; j < kExecSlots; j += 2) {
          const auto [r, c0] = exec_row_col(s, q, lane, j);
          const bool pad0 = r >= h.rows || c0 >= h.cols;
          const bool pad1 = r >= h.rows || c0 + 1 >= h.cols;
          if ((pad0 && exec_code(codes, j) != 0) || (pad1 && exec_code(codes, j + 1) != 0)) {
            return bad(what, "tile " + std::to_string(t) + ": a padding weight's code is not 0");
          }
          if (!exec_padding_bytes_ok(bytes + j, pad0, pad1)) {
            return bad(what, "tile " + std::to_string(t) + ": a padding byte is not canonical");
          }
        }
        // P4: exceptions only where the window does not reach, and only within the tile.
        for (uint32_t j = 0; j < kExecSlots; ++j) {
          if (exec_code(codes, j) != kExecExceptionCode) continue;
          if (cursor >= end) {
            return bad(what, "tile " + std::to_string(t) + " has more code-15 weights than its " +
                                 std::to_string(end - begin) + " exceptions");
          }
          const uint32_t e = exc[cursor++];
          if (e >= h.base && e < h.base + kExecWindow) {
            return bad(what, "exception " + std::to_string(cursor - 1) + " holds exponent " +
                                 std::to_string(e) + ", inside the window");
          }
        }
      }
    }
    if (cursor != end) {
      return bad(what, "tile " + std::to_string(t) + " has " + std::to_string(end - begin) +
                           " exceptions but fewer code-15 weights");
    }
  }
  return h;
}

}  // namespace df11
