// A CUDA decode captured in a CUDA graph and replayed, as an engine's captured decode step
// is (torch.cuda.graphs): each replay repeats the capture's launch, epoch included, and must
// decode every block and report its status. Skipped where no CUDA device is usable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_device_arena.h"
#include "cuda_test_cases.h"
#include "df11/cuda_decoder.h"
#include "df11/group.h"

namespace df11 {
namespace {

using cuda_test::Case;
using cuda_test::DeviceArena;
using cuda_test::PlacedGroup;

class CudaGraphDecode : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device: " << why;
  }
};

// launch_decode + copy_decode_status captured in a CUDA graph on `stream`, into pinned `h`.
class CapturedDecode {
 public:
  CapturedDecode(cuda::DecodePlan& plan, void* ws, size_t ws_bytes, cudaStream_t stream)
      : plan_(plan), stream_(stream) {
    if (cudaMallocHost(&h_, plan.status_copy_bytes()) != cudaSuccess) return;
    cudaGraph_t graph = nullptr;
    if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return;
    launched_ = cuda::launch_decode(plan, ws, ws_bytes, stream);
    copied_ = cuda::copy_decode_status(plan, ws, h_, plan.status_copy_bytes(), stream);
    if (cudaStreamEndCapture(stream, &graph) != cudaSuccess) return;
    const bool made = cudaGraphInstantiate(&exec_, graph, 0) == cudaSuccess;
    cudaGraphDestroy(graph);
    ok_ = made && launched_.is_ok() && copied_.is_ok();
  }
  CapturedDecode(const CapturedDecode&) = delete;
  CapturedDecode& operator=(const CapturedDecode&) = delete;
  ~CapturedDecode() {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
    if (h_ != nullptr) cudaFreeHost(h_);
  }
  bool ok() const { return ok_; }
  std::string why() const { return launched_.to_string() + "; " + copied_.to_string(); }
  // Poisons the copied records (after the copy's 16-byte header, which the host wrote at
  // capture), replays, waits, and returns group i's copied status.
  Status replay(uint8_t poison, size_t i = 0) {
    std::memset(static_cast<uint8_t*>(h_) + 16, poison, plan_.status_copy_bytes() - 16);
    if (cudaGraphLaunch(exec_, stream_) != cudaSuccess ||
        cudaStreamSynchronize(stream_) != cudaSuccess) {
      return Status(ErrorCode::kCuda, "graph replay failed");
    }
    return group_status(i);
  }
  Status group_status(size_t i) const {
    return cuda::copied_group_status(plan_, h_, plan_.status_copy_bytes(), i);
  }

 private:
  cuda::DecodePlan& plan_;
  cudaStream_t stream_;
  void* h_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  Status launched_, copied_;
  bool ok_ = false;
};

// A decode captured in a CUDA graph (with the deferred status copy) and replayed many times,
// as an engine's captured decode step is: every replay carries the capture's epoch, and each
// must decode every block (the tail pool's counter is back at 0 after each launch) and report
// its status. Outputs are poisoned between replays; a corrupt group in a second plan is
// reported by every replay of its graph, naming the block.
TEST_F(CudaGraphDecode, CapturedDecodeReplaysDecodeEveryBlock) {
  // Groups of several sizes (up to ~1,000 blocks), at odd alignments.
  std::vector<Case> cases;
  for (uint64_t i = 0; i < 6; ++i) {
    static const char* const kNames[] = {"g0", "g1", "g2", "g3", "g4", "g5"};
    cases.push_back(cuda_test::encoded(
        kNames[i], {testing::gaussian_bf16(1000 + 700000 * i * i, 0.01 * double(i + 1), 40 + i)}));
  }
  uint64_t footprint = 0;
  for (const Case& c : cases) footprint += cuda_test::placed_footprint(c.group.view());
  DeviceArena arena(footprint + 4096);
  ASSERT_TRUE(arena.ok());
  std::vector<PlacedGroup> placed;
  std::vector<cuda::DeviceGroup> groups;
  for (size_t i = 0; i < cases.size(); ++i) {
    placed.push_back(
        cuda_test::place(arena, cases[i].group.view(), 4 * uint32_t(i), cases[i].name));
    groups.push_back(placed.back().device);
  }
  cudaStream_t stream = nullptr;
  DF11_CUDA_ASSERT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (const uint32_t max_ctas : {2u, 7u, 0u}) {
    SCOPED_TRACE("max_thread_blocks " + std::to_string(max_ctas));
    Result<cuda::DecodePlan> plan =
        cuda::make_decode_plan(groups, "t", {cuda::KernelChoice::kAuto, max_ctas});
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    cuda_test::DeviceWorkspace ws(plan->workspace_bytes());
    ASSERT_TRUE(cuda::init_workspace(*plan, ws.get(), ws.size(), stream).is_ok());
    // A first decode outside the capture, as an engine's warm-up makes (and zeroes records).
    ASSERT_TRUE(cuda::launch_decode(*plan, ws.get(), ws.size(), stream).is_ok());
    CapturedDecode graph(*plan, ws.get(), ws.size(), stream);
    ASSERT_TRUE(graph.ok()) << graph.why();
    for (int replay = 0; replay < 40; ++replay) {
      for (const PlacedGroup& p : placed) {
        DF11_CUDA_ASSERT(cudaMemsetAsync(p.device.d_out, 0x5A, 2 * p.n, stream));
      }
      ASSERT_TRUE(graph.replay(0xEE).is_ok()) << "replay " << replay;
      for (size_t i = 0; i < placed.size(); ++i) {
        ASSERT_TRUE(graph.group_status(i).is_ok()) << "replay " << replay;
      }
      for (size_t i = 0; i < cases.size(); ++i) {
        bool guards = false;
        ASSERT_TRUE(cuda_test::fetch_output(placed[i], &guards) == cases[i].weights)
            << cases[i].name << ", replay " << replay;
        ASSERT_TRUE(guards) << cases[i].name;
      }
      unsigned long long counter = 1;
      DF11_CUDA_ASSERT(cudaMemcpy(&counter, static_cast<uint8_t*>(ws.get()) + 16 * plan->n_groups(),
                                  8, cudaMemcpyDeviceToHost));
      ASSERT_EQ(counter, 0u) << "replay " << replay;
    }
  }
  // A corrupt stream: every replay reports it (records zeroed before each, so a replay that
  // copied nothing would read as clean).
  Case c = cuda_test::encoded("g", {testing::gaussian_bf16(400000, 0.01, 21)});
  GroupBuffers bad = c.group;
  const uint32_t early = 4 * 512 + 100;  // a window of block 4
  test::write_gap(bad.gaps, early, (read_gap(bad.gaps, early) + 3) % 32);
  DeviceArena bad_arena(cuda_test::placed_footprint(bad.view()));
  const PlacedGroup pb = cuda_test::place(bad_arena, bad.view(), 0, "bad");
  Result<cuda::DecodePlan> plan =
      cuda::make_decode_plan(std::span(&pb.device, 1), "t", {cuda::KernelChoice::kAuto, 3});
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  cuda_test::DeviceWorkspace ws(plan->workspace_bytes());
  ASSERT_TRUE(cuda::init_workspace(*plan, ws.get(), ws.size(), stream).is_ok());
  {
    CapturedDecode graph(*plan, ws.get(), ws.size(), stream);
    ASSERT_TRUE(graph.ok()) << graph.why();
    for (int replay = 0; replay < 10; ++replay) {
      const Status s = graph.replay(0);
      ASSERT_EQ(s.code(), ErrorCode::kBadGap) << "replay " << replay << ": " << s.to_string();
      EXPECT_NE(s.message().find("block 4: window "), std::string::npos) << s.message();
    }
  }
  DF11_CUDA_ASSERT(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace df11
