// GPU decode of the compact execution layout to BF16 (launch_compact_to_bf16), one
// Llama-3.1-8B block (q, k, v, o, gate, up, down; N(0, 0.02^2), the exec_size weights):
// CUDA events around each matrix's launch after warm-up, median of --runs, and the block's
// BF16 bytes over the sum of the medians. Checks the output against the weights first.
//
//   compact_decode_bench [--runs N] [--rows-scale N]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "df11/cuda_compact.h"
#include "df11/exec_compact_encode.h"

namespace {

uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "compact_decode_bench: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t runs = 50, scale = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--runs") == 0) runs = static_cast<uint32_t>(std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--rows-scale") == 0) {
      scale = static_cast<uint32_t>(std::max(1, std::atoi(argv[i + 1])));
    }
  }
  const uint32_t shapes[7][2] = {{4096, 4096},  {1024, 4096},  {1024, 4096}, {4096, 4096},
                                 {14336, 4096}, {14336, 4096}, {4096, 14336}};
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  cudaEvent_t e0, e1;
  if (!ok(cudaEventCreate(&e0), "event") || !ok(cudaEventCreate(&e1), "event")) return 1;
  double total_ms = 0, bf16_bytes = 0, coded_bytes = 0;
  for (const auto& s : shapes) {
    const uint32_t rows = s[0] / scale, cols = s[1];
    std::vector<uint16_t> w(uint64_t{rows} * cols);
    for (uint16_t& x : w) x = to_bf16(dist(rng));
    const auto blob = df11::encode_compact_matrix(w, rows, cols, "bench");
    if (!blob.is_ok()) return 1;
    const df11::CompactGeometry g = *df11::compact_geometry(rows, cols, "bench");
    const df11::CompactCode code = *df11::compact_code(
        std::span<const uint8_t, df11::kCompactSymbols>(blob->data() + g.lengths, 256), "bench");
    void *d_blob, *d_table, *d_out, *d_status;
    if (!ok(cudaMalloc(&d_blob, blob->size()), "malloc") ||
        !ok(cudaMalloc(&d_table, sizeof code.table), "malloc") ||
        !ok(cudaMalloc(&d_out, 2 * w.size()), "malloc") ||
        !ok(cudaMalloc(&d_status, 4), "malloc")) {
      return 1;
    }
    cudaMemcpy(d_blob, blob->data(), blob->size(), cudaMemcpyHostToDevice);
    cudaMemcpy(d_table, code.table.data(), sizeof code.table, cudaMemcpyHostToDevice);
    cudaMemset(d_status, 0, 4);
    df11::cuda::CompactMatrix m;
    m.d_blob = static_cast<const uint8_t*>(d_blob);
    m.d_table = static_cast<const uint16_t*>(d_table);
    m.rows = rows;
    m.cols = cols;
    m.stream_bits = df11::read_compact_header(*blob, "bench")->stream_bits;
    auto* out = static_cast<uint16_t*>(d_out);
    auto* status = static_cast<uint32_t*>(d_status);
    if (!df11::cuda::launch_compact_to_bf16(m, out, status, nullptr).is_ok()) return 1;
    std::vector<uint16_t> back(w.size());
    uint32_t st = 0;
    cudaMemcpy(back.data(), d_out, 2 * w.size(), cudaMemcpyDeviceToHost);
    cudaMemcpy(&st, d_status, 4, cudaMemcpyDeviceToHost);
    if (back != w || st != 0) {
      std::fprintf(stderr, "compact_decode_bench: %u x %u decoded wrong (status %u)\n", rows, cols,
                   st);
      return 1;
    }
    std::vector<float> ms;
    for (uint32_t r = 0; r < runs + 5; ++r) {
      cudaEventRecord(e0);
      (void)df11::cuda::launch_compact_to_bf16(m, out, status, nullptr);
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float t = 0;
      cudaEventElapsedTime(&t, e0, e1);
      if (r >= 5) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    const double med = ms[ms.size() / 2];
    std::printf("%5u x %5u: %.4f ms, %.3f TB/s of BF16\n", rows, cols, med,
                2.0 * static_cast<double>(w.size()) / (med * 1e-3) / 1e12);
    total_ms += med;
    bf16_bytes += 2.0 * static_cast<double>(w.size());
    coded_bytes += static_cast<double>(blob->size());
    cudaFree(d_blob);
    cudaFree(d_table);
    cudaFree(d_out);
    cudaFree(d_status);
  }
  std::printf("block: %.4f ms, %.3f TB/s of BF16 (%.3f TB/s read + written), %.4f bits/weight\n",
              total_ms, bf16_bytes / (total_ms * 1e-3) / 1e12,
              (bf16_bytes + coded_bytes) / (total_ms * 1e-3) / 1e12,
              8.0 * coded_bytes / (bf16_bytes / 2));
  return 0;
}
