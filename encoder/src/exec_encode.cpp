// The execution layout's reference encoder (spec/EXEC_LAYOUT.md section 4).
#include "df11/exec_encode.h"

#include <array>

#include "df11/group.h"  // store_le32

namespace df11 {

uint32_t choose_exec_base(std::span<const uint64_t, 256> exponent_counts) {
  uint32_t best = 0;
  uint64_t best_count = 0;
  for (uint32_t base = 0; base <= kExecMaxBase; ++base) {
    uint64_t n = 0;
    for (uint32_t k = 0; k < kExecWindow; ++k) n += exponent_counts[base + k];
    if (n > best_count) {  // spec 4.1: the smallest base on a tie
      best = base;
      best_count = n;
    }
  }
  return best;
}

namespace {
Status check_weights(std::span<const uint16_t> weights, uint32_t rows, uint32_t cols,
                     const std::string& what) {
  if (weights.size() != uint64_t{rows} * cols) {
    return Status(ErrorCode::kInvalidArgument, what + ": " + std::to_string(weights.size()) +
                                                   " weights for a " + std::to_string(rows) +
                                                   " x " + std::to_string(cols) + " matrix");
  }
  return Status::ok();
}
}  // namespace

Result<std::vector<uint8_t>> encode_exec_matrix(std::span<const uint16_t> weights, uint32_t rows,
                                                uint32_t cols, const std::string& what) {
  DF11_RETURN_IF_ERROR(check_weights(weights, rows, cols, what));
  std::array<uint64_t, 256> hist{};
  for (const uint16_t w : weights) ++hist[(w >> 7) & 0xFF];
  return encode_exec_matrix_with_base(weights, rows, cols, choose_exec_base(hist), what);
}

Result<std::vector<uint8_t>> encode_exec_matrix_with_base(std::span<const uint16_t> weights,
                                                          uint32_t rows, uint32_t cols,
                                                          uint32_t base, const std::string& what) {
  DF11_ASSIGN_OR_RETURN(const ExecGeometry g, exec_geometry(rows, cols, what));
  DF11_RETURN_IF_ERROR(check_weights(weights, rows, cols, what));
  if (base > kExecMaxBase) {
    return Status(ErrorCode::kInvalidArgument,
                  what + ": base " + std::to_string(base) + " is above Max_Base (240)");
  }
  std::vector<uint8_t> out(g.fixed_bytes, 0);
  std::vector<uint8_t> exc;
  uint64_t n_exc = 0;
  for (uint64_t t = 0; t < g.tiles; ++t) {
    store_le32(out.data() + g.tile_offsets + 4 * t, static_cast<uint32_t>(n_exc));
    const ExecTileSteps ts = exec_tile_steps(g, t);
    const uint64_t s = ts.strip;
    for (uint64_t q = ts.first_step; q < ts.end_step; ++q) {
      for (uint32_t lane = 0; lane < kExecLanes; ++lane) {
        const uint64_t li = (s * g.steps + q) * kExecLanes + lane;
        uint8_t* bytes = out.data() + g.byte_plane + li * kExecSlots;
        uint8_t* codes = out.data() + g.code_plane + li * (kExecSlots / 2);
        for (uint32_t j = 0; j < kExecSlots; j += 2) {
          // spec 2.3: weights past the matrix are +0 (padding).
          const auto [r, c] = exec_row_col(s, q, lane, j);
          const bool pad0 = r >= rows || c >= cols, pad1 = r >= rows || c + 1 >= cols;
          const uint16_t w0 = pad0 ? 0 : weights[r * cols + c];
          const uint16_t w1 = pad1 ? 0 : weights[r * cols + c + 1];
          const uint32_t p = exec_pair_word(w0, w1);
          bytes[j] = static_cast<uint8_t>(p);
          bytes[j + 1] = static_cast<uint8_t>(p >> 16);
          const uint32_t e[2] = {(p >> 8) & 0xFF, p >> 24};
          const bool pad[2] = {pad0, pad1};
          for (uint32_t i = 0; i < 2; ++i) {
            uint32_t code = 0;
            if (!pad[i]) {
              if (e[i] >= base && e[i] < base + kExecWindow) {
                code = e[i] - base;
              } else {
                code = kExecExceptionCode;
                exc.push_back(static_cast<uint8_t>(e[i]));
                ++n_exc;
              }
            }
            const uint32_t slot = j + i;
            codes[(slot / 8) * 4 + slot % 4] |=
                static_cast<uint8_t>(code << (4 * ((slot / 4) % 2)));
          }
        }
      }
    }
  }
  if (n_exc > UINT32_MAX) {
    return Status(ErrorCode::kUncodable, what + ": " + std::to_string(n_exc) +
                                             " exceptions, the layout holds at most 2^32 - 1");
  }
  store_le32(out.data() + g.tile_offsets + 4 * g.tiles, static_cast<uint32_t>(n_exc));
  ExecHeader h;
  h.rows = rows;
  h.cols = cols;
  h.base = base;
  h.n_exceptions = static_cast<uint32_t>(n_exc);
  h.total_bytes = g.total_bytes(n_exc);
  write_exec_header(h, std::span<uint8_t, kExecHeaderBytes>(out.data(), kExecHeaderBytes));
  out.insert(out.end(), exc.begin(), exc.end());
  out.resize(h.total_bytes, 0);
  return out;
}

}  // namespace df11
