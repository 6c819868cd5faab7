// GPU tests of the compact layout (cuda_compact.h): the reference encoder's blobs of ragged
// shapes and of every BF16 pattern decoded on the device bit for bit, nothing written outside
// the output, the status clear; a corrupt stream flagged through the status; the transcode
// from BF16 writing exactly the reference encoder's bytes; the fused GEMM equal to the BF16
// reference GEMM bit for bit at every batch 1-32, on the 8B block's shapes, ragged shapes and
// every BF16 pattern; bad arguments refused. Skipped without a CUDA device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "cuda_device_arena.h"
#include "df11/cuda_compact.h"
#include "df11/cuda_decoder.h"
#include "df11/cuda_exec.h"
#include "df11/encoder.h"
#include "df11/exec_compact_encode.h"
#include "gaussian_bf16.h"

namespace df11 {
namespace {

class CudaCompact : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device: " << why;
  }
};

// Decodes `blob` on the device; returns the output (with 64 guard weights after it, which
// must stay poisoned) and the status word.
std::pair<std::vector<uint16_t>, uint32_t> decode_on_gpu(const std::vector<uint8_t>& blob,
                                                         uint32_t rows, uint32_t cols) {
  const CompactGeometry g = *compact_geometry(rows, cols, "m");
  const CompactCode code = *compact_code(
      std::span<const uint8_t, kCompactSymbols>(blob.data() + g.lengths, kCompactSymbols), "m");
  const uint64_t n = uint64_t{rows} * cols;
  uint8_t* d_blob = nullptr;
  const std::vector<uint32_t> table = cuda::compact_decode_table(code);
  uint16_t* d_out = nullptr;
  uint32_t *d_table = nullptr, *d_status = nullptr;
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_blob), blob.size()), cudaSuccess);
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_table), 4 * table.size()), cudaSuccess);
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_out), 2 * (n + 64)), cudaSuccess);
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_status), 4), cudaSuccess);
  cudaMemcpy(d_blob, blob.data(), blob.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(d_table, table.data(), 4 * table.size(), cudaMemcpyHostToDevice);
  cudaMemset(d_out, 0xA5, 2 * (n + 64));
  cudaMemset(d_status, 0, 4);
  cuda::CompactMatrix m;
  m.d_blob = d_blob;
  m.d_table = d_table;
  m.rows = rows;
  m.cols = cols;
  m.stream_bits = read_compact_header(blob, "m")->stream_bits;
  const Status s = cuda::launch_compact_to_bf16(m, d_out, d_status, nullptr);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  std::vector<uint16_t> out(n + 64);
  uint32_t status = 0;
  EXPECT_EQ(cudaMemcpy(out.data(), d_out, 2 * (n + 64), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(&status, d_status, 4, cudaMemcpyDeviceToHost), cudaSuccess);
  for (uint64_t k = n; k < n + 64; ++k) EXPECT_EQ(out[k], 0xA5A5) << "guard " << k - n;
  out.resize(n);
  cudaFree(d_blob);
  cudaFree(d_table);
  cudaFree(d_out);
  cudaFree(d_status);
  return {out, status};
}

TEST_F(CudaCompact, DecodesBitForBit) {
  const uint32_t shapes[][2] = {{1, 1}, {3, 5}, {17, 33}, {40, 520}, {1024, 4096}};
  uint32_t seed = 1;
  for (const auto& s : shapes) {
    const std::vector<uint16_t> w = gaussian_bf16(size_t{s[0]} * s[1], 0.02f, seed++);
    const auto blob = *encode_compact_matrix(w, s[0], s[1], "m");
    const auto [out, status] = decode_on_gpu(blob, s[0], s[1]);
    EXPECT_EQ(status, 0u);
    EXPECT_EQ(out, w) << s[0] << " x " << s[1];
  }
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i * 40503u);
  const auto blob = *encode_compact_matrix(all, 256, 256, "m");
  const auto [out, status] = decode_on_gpu(blob, 256, 256);
  EXPECT_EQ(status, 0u);
  EXPECT_EQ(out, all);
}

TEST_F(CudaCompact, CorruptStreamIsFlagged) {
  const std::vector<uint16_t> w = gaussian_bf16(40 * 520, 0.02f, 9);
  auto blob = *encode_compact_matrix(w, 40, 520, "m");
  const CompactGeometry g = *compact_geometry(40, 520, "m");
  // The stream's last codeword bits of lane 31 of tile 0 set: past its run or no codeword.
  for (uint32_t k = 0; k < 64; ++k) blob[g.stream + k] = 0xFF;
  const auto [out, status] = decode_on_gpu(blob, 40, 520);
  EXPECT_NE(status, 0u);
}

TEST_F(CudaCompact, TranscodeWritesTheReferenceEncodersBytes) {
  const uint32_t shapes[][2] = {{1, 1}, {3, 5}, {17, 33}, {40, 520}, {1024, 4096}};
  uint32_t seed = 30;
  for (const auto& s : shapes) {
    const std::vector<uint16_t> w = gaussian_bf16(size_t{s[0]} * s[1], 0.02f, seed++);
    const uint64_t ws_bytes = *cuda::compact_workspace_bytes(s[0], s[1]);
    uint16_t* d_w = nullptr;
    void* d_ws = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_w), 2 * w.size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_ws, ws_bytes), cudaSuccess);
    cudaMemcpy(d_w, w.data(), 2 * w.size(), cudaMemcpyHostToDevice);
    const auto counts = cuda::compact_histogram(d_w, s[0], s[1], d_ws, ws_bytes, nullptr);
    ASSERT_TRUE(counts.is_ok()) << counts.status().to_string();
    const auto lengths = *choose_compact_lengths(*counts);
    const auto plan = cuda::compact_measure(d_w, s[0], s[1], lengths, d_ws, ws_bytes, nullptr);
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    uint8_t* d_blob = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_blob), plan->header.total_bytes), cudaSuccess);
    const Status st = cuda::launch_compact_pack(d_w, *plan, d_blob, d_ws, ws_bytes, nullptr);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    std::vector<uint8_t> got(plan->header.total_bytes);
    ASSERT_EQ(cudaMemcpy(got.data(), d_blob, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(got, *encode_compact_matrix(w, s[0], s[1], "m")) << s[0] << " x " << s[1];
    cudaFree(d_w);
    cudaFree(d_ws);
    cudaFree(d_blob);
  }
}

// A blob and its weights on the device, for the GEMM tests.
struct DeviceBlob {
  uint8_t* blob = nullptr;
  uint32_t* table = nullptr;
  uint16_t* w = nullptr;
  cuda::CompactMatrix m;
  DeviceBlob(const std::vector<uint8_t>& b, const std::vector<uint16_t>& weights, uint32_t rows,
             uint32_t cols) {
    const CompactGeometry g = *compact_geometry(rows, cols, "m");
    const CompactCode code = *compact_code(
        std::span<const uint8_t, kCompactSymbols>(b.data() + g.lengths, kCompactSymbols), "m");
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&blob), b.size()), cudaSuccess);
    const std::vector<uint32_t> t = cuda::compact_decode_table(code);
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&table), 4 * t.size()), cudaSuccess);
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&w), 2 * weights.size()), cudaSuccess);
    cudaMemcpy(blob, b.data(), b.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(table, t.data(), 4 * t.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(w, weights.data(), 2 * weights.size(), cudaMemcpyHostToDevice);
    m.d_blob = blob;
    m.d_table = table;
    m.rows = rows;
    m.cols = cols;
    m.stream_bits = read_compact_header(b, "m")->stream_bits;
  }
  ~DeviceBlob() {
    cudaFree(blob);
    cudaFree(table);
    cudaFree(w);
  }
};

// Compares the fused GEMM with the BF16 reference GEMM on the blob's weights at every batch in
// [1, max_batch], X random and not all zeros; Y guarded past its end. Returns the status word
// of the last batch (0 when nothing was flagged at any batch). `kernel` as launch_compact_gemm
// takes it.
uint32_t gemm_matches_reference(const DeviceBlob& d, uint32_t max_batch, bool expect_equal,
                                cuda::CompactGemmKernel kernel) {
  const uint32_t rows = d.m.rows, cols = d.m.cols;
  const std::vector<uint16_t> x = gaussian_bf16(size_t{max_batch} * cols, 1.0f, rows + cols);
  uint16_t *d_x = nullptr, *d_y = nullptr, *d_ref = nullptr;
  uint32_t* d_status = nullptr;
  const uint64_t ny = uint64_t{max_batch} * rows;
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_x), 2 * x.size()), cudaSuccess);
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_y), 2 * (ny + 64)), cudaSuccess);
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_ref), 2 * ny), cudaSuccess);
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_status), 4), cudaSuccess);
  cudaMemcpy(d_x, x.data(), 2 * x.size(), cudaMemcpyHostToDevice);
  uint32_t any = 0;
  for (uint32_t batch = 1; batch <= max_batch; ++batch) {
    const uint64_t n = uint64_t{batch} * rows;
    cudaMemset(d_y, 0xA5, 2 * (ny + 64));
    cudaMemset(d_status, 0, 4);
    cuda::CompactGemm gemm;
    gemm.w = d.m;
    gemm.d_x = d_x;
    gemm.d_y = d_y;
    const Status s =
        cuda::launch_compact_gemm(std::span(&gemm, 1), batch, d_status, nullptr, kernel);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    const cuda::Bf16Gemm ref{d.w, rows, cols, d_x, d_ref};
    const Status r = cuda::launch_bf16_reference_gemm(std::span(&ref, 1), batch, nullptr);
    EXPECT_TRUE(r.is_ok()) << r.to_string();
    std::vector<uint16_t> got(ny + 64), want(n);
    uint32_t status = 0;
    EXPECT_EQ(cudaMemcpy(got.data(), d_y, 2 * got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(want.data(), d_ref, 2 * n, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(&status, d_status, 4, cudaMemcpyDeviceToHost), cudaSuccess);
    any |= status;
    uint64_t past = 0;  // weights written past Y's batch rows
    for (uint64_t k = n; k < ny + 64; ++k) past += got[k] != 0xA5A5;
    EXPECT_EQ(past, 0u) << "batch " << batch;
    got.resize(n);
    if (expect_equal) {
      const int how = static_cast<int>(kernel);
      EXPECT_EQ(status, 0u) << rows << " x " << cols << ", batch " << batch << ", kernel " << how;
      uint64_t differ = 0;
      for (uint64_t k = 0; k < n; ++k) differ += got[k] != want[k];  // raw 16-bit patterns
      EXPECT_EQ(differ, 0u) << rows << " x " << cols << ", batch " << batch << ", kernel " << how;
    }
  }
  cudaFree(d_x);
  cudaFree(d_y);
  cudaFree(d_ref);
  cudaFree(d_status);
  return any;
}

// Both ways of spreading a launch's work (the automatic choice is one of them).
constexpr cuda::CompactGemmKernel kGemmKernels[] = {cuda::CompactGemmKernel::kPlain,
                                                    cuda::CompactGemmKernel::kHelpers};

TEST_F(CudaCompact, GemmEqualsTheReferenceGemmOnTheBlocksShapes) {
  const uint32_t shapes[][2] = {{4096, 4096}, {1024, 4096}, {14336, 4096}, {4096, 14336}};
  uint32_t seed = 50;
  for (const auto& s : shapes) {
    const std::vector<uint16_t> w = gaussian_bf16(size_t{s[0]} * s[1], 0.02f, seed++);
    const DeviceBlob d(*encode_compact_matrix(w, s[0], s[1], "m"), w, s[0], s[1]);
    for (const auto k : kGemmKernels) gemm_matches_reference(d, cuda::kCompactMaxBatch, true, k);
  }
}

TEST_F(CudaCompact, GemmEqualsTheReferenceGemmOnRaggedShapesAndEveryPattern) {
  const uint32_t shapes[][2] = {{1, 1}, {3, 5}, {17, 33}, {40, 520}, {100, 1000}, {33, 4104}};
  uint32_t seed = 70;
  for (const auto& s : shapes) {
    const std::vector<uint16_t> w = gaussian_bf16(size_t{s[0]} * s[1], 0.02f, seed++);
    const DeviceBlob d(*encode_compact_matrix(w, s[0], s[1], "m"), w, s[0], s[1]);
    for (const auto k : kGemmKernels) gemm_matches_reference(d, cuda::kCompactMaxBatch, true, k);
  }
  // Every BF16 pattern (NaN payloads, infinities, subnormals, both zeros): 12-bit codewords
  // and a stream past the staged words.
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i * 40503u);
  const DeviceBlob d(*encode_compact_matrix(all, 256, 256, "m"), all, 256, 256);
  for (const auto k : kGemmKernels) gemm_matches_reference(d, cuda::kCompactMaxBatch, true, k);
}

// Several matrices in one call (more than one launch holds): each Y equal to its reference.
TEST_F(CudaCompact, GemmOfManyMatricesInOneCall) {
  const uint32_t batch = 5;
  std::vector<std::unique_ptr<DeviceBlob>> blobs;
  std::vector<cuda::CompactGemm> gemms;
  std::vector<uint16_t*> xs, ys, refs;
  for (uint32_t i = 0; i < 19; ++i) {
    const uint32_t rows = 16 + 7 * i, cols = 32 + 40 * (i % 5);
    const std::vector<uint16_t> w = gaussian_bf16(size_t{rows} * cols, 0.02f, 90 + i);
    blobs.push_back(
        std::make_unique<DeviceBlob>(*encode_compact_matrix(w, rows, cols, "m"), w, rows, cols));
    const std::vector<uint16_t> x = gaussian_bf16(size_t{batch} * cols, 1.0f, 200 + i);
    uint16_t *d_x = nullptr, *d_y = nullptr, *d_ref = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_x), 2 * x.size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_y), 2 * batch * rows), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_ref), 2 * batch * rows), cudaSuccess);
    cudaMemcpy(d_x, x.data(), 2 * x.size(), cudaMemcpyHostToDevice);
    xs.push_back(d_x);
    ys.push_back(d_y);
    refs.push_back(d_ref);
    cuda::CompactGemm g;
    g.w = blobs.back()->m;
    g.d_x = d_x;
    g.d_y = d_y;
    gemms.push_back(g);
  }
  uint32_t* d_status = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_status), 4), cudaSuccess);
  for (const auto k : kGemmKernels) {
    cudaMemset(d_status, 0, 4);
    for (size_t i = 0; i < gemms.size(); ++i) cudaMemset(ys[i], 0xA5, 2 * batch * gemms[i].w.rows);
    const Status s = cuda::launch_compact_gemm(gemms, batch, d_status, nullptr, k);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    for (size_t i = 0; i < gemms.size(); ++i) {
      const uint32_t rows = gemms[i].w.rows;
      const cuda::Bf16Gemm ref{blobs[i]->w, rows, gemms[i].w.cols, xs[i], refs[i]};
      ASSERT_TRUE(cuda::launch_bf16_reference_gemm(std::span(&ref, 1), batch, nullptr).is_ok());
      std::vector<uint16_t> got(batch * rows), want(batch * rows);
      cudaMemcpy(got.data(), ys[i], 2 * got.size(), cudaMemcpyDeviceToHost);
      cudaMemcpy(want.data(), refs[i], 2 * want.size(), cudaMemcpyDeviceToHost);
      EXPECT_EQ(got, want) << "matrix " << i << ", kernel " << static_cast<int>(k);
    }
    uint32_t status = 1;
    cudaMemcpy(&status, d_status, 4, cudaMemcpyDeviceToHost);
    EXPECT_EQ(status, 0u);
  }
  for (size_t i = 0; i < gemms.size(); ++i) {
    cudaFree(xs[i]);
    cudaFree(ys[i]);
    cudaFree(refs[i]);
  }
  cudaFree(d_status);
  // An empty call launches nothing and succeeds.
  EXPECT_TRUE(cuda::launch_compact_gemm({}, batch, d_status, nullptr).is_ok());
}

TEST_F(CudaCompact, GemmFlagsACorruptStream) {
  const std::vector<uint16_t> w = gaussian_bf16(40 * 520, 0.02f, 9);
  auto blob = *encode_compact_matrix(w, 40, 520, "m");
  const CompactGeometry g = *compact_geometry(40, 520, "m");
  for (uint32_t k = 0; k < 64; ++k) blob[g.stream + k] = 0xFF;
  const DeviceBlob d(blob, w, 40, 520);
  for (const auto k : kGemmKernels) EXPECT_NE(gemm_matches_reference(d, 9, false, k), 0u);
  // Tile offsets pointing past the stream: read from the blob, clamped, flagged.
  auto far = *encode_compact_matrix(w, 40, 520, "m");
  for (uint32_t k = 0; k < 8; ++k) far[g.tile_bits + 8 + k] = 0xFF;
  const DeviceBlob f(far, w, 40, 520);
  for (const auto k : kGemmKernels) EXPECT_NE(gemm_matches_reference(f, 1, false, k), 0u);
}

// A DF11 group transcoded on the GPU: each member's blob the reference encoder's bytes for its
// weights, and the fused GEMM from it equal to the reference GEMM; a corrupt group refused
// naming it.
TEST_F(CudaCompact, Df11GroupTranscode) {
  const std::vector<cuda::ExecShape> shapes = {{64, 512}, {48, 300}, {20, 1000}};
  std::vector<std::vector<uint16_t>> members;
  std::vector<std::span<const uint16_t>> spans;
  uint32_t seed = 140;
  for (const auto& s : shapes) {
    members.push_back(gaussian_bf16(size_t{s.rows} * s.cols, 0.02f, seed++));
  }
  for (const auto& m : members) spans.emplace_back(m);
  Result<GroupBuffers> g = encode_group(spans);
  ASSERT_TRUE(g.is_ok());
  cuda_test::DeviceArena arena(cuda_test::placed_footprint(g->view()));
  ASSERT_TRUE(arena.ok());
  cuda_test::PlacedGroup pg = cuda_test::place(arena, g->view(), 0, "model.layers.0");
  const Result<size_t> wsb = cuda::compact_group_workspace_bytes(g->view(), shapes);
  ASSERT_TRUE(wsb.is_ok()) << wsb.status().to_string();
  void* ws = nullptr;
  ASSERT_EQ(cudaMalloc(&ws, *wsb), cudaSuccess);
  const cuda::CompactCodeChooser choose = [](const std::array<uint64_t, kCompactSymbols>& c) {
    return choose_compact_lengths(c);
  };
  auto plans = cuda::compact_measure_group(pg.device, shapes, choose, ws, *wsb, nullptr);
  ASSERT_TRUE(plans.is_ok()) << plans.status().to_string();
  ASSERT_EQ(plans->size(), shapes.size());
  std::vector<uint8_t*> blobs;
  for (const auto& p : *plans) {
    uint8_t* b = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&b), p.header.total_bytes), cudaSuccess);
    blobs.push_back(b);
  }
  const Status st = cuda::launch_compact_pack_group(*plans, blobs, ws, *wsb, nullptr);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::vector<uint8_t> got((*plans)[i].header.total_bytes);
    ASSERT_EQ(cudaMemcpy(got.data(), blobs[i], got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    const auto want = encode_compact_matrix(members[i], shapes[i].rows, shapes[i].cols, "cpu");
    ASSERT_TRUE(want.is_ok());
    EXPECT_EQ(got, *want) << "member " << i;
    const DeviceBlob d(got, members[i], shapes[i].rows, shapes[i].cols);
    EXPECT_EQ(gemm_matches_reference(d, 3, true, cuda::CompactGemmKernel::kAuto), 0u)
        << "member " << i;
    cudaFree(blobs[i]);
  }
  // A corrupt stream is reported as the decode reports it (a data error naming the group).
  ASSERT_TRUE(cuda_test::corrupt_stream(pg, g->encoded_exponent.size()));
  plans = cuda::compact_measure_group(pg.device, shapes, choose, ws, *wsb, nullptr);
  ASSERT_FALSE(plans.is_ok());
  EXPECT_EQ(error_class(plans.status().code()), ErrorClass::kData) << plans.status().to_string();
  EXPECT_NE(plans.status().message().find("model.layers.0"), std::string::npos);
  // Shapes that do not tile the group, and a missing chooser, are refused before any work.
  const std::vector<cuda::ExecShape> wrong = {{64, 512}};
  EXPECT_EQ(cuda::compact_group_workspace_bytes(g->view(), wrong).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(
      cuda::compact_measure_group(pg.device, shapes, nullptr, ws, *wsb, nullptr).status().code(),
      ErrorCode::kInvalidArgument);
  cudaFree(ws);
}

TEST_F(CudaCompact, RefusesBadArguments) {
  cuda::CompactMatrix m;
  m.rows = 4;
  m.cols = 4;
  uint16_t* out = nullptr;
  EXPECT_EQ(cuda::launch_compact_to_bf16(m, out, nullptr, nullptr).code(),
            ErrorCode::kInvalidArgument);
  cuda::CompactGemm gemm;
  gemm.w = m;
  uint32_t status = 0;
  EXPECT_EQ(cuda::launch_compact_gemm(std::span(&gemm, 1), 1, &status, nullptr).code(),
            ErrorCode::kInvalidArgument);
  // A misaligned blob, and batches outside 1..32.
  gemm.w.d_blob = reinterpret_cast<const uint8_t*>(uintptr_t{4});
  gemm.w.d_table = reinterpret_cast<const uint32_t*>(uintptr_t{16});
  gemm.d_x = reinterpret_cast<const uint16_t*>(uintptr_t{16});
  gemm.d_y = reinterpret_cast<uint16_t*>(uintptr_t{16});
  EXPECT_EQ(cuda::launch_compact_gemm(std::span(&gemm, 1), 1, &status, nullptr).code(),
            ErrorCode::kInvalidArgument);
  gemm.w.d_blob = reinterpret_cast<const uint8_t*>(uintptr_t{16});
  EXPECT_EQ(cuda::launch_compact_gemm(std::span(&gemm, 1), 0, &status, nullptr).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(
      cuda::launch_compact_gemm(std::span(&gemm, 1), cuda::kCompactMaxBatch + 1, &status, nullptr)
          .code(),
      ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace df11
