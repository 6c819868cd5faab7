// The CUDA plan's status protocol on the host: launch epochs per workspace
// (decoder/cuda/host/workspace_ledger.h), records raised as the kernel raises them (its host
// emulation) and read back as read_decode_status() reads them. An engine that double-buffers
// workspaces, or lets several plans share one, must never have a corruption report dropped
// nor see another launch's report; runs without a GPU.
#include "workspace_ledger.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "decoder_test_groups.h"
#include "df11/encoder.h"
#include "emulated_launch.h"
#include "encoder_test_data.h"
#include "status_record.h"

namespace df11 {
namespace {

using cuda::detail::EpochSource;
using cuda::detail::GroupStatusRecord;
using cuda::detail::WorkspaceLedger;

GroupBuffers good_group(uint64_t seed) {
  const std::vector<uint16_t> w = testing::gaussian_bf16(20000, 0.01, seed);
  const std::span<const uint16_t> member(w);
  Result<GroupBuffers> g = encode_group(std::span(&member, 1));
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  return g.is_ok() ? std::move(*g) : GroupBuffers{};
}

GroupBuffers corrupt_group(uint64_t seed) {
  GroupBuffers g = good_group(seed);
  test::write_gap(g.gaps, 3, (read_gap(g.gaps, 3) + 1) % 32);  // block 0, window 3
  return g;
}

// A plan of host groups, launched as launch_decode() launches: epoch and zeroing from the
// ledger, then every group's records raised with that epoch.
struct EmulatedPlan {
  std::vector<GroupBuffers> groups;
  std::vector<std::string> names;
  WorkspaceLedger ledger;

  explicit EmulatedPlan(std::vector<GroupBuffers> g, EpochSource& source)
      : groups(std::move(g)), ledger(source) {
    for (size_t i = 0; i < groups.size(); ++i) {
      std::string name = "g";  // (not "g" + ...: GCC 12's -Wrestrict false positive)
      name += std::to_string(i);
      names.push_back(name);
    }
  }

  void launch(std::vector<GroupStatusRecord>& workspace) {
    ASSERT_GE(workspace.size(), groups.size());
    const WorkspaceLedger::Launch l = ledger.begin_launch(workspace.data());
    if (l.zero_first) std::fill(workspace.begin(), workspace.end(), GroupStatusRecord{});
    for (size_t i = 0; i < groups.size(); ++i) {
      std::vector<uint16_t> out(groups[i].sign_mantissa.size());
      ASSERT_TRUE(
          cuda::detail::emulate_group_launch(groups[i].view(), out, names[i], l.epoch, workspace[i])
              .is_ok());
    }
  }

  Status status(const std::vector<GroupStatusRecord>& workspace) const {
    const std::optional<uint32_t> epoch = ledger.latest(workspace.data());
    if (!epoch) return Status(ErrorCode::kInvalidArgument, "never launched");
    return cuda::detail::workspace_status(workspace, *epoch, names);
  }
};

std::vector<GroupStatusRecord> fresh_workspace(size_t n) {
  // Garbage, as fresh device memory may hold: the first launch must clear it.
  std::vector<GroupStatusRecord> ws(n);
  for (GroupStatusRecord& r : ws) r = {0xFFFFFFFF00000000ull | 7, 1, 0};
  return ws;
}

// The bug this protects against: the plan's launch counter was the only epoch, so the status
// of a workspace other than the one launched last was read for the wrong epoch.
TEST(WorkspaceLedger, DoubleBufferedWorkspacesKeepEveryReport) {
  EpochSource source;
  EmulatedPlan plan({good_group(1), corrupt_group(2)}, source);
  auto ws0 = fresh_workspace(2), ws1 = fresh_workspace(2);
  plan.launch(ws0);  // forward pass n, corrupt group 1
  plan.launch(ws1);  // forward pass n + 1 before n's status is read
  const Status s0 = plan.status(ws0);
  EXPECT_EQ(s0.code(), ErrorCode::kBadGap) << s0.to_string();
  EXPECT_NE(s0.message().find("g1: block 0: window "), std::string::npos) << s0.message();
  EXPECT_EQ(plan.status(ws1).code(), ErrorCode::kBadGap);
  // Repaired data: the next launches into both workspaces are clean, and ws0 stays readable
  // after ws1's launch.
  plan.groups[1] = good_group(2);
  plan.launch(ws0);
  plan.launch(ws1);
  EXPECT_TRUE(plan.status(ws0).is_ok()) << plan.status(ws0).to_string();
  EXPECT_TRUE(plan.status(ws1).is_ok());
}

TEST(WorkspaceLedger, PlansSharingAWorkspaceSeeOnlyTheirOwnLaunch) {
  EpochSource source;
  EmulatedPlan bad({corrupt_group(3)}, source);
  EmulatedPlan good({good_group(4)}, source);
  auto ws = fresh_workspace(1);
  bad.launch(ws);
  EXPECT_EQ(bad.status(ws).code(), ErrorCode::kBadGap);
  good.launch(ws);  // block after block through one workspace
  EXPECT_TRUE(good.status(ws).is_ok()) << good.status(ws).to_string();
  bad.launch(ws);  // its report must beat the older records, whoever wrote them
  EXPECT_EQ(bad.status(ws).code(), ErrorCode::kBadGap);
  good.launch(ws);
  EXPECT_TRUE(good.status(ws).is_ok());
}

TEST(WorkspaceLedger, ReportsSurviveTheEpochWrap) {
  // One launch before the 32-bit epoch wraps.
  EpochSource source(0xFFFFFFFFull - 1);
  EmulatedPlan plan({corrupt_group(5), good_group(6)}, source);
  EmulatedPlan other({good_group(7), corrupt_group(8)}, source);
  auto ws = fresh_workspace(2);
  plan.launch(ws);  // epoch 2^32 - 1: the largest key there is, in group 0's record
  EXPECT_EQ(plan.status(ws).code(), ErrorCode::kBadGap);
  // Generation 1, epoch 1: its report has a smaller key than the stale record, so it is seen
  // only because this first launch of the generation clears the records first.
  plan.launch(ws);
  Status s = plan.status(ws);
  EXPECT_EQ(s.code(), ErrorCode::kBadGap) << s.to_string();
  EXPECT_NE(s.message().find("g0:"), std::string::npos) << s.message();
  other.launch(ws);  // epoch 2
  s = other.status(ws);
  EXPECT_NE(s.message().find("g1:"), std::string::npos) << s.to_string();
  plan.launch(ws);  // epoch 3: other's record in group 1 is older and ignored
  s = plan.status(ws);
  EXPECT_NE(s.message().find("g0:"), std::string::npos) << s.to_string();
}

TEST(WorkspaceLedger, EpochsAndZeroingDecisions) {
  EpochSource source(0xFFFFFFFFull - 1);
  WorkspaceLedger ledger(source);
  int a = 0, b = 0;
  EXPECT_FALSE(ledger.latest(&a).has_value());
  ledger.initialised(&a);
  EXPECT_FALSE(ledger.latest(&a).has_value());  // initialised, never launched
  WorkspaceLedger::Launch l = ledger.begin_launch(&a);
  EXPECT_EQ(l.epoch, 0xFFFFFFFFu);
  EXPECT_FALSE(l.zero_first);  // zeroed by initialised() in this generation
  l = ledger.begin_launch(&b);
  EXPECT_EQ(l.epoch, 1u);     // generation 1; never 0 (a record never written)
  EXPECT_TRUE(l.zero_first);  // unknown workspace
  l = ledger.begin_launch(&a);
  EXPECT_EQ(l.epoch, 2u);
  EXPECT_TRUE(l.zero_first);  // new generation
  l = ledger.begin_launch(&a);
  EXPECT_FALSE(l.zero_first);
  EXPECT_EQ(ledger.latest(&a), 3u);
  EXPECT_EQ(ledger.latest(&b), 1u);
}

TEST(WorkspaceLedger, ForgetsTheLeastRecentWorkspaceBeyondItsBound) {
  EpochSource source;
  WorkspaceLedger ledger(source);
  std::vector<char> spaces(WorkspaceLedger::kMaxWorkspaces + 1);
  for (char& c : spaces) EXPECT_TRUE(ledger.begin_launch(&c).zero_first);
  EXPECT_FALSE(ledger.latest(&spaces[0]).has_value());  // forgotten: status unreadable
  EXPECT_TRUE(ledger.latest(&spaces[1]).has_value());
  EXPECT_TRUE(ledger.begin_launch(&spaces[0]).zero_first);  // cleared again before use
  EXPECT_FALSE(ledger.begin_launch(&spaces[2]).zero_first);
}

}  // namespace
}  // namespace df11
