// Host emulation of compact_kernel.cu (compact_emulation.h): the warp's prefix sum as a loop,
// each lane's decode through compact_core.h.
#include "compact_emulation.h"

#include "compact_core.h"
#include "df11/exec_layout.h"

namespace df11::cuda {

Status compact_to_bf16_emulated(std::span<const uint8_t> blob,
                                std::span<const uint16_t, 1u << kCompactMaxCodeBits> table,
                                std::span<uint16_t> out, const std::string& what) {
  DF11_ASSIGN_OR_RETURN(const CompactHeader h, read_compact_header(blob, what));
  DF11_RETURN_IF_ERROR(check_exec_output(out.size(), h.rows, h.cols, what));
  DF11_ASSIGN_OR_RETURN(const CompactGeometry g, compact_geometry(h.rows, h.cols, what));
  const detail::CompactView v = detail::compact_view(g, h, blob.data(), table.data(), out.data());
  bool ok = true;
  for (uint64_t t = 0; t < g.exec.tiles; ++t) {
    const uint32_t base = detail::compact_lane_base(v, t);
    uint64_t before = 0;
    for (uint32_t lane = 0; lane < kExecLanes; ++lane) {
      ok &= detail::compact_decode_lane(v, t, lane, before);
      before += base + detail::compact_lane_delta(v, t, lane);
    }
  }
  if (!ok) {
    return Status(ErrorCode::kCorruptData,
                  what + ": a lane's bits are no codewords of the blob's code (compact layout)");
  }
  return Status::ok();
}

}  // namespace df11::cuda
