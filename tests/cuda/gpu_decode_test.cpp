// GPU tests of the CUDA decoder: bit-exact against the original weights and the CPU decoder,
// batched launches at any alignment, corrupt and hostile inputs (status reported, nothing
// written outside the outputs). Skipped where no CUDA device is usable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cuda_device_arena.h"
#include "cuda_test_cases.h"
#include "df11/cuda_decoder.h"
#include "df11/decoder.h"
#include "df11/group.h"

namespace df11 {
namespace {

using cuda_test::Case;
using cuda_test::DeviceArena;
using cuda_test::PlacedGroup;

class CudaDecode : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device: " << why;
  }
};

// DF11_CUDA_TEST_SMALL=1 leaves out the multi-megabyte cases (for compute-sanitizer runs).
const std::vector<Case>& cases() {
  static const std::vector<Case> all =
      cuda_test::all_cases(/*large=*/std::getenv("DF11_CUDA_TEST_SMALL") == nullptr);
  return all;
}

uint64_t all_cases_footprint() {
  uint64_t bytes = 0;
  for (const Case& c : cases()) bytes += cuda_test::placed_footprint(c.group.view());
  return bytes;
}

// Every case into `arena`, case i at misalign_base * (1 + i % 7) bytes past an aligned address.
void place_all_cases(DeviceArena& arena, uint32_t misalign_base, std::vector<PlacedGroup>& placed,
                     std::vector<cuda::DeviceGroup>& groups) {
  for (size_t i = 0; i < cases().size(); ++i) {
    const uint32_t misalign = misalign_base * static_cast<uint32_t>(1 + i % 7);
    placed.push_back(cuda_test::place(arena, cases()[i].group.view(), misalign, cases()[i].name));
    groups.push_back(placed.back().device);
  }
}

TEST_F(CudaDecode, EveryCaseBitExactAgainstOriginalAndCpu) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    std::vector<uint16_t> gpu(c.weights.size(), 0xDEAD), cpu(c.weights.size(), 0xBEEF);
    const Status s = cuda::decode_group_to_host(c.group.view(), gpu, c.name);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_TRUE(decode_group(c.group.view(), cpu, c.name).is_ok());
    ASSERT_TRUE(gpu == c.weights) << "differs from the original weights";
    ASSERT_TRUE(gpu == cpu) << "differs from the CPU decoder";
  }
}

// All cases in one plan (a single launch), on a non-default stream, either all aligned or
// at assorted misaligned addresses (byte-wise loads, element-wise stores), with each kernel
// configuration.
TEST_F(CudaDecode, OneLaunchManyGroupsAnyAlignmentBothConfigurations) {
  for (uint32_t config = 0; config < 4; ++config) {
    const uint32_t misalign_base = config % 2;
    const auto kernel = config < 2 ? cuda::KernelChoice::kFast : cuda::KernelChoice::kCompact;
    SCOPED_TRACE("misalign base " + std::to_string(misalign_base) + ", configuration " +
                 (config < 2 ? "fast" : "compact"));
    DeviceArena arena(all_cases_footprint());
    ASSERT_TRUE(arena.ok());
    std::vector<PlacedGroup> placed;
    std::vector<cuda::DeviceGroup> groups;
    place_all_cases(arena, misalign_base, placed, groups);
    cudaStream_t stream;
    DF11_CUDA_ASSERT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    uint32_t launches = 0;
    const Status s = cuda_test::decode_batch(groups, stream, &launches, kernel);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    EXPECT_EQ(launches, 1u);
    for (size_t i = 0; i < cases().size(); ++i) {
      SCOPED_TRACE(cases()[i].name);
      bool guards = false;
      const auto out = cuda_test::fetch_output(placed[i], &guards);
      EXPECT_TRUE(guards) << "bytes next to the output were written";
      ASSERT_TRUE(out == cases()[i].weights);
    }
    DF11_CUDA_ASSERT(cudaStreamDestroy(stream));
  }
}

// More groups than one launch takes (kernel parameters hold 256): several launches.
TEST_F(CudaDecode, ManySmallGroupsSeveralLaunches) {
  std::vector<Case> small;
  testing::TestRng rng(77);
  for (int i = 0; i < 300; ++i) {
    const uint64_t n = 1 + rng.below(i % 10 == 0 ? 40000 : 3000);
    std::string name = "g";  // (not "g" + to_string(i): GCC 12 -Wrestrict false positive)
    name += std::to_string(i);
    small.push_back(cuda_test::encoded(name, {testing::gaussian_bf16(n, 0.02, 100 + i)}));
  }
  uint64_t bytes = 0;
  for (const Case& c : small) bytes += cuda_test::placed_footprint(c.group.view());
  DeviceArena arena(bytes);
  ASSERT_TRUE(arena.ok());
  std::vector<PlacedGroup> placed;
  std::vector<cuda::DeviceGroup> groups;
  for (const Case& c : small) {
    placed.push_back(cuda_test::place(arena, c.group.view(), 0, c.name));
    groups.push_back(placed.back().device);
  }
  uint32_t launches = 0;
  const Status s = cuda_test::decode_batch(groups, nullptr, &launches);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(launches, 2u);
  for (size_t i = 0; i < small.size(); ++i) {
    bool guards = false;
    ASSERT_TRUE(cuda_test::fetch_output(placed[i], &guards) == small[i].weights) << i;
    EXPECT_TRUE(guards) << i;
  }
}

// Corrupt streams: the GPU agrees with the reference decoder on whether each decodes (and on
// the output when it does), and never writes outside the group's output.
TEST_F(CudaDecode, CorruptStreamsAgreeWithReference) {
  int trials = 0;
  for (const Case& c : cases()) {
    if (c.weights.size() > 300000) continue;
    for (const auto& corruption : cuda_test::stream_corruptions()) {
      for (uint64_t seed = 1; seed <= 3; ++seed) {
        SCOPED_TRACE(c.name + " / " + corruption.name + " / seed " + std::to_string(seed));
        GroupBuffers g = c.group;
        testing::TestRng rng(seed * 104729 + c.weights.size());
        corruption.apply(g, rng);
        if (!validate_group(g.view(), "g").is_ok()) continue;
        ++trials;
        std::vector<uint16_t> want(c.weights.size());
        const Status ref = decode_group_reference(g.view(), want, "g");
        DeviceArena arena(cuda_test::placed_footprint(g.view()));
        ASSERT_TRUE(arena.ok());
        const PlacedGroup p =
            cuda_test::place(arena, g.view(), static_cast<uint32_t>(seed % 2), "g");
        // Seed 3: two thread blocks, so that the tail pool hands out the last blocks.
        const Status gpu = cuda_test::decode_batch(
            std::span(&p.device, 1), nullptr, nullptr,
            seed == 2 ? cuda::KernelChoice::kCompact : cuda::KernelChoice::kAuto,
            seed == 3 ? 2u : 0u);
        ASSERT_EQ(ref.is_ok(), gpu.is_ok())
            << "reference: " << ref.to_string() << "\ngpu: " << gpu.to_string();
        bool guards = false;
        const auto out = cuda_test::fetch_output(p, &guards);
        EXPECT_TRUE(guards);
        if (ref.is_ok()) {
          ASSERT_TRUE(out == want);
        }
      }
    }
  }
  EXPECT_GT(trials, 100);
}

// The device copy need not match the validated host copy (a caller's bug, or memory gone
// bad): the kernel must still stay inside every array and its output.
TEST_F(CudaDecode, HostileDeviceDataStaysInBounds) {
  const Case& c = *std::find_if(cases().begin(), cases().end(),
                                [](const Case& k) { return k.name == "gaussian n=100001"; });
  ASSERT_GT(c.group.view().n_blocks(), 2u);
  testing::TestRng rng(5);
  for (int trial = 0; trial < 12; ++trial) {
    SCOPED_TRACE(trial);
    GroupBuffers bad = c.group;
    for (auto& b : bad.encoded_exponent) b = static_cast<uint8_t>(rng.next());
    for (auto& b : bad.gaps) b = static_cast<uint8_t>(rng.next());
    if (trial % 3 != 0) {
      for (auto& b : bad.output_positions) b = static_cast<uint8_t>(rng.next());
    }
    if (trial % 4 == 1) {
      for (auto& b : bad.luts) b = static_cast<uint8_t>(rng.next());
    }
    DeviceArena arena(cuda_test::placed_footprint(c.group.view()));
    ASSERT_TRUE(arena.ok());
    PlacedGroup p = cuda_test::place(arena, bad.view(), static_cast<uint32_t>(trial % 3), "g");
    p.device.host = c.group.view();  // validated: the good host copy
    const Status s = cuda_test::decode_batch(
        std::span(&p.device, 1), nullptr, nullptr,
        trial % 2 ? cuda::KernelChoice::kCompact : cuda::KernelChoice::kFast);
    EXPECT_FALSE(s.is_ok());
    EXPECT_NE(s.code(), ErrorCode::kCuda) << s.to_string();
    bool guards = false;
    cuda_test::fetch_output(p, &guards);
    EXPECT_TRUE(guards) << "bytes next to the output were written";
  }
}

// The kernel sizes its exponent slots by the shortest code of the validated host tables
// (2 bits here). Device tables that give a used symbol a 1-bit code instead must not decode
// up to 64 codes into a 36-byte slot: the table build marks the entry unusable, so every
// window reaching it reports kCorruptData (without the mark the windows decode wrong codes
// and the first report is a gap boundary), and no byte outside the output is written.
TEST_F(CudaDecode, DeviceCodeShorterThanThePlansShortestIsUnusable) {
  Case c = cuda_test::encoded("g", {testing::gaussian_bf16(100000, 0.01, 4)});
  const GroupInfo info = validate_group(c.group.view(), "g").value();
  uint32_t shortest = 32, symbol = 0;
  for (uint32_t v = 0; v < 256; ++v) {
    if (info.code_lengths[v] != 0 && info.code_lengths[v] < shortest) {
      shortest = info.code_lengths[v];
      symbol = v;
    }
  }
  ASSERT_EQ(shortest, 2u);
  for (const auto kernel : {cuda::KernelChoice::kFast, cuda::KernelChoice::kCompact}) {
    GroupBuffers bad = c.group;
    bad.luts[(info.n_luts - 1) * kLutRowSize + symbol] = 1;  // spec 3.3: the lengths row
    DeviceArena arena(cuda_test::placed_footprint(c.group.view()));
    ASSERT_TRUE(arena.ok());
    PlacedGroup p = cuda_test::place(arena, bad.view(), 0, "g");
    p.device.host = c.group.view();  // validated: the good host copy
    const Status s = cuda_test::decode_batch(std::span(&p.device, 1), nullptr, nullptr, kernel);
    EXPECT_EQ(s.code(), ErrorCode::kCorruptData) << s.to_string();
    EXPECT_NE(s.message().find("block 0: window "), std::string::npos) << s.message();
    bool guards = false;
    cuda_test::fetch_output(p, &guards);
    EXPECT_TRUE(guards) << "bytes next to the output were written";
  }
}

// One corrupt group among good ones: the status names it, the others decode.
TEST_F(CudaDecode, CorruptGroupInBatchIsNamed) {
  std::vector<Case> three = {cuda_test::encoded("a", {testing::gaussian_bf16(50000, 0.01, 1)}),
                             cuda_test::encoded("b", {testing::gaussian_bf16(60000, 0.01, 2)}),
                             cuda_test::encoded("c", {testing::gaussian_bf16(70000, 0.01, 3)})};
  test::write_gap(three[1].group.gaps, 700, (read_gap(three[1].group.gaps, 700) + 5) % 32);
  uint64_t bytes = 0;
  for (const Case& c : three) bytes += cuda_test::placed_footprint(c.group.view());
  DeviceArena arena(bytes);
  std::vector<PlacedGroup> placed;
  std::vector<cuda::DeviceGroup> groups;
  for (const Case& c : three) {
    placed.push_back(cuda_test::place(arena, c.group.view(), 0, c.name));
    groups.push_back(placed.back().device);
  }
  const Status s = cuda_test::decode_batch(groups, nullptr);
  EXPECT_EQ(s.code(), ErrorCode::kBadGap) << s.to_string();
  // Window 187's codes end where window 188's (changed) gap does not say; other windows of
  // block 1 may report the same problem, so only the block is certain.
  EXPECT_NE(s.message().find("group 'b': block 1: window "), std::string::npos) << s.message();
  bool guards = false;
  EXPECT_TRUE(cuda_test::fetch_output(placed[0], &guards) == three[0].weights);
  EXPECT_TRUE(cuda_test::fetch_output(placed[2], &guards) == three[2].weights);
}

// A record written by an earlier launch of the same plan and workspace does not make a later,
// good launch fail: records carry the launch's epoch.
TEST_F(CudaDecode, EarlierLaunchRecordsAreIgnored) {
  Case c = cuda_test::encoded("g", {testing::gaussian_bf16(100000, 0.01, 9)});
  GroupBuffers bad = c.group;
  test::write_gap(bad.gaps, 3, (read_gap(bad.gaps, 3) + 1) % 32);
  DeviceArena arena(cuda_test::placed_footprint(c.group.view()));
  const PlacedGroup p = cuda_test::place(arena, bad.view(), 0, "g");
  Result<cuda::DecodePlan> plan = cuda::make_decode_plan(std::span(&p.device, 1), "t");
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  cuda_test::DeviceWorkspace ws(plan->workspace_bytes());
  ASSERT_TRUE(cuda::init_workspace(*plan, ws.get(), ws.size(), nullptr).is_ok());
  ASSERT_TRUE(cuda::launch_decode(*plan, ws.get(), ws.size(), nullptr).is_ok());
  EXPECT_EQ(cuda::read_decode_status(*plan, ws.get(), nullptr).code(), ErrorCode::kBadGap);
  DF11_CUDA_ASSERT(cudaMemcpy(const_cast<uint8_t*>(p.device.d_gaps), c.group.gaps.data(),
                              c.group.gaps.size(), cudaMemcpyHostToDevice));
  ASSERT_TRUE(cuda::launch_decode(*plan, ws.get(), ws.size(), nullptr).is_ok());
  const Status s = cuda::read_decode_status(*plan, ws.get(), nullptr);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  bool guards = false;
  EXPECT_TRUE(cuda_test::fetch_output(p, &guards) == c.weights);
}

// Double buffering: launches alternate between two workspaces, and the status of either is
// read after the other's launch (the epoch is the workspace's, not the plan's); a plan of a
// good group sharing the workspace neither hides nor inherits the report. The deferred read
// (copy_decode_status, then copied_group_status) gives the same answers.
TEST_F(CudaDecode, DoubleBufferedAndSharedWorkspacesKeepEveryReport) {
  Case c = cuda_test::encoded("g", {testing::gaussian_bf16(100000, 0.01, 9)});
  GroupBuffers bad = c.group;
  test::write_gap(bad.gaps, 3, (read_gap(bad.gaps, 3) + 1) % 32);
  DeviceArena arena(2 * cuda_test::placed_footprint(c.group.view()));
  const PlacedGroup pb = cuda_test::place(arena, bad.view(), 0, "bad");
  const PlacedGroup pg = cuda_test::place(arena, c.group.view(), 0, "good");
  Result<cuda::DecodePlan> plan_bad = cuda::make_decode_plan(std::span(&pb.device, 1), "t");
  Result<cuda::DecodePlan> plan_good = cuda::make_decode_plan(std::span(&pg.device, 1), "t");
  ASSERT_TRUE(plan_bad.is_ok() && plan_good.is_ok());
  const size_t bytes = plan_bad->workspace_bytes();
  ASSERT_EQ(plan_good->workspace_bytes(), bytes);
  cuda_test::DeviceWorkspace ws0(bytes), ws1(bytes);
  ASSERT_TRUE(cuda::init_workspace(*plan_bad, ws0.get(), bytes, nullptr).is_ok());
  ASSERT_TRUE(cuda::init_workspace(*plan_bad, ws1.get(), bytes, nullptr).is_ok());
  // The deferred read into pageable memory (a copy) and into page-locked memory (written by a
  // kernel): rounds 0-2 and 3-5.
  std::vector<uint8_t> pageable(plan_bad->status_copy_bytes());
  void* pinned = nullptr;
  DF11_CUDA_ASSERT(cudaMallocHost(&pinned, pageable.size()));
  std::unique_ptr<void, cudaError_t (*)(void*)> pinned_owner(pinned, cudaFreeHost);
  for (int round = 0; round < 6; ++round) {
    std::span<uint8_t> h = round < 3
                               ? std::span<uint8_t>(pageable)
                               : std::span<uint8_t>(static_cast<uint8_t*>(pinned), pageable.size());
    ASSERT_TRUE(cuda::launch_decode(*plan_bad, ws0.get(), bytes, nullptr).is_ok());
    ASSERT_TRUE(
        cuda::copy_decode_status(*plan_bad, ws0.get(), h.data(), h.size(), nullptr).is_ok());
    ASSERT_TRUE(cuda::launch_decode(*plan_bad, ws1.get(), bytes, nullptr).is_ok());
    const Status s0 = cuda::read_decode_status(*plan_bad, ws0.get(), nullptr);
    EXPECT_EQ(s0.code(), ErrorCode::kBadGap) << round << ": " << s0.to_string();
    EXPECT_EQ(cuda::copied_group_status(*plan_bad, h.data(), h.size(), 0).code(),
              ErrorCode::kBadGap);
    EXPECT_EQ(cuda::read_decode_status(*plan_bad, ws1.get(), nullptr).code(), ErrorCode::kBadGap);
    // The good plan through the bad plan's workspace: its own (clean) launch only.
    ASSERT_TRUE(cuda::launch_decode(*plan_good, ws1.get(), bytes, nullptr).is_ok());
    const Status sg = cuda::read_decode_status(*plan_good, ws1.get(), nullptr);
    EXPECT_TRUE(sg.is_ok()) << round << ": " << sg.to_string();
    ASSERT_TRUE(
        cuda::copy_decode_status(*plan_good, ws1.get(), h.data(), h.size(), nullptr).is_ok());
    DF11_CUDA_ASSERT(cudaDeviceSynchronize());
    EXPECT_TRUE(cuda::copied_group_status(*plan_good, h.data(), h.size(), 0).is_ok());
    EXPECT_EQ(cuda::copied_group_status(*plan_bad, h.data(), h.size(), 0).code(),
              ErrorCode::kInvalidArgument);  // another plan's copy
  }
  bool guards = false;
  EXPECT_TRUE(cuda_test::fetch_output(pg, &guards) == c.weights);
  EXPECT_TRUE(guards);
}

// The tail pool (decode_pipeline.cuh): with few thread blocks even small plans share their
// last blocks through the workspace's counter. Every block is decoded exactly once, whatever
// thread block takes it, in one launch over all cases and in a second launch into the same
// workspace (no memset between); each launch leaves the counter at 0. A corrupt gap early and one
// in the pooled tail: the report names the earlier block, as a sequential decoder would.
TEST_F(CudaDecode, TailPoolDecodesEveryBlockOnce) {
  DeviceArena arena(all_cases_footprint());
  ASSERT_TRUE(arena.ok());
  std::vector<PlacedGroup> placed;
  std::vector<cuda::DeviceGroup> groups;
  place_all_cases(arena, 0, placed, groups);
  for (const uint32_t max_ctas : {1u, 2u, 3u, 7u, 0u}) {
    for (const auto kernel : {cuda::KernelChoice::kFast, cuda::KernelChoice::kCompact}) {
      SCOPED_TRACE("max_thread_blocks " + std::to_string(max_ctas) +
                   (kernel == cuda::KernelChoice::kFast ? ", fast" : ", compact"));
      Result<cuda::DecodePlan> plan = cuda::make_decode_plan(groups, "t", {kernel, max_ctas});
      ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
      if (max_ctas != 0) {
        EXPECT_EQ(plan->grid_size(), max_ctas);
      }
      cuda_test::DeviceWorkspace ws(plan->workspace_bytes());
      ASSERT_TRUE(cuda::init_workspace(*plan, ws.get(), ws.size(), nullptr).is_ok());
      for (int launch = 0; launch < 2; ++launch) {
        for (const PlacedGroup& p : placed) {
          DF11_CUDA_ASSERT(cudaMemset(p.device.d_out, 0x5A, 2 * p.n));
        }
        ASSERT_TRUE(cuda::launch_decode(*plan, ws.get(), ws.size(), nullptr).is_ok());
        const Status s = cuda::read_decode_status(*plan, ws.get(), nullptr);
        ASSERT_TRUE(s.is_ok()) << s.to_string();
        for (size_t i = 0; i < cases().size(); ++i) {
          bool guards = false;
          ASSERT_TRUE(cuda_test::fetch_output(placed[i], &guards) == cases()[i].weights)
              << cases()[i].name << ", launch " << launch;
          EXPECT_TRUE(guards) << cases()[i].name;
        }
        // The counter after the records (epoch << 32 | blocks taken): the launch's last take
        // set it back to 0 (pool_take, decode_core.h).
        unsigned long long counter = 1;
        DF11_CUDA_ASSERT(cudaMemcpy(&counter,
                                    static_cast<uint8_t*>(ws.get()) + 16 * plan->n_groups(), 8,
                                    cudaMemcpyDeviceToHost));
        EXPECT_EQ(counter, 0u) << "the launch left its pool counter raised";
      }
    }
  }
  Case c = cuda_test::encoded("g", {testing::gaussian_bf16(400000, 0.01, 21)});
  const uint32_t n_blocks = static_cast<uint32_t>(c.group.view().n_blocks());
  ASSERT_GT(n_blocks, 20u);
  GroupBuffers bad = c.group;
  const uint32_t late = (n_blocks - 2) * 512 + 100, early = 4 * 512 + 100;  // windows
  test::write_gap(bad.gaps, late, (read_gap(bad.gaps, late) + 3) % 32);
  test::write_gap(bad.gaps, early, (read_gap(bad.gaps, early) + 3) % 32);
  DeviceArena bad_arena(cuda_test::placed_footprint(bad.view()));
  const PlacedGroup pb = cuda_test::place(bad_arena, bad.view(), 0, "g");
  for (const uint32_t max_ctas : {1u, 2u, 3u, 0u}) {
    const Status s = cuda_test::decode_batch(std::span(&pb.device, 1), nullptr, nullptr,
                                             cuda::KernelChoice::kAuto, max_ctas);
    EXPECT_EQ(s.code(), ErrorCode::kBadGap) << s.to_string();
    EXPECT_NE(s.message().find("block 4: window "), std::string::npos) << s.message();
  }
}

// A plan made later for smaller blocks (less shared memory) must not break the launches of
// an earlier plan that needs more.
TEST_F(CudaDecode, PlansOfDifferentBlockSizesCoexist) {
  const Case* big = nullptr;  // 1-bit codes: 32768 weights per block
  const Case* small = nullptr;
  for (const Case& c : cases()) {
    if (c.name == "hand: 1-bit code n=65537") big = &c;
    if (c.name == "gaussian n=100001") small = &c;
  }
  ASSERT_TRUE(big != nullptr && small != nullptr);
  DeviceArena arena(cuda_test::placed_footprint(big->group.view()) +
                    cuda_test::placed_footprint(small->group.view()));
  const PlacedGroup pb = cuda_test::place(arena, big->group.view(), 0, "big");
  const PlacedGroup ps = cuda_test::place(arena, small->group.view(), 0, "small");
  const cuda::DecodePlanOptions fast{cuda::KernelChoice::kFast};
  Result<cuda::DecodePlan> plan_big = cuda::make_decode_plan(std::span(&pb.device, 1), "big", fast);
  ASSERT_TRUE(plan_big.is_ok()) << plan_big.status().to_string();
  Result<cuda::DecodePlan> plan_small =
      cuda::make_decode_plan(std::span(&ps.device, 1), "small", fast);
  ASSERT_TRUE(plan_small.is_ok()) << plan_small.status().to_string();
  EXPECT_GT(plan_big->shared_bytes(), plan_small->shared_bytes());
  cuda_test::DeviceWorkspace ws(plan_big->workspace_bytes() + plan_small->workspace_bytes());
  auto* ws_small = static_cast<uint8_t*>(ws.get()) + plan_big->workspace_bytes();
  ASSERT_TRUE(
      cuda::init_workspace(*plan_big, ws.get(), plan_big->workspace_bytes(), nullptr).is_ok());
  ASSERT_TRUE(
      cuda::init_workspace(*plan_small, ws_small, plan_small->workspace_bytes(), nullptr).is_ok());
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(
        cuda::launch_decode(*plan_big, ws.get(), plan_big->workspace_bytes(), nullptr).is_ok());
    ASSERT_TRUE(
        cuda::launch_decode(*plan_small, ws_small, plan_small->workspace_bytes(), nullptr).is_ok());
    EXPECT_TRUE(cuda::read_decode_status(*plan_big, ws.get(), nullptr).is_ok());
    EXPECT_TRUE(cuda::read_decode_status(*plan_small, ws_small, nullptr).is_ok());
  }
  bool guards = false;
  EXPECT_TRUE(cuda_test::fetch_output(pb, &guards) == big->weights);
  EXPECT_TRUE(guards);
  EXPECT_TRUE(cuda_test::fetch_output(ps, &guards) == small->weights);
  EXPECT_TRUE(guards);
}

TEST_F(CudaDecode, ApiMisuseIsReported) {
  Case c = cuda_test::encoded("g", {testing::gaussian_bf16(1000, 0.01, 9)});
  DeviceArena arena(cuda_test::placed_footprint(c.group.view()));
  PlacedGroup p = cuda_test::place(arena, c.group.view(), 0, "g");
  Result<cuda::DecodePlan> plan = cuda::make_decode_plan(std::span(&p.device, 1), "t");
  ASSERT_TRUE(plan.is_ok());
  EXPECT_EQ(plan->workspace_bytes(), 24u);  // one status record, one pool counter
  cuda_test::DeviceWorkspace ws(plan->workspace_bytes());
  EXPECT_EQ(cuda::launch_decode(*plan, ws.get(), 8, nullptr).code(), ErrorCode::kInvalidArgument);
  // The size before the pool counters (16 per group) is refused, not overrun.
  EXPECT_EQ(cuda::init_workspace(*plan, ws.get(), 16, nullptr).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(cuda::launch_decode(*plan, ws.get(), 16, nullptr).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(cuda::read_decode_status(*plan, ws.get(), nullptr).code(),
            ErrorCode::kInvalidArgument);  // never launched
  cuda::DeviceGroup null_out = p.device;
  null_out.d_out = nullptr;
  // A plan without an output serves rows decodes only (gpu_rows_test.cpp).
  Result<cuda::DecodePlan> rows_only = cuda::make_decode_plan(std::span(&null_out, 1), "t");
  ASSERT_TRUE(rows_only.is_ok()) << rows_only.status().to_string();
  EXPECT_EQ(cuda::launch_decode(*rows_only, ws.get(), ws.size(), nullptr).code(),
            ErrorCode::kInvalidArgument);
  cuda::DeviceGroup invalid = p.device;
  GroupBuffers broken = c.group;
  broken.output_positions.pop_back();
  invalid.host = broken.view();
  EXPECT_EQ(cuda::make_decode_plan(std::span(&invalid, 1), "t").status().code(),
            ErrorCode::kBadGroup);
  std::vector<uint16_t> out(999);
  EXPECT_EQ(cuda::decode_group_to_host(c.group.view(), out, "g").code(),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace df11
