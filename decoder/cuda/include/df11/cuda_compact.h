// The compact execution layout on the GPU (spec/EXEC_COMPACT.md): transcoding BF16 into it,
// decoding a blob back to BF16, and multiplying from it. Host API: compiles with the host compiler,
// no CUDA headers (streams are CUstream_st*). It takes the caller's stream and device memory and
// allocates nothing; the histogram and measure calls synchronise (they return what the caller needs
// to choose the code and allocate the blob), the others only enqueue.
//
//   compact_histogram(w, ws)             exponent counts (syncs)
//   choose_compact_lengths(counts)       the code (df11_encoder, exec_compact_encode.h)
//   compact_measure(w, lengths, ws)      the blob's size and first parts (syncs)
//   ... caller allocates header.total_bytes (16-byte aligned) ...
//   launch_compact_pack(w, plan, blob, ws)        the blob: the reference encoder's bytes
//   launch_compact_to_bf16(matrix, out, status)   back to BF16
//   launch_compact_gemm({{matrix, x, y}, ...}, batch, status)   Y = X W^T, W not written out
//
// The kernels (compact_kernel.cu, compact_gemm.cu, compact_pack.cu) share their per-lane
// arithmetic with host emulations (decoder/cuda/host/compact_core.h, compact_pack_core.h),
// which the CPU tests check against the reference encoder and decoder byte for byte; the GPU
// tests (tests/cuda/gpu_compact_test.cpp) check the kernels themselves.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "df11/cuda_decoder.h"  // DeviceGroup
#include "df11/cuda_exec.h"     // ExecShape
#include "df11/exec_compact.h"
#include "df11/status.h"

struct CUstream_st;

namespace df11::cuda {

// The decode table of a code, as the kernels read it: 4,096 u32 entries indexed by a lane's
// next 12 bits, each giving the one or two codewords that begin there (16 KB; layout in
// decoder/cuda/host/compact_core.h). Built once per code, on the host.
inline constexpr uint32_t kCompactDecodeTableEntries = 1u << kCompactMaxCodeBits;
std::vector<uint32_t> compact_decode_table(const CompactCode& code);

// Rows of X of the compact layout's fused GEMM (the 12-bit layout's kExecMaxBatch is larger:
// its wide kernel serves up to 256 rows; this one's 8-warp strip kernel stops at 32).
inline constexpr uint32_t kCompactMaxBatch = 32;

// One blob on the device and what the host knows of it (from the header it wrote or checked).
struct CompactMatrix {
  const uint8_t* d_blob = nullptr;    // total_bytes, 16-byte aligned
  const uint32_t* d_table = nullptr;  // compact_decode_table of its code, on the device
  uint32_t rows = 0, cols = 0;
  uint64_t stream_bits = 0;
};

// d_out (rows x cols BF16, row-major) <- the blob's weights, one warp per tile. *d_status
// (4 bytes of device memory, zeroed by the caller) gets bit 0 set where a lane's bits held no
// codeword or its codewords ran past its bits (a corrupt blob; the output is then wrong). Reads
// stay inside the blob and the table, writes inside d_out, whatever the blob holds.
// kInvalidArgument for a shape outside the limits or a null pointer.
Status launch_compact_to_bf16(const CompactMatrix& m, uint16_t* d_out, uint32_t* d_status,
                              CUstream_st* stream);

// One product of the fused GEMM: Y = X W^T, X [batch, cols] and Y [batch, rows] BF16 on the
// device (row-major), W the blob's weights.
struct CompactGemm {
  CompactMatrix w;
  const uint16_t* d_x = nullptr;
  uint16_t* d_y = nullptr;
};

// The fused GEMM from the compact layout for every entry, batch 1..kCompactMaxBatch:
// W decoded in registers, one thread block per 16 rows, up to 16 matrices per kernel launch
// (so that a layer's q, k and v, or gate and up, fill the GPU together). Each Y equals
// launch_bf16_reference_gemm on its blob's weights bit for bit (the same fragments, products
// and order of sums; cuda_exec.h). *d_status gets bit 0 set as launch_compact_to_bf16 sets it
// (some Y is then wrong); reads stay inside the blobs, their tables and X, writes inside Y.
// A Y must not overlap any X or another Y. kInvalidArgument for a batch, shape or pointer
// outside the limits; kCuda if a launch fails.
//
// `kernel` picks how a launch spreads its work (the outputs are the same bit for bit): kAuto
// the faster for the launch, as measured (decoder/cuda/EXEC_KERNEL.md); kPlain 8 warps per 16
// rows, each decoding the tiles it multiplies; kHelpers, at batch 1-16, 16 warps per 16 rows,
// half of them decoding tiles for the other half (faster where a launch has few rows: all of
// them resident with room to spare), on GPUs whose blocks may have its 105 KB of shared memory
// (sm_80, sm_90); elsewhere, and at batch 17-32, kHelpers is kPlain.
enum class CompactGemmKernel { kAuto, kPlain, kHelpers };
Status launch_compact_gemm(std::span<const CompactGemm> gemms, uint32_t batch, uint32_t* d_status,
                           CUstream_st* stream,
                           CompactGemmKernel kernel = CompactGemmKernel::kAuto);

// Writes compact_decode_table(code) into d_table (kCompactDecodeTableEntries u32, 16-byte
// aligned device memory) and waits for the copy.
Status upload_compact_decode_table(const CompactCode& code, uint32_t* d_table, CUstream_st* stream);

// Waits for `stream` and returns the status word a launch_compact_to_bf16 or
// launch_compact_gemm left at d_status (0: every blob decoded).
Result<uint32_t> read_compact_status(const uint32_t* d_status, CUstream_st* stream);

// Device workspace the transcode needs for a rows x cols matrix: the histogram, the code
// (codewords and lengths) and per tile its lane table and bit total.
Result<uint64_t> compact_workspace_bytes(uint32_t rows, uint32_t cols);

// Exponent counts of d_w (rows x cols BF16, row-major, on the device) over the padded matrix,
// padding positions as exponent 0 (spec 4.1). Synchronises `stream`.
Result<std::array<uint64_t, kCompactSymbols>> compact_histogram(const uint16_t* d_w, uint32_t rows,
                                                                uint32_t cols, void* d_workspace,
                                                                uint64_t workspace_bytes,
                                                                CUstream_st* stream);

// A measured transcode: the blob's header (its total_bytes is what to allocate), its bytes
// before the byte plane (header, code lengths, tile offsets, lane tables) and its code.
struct CompactPlan {
  CompactHeader header;
  std::vector<uint8_t> prefix;
  CompactCode code;
  uint32_t rows = 0, cols = 0;
};

// Measures the transcode of d_w with code `lengths` (kInvalidArgument where they are no code or
// leave an exponent of d_w without a codeword). Synchronises `stream`.
Result<CompactPlan> compact_measure(const uint16_t* d_w, uint32_t rows, uint32_t cols,
                                    std::span<const uint8_t, kCompactSymbols> lengths,
                                    void* d_workspace, uint64_t workspace_bytes,
                                    CUstream_st* stream);

// Writes the blob of `plan` into d_blob (plan.header.total_bytes, 16-byte aligned) from the same
// d_w: the bytes encode_compact_matrix_with_lengths writes. Copies the plan's prefix from host
// memory (waiting for that copy), then only enqueues.
Status launch_compact_pack(const uint16_t* d_w, const CompactPlan& plan, uint8_t* d_blob,
                           void* d_workspace, uint64_t workspace_bytes, CUstream_st* stream);

// ---- A DF11 group's members, transcoded on the GPU ----
//
//   compact_group_workspace_bytes(group, shapes)        the workspace (host only)
//   compact_measure_group(dev, shapes, choose, ws)      decode once, then each member's
//                                                       counts, code and plan (syncs)
//   ... caller allocates each plan's header.total_bytes (16-byte aligned) ...
//   launch_compact_pack_group(plans, blobs, ws)         the blobs (one wait per member)
//
// The workspace holds the group's BF16 weights (its only copy) and the largest member's
// transcode workspace.

// The code lengths for a member's exponent counts (padding counted as exponent 0): the
// caller's choice, e.g. choose_compact_lengths (df11_encoder, exec_compact_encode.h).
using CompactCodeChooser = std::function<Result<std::array<uint8_t, kCompactSymbols>>(
    const std::array<uint64_t, kCompactSymbols>&)>;

Result<size_t> compact_group_workspace_bytes(const GroupView& group,
                                             std::span<const ExecShape> members);

// Decodes `group` (group.d_out ignored) into the workspace (256-byte aligned), checks the
// decode, and plans each member (its shapes tile the group, in order) with the code `choose`
// gives for its counts. Synchronises `stream`. A stream that does not decode is reported as
// the decoder reports it, naming the group; a chooser's error names the member.
Result<std::vector<CompactPlan>> compact_measure_group(const DeviceGroup& group,
                                                       std::span<const ExecShape> members,
                                                       const CompactCodeChooser& choose,
                                                       void* d_workspace, size_t workspace_bytes,
                                                       CUstream_st* stream);

// compact_measure_group in two steps, for a caller that chooses the codes itself (the C API):
// compact_count_group decodes and checks the group as compact_measure_group does and returns
// each member's exponent counts (synchronises `stream`); compact_plan_group then plans each
// member from the same workspace with lengths[k] (synchronises; kInvalidArgument where a
// member's lengths are no code or leave one of its exponents without a codeword, naming it).
Result<std::vector<std::array<uint64_t, kCompactSymbols>>> compact_count_group(
    const DeviceGroup& group, std::span<const ExecShape> members, void* d_workspace,
    size_t workspace_bytes, CUstream_st* stream);
Result<std::vector<CompactPlan>> compact_plan_group(
    std::span<const ExecShape> members,
    std::span<const std::array<uint8_t, kCompactSymbols>> lengths, void* d_workspace,
    size_t workspace_bytes, CUstream_st* stream, const std::string& what);

// Packs each planned member into d_blobs[k] from the workspace compact_measure_group left:
// the bytes encode_compact_matrix_with_lengths writes for it. Waits for its host copies once
// per member.
Status launch_compact_pack_group(std::span<const CompactPlan> plans,
                                 std::span<uint8_t* const> d_blobs, void* d_workspace,
                                 size_t workspace_bytes, CUstream_st* stream);

}  // namespace df11::cuda
