// y = W x straight from DF11 groups on the GPU (fused decode+GEMV), and the plain BF16 GEMV
// that defines its arithmetic. Host API: compiles with the host compiler, no CUDA headers.
//
// Every member of every group of a DecodePlan is one matrix W, row-major [rows, cols] (the
// member's weights in group order, spec 3.2). For each, x is BF16 [cols, batch] and y is
// BF16 [rows, batch], both row-major (x[c * batch + j], y[r * batch + j]), batch 1..16.
//
//   auto plan = make_decode_plan(groups, "model");                   // as for decoding
//   auto bytes = gemv_workspace_bytes(plan, matrices, batch);        // phase 1: ask
//   ... caller allocates *bytes of device memory ...                 // (once)
//   init_workspace(plan, d_ws, *bytes, stream);                      // once: zeroes it
//   launch_decode_gemv(plan, matrices, batch, d_ws, *bytes, stream); // phase 2
//   Status s = read_decode_status(plan, d_ws, stream);               // as for decoding
//
// launch_decode_gemv() allocates nothing, copies nothing between host and device and does not
// synchronise: it enqueues one fused kernel and one small reduction kernel per 64 groups (256
// members). The decoded weights never reach global memory.
//
// When it pays: at batch 1, where it beats launch_decode + a BF16 GEMV on the H100
// (BENCHMARKS.md, "GPU GEMV"); from batch 2 on, decode and multiply instead. It does not
// reach a GEMV on BF16 weights: the decode alone costs more than reading the BF16 bytes
// (decoder/cuda/NOTES.md, "What bounds the fused kernel today").
//
// Accumulation order (decoder/cuda/NOTES.md, "Fused decode+GEMV"): every row is cut into
// chunks of kGemvChunk columns (the last one shorter). In a chunk, lane l of 32 owns the
// 8-column units l, l + 32, l + 64, ... and accumulates w * x over its columns in increasing
// order with FP32 fused multiply-adds from +0; the 32 lane sums are added by a butterfly
// (xor 16, 8, 4, 2, 1); y is +0 plus the chunk sums in chunk order, rounded once to BF16
// (nearest, ties to even). launch_reference_gemv() computes exactly that from BF16 weights,
// so the fused output equals it bit for bit whenever the group decodes to those weights.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "df11/cuda_decoder.h"
#include "df11/status.h"

namespace df11::cuda {

inline constexpr uint32_t kGemvChunk = 1024;   // columns per accumulation chunk
inline constexpr uint32_t kGemvMaxBatch = 16;  // columns of x

// One member's matrix: its shape (rows * cols = the member's weights) and device pointers.
// x and y may have any alignment (16-byte aligned x takes the wide loads); y must not overlap
// x or any other matrix's y.
struct GemvMatrix {
  uint32_t rows = 0, cols = 0;
  const uint16_t* d_x = nullptr;  // BF16 [cols, batch]
  uint16_t* d_y = nullptr;        // BF16 [rows, batch] (written)
};

// Workspace launch_decode_gemv() needs for these matrices (one per member of the plan's
// groups, in group then member order) and batch: the plan's status records, a per-thread-block
// carry, one FP32 partial sum per chunk and column and, at batch >= 2, x rearranged chunk by
// chunk for the kernel's loads (written by the launch; any 8-byte aligned workspace). Checks the
// matrices against the plan (kInvalidArgument) and that the fused kernel fits the current device
// (kResourceLimit).
Result<size_t> gemv_workspace_bytes(const DecodePlan& plan, std::span<const GemvMatrix> matrices,
                                    uint32_t batch);

// Enqueues y = W x for every matrix on `stream`, decoding W from the plan's groups. The
// workspace (gemv_workspace_bytes() bytes or more, zeroed once by init_workspace) must not be
// shared by two launches in flight at once. A stream that does not decode as declared is
// reported by read_decode_status() (kCorruptData), as after launch_decode(); y is then
// unspecified but nothing outside the described arrays is touched. The plan's groups'
// d_out pointers are not used.
Status launch_decode_gemv(DecodePlan& plan, std::span<const GemvMatrix> matrices, uint32_t batch,
                          void* d_workspace, size_t workspace_bytes, CUstream_st* stream);

// Workspace of launch_reference_gemv(): one FP32 partial per chunk and column.
size_t reference_gemv_workspace_bytes(uint32_t rows, uint32_t cols, uint32_t batch);

// y = W x for BF16 W [rows, cols] in device memory (d_w, any alignment), in the accumulation
// order above: the reference the fused kernel is checked against. Two kernel launches on
// `stream`; no allocation, no copy, no synchronisation.
Status launch_reference_gemv(const uint16_t* d_w, const GemvMatrix& m, uint32_t batch,
                             void* d_workspace, size_t workspace_bytes, CUstream_st* stream);

}  // namespace df11::cuda
