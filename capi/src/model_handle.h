// What the C API's handles hold (df11/df11.h), shared by the model and the CUDA plan sources.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "df11/df11.h"
#include "df11/df11_folder.h"
#include "df11/group.h"
#include "df11/status.h"
#include "error_state.h"

namespace df11::capi {
struct CompactPlans;
}  // namespace df11::capi

struct df11_model {
  struct Tensor {
    std::string name;
    std::string dtype;
    std::vector<uint64_t> shape;
    uint64_t byte_size = 0;
    size_t group = SIZE_MAX;  // member of this group, or SIZE_MAX for a raw tensor
    uint64_t group_offset = 0;
    const df11::app::TensorLocation* raw = nullptr;  // raw: where it lies
    const std::string* xxh3 = nullptr;               // recorded checksum of the original
  };
  struct Group {
    std::vector<size_t> members;  // tensor indices, concatenation order
    // A group of one alias member (spec 5.3: a tied lm_head): the tensor it copies and the
    // copy's own name.
    size_t alias_of = SIZE_MAX;
    std::string alias_name;
  };
  // validate_group() once per group, on first decode, whichever thread comes first.
  struct Validated {
    std::once_flag once;
    df11::GroupInfo info;
    df11::Status status;
  };

  df11::capi::ErrorState err;
  std::optional<df11::app::Df11Folder> folder;  // empty if open failed
  std::vector<Tensor> tensors;
  std::vector<Group> groups;  // parallel to folder->groups
  std::unordered_map<std::string, size_t> by_name;
  std::unique_ptr<Validated[]> validated;
  // df11_cuda_compact_measure's plans, by group, until df11_cuda_compact_pack takes them (the
  // handle's one mutable part beside the message: under compact_mutex; the type is
  // cuda_compact_api.cpp's, so that this header needs no CUDA one).
  std::mutex compact_mutex;
  std::shared_ptr<df11::capi::CompactPlans> compact_plans;
};

namespace df11::capi {

// Weight shapes a caller gives (df11_model_open_with_shapes), checked and copied.
using GivenShapes = std::vector<std::pair<std::string, std::vector<uint64_t>>>;

// Checks the caller's df11_shape array (names non-NULL and unique, dims given) and copies it.
Result<GivenShapes> given_shapes(const df11_shape* shapes, size_t n);

// Opens a folder published by the dfloat11 tools into `m` (df11_model_open's other half);
// `given` adds shapes config.json does not give (or overrides its).
Status open_published(df11_model& m, app::ModelFolder folder, const GivenShapes& given);

// Group g's stored tensors (kGroupTensors order) as their shards map them, where df11's
// metadata records their checksums (spec 5.2); empty where it records none (a folder the
// dfloat11 tools published). g must be in range.
std::vector<std::span<const uint8_t>> recorded_stored_tensors(df11_model& m, size_t g);
// digests[k]: XXH3 of recorded_stored_tensors(m, g)[k], against the recorded checksums:
// kCorruptData naming the file, the group and the stored tensor at the first that differs.
Status compare_stored_digests(df11_model& m, size_t g, std::span<const uint64_t> digests);

// The group's validate_group() result, computed once.
Result<const GroupInfo*> validated_group(df11_model& m, size_t g);

}  // namespace df11::capi
