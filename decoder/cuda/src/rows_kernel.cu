// The rows kernel and its launcher (launch_decode_rows, cuda_decoder.h): rows of one group
// seen as a matrix, for an embedding lookup that needs a few rows of a large coded matrix.
// Thread block r decodes, through the decode pipeline (decode_pipeline.cuh), only the stream
// blocks whose outputs cover row ids[r], and its sink keeps the weights of that row, stored
// at out[r * row_elements ...]. A stream block is decodable alone (its first gap and output
// position are stored, spec 3.1), so a row costs one or two blocks for typical widths.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "cuda_error.h"
#include "decode_pipeline.cuh"
#include "decode_plan.h"

namespace df11::cuda {
namespace detail {
namespace {

struct RowsParams {
  KernelBatch<1> batch;  // the group (first_block 0) and its status record
  const int64_t* ids;
  uint16_t* out;
  uint32_t row_elements;
  uint32_t rows;
  bool vector;  // 16-byte stores: out 16-byte aligned and row_elements a multiple of 8
};

// Step 6: the block's weights that lie in the row [lo, hi) go to row[i - lo]; all the
// block's exponent bytes are zeroed (kExponentBuffers = 1, as StoreSink).
struct RowSink {
  static constexpr uint32_t kExponentBuffers = 1;
  uint16_t* row;
  uint32_t lo, hi;
  bool vector;

  __device__ __forceinline__ bool needs_next_block(const BlockOut&) const { return false; }
  __device__ __forceinline__ void prepare(const BlockOut&) const {}
  __device__ __forceinline__ void after_block(const BlockOut&) const {}

  __device__ __forceinline__ void consume(const BlockOut& o) const {
    const uint32_t base8 = o.op0 & ~(kUnit - 1);
    const uint32_t n_units = o.op1 > o.op0 ? (o.op1 - base8 + kUnit - 1) / kUnit : 0;
    const uint32_t ex_at = o.staging + (base8 - o.base);
    const uint32_t sm_at = o.sm_stage_at + (base8 - o.base);
    // Row-relative bounds; a unit before the row wraps (write_unit's indices are modulo 2^32).
    const uint32_t from = max(o.op0, lo) - lo;
    const uint32_t to = max(min(o.op1, hi), lo) - lo;
    for (uint32_t u = threadIdx.x; u < n_units; u += kThreads) {
      const uint32_t first = base8 + kUnit * u;
      const uint2 ex = lds_u64(ex_at + kUnit * u);
      sts_zero64(ex_at + kUnit * u);  // scatter_exponents ORs into zeros
      if (first + kUnit <= lo || first >= hi) continue;
      const uint2 sm = o.sm_staged ? lds_u64(sm_at + kUnit * u) : load_sign_mantissa(*o.g, first);
      write_unit(row, vector, first - lo, from, to, sm, ex);
    }
  }
};

// The blocks {begin, end} whose outputs cover weights [lo, hi), lo < hi <= n_elements, by
// binary search in output_positions. Reads stay inside the array whatever it holds.
__device__ __forceinline__ uint2 covering_blocks(const KernelGroup& g, uint32_t lo, uint32_t hi) {
  uint32_t a = 0, b = g.n_blocks;  // the last block starting at or before lo
  while (b - a > 1) {
    const uint32_t mid = (a + b) / 2;
    if (load_output_position(g, mid) <= lo)
      a = mid;
    else
      b = mid;
  }
  uint32_t c = a, d = g.n_blocks;  // the first block (after begin) starting at or after hi
  while (d - c > 1) {
    const uint32_t mid = (c + d) / 2;
    if (load_output_position(g, mid) >= hi)
      d = mid;
    else
      c = mid;
  }
  return make_uint2(a, d);
}

template <bool kCompact>
__global__ void __launch_bounds__(kThreads, kCompact ? kMinBlocksPerSm : kMinBlocksPerSmFast)
    rows_kernel(const __grid_constant__ RowsParams p) {
  const uint32_t r = blockIdx.x;
  const int64_t id = p.ids[r];
  uint16_t* const row = p.out + uint64_t{r} * p.row_elements;
  if (id < 0 || id >= static_cast<int64_t>(p.rows)) {
    // Not a row of the group: zeros, and the group's status reports the position in ids.
    for (uint32_t i = threadIdx.x; i < p.row_elements; i += kThreads) row[i] = 0;
    if (threadIdx.x == 0) report(p.batch.status, p.batch.epoch, 0, kProblemRowId, r);
    return;
  }
  const uint32_t lo = static_cast<uint32_t>(id) * p.row_elements;  // < n_elements < 2^32
  RowSink sink{row, lo, lo + p.row_elements, p.vector};
  decode_range<1, kCompact, RowSink, false>(
      p.batch, sink, [&p, &sink] { return covering_blocks(p.batch.groups[0], sink.lo, sink.hi); });
}

}  // namespace

Status prepare_rows_kernel(const KernelConfig& config) {
  // The same shared layout as the decode kernel's (StoreSink's staging buffers).
  static_assert(RowSink::kExponentBuffers == 1, "RowSink stages like StoreSink");
  const auto kernel = config.compact ? rows_kernel<true> : rows_kernel<false>;
  return raise_shared_limit(reinterpret_cast<const void*>(kernel), config.shared_bytes,
                            "rows kernel");
}

}  // namespace detail

Status launch_decode_rows(DecodePlan& plan, size_t group, const int64_t* d_ids, size_t n_ids,
                          uint64_t row_elements, uint16_t* d_out, void* d_workspace,
                          size_t workspace_bytes, CUstream_st* stream) {
  DecodePlan::Impl& p = *plan.impl_;
  const auto invalid = [](const std::string& m) {
    return Status(ErrorCode::kInvalidArgument, "launch_decode_rows: " + m);
  };
  if (group >= p.groups.size()) {
    return invalid("group " + std::to_string(group) + " of a plan of " +
                   std::to_string(p.groups.size()));
  }
  const detail::KernelGroup& g = p.groups[group];
  if (row_elements == 0 || g.n_elements % row_elements != 0) {
    return invalid(p.names[group] + ": rows of " + std::to_string(row_elements) +
                   " weights do not divide its " + std::to_string(g.n_elements));
  }
  if (n_ids > 0x7FFFFFFFu) {
    return invalid(std::to_string(n_ids) + " ids, more than 2^31 - 1");
  }
  if (n_ids != 0 && (d_ids == nullptr || d_out == nullptr)) {
    return invalid(d_ids == nullptr ? "ids is null" : "out is null");
  }
  if (workspace_bytes < plan.workspace_bytes() || d_workspace == nullptr) {
    return invalid("workspace of " + std::to_string(workspace_bytes) + " bytes, the plan needs " +
                   std::to_string(plan.workspace_bytes()));
  }
  int device = -1;
  DF11_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "launch_decode_rows: cudaGetDevice");
  if (device != p.device) {
    return invalid("the plan was made for device " + std::to_string(p.device) +
                   ", the current device is " + std::to_string(device));
  }
  if (n_ids == 0) return Status::ok();
  DF11_ASSIGN_OR_RETURN(const uint32_t epoch,
                        detail::begin_launch(p, d_workspace, stream, "launch_decode_rows"));
  detail::RowsParams params{};
  params.batch.status = static_cast<detail::GroupStatusRecord*>(d_workspace) + group;
  params.batch.n_groups = 1;
  params.batch.total_blocks = g.n_blocks;
  params.batch.epoch = epoch;
  params.batch.pool = nullptr;
  params.batch.pool_start = g.n_blocks;
  params.batch.layout = p.layout;
  params.batch.groups[0] = g;
  params.batch.groups[0].first_block = 0;
  params.batch.groups[0].out = nullptr;  // the sink writes rows, never the group's output
  params.ids = d_ids;
  params.out = d_out;
  params.row_elements = static_cast<uint32_t>(row_elements);
  params.rows = static_cast<uint32_t>(g.n_elements / row_elements);
  params.vector = row_elements % 8 == 0 && reinterpret_cast<uintptr_t>(d_out) % 16 == 0;
  const dim3 grid(static_cast<uint32_t>(n_ids));
  if (p.compact) {
    detail::rows_kernel<true><<<grid, detail::kThreads, p.shared_bytes, stream>>>(params);
  } else {
    detail::rows_kernel<false><<<grid, detail::kThreads, p.shared_bytes, stream>>>(params);
  }
  DF11_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "rows kernel launch");
  return Status::ok();
}

}  // namespace df11::cuda
