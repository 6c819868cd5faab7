// The compact execution layout on the GPU against cuBLAS and the 12-bit layout, one
// Llama-3.1-8B block (q, k, v, o, gate, up, down; N(0, 0.02^2) weights, the exec_size ones),
// all in one run: the layout -> BF16 decode, then per batch Y = X W^T for the whole block as
// cuBLAS BF16 GEMM (cublasGemmEx, FP32 compute), the 12-bit layout's fused GEMM
// (launch_exec_gemm) and the compact layout's (launch_compact_gemm), one launch per matrix
// each, and both fused GEMMs again with the whole block in one call. CUDA events around the block's
// launches after warm-up, median of --runs. Every fused output is checked bit for bit against
// launch_bf16_reference_gemm first (exit 1 otherwise). The compact layout is timed too as a
// model calls it (q, k and v in one call, o, gate and up in one call, down), and with each of
// its kernel choices (CompactGemmKernel) per matrix, in one call and in the model's calls. X is
// N(0, 1), not zeros. Batches above the compact layout's 32 time the 12-bit layout alone, beside
// its decode to BF16 + cuBLAS (the path a framework takes where the fused GEMM is slower). Prints a
// text report, or with --json one JSON document.
//
//   compact_bench [--runs N] [--warmup N] [--batch 1,2,4,8,16,32,64,128,256] [--json]
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "df11/cuda_compact.h"
#include "df11/cuda_exec.h"
#include "df11/exec_compact_encode.h"
#include "df11/exec_encode.h"

namespace {

uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "compact_bench: %s failed\n", what);
  std::exit(1);
}

template <typename T>
T* device_copy(const std::vector<T>& v) {
  void* d = nullptr;
  check(cudaMalloc(&d, sizeof(T) * std::max<size_t>(v.size(), 1)) == cudaSuccess, "cudaMalloc");
  check(cudaMemcpy(d, v.data(), sizeof(T) * v.size(), cudaMemcpyHostToDevice) == cudaSuccess,
        "cudaMemcpy");
  return static_cast<T*>(d);
}

template <typename T>
std::vector<T> host_copy(const T* d, size_t n) {
  std::vector<T> v(n);
  check(cudaMemcpy(v.data(), d, sizeof(T) * n, cudaMemcpyDeviceToHost) == cudaSuccess,
        "cudaMemcpy back");
  return v;
}

struct Matrix {
  uint32_t rows, cols;
  uint16_t* w;  // BF16 on the device
  df11::cuda::CompactMatrix compact;
  df11::cuda::ExecMatrix exec;
  uint64_t compact_bytes, exec_bytes;
};

// Median of `runs` timings (after `warmup`) of `body`, in ms, CUDA events around it.
double median_ms(uint32_t warmup, uint32_t runs, const std::function<void()>& body) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> ms;
  for (uint32_t r = 0; r < warmup + runs; ++r) {
    cudaEventRecord(e0);
    body();
    cudaEventRecord(e1);
    check(cudaEventSynchronize(e1) == cudaSuccess, "a timed run");
    float t = 0;
    cudaEventElapsedTime(&t, e0, e1);
    if (r >= warmup) ms.push_back(t);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t runs = 50, warmup = 10;
  bool json = false;
  std::vector<uint32_t> batches = {1, 2, 4, 8, 16, 32};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--runs" && i + 1 < argc) {
      runs = static_cast<uint32_t>(std::max(1, std::atoi(argv[++i])));
    } else if (a == "--warmup" && i + 1 < argc) {
      warmup = static_cast<uint32_t>(std::max(0, std::atoi(argv[++i])));
    } else if (a == "--batch" && i + 1 < argc) {
      batches.clear();
      for (const char* p = argv[++i]; *p != 0;) {
        char* end = nullptr;
        const long b = std::strtol(p, &end, 10);
        check(end != p && b >= 1 && b <= df11::cuda::kExecMaxBatch, "--batch (1..256, commas)");
        batches.push_back(static_cast<uint32_t>(b));
        p = *end == ',' ? end + 1 : end;
      }
    } else {
      std::fprintf(stderr, "usage: compact_bench [--runs N] [--warmup N] [--batch 1,8] [--json]\n");
      return 2;
    }
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0) == cudaSuccess, "cudaGetDeviceProperties");
  const uint32_t shapes[7][2] = {{4096, 4096},  {1024, 4096},  {1024, 4096}, {4096, 4096},
                                 {14336, 4096}, {14336, 4096}, {4096, 14336}};
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<Matrix> block;
  std::vector<uint32_t*> tables;
  uint64_t weights = 0, compact_bytes = 0, exec_bytes = 0, max_rows = 0, max_cols = 0;
  for (const auto& s : shapes) {
    Matrix m{s[0], s[1], nullptr, {}, {}, 0, 0};
    std::vector<uint16_t> w(uint64_t{m.rows} * m.cols);
    for (uint16_t& x : w) x = to_bf16(dist(rng));
    const auto cb = df11::encode_compact_matrix(w, m.rows, m.cols, "bench");
    const auto eb = df11::encode_exec_matrix(w, m.rows, m.cols, "bench");
    check(cb.is_ok() && eb.is_ok(), "encoding");
    const df11::CompactGeometry g = *df11::compact_geometry(m.rows, m.cols, "bench");
    const df11::CompactCode code = *df11::compact_code(
        std::span<const uint8_t, df11::kCompactSymbols>(cb->data() + g.lengths, 256), "bench");
    tables.push_back(device_copy(df11::cuda::compact_decode_table(code)));
    m.w = device_copy(w);
    m.compact.d_blob = device_copy(*cb);
    m.compact.d_table = tables.back();
    m.compact.rows = m.rows;
    m.compact.cols = m.cols;
    m.compact.stream_bits = df11::read_compact_header(*cb, "bench")->stream_bits;
    m.exec.d_blob = device_copy(*eb);
    m.exec.bytes = eb->size();
    m.exec.rows = m.rows;
    m.exec.cols = m.cols;
    m.exec.n_exceptions = df11::read_exec_header(*eb, "bench")->n_exceptions;
    m.compact_bytes = cb->size();
    m.exec_bytes = eb->size();
    weights += w.size();
    compact_bytes += cb->size();
    exec_bytes += eb->size();
    max_rows = std::max<uint64_t>(max_rows, m.rows);
    max_cols = std::max<uint64_t>(max_cols, m.cols);
    block.push_back(m);
  }
  const uint32_t max_batch = *std::max_element(batches.begin(), batches.end());
  std::vector<uint16_t> x(max_batch * max_cols);
  std::normal_distribution<float> xdist(0.0f, 1.0f);
  for (uint16_t& v : x) v = to_bf16(xdist(rng));
  uint16_t* d_x = device_copy(x);
  uint16_t *d_y = nullptr, *d_ref = nullptr, *d_out = nullptr;
  uint32_t* d_status = nullptr;
  void* d_ws = nullptr;
  check(cudaMalloc(reinterpret_cast<void**>(&d_y), 2 * max_batch * max_rows) == cudaSuccess &&
            cudaMalloc(reinterpret_cast<void**>(&d_ref), 2 * max_batch * max_rows) == cudaSuccess &&
            cudaMalloc(reinterpret_cast<void**>(&d_out), 2 * max_rows * max_cols) == cudaSuccess &&
            cudaMalloc(reinterpret_cast<void**>(&d_status), 4) == cudaSuccess &&
            cudaMalloc(&d_ws, df11::cuda::kExecStatusBytes) == cudaSuccess,
        "cudaMalloc");
  check(cudaMemset(d_status, 0, 4) == cudaSuccess, "cudaMemset");
  std::vector<uint16_t*> d_ys;  // one Y per matrix, for the calls of the whole block
  for (const Matrix& m : block) {
    void* d = nullptr;
    check(cudaMalloc(&d, 2 * uint64_t{max_batch} * m.rows) == cudaSuccess, "cudaMalloc");
    d_ys.push_back(static_cast<uint16_t*>(d));
  }
  cublasHandle_t handle;
  check(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS, "cublasCreate");

  // The decode to BF16, checked first.
  for (const Matrix& m : block) {
    check(df11::cuda::launch_compact_to_bf16(m.compact, d_out, d_status, nullptr).is_ok(),
          "launch_compact_to_bf16");
    check(host_copy(d_out, uint64_t{m.rows} * m.cols) == host_copy(m.w, uint64_t{m.rows} * m.cols),
          "the decode's output");
  }
  const double decode_ms = median_ms(warmup, runs, [&] {
    for (const Matrix& m : block) {
      (void)df11::cuda::launch_compact_to_bf16(m.compact, d_out, d_status, nullptr);
    }
  });

  struct Row {
    uint32_t batch;
    double cublas, exec, compact, exec_one, compact_one;  // *_one: the block in one call
    double exec_decode;  // the 12-bit layout decoded to BF16, then cuBLAS, matrix by matrix
    // The compact layout's calls as a model makes them (q, k, v in one call, o, gate and up in
    // one call, down), and per kernel choice [plain, helpers] per matrix, one call, model calls.
    double compact_model;
    double by_kernel[2][3];
    // Each of the model's calls alone (q/k/v, o, gate/up, down) per kernel choice.
    double by_site[2][4];
  };
  std::vector<Row> rows;
  const float alpha = 1.0f, beta = 0.0f;
  for (const uint32_t batch : batches) {
    auto cublas = [&] {
      for (const Matrix& m : block) {
        const auto st = cublasGemmEx(
            handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(m.rows), static_cast<int>(batch),
            static_cast<int>(m.cols), &alpha, m.w, CUDA_R_16BF, static_cast<int>(m.cols), d_x,
            CUDA_R_16BF, static_cast<int>(m.cols), &beta, d_y, CUDA_R_16BF,
            static_cast<int>(m.rows), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        check(st == CUBLAS_STATUS_SUCCESS, "cublasGemmEx");
      }
    };
    auto exec = [&](uint16_t* y) {
      for (const Matrix& m : block) {
        const df11::cuda::ExecGemm g{m.exec, d_x, y};
        (void)df11::cuda::launch_exec_gemm(std::span(&g, 1), batch, d_ws,
                                           df11::cuda::kExecStatusBytes, nullptr,
                                           df11::cuda::ExecStatusUse::kKeep);
      }
    };
    std::vector<df11::cuda::CompactGemm> compact_all;  // the block in one call
    std::vector<df11::cuda::ExecGemm> exec_all;
    for (size_t i = 0; i < block.size(); ++i) {
      df11::cuda::CompactGemm g;
      g.w = block[i].compact;
      g.d_x = d_x;
      g.d_y = d_ys[i];
      compact_all.push_back(g);
      exec_all.push_back(df11::cuda::ExecGemm{block[i].exec, d_x, d_ys[i]});
    }
    auto compact = [&](uint16_t* y) {
      for (const df11::cuda::CompactGemm& one : compact_all) {
        df11::cuda::CompactGemm g = one;
        g.d_y = y;
        (void)df11::cuda::launch_compact_gemm(std::span(&g, 1), batch, d_status, nullptr);
      }
    };
    // Both fused GEMMs against the reference, matrix by matrix.
    for (const Matrix& m : block) {
      const uint64_t n = uint64_t{batch} * m.rows;
      const df11::cuda::Bf16Gemm ref{m.w, m.rows, m.cols, d_x, d_ref};
      check(df11::cuda::launch_bf16_reference_gemm(std::span(&ref, 1), batch, nullptr).is_ok(),
            "reference GEMM");
      const std::vector<uint16_t> want = host_copy(d_ref, n);
      df11::cuda::CompactGemm cg;
      cg.w = m.compact;
      cg.d_x = d_x;
      cg.d_y = d_y;
      const bool compact_too = batch <= df11::cuda::kCompactMaxBatch;
      if (compact_too) {
        check(df11::cuda::launch_compact_gemm(std::span(&cg, 1), batch, d_status, nullptr).is_ok(),
              "launch_compact_gemm");
        check(host_copy(d_y, n) == want, "compact GEMM == reference GEMM");
        check(df11::cuda::launch_compact_gemm(compact_all, batch, d_status, nullptr).is_ok(),
              "launch_compact_gemm of the block");
        check(host_copy(d_ys[static_cast<size_t>(&m - block.data())], n) == want,
              "compact GEMM of the block in one call == reference GEMM");
      }
      const df11::cuda::ExecGemm eg{m.exec, d_x, d_y};
      check(df11::cuda::launch_exec_gemm(std::span(&eg, 1), batch, d_ws,
                                         df11::cuda::kExecStatusBytes, nullptr)
                .is_ok(),
            "launch_exec_gemm");
      check(host_copy(d_y, n) == want, "12-bit GEMM == reference GEMM");
      check(
          df11::cuda::launch_exec_gemm(exec_all, batch, d_ws, df11::cuda::kExecStatusBytes, nullptr)
              .is_ok(),
          "launch_exec_gemm of the block");
      check(host_copy(d_ys[static_cast<size_t>(&m - block.data())], n) == want,
            "12-bit GEMM of the block in one call == reference GEMM");
    }
    auto exec_decode = [&] {
      for (const Matrix& m : block) {
        const df11::cuda::ExecToBf16 d{m.exec, d_out};
        (void)df11::cuda::launch_exec_to_bf16(std::span(&d, 1), d_ws, df11::cuda::kExecStatusBytes,
                                              nullptr, df11::cuda::ExecStatusUse::kKeep);
        const auto st = cublasGemmEx(
            handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(m.rows), static_cast<int>(batch),
            static_cast<int>(m.cols), &alpha, d_out, CUDA_R_16BF, static_cast<int>(m.cols), d_x,
            CUDA_R_16BF, static_cast<int>(m.cols), &beta, d_y, CUDA_R_16BF,
            static_cast<int>(m.rows), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        check(st == CUBLAS_STATUS_SUCCESS, "cublasGemmEx");
      }
    };
    const bool compact_too = batch <= df11::cuda::kCompactMaxBatch;
    Row r{batch, median_ms(warmup, runs, cublas), 0, 0, 0, 0, 0, 0, {}, {}};
    r.exec = median_ms(warmup, runs, [&] { exec(d_y); });
    r.compact = compact_too ? median_ms(warmup, runs, [&] { compact(d_y); }) : 0;
    r.exec_one = median_ms(warmup, runs, [&] {
      (void)df11::cuda::launch_exec_gemm(exec_all, batch, d_ws, df11::cuda::kExecStatusBytes,
                                         nullptr, df11::cuda::ExecStatusUse::kKeep);
    });
    r.compact_one = compact_too ? median_ms(warmup, runs,
                                            [&] {
                                              (void)df11::cuda::launch_compact_gemm(
                                                  compact_all, batch, d_status, nullptr);
                                            })
                                : 0;
    r.exec_decode = median_ms(warmup, runs, exec_decode);
    r.compact_model = 0;
    for (auto& k : r.by_kernel) k[0] = k[1] = k[2] = 0;
    for (auto& k : r.by_site) k[0] = k[1] = k[2] = k[3] = 0;
    if (compact_too) {
      // Each way of calling, each kernel choice: outputs checked against the reference, then
      // timed.
      const std::vector<std::vector<size_t>> per_matrix = {{0}, {1}, {2}, {3}, {4}, {5}, {6}};
      const std::vector<std::vector<size_t>> one_call = {{0, 1, 2, 3, 4, 5, 6}};
      const std::vector<std::vector<size_t>> model_calls = {{0, 1, 2}, {3}, {4, 5}, {6}};
      auto calls = [&](const std::vector<std::vector<size_t>>& groups,
                       df11::cuda::CompactGemmKernel kernel) {
        for (const auto& group : groups) {
          std::vector<df11::cuda::CompactGemm> gs;
          for (const size_t i : group) gs.push_back(compact_all[i]);
          (void)df11::cuda::launch_compact_gemm(gs, batch, d_status, nullptr, kernel);
        }
      };
      const df11::cuda::CompactGemmKernel kernels[3] = {df11::cuda::CompactGemmKernel::kAuto,
                                                        df11::cuda::CompactGemmKernel::kPlain,
                                                        df11::cuda::CompactGemmKernel::kHelpers};
      const std::vector<std::vector<size_t>>* ways[3] = {&per_matrix, &one_call, &model_calls};
      for (const auto kernel : kernels) {
        for (const auto* way : ways) {
          for (size_t i = 0; i < block.size(); ++i) {
            check(cudaMemset(d_ys[i], 0xA5, 2 * uint64_t{batch} * block[i].rows) == cudaSuccess,
                  "cudaMemset");
          }
          calls(*way, kernel);
          for (size_t i = 0; i < block.size(); ++i) {
            const Matrix& m = block[i];
            const df11::cuda::Bf16Gemm ref{m.w, m.rows, m.cols, d_x, d_ref};
            check(
                df11::cuda::launch_bf16_reference_gemm(std::span(&ref, 1), batch, nullptr).is_ok(),
                "reference GEMM");
            const uint64_t n = uint64_t{batch} * m.rows;
            check(host_copy(d_ys[i], n) == host_copy(d_ref, n),
                  "compact GEMM (each call and kernel choice) == reference GEMM");
          }
        }
      }
      r.compact_model = median_ms(warmup, runs, [&] { calls(model_calls, kernels[0]); });
      for (uint32_t k = 0; k < 2; ++k) {
        for (uint32_t w = 0; w < 3; ++w) {
          r.by_kernel[k][w] = median_ms(warmup, runs, [&] { calls(*ways[w], kernels[1 + k]); });
        }
        for (uint32_t c = 0; c < 4; ++c) {
          const std::vector<std::vector<size_t>> site = {model_calls[c]};
          r.by_site[k][c] = median_ms(warmup, runs, [&] { calls(site, kernels[1 + k]); });
        }
      }
    }
    rows.push_back(r);
  }
  check(host_copy(d_status, 1)[0] == 0, "no corrupt tile flagged");

  const double bits_compact =
      8.0 * static_cast<double>(compact_bytes) / static_cast<double>(weights);
  const double bits_exec = 8.0 * static_cast<double>(exec_bytes) / static_cast<double>(weights);
  if (json) {
    std::printf("{\"bench\": \"compact_bench\", \"gpu\": \"%s\", \"runs\": %u, \"warmup\": %u,\n",
                prop.name, runs, warmup);
    std::printf(
        " \"block_weights\": %llu, \"bits_per_weight\": {\"compact\": %.4f, \"exec12\": %.4f},\n",
        static_cast<unsigned long long>(weights), bits_compact, bits_exec);
    std::printf(" \"decode_to_bf16_ms\": %.5f,\n \"gemm\": [\n", decode_ms);
    auto opt = [](double v) { return v > 0 ? std::to_string(v) : std::string("null"); };
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::printf(
          "  {\"batch\": %u, \"cublas_ms\": %.5f, \"exec12_ms\": %s, \"compact_ms\": %s, "
          "\"exec12_one_call_ms\": %s, \"compact_one_call_ms\": %s, "
          "\"exec12_decode_cublas_ms\": %.5f, \"exec12_vs_cublas\": %.4f, "
          "\"exec12_one_call_vs_cublas\": %.4f, \"compact_vs_cublas\": %s, "
          "\"compact_one_call_vs_cublas\": %s, \"compact_model_calls_ms\": %s, "
          "\"compact_model_calls_vs_cublas\": %s, \"compact_kernels_ms\": "
          "{\"plain\": [%s, %s, %s], \"helpers\": [%s, %s, %s]}, \"compact_call_sites_ms\": "
          "{\"plain\": [%s, %s, %s, %s], \"helpers\": [%s, %s, %s, %s]}}%s\n",
          r.batch, r.cublas, opt(r.exec).c_str(), opt(r.compact).c_str(), opt(r.exec_one).c_str(),
          opt(r.compact_one).c_str(), r.exec_decode, r.exec / r.cublas, r.exec_one / r.cublas,
          opt(r.compact / r.cublas).c_str(), opt(r.compact_one / r.cublas).c_str(),
          opt(r.compact_model).c_str(), opt(r.compact_model / r.cublas).c_str(),
          opt(r.by_kernel[0][0]).c_str(), opt(r.by_kernel[0][1]).c_str(),
          opt(r.by_kernel[0][2]).c_str(), opt(r.by_kernel[1][0]).c_str(),
          opt(r.by_kernel[1][1]).c_str(), opt(r.by_kernel[1][2]).c_str(),
          opt(r.by_site[0][0]).c_str(), opt(r.by_site[0][1]).c_str(), opt(r.by_site[0][2]).c_str(),
          opt(r.by_site[0][3]).c_str(), opt(r.by_site[1][0]).c_str(), opt(r.by_site[1][1]).c_str(),
          opt(r.by_site[1][2]).c_str(), opt(r.by_site[1][3]).c_str(),
          i + 1 < rows.size() ? "," : "");
    }
    std::printf(" ]}\n");
    return 0;
  }
  // A time and its ratio to `base`, or a dash where it was not measured.
  const auto cell_of = [](double v, double base) {
    char buf[40];
    if (v > 0) {
      std::snprintf(buf, sizeof buf, "%7.4f (%.3fx)", v, v / base);
    } else {
      std::snprintf(buf, sizeof buf, "%16s", "-");
    }
    return std::string(buf);
  };
  std::printf("%s; one Llama-3.1-8B block, median of %u runs after %u\n", prop.name, runs, warmup);
  std::printf("bits per weight: compact %.4f, 12-bit %.4f\n", bits_compact, bits_exec);
  std::printf("compact -> BF16: %.4f ms, %.3f TB/s of BF16\n", decode_ms,
              2.0 * static_cast<double>(weights) / (decode_ms * 1e-3) / 1e12);
  std::printf("ms per block (x cuBLAS); \"one call\": the block's matrices in one call\n");
  std::printf(
      "batch     cuBLAS            12-bit           compact  12-bit, one call  "
      "compact, one call  12-bit decode + cuBLAS\n");
  for (const Row& r : rows) {
    auto cell = [&](double v) { return cell_of(v, r.cublas); };
    std::printf("%5u  %9.4f  %s  %s  %s  %s  %s\n", r.batch, r.cublas, cell(r.exec).c_str(),
                cell(r.compact).c_str(), cell(r.exec_one).c_str(), cell(r.compact_one).c_str(),
                cell(r.exec_decode).c_str());
  }
  std::printf(
      "\ncompact, ms per block (x cuBLAS): the automatic kernel choice in a model's calls (q, k, v "
      "in one, o, gate and up in one, down), and each kernel choice\n");
  std::printf(
      "batch  model calls       plain: per matrix  one call          model calls       "
      "helpers: per matrix  one call          model calls\n");
  for (const Row& r : rows) {
    auto cell = [&](double v) { return cell_of(v, r.cublas); };
    std::printf("%5u  %s  %s  %s  %s  %s  %s  %s\n", r.batch, cell(r.compact_model).c_str(),
                cell(r.by_kernel[0][0]).c_str(), cell(r.by_kernel[0][1]).c_str(),
                cell(r.by_kernel[0][2]).c_str(), cell(r.by_kernel[1][0]).c_str(),
                cell(r.by_kernel[1][1]).c_str(), cell(r.by_kernel[1][2]).c_str());
  }
  std::printf("\ncompact, ms per call site alone, plain / helpers kernel\n");
  std::printf("batch  q, k, v            o                  gate, up           down\n");
  for (const Row& r : rows) {
    std::printf("%5u", r.batch);
    for (uint32_t c = 0; c < 4; ++c) {
      std::printf("  %7.4f / %7.4f", r.by_site[0][c], r.by_site[1][c]);
    }
    std::printf("\n");
  }
  return 0;
}
