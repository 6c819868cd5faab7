// What a DecodePlan holds, shared by the plan builder (decode_plan.cpp) and the launcher
// (decode_kernel.cu). Private to df11_cuda.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "decode_core.h"
#include "df11/cuda_decoder.h"
#include "kernel_group.h"
#include "status_record.h"
#include "workspace_ledger.h"

namespace df11::cuda {

struct DecodePlan::Impl {
  std::vector<detail::KernelGroup> groups;  // first_block counts within each launch
  std::vector<std::string> names;
  std::vector<std::vector<uint64_t>> member_ends;  // per group: end of each member (spec 3.2)
  uint64_t total_blocks = 0;
  uint64_t total_elements = 0;
  uint64_t stream_bytes = 0;
  uint32_t max_block_weights = 0;
  detail::SharedLayout layout{};  // staging buffer, slot and table sizes (decode_core.h)
  uint32_t shared_bytes = 0;      // dynamic shared memory per thread block
  uint32_t ctas_per_sm = 0;
  uint32_t max_grid = 0;  // DecodePlanOptions::max_thread_blocks (0: no cap)
  // Thread blocks a launch may use: all resident ones, or max_grid.
  uint32_t grid() const {
    const uint32_t resident = ctas_per_sm * sm_count;
    return max_grid != 0 && max_grid < resident ? max_grid : resident;
  }
  bool compact = false;    // the kernel's compact configuration (see KernelConfig)
  bool rows_only = false;  // a group has no output (d_out null): launch_decode refuses
  uint32_t sm_count = 0;
  int device = 0;
  uint64_t id = 0;  // process-unique: host status copies name the plan they belong to
  // The epoch of this plan's latest launch into each workspace (workspace_ledger.h).
  detail::WorkspaceLedger ledger;
};

namespace detail {

// The epoch of a launch of `p` into `d_workspace` that is about to be enqueued on `stream`;
// first enqueues the zeroing of the status records when records of an older generation of
// epochs (or of an unknown past) could outrank it (workspace_ledger.h). For launch_decode()
// and launch_decode_gemv(), whose workspaces start with the same records.
// `what` ("launch_decode") prefixes an error.
Result<uint32_t> begin_launch(DecodePlan::Impl& p, void* d_workspace, CUstream_st* stream,
                              const char* what);

// Copies `bytes` of status records from the workspace to `h_dst`, stream ordered: a
// one-block kernel that writes them where `h_dst` is host memory the device can address
// (page-locked, under unified addressing) and the current device is the plan's
// (`plan_device`), otherwise cudaMemcpyAsync. Between two decodes in a CUDA graph the kernel
// adds about 1 us to the stream, the copy about 9 (bench/status_copy.py). `what` says where an
// error came from.
Status enqueue_status_copy(const void* d_src, void* h_dst, size_t bytes, int plan_device,
                           CUstream_st* stream, const char* what);

// One of several status copies enqueued together (enqueue_status_copies).
struct StatusCopy {
  const void* src;  // device: a workspace's records
  uint8_t* dst;     // host
  size_t bytes;     // a multiple of 4
};

// The copies of several workspaces' records, stream ordered, into one host buffer
// [h_begin, h_end) that holds every destination: one kernel launch per 64 copies where both
// ends of the buffer are host memory the current device (`device`) addresses at one offset
// (one page-locked allocation, as the caller of copy_decode_status_many promises), otherwise
// cudaMemcpyAsync per copy. `what` says where an error came from.
Status enqueue_status_copies(std::span<const StatusCopy> copies, const uint8_t* h_begin,
                             const uint8_t* h_end, int device, CUstream_st* stream,
                             const char* what);

struct PlanAccess {
  static DecodePlan::Impl& impl(DecodePlan& plan) { return *plan.impl_; }
  static const DecodePlan::Impl& impl(const DecodePlan& plan) { return *plan.impl_; }
};

// Groups per kernel launch: their descriptions are kernel parameters (96 bytes each, within
// the 32 KiB parameter limit of CUDA 12.1+ on sm_70 and later).
inline constexpr uint32_t kMaxGroupsPerLaunch = 256;

// The decode's workspace for n groups: the status records (one per group), then one tail-pool
// counter per launch (epoch << 32 | blocks taken; decode_pipeline.cuh). launch_decode_gemv's
// workspace starts with the same bytes and never writes the counters.
inline size_t decode_workspace_bytes(size_t n_groups) {
  const size_t launches = (n_groups + kMaxGroupsPerLaunch - 1) / kMaxGroupsPerLaunch;
  return n_groups * sizeof(GroupStatusRecord) + launches * sizeof(unsigned long long);
}

// How the kernel runs on the current device for the plan's shared-memory layout: the
// fast configuration (double-buffered, sign_mantissa staged through shared memory) or the
// compact one, as `choice` says (decode_kernel.cu). Raises the kernel's dynamic shared
// memory limit accordingly; kResourceLimit if the chosen configuration does not fit.
struct KernelConfig {
  bool compact = false;
  uint32_t shared_bytes = 0;  // dynamic shared memory per thread block
  uint32_t ctas_per_sm = 0;
};
Status configure_kernel(const SharedLayout& layout, KernelChoice choice, KernelConfig& config);

// Raises `kernel`'s dynamic shared memory limit on the current device to `shared_bytes` if
// it is below. The limit is per kernel and device, shared by every plan: only ever raised, so
// that a plan made later for smaller blocks does not break the launches of an earlier one.
// `name` ("decode kernel") is for the message.
Status raise_shared_limit(const void* kernel, uint32_t shared_bytes, const char* name);

// Raises the rows kernel's dynamic shared memory limit for `config` (rows_kernel.cu): at plan
// time, so that launch_decode_rows() calls nothing but the launch.
Status prepare_rows_kernel(const KernelConfig& config);

}  // namespace detail
}  // namespace df11::cuda
