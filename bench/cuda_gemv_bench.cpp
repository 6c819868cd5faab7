// The GEMV rows of df11-cuda-bench (BENCHMARKS.md, "GPU GEMV"): y = W x for the seven
// matrices of the block at batch 1, 2, 4, 8, 16 by cuBLAS from BF16 weights, by df11 decode +
// cuBLAS, by the fused decode+GEMV kernel and by the reference BF16 GEMV; then the model
// line: the same at batch 1 over `model_blocks` copies of the block. Every figure is the
// CUDA-event median of `runs` runs after `warmup` untimed ones, on one stream. The fused
// output is checked bit for bit against the reference on the decoded weights, and its
// distance from cuBLAS is reported in BF16 ulps.
#include "cuda_gemv_bench.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "df11/cuda_decoder.h"
#include "df11/cuda_gemv.h"

namespace df11::bench {
namespace {

struct Timing {
  double median = 0, min = 0, max = 0;
};

// Device allocations freed together.
class Pool {
 public:
  Pool() = default;
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool() {
    for (void* p : ptrs_) cudaFree(p);
  }
  template <typename T = uint8_t>
  T* alloc(uint64_t bytes) {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
      ok_ = false;
      return nullptr;
    }
    ptrs_.push_back(p);
    return static_cast<T*>(p);
  }
  template <typename T>
  T* upload(const std::vector<T>& v) {
    T* p = alloc<T>(v.size() * sizeof(T));
    if (p != nullptr && cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice) !=
                            cudaSuccess) {
      ok_ = false;
    }
    return p;
  }
  bool ok() const { return ok_; }

 private:
  std::vector<void*> ptrs_;
  bool ok_ = true;
};

// `work` enqueues on `stream`; false if it fails.
bool time_runs(cudaStream_t stream, int warmup, int runs, const std::function<bool()>& work,
               Timing& t) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> ms;
  bool ok = true;
  for (int i = 0; i < warmup + runs && ok; ++i) {
    cudaEventRecord(start, stream);
    ok = work();
    cudaEventRecord(stop, stream);
    ok = ok && cudaEventSynchronize(stop) == cudaSuccess;
    float e = 0;
    cudaEventElapsedTime(&e, start, stop);
    if (i >= warmup) ms.push_back(e);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (!ok || ms.empty()) return false;
  std::sort(ms.begin(), ms.end());
  t.min = ms.front();
  t.max = ms.back();
  t.median = ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
  return true;
}

// BF16 ulps between two patterns (ordered as sign-magnitude integers).
uint32_t ulp_distance(uint16_t a, uint16_t b) {
  const auto key = [](uint16_t v) {
    return (v & 0x8000) ? -static_cast<int32_t>(v & 0x7FFF) : static_cast<int32_t>(v & 0x7FFF);
  };
  const int32_t d = key(a) - key(b);
  return static_cast<uint32_t>(d < 0 ? -d : d);
}

// Deterministic BF16 values in [-1, 1) (not all zeros, some negative).
std::vector<uint16_t> make_x(uint64_t n, uint64_t seed) {
  std::vector<uint16_t> x(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& v : x) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    const float f = static_cast<float>(static_cast<int64_t>(s >> 40) - (1 << 23)) / (1 << 23);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    v = static_cast<uint16_t>(u >> 16);
  }
  return x;
}

struct Matrix {
  uint32_t rows, cols;
  uint64_t offset;  // first weight in the group
};

// y = W x for all matrices with cuBLAS: W row-major [rows, cols] = column-major W^T, x
// column-major [cols, n], y column-major [rows, n].
bool cublas_all(cublasHandle_t h, const uint16_t* d_w, const std::vector<Matrix>& ms,
                const std::vector<const uint16_t*>& x, const std::vector<uint16_t*>& y,
                uint32_t n) {
  const float alpha = 1.0f, beta = 0.0f;
  for (size_t i = 0; i < ms.size(); ++i) {
    const auto st = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(ms[i].rows),
                                 static_cast<int>(n), static_cast<int>(ms[i].cols), &alpha,
                                 d_w + ms[i].offset, CUDA_R_16BF, static_cast<int>(ms[i].cols),
                                 x[i], CUDA_R_16BF, static_cast<int>(ms[i].cols), &beta, y[i],
                                 CUDA_R_16BF, static_cast<int>(ms[i].rows), CUBLAS_COMPUTE_32F,
                                 CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) return false;
  }
  return true;
}

// The five input arrays of one group copy on the device.
cuda::DeviceGroup upload_group(Pool& pool, const GroupView& g, uint16_t* d_out,
                               const std::string& name) {
  cuda::DeviceGroup d;
  d.host = g;
  d.d_luts = pool.upload(std::vector<uint8_t>(g.luts.begin(), g.luts.end()));
  d.d_encoded_exponent =
      pool.upload(std::vector<uint8_t>(g.encoded_exponent.begin(), g.encoded_exponent.end()));
  d.d_sign_mantissa =
      pool.upload(std::vector<uint8_t>(g.sign_mantissa.begin(), g.sign_mantissa.end()));
  d.d_output_positions =
      pool.upload(std::vector<uint8_t>(g.output_positions.begin(), g.output_positions.end()));
  d.d_gaps = pool.upload(std::vector<uint8_t>(g.gaps.begin(), g.gaps.end()));
  d.d_out = d_out;
  d.name = name;
  return d;
}

bool batch_rows(const app::BenchWorkload& w, const std::vector<Matrix>& ms, Pool& pool,
                const cuda::DeviceGroup& group, const uint16_t* d_w, cublasHandle_t h,
                cudaStream_t stream, int warmup, int runs) {
  auto plan = cuda::make_decode_plan({&group, 1}, "gemv bench");
  BENCH_CHECK(plan.is_ok(), plan.status().to_string());
  std::printf("GEMV rows (y = W x for all %zu matrices; ms, CUDA-event median of %d runs)\n",
              ms.size(), runs);
  std::printf("  batch  cuBLAS BF16  decode+cuBLAS   fused (x cuBLAS)   reference  "
              "fused==ref  max ulp vs cuBLAS\n");
  for (const uint32_t n : {1u, 2u, 4u, 8u, 16u}) {
    std::vector<const uint16_t*> x_cub, x_ours;
    std::vector<uint16_t*> y_cub, y_fused, y_ref;
    std::vector<cuda::GemvMatrix> gm;
    uint64_t ref_ws = 0;
    for (size_t i = 0; i < ms.size(); ++i) {
      const std::vector<uint16_t> x = make_x(uint64_t{ms[i].cols} * n, 7 * n + i);
      std::vector<uint16_t> xt(x.size());  // [cols, n] row-major -> column-major
      for (uint64_t c = 0; c < ms[i].cols; ++c) {
        for (uint32_t j = 0; j < n; ++j) xt[j * uint64_t{ms[i].cols} + c] = x[c * n + j];
      }
      x_ours.push_back(pool.upload(x));
      x_cub.push_back(pool.upload(xt));
      y_cub.push_back(pool.alloc<uint16_t>(2ull * ms[i].rows * n));
      y_fused.push_back(pool.alloc<uint16_t>(2ull * ms[i].rows * n));
      y_ref.push_back(pool.alloc<uint16_t>(2ull * ms[i].rows * n));
      gm.push_back({ms[i].rows, ms[i].cols, x_ours.back(), y_fused.back()});
      ref_ws = std::max<uint64_t>(ref_ws,
                                  cuda::reference_gemv_workspace_bytes(ms[i].rows, ms[i].cols, n));
    }
    auto bytes = cuda::gemv_workspace_bytes(*plan, gm, n);
    BENCH_CHECK(bytes.is_ok(), bytes.status().to_string());
    void* ws = pool.alloc(*bytes);
    void* rws = pool.alloc(ref_ws);
    BENCH_CHECK(pool.ok(), "device allocation");
    BENCH_CHECK(cuda::init_workspace(*plan, ws, *bytes, stream).is_ok(), "init_workspace");

    Timing t_cub, t_dec, t_fused, t_ref;
    const auto reference_all = [&](const uint16_t* weights) {
      for (size_t i = 0; i < ms.size(); ++i) {
        const cuda::GemvMatrix m{ms[i].rows, ms[i].cols, x_ours[i], y_ref[i]};
        if (!cuda::launch_reference_gemv(weights + ms[i].offset, m, n, rws, ref_ws, stream)
                 .is_ok()) {
          return false;
        }
      }
      return true;
    };
    BENCH_CHECK(time_runs(stream, warmup, runs,
                         [&] { return cublas_all(h, d_w, ms, x_cub, y_cub, n); }, t_cub),
               "cuBLAS GEMV");
    BENCH_CHECK(time_runs(stream, warmup, runs,
                         [&] {
                           return cuda::launch_decode(*plan, ws, *bytes, stream).is_ok() &&
                                  cublas_all(h, group.d_out, ms, x_cub, y_cub, n);
                         },
                         t_dec),
               "decode + cuBLAS GEMV");
    BENCH_CHECK(cuda::read_decode_status(*plan, ws, stream).is_ok(), "decode status");
    BENCH_CHECK(time_runs(stream, warmup, runs,
                         [&] {
                           return cuda::launch_decode_gemv(*plan, gm, n, ws, *bytes, stream)
                               .is_ok();
                         },
                         t_fused),
               "fused GEMV");
    const Status fs = cuda::read_decode_status(*plan, ws, stream);
    BENCH_CHECK(fs.is_ok(), fs.to_string());
    BENCH_CHECK(time_runs(stream, warmup, runs, [&] { return reference_all(d_w); }, t_ref),
               "reference GEMV");
    // Exactness: the reference on the GPU-decoded weights, then bit-for-bit comparison.
    BENCH_CHECK(reference_all(group.d_out) && cudaStreamSynchronize(stream) == cudaSuccess,
               "reference GEMV on the decoded weights");
    BENCH_CHECK(cublas_all(h, d_w, ms, x_cub, y_cub, n) &&
                   cudaStreamSynchronize(stream) == cudaSuccess,
               "cuBLAS GEMV");
    bool equal = true;
    uint32_t max_ulp = 0;
    uint64_t differ = 0, total = 0;
    for (size_t i = 0; i < ms.size(); ++i) {
      const uint64_t count = uint64_t{ms[i].rows} * n;
      std::vector<uint16_t> f(count), r(count), c(count);
      cudaMemcpy(f.data(), y_fused[i], 2 * count, cudaMemcpyDeviceToHost);
      cudaMemcpy(r.data(), y_ref[i], 2 * count, cudaMemcpyDeviceToHost);
      cudaMemcpy(c.data(), y_cub[i], 2 * count, cudaMemcpyDeviceToHost);
      equal = equal && f == r;
      for (uint64_t row = 0; row < ms[i].rows; ++row) {
        for (uint32_t j = 0; j < n; ++j) {
          const uint32_t d = ulp_distance(f[row * n + j], c[j * uint64_t{ms[i].rows} + row]);
          max_ulp = std::max(max_ulp, d);
          differ += d != 0;
          ++total;
        }
      }
    }
    std::printf("  %5u  %11.3f  %13.3f  %7.3f (%5.2fx)  %10.3f  %10s  %u (%.2f%% of outputs differ)\n",
                n, t_cub.median, t_dec.median, t_fused.median, t_fused.median / t_cub.median,
                t_ref.median, equal ? "yes" : "NO", max_ulp, 100.0 * differ / total);
    std::printf("         min/max: cuBLAS %.3f/%.3f, decode+cuBLAS %.3f/%.3f, fused %.3f/%.3f, "
                "reference %.3f/%.3f\n",
                t_cub.min, t_cub.max, t_dec.min, t_dec.max, t_fused.min, t_fused.max, t_ref.min,
                t_ref.max);
    BENCH_CHECK(equal, "the fused output differs from the reference GEMV on the decoded weights");
  }
  (void)w;
  return true;
}

// Batch 1 over `blocks` copies of the block: cuBLAS over their BF16 weights, decode +
// cuBLAS block by block, the fused kernel one launch per block and one for all.
bool model_rows(const app::BenchWorkload& w, const std::vector<Matrix>& ms, cublasHandle_t h,
                cudaStream_t stream, int warmup, int runs, uint32_t blocks) {
  Pool pool;
  const uint64_t n_weights = w.weights.size();
  uint16_t* d_dec = pool.alloc<uint16_t>(2 * n_weights);  // reused by decode + cuBLAS
  std::vector<cuda::DeviceGroup> groups;
  std::vector<uint16_t*> d_w;
  for (uint32_t k = 0; k < blocks; ++k) {
    groups.push_back(upload_group(pool, w.group.view(), d_dec, "block " + std::to_string(k)));
    d_w.push_back(pool.upload(w.weights));
  }
  std::vector<const uint16_t*> x;
  std::vector<uint16_t*> y;
  std::vector<cuda::GemvMatrix> gm_one, gm_all;
  for (size_t i = 0; i < ms.size(); ++i) {
    x.push_back(pool.upload(make_x(ms[i].cols, 100 + i)));
    y.push_back(pool.alloc<uint16_t>(2ull * ms[i].rows));
    gm_one.push_back({ms[i].rows, ms[i].cols, x.back(), y.back()});
  }
  for (uint32_t k = 0; k < blocks; ++k) gm_all.insert(gm_all.end(), gm_one.begin(), gm_one.end());
  BENCH_CHECK(pool.ok(), "device allocation for the model rows");
  std::vector<cuda::DecodePlan> plans;
  std::vector<void*> ws;
  uint64_t ws_bytes = 0;
  for (uint32_t k = 0; k < blocks; ++k) {
    auto p = cuda::make_decode_plan({&groups[k], 1}, "block");
    BENCH_CHECK(p.is_ok(), p.status().to_string());
    auto b = cuda::gemv_workspace_bytes(*p, gm_one, 1);
    BENCH_CHECK(b.is_ok(), b.status().to_string());
    ws_bytes = *b;
    ws.push_back(pool.alloc(ws_bytes));
    BENCH_CHECK(pool.ok() && cuda::init_workspace(*p, ws.back(), ws_bytes, stream).is_ok(),
               "workspace");
    plans.push_back(std::move(*p));
  }
  auto all = cuda::make_decode_plan(groups, "model");
  BENCH_CHECK(all.is_ok(), all.status().to_string());
  auto all_bytes = cuda::gemv_workspace_bytes(*all, gm_all, 1);
  BENCH_CHECK(all_bytes.is_ok(), all_bytes.status().to_string());
  void* all_ws = pool.alloc(*all_bytes);
  BENCH_CHECK(pool.ok() && cuda::init_workspace(*all, all_ws, *all_bytes, stream).is_ok(),
             "workspace");

  Timing t_cub, t_dec, t_fused_each, t_fused_all;
  BENCH_CHECK(time_runs(stream, warmup, runs,
                       [&] {
                         for (uint32_t k = 0; k < blocks; ++k) {
                           if (!cublas_all(h, d_w[k], ms, x, y, 1)) return false;
                         }
                         return true;
                       },
                       t_cub),
             "model cuBLAS");
  BENCH_CHECK(time_runs(stream, warmup, runs,
                       [&] {
                         for (uint32_t k = 0; k < blocks; ++k) {
                           if (!cuda::launch_decode(plans[k], ws[k], ws_bytes, stream).is_ok() ||
                               !cublas_all(h, d_dec, ms, x, y, 1)) {
                             return false;
                           }
                         }
                         return true;
                       },
                       t_dec),
             "model decode + cuBLAS");
  BENCH_CHECK(time_runs(stream, warmup, runs,
                       [&] {
                         for (uint32_t k = 0; k < blocks; ++k) {
                           if (!cuda::launch_decode_gemv(plans[k], gm_one, 1, ws[k], ws_bytes,
                                                         stream)
                                    .is_ok()) {
                             return false;
                           }
                         }
                         return true;
                       },
                       t_fused_each),
             "model fused, one launch per block");
  for (uint32_t k = 0; k < blocks; ++k) {
    BENCH_CHECK(cuda::read_decode_status(plans[k], ws[k], stream).is_ok(), "model status");
  }
  BENCH_CHECK(time_runs(stream, warmup, runs,
                       [&] {
                         return cuda::launch_decode_gemv(*all, gm_all, 1, all_ws, *all_bytes,
                                                         stream)
                             .is_ok();
                       },
                       t_fused_all),
             "model fused, one launch");
  BENCH_CHECK(cuda::read_decode_status(*all, all_ws, stream).is_ok(), "model status");
  std::printf("Model line: %u blocks at batch 1 (%.1f GB of BF16 weights; ms, median of %d)\n",
              blocks, 2.0 * n_weights * blocks / 1e9, runs);
  std::printf("  cuBLAS BF16 GEMV           %8.3f (min %.3f, max %.3f)\n", t_cub.median, t_cub.min,
              t_cub.max);
  std::printf("  df11 decode + cuBLAS GEMV  %8.3f (min %.3f, max %.3f)\n", t_dec.median, t_dec.min,
              t_dec.max);
  std::printf("  fused, one launch/block    %8.3f (min %.3f, max %.3f)  %.2fx cuBLAS\n",
              t_fused_each.median, t_fused_each.min, t_fused_each.max,
              t_fused_each.median / t_cub.median);
  std::printf("  fused, one launch          %8.3f (min %.3f, max %.3f)  %.2fx cuBLAS\n",
              t_fused_all.median, t_fused_all.min, t_fused_all.max,
              t_fused_all.median / t_cub.median);
  return true;
}

}  // namespace

bool run_gemv_benchmark(const app::BenchWorkload& w, int warmup, int runs,
                        uint32_t model_blocks) {
  std::vector<Matrix> ms;
  uint64_t at = 0;
  for (const auto& m : w.members) {
    ms.push_back({static_cast<uint32_t>(m.rows), static_cast<uint32_t>(m.cols), at});
    at += m.rows * m.cols;
  }
  cublasHandle_t h;
  BENCH_CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cublasSetStream(h, stream);
  bool ok = true;
  {
    Pool pool;
    uint16_t* d_w = pool.upload(w.weights);
    uint16_t* d_dec = pool.alloc<uint16_t>(2 * w.weights.size());
    const cuda::DeviceGroup group = upload_group(pool, w.group.view(), d_dec, "block");
    ok = pool.ok() && batch_rows(w, ms, pool, group, d_w, h, stream, warmup, runs);
  }
  if (ok && model_blocks > 0) ok = model_rows(w, ms, h, stream, warmup, runs, model_blocks);
  cublasDestroy(h);
  cudaStreamDestroy(stream);
  return ok;
}

}  // namespace df11::bench
