// GPU tests of the execution layout (cuda_exec.h, spec/EXEC_LAYOUT.md): the GPU transcode
// writes the CPU reference encoder's bytes (from BF16 and from DF11 groups), the layout decodes
// back to the weights bit for bit, and the fused GEMM equals its BF16 reference bit for bit and
// an FP64 host product within BF16 rounding, for the member shapes of a Llama-3.1-8B block
// (rows cut, columns kept; q_proj whole) and whole, ragged shapes, batch 1..kExecMaxBatch (the
// strip kernels to 32 rows, the wide kernel above: EXEC_KERNEL.md v9), unaligned X,
// exception-heavy and every-pattern matrices, several matrices in one launch; corrupt blobs and
// groups are reported and nothing is written outside the outputs. Skipped where no CUDA device
// is usable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cuda_device_arena.h"
#include "df11/cuda_decoder.h"
#include "df11/cuda_exec.h"
#include "df11/encoder.h"
#include "df11/exec_encode.h"

namespace df11 {
namespace {

using cuda_test::DeviceArena;
using cuda_test::kGuardBytes;
using cuda_test::kPoison;

class CudaExec : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device: " << why;
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  cudaStream_t stream_ = nullptr;
};

uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}
double bf16_value(uint16_t b) {
  const uint32_t u = uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::vector<uint16_t> gaussian(uint64_t n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<uint16_t> v(n);
  for (auto& w : v) w = to_bf16(d(rng));
  return v;
}

// Random sign and mantissa, exponents uniform in [lo, hi].
std::vector<uint16_t> exponents_between(uint64_t n, uint32_t lo, uint32_t hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint16_t> v(n);
  for (auto& w : v) {
    const uint32_t e = lo + rng() % (hi - lo + 1);
    w = static_cast<uint16_t>((rng() & 0x807F) | e << 7);
  }
  return v;
}

// Device copy of host bytes (freed with the object).
struct Dev {
  void* p = nullptr;
  size_t n = 0;
  Dev() = default;
  explicit Dev(size_t bytes) : n(bytes) {
    EXPECT_EQ(cudaMalloc(&p, bytes ? bytes : 1), cudaSuccess);
  }
  template <class T>
  explicit Dev(const std::vector<T>& v) : Dev(v.size() * sizeof(T)) {
    EXPECT_EQ(cudaMemcpy(p, v.data(), n, cudaMemcpyHostToDevice), cudaSuccess);
  }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  Dev(Dev&& o) noexcept : p(o.p), n(o.n) { o.p = nullptr; }
  Dev& operator=(Dev&& o) noexcept {
    std::swap(p, o.p);
    std::swap(n, o.n);
    return *this;
  }
  ~Dev() {
    if (p != nullptr) cudaFree(p);
  }
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
  template <class T>
  std::vector<T> get() const {
    std::vector<T> v(n / sizeof(T));
    EXPECT_EQ(cudaMemcpy(v.data(), p, n, cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }
};

// One matrix transcoded on the GPU; checks the blob against the CPU encoder.
struct Transcoded {
  Dev blob;
  cuda::ExecMatrix m;
};
Transcoded transcode(const std::vector<uint16_t>& w, uint32_t rows, uint32_t cols,
                     cudaStream_t stream) {
  Dev src(w);
  const cuda::ExecSource s{src.as<uint16_t>(), rows, cols};
  Result<size_t> wsb = cuda::exec_transcode_workspace_bytes({&s, 1});
  EXPECT_TRUE(wsb.is_ok());
  Dev ws(*wsb);
  cuda::ExecMeasure meas;
  Status st = cuda::exec_measure({&s, 1}, ws.p, ws.n, stream, {&meas, 1});
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  Transcoded t{Dev(meas.bytes), {}};
  uint8_t* blob = t.blob.as<uint8_t>();
  st = cuda::launch_exec_pack({&s, 1}, {&blob, 1}, ws.p, ws.n, stream);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  t.m = {blob, meas.bytes, rows, cols, meas.n_exceptions};
  Result<std::vector<uint8_t>> cpu = encode_exec_matrix(w, rows, cols, "cpu");
  EXPECT_TRUE(cpu.is_ok());
  EXPECT_EQ(t.blob.get<uint8_t>(), *cpu) << rows << " x " << cols << ": GPU pack != CPU encoder";
  return t;
}

// Y [batch, rows] = X [batch, cols] W^T in FP64, and the bound |W| |X| per output.
void host_gemm(const std::vector<uint16_t>& w, uint32_t rows, uint32_t cols,
               const std::vector<uint16_t>& x, uint32_t batch, std::vector<double>& y,
               std::vector<double>& mag) {
  y.assign(uint64_t{batch} * rows, 0.0);
  mag.assign(y.size(), 0.0);
  for (uint32_t j = 0; j < batch; ++j) {
    for (uint32_t r = 0; r < rows; ++r) {
      double s = 0, a = 0;
      for (uint32_t c = 0; c < cols; ++c) {
        const double p =
            bf16_value(w[uint64_t{r} * cols + c]) * bf16_value(x[uint64_t{j} * cols + c]);
        s += p;
        a += std::fabs(p);
      }
      y[uint64_t{j} * rows + r] = s;
      mag[uint64_t{j} * rows + r] = a;
    }
  }
}

// Runs the fused GEMM and the reference at `batch` on X placed `x_misalign` elements past a
// 16-byte boundary, with guards around Y; expects fused == reference bit for bit and (when
// `fp64`) both within BF16 rounding of the FP64 product.
void check_gemm(const Transcoded& t, const std::vector<uint16_t>& w, uint32_t batch,
                uint32_t x_misalign, bool fp64, cudaStream_t stream, const std::string& what) {
  const uint32_t rows = t.m.rows, cols = t.m.cols;
  std::mt19937 rng(batch * 131 + rows);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<uint16_t> x(uint64_t{batch} * cols);
  for (auto& v : x) v = to_bf16(u(rng));
  DeviceArena arena(DeviceArena::footprint(2 * x.size() + 16) +
                    2 * DeviceArena::footprint(2ull * batch * rows) +
                    DeviceArena::footprint(2 * w.size()) + 4096);
  ASSERT_TRUE(arena.ok());
  const auto* dx = reinterpret_cast<const uint16_t*>(arena.upload(
      std::span(reinterpret_cast<const uint8_t*>(x.data()), 2 * x.size()), 2 * x_misalign));
  const auto* dw = reinterpret_cast<const uint16_t*>(
      arena.upload(std::span(reinterpret_cast<const uint8_t*>(w.data()), 2 * w.size()), 0));
  const uint64_t ybytes = 2ull * batch * rows;
  auto* y_ex = reinterpret_cast<uint16_t*>(arena.reserve(ybytes, 0));
  auto* y_ref = reinterpret_cast<uint16_t*>(arena.reserve(ybytes, 0));
  Dev ws(cuda::kExecStatusBytes);
  const cuda::ExecGemm g{t.m, dx, y_ex};
  Status s = cuda::launch_exec_gemm({&g, 1}, batch, ws.p, ws.n, stream);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_TRUE(cuda::read_exec_status(ws.p, stream).is_ok());
  const cuda::Bf16Gemm r{dw, rows, cols, dx, y_ref};
  s = cuda::launch_bf16_reference_gemm({&r, 1}, batch, stream);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  std::vector<uint8_t> raw(ybytes + 2 * kGuardBytes), raw_ref(raw.size());
  ASSERT_EQ(cudaMemcpy(raw.data(), reinterpret_cast<uint8_t*>(y_ex) - kGuardBytes, raw.size(),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpy(raw_ref.data(), reinterpret_cast<uint8_t*>(y_ref) - kGuardBytes, raw.size(),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (uint64_t i = 0; i < kGuardBytes; ++i) {
    ASSERT_EQ(raw[i], kPoison) << what << ": written before Y";
    ASSERT_EQ(raw[kGuardBytes + ybytes + i], kPoison) << what << ": written after Y";
  }
  std::vector<uint16_t> y(uint64_t{batch} * rows), yr(y.size());
  std::memcpy(y.data(), raw.data() + kGuardBytes, ybytes);
  std::memcpy(yr.data(), raw_ref.data() + kGuardBytes, ybytes);
  ASSERT_EQ(y, yr) << what << ", batch " << batch << ": fused != reference";
  if (!fp64) return;
  std::vector<double> want, mag;
  host_gemm(w, rows, cols, x, batch, want, mag);
  for (uint64_t i = 0; i < y.size(); ++i) {
    const double got = bf16_value(y[i]);
    // BF16 rounding of the output (2^-8 relative) plus FP32 accumulation (well under 1e-4 of
    // the magnitudes' sum at these sizes).
    ASSERT_LE(std::fabs(got - want[i]), std::fabs(want[i]) / 128 + 1e-4 * mag[i] + 1e-30)
        << what << ", batch " << batch << ", output " << i;
  }
}

// Decodes the blob on the GPU into a guarded buffer: equals the weights, nothing outside.
void check_to_bf16(const Transcoded& t, const std::vector<uint16_t>& w, uint32_t misalign,
                   cudaStream_t stream) {
  DeviceArena arena(DeviceArena::footprint(2 * w.size()) + 1024);
  ASSERT_TRUE(arena.ok());
  auto* out = reinterpret_cast<uint16_t*>(arena.reserve(2 * w.size(), 2 * misalign));
  Dev ws(cuda::kExecStatusBytes);
  const cuda::ExecToBf16 it{t.m, out};
  ASSERT_TRUE(cuda::launch_exec_to_bf16({&it, 1}, ws.p, ws.n, stream).is_ok());
  ASSERT_TRUE(cuda::read_exec_status(ws.p, stream).is_ok());
  std::vector<uint8_t> raw(2 * w.size() + 2 * kGuardBytes);
  ASSERT_EQ(cudaMemcpy(raw.data(), reinterpret_cast<uint8_t*>(out) - kGuardBytes, raw.size(),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (uint64_t i = 0; i < kGuardBytes; ++i) {
    ASSERT_EQ(raw[i], kPoison);
    ASSERT_EQ(raw[raw.size() - 1 - i], kPoison);
  }
  std::vector<uint16_t> back(w.size());
  std::memcpy(back.data(), raw.data() + kGuardBytes, 2 * w.size());
  ASSERT_EQ(back, w);
}

TEST_F(CudaExec, LlamaMemberShapes) {
  // Rows cut to 40 (a ragged last strip), columns kept; q_proj whole.
  const uint32_t shapes[][2] = {{4096, 4096}, {40, 4096}, {40, 14336}};
  uint32_t seed = 1;
  for (const auto& sh : shapes) {
    const std::vector<uint16_t> w = gaussian(uint64_t{sh[0]} * sh[1], 0.02f, seed++);
    const Transcoded t = transcode(w, sh[0], sh[1], stream_);
    check_to_bf16(t, w, 0, stream_);
    for (const uint32_t batch : {1u, 2u, 4u, 8u, 16u, 17u, 32u}) {
      check_gemm(t, w, batch, 0, sh[0] <= 40, stream_,
                 std::to_string(sh[0]) + " x " + std::to_string(sh[1]));
    }
  }
}

TEST_F(CudaExec, RaggedShapesEveryBatchUnalignedX) {
  const uint32_t shapes[][2] = {{1, 1},    {17, 33}, {33, 255},  {100, 7},
                                {3, 1000}, {16, 32}, {31, 2049}, {50, 520}};
  uint32_t seed = 10;
  for (const auto& sh : shapes) {
    const std::vector<uint16_t> w = gaussian(uint64_t{sh[0]} * sh[1], 0.05f, seed++);
    const Transcoded t = transcode(w, sh[0], sh[1], stream_);
    check_to_bf16(t, w, 1, stream_);
    for (uint32_t batch = 1; batch <= 66; ++batch) {  // both kernels and their boundary
      check_gemm(t, w, batch, batch % 3, true, stream_,
                 std::to_string(sh[0]) + " x " + std::to_string(sh[1]));
    }
  }
}

TEST_F(CudaExec, EveryBatchToTheMaximum) {
  // Ragged in rows (a group of strips, and strips, cut) and in columns (a ragged last tile and
  // step; fewer tiles than partial sums), X aligned and not.
  const uint32_t shapes[][2] = {{33, 255}, {150, 1000}};
  uint32_t seed = 20;
  for (const auto& sh : shapes) {
    const std::vector<uint16_t> w = gaussian(uint64_t{sh[0]} * sh[1], 0.05f, seed++);
    const Transcoded t = transcode(w, sh[0], sh[1], stream_);
    for (uint32_t batch = 1; batch <= cuda::kExecMaxBatch; ++batch) {
      check_gemm(t, w, batch, batch % 2, batch % 16 == 1 || batch > 250, stream_,
                 std::to_string(sh[0]) + " x " + std::to_string(sh[1]));
    }
  }
}

TEST_F(CudaExec, EveryBlockShapeAtEveryBatch) {
  // The Llama-3.1-8B block's four shapes whole (q/o, k/v, gate/up, down) at every batch 1-256:
  // every kernel and chunk the launcher picks (strips, cluster, warpgroup), X aligned and, at
  // one batch in seven, not; fused == reference bit for bit.
  const uint32_t shapes[][2] = {{4096, 4096}, {1024, 4096}, {14336, 4096}, {4096, 14336}};
  uint32_t seed = 80;
  for (const auto& sh : shapes) {
    const std::vector<uint16_t> w = gaussian(uint64_t{sh[0]} * sh[1], 0.02f, seed++);
    const Transcoded t = transcode(w, sh[0], sh[1], stream_);
    for (uint32_t batch = 1; batch <= cuda::kExecMaxBatch; ++batch) {
      check_gemm(
          t, w, batch, batch % 7 == 3 ? 1 : 0, false, stream_,
          std::to_string(sh[0]) + " x " + std::to_string(sh[1]) + " at " + std::to_string(batch));
      if (HasFatalFailure()) return;
    }
  }
}

TEST_F(CudaExec, WideBatchesOnBlockShapes) {
  // The 8B block's shapes whole (q/o, k/v, gate/up, down) and ragged ones, at the batches of a
  // serving step; fused == reference bit for bit, and within rounding of FP64 where small.
  const uint32_t shapes[][2] = {{4096, 4096}, {1024, 4096}, {14336, 4096}, {4096, 14336},
                                {4100, 4104}, {17, 300},    {1000, 33}};
  uint32_t seed = 30;
  for (const auto& sh : shapes) {
    const std::vector<uint16_t> w = gaussian(uint64_t{sh[0]} * sh[1], 0.02f, seed++);
    const Transcoded t = transcode(w, sh[0], sh[1], stream_);
    const bool small = uint64_t{sh[0]} * sh[1] <= 40000;
    for (const uint32_t batch : {33u, 48u, 64u, 100u, 128u, 200u, 255u, 256u}) {
      check_gemm(t, w, batch, 0, small, stream_,
                 std::to_string(sh[0]) + " x " + std::to_string(sh[1]));
    }
  }
}

// Matrices of `shapes` (rows, cols) in one launch at `batch` rows of X: each Y equals the
// reference of its matrix alone.
void check_one_launch(const std::vector<std::array<uint32_t, 2>>& shapes, uint32_t batch,
                      uint32_t seed, cudaStream_t stream) {
  std::vector<std::vector<uint16_t>> ws;
  std::vector<Transcoded> ts;
  std::vector<Dev> xs, ys, refs, wds;
  std::vector<cuda::ExecGemm> gemms;
  for (const auto& sh : shapes) {
    ws.push_back(gaussian(uint64_t{sh[0]} * sh[1], 0.05f, seed));
    ts.push_back(transcode(ws.back(), sh[0], sh[1], stream));
    xs.emplace_back(gaussian(uint64_t{batch} * sh[1], 1.0f, seed + 100));
    ys.emplace_back(2ull * batch * sh[0]);
    refs.emplace_back(2ull * batch * sh[0]);
    wds.emplace_back(ws.back());
    ++seed;
  }
  for (size_t i = 0; i < ts.size(); ++i) {
    gemms.push_back({ts[i].m, xs[i].as<uint16_t>(), ys[i].as<uint16_t>()});
  }
  Dev status(cuda::kExecStatusBytes);
  ASSERT_TRUE(cuda::launch_exec_gemm(gemms, batch, status.p, status.n, stream).is_ok());
  ASSERT_TRUE(cuda::read_exec_status(status.p, stream).is_ok());
  for (size_t i = 0; i < ts.size(); ++i) {
    const cuda::Bf16Gemm r{wds[i].as<uint16_t>(), shapes[i][0], shapes[i][1], xs[i].as<uint16_t>(),
                           refs[i].as<uint16_t>()};
    ASSERT_TRUE(cuda::launch_bf16_reference_gemm({&r, 1}, batch, stream).is_ok());
  }
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  for (size_t i = 0; i < ts.size(); ++i) {
    EXPECT_EQ(ys[i].get<uint16_t>(), refs[i].get<uint16_t>())
        << "matrix " << i << " at " << batch << " rows of X";
  }
}

TEST_F(CudaExec, SeveralMatricesInOneWideLaunch) {
  // Matrices of different columns and rows in one launch (sorted by columns, each its blocks).
  check_one_launch({{40, 300}, {300, 1000}, {16, 4100}, {129, 64}}, 77, 50, stream_);
}

TEST_F(CudaExec, WarpgroupKernelRowCountsAndCopies) {
  // The warpgroup kernel's batches (65-128 rows of X in one chunk of 96, 112 or 128, 129-256
  // in two; sm_90a), ragged in rows and in the last stage's columns: X aligned with cols % 8 ==
  // 0 (each stage's X one tensor-map copy, zeros past the batch and past the last column) and X
  // unaligned (the per-lane copies); one matrix a launch, and several (one tensor map each) in
  // one launch.
  const uint32_t shapes[][2] = {{150, 1000}, {40, 1032}, {300, 520}};
  uint32_t seed = 60;
  for (const auto& sh : shapes) {
    const std::vector<uint16_t> w = gaussian(uint64_t{sh[0]} * sh[1], 0.05f, seed++);
    const Transcoded t = transcode(w, sh[0], sh[1], stream_);
    for (const uint32_t batch : {65u, 80u, 96u, 97u, 111u, 112u, 113u, 120u, 127u, 128u, 129u, 160u,
                                 193u, 224u, 225u, 256u}) {
      check_gemm(t, w, batch, batch == 97 || batch == 120 || batch == 193 ? 1 : 0,
                 sh[0] * sh[1] <= 40000, stream_,
                 std::to_string(sh[0]) + " x " + std::to_string(sh[1]));
    }
  }
  for (const uint32_t batch : {65u, 112u, 128u, 200u, 256u}) {
    check_one_launch({{150, 1000}, {40, 1032}, {129, 64}, {300, 520}}, batch, 70, stream_);
  }
}

TEST_F(CudaExec, FusedMembersWriteOneOutputWithItsRowStride) {
  // A fused layer's members (one X, outputs side by side, as q/k/v) in one launch with
  // ld_y: each member's columns of the one Y equal the reference of that member alone, at
  // the strip kernels' and the wide kernel's batches; the columns past the members and the
  // rows past the batch keep their poison.
  constexpr uint16_t kFill = 0x7FC1;  // a NaN payload no product writes
  for (const uint32_t cols : {300u, 512u}) {
    const uint32_t rows[] = {48, 17, 33};
    uint32_t total = 0;
    for (uint32_t r : rows) total += r;
    const uint32_t ld = total + 3;
    std::vector<std::vector<uint16_t>> ws;
    std::vector<Transcoded> ts;
    std::vector<Dev> wds;
    uint32_t seed = 70 + cols;
    for (uint32_t r : rows) {
      ws.push_back(gaussian(uint64_t{r} * cols, 0.05f, seed++));
      ts.push_back(transcode(ws.back(), r, cols, stream_));
      wds.emplace_back(ws.back());
    }
    for (const uint32_t batch : {1u, 2u, 5u, 8u, 9u, 16u, 17u, 32u, 33u, 64u, 100u}) {
      SCOPED_TRACE(std::to_string(cols) + " columns, batch " + std::to_string(batch));
      Dev x(gaussian(uint64_t{batch} * cols, 1.0f, batch));
      const uint32_t held = batch + 1;  // one row past the batch, poisoned
      Dev y(std::vector<uint16_t>(uint64_t{held} * ld, kFill));
      std::vector<cuda::ExecGemm> gemms;
      uint32_t at = 0;
      for (size_t i = 0; i < ts.size(); ++i) {
        gemms.push_back({ts[i].m, x.as<uint16_t>(), y.as<uint16_t>() + at, ld});
        at += rows[i];
      }
      Dev status(cuda::kExecStatusBytes);
      ASSERT_TRUE(cuda::launch_exec_gemm(gemms, batch, status.p, status.n, stream_).is_ok());
      ASSERT_TRUE(cuda::read_exec_status(status.p, stream_).is_ok());
      const std::vector<uint16_t> got = y.get<uint16_t>();
      at = 0;
      for (size_t i = 0; i < ts.size(); ++i) {
        Dev ref(2ull * batch * rows[i]);
        const cuda::Bf16Gemm r{wds[i].as<uint16_t>(), rows[i], cols, x.as<uint16_t>(),
                               ref.as<uint16_t>()};
        ASSERT_TRUE(cuda::launch_bf16_reference_gemm({&r, 1}, batch, stream_).is_ok());
        ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
        const std::vector<uint16_t> want = ref.get<uint16_t>();
        for (uint32_t j = 0; j < batch; ++j) {
          for (uint32_t c = 0; c < rows[i]; ++c) {
            ASSERT_EQ(got[uint64_t{j} * ld + at + c], want[uint64_t{j} * rows[i] + c])
                << "member " << i << ", row " << j << ", output " << c;
          }
        }
        at += rows[i];
      }
      for (uint32_t j = 0; j < held; ++j) {
        for (uint32_t c = j < batch ? total : 0; c < ld; ++c) {
          ASSERT_EQ(got[uint64_t{j} * ld + c], kFill) << "written at row " << j << ", " << c;
        }
      }
    }
  }
}

TEST_F(CudaExec, ExceptionHeavyMatrices) {
  // ~88% exceptions, finite products.
  std::vector<uint16_t> w = exponents_between(96 * 700, 70, 190, 3);
  Transcoded t = transcode(w, 96, 700, stream_);
  EXPECT_GT(t.m.n_exceptions, w.size() / 2);
  check_to_bf16(t, w, 0, stream_);
  for (const uint32_t batch : {1u, 5u, 16u, 29u, 33u, 100u, 256u})
    check_gemm(t, w, batch, 0, true, stream_, "heavy");
  // Every BF16 pattern (NaN payloads, +-0, +-Inf, subnormals): round trip, and the GEMM still
  // equals its reference (NaNs and all).
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i * 40503u);
  t = transcode(all, 256, 256, stream_);
  check_to_bf16(t, all, 0, stream_);
  check_gemm(t, all, 3, 0, false, stream_, "every pattern");
  check_gemm(t, all, 200, 0, false, stream_, "every pattern");
  // Every weight an exception (exponent 255 is never in a window).
  std::vector<uint16_t> inf(48 * 64, 0x7F80);
  for (size_t i = 0; i < inf.size(); ++i)
    inf[i] = static_cast<uint16_t>(0x7F80 | (i % 128) | (i % 2) << 15);
  t = transcode(inf, 48, 64, stream_);
  EXPECT_EQ(t.m.n_exceptions, inf.size());
  check_to_bf16(t, inf, 0, stream_);
}

TEST_F(CudaExec, Df11GroupTranscode) {
  const std::vector<cuda::ExecShape> shapes = {{64, 512}, {48, 300}, {20, 1000}};
  std::vector<std::vector<uint16_t>> members;
  std::vector<std::span<const uint16_t>> spans;
  uint32_t seed = 40;
  for (const auto& s : shapes)
    members.push_back(gaussian(uint64_t{s.rows} * s.cols, 0.02f, seed++));
  for (const auto& m : members) spans.emplace_back(m);
  Result<GroupBuffers> g = encode_group(spans);
  ASSERT_TRUE(g.is_ok());
  DeviceArena arena(cuda_test::placed_footprint(g->view()));
  ASSERT_TRUE(arena.ok());
  cuda_test::PlacedGroup pg = cuda_test::place(arena, g->view(), 0, "model.layers.0");
  Result<size_t> wsb = cuda::exec_group_workspace_bytes(g->view(), shapes);
  ASSERT_TRUE(wsb.is_ok());
  Dev ws(*wsb);
  std::vector<cuda::ExecMeasure> meas(shapes.size());
  Status s = cuda::exec_measure_group(pg.device, shapes, ws.p, ws.n, stream_, meas);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  std::vector<Dev> blobs;
  std::vector<uint8_t*> ptrs;
  for (const auto& m : meas) {
    blobs.emplace_back(m.bytes);
    ptrs.push_back(blobs.back().as<uint8_t>());
  }
  s = cuda::launch_exec_pack_group(shapes, ptrs, ws.p, ws.n, stream_);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  for (size_t i = 0; i < shapes.size(); ++i) {
    Result<std::vector<uint8_t>> cpu =
        encode_exec_matrix(members[i], shapes[i].rows, shapes[i].cols, "cpu");
    ASSERT_TRUE(cpu.is_ok());
    EXPECT_EQ(blobs[i].get<uint8_t>(), *cpu) << "member " << i;
  }
  // A corrupt stream is reported as the decode reports it (a data error naming the group).
  ASSERT_TRUE(cuda_test::corrupt_stream(pg, g->encoded_exponent.size()));
  s = cuda::exec_measure_group(pg.device, shapes, ws.p, ws.n, stream_, meas);
  EXPECT_EQ(error_class(s.code()), ErrorClass::kData) << s.to_string();
  EXPECT_NE(s.message().find("model.layers.0"), std::string::npos) << s.to_string();
}

TEST_F(CudaExec, CorruptBlobsReportedNothingWrittenOutside) {
  const std::vector<uint16_t> w = exponents_between(64 * 600, 100, 135, 5);  // some exceptions
  Transcoded t = transcode(w, 64, 600, stream_);
  ASSERT_GT(t.m.n_exceptions, 0u);
  const ExecGeometry geo = *exec_geometry(64, 600, "m");
  const std::vector<uint8_t> good = t.blob.get<uint8_t>();
  struct Damage {
    uint64_t at;
    uint32_t value;
    const char* what;
  };
  const Damage damages[] = {
      {geo.tile_offsets + 4 * 3, 0xFFFFFFF0u, "tile offsets out of order"},  // past n_exc
      {geo.tile_offsets + 4 * 2, 0u, "code-15 weights differ"},              // tile 1 too long
      {16, 250, "base above Max_Base"},                                      // a byte
  };
  for (const Damage& d : damages) {
    std::vector<uint8_t> b = good;
    if (d.at == 16) {
      b[16] = static_cast<uint8_t>(d.value);
    } else {
      std::memcpy(b.data() + d.at, &d.value, 4);
    }
    ASSERT_EQ(cudaMemcpy(t.blob.p, b.data(), b.size(), cudaMemcpyHostToDevice), cudaSuccess);
    constexpr uint64_t kB = cuda::kExecMaxBatch;
    DeviceArena arena(2 * DeviceArena::footprint(2ull * kB * 64) +
                      DeviceArena::footprint(2 * w.size()));
    Dev x(std::vector<uint16_t>(kB * 600, to_bf16(0.5f)));
    auto* y = reinterpret_cast<uint16_t*>(arena.reserve(2ull * kB * 64, 0));
    auto* out = reinterpret_cast<uint16_t*>(arena.reserve(2 * w.size(), 0));
    Dev ws(cuda::kExecStatusBytes);
    const std::string names[] = {"model.layers.3.mlp.down_proj"};
    for (const uint32_t batch : {1u, 16u, 32u, 33u, 200u, uint32_t{kB}}) {
      const cuda::ExecGemm g{t.m, x.as<uint16_t>(), y};
      ASSERT_TRUE(cuda::launch_exec_gemm({&g, 1}, batch, ws.p, ws.n, stream_).is_ok());
      const Status s = cuda::read_exec_status(ws.p, stream_, names);
      EXPECT_EQ(s.code(), ErrorCode::kCorruptData) << d.what;
      EXPECT_NE(s.message().find(d.what), std::string::npos) << s.to_string();
      EXPECT_NE(s.message().find(names[0]), std::string::npos) << s.to_string();
    }
    const cuda::ExecToBf16 it{t.m, out};
    ASSERT_TRUE(cuda::launch_exec_to_bf16({&it, 1}, ws.p, ws.n, stream_).is_ok());
    EXPECT_EQ(cuda::read_exec_status(ws.p, stream_).code(), ErrorCode::kCorruptData) << d.what;
    for (uint8_t* p : {reinterpret_cast<uint8_t*>(y), reinterpret_cast<uint8_t*>(out)}) {
      const uint64_t n = p == reinterpret_cast<uint8_t*>(y) ? 2ull * kB * 64 : 2 * w.size();
      std::vector<uint8_t> g1(kGuardBytes), g2(kGuardBytes);
      ASSERT_EQ(cudaMemcpy(g1.data(), p - kGuardBytes, kGuardBytes, cudaMemcpyDeviceToHost),
                cudaSuccess);
      ASSERT_EQ(cudaMemcpy(g2.data(), p + n, kGuardBytes, cudaMemcpyDeviceToHost), cudaSuccess);
      for (uint64_t i = 0; i < kGuardBytes; ++i) {
        ASSERT_EQ(g1[i], kPoison) << d.what;
        ASSERT_EQ(g2[i], kPoison) << d.what;
      }
    }
  }
}

TEST_F(CudaExec, BadArgumentsAreRefused) {
  const std::vector<uint16_t> w = gaussian(32 * 64, 0.02f, 77);
  Transcoded t = transcode(w, 32, 64, stream_);
  Dev x(std::vector<uint16_t>(16 * 64, 0x3F80)), y(2 * 16 * 32), ws(16);
  cuda::ExecGemm g{t.m, x.as<uint16_t>(), y.as<uint16_t>()};
  EXPECT_EQ(cuda::launch_exec_gemm({&g, 1}, 0, ws.p, ws.n, stream_).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(cuda::launch_exec_gemm({&g, 1}, cuda::kExecMaxBatch + 1, ws.p, ws.n, stream_).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(cuda::launch_exec_gemm({&g, 1}, 1, ws.p, 8, stream_).code(),
            ErrorCode::kInvalidArgument);
  cuda::ExecGemm bad = g;
  bad.w.d_blob += 8;  // misaligned
  EXPECT_EQ(cuda::launch_exec_gemm({&bad, 1}, 1, ws.p, ws.n, stream_).code(),
            ErrorCode::kInvalidArgument);
  bad = g;
  bad.w.bytes -= 16;  // shorter than its geometry
  EXPECT_EQ(cuda::launch_exec_gemm({&bad, 1}, 1, ws.p, ws.n, stream_).code(),
            ErrorCode::kInvalidArgument);
  bad = g;
  bad.d_y = nullptr;
  EXPECT_EQ(cuda::launch_exec_gemm({&bad, 1}, 1, ws.p, ws.n, stream_).code(),
            ErrorCode::kInvalidArgument);
  bad = g;
  bad.ld_y = 31;  // below its 32 rows
  EXPECT_EQ(cuda::launch_exec_gemm({&bad, 1}, 1, ws.p, ws.n, stream_).code(),
            ErrorCode::kInvalidArgument);
  const cuda::ExecSource s{x.as<uint16_t>(), 0, 64};
  EXPECT_EQ(cuda::exec_transcode_workspace_bytes({&s, 1}).status().code(),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace df11
