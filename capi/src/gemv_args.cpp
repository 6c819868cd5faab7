// Matrices of a plan and the checks of a fused GEMV call (gemv_args.h).
#include "gemv_args.h"

#include <string>

#include "model_handle.h"

namespace df11::capi {
namespace {

std::string str(uint64_t v) { return std::to_string(v); }

// The C API's limit, df11::cuda::kGemvMaxBatch (cuda_gemv.h, not visible in CUDA-less builds).
constexpr uint32_t kMaxBatch = 16;

// A member as a matrix: rows = the first dimension, cols = the product of the others.
template <typename Shape>
GemvMember member_of(const std::string& name, const Shape& shape) {
  GemvMember m;
  m.name = name;
  m.rows = shape.empty() ? 1 : shape[0];
  m.cols = 1;
  for (size_t d = 1; d < shape.size(); ++d) m.cols *= shape[d];
  return m;
}

}  // namespace

std::vector<GemvMember> gemv_members(const app::Df11Folder& f, const size_t* groups,
                                     size_t n_groups) {
  std::vector<GemvMember> out;
  for (size_t i = 0; i < n_groups; ++i) {
    const app::CodedGroup& cg = f.groups[groups[i]];
    for (const MemberMeta& mm : f.metadata[cg.shard].groups[cg.meta_index].members) {
      out.push_back(member_of(mm.name, mm.shape));
    }
  }
  return out;
}

std::vector<GemvMember> model_members(const df11_model& m, const size_t* groups, size_t n_groups) {
  const app::Df11Folder& f = *m.folder;
  if (!f.metadata.empty()) return gemv_members(f, groups, n_groups);
  std::vector<GemvMember> out;
  for (size_t i = 0; i < n_groups; ++i) {
    for (size_t t : m.groups[groups[i]].members) {
      out.push_back(member_of(m.tensors[t].name, m.tensors[t].shape));
    }
  }
  return out;
}

Status check_gemv_batch(uint32_t batch, const char* what) {
  if (batch < 1 || batch > kMaxBatch) {
    return Status(ErrorCode::kInvalidArgument, std::string(what) + ": batch " + str(batch) +
                                                   " is not within 1.." + str(kMaxBatch));
  }
  return Status::ok();
}

Status check_gemv_call(std::span<const GemvMember> members, const df11_gemv_matrix* matrices,
                       size_t n_matrices, uint32_t batch, const char* what) {
  const std::string w = what;
  DF11_RETURN_IF_ERROR(check_gemv_batch(batch, what));
  if (n_matrices != 0 && matrices == nullptr) {
    return Status(ErrorCode::kInvalidArgument, w + ": matrices is NULL");
  }
  if (n_matrices != members.size()) {
    return Status(ErrorCode::kInvalidArgument,
                  w + ": " + str(n_matrices) + " matrices, the plan's groups have " +
                      str(members.size()) + " members (df11_cuda_gemv_matrix_count)");
  }
  for (size_t i = 0; i < n_matrices; ++i) {
    const df11_gemv_matrix& m = matrices[i];
    const GemvMember& want = members[i];
    const std::string mw = w + ": matrices[" + str(i) + "] ('" + want.name + "')";
    if (m.rows != want.rows || m.cols != want.cols) {
      return Status(ErrorCode::kInvalidArgument, mw + " is " + str(m.rows) + " x " + str(m.cols) +
                                                     ", the member is " + str(want.rows) + " x " +
                                                     str(want.cols));
    }
    if (m.d_x == nullptr || m.d_y == nullptr) {
      return Status(ErrorCode::kInvalidArgument,
                    mw + ": " + (m.d_x == nullptr ? "d_x" : "d_y") + " is NULL");
    }
  }
  return Status::ok();
}

}  // namespace df11::capi
