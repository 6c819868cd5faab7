// Host side of the batched API: validation, kernel descriptions, workspace and status.
#include <algorithm>
#include <cstdint>
#include <new>
#include <string>
#include <utility>

#include <cuda_runtime_api.h>

#include "cuda_error.h"
#include "decode_plan.h"

namespace df11::cuda {
namespace {

std::string str(uint64_t v) { return std::to_string(v); }

bool aligned(const void* p, uintptr_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

// "what: group 'model.layers.3'"; an unnamed group is "what: group #i", or just `what` when
// it is the batch's only group.
std::string group_what(const std::string& what, const DeviceGroup& g, size_t i, size_t n) {
  if (!g.name.empty()) return what + ": group '" + g.name + "'";
  return n == 1 ? what : what + ": group #" + str(i);
}

Status check_pointers(const DeviceGroup& g, const std::string& gw) {
  const char* missing = g.d_luts == nullptr                 ? "d_luts"
                        : g.d_encoded_exponent == nullptr   ? "d_encoded_exponent"
                        : g.d_sign_mantissa == nullptr      ? "d_sign_mantissa"
                        : g.d_output_positions == nullptr   ? "d_output_positions"
                        : g.d_gaps == nullptr               ? "d_gaps"
                        : g.d_out == nullptr                ? "d_out"
                                                            : nullptr;
  if (missing != nullptr) {
    return Status(ErrorCode::kInvalidArgument, gw + ": device pointer " + missing + " is null");
  }
  return Status::ok();
}

}  // namespace

namespace detail {

KernelGroup make_kernel_group(const GroupView& host, const GroupInfo& info,
                              const uint8_t* luts, const uint8_t* stream,
                              const uint8_t* sign_mantissa, const uint8_t* output_positions,
                              const uint8_t* gaps, uint16_t* out) {
  KernelGroup k{};
  k.luts = luts;
  k.stream = stream;
  k.sign_mantissa = sign_mantissa;
  k.output_positions = output_positions;
  k.gaps = gaps;
  k.out = out;
  k.n_bytes = info.n_bytes;
  k.gap_bytes = host.gaps.size();
  k.n_elements = static_cast<uint32_t>(info.n_elements);  // validated: < 2^32
  k.n_blocks = static_cast<uint32_t>(info.n_blocks);
  k.first_block = 0;
  k.n_luts = info.n_luts;
  k.flags = 0;
  k.row_depths = 0;
  for (uint32_t r = 0; r < kTableRows; ++r) {
    const int d = info.lut_row_depth[r];
    const uint64_t v = d >= 0 && d <= 3 ? static_cast<uint64_t>(d) : kUnreachableRow;
    k.row_depths |= v << (3 * r);
  }
  if (aligned(stream, 8)) k.flags |= kStreamAligned8;
  if (aligned(output_positions, 4)) k.flags |= kOpAligned4;
  // Block b is interior when its window bytes and the next window's first 4 bytes, gap
  // fields 512b .. 512(b+1) and output positions b .. b+2 are all inside their arrays:
  // (b + 1) * 4096 + 8 <= n_bytes (which also implies b + 2 <= n_blocks).
  k.interior_blocks = 0;
  if (aligned(stream, 8) && aligned(output_positions, 4) && info.n_bytes >= kBytesPerBlock + 8) {
    k.interior_blocks = static_cast<uint32_t>((info.n_bytes - 8) / kBytesPerBlock);
  }
  if (aligned(sign_mantissa, 16)) k.flags |= kSignMantissaAligned16;
  if (aligned(out, 16)) k.flags |= kOutputAligned16;
  return k;
}

Result<GroupInfo> validate_with_output(const GroupView& group, size_t out_size,
                                       const std::string& what) {
  DF11_ASSIGN_OR_RETURN(GroupInfo info, validate_group(group, what));
  if (out_size != info.n_elements) {
    return Status(ErrorCode::kInvalidArgument, what + ": output holds " + str(out_size) +
                                                   " weights, the group has " +
                                                   str(info.n_elements));
  }
  return info;
}

Status record_status(const GroupStatusRecord& rec, const std::string& what) {
  const std::string block = "block " + str(record_block(rec.key));
  switch (record_problem(rec.key)) {
    case kProblemCount:
      return Status(ErrorCode::kBadOutputPositions,
                    what + ": " + block + ": decoded " + str(rec.detail) +
                        " codes, which does not match output_positions");
    case kProblemBoundary:
      return Status(ErrorCode::kBadGap,
                    what + ": " + block + ": window " + str(rec.detail) +
                        ": its codes do not end where the next window's gap says");
    case kProblemUnusable:
      return Status(ErrorCode::kCorruptData,
                    what + ": " + block + ": window " + str(rec.detail) +
                        ": a code reaches a lookup-table entry no valid code uses");
    case kProblemStreamEnd:
      return Status(ErrorCode::kCorruptData,
                    what + ": " + block +
                        ": the group's last code does not end in the last byte of "
                        "encoded_exponent (only the last byte may hold padding)");
    case kProblemFirstGap:
      return Status(ErrorCode::kBadGap, what + ": gaps field 0 = " + str(rec.detail) +
                                            ", but the stream's first code starts at bit 0");
    case kProblemTooMany:
      return Status(ErrorCode::kBadOutputPositions,
                    what + ": " + block + ": holds " + str(rec.detail) +
                        " weights on the device, more than the plan was made for (device "
                        "copy differs from the validated host copy?)");
    default:
      return Status(ErrorCode::kInternal,
                    what + ": " + block + ": unknown problem code " +
                        str(record_problem(rec.key)));
  }
}

}  // namespace detail

DecodePlan::DecodePlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DecodePlan::DecodePlan(DecodePlan&&) noexcept = default;
DecodePlan& DecodePlan::operator=(DecodePlan&&) noexcept = default;
DecodePlan::~DecodePlan() = default;

size_t DecodePlan::n_groups() const { return impl_->groups.size(); }
uint64_t DecodePlan::total_blocks() const { return impl_->total_blocks; }
uint64_t DecodePlan::total_elements() const { return impl_->total_elements; }
uint64_t DecodePlan::stream_bytes() const { return impl_->stream_bytes; }
size_t DecodePlan::workspace_bytes() const {
  return impl_->groups.size() * sizeof(detail::GroupStatusRecord);
}
uint32_t DecodePlan::launches() const {
  const size_t n = impl_->groups.size();
  return static_cast<uint32_t>((n + detail::kMaxGroupsPerLaunch - 1) /
                               detail::kMaxGroupsPerLaunch);
}
uint32_t DecodePlan::shared_bytes() const { return impl_->shared_bytes; }
bool DecodePlan::compact() const { return impl_->compact; }
uint32_t DecodePlan::grid_size() const { return impl_->ctas_per_sm * impl_->sm_count; }
int DecodePlan::device() const { return impl_->device; }
const std::string& DecodePlan::group_name(size_t i) const { return impl_->names.at(i); }

Result<DecodePlan> make_decode_plan(std::span<const DeviceGroup> groups, const std::string& what,
                                    const DecodePlanOptions& options) {
  try {
    auto impl = std::make_unique<DecodePlan::Impl>();
    impl->groups.reserve(groups.size());
    impl->names.reserve(groups.size());
    uint64_t launch_blocks = 0;  // blocks in the current launch (kernel indexes them in 32 bits)
    for (size_t i = 0; i < groups.size(); ++i) {
      const DeviceGroup& dg = groups[i];
      const std::string gw = group_what(what, dg, i, groups.size());
      DF11_ASSIGN_OR_RETURN(const GroupInfo info, validate_group(dg.host, gw));
      DF11_RETURN_IF_ERROR(check_pointers(dg, gw));
      detail::KernelGroup k = detail::make_kernel_group(
          dg.host, info, dg.d_luts, dg.d_encoded_exponent, dg.d_sign_mantissa,
          dg.d_output_positions, dg.d_gaps, dg.d_out);
      if (i % detail::kMaxGroupsPerLaunch == 0) launch_blocks = 0;
      k.first_block = static_cast<uint32_t>(launch_blocks);
      launch_blocks += info.n_blocks;
      if (launch_blocks > UINT32_MAX) {
        return Status(ErrorCode::kResourceLimit,
                      gw + ": more than 2^32 - 1 stream blocks in one launch; plan fewer groups");
      }
      impl->groups.push_back(k);
      impl->names.push_back(gw);
      impl->total_blocks += info.n_blocks;
      impl->total_elements += info.n_elements;
      impl->stream_bytes += info.n_bytes;
      impl->max_block_weights = std::max(impl->max_block_weights, info.max_block_weights);
    }
    impl->staging_bytes = detail::staging_bytes_for(impl->max_block_weights);
    int device = 0;
    DF11_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), what + ": cudaGetDevice");
    int sms = 0;
    DF11_CUDA_RETURN_IF_ERROR(
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
        what + ": cudaDeviceGetAttribute(multiprocessor count)");
    impl->device = device;
    impl->sm_count = static_cast<uint32_t>(sms);
    detail::KernelConfig config;
    DF11_RETURN_IF_ERROR(
        detail::configure_kernel(impl->staging_bytes, options.kernel, config).with_context(what));
    impl->compact = config.compact;
    impl->shared_bytes = config.shared_bytes;
    impl->ctas_per_sm = config.ctas_per_sm;
    return DecodePlan(std::move(impl));
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit, what + ": out of memory while planning the decode");
  }
}

Status init_workspace(const DecodePlan& plan, void* d_workspace, size_t workspace_bytes,
                      CUstream_st* stream) {
  if (workspace_bytes < plan.workspace_bytes() || (d_workspace == nullptr && workspace_bytes)) {
    return Status(ErrorCode::kInvalidArgument,
                  "init_workspace: workspace of " + str(workspace_bytes) + " bytes, the plan needs " +
                      str(plan.workspace_bytes()));
  }
  if (plan.workspace_bytes() == 0) return Status::ok();
  DF11_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(d_workspace, 0, plan.workspace_bytes(), stream),
                            "init_workspace: cudaMemsetAsync");
  return Status::ok();
}

Status read_decode_status(const DecodePlan& plan, const void* d_workspace, CUstream_st* stream) {
  const DecodePlan::Impl& p = *plan.impl_;
  if (p.groups.empty()) return Status::ok();
  if (d_workspace == nullptr) {
    return Status(ErrorCode::kInvalidArgument, "read_decode_status: workspace is null");
  }
  if (p.epoch == 0) {  // before any copy: the workspace may not even be initialised
    return Status(ErrorCode::kInvalidArgument, "read_decode_status: the plan was never launched");
  }
  std::vector<detail::GroupStatusRecord> records(p.groups.size());
  DF11_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(records.data(), d_workspace, records.size() * sizeof(records[0]),
                      cudaMemcpyDeviceToHost, stream),
      "read_decode_status: cudaMemcpyAsync");
  DF11_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream),
                            "read_decode_status: cudaStreamSynchronize");
  for (size_t i = 0; i < records.size(); ++i) {
    if (detail::record_epoch(records[i].key) == p.epoch) {
      return detail::record_status(records[i], p.names[i]);
    }
  }
  return Status::ok();
}

}  // namespace df11::cuda
