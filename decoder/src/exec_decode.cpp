// The execution layout's reference decoder (spec/EXEC_LAYOUT.md section 2.5).
#include "df11/exec_decode.h"

namespace df11 {

Status decode_exec_matrix(std::span<const uint8_t> blob, std::span<uint16_t> out,
                          const std::string& what) {
  DF11_ASSIGN_OR_RETURN(const ExecHeader h, validate_exec_matrix(blob, what));
  DF11_RETURN_IF_ERROR(check_exec_output(out.size(), h.rows, h.cols, what));
  DF11_ASSIGN_OR_RETURN(const ExecGeometry g, exec_geometry(h.rows, h.cols, what));
  const uint8_t* const p = blob.data();
  uint64_t cursor = 0;  // validated: every tile's exceptions are where its codes say
  for (uint64_t s = 0; s < g.strips; ++s) {
    for (uint64_t q = 0; q < g.steps; ++q) {
      for (uint32_t lane = 0; lane < kExecLanes; ++lane) {
        const uint64_t li = (s * g.steps + q) * kExecLanes + lane;
        uint16_t w[kExecSlots];
        exec_decode_lane(p + g.byte_plane + li * kExecSlots, p + g.code_plane + li * 8, h.base,
                         p + g.exceptions, &cursor, w);
        for (uint32_t j = 0; j < kExecSlots; ++j) {
          const auto [r, c] = exec_row_col(s, q, lane, j);
          if (r < h.rows && c < h.cols) out[r * h.cols + c] = w[j];
        }
      }
    }
  }
  return Status::ok();
}

Status decode_compact_matrix(std::span<const uint8_t> blob, std::span<uint16_t> out,
                             const std::string& what) {
  DF11_ASSIGN_OR_RETURN(const CompactHeader h, validate_compact_matrix(blob, what));
  DF11_RETURN_IF_ERROR(check_exec_output(out.size(), h.rows, h.cols, what));
  return validate_compact_matrix(blob, what, out).status();
}

}  // namespace df11
