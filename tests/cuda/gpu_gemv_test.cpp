// GPU tests of the fused decode+GEMV kernel and the reference BF16 GEMV (cuda_gemv.h):
// the reference equals a host model of the documented accumulation order bit for bit; the
// fused kernel equals the reference run on the GPU-decoded weights bit for bit, for the
// member shapes of a Llama-3.1-8B block (rows cut, columns kept), ragged shapes and batch
// 1..16; corrupt streams are reported and nothing is written outside y. Skipped where no
// CUDA device is usable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_device_arena.h"
#include "cuda_test_cases.h"
#include "df11/cuda_decoder.h"
#include "df11/cuda_gemv.h"
#include "df11/decoder.h"

namespace df11 {
namespace {

using cuda_test::Case;
using cuda_test::DeviceArena;
using cuda_test::DeviceWorkspace;
using cuda_test::PlacedGroup;

class CudaGemv : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device: " << why;
  }
};

struct Shape {
  uint32_t rows, cols;
};

// ---- host model of the accumulation order (cuda_gemv.h) ----

float bf16_float(uint16_t b) {
  const uint32_t u = uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t float_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

// y [rows, n] for W [rows, cols] and x [cols, n], all BF16 bits.
std::vector<uint16_t> host_gemv(const uint16_t* w, Shape s, const std::vector<uint16_t>& x,
                                uint32_t n) {
  const uint32_t chunk = cuda::kGemvChunk;
  std::vector<uint16_t> y(uint64_t{s.rows} * n);
  for (uint32_t r = 0; r < s.rows; ++r) {
    for (uint32_t j = 0; j < n; ++j) {
      float total = 0.0f;
      for (uint32_t c0 = 0; c0 < s.cols; c0 += chunk) {
        const uint32_t len = std::min(chunk, s.cols - c0);
        float lanes[32];
        for (uint32_t l = 0; l < 32; ++l) {
          float acc = 0.0f;
          for (uint32_t u0 = 8 * l; u0 < len; u0 += 256) {
            for (uint32_t q = u0; q < std::min(u0 + 8, len); ++q) {
              const uint64_t col = c0 + q;
              acc = std::fmaf(bf16_float(w[uint64_t{r} * s.cols + col]), bf16_float(x[col * n + j]),
                              acc);
            }
          }
          lanes[l] = acc;
        }
        for (uint32_t d = 16; d >= 1; d /= 2) {
          float next[32];
          for (uint32_t l = 0; l < 32; ++l) next[l] = lanes[l] + lanes[l ^ d];
          std::memcpy(lanes, next, sizeof lanes);
        }
        total += lanes[0];
      }
      y[uint64_t{r} * n + j] = float_bf16(total);
    }
  }
  return y;
}

std::vector<uint16_t> random_x(uint64_t count, uint64_t seed) {
  std::vector<uint16_t> x = testing::gaussian_bf16(count, 1.0, seed);
  return x;
}

// ---- device helpers ----

template <typename T>
T* upload(DeviceArena& arena, const std::vector<T>& v, uint32_t misalign = 0) {
  return reinterpret_cast<T*>(
      arena.upload({reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)}, misalign));
}

std::vector<uint16_t> download(const uint16_t* d, uint64_t n) {
  std::vector<uint16_t> h(n);
  EXPECT_EQ(cudaMemcpy(h.data(), d, 2 * n, cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

// Reference GEMV on device weights; returns y.
std::vector<uint16_t> reference(const uint16_t* d_w, Shape s, const uint16_t* d_x, uint32_t n,
                                DeviceArena& arena) {
  uint16_t* d_y = reinterpret_cast<uint16_t*>(arena.reserve(2ull * s.rows * n, 0));
  DeviceWorkspace ws(cuda::reference_gemv_workspace_bytes(s.rows, s.cols, n));
  const cuda::GemvMatrix m{s.rows, s.cols, d_x, d_y};
  const Status st = cuda::launch_reference_gemv(d_w, m, n, ws.get(), ws.size(), nullptr);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return download(d_y, uint64_t{s.rows} * n);
}

// One group of members with these shapes on the device, decoded once by launch_decode
// (into d_out) so that the reference can run on the GPU-decoded weights.
struct GemvFixture {
  Case c;
  std::vector<Shape> shapes;
  DeviceArena arena;
  PlacedGroup placed;

  GemvFixture(const std::string& name, std::vector<Shape> s, uint64_t seed, uint32_t misalign)
      : shapes(std::move(s)), arena(footprint(shapes)) {
    std::vector<std::vector<uint16_t>> members;
    for (size_t i = 0; i < shapes.size(); ++i) {
      members.push_back(testing::gaussian_bf16(uint64_t{shapes[i].rows} * shapes[i].cols,
                                               0.5 / std::sqrt(double(shapes[i].cols)), seed + i));
    }
    c = cuda_test::encoded(name, members);
    placed = cuda_test::place(arena, c.group.view(), misalign, name);
  }
  static uint64_t footprint(const std::vector<Shape>& shapes) {
    uint64_t n = 0, cols = 0, rows = 0;
    for (const Shape& s : shapes) {
      n += uint64_t{s.rows} * s.cols;
      cols += s.cols;
      rows += s.rows;
    }
    // group (about 1.5 bytes per weight), its output, x and y per member at batch 16, twice
    return 8 * n + 64 * (cols + rows) * 16 + (1u << 24);
  }
};

// Fused y for every member at batch n (x per member), with the status of the launch.
Status fused(const cuda::DeviceGroup& g, const std::vector<Shape>& shapes,
             const std::vector<const uint16_t*>& d_x, const std::vector<uint16_t*>& d_y, uint32_t n,
             cudaStream_t stream) {
  DF11_ASSIGN_OR_RETURN(cuda::DecodePlan plan, cuda::make_decode_plan({&g, 1}, "fused"));
  std::vector<cuda::GemvMatrix> ms;
  for (size_t i = 0; i < shapes.size(); ++i) {
    ms.push_back({shapes[i].rows, shapes[i].cols, d_x[i], d_y[i]});
  }
  DF11_ASSIGN_OR_RETURN(const size_t bytes, cuda::gemv_workspace_bytes(plan, ms, n));
  DeviceWorkspace ws(bytes);
  DF11_RETURN_IF_ERROR(cuda::init_workspace(plan, ws.get(), bytes, stream));
  DF11_RETURN_IF_ERROR(cuda::launch_decode_gemv(plan, ms, n, ws.get(), bytes, stream));
  return cuda::read_decode_status(plan, ws.get(), stream);
}

// For each batch: fused == reference on the decoded weights, bit for bit, for every member;
// and, for up to `model_rows` rows of each member, == the host model. x_misalign shifts x and
// y by that many elements off 16-byte alignment (element-wise loads).
void check_group(GemvFixture& f, const std::vector<uint32_t>& batches, uint32_t model_rows,
                 uint32_t x_misalign) {
  ASSERT_TRUE(f.arena.ok());
  ASSERT_TRUE(cuda_test::decode_batch({&f.placed.device, 1}, nullptr).is_ok());
  cudaStream_t stream;
  DF11_CUDA_ASSERT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (const uint32_t n : batches) {
    SCOPED_TRACE("batch " + std::to_string(n));
    std::vector<std::vector<uint16_t>> xs;
    std::vector<const uint16_t*> d_x;
    std::vector<uint16_t*> d_y;
    for (size_t i = 0; i < f.shapes.size(); ++i) {
      xs.push_back(random_x(uint64_t{f.shapes[i].cols} * n, 1000 * n + i));
      d_x.push_back(upload(f.arena, xs.back(), 2 * x_misalign));  // (whole elements)
      d_y.push_back(reinterpret_cast<uint16_t*>(
          f.arena.reserve(2ull * f.shapes[i].rows * n, 2 * x_misalign)));
    }
    const Status s = fused(f.placed.device, f.shapes, d_x, d_y, n, stream);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    uint64_t at = 0;
    for (size_t i = 0; i < f.shapes.size(); ++i) {
      SCOPED_TRACE("member " + std::to_string(i));
      const Shape sh = f.shapes[i];
      const std::vector<uint16_t> got = download(d_y[i], uint64_t{sh.rows} * n);
      const std::vector<uint16_t> want =
          reference(f.placed.device.d_out + at, sh, d_x[i], n, f.arena);
      ASSERT_EQ(got, want) << "fused differs from the reference GEMV";
      const Shape cut{std::min(sh.rows, model_rows), sh.cols};
      const std::vector<uint16_t> model = host_gemv(f.c.weights.data() + at, cut, xs[i], n);
      ASSERT_TRUE(std::equal(model.begin(), model.end(), want.begin()))
          << "reference differs from the host model of the order";
      at += uint64_t{sh.rows} * sh.cols;
    }
  }
  DF11_CUDA_ASSERT(cudaStreamDestroy(stream));
}

// The reference kernel against the host model, ragged and aligned, every batch.
TEST_F(CudaGemv, ReferenceEqualsHostModelOfTheOrder) {
  const Shape shapes[] = {{1, 1}, {3, 7}, {5, 1023}, {4, 1024}, {3, 1025}, {2, 4099}, {7, 2500}};
  DeviceArena arena(64 << 20);
  ASSERT_TRUE(arena.ok());
  uint64_t seed = 5;
  for (const Shape s : shapes) {
    for (uint32_t n = 1; n <= cuda::kGemvMaxBatch; ++n) {
      SCOPED_TRACE(std::to_string(s.rows) + " x " + std::to_string(s.cols) + ", batch " +
                   std::to_string(n));
      const auto w = testing::gaussian_bf16(uint64_t{s.rows} * s.cols, 0.05, ++seed);
      const auto x = random_x(uint64_t{s.cols} * n, ++seed);
      const uint32_t mis = n % 2;  // odd: unaligned weights and x (element loads)
      const uint16_t* d_w = upload(arena, w, 2 * mis);
      const uint16_t* d_x = upload(arena, x, 2 * mis);
      ASSERT_EQ(reference(d_w, s, d_x, n, arena), host_gemv(w.data(), s, x, n));
    }
  }
}

// Member shapes of a Llama-3.1-8B block with rows cut by 32 (every column count kept): q, k,
// v, o, gate, up, down. Thread blocks and chunks cross stream blocks throughout.
TEST_F(CudaGemv, FusedEqualsReferenceLlamaShapesEveryBatch) {
  const bool small = std::getenv("DF11_CUDA_TEST_SMALL") != nullptr;
  const uint32_t cut = small ? 256 : 32;
  GemvFixture f("llama shapes",
                {{4096 / cut, 4096},
                 {1024 / cut, 4096},
                 {1024 / cut, 4096},
                 {4096 / cut, 4096},
                 {14336 / cut, 4096},
                 {14336 / cut, 4096},
                 {4096 / cut, 14336}},
                11, 0);
  std::vector<uint32_t> batches;
  for (uint32_t n = 1; n <= cuda::kGemvMaxBatch; ++n) {
    if (!small || n == 1 || n == 3 || n == 16) batches.push_back(n);
  }
  check_group(f, batches, 2, 0);
}

// Columns that are not multiples of 8 (units and chunks at every alignment), one-row and
// one-column members, misaligned arrays and x.
TEST_F(CudaGemv, FusedEqualsReferenceRaggedShapes) {
  GemvFixture f("ragged", {{1, 1}, {333, 1001}, {1, 7}, {250, 2049}, {17, 3}, {999, 1}, {61, 5003}},
                21, 3);
  check_group(f, {1, 2, 5, 8, 13, 16}, 3, 1);
}

// Two groups in one plan, each with its own x and y; the workspace 8 bytes past a 16-byte
// boundary (engines may hand any 8-byte aligned workspace: the tiled x of batch >= 2 starts at
// the next 16-byte boundary, within the bytes gemv_workspace_bytes asks for).
TEST_F(CudaGemv, TwoGroupsOnePlan) {
  GemvFixture a("a", {{64, 4096}, {40, 1000}}, 31, 0);
  GemvFixture b("b", {{200, 777}}, 41, 0);
  ASSERT_TRUE(a.arena.ok() && b.arena.ok());
  const cuda::DeviceGroup groups[] = {a.placed.device, b.placed.device};
  auto plan = cuda::make_decode_plan(groups, "two");
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  const uint32_t n = 3;
  const Shape shapes[] = {{64, 4096}, {40, 1000}, {200, 777}};
  std::vector<std::vector<uint16_t>> xs;
  std::vector<cuda::GemvMatrix> ms;
  for (int i = 0; i < 3; ++i) {
    xs.push_back(random_x(uint64_t{shapes[i].cols} * n, 50 + i));
    DeviceArena& arena = i < 2 ? a.arena : b.arena;
    ms.push_back({shapes[i].rows, shapes[i].cols, upload(arena, xs.back()),
                  reinterpret_cast<uint16_t*>(arena.reserve(2ull * shapes[i].rows * n, 0))});
  }
  auto bytes = cuda::gemv_workspace_bytes(*plan, ms, n);
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
  DeviceWorkspace ws_memory(*bytes + 8);
  void* const ws = static_cast<uint8_t*>(ws_memory.get()) + 8;
  ASSERT_TRUE(cuda::init_workspace(*plan, ws, *bytes, nullptr).is_ok());
  ASSERT_TRUE(cuda::launch_decode_gemv(*plan, ms, n, ws, *bytes, nullptr).is_ok());
  ASSERT_TRUE(cuda::read_decode_status(*plan, ws, nullptr).is_ok());
  const std::vector<uint16_t>* weights[] = {&a.c.weights, &a.c.weights, &b.c.weights};
  const uint64_t offsets[] = {0, 64 * 4096, 0};
  for (int i = 0; i < 3; ++i) {
    const auto got = download(ms[i].d_y, uint64_t{shapes[i].rows} * n);
    EXPECT_EQ(got, host_gemv(weights[i]->data() + offsets[i], shapes[i], xs[i], n)) << i;
  }
}

// More groups than one fused launch takes (64): several launches, each with its reduction,
// partial sums of every launch in one workspace.
TEST_F(CudaGemv, ManyGroupsSeveralLaunches) {
  const uint32_t n = 2;
  std::vector<Case> cases;
  std::vector<std::vector<Shape>> shapes;
  testing::TestRng rng(91);
  for (int i = 0; i < 70; ++i) {
    std::vector<Shape> s = {
        {1 + static_cast<uint32_t>(rng.below(40)), 1 + static_cast<uint32_t>(rng.below(3000))}};
    if (i % 3 == 0) s.push_back({3, 1 + static_cast<uint32_t>(rng.below(100))});
    std::vector<std::vector<uint16_t>> members;
    for (size_t k = 0; k < s.size(); ++k) {
      members.push_back(
          testing::gaussian_bf16(uint64_t{s[k].rows} * s[k].cols, 0.05, 200 + 2 * i + k));
    }
    std::string name = "g";  // (not "g" + to_string(i): GCC 12 -Wrestrict false positive)
    name += std::to_string(i);
    cases.push_back(cuda_test::encoded(name, members));
    shapes.push_back(s);
  }
  uint64_t bytes = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    bytes += cuda_test::placed_footprint(cases[i].group.view()) + GemvFixture::footprint(shapes[i]);
  }
  DeviceArena arena(bytes);
  ASSERT_TRUE(arena.ok());
  std::vector<cuda::DeviceGroup> groups;
  std::vector<cuda::GemvMatrix> ms;
  std::vector<std::vector<uint16_t>> xs;
  std::vector<const uint16_t*> weights;  // host, per matrix
  std::vector<Shape> flat;
  for (size_t i = 0; i < cases.size(); ++i) {
    groups.push_back(cuda_test::place(arena, cases[i].group.view(), 0, cases[i].name).device);
    uint64_t at = 0;
    for (const Shape sh : shapes[i]) {
      xs.push_back(random_x(uint64_t{sh.cols} * n, 300 + ms.size()));
      ms.push_back({sh.rows, sh.cols, upload(arena, xs.back()),
                    reinterpret_cast<uint16_t*>(arena.reserve(2ull * sh.rows * n, 0))});
      weights.push_back(cases[i].weights.data() + at);
      flat.push_back(sh);
      at += uint64_t{sh.rows} * sh.cols;
    }
  }
  auto plan = cuda::make_decode_plan(groups, "many");
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  auto ws_bytes = cuda::gemv_workspace_bytes(*plan, ms, n);
  ASSERT_TRUE(ws_bytes.is_ok()) << ws_bytes.status().to_string();
  DeviceWorkspace ws(*ws_bytes);
  ASSERT_TRUE(cuda::init_workspace(*plan, ws.get(), *ws_bytes, nullptr).is_ok());
  ASSERT_TRUE(cuda::launch_decode_gemv(*plan, ms, n, ws.get(), *ws_bytes, nullptr).is_ok());
  ASSERT_TRUE(cuda::read_decode_status(*plan, ws.get(), nullptr).is_ok());
  for (size_t i = 0; i < ms.size(); ++i) {
    EXPECT_EQ(download(ms[i].d_y, uint64_t{flat[i].rows} * n),
              host_gemv(weights[i], flat[i], xs[i], n))
        << "matrix " << i;
  }
}

// Shapes that do not match the members, batches out of range, a short workspace.
TEST_F(CudaGemv, BadArgumentsAreRejected) {
  GemvFixture f("args", {{8, 100}, {2, 50}}, 61, 0);
  ASSERT_TRUE(f.arena.ok());
  auto plan = cuda::make_decode_plan({&f.placed.device, 1}, "args");
  ASSERT_TRUE(plan.is_ok());
  uint16_t* y = reinterpret_cast<uint16_t*>(f.arena.reserve(1024, 0));
  const uint16_t* x = y;
  const std::vector<cuda::GemvMatrix> good = {{8, 100, x, y}, {2, 50, x, y}};
  EXPECT_TRUE(cuda::gemv_workspace_bytes(*plan, good, 1).is_ok());
  for (const uint32_t n : {0u, 17u}) {
    EXPECT_EQ(cuda::gemv_workspace_bytes(*plan, good, n).status().code(),
              ErrorCode::kInvalidArgument);
  }
  const std::vector<cuda::GemvMatrix> wrong_shape = {{9, 100, x, y}, {2, 50, x, y}};
  EXPECT_EQ(cuda::gemv_workspace_bytes(*plan, wrong_shape, 1).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(cuda::gemv_workspace_bytes(*plan, std::span(good).first(1), 1).status().code(),
            ErrorCode::kInvalidArgument);
  const std::vector<cuda::GemvMatrix> null_x = {{8, 100, nullptr, y}, {2, 50, x, y}};
  EXPECT_EQ(cuda::gemv_workspace_bytes(*plan, null_x, 1).status().code(),
            ErrorCode::kInvalidArgument);
  const size_t bytes = *cuda::gemv_workspace_bytes(*plan, good, 1);
  DeviceWorkspace ws(bytes);
  EXPECT_EQ(cuda::launch_decode_gemv(*plan, good, 1, ws.get(), bytes - 1, nullptr).code(),
            ErrorCode::kInvalidArgument);
}

// A group of more members than one fused launch describes (256): kResourceLimit, before
// anything is launched.
TEST_F(CudaGemv, TooManyMembersInOneGroup) {
  std::vector<std::vector<uint16_t>> members(257, std::vector<uint16_t>(3, 0x3F80));
  members[7][1] = 0xBF00;
  const Case c = cuda_test::encoded("wide", members);
  DeviceArena arena(cuda_test::placed_footprint(c.group.view()) + (1u << 20));
  ASSERT_TRUE(arena.ok());
  const PlacedGroup p = cuda_test::place(arena, c.group.view(), 0, "wide");
  auto plan = cuda::make_decode_plan({&p.device, 1}, "wide");
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  uint16_t* y = reinterpret_cast<uint16_t*>(arena.reserve(64, 0));
  const std::vector<cuda::GemvMatrix> ms(257, cuda::GemvMatrix{1, 3, y, y});
  const auto bytes = cuda::gemv_workspace_bytes(*plan, ms, 1);
  EXPECT_EQ(bytes.status().code(), ErrorCode::kResourceLimit) << bytes.status().to_string();
  DeviceWorkspace ws(1 << 20);
  EXPECT_EQ(cuda::launch_decode_gemv(*plan, ms, 1, ws.get(), ws.size(), nullptr).code(),
            ErrorCode::kResourceLimit);
}

// Corrupt streams: the fused launch reports what launch_decode reports for the same group
// (both through read_decode_status), writes nothing next to y, and equals the reference on
// the decoded weights when the stream still decodes.
TEST_F(CudaGemv, CorruptStreamsReportedNothingWrittenOutside) {
  const std::vector<Shape> shapes = {{96, 2000}, {50, 777}};
  int reported = 0, trials = 0;
  GemvFixture clean("corrupt", shapes, 71, 0);
  for (const auto& corruption : cuda_test::stream_corruptions()) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      SCOPED_TRACE(corruption.name + " / seed " + std::to_string(seed));
      GroupBuffers g = clean.c.group;
      testing::TestRng rng(seed * 7919);
      corruption.apply(g, rng);
      if (!validate_group(g.view(), "g").is_ok()) continue;
      ++trials;
      DeviceArena arena(GemvFixture::footprint(shapes));
      ASSERT_TRUE(arena.ok());
      const PlacedGroup p = cuda_test::place(arena, g.view(), static_cast<uint32_t>(seed % 2), "g");
      const Status decoded = cuda_test::decode_batch({&p.device, 1}, nullptr);
      const uint32_t n = 1 + static_cast<uint32_t>(seed) * 5;
      std::vector<const uint16_t*> d_x;
      std::vector<uint16_t*> d_y;
      std::vector<uint64_t> y_bytes;
      for (size_t i = 0; i < shapes.size(); ++i) {
        d_x.push_back(upload(arena, random_x(uint64_t{shapes[i].cols} * n, seed + i)));
        y_bytes.push_back(2ull * shapes[i].rows * n);
        d_y.push_back(reinterpret_cast<uint16_t*>(arena.reserve(y_bytes.back(), 0)));
      }
      const Status s = fused(p.device, shapes, d_x, d_y, n, nullptr);
      EXPECT_EQ(s.code(), decoded.code()) << s.to_string() << " vs " << decoded.to_string();
      if (!s.is_ok()) ++reported;
      for (size_t i = 0; i < shapes.size(); ++i) {
        std::vector<uint8_t> guard(cuda_test::kGuardBytes);
        const uint8_t* end = reinterpret_cast<const uint8_t*>(d_y[i]) + y_bytes[i];
        ASSERT_EQ(cudaMemcpy(guard.data(), end, guard.size(), cudaMemcpyDeviceToHost), cudaSuccess);
        for (const uint8_t b : guard) ASSERT_EQ(b, cuda_test::kPoison) << "written past y";
        ASSERT_EQ(cudaMemcpy(guard.data(), reinterpret_cast<const uint8_t*>(d_y[i]) - guard.size(),
                             guard.size(), cudaMemcpyDeviceToHost),
                  cudaSuccess);
        for (const uint8_t b : guard) ASSERT_EQ(b, cuda_test::kPoison) << "written before y";
      }
      if (s.is_ok()) {  // a corruption that leaves a consistent stream: still exact
        uint64_t at = 0;
        for (size_t i = 0; i < shapes.size(); ++i) {
          const auto got = download(d_y[i], uint64_t{shapes[i].rows} * n);
          EXPECT_EQ(got, reference(p.device.d_out + at, shapes[i], d_x[i], n, arena));
          at += uint64_t{shapes[i].rows} * shapes[i].cols;
        }
      }
    }
  }
  EXPECT_GT(trials, 5);
  EXPECT_GT(reported, 0);
}

}  // namespace
}  // namespace df11
