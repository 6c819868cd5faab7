// GPU tests of the GPU encoder (df11/cuda_encoder.h): for every input, the luts, stream,
// sign/mantissa bytes, output positions and gaps equal the CPU encoder's (encode_group) byte
// for byte: trained-like weights at sizes around the coder's tiles and the stream's blocks,
// every codable pattern (subnormals, both zeros), a one-symbol group, codes of up to 32 bits,
// outliers, and weights at an odd address; nothing written outside the outputs; uncodable
// weights and bad arguments refused. Skipped without a CUDA device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cuda_device_arena.h"
#include "df11/cuda_decoder.h"
#include "df11/cuda_encoder.h"
#include "df11/encoder.h"
#include "encoder_test_data.h"

namespace df11 {
namespace {

using cuda_test::DeviceArena;
using cuda_test::kGuardBytes;
using cuda_test::kPoison;

class CudaEncode : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device: " << why;
  }
};

std::vector<uint8_t> download(const uint8_t* d, uint64_t bytes) {
  std::vector<uint8_t> h(bytes);
  if (bytes != 0) {
    EXPECT_EQ(cudaMemcpy(h.data(), d, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  }
  return h;
}

// The guard bytes after [d, d + bytes) still hold the arena's poison.
void expect_guard_after(const uint8_t* d, uint64_t bytes, const char* what) {
  const std::vector<uint8_t> guard = download(d + bytes, kGuardBytes);
  for (uint64_t i = 0; i < guard.size(); ++i) {
    ASSERT_EQ(guard[i], kPoison) << what << ": byte " << bytes + i << " written";
  }
}

// Encodes `weights` on the GPU (uploaded `misalign` bytes past an aligned address, even) and
// compares every part with the CPU encoder's.
void expect_same_as_cpu(const std::vector<uint16_t>& weights, uint32_t misalign = 0,
                        const std::string& what = "") {
  SCOPED_TRACE(what + " n=" + std::to_string(weights.size()));
  const std::span<const uint16_t> member(weights);
  Result<GroupBuffers> cpu = encode_group(std::span<const std::span<const uint16_t>>(&member, 1));
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().message();
  const GroupBuffers& want = cpu.value();

  const uint64_t n = weights.size();
  DeviceArena arena(DeviceArena::footprint(2 * n) + DeviceArena::footprint(n) +
                    DeviceArena::footprint(cuda::kHistogramScratchBytes) +
                    DeviceArena::footprint(want.encoded_exponent.size() + 8) +
                    DeviceArena::footprint(want.output_positions.size()) +
                    DeviceArena::footprint(want.gaps.size()) + (64 << 20));
  ASSERT_TRUE(arena.ok());
  const auto* bytes = reinterpret_cast<const uint8_t*>(weights.data());
  const auto* d_w = reinterpret_cast<const uint16_t*>(
      arena.upload(std::span<const uint8_t>(bytes, 2 * n), misalign));
  uint8_t* hist_scratch = arena.reserve(cuda::kHistogramScratchBytes, 0);
  ASSERT_NE(d_w, nullptr);
  ASSERT_NE(hist_scratch, nullptr);

  Histogram hist{};
  Status st =
      cuda::device_histogram(d_w, n, hist_scratch, cuda::kHistogramScratchBytes, nullptr, hist);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(hist, exponent_histogram(weights));
  Result<cuda::DeviceEncodePlan> planned = cuda::plan_device_encode(hist, n);
  ASSERT_TRUE(planned.is_ok()) << planned.status().message();
  const cuda::DeviceEncodePlan& plan = planned.value();
  EXPECT_EQ(plan.luts, want.luts);
  ASSERT_EQ(plan.n_bytes, want.encoded_exponent.size());
  ASSERT_EQ(plan.output_positions_bytes, want.output_positions.size());
  ASSERT_EQ(plan.gaps_bytes, want.gaps.size());

  uint8_t* scratch = arena.reserve(plan.scratch_bytes, 0);
  cuda::DeviceEncodeOutput out;
  out.encoded_exponent = arena.reserve(plan.encoded_exponent_capacity, 0);
  out.sign_mantissa = arena.reserve(n, 3);
  out.output_positions = arena.reserve(plan.output_positions_bytes, 4);
  out.gaps = arena.reserve(plan.gaps_bytes, 1);
  ASSERT_TRUE(scratch && out.encoded_exponent && out.sign_mantissa && out.output_positions &&
              out.gaps);
  st = cuda::encode_on_device(d_w, plan, out, scratch, plan.scratch_bytes, nullptr);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  const std::vector<uint8_t> stream = download(out.encoded_exponent, plan.n_bytes);
  for (uint64_t i = 0; i < stream.size(); ++i) {
    ASSERT_EQ(stream[i], want.encoded_exponent[i]) << "encoded_exponent byte " << i;
  }
  EXPECT_EQ(download(out.sign_mantissa, n), want.sign_mantissa);
  EXPECT_EQ(download(out.output_positions, plan.output_positions_bytes), want.output_positions);
  EXPECT_EQ(download(out.gaps, plan.gaps_bytes), want.gaps);
  const std::vector<uint8_t> tail =
      download(out.encoded_exponent + plan.n_bytes, plan.encoded_exponent_capacity - plan.n_bytes);
  for (uint8_t b : tail) EXPECT_EQ(b, 0) << "the stream's capacity past n_bytes";
  expect_guard_after(out.encoded_exponent, plan.encoded_exponent_capacity, "encoded_exponent");
  expect_guard_after(out.sign_mantissa, n, "sign_mantissa");
  expect_guard_after(out.output_positions, plan.output_positions_bytes, "output_positions");
  expect_guard_after(out.gaps, plan.gaps_bytes, "gaps");
}

TEST_F(CudaEncode, TrainedLikeWeightsAroundTilesAndBlocks) {
  // Tiles of 8192 weights, stream blocks of 32768 bits (~12,600 weights at ~2.6 bits).
  for (uint64_t n : {1ull, 2ull, 31ull, 32ull, 33ull, 8191ull, 8192ull, 8193ull, 12600ull,
                     100003ull, (1ull << 20) + 5}) {
    expect_same_as_cpu(testing::gaussian_bf16(n, 0.02, 17 + n), 0, "gaussian");
  }
  expect_same_as_cpu(testing::gaussian_bf16(5'000'000, 0.015, 5, 1e-3), 0, "5M, outliers");
}

TEST_F(CudaEncode, EveryCodablePatternAndOddAddresses) {
  const std::vector<uint16_t> all = testing::all_codable_bf16();  // subnormals, +-0
  expect_same_as_cpu(all, 0, "all codable");
  expect_same_as_cpu(all, 2, "all codable, weights 2 bytes past alignment");
  expect_same_as_cpu(testing::gaussian_bf16(40001, 0.02, 9), 6, "weights 6 bytes past");
}

TEST_F(CudaEncode, OneSymbolAndLongCodes) {
  expect_same_as_cpu(std::vector<uint16_t>(70000, 0), 0, "all +0: 1-bit codes");
  expect_same_as_cpu(std::vector<uint16_t>(33000, 0x8000), 0, "all -0");
  // Exponent shares halving from one to the next: codes of 1 to 32 bits, subtables at every
  // depth, codes crossing 32-bit words and windows.
  std::vector<uint32_t> exps;
  std::vector<double> shares;
  double share = 1.0;
  for (uint32_t e = 100; e < 140; ++e) {
    exps.push_back(e);
    shares.push_back(share);
    share /= 2;
  }
  expect_same_as_cpu(testing::bf16_with_exponents(300000, exps, shares, 3), 0, "long codes");
  for (uint32_t e = 0; e < 240; ++e) {
    exps.push_back(e);
    shares.push_back(1e-9);
  }
  expect_same_as_cpu(testing::bf16_with_exponents(200000, exps, shares, 4), 0,
                     "240 symbols, rare ones");
}

TEST_F(CudaEncode, RefusesUncodableWeightsAndBadArguments) {
  std::vector<uint16_t> w = testing::gaussian_bf16(1000, 0.02, 1);
  w[500] = 0x7FC0;  // NaN: exponent 255
  Histogram hist = exponent_histogram(w);
  Result<cuda::DeviceEncodePlan> plan = cuda::plan_device_encode(hist, w.size());
  ASSERT_FALSE(plan.is_ok());
  EXPECT_EQ(plan.status().code(), ErrorCode::kUncodable) << plan.status().message();
  EXPECT_EQ(cuda::plan_device_encode(hist, w.size() + 1).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(cuda::plan_device_encode(Histogram{}, 0).status().code(), ErrorCode::kInvalidArgument);

  DeviceArena arena(1 << 20);
  ASSERT_TRUE(arena.ok());
  uint8_t* d = arena.reserve(4096, 0);
  Histogram h{};
  EXPECT_EQ(
      cuda::device_histogram(reinterpret_cast<const uint16_t*>(d), 16, d + 2048, 100, nullptr, h)
          .code(),
      ErrorCode::kInvalidArgument);  // scratch too small
  EXPECT_EQ(cuda::device_histogram(reinterpret_cast<const uint16_t*>(d + 1), 16, d + 2048,
                                   cuda::kHistogramScratchBytes, nullptr, h)
                .code(),
            ErrorCode::kInvalidArgument);  // weights at an odd address

  const std::vector<uint16_t> good = testing::gaussian_bf16(1000, 0.02, 2);
  Result<cuda::DeviceEncodePlan> p = cuda::plan_device_encode(exponent_histogram(good), 1000);
  ASSERT_TRUE(p.is_ok());
  cuda::DeviceEncodeOutput out{d, d, d, d};
  EXPECT_EQ(cuda::encode_on_device(reinterpret_cast<const uint16_t*>(d), p.value(), out, d,
                                   p.value().scratch_bytes - 1, nullptr)
                .code(),
            ErrorCode::kInvalidArgument);  // scratch too small
  cuda::DeviceEncodePlan bent = p.value();
  bent.n_bytes += 1;
  EXPECT_EQ(cuda::encode_on_device(reinterpret_cast<const uint16_t*>(d), bent, out, d,
                                   bent.scratch_bytes, nullptr)
                .code(),
            ErrorCode::kInvalidArgument);  // inconsistent plan
  out.gaps = nullptr;
  EXPECT_EQ(cuda::encode_on_device(reinterpret_cast<const uint16_t*>(d), p.value(), out, d,
                                   p.value().scratch_bytes, nullptr)
                .code(),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace df11
