// decode_group_to_host(): the allocate-copy-decode-copy convenience over the batched API.
#include <cuda_runtime_api.h>

#include <new>
#include <string>
#include <vector>

#include "cuda_error.h"
#include "decode_plan.h"
#include "device_buffer.h"
#include "df11/cuda_decoder.h"

namespace df11::cuda {

Status decode_group_to_host(const GroupView& group, std::span<uint16_t> out,
                            const std::string& what) {
  using detail::DeviceBuffer;
  try {
    DF11_RETURN_IF_ERROR(detail::validate_with_output(group, out.size(), what).status());
    detail::DeviceGroupCopy in;
    DF11_RETURN_IF_ERROR(in.upload(group, what));
    DeviceBuffer d_out;
    DF11_RETURN_IF_ERROR(d_out.allocate(out.size_bytes(), what + ": output"));

    const DeviceGroup dg = in.describe(group, d_out.get<uint16_t>(), "");
    DF11_ASSIGN_OR_RETURN(DecodePlan plan, make_decode_plan(std::span(&dg, 1), what));

    DeviceBuffer workspace;
    DF11_RETURN_IF_ERROR(workspace.allocate(plan.workspace_bytes(), what + ": workspace"));
    DF11_RETURN_IF_ERROR(init_workspace(plan, workspace.get(), plan.workspace_bytes(), nullptr));
    DF11_RETURN_IF_ERROR(launch_decode(plan, workspace.get(), plan.workspace_bytes(), nullptr));
    DF11_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(out.data(), d_out.get(), out.size_bytes(), cudaMemcpyDeviceToHost),
        what + ": cudaMemcpy of the decoded weights");
    return read_decode_status(plan, workspace.get(), nullptr);
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit, what + ": out of memory while decoding");
  }
}

}  // namespace df11::cuda
