// Host side of the batched API: planning (validation and kernel descriptions come from
// decoder/cuda/host), workspace and status.
#include "decode_plan.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "cuda_error.h"

namespace df11::cuda {
namespace {

std::string str(uint64_t v) { return std::to_string(v); }

// "what: group 'model.layers.3'"; an unnamed group is "what: group #i", or just `what` when
// it is the batch's only group.
std::string group_what(const std::string& what, const DeviceGroup& g, size_t i, size_t n) {
  if (!g.name.empty()) return what + ": group '" + g.name + "'";
  return n == 1 ? what : what + ": group #" + str(i);
}

Status check_pointers(const DeviceGroup& g, const std::string& gw) {
  const char* missing = g.d_luts == nullptr               ? "d_luts"
                        : g.d_encoded_exponent == nullptr ? "d_encoded_exponent"
                        : g.d_sign_mantissa == nullptr    ? "d_sign_mantissa"
                        : g.d_output_positions == nullptr ? "d_output_positions"
                        : g.d_gaps == nullptr             ? "d_gaps"
                                                          : nullptr;
  if (missing != nullptr) {
    return Status(ErrorCode::kInvalidArgument, gw + ": device pointer " + missing + " is null");
  }
  return Status::ok();
}

}  // namespace

DecodePlan::DecodePlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DecodePlan::DecodePlan(DecodePlan&&) noexcept = default;
DecodePlan& DecodePlan::operator=(DecodePlan&&) noexcept = default;
DecodePlan::~DecodePlan() = default;

size_t DecodePlan::n_groups() const { return impl_->groups.size(); }
uint64_t DecodePlan::total_blocks() const { return impl_->total_blocks; }
uint64_t DecodePlan::total_elements() const { return impl_->total_elements; }
uint64_t DecodePlan::stream_bytes() const { return impl_->stream_bytes; }
size_t DecodePlan::workspace_bytes() const {
  return detail::decode_workspace_bytes(impl_->groups.size());
}
size_t DecodePlan::status_copy_bytes() const {
  return detail::status_copy_bytes(impl_->groups.size());
}
uint32_t DecodePlan::launches() const {
  const size_t n = impl_->groups.size();
  return static_cast<uint32_t>((n + detail::kMaxGroupsPerLaunch - 1) / detail::kMaxGroupsPerLaunch);
}
uint32_t DecodePlan::shared_bytes() const { return impl_->shared_bytes; }
bool DecodePlan::compact() const { return impl_->compact; }
uint32_t DecodePlan::grid_size() const { return impl_->grid(); }
int DecodePlan::device() const { return impl_->device; }
const std::string& DecodePlan::group_name(size_t i) const { return impl_->names.at(i); }

Result<DecodePlan> make_decode_plan(std::span<const DeviceGroup> groups, const std::string& what,
                                    const DecodePlanOptions& options) {
  try {
    auto impl = std::make_unique<DecodePlan::Impl>();
    static std::atomic<uint64_t> next_id{1};
    impl->id = next_id.fetch_add(1, std::memory_order_relaxed);
    impl->groups.reserve(groups.size());
    impl->names.reserve(groups.size());
    uint64_t launch_blocks = 0;  // blocks in the current launch (kernel indexes them in 32 bits)
    uint32_t min_length = 8;     // shortest code of any group
    uint32_t table_rows = 1;     // decode rows of the deepest group
    for (size_t i = 0; i < groups.size(); ++i) {
      const DeviceGroup& dg = groups[i];
      const std::string gw = group_what(what, dg, i, groups.size());
      DF11_ASSIGN_OR_RETURN(const GroupInfo info, validate_group(dg.host, gw));
      DF11_RETURN_IF_ERROR(check_pointers(dg, gw));
      if (dg.d_out == nullptr) impl->rows_only = true;
      detail::KernelGroup k =
          detail::make_kernel_group(dg.host, info, dg.d_luts, dg.d_encoded_exponent,
                                    dg.d_sign_mantissa, dg.d_output_positions, dg.d_gaps, dg.d_out);
      if (i % detail::kMaxGroupsPerLaunch == 0) launch_blocks = 0;
      k.first_block = static_cast<uint32_t>(launch_blocks);
      launch_blocks += info.n_blocks;
      if (launch_blocks > UINT32_MAX) {
        return Status(ErrorCode::kResourceLimit,
                      gw + ": more than 2^32 - 1 stream blocks in one launch; plan fewer groups");
      }
      impl->groups.push_back(k);
      impl->names.push_back(gw);
      std::vector<uint64_t> ends;  // spec 3.2: split positions, then n
      for (size_t j = 0; j + 8 <= dg.host.split_positions.size(); j += 8) {
        ends.push_back(load_le64(dg.host.split_positions.data() + j));
      }
      ends.push_back(info.n_elements);
      impl->member_ends.push_back(std::move(ends));
      impl->total_blocks += info.n_blocks;
      impl->total_elements += info.n_elements;
      impl->stream_bytes += info.n_bytes;
      impl->max_block_weights = std::max(impl->max_block_weights, info.max_block_weights);
      min_length = std::min(min_length, detail::shortest_code_length(info));
      table_rows = std::max(table_rows, info.n_luts - 1);
    }
    // Slots sized by the shortest code, the joined table by the deepest row, so that three
    // thread blocks fit a multiprocessor where the tables allow (decoder/cuda/NOTES.md).
    impl->layout.staging_bytes = detail::staging_bytes_for(impl->max_block_weights);
    impl->layout.min_code_length = min_length;
    impl->layout.slot_stride = detail::slot_stride_for(min_length);
    impl->layout.table_rows = table_rows;
    int device = 0;
    DF11_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), what + ": cudaGetDevice");
    int sms = 0;
    DF11_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                              what + ": cudaDeviceGetAttribute(multiprocessor count)");
    impl->device = device;
    impl->sm_count = static_cast<uint32_t>(sms);
    detail::KernelConfig config;
    DF11_RETURN_IF_ERROR(
        detail::configure_kernel(impl->layout, options.kernel, config).with_context(what));
    DF11_RETURN_IF_ERROR(detail::prepare_rows_kernel(config).with_context(what));
    impl->compact = config.compact;
    impl->shared_bytes = config.shared_bytes;
    impl->ctas_per_sm = config.ctas_per_sm;
    impl->max_grid = options.max_thread_blocks;
    return DecodePlan(std::move(impl));
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit, what + ": out of memory while planning the decode");
  }
}

Status init_workspace(DecodePlan& plan, void* d_workspace, size_t workspace_bytes,
                      CUstream_st* stream) {
  if (workspace_bytes < plan.workspace_bytes() || (d_workspace == nullptr && workspace_bytes)) {
    return Status(ErrorCode::kInvalidArgument,
                  "init_workspace: workspace of " + str(workspace_bytes) +
                      " bytes, the plan needs " + str(plan.workspace_bytes()));
  }
  if (workspace_bytes == 0) return Status::ok();
  DF11_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(d_workspace, 0, workspace_bytes, stream),
                            "init_workspace: cudaMemsetAsync");
  plan.impl_->ledger.initialised(d_workspace);
  return Status::ok();
}

namespace detail {

Status raise_shared_limit(const void* kernel, uint32_t shared_bytes, const char* name) {
  static std::mutex mutex;
  static std::map<std::pair<int, const void*>, uint32_t> raised;  // (device, kernel) -> bytes
  int device = 0;
  DF11_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "cudaGetDevice");
  std::lock_guard<std::mutex> lock(mutex);
  uint32_t& limit = raised[{device, kernel}];
  if (shared_bytes > limit) {
    DF11_CUDA_RETURN_IF_ERROR(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(shared_bytes)),
        std::string("cudaFuncSetAttribute(") + name + ", " + std::to_string(shared_bytes) +
            " bytes of dynamic shared memory)");
    limit = shared_bytes;
  }
  return Status::ok();
}

Result<uint32_t> begin_launch(DecodePlan::Impl& p, void* d_workspace, CUstream_st* stream,
                              const char* what) {
  const WorkspaceLedger::Launch launch = p.ledger.begin_launch(d_workspace);
  if (launch.zero_first) {
    DF11_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(d_workspace, 0, decode_workspace_bytes(p.groups.size()), stream),
        std::string(what) + ": cudaMemsetAsync(status records, pool counters)");
  }
  return launch.epoch;
}

}  // namespace detail

namespace {

// The epoch of the plan's latest launch into `d_workspace`: a status can only be read for it.
Result<uint32_t> latest_launch(const DecodePlan::Impl& p, const void* d_workspace,
                               const char* what) {
  if (d_workspace == nullptr) {
    return Status(ErrorCode::kInvalidArgument, std::string(what) + ": workspace is null");
  }
  const std::optional<uint32_t> epoch = p.ledger.latest(d_workspace);
  if (!epoch) {  // before any copy: the workspace may not even be initialised
    return Status(ErrorCode::kInvalidArgument,
                  std::string(what) + ": the plan was never launched into this workspace (or " +
                      "into " + str(detail::WorkspaceLedger::kMaxWorkspaces) +
                      " other workspaces since)");
  }
  return *epoch;
}

}  // namespace

Status read_decode_status(const DecodePlan& plan, const void* d_workspace, CUstream_st* stream) {
  const DecodePlan::Impl& p = *plan.impl_;
  if (p.groups.empty()) return Status::ok();
  DF11_ASSIGN_OR_RETURN(const uint32_t epoch, latest_launch(p, d_workspace, "read_decode_status"));
  std::vector<detail::GroupStatusRecord> records(p.groups.size());
  DF11_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(records.data(), d_workspace, records.size() * sizeof(records[0]),
                      cudaMemcpyDeviceToHost, stream),
      "read_decode_status: cudaMemcpyAsync");
  DF11_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream),
                            "read_decode_status: cudaStreamSynchronize");
  return detail::workspace_status(records, epoch, p.names);
}

Status copy_decode_status(const DecodePlan& plan, const void* d_workspace, void* h_status,
                          size_t status_bytes, CUstream_st* stream) {
  const DecodePlan::Impl& p = *plan.impl_;
  if (h_status == nullptr || status_bytes < plan.status_copy_bytes()) {
    return Status(ErrorCode::kInvalidArgument, "copy_decode_status: host buffer of " +
                                                   str(status_bytes) + " bytes, the plan needs " +
                                                   str(plan.status_copy_bytes()));
  }
  uint32_t epoch = 0;
  if (!p.groups.empty()) {
    DF11_ASSIGN_OR_RETURN(epoch, latest_launch(p, d_workspace, "copy_decode_status"));
    DF11_RETURN_IF_ERROR(detail::enqueue_status_copy(
        d_workspace, static_cast<uint8_t*>(h_status) + sizeof(detail::StatusCopyHeader),
        p.groups.size() * sizeof(detail::GroupStatusRecord), p.device, stream,
        "copy_decode_status"));
  }
  // The header is the host's own: written now, outside the bytes the copy lands in.
  const detail::StatusCopyHeader header{detail::kStatusCopyMagic, epoch, p.id};
  std::memcpy(h_status, &header, sizeof(header));
  return Status::ok();
}

Status copy_decode_status_many(std::span<DecodePlan* const> plans,
                               std::span<const void* const> d_workspaces, void* h_status,
                               size_t slot_bytes, CUstream_st* stream) {
  const char* what = "copy_decode_status_many";
  if (plans.size() != d_workspaces.size()) {
    return Status(ErrorCode::kInvalidArgument, std::string(what) + ": " + str(plans.size()) +
                                                   " plans and " + str(d_workspaces.size()) +
                                                   " workspaces");
  }
  if (plans.empty()) return Status::ok();
  if (h_status == nullptr) {
    return Status(ErrorCode::kInvalidArgument, std::string(what) + ": h_status is null");
  }
  auto* const h = static_cast<uint8_t*>(h_status);
  std::vector<detail::StatusCopy> copies;
  std::vector<detail::StatusCopyHeader> headers(plans.size());
  copies.reserve(plans.size());
  int device = -1;
  for (size_t k = 0; k < plans.size(); ++k) {
    if (plans[k] == nullptr) {
      return Status(ErrorCode::kInvalidArgument,
                    std::string(what) + ": plan " + str(k) + " is null");
    }
    const DecodePlan::Impl& p = detail::PlanAccess::impl(*plans[k]);
    if (k == 0) device = p.device;
    if (p.device != device) {
      return Status(ErrorCode::kInvalidArgument, std::string(what) + ": plan " + str(k) +
                                                     " is for device " + str(p.device) +
                                                     ", plan 0 for device " + str(device));
    }
    if (slot_bytes < plans[k]->status_copy_bytes()) {
      return Status(ErrorCode::kInvalidArgument,
                    std::string(what) + ": slots of " + str(slot_bytes) + " bytes, plan " + str(k) +
                        " needs " + str(plans[k]->status_copy_bytes()));
    }
    uint32_t epoch = 0;
    if (!p.groups.empty()) {
      DF11_ASSIGN_OR_RETURN(epoch, latest_launch(p, d_workspaces[k], what));
      copies.push_back({d_workspaces[k], h + k * slot_bytes + sizeof(detail::StatusCopyHeader),
                        p.groups.size() * sizeof(detail::GroupStatusRecord)});
    }
    headers[k] = {detail::kStatusCopyMagic, epoch, p.id};
  }
  DF11_RETURN_IF_ERROR(detail::enqueue_status_copies(copies, h, h + plans.size() * slot_bytes,
                                                     device, stream, what));
  // The headers are the host's own: written now, outside the bytes the copies land in.
  for (size_t k = 0; k < plans.size(); ++k) {
    std::memcpy(h + k * slot_bytes, &headers[k], sizeof(headers[k]));
  }
  return Status::ok();
}

Status copied_group_status(const DecodePlan& plan, const void* h_status, size_t status_bytes,
                           size_t group) {
  const DecodePlan::Impl& p = *plan.impl_;
  detail::StatusCopyHeader header;
  if (h_status != nullptr && status_bytes >= plan.status_copy_bytes()) {
    std::memcpy(&header, h_status, sizeof(header));
  }
  if (header.magic != detail::kStatusCopyMagic || header.plan_id != p.id) {
    return Status(ErrorCode::kInvalidArgument,
                  "copied_group_status: the buffer was not filled by copy_decode_status for "
                  "this plan");
  }
  if (group >= p.groups.size()) {
    return Status(ErrorCode::kInvalidArgument, "copied_group_status: group " + str(group) +
                                                   " of a plan of " + str(p.groups.size()));
  }
  detail::GroupStatusRecord record;
  std::memcpy(&record,
              static_cast<const uint8_t*>(h_status) + sizeof(header) + group * sizeof(record),
              sizeof(record));
  return detail::group_record_status(record, header.epoch, p.names[group]);
}

}  // namespace df11::cuda
