// GPU tests of the rows decode (launch_decode_rows): every requested row bit for bit equal to
// the same row of a full decode (and of the original weights) for the first and last rows,
// repeated ids, rows that straddle stream-block boundaries, one id and many, row widths that
// are not multiples of 8 or of anything, both kernel configurations, aligned and misaligned
// outputs; ids outside the group reported through the status, with zeros and nothing written
// outside the output; CUDA graph replays that read new ids. The selected-rows decode
// (launch_decode_selected_rows): the rows a mask selects equal the full decode's and the others
// keep what the output held, for masks of none, one, some and every row, any expected count,
// both kernel configurations and graph replays that read a new mask. Skipped without a CUDA
// device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
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

class CudaRows : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device: " << why;
  }
};

struct Matrix {
  Case c;
  uint64_t rows = 0, cols = 0;
};

Matrix matrix(uint64_t rows, uint64_t cols, uint64_t seed) {
  Matrix m;
  m.rows = rows;
  m.cols = cols;
  m.c = cuda_test::encoded("emb" + std::to_string(cols),
                           {testing::gaussian_bf16(rows * cols, 0.02, seed)});
  return m;
}

// The ids a test asks for: first and last rows, every row holding a block boundary, repeats,
// and random rows.
std::vector<int64_t> interesting_ids(const Matrix& m, uint64_t seed) {
  std::vector<int64_t> ids = {0, static_cast<int64_t>(m.rows - 1), 0};
  const std::vector<uint8_t>& op = m.c.group.output_positions;
  for (size_t b = 1; b + 1 < op.size() / 4; ++b) {
    const uint64_t at = load_le32(op.data() + 4 * b);
    ids.push_back(static_cast<int64_t>(at / m.cols));  // the row the boundary cuts
    if (at % m.cols == 0 && at != 0) ids.push_back(static_cast<int64_t>(at / m.cols - 1));
  }
  testing::TestRng rng(seed);
  for (int i = 0; i < 40; ++i) ids.push_back(static_cast<int64_t>(rng.below(m.rows)));
  ids.push_back(ids[5 % ids.size()]);
  return ids;
}

// Device ids and an output with poisoned guards (at `misalign` weights past 256 bytes).
struct RowsBuffers {
  int64_t* d_ids = nullptr;
  uint16_t* d_out = nullptr;
  size_t n = 0;
  uint64_t cols = 0;
};

RowsBuffers place_rows(DeviceArena& arena, const std::vector<int64_t>& ids, uint64_t cols,
                       uint32_t misalign) {
  RowsBuffers b;
  b.n = ids.size();
  b.cols = cols;
  b.d_ids = reinterpret_cast<int64_t*>(
      arena.upload(std::span(reinterpret_cast<const uint8_t*>(ids.data()), 8 * ids.size()), 0));
  b.d_out = reinterpret_cast<uint16_t*>(arena.reserve(2 * ids.size() * cols, 2 * misalign));
  return b;
}

std::vector<uint16_t> fetch_rows(const RowsBuffers& b, bool* guards_ok) {
  cuda_test::PlacedGroup fake;
  fake.n = b.n * b.cols;
  fake.device.d_out = b.d_out;
  return cuda_test::fetch_output(fake, guards_ok);
}

uint64_t footprint(const Matrix& m, size_t n_ids) {
  return cuda_test::placed_footprint(m.c.group.view()) + DeviceArena::footprint(8 * n_ids) +
         DeviceArena::footprint(2 * n_ids * m.cols) + (1u << 16);
}

// Rows of `full` (a full decode, or the original weights) that `ids` ask for.
std::vector<uint16_t> gather(const std::vector<uint16_t>& full, const std::vector<int64_t>& ids,
                             uint64_t cols) {
  std::vector<uint16_t> out;
  for (int64_t id : ids) {
    out.insert(out.end(), full.begin() + id * cols, full.begin() + (id + 1) * cols);
  }
  return out;
}

Status decode_rows(cuda::DecodePlan& plan, const RowsBuffers& b, cuda_test::DeviceWorkspace& ws) {
  DF11_RETURN_IF_ERROR(cuda::launch_decode_rows(plan, 0, b.d_ids, b.n, b.cols, b.d_out, ws.get(),
                                                ws.size(), nullptr));
  return cuda::read_decode_status(plan, ws.get(), nullptr);
}

// `m`'s group placed in `arena`, a plan over it (the plan's own output: `with_out`) and a
// workspace, initialised on `stream` where `init`. Call under ASSERT_NO_FATAL_FAILURE.
struct Planned {
  PlacedGroup g;
  std::optional<cuda::DecodePlan> plan;
  std::unique_ptr<cuda_test::DeviceWorkspace> ws;
};

void plan_group(DeviceArena& arena, const Matrix& m, bool with_out, bool init, cudaStream_t stream,
                Planned* out) {
  ASSERT_TRUE(arena.ok());
  out->g = cuda_test::place(arena, m.c.group.view(), 0, m.c.name);
  if (!with_out) out->g.device.d_out = nullptr;
  Result<cuda::DecodePlan> plan = cuda::make_decode_plan(std::span(&out->g.device, 1), "t");
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  out->plan.emplace(std::move(*plan));
  out->ws = std::make_unique<cuda_test::DeviceWorkspace>(out->plan->workspace_bytes());
  if (init) {
    ASSERT_TRUE(cuda::init_workspace(*out->plan, out->ws->get(), out->ws->size(), stream).is_ok());
  }
}

TEST_F(CudaRows, RowsEqualAFullDecodeGathered) {
  // Widths: a multiple of 8 (wide stores), even but not a multiple of 8, odd, and tiny.
  const std::vector<Matrix> matrices = {matrix(96, 4096, 1), matrix(300, 1000, 2),
                                        matrix(700, 777, 3), matrix(40000, 3, 4)};
  for (const Matrix& m : matrices) {
    for (uint32_t config = 0; config < 4; ++config) {
      const uint32_t misalign = config % 2;  // output weights past a 16-byte boundary
      const auto kernel = config < 2 ? cuda::KernelChoice::kFast : cuda::KernelChoice::kCompact;
      SCOPED_TRACE(m.c.name + ", misalign " + std::to_string(misalign) + ", " +
                   (config < 2 ? "fast" : "compact"));
      const std::vector<int64_t> ids = interesting_ids(m, 10 + config);
      ASSERT_GT(m.c.group.output_positions.size() / 4, 3u) << "want several blocks";
      DeviceArena arena(footprint(m, ids.size()) + footprint(m, 1));
      ASSERT_TRUE(arena.ok());
      PlacedGroup g = cuda_test::place(arena, m.c.group.view(), 0, m.c.name);
      Result<cuda::DecodePlan> plan =
          cuda::make_decode_plan(std::span(&g.device, 1), "t", {kernel});
      ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
      cuda_test::DeviceWorkspace ws(plan->workspace_bytes());
      ASSERT_TRUE(cuda::init_workspace(*plan, ws.get(), ws.size(), nullptr).is_ok());
      // The full decode, gathered, is what the rows must be.
      ASSERT_TRUE(cuda::launch_decode(*plan, ws.get(), ws.size(), nullptr).is_ok());
      ASSERT_TRUE(cuda::read_decode_status(*plan, ws.get(), nullptr).is_ok());
      bool guards = false;
      const std::vector<uint16_t> full = cuda_test::fetch_output(g, &guards);
      ASSERT_TRUE(full == m.c.weights);

      RowsBuffers many = place_rows(arena, ids, m.cols, misalign);
      Status s = decode_rows(*plan, many, ws);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      EXPECT_TRUE(fetch_rows(many, &guards) == gather(full, ids, m.cols));
      EXPECT_TRUE(guards) << "bytes next to the rows were written";

      const std::vector<int64_t> last = {static_cast<int64_t>(m.rows - 1)};
      RowsBuffers one = place_rows(arena, last, m.cols, misalign);
      s = decode_rows(*plan, one, ws);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      EXPECT_TRUE(fetch_rows(one, &guards) == gather(full, last, m.cols));
      EXPECT_TRUE(guards);
    }
  }
}

TEST_F(CudaRows, IdsOutsideTheGroupAreReportedAndZeroed) {
  const Matrix m = matrix(64, 1024, 5);
  const std::vector<int64_t> ids = {3, -1, 63, 64, INT64_MAX, INT64_MIN, 0};
  DeviceArena arena(footprint(m, ids.size()));
  ASSERT_TRUE(arena.ok());
  PlacedGroup g = cuda_test::place(arena, m.c.group.view(), 0, m.c.name);
  g.device.d_out = nullptr;  // a plan for rows only
  Result<cuda::DecodePlan> plan = cuda::make_decode_plan(std::span(&g.device, 1), "t");
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  cuda_test::DeviceWorkspace ws(plan->workspace_bytes());
  ASSERT_TRUE(cuda::init_workspace(*plan, ws.get(), ws.size(), nullptr).is_ok());
  RowsBuffers b = place_rows(arena, ids, m.cols, 0);
  const Status s = decode_rows(*plan, b, ws);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.to_string().find("ids["), std::string::npos) << s.to_string();
  bool guards = false;
  const std::vector<uint16_t> out = fetch_rows(b, &guards);
  EXPECT_TRUE(guards);
  for (size_t r = 0; r < ids.size(); ++r) {
    const bool inside = ids[r] >= 0 && ids[r] < 64;
    const std::vector<uint16_t> want =
        inside ? gather(m.c.weights, {ids[r]}, m.cols) : std::vector<uint16_t>(m.cols, 0);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), out.begin() + r * m.cols)) << "row " << r;
  }
  // The next launch into the workspace reports itself: good ids are OK again.
  const std::vector<int64_t> good = {1, 2};
  RowsBuffers ok = place_rows(arena, good, m.cols, 0);
  EXPECT_TRUE(decode_rows(*plan, ok, ws).is_ok());
}

TEST_F(CudaRows, ArgumentsAreChecked) {
  const Matrix m = matrix(16, 512, 6);
  DeviceArena arena(footprint(m, 4));
  Planned t;
  ASSERT_NO_FATAL_FAILURE(plan_group(arena, m, true, false, nullptr, &t));
  const size_t ws_size = t.ws->size();
  RowsBuffers b = place_rows(arena, {1, 2, 3, 4}, m.cols, 0);
  const auto rows = [&](size_t group, const int64_t* ids, uint64_t cols, uint16_t* out,
                        size_t ws_bytes) {
    return cuda::launch_decode_rows(*t.plan, group, ids, 4, cols, out, t.ws->get(), ws_bytes,
                                    nullptr)
        .code();
  };
  EXPECT_EQ(rows(1, b.d_ids, 512, b.d_out, ws_size), ErrorCode::kInvalidArgument);  // group
  EXPECT_EQ(rows(0, b.d_ids, 500, b.d_out, ws_size), ErrorCode::kInvalidArgument);  // width
  EXPECT_EQ(rows(0, b.d_ids, 0, b.d_out, ws_size), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rows(0, nullptr, 512, b.d_out, ws_size), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rows(0, b.d_ids, 512, nullptr, ws_size), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rows(0, b.d_ids, 512, b.d_out, 8), ErrorCode::kInvalidArgument);  // workspace
}

// A captured rows decode replays with the ids the buffer holds at each replay.
TEST_F(CudaRows, GraphReplaysReadTheCurrentIds) {
  const Matrix m = matrix(200, 640, 7);
  const size_t n = 5;
  DeviceArena arena(footprint(m, n));
  cuda_test::CapturedLaunch captured;
  Planned t;
  ASSERT_NO_FATAL_FAILURE(plan_group(arena, m, true, true, captured.stream(), &t));
  RowsBuffers b = place_rows(arena, std::vector<int64_t>(n, 0), m.cols, 0);
  const auto launch = [&](cudaStream_t on) {
    return cuda::launch_decode_rows(*t.plan, 0, b.d_ids, n, m.cols, b.d_out, t.ws->get(),
                                    t.ws->size(), on);
  };
  // One launch outside the graph first (its epoch zeroing is then not captured).
  ASSERT_TRUE(launch(captured.stream()).is_ok());
  const Status made = captured.capture(launch);
  ASSERT_TRUE(made.is_ok()) << made.to_string();
  testing::TestRng rng(8);
  for (int replay = 0; replay < 4; ++replay) {
    std::vector<int64_t> ids(n);
    for (int64_t& id : ids) id = static_cast<int64_t>(rng.below(m.rows));
    DF11_CUDA_ASSERT(
        cudaMemcpyAsync(b.d_ids, ids.data(), 8 * n, cudaMemcpyHostToDevice, captured.stream()));
    ASSERT_TRUE(captured.replay().is_ok());
    bool guards = false;
    EXPECT_TRUE(fetch_rows(b, &guards) == gather(m.c.weights, ids, m.cols)) << replay;
    EXPECT_TRUE(guards);
  }
}

// The selected-rows decode of `m` with `mask` into an output first filled with `fill`: returns
// the output, every selected row the full decode's and every other row still `fill`.
std::vector<uint16_t> selected_rows(const Matrix& m, const std::vector<int32_t>& mask,
                                    uint64_t expected, cuda::KernelChoice kernel, uint16_t fill,
                                    Status* status) {
  DeviceArena arena(cuda_test::placed_footprint(m.c.group.view()) +
                    DeviceArena::footprint(4 * mask.size()) +
                    DeviceArena::footprint(2 * m.rows * m.cols) + (1u << 16));
  if (!arena.ok()) {
    *status = Status(ErrorCode::kInternal, "arena");
    return {};
  }
  PlacedGroup g = cuda_test::place(arena, m.c.group.view(), 0, m.c.name);
  g.device.d_out = nullptr;
  Result<cuda::DecodePlan> plan = cuda::make_decode_plan(std::span(&g.device, 1), "t", {kernel});
  if (!plan.is_ok()) {
    *status = plan.status();
    return {};
  }
  cuda_test::DeviceWorkspace ws(plan->workspace_bytes());
  const auto* d_mask = reinterpret_cast<const int32_t*>(
      arena.upload(std::span(reinterpret_cast<const uint8_t*>(mask.data()), 4 * mask.size()), 0));
  auto* d_out = reinterpret_cast<uint16_t*>(arena.reserve(2 * m.rows * m.cols, 0));
  const std::vector<uint16_t> filled(m.rows * m.cols, fill);
  if (cudaMemcpy(d_out, filled.data(), 2 * filled.size(), cudaMemcpyHostToDevice) != cudaSuccess) {
    *status = Status(ErrorCode::kInternal, "cudaMemcpy");
    return {};
  }
  *status = cuda::init_workspace(*plan, ws.get(), ws.size(), nullptr);
  if (status->is_ok()) {
    *status = cuda::launch_decode_selected_rows(*plan, 0, d_mask, m.cols, expected, d_out, ws.get(),
                                                ws.size(), nullptr);
  }
  if (status->is_ok()) *status = cuda::read_decode_status(*plan, ws.get(), nullptr);
  std::vector<uint16_t> out(filled.size());
  if (cudaMemcpy(out.data(), d_out, 2 * out.size(), cudaMemcpyDeviceToHost) != cudaSuccess) {
    *status = Status(ErrorCode::kInternal, "cudaMemcpy");
  }
  return out;
}

TEST_F(CudaRows, SelectedRowsEqualTheFullDecodeAndLeaveTheOthers) {
  // Experts-like rows (many stream blocks each), rows of a few blocks, and odd widths.
  const std::vector<Matrix> matrices = {matrix(16, 98304, 11), matrix(64, 4096, 12),
                                        matrix(9, 7777, 13), matrix(300, 1000, 14)};
  const uint16_t fill = 0x7FC1;  // a NaN payload no decode writes here
  for (const Matrix& m : matrices) {
    testing::TestRng rng(m.rows);
    std::vector<std::vector<int32_t>> masks = {std::vector<int32_t>(m.rows, 0),
                                               std::vector<int32_t>(m.rows, 1),
                                               std::vector<int32_t>(m.rows, 0)};
    masks[2][m.rows - 1] = 7;  // any non-zero value selects
    std::vector<int32_t> some(m.rows, 0);
    for (uint64_t r = 0; r < m.rows; ++r) some[r] = rng.below(3) == 0 ? 1 : 0;
    some[0] = 1;
    masks.push_back(some);
    for (size_t k = 0; k < masks.size(); ++k) {
      for (uint32_t config = 0; config < 4; ++config) {
        const auto kernel = config % 2 ? cuda::KernelChoice::kCompact : cuda::KernelChoice::kFast;
        const uint64_t expected = config < 2 ? 1 : m.rows;
        SCOPED_TRACE(m.c.name + ", mask " + std::to_string(k) + ", config " +
                     std::to_string(config));
        Status s;
        const std::vector<uint16_t> out = selected_rows(m, masks[k], expected, kernel, fill, &s);
        ASSERT_TRUE(s.is_ok()) << s.to_string();
        for (uint64_t r = 0; r < m.rows; ++r) {
          const auto at = out.begin() + r * m.cols;
          if (masks[k][r] != 0) {
            EXPECT_TRUE(std::equal(at, at + m.cols, m.c.weights.begin() + r * m.cols))
                << "row " << r;
          } else {
            EXPECT_TRUE(std::all_of(at, at + m.cols, [&](uint16_t v) { return v == fill; }))
                << "row " << r << " was written";
          }
        }
      }
    }
  }
}

TEST_F(CudaRows, SelectedRowsArgumentsAreChecked) {
  const Matrix m = matrix(136, 512, 15);  // 69,632 rows of 1 weight
  DeviceArena arena(cuda_test::placed_footprint(m.c.group.view()) +
                    DeviceArena::footprint(4 * 136) + DeviceArena::footprint(2 * 136 * 512) +
                    (1u << 16));
  Planned t;
  ASSERT_NO_FATAL_FAILURE(plan_group(arena, m, true, false, nullptr, &t));
  const size_t ws_size = t.ws->size();
  const std::vector<int32_t> ones(136, 1);
  const auto* d_mask = reinterpret_cast<const int32_t*>(
      arena.upload(std::span(reinterpret_cast<const uint8_t*>(ones.data()), 4 * 136), 0));
  auto* d_out = reinterpret_cast<uint16_t*>(arena.reserve(2 * 136 * 512, 0));
  const auto selected = [&](size_t group, const int32_t* mask, uint64_t cols, uint16_t* out,
                            size_t ws_bytes) {
    return cuda::launch_decode_selected_rows(*t.plan, group, mask, cols, 4, out, t.ws->get(),
                                             ws_bytes, nullptr)
        .code();
  };
  EXPECT_EQ(selected(1, d_mask, 512, d_out, ws_size), ErrorCode::kInvalidArgument);  // group
  EXPECT_EQ(selected(0, d_mask, 500, d_out, ws_size), ErrorCode::kInvalidArgument);  // width
  EXPECT_EQ(selected(0, d_mask, 0, d_out, ws_size), ErrorCode::kInvalidArgument);
  EXPECT_EQ(selected(0, d_mask, 1, d_out, ws_size), ErrorCode::kInvalidArgument);  // > 65535 rows
  EXPECT_EQ(selected(0, nullptr, 512, d_out, ws_size), ErrorCode::kInvalidArgument);
  EXPECT_EQ(selected(0, d_mask, 512, nullptr, ws_size), ErrorCode::kInvalidArgument);
  EXPECT_EQ(selected(0, d_mask, 512, d_out, 8), ErrorCode::kInvalidArgument);  // workspace
}

// A captured selected-rows decode replays with the mask the buffer holds at each replay.
TEST_F(CudaRows, GraphReplaysReadTheCurrentMask) {
  const Matrix m = matrix(12, 20480, 16);
  DeviceArena arena(cuda_test::placed_footprint(m.c.group.view()) + DeviceArena::footprint(48) +
                    DeviceArena::footprint(2 * m.rows * m.cols) + (1u << 16));
  cuda_test::CapturedLaunch captured;
  Planned t;
  ASSERT_NO_FATAL_FAILURE(plan_group(arena, m, true, true, captured.stream(), &t));
  std::vector<int32_t> mask(m.rows, 0);
  auto* d_mask = reinterpret_cast<int32_t*>(
      arena.upload(std::span(reinterpret_cast<const uint8_t*>(mask.data()), 4 * m.rows), 0));
  auto* d_out = reinterpret_cast<uint16_t*>(arena.reserve(2 * m.rows * m.cols, 0));
  const auto launch = [&](cudaStream_t on) {
    return cuda::launch_decode_selected_rows(*t.plan, 0, d_mask, m.cols, 2, d_out, t.ws->get(),
                                             t.ws->size(), on);
  };
  ASSERT_TRUE(launch(captured.stream()).is_ok());
  const Status made = captured.capture(launch);
  ASSERT_TRUE(made.is_ok()) << made.to_string();
  testing::TestRng rng(17);
  for (int replay = 0; replay < 4; ++replay) {
    const std::vector<uint16_t> zeros(m.rows * m.cols, 0);
    DF11_CUDA_ASSERT(cudaMemcpyAsync(d_out, zeros.data(), 2 * zeros.size(), cudaMemcpyHostToDevice,
                                     captured.stream()));
    for (int32_t& v : mask) v = rng.below(2) ? 1 : 0;
    DF11_CUDA_ASSERT(cudaMemcpyAsync(d_mask, mask.data(), 4 * m.rows, cudaMemcpyHostToDevice,
                                     captured.stream()));
    ASSERT_TRUE(captured.replay().is_ok());
    std::vector<uint16_t> out(m.rows * m.cols);
    DF11_CUDA_ASSERT(cudaMemcpy(out.data(), d_out, 2 * out.size(), cudaMemcpyDeviceToHost));
    for (uint64_t r = 0; r < m.rows; ++r) {
      const auto at = out.begin() + r * m.cols;
      const bool ok = mask[r] ? std::equal(at, at + m.cols, m.c.weights.begin() + r * m.cols)
                              : std::all_of(at, at + m.cols, [](uint16_t v) { return v == 0; });
      EXPECT_TRUE(ok) << "replay " << replay << ", row " << r;
    }
  }
}

}  // namespace
}  // namespace df11
