// Host emulation of compact_kernel.cu (compact_emulation.h): each tile's words staged, the
// warp's prefix sum as a loop, each lane's decode through compact_core.h.
#include "compact_emulation.h"

#include <algorithm>

#include "compact_core.h"
#include "compact_pack_core.h"
#include "df11/cuda_compact.h"
#include "df11/exec_layout.h"
#include "df11/group.h"  // store_le64

namespace df11::cuda {

std::vector<uint32_t> compact_decode_table(const CompactCode& code) {
  std::vector<uint32_t> t(kCompactDecodeTableEntries);
  for (uint32_t i = 0; i < t.size(); ++i) t[i] = detail::compact_pair_entry(code.table.data(), i);
  return t;
}

Status compact_to_bf16_emulated(std::span<const uint8_t> blob,
                                std::span<const uint16_t, 1u << kCompactMaxCodeBits> table,
                                std::span<uint16_t> out, const std::string& what) {
  DF11_ASSIGN_OR_RETURN(const CompactHeader h, read_compact_header(blob, what));
  DF11_RETURN_IF_ERROR(check_exec_output(out.size(), h.rows, h.cols, what));
  DF11_ASSIGN_OR_RETURN(const CompactGeometry g, compact_geometry(h.rows, h.cols, what));
  std::vector<uint32_t> pairs(kCompactDecodeTableEntries);  // the decode table
  for (uint32_t i = 0; i < pairs.size(); ++i)
    pairs[i] = detail::compact_pair_entry(table.data(), i);
  detail::CompactView v = detail::compact_view(g, h, blob.data(), pairs.data(), out.data());
  bool ok = true;
  std::vector<uint32_t> staged(detail::kCompactStageWords);
  for (uint64_t t = 0; t < g.exec.tiles; ++t) {
    // The tile's words staged as the kernel stages them.
    v.staged_count = 0;
    uint64_t first = 0;
    bool whole = false;
    const uint32_t n = detail::compact_stage_range(v, t, &first, &whole);
    for (uint32_t k = 0; k < n; ++k) staged[k] = detail::compact_word(v, first + k);
    v.staged = staged.data();
    v.staged_first = first;
    v.staged_count = n;
    const uint32_t base = detail::compact_lane_base(v, t);
    uint64_t before = 0;
    for (uint32_t lane = 0; lane < kExecLanes; ++lane) {
      detail::compact_with_lane_words(
          v, t, lane, before, whole && n > 0, first, n,
          [&](const detail::CompactRun& r, const auto& words, uint32_t pos0) {
            ok &= detail::compact_decode_lane(v, t, lane, r, words, pos0);
          });
      before += base + detail::compact_lane_delta(v, t, lane);
    }
  }
  if (!ok) {
    return Status(ErrorCode::kCorruptData,
                  what + ": a lane's bits are no codewords of the blob's code (compact layout)");
  }
  return Status::ok();
}

std::array<uint64_t, kCompactSymbols> compact_histogram_emulated(std::span<const uint16_t> w,
                                                                 uint32_t rows, uint32_t cols) {
  std::array<uint64_t, kCompactSymbols> counts{};
  for (const uint16_t x : w) ++counts[(x >> 7) & 0xFF];
  const Result<CompactGeometry> g = compact_geometry(rows, cols, "histogram");
  if (g.is_ok() && w.size() == uint64_t{rows} * cols) {
    counts[0] += g->exec.strips * g->exec.steps * kExecStepBytes - w.size();
  }
  return counts;
}

Result<std::vector<uint8_t>> compact_pack_emulated(
    std::span<const uint16_t> w, uint32_t rows, uint32_t cols,
    std::span<const uint8_t, kCompactSymbols> lengths, const std::string& what) {
  DF11_ASSIGN_OR_RETURN(const CompactGeometry g, compact_geometry(rows, cols, what));
  DF11_RETURN_IF_ERROR(check_exec_output(w.size(), rows, cols, what));
  Result<CompactCode> code = compact_code(lengths, what);
  if (!code.is_ok()) return Status(ErrorCode::kInvalidArgument, code.status().message());
  const std::array<uint64_t, kCompactSymbols> counts = compact_histogram_emulated(w, rows, cols);
  for (uint32_t e = 0; e < kCompactSymbols; ++e) {
    if (counts[e] != 0 && lengths[e] == 0) {
      return Status(ErrorCode::kInvalidArgument,
                    what + ": exponent " + std::to_string(e) + " has no code");
    }
  }
  const detail::CompactSource src{w.data(),    rows, cols, g.exec.steps, g.exec.tiles_per_strip,
                                  g.exec.tiles};
  // Pass 2: each tile's lane table and total.
  std::vector<uint8_t> out(g.stream, 0);
  uint64_t at = 0;
  for (uint64_t t = 0; t < g.exec.tiles; ++t) {
    uint32_t n[kExecLanes], lo = ~0u, hi = 0;
    for (uint32_t lane = 0; lane < kExecLanes; ++lane) {
      n[lane] = detail::compact_lane_code_bits(src, lengths.data(), t, lane);
      lo = std::min(lo, n[lane]);
      hi = std::max(hi, n[lane]);
    }
    const uint32_t base = detail::compact_lane_base_of(lo, hi);
    uint8_t* lt = out.data() + g.lane_tables + kCompactLaneTableBytes * t;
    lt[0] = static_cast<uint8_t>(base);
    lt[1] = static_cast<uint8_t>(base >> 8);
    store_le64(out.data() + g.tile_bits + 8 * t, at);
    for (uint32_t lane = 0; lane < kExecLanes; ++lane) {
      lt[2 + lane] = static_cast<uint8_t>(std::max(n[lane], base) - base);
      at += std::max(n[lane], base);
    }
  }
  store_le64(out.data() + g.tile_bits + 8 * g.exec.tiles, at);
  CompactHeader h;
  h.rows = rows;
  h.cols = cols;
  h.stream_bits = at;
  h.total_bytes = g.total_bytes(at);
  write_compact_header(h, std::span<uint8_t, kCompactHeaderBytes>(out.data(), kCompactHeaderBytes));
  std::copy(lengths.begin(), lengths.end(), out.begin() + static_cast<ptrdiff_t>(g.lengths));
  out.resize(h.total_bytes, 0);
  // Pass 3: each lane's bytes and codewords.
  std::vector<uint32_t> words(CompactGeometry::stream_bytes(at) / 4, 0);
  for (uint64_t t = 0; t < g.exec.tiles; ++t) {
    const uint8_t* lt = out.data() + g.lane_tables + kCompactLaneTableBytes * t;
    const uint32_t base = lt[0] | uint32_t{lt[1]} << 8;
    uint64_t start = load_le64(out.data() + g.tile_bits + 8 * t);
    for (uint32_t lane = 0; lane < kExecLanes; ++lane) {
      detail::compact_pack_lane(src, code->bits.data(), lengths.data(), out.data() + g.byte_plane,
                                t, lane, start,
                                [&](uint64_t k, uint32_t bits) { words[k] |= bits; });
      start += base + lt[2 + lane];
    }
  }
  for (uint64_t k = 0; k < words.size(); ++k) store_le32(out.data() + g.stream + 4 * k, words[k]);
  return out;
}

}  // namespace df11::cuda
