// The C API's fused GEMV (df11/df11.h, experimental section): the matrices a plan's groups
// hold and the host-side checks of a call's arguments against them. Plain C++ (no CUDA): the
// checks are the same in every build and are tested without a GPU (tests/capi).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "df11/df11.h"  // with DF11_EXPERIMENTAL (set by the target): df11_gemv_matrix
#include "df11/df11_folder.h"
#include "df11/status.h"

namespace df11::capi {

// One coded member of a planned group as the matrix W of y = W x (row-major, as stored).
struct GemvMember {
  std::string name;   // the member's tensor name (an alias's own name, spec 5.3)
  uint64_t rows = 0;  // shape[0] (1 for a scalar)
  uint64_t cols = 0;  // product of the other dimensions
};

// The coded members of groups[0 .. n_groups) of `f`, group after group in that order, each
// group's in concatenation order (aliases included: the kernel decodes them too). The group
// indices must be in range (df11_cuda_plan_create checks them first).
std::vector<GemvMember> gemv_members(const app::Df11Folder& f, const size_t* groups,
                                     size_t n_groups);

// The same for an opened model handle: from the df11 metadata (aliases included), or for a
// folder the dfloat11 tools published (no metadata) from the members the handle lists with
// their config.json shapes.
std::vector<GemvMember> model_members(const df11_model& m, const size_t* groups, size_t n_groups);

// Checks batch (1..16) and `matrices` (not NULL when n > 0; one per member, each of the
// member's shape with non-NULL d_x and d_y) against `members`: kInvalidArgument naming the
// first problem, the matrix index and its tensor. `what` is the C function's name.
Status check_gemv_call(std::span<const GemvMember> members, const df11_gemv_matrix* matrices,
                       size_t n_matrices, uint32_t batch, const char* what);

// The batch check alone (the reference GEMV has no members).
Status check_gemv_batch(uint32_t batch, const char* what);

}  // namespace df11::capi
