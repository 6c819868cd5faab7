// The compact execution layout's bytes (spec/EXEC_COMPACT.md): geometry, header, code,
// validation.
#include "df11/exec_compact.h"

#include <algorithm>

#include "df11/group.h"  // load_le32, store_le32, load_le64, store_le64

namespace df11 {
namespace {

uint64_t round_up(uint64_t a, uint64_t b) { return (a + b - 1) / b * b; }

Status bad(const std::string& what, const std::string& msg) {
  return Status(ErrorCode::kBadGroup, what + ": " + msg);
}

uint32_t load_le16(const uint8_t* p) { return p[0] | uint32_t{p[1]} << 8; }

}  // namespace

Result<CompactGeometry> compact_geometry(uint32_t rows, uint32_t cols, const std::string& what) {
  CompactGeometry g;
  DF11_ASSIGN_OR_RETURN(g.exec, exec_geometry(rows, cols, what));
  g.lengths = kCompactHeaderBytes;
  g.tile_bits = g.lengths + kCompactSymbols;
  g.lane_tables = g.tile_bits + 8 * (g.exec.tiles + 1);
  g.byte_plane = round_up(g.lane_tables + kCompactLaneTableBytes * g.exec.tiles, kExecPlaneAlign);
  g.stream = g.byte_plane + g.exec.strips * g.exec.steps * kExecStepBytes;
  return g;
}

void write_compact_header(const CompactHeader& h, std::span<uint8_t, kCompactHeaderBytes> out) {
  std::fill(out.begin(), out.end(), uint8_t{0});
  uint8_t* p = out.data();
  write_exec_header_start(p, kCompactMagic);
  store_le32(p + kCompactRowsOffset, h.rows);
  store_le32(p + kCompactColsOffset, h.cols);
  p[kCompactCodeBitsOffset] = kCompactMaxCodeBits;
  store_le64(p + kCompactTotalBytesOffset, h.total_bytes);
  store_le64(p + kCompactStreamBitsOffset, h.stream_bits);
}

Result<CompactHeader> read_compact_header(std::span<const uint8_t> blob, const std::string& what) {
  // H1: magic, version, header size, code bits.
  DF11_RETURN_IF_ERROR(
      check_exec_header_start(blob, kCompactMagic, "a compact execution-layout", what));
  const uint8_t* p = blob.data();
  if (p[kCompactCodeBitsOffset] != kCompactMaxCodeBits) {
    return bad(what, "max_code_bits is not 12");
  }
  // H2: reserved bytes are zero.
  if (std::any_of(p + kCompactReservedOffset, p + kCompactTotalBytesOffset,
                  [](uint8_t b) { return b != 0; }) ||
      std::any_of(p + kCompactHeaderFieldsEnd, p + kCompactHeaderBytes,
                  [](uint8_t b) { return b != 0; })) {
    return bad(what, "a reserved header byte is not zero");
  }
  CompactHeader h;
  h.rows = load_le32(p + kCompactRowsOffset);
  h.cols = load_le32(p + kCompactColsOffset);
  h.total_bytes = load_le64(p + kCompactTotalBytesOffset);
  h.stream_bits = load_le64(p + kCompactStreamBitsOffset);
  // H3: the shape within the limits.
  Result<CompactGeometry> g = compact_geometry(h.rows, h.cols, what);
  if (!g.is_ok()) return bad(what, "header: " + g.status().message());
  // H4: at most Max_Code_Bits per weight of the padded matrix, and the total the layout gives.
  const uint64_t positions = g->exec.strips * g->exec.steps * kExecStepBytes;
  if (h.stream_bits > positions * kCompactMaxCodeBits) {
    return bad(what, "stream_bits " + std::to_string(h.stream_bits) + " for " +
                         std::to_string(positions) + " weights of at most 12 code bits");
  }
  // H4 (total_bytes) and H5: the blob holds what the header says.
  DF11_RETURN_IF_ERROR(
      check_exec_blob_size(blob, h.total_bytes, g->total_bytes(h.stream_bits), what));
  return h;
}

Result<CompactCode> compact_code(std::span<const uint8_t, kCompactSymbols> lengths,
                                 const std::string& what) {
  CompactCode code;
  // C1: lengths 0..12, at least one code, Kraft sum <= 1 (in units of 2^-12).
  uint32_t kraft = 0, n_codes = 0;
  uint32_t per_length[kCompactMaxCodeBits + 1] = {};
  for (uint32_t e = 0; e < kCompactSymbols; ++e) {
    const uint32_t l = lengths[e];
    if (l > kCompactMaxCodeBits) {
      return bad(what, "exponent " + std::to_string(e) + " has a code of " + std::to_string(l) +
                           " bits, more than 12");
    }
    if (l == 0) continue;
    kraft += 1u << (kCompactMaxCodeBits - l);
    ++n_codes;
    ++per_length[l];
  }
  if (n_codes == 0) return bad(what, "no exponent has a code");
  if (kraft > (1u << kCompactMaxCodeBits)) {
    return bad(what, "the code lengths' Kraft sum is " + std::to_string(kraft) + "/4096, above 1");
  }
  // Canonical codewords (spec 2.3): by length, then exponent; the first of each length follows
  // the last of the shorter ones.
  uint32_t next[kCompactMaxCodeBits + 2] = {};
  for (uint32_t l = 1, c = 0; l <= kCompactMaxCodeBits; ++l) {
    c = (c + per_length[l - 1]) << 1;
    next[l] = c;
  }
  for (uint32_t e = 0; e < kCompactSymbols; ++e) {
    const uint32_t l = lengths[e];
    if (l == 0) continue;
    const uint32_t c = next[l]++;
    uint32_t rev = 0;  // stream order: the codeword's first (most significant) bit at bit 0
    for (uint32_t k = 0; k < l; ++k) rev |= ((c >> (l - 1 - k)) & 1) << k;
    code.length[e] = static_cast<uint8_t>(l);
    code.bits[e] = rev;
    for (uint32_t hi = 0; hi < (1u << (kCompactMaxCodeBits - l)); ++hi) {
      code.table[rev | hi << l] = static_cast<uint16_t>(e | l << 8);
    }
  }
  return code;
}

Result<CompactHeader> validate_compact_matrix(std::span<const uint8_t> blob,
                                              const std::string& what, std::span<uint16_t> out) {
  DF11_ASSIGN_OR_RETURN(const CompactHeader h, read_compact_header(blob, what));
  DF11_ASSIGN_OR_RETURN(const CompactGeometry g, compact_geometry(h.rows, h.cols, what));
  const ExecGeometry& eg = g.exec;
  if (!out.empty()) DF11_RETURN_IF_ERROR(check_exec_output(out.size(), h.rows, h.cols, what));
  const uint8_t* const p = blob.data();
  const uint8_t* const stream = p + g.stream;
  DF11_ASSIGN_OR_RETURN(
      const CompactCode code,
      compact_code(std::span<const uint8_t, kCompactSymbols>(p + g.lengths, kCompactSymbols),
                   what));
  // P1: padding between the parts, stream bits past stream_bits and the bytes after are zero.
  const auto zero = [&](uint64_t from, uint64_t to) {
    return std::all_of(p + from, p + to, [](uint8_t b) { return b == 0; });
  };
  const uint64_t used = (h.stream_bits + 7) / 8;
  if (!zero(g.lane_tables + kCompactLaneTableBytes * eg.tiles, g.byte_plane) ||
      !zero(g.stream + used, h.total_bytes) ||
      (h.stream_bits % 8 != 0 && (stream[used - 1] >> (h.stream_bits % 8)) != 0)) {
    return bad(what, "a padding byte or bit between or after the parts is not zero");
  }
  // T1: tile bit offsets run from 0 to stream_bits, each tile's after the one before.
  if (load_le64(p + g.tile_bits) != 0 ||
      load_le64(p + g.tile_bits + 8 * eg.tiles) != h.stream_bits) {
    return bad(what, "tile bit offsets do not run from 0 to stream_bits");
  }
  for (uint64_t t = 0; t < eg.tiles; ++t) {
    const uint64_t begin = load_le64(p + g.tile_bits + 8 * t);
    const uint64_t end = load_le64(p + g.tile_bits + 8 * (t + 1));
    const std::string tile = "tile " + std::to_string(t);
    if (end < begin || end > h.stream_bits) {
      return bad(what, tile + ": stream bits " + std::to_string(begin) + ".." +
                           std::to_string(end) + " are not consecutive");
    }
    // T2: the lane table adds up to the tile's bits.
    const uint8_t* lt = p + g.lane_tables + kCompactLaneTableBytes * t;
    const uint32_t lane_base = load_le16(lt);
    uint64_t sum = 0;
    for (uint32_t l = 0; l < kExecLanes; ++l) sum += lane_base + uint64_t{lt[2 + l]};
    if (sum != end - begin) {
      return bad(what, tile + ": its lanes' bits add up to " + std::to_string(sum) +
                           ", its stream range holds " + std::to_string(end - begin));
    }
    const ExecTileSteps ts = exec_tile_steps(eg, t);
    const uint64_t s = ts.strip;
    uint64_t lane_at = begin;
    uint64_t counts[kExecLanes];
    for (uint32_t lane = 0; lane < kExecLanes; ++lane) {
      const uint64_t lane_end = lane_at + lane_base + lt[2 + lane];
      uint64_t pos = lane_at;
      for (uint64_t q = ts.first_step; q < ts.end_step; ++q) {
        // D1: each code is one of the code's, inside the lane's bits.
        uint32_t e[kExecSlots];
        for (uint32_t j = 0; j < kExecSlots; ++j) {
          const uint32_t entry =
              pos < lane_end ? code.table[compact_peek(stream, pos, kCompactMaxCodeBits)] : 0;
          if (entry == 0 || pos + (entry >> 8) > lane_end) {
            return bad(what, tile + ", lane " + std::to_string(lane) + ": bits at " +
                                 std::to_string(pos) + " are no code within the lane's bits");
          }
          e[j] = entry & 0xFF;
          pos += entry >> 8;
        }
        const uint64_t li = (s * eg.steps + q) * kExecLanes + lane;
        const uint8_t* bytes = p + g.byte_plane + li * kExecSlots;
        for (uint32_t j = 0; j < kExecSlots; j += 2) {
          // D2: a padding position's exponent is 0 and its bytes are a +0 weight's.
          const auto [r, c0] = exec_row_col(s, q, lane, j);
          const bool pad0 = r >= h.rows || c0 >= h.cols;
          const bool pad1 = r >= h.rows || c0 + 1 >= h.cols;
          if ((pad0 && e[j] != 0) || (pad1 && e[j + 1] != 0) ||
              !exec_padding_bytes_ok(bytes + j, pad0, pad1)) {
            return bad(what, tile + ": a padding weight is not +0");
          }
          if (out.empty()) continue;
          const uint32_t w = exec_unpair_word(uint32_t{bytes[j]} | e[j] << 8 |
                                              uint32_t{bytes[j + 1]} << 16 | e[j + 1] << 24);
          if (!pad0) out[r * h.cols + c0] = static_cast<uint16_t>(w);
          if (!pad1) out[r * h.cols + c0 + 1] = static_cast<uint16_t>(w >> 16);
        }
      }
      // D3: the lane's bits after its codes are zero.
      counts[lane] = pos - lane_at;
      for (; pos < lane_end; pos += std::min<uint64_t>(8, lane_end - pos)) {
        if (compact_peek(stream, pos,
                         static_cast<uint32_t>(std::min<uint64_t>(8, lane_end - pos)))) {
          return bad(what, tile + ", lane " + std::to_string(lane) +
                               ": a bit after its codes is not zero");
        }
      }
      lane_at = lane_end;
    }
    // T3: the lane table is the encoder's: lane_base the shortest lane's bits, or the longest
    // less 255 where they differ by more; each delta what its lane needs beyond lane_base.
    const uint64_t lo = *std::min_element(counts, counts + kExecLanes);
    const uint64_t hi = *std::max_element(counts, counts + kExecLanes);
    const uint64_t want_base =
        std::max(lo, hi > kCompactMaxLaneDelta ? hi - kCompactMaxLaneDelta : 0);
    bool canonical = lane_base == want_base;
    for (uint32_t l = 0; l < kExecLanes && canonical; ++l) {
      canonical = lt[2 + l] == std::max(counts[l], want_base) - want_base;
    }
    if (!canonical) return bad(what, tile + ": its lane table is not the encoder's");
  }
  return h;
}

}  // namespace df11
