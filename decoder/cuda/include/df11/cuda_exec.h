// The execution layout on the GPU (spec/EXEC_LAYOUT.md; design and measurements in
// decoder/cuda/EXEC_KERNEL.md): transcoding into it (from BF16 or from a DF11 group), back
// to BF16, and the fused GEMM Y = X W^T for 1..kExecMaxBatch rows of X straight from it. Host API:
// compiles with the host compiler, no CUDA headers (streams are CUstream_st*).
//
// Every call takes the caller's stream and device memory; none allocates. Only the
// measure calls synchronise (they return sizes the caller needs to allocate the blobs), and
// read_exec_status() (it returns the launch's report). Everything else only enqueues.
//
// Load time (once per matrix, or per DF11 group):
//   exec_measure(sources, ws, ...)      -> base, exceptions and blob bytes per matrix (syncs)
//   ... caller allocates each blob (16-byte aligned) ...
//   launch_exec_pack(sources, blobs, ws, ...)   writes the blobs (no sync)
// or, from a DF11 group already in device memory (its BF16 lives only in the workspace):
//   exec_measure_group(group, shapes, ws, ...) then launch_exec_pack_group(shapes, blobs, ws, ...)
// Per forward pass:
//   launch_exec_gemm(gemms, batch, ws, ...)     Y = X W^T for each matrix (no sync)
//   read_exec_status(ws, stream, ...)           or copy the 16 bytes later yourself
//
// Exactness: launch_exec_gemm() computes each output with BF16 tensor-core products
// (mma.sync m16n8k16, FP32 accumulation) in a fixed order (spec 6), and
// launch_bf16_reference_gemm() runs the same products on BF16 weights: on one GPU their
// outputs are equal bit for bit whenever the blob decodes to those weights. Row j of Y depends
// only on W and row j of X at every batch of 1-64 rows; at 65-256 rows an sm_90a build on a
// Hopper GPU multiplies with warpgroup products in another fixed order (spec 6, EXEC_KERNEL.md
// v23-v26), which the reference follows. Not bit-equal to cuBLAS (another order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "df11/cuda_decoder.h"
#include "df11/exec_layout.h"
#include "df11/status.h"

struct CUstream_st;

namespace df11::cuda {

inline constexpr uint32_t kExecMaxBatch = 256;          // rows of X
inline constexpr uint32_t kExecMaxLaunchMatrices = 64;  // matrices per kernel launch (more: loops)
inline constexpr size_t kExecStatusBytes = 16;          // the status record of a launch

// One blob in device memory: 16-byte aligned, `bytes` long (its header's total_bytes), and its
// shape and exception count as the host knows them (from exec_measure, or from the header of a
// host copy the caller validated). Kernels read only within these bytes, whatever they hold.
struct ExecMatrix {
  const uint8_t* d_blob = nullptr;
  uint64_t bytes = 0;
  uint32_t rows = 0, cols = 0;
  uint32_t n_exceptions = 0;
};

// ---- Fused GEMM ----

// Y = X W^T: X BF16 [batch, cols] row-major (the activations of `batch` tokens, as torch lays
// them out), Y BF16 [batch, rows] row-major, row j at d_y + j * ld_y (ld_y 0: rows; else at
// least rows, so that the products of a layer's fused members, each at its column offset, fill
// one [batch, ld_y] output). X: any alignment (16-byte aligned with cols a multiple of 8 takes
// the wide loads). No element of Y may be an element of any X or another Y.
struct ExecGemm {
  ExecMatrix w;
  const uint16_t* d_x = nullptr;
  uint16_t* d_y = nullptr;
  uint32_t ld_y = 0;
};

// How a launch treats the status record at the start of its workspace. kReset: two small
// memsets first, so the record reports this launch alone. kKeep: no memset; the launch's
// reports are added to what the record holds (the first corrupt (matrix, tile) by index and
// the union of the problems), so one record collects any number of launches until the
// caller resets it (reset_exec_status): what an engine does to keep its per-token launches
// free of memsets (each a node of a captured graph).
enum class ExecStatusUse { kReset, kKeep };

// Enqueues the reset of a status record (kExecStatusBytes at d_workspace): no sync.
Status reset_exec_status(void* d_workspace, size_t workspace_bytes, CUstream_st* stream);

// Enqueues Y = X W^T for every entry (one kernel launch per 64 matrices, after a 16-byte
// memset of the status record at the start of `d_workspace`, >= kExecStatusBytes, unless
// `use` is kKeep). batch 1..kExecMaxBatch. A blob whose tile offsets disagree with its codes, or
// whose base is above Max_Base, is reported through the workspace (read_exec_status: kCorruptData);
// Y is then unspecified, and nothing outside the described buffers is read or written.
// kInvalidArgument for bad arguments (null or misaligned pointers, shapes, batch), kCuda if a
// launch fails.
Status launch_exec_gemm(std::span<const ExecGemm> gemms, uint32_t batch, void* d_workspace,
                        size_t workspace_bytes, CUstream_st* stream,
                        ExecStatusUse use = ExecStatusUse::kReset);

// The reference: the same products in the same order from BF16 W [rows, cols] row-major
// (d_w, any alignment). One launch per 64 matrices; no workspace.
struct Bf16Gemm {
  const uint16_t* d_w = nullptr;
  uint32_t rows = 0, cols = 0;
  const uint16_t* d_x = nullptr;
  uint16_t* d_y = nullptr;
};
Status launch_bf16_reference_gemm(std::span<const Bf16Gemm> gemms, uint32_t batch,
                                  CUstream_st* stream);

// ---- Execution layout -> BF16 ----

struct ExecToBf16 {
  ExecMatrix w;
  uint16_t* d_out = nullptr;  // rows * cols BF16, row-major (16-byte aligned is faster)
};
// Enqueues the decode of every entry (status as for launch_exec_gemm).
Status launch_exec_to_bf16(std::span<const ExecToBf16> items, void* d_workspace,
                           size_t workspace_bytes, CUstream_st* stream,
                           ExecStatusUse use = ExecStatusUse::kReset);

// Waits for `stream` and reports the latest launch into `d_workspace`: OK, or kCorruptData
// naming `names[i]` of the first corrupt matrix (the index within that launch's list; "matrix
// i" if names is shorter) and its tile.
Status read_exec_status(const void* d_workspace, CUstream_st* stream,
                        std::span<const std::string> names = {});

// ---- Transcoding: BF16 in device memory -> execution layout ----

struct ExecSource {
  const uint16_t* d_w = nullptr;  // rows * cols BF16, row-major, any alignment
  uint32_t rows = 0, cols = 0;
};

// What exec_measure found for one matrix: the window base (spec 4.1), its exceptions and the
// blob's total bytes.
struct ExecMeasure {
  uint32_t base = 0;
  uint32_t n_exceptions = 0;
  uint64_t bytes = 0;
};

// Workspace for exec_measure + launch_exec_pack of these sources: histograms, bases and
// per-tile exception offsets (~4 bytes per 4096 weights). kInvalidArgument for bad shapes.
Result<size_t> exec_transcode_workspace_bytes(std::span<const ExecSource> sources);

// Enqueues the histograms, the base choice and the per-tile exception counts, then copies the
// results to the host: synchronises `stream`. Fills out[i] for each source (out.size() must
// equal sources.size()). kUncodable for a matrix with 2^32 or more exceptions.
Status exec_measure(std::span<const ExecSource> sources, void* d_workspace, size_t workspace_bytes,
                    CUstream_st* stream, std::span<ExecMeasure> out);

// Enqueues the packing of each source into d_blobs[i] (16-byte aligned, at least the measured
// bytes), from the state exec_measure left in the same workspace (the sources must not change
// in between). The blobs are then exactly what encode_exec_matrix() writes. No sync.
Status launch_exec_pack(std::span<const ExecSource> sources, std::span<uint8_t* const> d_blobs,
                        void* d_workspace, size_t workspace_bytes, CUstream_st* stream);

// ---- Transcoding: a DF11 group in device memory -> one blob per member ----

struct ExecShape {
  uint32_t rows = 0, cols = 0;  // a member, in group order; they tile the group
};

// Workspace for the group's transcode: its BF16 weights (2 bytes each: the only place the
// group is ever decoded to), a one-group decode's records, and exec_transcode_workspace_bytes
// of its members.
Result<size_t> exec_group_workspace_bytes(const GroupView& group,
                                          std::span<const ExecShape> members);

// Decodes the group (group.d_out is ignored: the output goes to the workspace), checks the
// decode's status and measures the members: synchronises `stream`. kCorruptData for a stream
// that does not decode, as read_decode_status() reports it.
Status exec_measure_group(const DeviceGroup& group, std::span<const ExecShape> members,
                          void* d_workspace, size_t workspace_bytes, CUstream_st* stream,
                          std::span<ExecMeasure> out);

// Packs the members measured by exec_measure_group() into their blobs (no sync).
Status launch_exec_pack_group(std::span<const ExecShape> members, std::span<uint8_t* const> d_blobs,
                              void* d_workspace, size_t workspace_bytes, CUstream_st* stream);

}  // namespace df11::cuda
