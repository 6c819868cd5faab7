// The compact execution layout's reference encoder (spec/EXEC_COMPACT.md section 4).
#include "df11/exec_compact_encode.h"

#include <algorithm>

#include "df11/code_lengths.h"
#include "df11/group.h"  // store_le64

namespace df11 {
namespace {

Status invalid(const std::string& what, const std::string& msg) {
  return Status(ErrorCode::kInvalidArgument, what + ": " + msg);
}

// Little-endian bits appended to a byte vector (bit i is bit i % 8 of byte i / 8).
struct BitWriter {
  std::vector<uint8_t> bytes;
  uint64_t n = 0;
  void put(uint32_t bits, uint32_t count) {
    for (uint32_t k = 0; k < count; ++k, ++n) {
      if (n % 8 == 0) bytes.push_back(0);
      bytes.back() |= static_cast<uint8_t>(((bits >> k) & 1) << (n % 8));
    }
  }
};

}  // namespace

Result<std::array<uint8_t, kCompactSymbols>> choose_compact_lengths(
    std::span<const uint64_t, kCompactSymbols> exponent_counts) {
  std::array<uint8_t, kCompactSymbols> lengths{};
  std::vector<uint64_t> weights;
  std::vector<uint32_t> present;
  for (uint32_t e = 0; e < kCompactSymbols; ++e) {
    if (exponent_counts[e] == 0) continue;
    present.push_back(e);
    weights.push_back(exponent_counts[e]);
  }
  if (present.empty()) {
    return Status(ErrorCode::kInvalidArgument, "compact layout: no exponent to code");
  }
  if (present.size() == 1) {
    lengths[present[0]] = 1;
  } else if (present.size() == kCompactSymbols) {
    lengths.fill(8);  // 256 codes of 8 bits: the Kraft sum is 1
  } else {
    // Large counts are scaled down (halved, rounding up: none becomes 0) until package-merge
    // takes them; the sum saturates rather than wrap, whatever the caller's counts.
    const auto total = [&weights] {
      uint64_t t = 0;
      for (const uint64_t w : weights) t = w > UINT64_MAX - t ? UINT64_MAX : t + w;
      return t;
    };
    while (total() > kMaxCodeLengthsTotalWeight) {
      for (uint64_t& w : weights) w = w / 2 + (w & 1);
    }
    DF11_ASSIGN_OR_RETURN(const std::vector<uint8_t> l,
                          package_merge_lengths(weights, kCompactMaxCodeBits));
    for (size_t i = 0; i < present.size(); ++i) lengths[present[i]] = l[i];
  }
  return lengths;
}

Result<std::vector<uint8_t>> encode_compact_matrix(std::span<const uint16_t> weights, uint32_t rows,
                                                   uint32_t cols, const std::string& what) {
  DF11_ASSIGN_OR_RETURN(const CompactGeometry g, compact_geometry(rows, cols, what));
  if (weights.size() != uint64_t{rows} * cols) {
    return invalid(what, std::to_string(weights.size()) + " weights for a " + std::to_string(rows) +
                             " x " + std::to_string(cols) + " matrix");
  }
  std::array<uint64_t, kCompactSymbols> counts{};
  for (const uint16_t w : weights) ++counts[(w >> 7) & 0xFF];
  counts[0] += g.exec.strips * g.exec.steps * kExecStepBytes - weights.size();  // padding
  DF11_ASSIGN_OR_RETURN(const auto lengths, choose_compact_lengths(counts));
  return encode_compact_matrix_with_lengths(weights, rows, cols, lengths, what);
}

Result<std::vector<uint8_t>> encode_compact_matrix_with_lengths(
    std::span<const uint16_t> weights, uint32_t rows, uint32_t cols,
    std::span<const uint8_t, kCompactSymbols> lengths, const std::string& what) {
  DF11_ASSIGN_OR_RETURN(const CompactGeometry g, compact_geometry(rows, cols, what));
  const ExecGeometry& eg = g.exec;
  if (weights.size() != uint64_t{rows} * cols) {
    return invalid(what, std::to_string(weights.size()) + " weights for a " + std::to_string(rows) +
                             " x " + std::to_string(cols) + " matrix");
  }
  Result<CompactCode> code_or = compact_code(lengths, what);
  if (!code_or.is_ok()) return invalid(what, code_or.status().message());
  const CompactCode& code = *code_or;
  std::vector<uint8_t> out(g.stream, 0);
  std::copy(lengths.begin(), lengths.end(), out.begin() + static_cast<ptrdiff_t>(g.lengths));
  BitWriter stream;
  std::vector<uint8_t> lane_e[kExecLanes];  // a tile's exponents, lane by lane
  for (uint64_t t = 0; t < eg.tiles; ++t) {
    store_le64(out.data() + g.tile_bits + 8 * t, stream.n);
    const ExecTileSteps ts = exec_tile_steps(eg, t);
    const uint64_t s = ts.strip;
    uint64_t counts[kExecLanes];
    for (uint32_t lane = 0; lane < kExecLanes; ++lane) {
      lane_e[lane].clear();
      counts[lane] = 0;
      for (uint64_t q = ts.first_step; q < ts.end_step; ++q) {
        const uint64_t li = (s * eg.steps + q) * kExecLanes + lane;
        uint8_t* bytes = out.data() + g.byte_plane + li * kExecSlots;
        for (uint32_t j = 0; j < kExecSlots; j += 2) {
          // spec 2.4 of the 12-bit layout: the pair word; padding weights are +0.
          const auto [r, c] = exec_row_col(s, q, lane, j);
          const bool pad0 = r >= rows || c >= cols, pad1 = r >= rows || c + 1 >= cols;
          const uint32_t p = exec_pair_word(pad0 ? 0 : weights[r * cols + c],
                                            pad1 ? 0 : weights[r * cols + c + 1]);
          bytes[j] = static_cast<uint8_t>(p);
          bytes[j + 1] = static_cast<uint8_t>(p >> 16);
          for (const uint32_t e : {(p >> 8) & 0xFF, p >> 24}) {
            if (code.length[e] == 0) {
              return invalid(what, "exponent " + std::to_string(e) + " has no code");
            }
            lane_e[lane].push_back(static_cast<uint8_t>(e));
            counts[lane] += code.length[e];
          }
        }
      }
    }
    // spec 4.2: lane_base is the shortest lane's bits, or the longest less 255.
    const uint64_t lo = *std::min_element(counts, counts + kExecLanes);
    const uint64_t hi = *std::max_element(counts, counts + kExecLanes);
    const uint64_t lane_base =
        std::max(lo, hi > kCompactMaxLaneDelta ? hi - kCompactMaxLaneDelta : 0);
    uint8_t* lt = out.data() + g.lane_tables + kCompactLaneTableBytes * t;
    lt[0] = static_cast<uint8_t>(lane_base);
    lt[1] = static_cast<uint8_t>(lane_base >> 8);
    for (uint32_t lane = 0; lane < kExecLanes; ++lane) {
      const uint64_t bits = std::max(counts[lane], lane_base);
      lt[2 + lane] = static_cast<uint8_t>(bits - lane_base);
      for (const uint8_t e : lane_e[lane]) stream.put(code.bits[e], code.length[e]);
      for (uint64_t k = counts[lane]; k < bits; ++k) stream.put(0, 1);
    }
  }
  store_le64(out.data() + g.tile_bits + 8 * eg.tiles, stream.n);
  CompactHeader h;
  h.rows = rows;
  h.cols = cols;
  h.stream_bits = stream.n;
  h.total_bytes = g.total_bytes(stream.n);
  write_compact_header(h, std::span<uint8_t, kCompactHeaderBytes>(out.data(), kCompactHeaderBytes));
  out.insert(out.end(), stream.bytes.begin(), stream.bytes.end());
  out.resize(h.total_bytes, 0);
  return out;
}

}  // namespace df11
