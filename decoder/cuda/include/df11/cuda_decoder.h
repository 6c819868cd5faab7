// CUDA DF11 decoder: host API (compiles with the host compiler; no __global__ and no CUDA
// headers here: streams are passed as CUstream_st*, which is what cudaStream_t is).
//
// Two ways in:
//  - decode_group_to_host(): one group from host memory to host memory. Allocates and
//    synchronises internally; for tools and tests.
//  - The batched API, for inference engines that keep DF11 groups in device memory and decode
//    them just before use, on their own stream, into memory they own:
//
//      auto plan = make_decode_plan(groups, "model");          // host: validates every group
//      size_t bytes = plan->workspace_bytes();                 // phase 1: ask
//      ... caller allocates `bytes` of device memory ...       // (once)
//      init_workspace(*plan, d_ws, bytes, stream);             // once: zeroes the records
//      launch_decode(*plan, d_ws, bytes, stream);              // phase 2: one kernel launch
//      ... caller synchronises when it wants to know ...
//      Status s = read_decode_status(*plan, d_ws, stream);     // synchronises `stream`
//
//    or, without waiting for the stream: copy_decode_status() enqueues a copy of the records
//    into a host buffer, and copied_group_status() reads a group's result from it later.
//    A plan may use several workspaces (double buffering) and plans may share one: the status
//    read for a workspace is that of the latest launch into it (decoder/cuda/NOTES.md).
//
//    launch_decode() performs no allocation, no host<->device copy and no synchronisation:
//    it enqueues one kernel per 256 groups (one for any transformer block or typical model).
//    The group descriptions travel as kernel parameters.
//
// Safety: groups are validated on the host (df11::validate_group) when the plan is made;
// the bitstream and gaps cannot be validated without decoding, so the kernel clamps every
// read to its array and every write to its block's output range, and each block reports a
// stream that does not decode as declared into the workspace (read_decode_status() turns it
// into kCorruptData). No input makes the kernel touch memory outside the arrays described.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "df11/group.h"
#include "df11/status.h"

struct CUstream_st;  // cudaStream_t is CUstream_st*; nullptr is the legacy default stream

namespace df11::cuda {

namespace detail {
struct PlanAccess;  // the fused decode+GEMV launcher's view of a plan (cuda_gemv.h)
}

// True if a CUDA device can be used; otherwise false and, if `why` is given, the reason
// ("no CUDA device", driver error text, ...). Never aborts.
bool device_available(std::string* why = nullptr);

// Convenience for tools and tests: validates `group` on the host, copies it to the current
// device, decodes it there and copies n_elements BF16 patterns back into `out` (size must
// equal n_elements). Allocates and synchronises internally (unlike the batched API).
// Reports kCorruptData if the kernel detects an inconsistent stream. `what` names the group.
Status decode_group_to_host(const GroupView& group, std::span<uint16_t> out,
                            const std::string& what);

// One group of a batch: the caller's host copy (validated and read while planning only: the
// plan keeps no reference to it) and the device copies of the same bytes, plus where the
// n_elements BF16 patterns go. Device pointers may have any alignment; 16-byte aligned
// sign_mantissa and out, 8-byte aligned encoded_exponent and 4-byte aligned
// output_positions take the fast paths. All device buffers are the caller's and must stay
// valid until every launch using them has completed.
struct DeviceGroup {
  GroupView host;
  const uint8_t* d_luts = nullptr;              // n_luts * 256 bytes
  const uint8_t* d_encoded_exponent = nullptr;  // n_bytes
  const uint8_t* d_sign_mantissa = nullptr;     // n_elements bytes
  const uint8_t* d_output_positions = nullptr;  // 4 * (n_blocks + 1) bytes
  const uint8_t* d_gaps = nullptr;              // gap_bytes_for_blocks(n_blocks) bytes
  uint16_t* d_out = nullptr;  // n_elements BF16 patterns (written); null: rows decodes only
  std::string name;           // for messages, e.g. "model.layers.3"
};

// Kernel configurations (decoder/cuda/NOTES.md): kFast double-buffers its shared staging and
// reads sign_mantissa through shared memory; kCompact needs about half the shared memory
// (GPUs with <= 99 KiB per thread block, or to leave room for concurrent kernels) and is
// slower. kAuto takes whichever fits more thread blocks per multiprocessor, kFast on a tie.
enum class KernelChoice { kAuto, kFast, kCompact };

// Weights [offset, offset + count) of a group (launch_decode_spans).
struct DecodeSpan {
  uint64_t offset = 0;
  uint64_t count = 0;
};
inline constexpr size_t kMaxDecodeSpans = 8;

struct DecodePlanOptions {
  KernelChoice kernel = KernelChoice::kAuto;
  // Thread blocks per launch at most (0: as many as the GPU holds at once, a few per
  // multiprocessor); fewer leave multiprocessors to kernels running beside the decode.
  uint32_t max_thread_blocks = 0;
};

// Immutable description of a batch, made on the host. Not thread-safe: launch_decode()
// counts launches in it, so use one plan per host thread.
class DecodePlan {
 public:
  DecodePlan(DecodePlan&&) noexcept;
  DecodePlan& operator=(DecodePlan&&) noexcept;
  ~DecodePlan();

  size_t n_groups() const;
  uint64_t total_blocks() const;    // 4096-byte stream blocks over all groups
  uint64_t total_elements() const;  // BF16 weights written by one launch
  uint64_t stream_bytes() const;    // encoded_exponent bytes over all groups
  // Device memory a launch needs, in bytes (16 per group + 8 per kernel launch): one status
  // record per group, then one counter per kernel launch through which its thread blocks
  // share the last blocks (decoder/cuda/NOTES.md).
  size_t workspace_bytes() const;
  // Host memory a copy_decode_status() needs, in bytes (16 + 16 per group).
  size_t status_copy_bytes() const;
  // Kernel launches per launch_decode() call (ceil(n_groups / 256)).
  uint32_t launches() const;
  // Dynamic shared memory per thread block, in bytes (grows with the largest block).
  uint32_t shared_bytes() const;
  bool compact() const;  // the kernel configuration chosen (KernelChoice::kCompact)
  // Thread blocks per launch at most (persistent: a few per multiprocessor, or
  // DecodePlanOptions::max_thread_blocks).
  uint32_t grid_size() const;
  int device() const;
  const std::string& group_name(size_t i) const;

  struct Impl;

 private:
  friend Result<DecodePlan> make_decode_plan(std::span<const DeviceGroup>, const std::string&,
                                             const DecodePlanOptions&);
  friend Status init_workspace(DecodePlan&, void*, size_t, CUstream_st*);
  friend Status launch_decode(DecodePlan&, void*, size_t, CUstream_st*);
  friend Status launch_decode_rows(DecodePlan&, size_t, const int64_t*, size_t, uint64_t, uint16_t*,
                                   void*, size_t, CUstream_st*);
  friend Status launch_decode_spans(DecodePlan&, size_t, std::span<const DecodeSpan>, uint16_t*,
                                    void*, size_t, CUstream_st*);
  friend Status launch_decode_selected_rows(DecodePlan&, size_t, const int32_t*, uint64_t, uint64_t,
                                            uint16_t*, void*, size_t, CUstream_st*);
  friend Status read_decode_status(const DecodePlan&, const void*, CUstream_st*);
  friend struct detail::PlanAccess;
  friend Status copy_decode_status(const DecodePlan&, const void*, void*, size_t, CUstream_st*);
  friend Status copied_group_status(const DecodePlan&, const void*, size_t, size_t);
  explicit DecodePlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Validates every group (validate_group plus the device-side limits: at most 32768 weights
// per block, non-null device pointers but d_out) and sizes the launch for the current device
// (kResourceLimit if the kernel does not fit it). Groups of one plan must not overlap in
// their outputs. `what` prefixes every message. Host-only: touches no device memory and
// synchronises nothing.
Result<DecodePlan> make_decode_plan(std::span<const DeviceGroup> groups, const std::string& what,
                                    const DecodePlanOptions& options = {});

// Enqueues a zeroing of the whole workspace (`workspace_bytes`, at least the plan's) on
// `stream`. Call once per workspace (fresh memory) before its first launch_decode() (or
// launch_decode_gemv(), whose larger workspace starts with the same status records). No
// synchronisation.
Status init_workspace(DecodePlan& plan, void* d_workspace, size_t workspace_bytes,
                      CUstream_st* stream);

// Enqueues the decode of every group of the plan on `stream`: no allocation, no copy, no
// synchronisation. `d_workspace` (plan.workspace_bytes() bytes, initialised once by
// init_workspace) receives the per-group status of this launch; it must not be shared by
// two launches in flight at once. Its status stays readable until the next launch into it.
// The first launch of a plan into a workspace (and the first after 2^32 - 1 launches in the
// process) also enqueues a zeroing of its records. Returns kCuda if the launch itself fails.
Status launch_decode(DecodePlan& plan, void* d_workspace, size_t workspace_bytes,
                     CUstream_st* stream);

// Enqueues on `stream` the decode of rows ids[0 .. n_ids) of group `group` of the plan, its
// n_elements weights seen as a matrix of rows of `row_elements` weights (which must divide
// n_elements): out[r * row_elements + j] = weight ids[r] * row_elements + j, for an embedding
// lookup. d_ids: n_ids row ids in device memory; d_out: n_ids * row_elements BF16 patterns of
// device memory (16-byte aligned with row_elements % 8 == 0: wide stores). One kernel launch
// (n_ids thread blocks, each decoding the one or few stream blocks that cover its row): no
// allocation, no copy, no synchronisation. An id outside [0, n_elements / row_elements) gets
// a row of zeros and is reported through the workspace like a corrupt stream (the group's
// record, kInvalidArgument naming its position in ids); nothing outside d_out is written.
// The workspace, its epochs and its status reads are launch_decode()'s: this counts as a
// launch of the plan into it (earlier records of every group of the plan are then ignored).
// CUDA graphs: capturable; a replay reads the ids then in d_ids (n_ids fixed by the capture).
// Works on plans whose groups have no d_out.
Status launch_decode_rows(DecodePlan& plan, size_t group, const int64_t* d_ids, size_t n_ids,
                          uint64_t row_elements, uint16_t* d_out, void* d_workspace,
                          size_t workspace_bytes, CUstream_st* stream);

// Enqueues on `stream` the decode of `spans` (at most kMaxDecodeSpans) of group `group` of the
// plan into d_out, one after the other: span s's weights [offset, offset + count) of the group
// land at d_out[count_0 + ... + count_{s-1} ...]. For an engine's layer made of members of a
// group (q, k and v of a block): each stream block covering a span is decoded once (one at
// a span's edge by at most two thread blocks), over the resident thread blocks, in one launch
// (16-byte stores where d_out is 16-byte aligned and every offset and position a multiple of
// 8). No allocation, no copy, no synchronisation; nothing outside the spans' outputs is
// written. Workspace, epochs, status reads and CUDA graphs as launch_decode_rows(); works on
// plans whose groups have no d_out. kInvalidArgument for a span outside the group, too many
// spans, a null d_out (with weights to write), a bad group index or a small workspace.
Status launch_decode_spans(DecodePlan& plan, size_t group, std::span<const DecodeSpan> spans,
                           uint16_t* d_out, void* d_workspace, size_t workspace_bytes,
                           CUstream_st* stream);

// Enqueues on `stream` the decode of the rows of group `group` that `d_mask` selects, the
// group's n_elements weights seen as a matrix of rows of `row_elements` weights (which must
// divide n_elements; at most kMaxSelectedRows rows): out[r * row_elements + j] = weight
// r * row_elements + j for every row r with d_mask[r] != 0 (d_mask: one int32 per row, in
// device memory, read when the kernel runs); the rows of d_out whose mask is 0 are not
// written. For a mixture of experts' weights, a row per expert: the experts a step routes to
// are decoded, the routing never read on the host. d_out: n_elements BF16 patterns of device
// memory (16-byte aligned with row_elements % 8 == 0: wide stores). One kernel launch of a
// grid (ctas, rows), ctas the resident thread blocks shared among `expected_rows` rows (the
// selected rows' typical count; clamped to [1, rows]): the thread blocks of an unselected row
// return at once. No allocation, no copy, no synchronisation; nothing outside the selected
// rows' outputs is written. Workspace, epochs, status reads and CUDA graphs as
// launch_decode_rows() (a replay reads the mask d_mask then holds). kInvalidArgument for a
// width that does not divide the group, too many rows, a null d_mask or d_out, a bad group
// index or a small workspace.
inline constexpr uint64_t kMaxSelectedRows = 65535;  // a grid's y dimension
Status launch_decode_selected_rows(DecodePlan& plan, size_t group, const int32_t* d_mask,
                                   uint64_t row_elements, uint64_t expected_rows, uint16_t* d_out,
                                   void* d_workspace, size_t workspace_bytes, CUstream_st* stream);

// Copies the status records of the plan's latest launch into `d_workspace` to the host
// (synchronises `stream`) and returns OK, or kCorruptData (kBadGap, kBadOutputPositions)
// naming the first corrupt group and block. kInvalidArgument if the plan never launched into
// this workspace.
Status read_decode_status(const DecodePlan& plan, const void* d_workspace, CUstream_st* stream);

// The same without waiting: enqueues on `stream` a copy of the records of the plan's latest
// launch into `d_workspace` to `h_status` (status_copy_bytes() bytes of the caller's host
// memory; page-locked memory makes the copy asynchronous) and notes in it which launch they
// belong to. No synchronisation.
Status copy_decode_status(const DecodePlan& plan, const void* d_workspace, void* h_status,
                          size_t status_bytes, CUstream_st* stream);

// copy_decode_status() for several plans (one device) at once: plan k's latest launch into
// d_workspaces[k] copied to h_status + k * slot_bytes, where slot_bytes is at least every
// plan's status_copy_bytes(). h_status is n * slot_bytes bytes of one page-locked allocation
// (then one kernel launch copies every plan's records; other host memory takes a copy per
// plan). Each slot is then read as copy_decode_status()'s buffer (copied_group_status).
Status copy_decode_status_many(std::span<DecodePlan* const> plans,
                               std::span<const void* const> d_workspaces, void* h_status,
                               size_t slot_bytes, CUstream_st* stream);

// Group `group`'s result in a copy made by copy_decode_status() for this plan, once the
// caller knows the copy is complete. Host only (no CUDA call). kInvalidArgument for a buffer
// that copy_decode_status() did not fill for this plan.
Status copied_group_status(const DecodePlan& plan, const void* h_status, size_t status_bytes,
                           size_t group);

}  // namespace df11::cuda
