// The C API's fused GEMV argument checks (capi/src/gemv_args.h) on a real DF11 folder,
// without a GPU: the matrices a plan's groups hold (names, shapes, aliases) and the messages
// of every misuse df11_cuda_gemv_workspace_bytes / df11_cuda_decode_gemv reject on the host.
// (capi_test.cpp checks the same through libdf11.so where a plan can be made.)
#include "gemv_args.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "cli_process.h"
#include "cli_test_model.h"
#include "df11/df11_folder.h"
#include "df11/model_folder.h"

namespace df11::clitest {
namespace {

class GemvArgs : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    TinyLlama llama;
    llama.layers = 2;
    llama.sharded = false;  // one group per layer
    llama.tied_embeddings = GetParam();
    write_tiny_llama(tmp_ / "model", llama);
    const ProcessResult r = run_df11(
        {"compress", (tmp_ / "model").string(), "-o", (tmp_ / "df11").string(), "-q"}, tmp_.path());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto folder = app::open_model_folder((tmp_ / "df11").string());
    ASSERT_TRUE(folder.is_ok()) << folder.status().to_string();
    auto f = app::open_df11_folder(std::move(*folder));
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    folder_.emplace(std::move(*f));
  }

  // The group named `name`'s index.
  size_t group(const std::string& name) const {
    for (size_t g = 0; g < folder_->groups.size(); ++g) {
      if (folder_->groups[g].tensors.name == name) return g;
    }
    ADD_FAILURE() << "no group " << name;
    return 0;
  }

  TempDir tmp_;
  std::optional<app::Df11Folder> folder_;
};

// Matrices with device-looking pointers (never dereferenced on the host).
std::vector<df11_gemv_matrix> matrices_for(const std::vector<capi::GemvMember>& members) {
  static uint16_t dummy[8];
  std::vector<df11_gemv_matrix> m;
  for (const capi::GemvMember& mm : members) {
    m.push_back({static_cast<uint32_t>(mm.rows), static_cast<uint32_t>(mm.cols), dummy, dummy + 4});
  }
  return m;
}

TEST_P(GemvArgs, MembersAreTheCodedTensorsInPlanOrder) {
  const size_t g0 = group("model.layers.0"), g1 = group("model.layers.1");
  const size_t groups[2] = {g1, g0};  // plan order, not file order
  const std::vector<capi::GemvMember> members = capi::gemv_members(*folder_, groups, 2);
  ASSERT_EQ(members.size(), 14u);  // q, k, v, o, gate, up, down per layer
  EXPECT_EQ(members[0].name.rfind("model.layers.1.", 0), 0u) << members[0].name;
  EXPECT_EQ(members[7].name.rfind("model.layers.0.", 0), 0u) << members[7].name;
  uint64_t weights = 0;
  for (size_t i = 0; i < 7; ++i) {
    const capi::GemvMember& m = members[7 + i];
    weights += m.rows * m.cols;
    if (m.name == "model.layers.0.mlp.down_proj.weight") {
      EXPECT_EQ(m.rows, 64u);  // [hidden, intermediate]: rows are the output features
      EXPECT_EQ(m.cols, 128u);
    }
    if (m.name == "model.layers.0.mlp.up_proj.weight") {
      EXPECT_EQ(m.rows, 128u);
      EXPECT_EQ(m.cols, 64u);
    }
  }
  EXPECT_EQ(weights, folder_->groups[g0].view.n_elements());  // they tile the group
  EXPECT_TRUE(
      capi::check_gemv_call(members, matrices_for(members).data(), members.size(), 1, "f").is_ok());
}

// Every coded member is a matrix, a tied copy (spec 5.3 alias) included: the kernel decodes
// it with the rest of its group.
TEST_P(GemvArgs, EveryGroupTilesItsWeightsAliasesIncluded) {
  std::vector<size_t> all(folder_->groups.size());
  std::iota(all.begin(), all.end(), size_t{0});
  const std::vector<capi::GemvMember> members =
      capi::gemv_members(*folder_, all.data(), all.size());
  uint64_t weights = 0, group_weights = 0;
  for (const capi::GemvMember& m : members) weights += m.rows * m.cols;
  for (const app::CodedGroup& g : folder_->groups) group_weights += g.view.n_elements();
  EXPECT_EQ(weights, group_weights);
  for (const app::AliasMember& a : folder_->aliases) {
    bool found = false;
    for (const capi::GemvMember& m : members) found = found || m.name == a.name;
    EXPECT_TRUE(found) << a.name;
  }
}

TEST_P(GemvArgs, MisuseIsNamed) {
  const size_t g = group("model.layers.0");
  const std::vector<capi::GemvMember> members = capi::gemv_members(*folder_, &g, 1);
  std::vector<df11_gemv_matrix> m = matrices_for(members);
  const auto message = [&](uint32_t batch, size_t n, const df11_gemv_matrix* p) {
    const Status s = capi::check_gemv_call(members, p, n, batch, "df11_cuda_decode_gemv");
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
    return s.message();
  };
  EXPECT_EQ(message(0, m.size(), m.data()), "df11_cuda_decode_gemv: batch 0 is not within 1..16");
  EXPECT_EQ(message(17, m.size(), m.data()), "df11_cuda_decode_gemv: batch 17 is not within 1..16");
  EXPECT_EQ(message(1, m.size(), nullptr), "df11_cuda_decode_gemv: matrices is NULL");
  EXPECT_EQ(message(16, m.size() - 1, m.data()),
            "df11_cuda_decode_gemv: 6 matrices, the plan's groups have 7 members "
            "(df11_cuda_gemv_matrix_count)");
  EXPECT_NE(message(1, 0, nullptr).find("0 matrices"), std::string::npos);
  size_t down = members.size();
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].name == "model.layers.0.mlp.down_proj.weight") down = i;
  }
  ASSERT_LT(down, members.size());
  std::swap(m[down].rows, m[down].cols);  // transposed: same weight count, wrong shape
  EXPECT_EQ(message(3, m.size(), m.data()),
            "df11_cuda_decode_gemv: matrices[" + std::to_string(down) +
                "] ('model.layers.0.mlp.down_proj.weight') is 128 x 64, the member is 64 x 128");
  std::swap(m[down].rows, m[down].cols);
  m[2].d_y = nullptr;
  EXPECT_NE(
      message(3, m.size(), m.data()).find("matrices[2] ('" + members[2].name + "'): d_y is NULL"),
      std::string::npos);
  m[2].d_y = m[1].d_y;
  m[0].d_x = nullptr;
  EXPECT_NE(message(3, m.size(), m.data()).find("matrices[0]"), std::string::npos);
  m[0].d_x = m[1].d_x;
  for (uint32_t batch = 1; batch <= 16; ++batch) {
    EXPECT_TRUE(capi::check_gemv_call(members, m.data(), m.size(), batch, "f").is_ok()) << batch;
  }
}

INSTANTIATE_TEST_SUITE_P(Untied, GemvArgs, ::testing::Values(false));
INSTANTIATE_TEST_SUITE_P(Tied, GemvArgs, ::testing::Values(true));

}  // namespace
}  // namespace df11::clitest
