// df11_cuda_check_stored: the stored tensors' checksums (spec 5.2) computed on the GPU where
// an engine has uploaded them, compared as df11_group_check_stored compares them.
#include <array>
#include <string>
#include <vector>

#include "cuda_api_common.h"
#include "df11/cuda_hash.h"  // host-only header, present in every build
#include "df11/group_schema.h"
#include "df11/hash.h"

using df11::ErrorCode;
using df11::Status;
using namespace df11::capi::cuda_api;

namespace {

constexpr size_t kDeviceParts = 5;  // df11_cuda_group's, kGroupTensors order
static_assert(df11::kGroupTensorCount == kDeviceParts + 1);

}  // namespace

extern "C" {

size_t df11_cuda_check_stored_scratch_bytes(size_t n_groups) {
  return df11::cuda::xxh3_scratch_bytes(n_groups * kDeviceParts);
}

df11_status df11_cuda_check_stored(df11_model* model, const size_t* groups,
                                   const df11_cuda_group* dev, size_t n_groups, void* d_scratch,
                                   size_t scratch_bytes, void* stream) {
  const char* what = "df11_cuda_check_stored";
  return on_exec(model, true, [&](auto) -> Status {
    if (n_groups != 0 && (groups == nullptr || dev == nullptr)) {
      return null_arg(what, "groups or dev");
    }
    std::vector<std::vector<std::span<const uint8_t>>> stored(n_groups);
    std::vector<df11::cuda::DeviceBytes> inputs;
    for (size_t i = 0; i < n_groups; ++i) {
      if (groups[i] >= model->groups.size()) {
        return Status(ErrorCode::kInvalidArgument,
                      std::string(what) + ": groups[" + std::to_string(i) +
                          "] = " + std::to_string(groups[i]) + ", the model has " +
                          std::to_string(model->groups.size()));
      }
      stored[i] = df11::capi::recorded_stored_tensors(*model, groups[i]);
      if (stored[i].empty()) continue;
      const std::array<const void*, kDeviceParts> parts = {
          dev[i].d_luts, dev[i].d_encoded_exponent, dev[i].d_sign_mantissa,
          dev[i].d_output_positions, dev[i].d_gaps};
      for (size_t k = 0; k < kDeviceParts; ++k) {
        inputs.push_back({parts[k], stored[i][k].size()});
      }
    }
    std::vector<uint64_t> digests(inputs.size());
    DF11_RETURN_IF_ERROR(
        df11::cuda::xxh3_64_device(inputs, d_scratch, scratch_bytes, as_stream(stream), digests));
    size_t at = 0;
    for (size_t i = 0; i < n_groups; ++i) {
      if (stored[i].empty()) continue;
      std::vector<uint64_t> mine(digests.begin() + at, digests.begin() + at + kDeviceParts);
      at += kDeviceParts;
      for (size_t k = kDeviceParts; k < stored[i].size(); ++k) {
        mine.push_back(df11::xxh3_64(stored[i][k]));  // the split positions: host only
      }
      DF11_RETURN_IF_ERROR(df11::capi::compare_stored_digests(*model, groups[i], mine));
    }
    return Status::ok();
  });
}

}  // extern "C"
