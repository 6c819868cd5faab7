// GPU tests of xxh3_64_device: every input's digest equal to libxxhash's XXH3_64bits
// (df11::xxh3_64) of the same bytes, in one launch over inputs of every short-input branch,
// around the block and stripe borders, of constant bytes and of hundreds of MB; inputs at
// misaligned addresses (short ones) and bad arguments refused. Skipped without a CUDA device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cuda_device_arena.h"
#include "df11/cuda_decoder.h"
#include "df11/cuda_hash.h"
#include "df11/hash.h"

namespace df11 {
namespace {

using cuda_test::DeviceArena;

class CudaHash : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device: " << why;
  }
};

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i + 8 <= n; i += 8) {
    const uint64_t r = rng();
    for (int k = 0; k < 8; ++k) v[i + k] = static_cast<uint8_t>(r >> (8 * k));
  }
  for (size_t i = n / 8 * 8; i < n; ++i) v[i] = static_cast<uint8_t>(rng());
  return v;
}

// Digests of `inputs` on the GPU, in one launch, each uploaded at its misalignment.
std::vector<uint64_t> device_digests(const std::vector<std::vector<uint8_t>>& inputs,
                                     const std::vector<uint32_t>& misalign) {
  uint64_t total = cuda::xxh3_scratch_bytes(inputs.size()) + 1024;
  for (const auto& in : inputs) total += in.size() + 1024;
  DeviceArena arena(total);
  EXPECT_TRUE(arena.ok());
  std::vector<cuda::DeviceBytes> spans;
  for (size_t i = 0; i < inputs.size(); ++i) {
    spans.push_back({arena.upload(inputs[i], misalign[i]), inputs[i].size()});
  }
  void* scratch = arena.reserve(cuda::xxh3_scratch_bytes(inputs.size()), 0);
  std::vector<uint64_t> digests(inputs.size());
  const Status st = cuda::xxh3_64_device(spans, scratch, cuda::xxh3_scratch_bytes(inputs.size()),
                                         nullptr, digests);
  EXPECT_TRUE(st.is_ok()) << st.message();
  return digests;
}

TEST_F(CudaHash, EqualsLibxxhashAtEveryBranchAndBorder) {
  std::vector<std::vector<uint8_t>> inputs;
  std::vector<uint32_t> misalign;
  uint32_t seed = 1;
  std::vector<size_t> lengths = {0,
                                 1,
                                 2,
                                 3,
                                 4,
                                 8,
                                 9,
                                 16,
                                 17,
                                 64,
                                 96,
                                 128,
                                 129,
                                 200,
                                 239,
                                 240,
                                 241,
                                 255,
                                 256,
                                 1023,
                                 1024,
                                 1025,
                                 1087,
                                 1088,
                                 1089,
                                 2047,
                                 2048,
                                 2049,
                                 4095,
                                 65536,
                                 65537,
                                 65536 + 64,
                                 (1 << 20) - 1,
                                 (1 << 20) + 333};
  for (size_t n : lengths) {
    inputs.push_back(random_bytes(n, seed++));
    misalign.push_back(n <= 240 ? (seed * 5) % 16 : 0);
  }
  inputs.push_back(std::vector<uint8_t>(300000, 0));
  inputs.push_back(std::vector<uint8_t>(300001, 0xFF));
  misalign.push_back(0);
  misalign.push_back(16);
  const std::vector<uint64_t> got = device_digests(inputs, misalign);
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(hex64(got[i]), xxh3_hex(inputs[i])) << inputs[i].size() << " bytes";
  }
}

TEST_F(CudaHash, LargeInputsSideBySide) {
  // The sizes of an 8B model's stored tensors: chains of up to ~300k blocks.
  std::vector<std::vector<uint8_t>> inputs = {random_bytes(218103808 + 5, 3),
                                              random_bytes(71303168 + 1000, 4),
                                              random_bytes(3 << 20, 5), random_bytes(512, 6)};
  const std::vector<uint64_t> got = device_digests(inputs, {0, 0, 0, 0});
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(hex64(got[i]), xxh3_hex(inputs[i])) << inputs[i].size() << " bytes";
  }
}

TEST_F(CudaHash, RefusesBadArguments) {
  DeviceArena arena(1 << 20);
  ASSERT_TRUE(arena.ok());
  uint8_t* p = arena.reserve(4096, 0);
  void* scratch = arena.reserve(1024, 0);
  std::vector<uint64_t> d(1);
  const cuda::DeviceBytes misaligned{p + 8, 1000};
  EXPECT_EQ(cuda::xxh3_64_device({&misaligned, 1}, scratch, 1024, nullptr, d).code(),
            ErrorCode::kInvalidArgument);
  const cuda::DeviceBytes null{nullptr, 10};
  EXPECT_EQ(cuda::xxh3_64_device({&null, 1}, scratch, 1024, nullptr, d).code(),
            ErrorCode::kInvalidArgument);
  const cuda::DeviceBytes ok{p, 4096};
  EXPECT_EQ(cuda::xxh3_64_device({&ok, 1}, scratch, 8, nullptr, d).code(),
            ErrorCode::kInvalidArgument);
  std::vector<uint64_t> two(2);
  EXPECT_EQ(cuda::xxh3_64_device({&ok, 1}, scratch, 1024, nullptr, two).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_TRUE(cuda::xxh3_64_device({&ok, 1}, scratch, 1024, nullptr, d).is_ok());
}

}  // namespace
}  // namespace df11
