// The rows kernel and its launcher (launch_decode_rows, cuda_decoder.h): rows of one group
// seen as a matrix, for an embedding lookup that needs a few rows of a large coded matrix.
// Thread block r decodes, through the decode pipeline (decode_pipeline.cuh), only the stream
// blocks whose outputs cover row ids[r], and its sink keeps the weights of that row, stored
// at out[r * row_elements ...]. A stream block is decodable alone (its first gap and output
// position are stored, spec 3.1), so a row costs one or two blocks for typical widths.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <span>
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

// The spans kernel: spans[s] = weights [lo, hi) of the group, stored at out + at. The
// thread blocks (blockIdx.x, s), blockIdx.x < ctas, share the stream blocks that cover the span
// (each decoded once, the span's first and last possibly by two thread blocks); the others
// of row s return at once.
struct Span {
  uint32_t lo, hi;
  uint64_t at;
  uint32_t ctas;
};

struct SpansParams {
  KernelBatch<1> batch;  // the group (first_block 0) and its status record
  uint16_t* out;
  Span spans[kMaxDecodeSpans];
  bool vector;  // 16-byte stores: out 16-byte aligned, every lo and at a multiple of 8
};

template <bool kCompact>
__global__ void __launch_bounds__(kThreads, kCompact ? kMinBlocksPerSm : kMinBlocksPerSmFast)
    spans_kernel(const __grid_constant__ SpansParams p) {
  const Span& span = p.spans[blockIdx.y];
  const uint32_t k = blockIdx.x;
  if (k >= span.ctas) return;
  RowSink sink{p.out + span.at, span.lo, span.hi, p.vector};
  decode_range<1, kCompact, RowSink, false>(p.batch, sink, [&p, &span, k] {
    const uint2 c = covering_blocks(p.batch.groups[0], span.lo, span.hi);
    const uint32_t n = c.y - c.x;
    return make_uint2(c.x + static_cast<uint32_t>(uint64_t{k} * n / span.ctas),
                      c.x + static_cast<uint32_t>(uint64_t{k + 1} * n / span.ctas));
  });
}

// The selected-rows kernel: row r = blockIdx.y of the group seen as a matrix of rows of
// row_elements weights is decoded into out + r * row_elements where mask[r] != 0, by the
// thread blocks (blockIdx.x < ctas, r) sharing the stream blocks that cover it, as the spans
// kernel shares a span's; the thread blocks of a row whose mask is 0 return at once, and its
// output is not written. For a mixture of experts' weights (a row per expert): only the experts
// that a step's tokens were routed to are decoded, with the routing read on the GPU.
struct SelectedParams {
  KernelBatch<1> batch;  // the group (first_block 0) and its status record
  const int32_t* mask;
  uint16_t* out;
  uint32_t row_elements;
  uint32_t ctas;
  bool vector;  // 16-byte stores: out 16-byte aligned and row_elements a multiple of 8
};

template <bool kCompact>
__global__ void __launch_bounds__(kThreads, kCompact ? kMinBlocksPerSm : kMinBlocksPerSmFast)
    selected_rows_kernel(const __grid_constant__ SelectedParams p) {
  const uint32_t r = blockIdx.y;
  if (p.mask[r] == 0) return;
  const uint32_t lo = r * p.row_elements;  // < n_elements < 2^32
  RowSink sink{p.out + lo, lo, lo + p.row_elements, p.vector};
  const uint32_t k = blockIdx.x;
  decode_range<1, kCompact, RowSink, false>(p.batch, sink, [&p, &sink, k] {
    const uint2 c = covering_blocks(p.batch.groups[0], sink.lo, sink.hi);
    const uint32_t n = c.y - c.x;
    return make_uint2(c.x + static_cast<uint32_t>(uint64_t{k} * n / p.ctas),
                      c.x + static_cast<uint32_t>(uint64_t{k + 1} * n / p.ctas));
  });
}

Status invalid_argument(const std::string& what, const std::string& m) {
  return Status(ErrorCode::kInvalidArgument, what + ": " + m);
}

// The one-group launchers' (rows, spans) shared checks: the group index, the workspace and
// the current device.
Status check_one_group(const DecodePlan& plan, size_t group, const void* d_workspace,
                       size_t workspace_bytes, const std::string& what) {
  const DecodePlan::Impl& p = PlanAccess::impl(plan);
  const auto invalid = [&what](const std::string& m) { return invalid_argument(what, m); };
  if (group >= p.groups.size()) {
    return invalid("group " + std::to_string(group) + " of a plan of " +
                   std::to_string(p.groups.size()));
  }
  if (workspace_bytes < plan.workspace_bytes() || d_workspace == nullptr) {
    return invalid("workspace of " + std::to_string(workspace_bytes) + " bytes, the plan needs " +
                   std::to_string(plan.workspace_bytes()));
  }
  int device = -1;
  DF11_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), what + ": cudaGetDevice");
  if (device != p.device) {
    return invalid("the plan was made for device " + std::to_string(p.device) +
                   ", the current device is " + std::to_string(device));
  }
  return Status::ok();
}

// A launch of group `group` alone into the workspace (its epoch begun): the batch whose sink
// writes its own outputs, never the group's.
Result<KernelBatch<1>> one_group_batch(DecodePlan& plan, size_t group, void* d_workspace,
                                       CUstream_st* stream, const char* what) {
  DecodePlan::Impl& p = PlanAccess::impl(plan);
  const KernelGroup& g = p.groups[group];
  DF11_ASSIGN_OR_RETURN(const uint32_t epoch, begin_launch(p, d_workspace, stream, what));
  KernelBatch<1> batch{};
  batch.status = static_cast<GroupStatusRecord*>(d_workspace) + group;
  batch.n_groups = 1;
  batch.total_blocks = g.n_blocks;
  batch.epoch = epoch;
  batch.pool = nullptr;
  batch.pool_start = g.n_blocks;
  batch.layout = p.layout;
  batch.groups[0] = g;
  batch.groups[0].first_block = 0;
  batch.groups[0].out = nullptr;
  return batch;
}

// The rows of `row_elements` weights that group `group` of the plan holds, or kInvalidArgument
// (through `invalid`) where that width does not divide the group.
template <class Invalid>
Result<uint64_t> group_rows(const DecodePlan& plan, size_t group, uint64_t row_elements,
                            const Invalid& invalid) {
  const DecodePlan::Impl& p = PlanAccess::impl(plan);
  const KernelGroup& g = p.groups[group];
  if (row_elements == 0 || g.n_elements % row_elements != 0) {
    return invalid(p.names[group] + ": rows of " + std::to_string(row_elements) +
                   " weights do not divide its " + std::to_string(g.n_elements));
  }
  return g.n_elements / row_elements;
}

// Launches the plan's configuration of a kernel of this file (`fast` or `compact`) on `grid`.
template <class Params>
Status launch_configured(const DecodePlan& plan, void (*fast)(Params), void (*compact)(Params),
                         dim3 grid, const Params& params, CUstream_st* stream, const char* what) {
  const DecodePlan::Impl& p = PlanAccess::impl(plan);
  (p.compact ? compact : fast)<<<grid, kThreads, p.shared_bytes, stream>>>(params);
  DF11_CUDA_RETURN_IF_ERROR(cudaGetLastError(), what);
  return Status::ok();
}

}  // namespace

Status prepare_rows_kernel(const KernelConfig& config) {
  // The same shared layout as the decode kernel's (StoreSink's staging buffers).
  static_assert(RowSink::kExponentBuffers == 1, "RowSink stages like StoreSink");
  const auto kernel = config.compact ? rows_kernel<true> : rows_kernel<false>;
  DF11_RETURN_IF_ERROR(raise_shared_limit(reinterpret_cast<const void*>(kernel),
                                          config.shared_bytes, "rows kernel"));
  const auto spans = config.compact ? spans_kernel<true> : spans_kernel<false>;
  DF11_RETURN_IF_ERROR(raise_shared_limit(reinterpret_cast<const void*>(spans), config.shared_bytes,
                                          "spans kernel"));
  const auto selected = config.compact ? selected_rows_kernel<true> : selected_rows_kernel<false>;
  return raise_shared_limit(reinterpret_cast<const void*>(selected), config.shared_bytes,
                            "selected-rows kernel");
}

}  // namespace detail

Status launch_decode_rows(DecodePlan& plan, size_t group, const int64_t* d_ids, size_t n_ids,
                          uint64_t row_elements, uint16_t* d_out, void* d_workspace,
                          size_t workspace_bytes, CUstream_st* stream) {
  DF11_RETURN_IF_ERROR(
      detail::check_one_group(plan, group, d_workspace, workspace_bytes, "launch_decode_rows"));
  const auto invalid = [](const std::string& m) {
    return detail::invalid_argument("launch_decode_rows", m);
  };
  DF11_ASSIGN_OR_RETURN(const uint64_t rows,
                        detail::group_rows(plan, group, row_elements, invalid));
  if (n_ids > 0x7FFFFFFFu) {
    return invalid(std::to_string(n_ids) + " ids, more than 2^31 - 1");
  }
  if (n_ids != 0 && (d_ids == nullptr || d_out == nullptr)) {
    return invalid(d_ids == nullptr ? "ids is null" : "out is null");
  }
  if (n_ids == 0) return Status::ok();
  detail::RowsParams params{};
  DF11_ASSIGN_OR_RETURN(params.batch, detail::one_group_batch(plan, group, d_workspace, stream,
                                                              "launch_decode_rows"));
  params.ids = d_ids;
  params.out = d_out;
  params.row_elements = static_cast<uint32_t>(row_elements);
  params.rows = static_cast<uint32_t>(rows);
  params.vector = row_elements % 8 == 0 && reinterpret_cast<uintptr_t>(d_out) % 16 == 0;
  return detail::launch_configured(plan, detail::rows_kernel<false>, detail::rows_kernel<true>,
                                   dim3(static_cast<uint32_t>(n_ids)), params, stream,
                                   "rows kernel launch");
}

Status launch_decode_spans(DecodePlan& plan, size_t group, std::span<const DecodeSpan> spans,
                           uint16_t* d_out, void* d_workspace, size_t workspace_bytes,
                           CUstream_st* stream) {
  DF11_RETURN_IF_ERROR(
      detail::check_one_group(plan, group, d_workspace, workspace_bytes, "launch_decode_spans"));
  DecodePlan::Impl& p = *plan.impl_;
  const auto invalid = [](const std::string& m) {
    return detail::invalid_argument("launch_decode_spans", m);
  };
  const detail::KernelGroup& g = p.groups[group];
  if (spans.size() > kMaxDecodeSpans) {
    return invalid(std::to_string(spans.size()) + " spans, more than " +
                   std::to_string(kMaxDecodeSpans));
  }
  uint64_t total = 0;
  for (size_t s = 0; s < spans.size(); ++s) {
    const DecodeSpan& sp = spans[s];
    if (sp.offset > g.n_elements || sp.count > g.n_elements - sp.offset) {
      return invalid(p.names[group] + ": span " + std::to_string(s) + " (weights " +
                     std::to_string(sp.offset) + " + " + std::to_string(sp.count) +
                     ") is outside its " + std::to_string(g.n_elements));
    }
    total += sp.count;
  }
  if (total != 0 && d_out == nullptr) return invalid("out is null");
  if (total == 0) return Status::ok();
  detail::SpansParams params{};
  DF11_ASSIGN_OR_RETURN(params.batch, detail::one_group_batch(plan, group, d_workspace, stream,
                                                              "launch_decode_spans"));
  params.out = d_out;
  params.vector = reinterpret_cast<uintptr_t>(d_out) % 16 == 0;
  // The resident thread blocks shared among the spans by their expected stream blocks (the
  // group's mean weights per block), at least one each and none beyond a span's blocks.
  const double per_block = static_cast<double>(g.n_elements) / std::max<uint32_t>(g.n_blocks, 1);
  const double resident = p.grid();
  uint32_t n = 0, ctas = 1;
  uint64_t at = 0;
  for (const DecodeSpan& sp : spans) {
    if (sp.count == 0) continue;
    detail::Span& d = params.spans[n++];
    d.lo = static_cast<uint32_t>(sp.offset);  // n_elements < 2^32 (validated when planning)
    d.hi = static_cast<uint32_t>(sp.offset + sp.count);
    d.at = at;
    const double blocks = static_cast<double>(sp.count) / per_block + 2;
    d.ctas = static_cast<uint32_t>(std::clamp(resident * sp.count / total, 1.0, blocks));
    ctas = std::max(ctas, d.ctas);
    params.vector = params.vector && d.lo % 8 == 0 && at % 8 == 0;
    at += sp.count;
  }
  return detail::launch_configured(plan, detail::spans_kernel<false>, detail::spans_kernel<true>,
                                   dim3(ctas, n), params, stream, "spans kernel launch");
}

Status launch_decode_selected_rows(DecodePlan& plan, size_t group, const int32_t* d_mask,
                                   uint64_t row_elements, uint64_t expected_rows, uint16_t* d_out,
                                   void* d_workspace, size_t workspace_bytes, CUstream_st* stream) {
  DF11_RETURN_IF_ERROR(detail::check_one_group(plan, group, d_workspace, workspace_bytes,
                                               "launch_decode_selected_rows"));
  DecodePlan::Impl& p = *plan.impl_;
  const auto invalid = [](const std::string& m) {
    return detail::invalid_argument("launch_decode_selected_rows", m);
  };
  const detail::KernelGroup& g = p.groups[group];
  DF11_ASSIGN_OR_RETURN(const uint64_t rows,
                        detail::group_rows(plan, group, row_elements, invalid));
  if (rows > kMaxSelectedRows) {
    return invalid(p.names[group] + ": " + std::to_string(rows) + " rows, more than " +
                   std::to_string(kMaxSelectedRows));
  }
  if (rows != 0 && (d_mask == nullptr || d_out == nullptr)) {
    return invalid(d_mask == nullptr ? "mask is null" : "out is null");
  }
  if (rows == 0) return Status::ok();
  detail::SelectedParams params{};
  DF11_ASSIGN_OR_RETURN(params.batch, detail::one_group_batch(plan, group, d_workspace, stream,
                                                              "launch_decode_selected_rows"));
  params.mask = d_mask;
  params.out = d_out;
  params.row_elements = static_cast<uint32_t>(row_elements);
  params.vector = row_elements % 8 == 0 && reinterpret_cast<uintptr_t>(d_out) % 16 == 0;
  // The resident thread blocks shared among the rows expected, at least one per row and none
  // beyond a row's expected stream blocks (the group's mean weights per block).
  const double per_block = static_cast<double>(g.n_elements) / std::max<uint32_t>(g.n_blocks, 1);
  const double blocks = static_cast<double>(row_elements) / per_block + 2;
  const double expected = static_cast<double>(std::clamp<uint64_t>(expected_rows, 1, rows));
  params.ctas = static_cast<uint32_t>(std::clamp(p.grid() / expected, 1.0, blocks));
  return detail::launch_configured(plan, detail::selected_rows_kernel<false>,
                                   detail::selected_rows_kernel<true>,
                                   dim3(params.ctas, static_cast<uint32_t>(rows)), params, stream,
                                   "selected-rows kernel launch");
}

}  // namespace df11::cuda
