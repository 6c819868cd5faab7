// GPU tests of the spans decode (launch_decode_spans): the spans' weights, one after the other,
// bit for bit equal to the same spans of a full decode (and of the original weights), for the
// whole group, members in another order than the group's (q, k, v), spans that start or end
// inside a stream block or on its boundary, single weights, odd offsets, empty spans and the
// most spans a launch takes, in both kernel configurations, at aligned and misaligned outputs,
// with nothing written outside the output; a corrupt stream inside a span reported through the
// status; bad arguments refused; CUDA graph replays. Skipped without a CUDA device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cuda_device_arena.h"
#include "cuda_test_cases.h"
#include "df11/cuda_decoder.h"
#include "df11/group.h"
#include "encoder_test_data.h"

namespace df11 {
namespace {

using cuda_test::Case;
using cuda_test::DeviceArena;
using cuda_test::PlacedGroup;
using Spans = std::vector<cuda::DecodeSpan>;

class CudaSpans : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device: " << why;
  }
};

uint64_t total(const Spans& spans) {
  uint64_t n = 0;
  for (const cuda::DecodeSpan& s : spans) n += s.count;
  return n;
}

// The spans of `full`, one after the other.
std::vector<uint16_t> gather(const std::vector<uint16_t>& full, const Spans& spans) {
  std::vector<uint16_t> out;
  for (const cuda::DecodeSpan& s : spans) {
    out.insert(out.end(), full.begin() + s.offset, full.begin() + s.offset + s.count);
  }
  return out;
}

// The span sets a test decodes from a group of n weights whose stream blocks start at `starts`.
std::vector<Spans> interesting_spans(uint64_t n, const std::vector<uint64_t>& starts,
                                     uint64_t seed) {
  std::vector<Spans> sets;
  sets.push_back({{0, n}});
  const uint64_t a = n / 2 + 8, b = n * 5 / 8 + 16;  // "q, k, v" stored as "k, o, q, v"
  sets.push_back({{a, b - a}, {0, a / 2}, {b, n - b}});
  sets.push_back({{0, 1}, {n - 1, 1}, {n / 3, 0}, {n / 3 + 1, 7}});
  Spans edges;  // around block boundaries: ending on one, starting on one, straddling one
  for (size_t k = 1; k < starts.size() && edges.size() + 3 <= cuda::kMaxDecodeSpans; k += 2) {
    const uint64_t at = starts[k];
    edges.push_back({at - 5, 5});
    edges.push_back({at, 9});
    edges.push_back({at - 3, 11});
  }
  sets.push_back(edges);
  testing::TestRng rng(seed);
  Spans random;
  for (size_t k = 0; k < cuda::kMaxDecodeSpans; ++k) {
    const uint64_t off = rng.below(n);
    random.push_back({off, rng.below(n - off + 1)});
  }
  sets.push_back(random);
  return sets;
}

struct Coded {
  Case c;
  std::vector<uint64_t> starts;  // each stream block's first weight
};

Coded coded(uint64_t n, uint64_t seed) {
  Coded s;
  s.c = cuda_test::encoded(std::to_string(n) + " weights", {testing::gaussian_bf16(n, 0.02, seed)});
  const std::vector<uint8_t>& op = s.c.group.output_positions;
  for (size_t b = 0; b + 1 < op.size() / 4; ++b) s.starts.push_back(load_le32(op.data() + 4 * b));
  return s;
}

Status decode_spans(cuda::DecodePlan& plan, const Spans& spans, uint16_t* out,
                    cuda_test::DeviceWorkspace& ws, cudaStream_t stream = nullptr) {
  DF11_RETURN_IF_ERROR(cuda::launch_decode_spans(plan, 0, spans, out, ws.get(), ws.size(), stream));
  return cuda::read_decode_status(plan, ws.get(), stream);
}

std::vector<uint16_t> fetch(uint16_t* d_out, uint64_t n, bool* guards) {
  PlacedGroup fake;
  fake.n = n;
  fake.device.d_out = d_out;
  return cuda_test::fetch_output(fake, guards);
}

TEST_F(CudaSpans, SpansEqualAFullDecode) {
  for (const uint64_t n : {uint64_t{300000}, uint64_t{1} << 20, uint64_t{777777}}) {
    const Coded s = coded(n, n % 97);
    ASSERT_GT(s.starts.size(), 8u) << "want several blocks";
    for (uint32_t config = 0; config < 4; ++config) {
      const uint32_t misalign = config % 2;
      const auto kernel = config < 2 ? cuda::KernelChoice::kFast : cuda::KernelChoice::kCompact;
      SCOPED_TRACE(s.c.name + ", misalign " + std::to_string(misalign) + ", " +
                   (config < 2 ? "fast" : "compact"));
      const std::vector<Spans> sets = interesting_spans(n, s.starts, config);
      uint64_t out_bytes = 0;
      for (const Spans& sp : sets) out_bytes += DeviceArena::footprint(2 * total(sp) + 16);
      DeviceArena arena(cuda_test::placed_footprint(s.c.group.view()) + out_bytes);
      ASSERT_TRUE(arena.ok());
      PlacedGroup g = cuda_test::place(arena, s.c.group.view(), 0, s.c.name);
      g.device.d_out = nullptr;  // a plan for spans only
      Result<cuda::DecodePlan> plan =
          cuda::make_decode_plan(std::span(&g.device, 1), "t", {kernel});
      ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
      cuda_test::DeviceWorkspace ws(plan->workspace_bytes());
      ASSERT_TRUE(cuda::init_workspace(*plan, ws.get(), ws.size(), nullptr).is_ok());
      for (size_t k = 0; k < sets.size(); ++k) {
        const Spans& sp = sets[k];
        auto* out = reinterpret_cast<uint16_t*>(arena.reserve(2 * total(sp), 2 * misalign));
        const Status st = decode_spans(*plan, sp, out, ws);
        ASSERT_TRUE(st.is_ok()) << "set " << k << ": " << st.to_string();
        bool guards = false;
        EXPECT_TRUE(fetch(out, total(sp), &guards) == gather(s.c.weights, sp)) << "set " << k;
        EXPECT_TRUE(guards) << "set " << k << ": bytes next to the output were written";
      }
    }
  }
}

TEST_F(CudaSpans, CorruptStreamInASpanIsReported) {
  Coded s = coded(1 << 20, 3);
  GroupBuffers bad = s.c.group;
  const uint64_t w = 8 * bad.gaps.size() / kGapBits / 2;  // a window near the middle
  test::write_gap(bad.gaps, w, (read_gap(bad.gaps, w) + 5) % 32);
  DeviceArena arena(cuda_test::placed_footprint(bad.view()) +
                    DeviceArena::footprint(2 * (uint64_t{1} << 20)));
  ASSERT_TRUE(arena.ok());
  PlacedGroup g = cuda_test::place(arena, bad.view(), 0, "g");
  g.device.d_out = nullptr;
  Result<cuda::DecodePlan> plan = cuda::make_decode_plan(std::span(&g.device, 1), "t");
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  cuda_test::DeviceWorkspace ws(plan->workspace_bytes());
  ASSERT_TRUE(cuda::init_workspace(*plan, ws.get(), ws.size(), nullptr).is_ok());
  const Spans whole = {{0, uint64_t{1} << 20}};
  auto* out = reinterpret_cast<uint16_t*>(arena.reserve(2 * total(whole), 0));
  const Status st = decode_spans(*plan, whole, out, ws);
  EXPECT_EQ(st.code(), ErrorCode::kBadGap) << st.to_string();
  bool guards = false;
  fetch(out, total(whole), &guards);
  EXPECT_TRUE(guards) << "bytes next to the output were written";
  // A span of the first few blocks does not reach the corrupt window: the next launch into
  // the workspace reports itself.
  const Spans first = {{0, s.starts[2]}};
  EXPECT_TRUE(decode_spans(*plan, first, out, ws).is_ok());
}

TEST_F(CudaSpans, ArgumentsAreChecked) {
  const Coded s = coded(4096, 6);
  DeviceArena arena(cuda_test::placed_footprint(s.c.group.view()) + DeviceArena::footprint(8192));
  ASSERT_TRUE(arena.ok());
  PlacedGroup g = cuda_test::place(arena, s.c.group.view(), 0, s.c.name);
  Result<cuda::DecodePlan> plan = cuda::make_decode_plan(std::span(&g.device, 1), "t");
  ASSERT_TRUE(plan.is_ok());
  cuda_test::DeviceWorkspace ws(plan->workspace_bytes());
  auto* out = reinterpret_cast<uint16_t*>(arena.reserve(8192, 0));
  const auto spans = [&](size_t group, const Spans& sp, uint16_t* o, size_t ws_bytes) {
    return cuda::launch_decode_spans(*plan, group, sp, o, ws.get(), ws_bytes, nullptr).code();
  };
  EXPECT_EQ(spans(1, {{0, 8}}, out, ws.size()), ErrorCode::kInvalidArgument);     // group
  EXPECT_EQ(spans(0, {{4090, 7}}, out, ws.size()), ErrorCode::kInvalidArgument);  // past the end
  EXPECT_EQ(spans(0, {{4097, 0}}, out, ws.size()), ErrorCode::kInvalidArgument);
  EXPECT_EQ(spans(0, {{UINT64_MAX, 2}}, out, ws.size()), ErrorCode::kInvalidArgument);
  EXPECT_EQ(spans(0, Spans(cuda::kMaxDecodeSpans + 1, {0, 1}), out, ws.size()),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(spans(0, {{0, 8}}, nullptr, ws.size()), ErrorCode::kInvalidArgument);
  EXPECT_EQ(spans(0, {{0, 8}}, out, 8), ErrorCode::kInvalidArgument);  // workspace
  EXPECT_EQ(spans(0, {{0, 0}}, nullptr, ws.size()), ErrorCode::kOk);   // nothing to write
  EXPECT_EQ(spans(0, {{4096, 0}, {0, 4096}}, out, ws.size()), ErrorCode::kOk);
}

// A captured spans decode replays: the same weights each time, after the output was cleared.
TEST_F(CudaSpans, GraphReplaysDecodeAgain) {
  const Coded s = coded(200000, 7);
  const Spans sp = {{150000, 50000}, {10, 40000}, {60001, 3}};
  DeviceArena arena(cuda_test::placed_footprint(s.c.group.view()) +
                    DeviceArena::footprint(2 * total(sp)));
  ASSERT_TRUE(arena.ok());
  PlacedGroup g = cuda_test::place(arena, s.c.group.view(), 0, s.c.name);
  Result<cuda::DecodePlan> plan = cuda::make_decode_plan(std::span(&g.device, 1), "t");
  ASSERT_TRUE(plan.is_ok());
  cuda_test::DeviceWorkspace ws(plan->workspace_bytes());
  auto* out = reinterpret_cast<uint16_t*>(arena.reserve(2 * total(sp), 0));
  cuda_test::CapturedLaunch captured;
  const cudaStream_t stream = captured.stream();
  ASSERT_TRUE(cuda::init_workspace(*plan, ws.get(), ws.size(), stream).is_ok());
  const auto launch = [&](cudaStream_t on) {
    return cuda::launch_decode_spans(*plan, 0, sp, out, ws.get(), ws.size(), on);
  };
  ASSERT_TRUE(launch(stream).is_ok());  // outside the graph first
  const Status made = captured.capture(launch);
  ASSERT_TRUE(made.is_ok()) << made.to_string();
  for (int replay = 0; replay < 3; ++replay) {
    DF11_CUDA_ASSERT(cudaMemsetAsync(out, 0, 2 * total(sp), stream));
    ASSERT_TRUE(captured.replay().is_ok());
    ASSERT_TRUE(cuda::read_decode_status(*plan, ws.get(), stream).is_ok());
    bool guards = false;
    EXPECT_TRUE(fetch(out, total(sp), &guards) == gather(s.c.weights, sp)) << replay;
    EXPECT_TRUE(guards);
  }
}

}  // namespace
}  // namespace df11
