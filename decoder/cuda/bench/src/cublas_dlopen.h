// cuBLAS for the benchmarks (gemv_benchmark.cpp, exec_benchmark.cpp), loaded at run time.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <string>

#include "df11/status.h"

namespace df11::cuda::detail {

// The four cuBLAS entry points the benchmark calls, from libcublas loaded at run time: the
// df11 tool and libdf11 then need no CUDA library beside the driver (decoder/cuda/NOTES.md),
// and only `df11 bench gemv` needs cuBLAS installed.
class Cublas {
 public:
  Cublas() = default;
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;
  ~Cublas() {
    if (handle_ != nullptr) destroy_(handle_);
    if (lib_ != nullptr) dlclose(lib_);
  }

  Status load(cudaStream_t stream) {
    const std::string names[2] = {"libcublas.so." + std::to_string(CUBLAS_VER_MAJOR),
                                  "libcublas.so"};
    for (const std::string& n : names) {
      lib_ = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib_ != nullptr) break;
    }
    if (lib_ == nullptr) {
      const std::string what = "cuBLAS (" + names[0] + ") is not installed";
      return Status(ErrorCode::kUnsupported, what + ": the GEMV benchmark compares against it");
    }
    create_ = reinterpret_cast<Create>(dlsym(lib_, "cublasCreate_v2"));
    destroy_ = reinterpret_cast<Destroy>(dlsym(lib_, "cublasDestroy_v2"));
    set_stream_ = reinterpret_cast<SetStream>(dlsym(lib_, "cublasSetStream_v2"));
    gemm_ = reinterpret_cast<GemmEx>(dlsym(lib_, "cublasGemmEx"));
    if (create_ == nullptr || destroy_ == nullptr || set_stream_ == nullptr || gemm_ == nullptr) {
      return Status(ErrorCode::kUnsupported, "libcublas lacks cublasGemmEx or its companions");
    }
    if (create_(&handle_) != CUBLAS_STATUS_SUCCESS) {
      handle_ = nullptr;
      return Status(ErrorCode::kCuda, "cublasCreate failed");
    }
    if (set_stream_(handle_, stream) != CUBLAS_STATUS_SUCCESS) {
      return Status(ErrorCode::kCuda, "cublasSetStream failed");
    }
    return Status::ok();
  }

  // y = W x: W row-major [rows, cols] is column-major W^T (ld = cols); x column-major
  // [cols, n], y column-major [rows, n]. FP32 accumulation, BF16 in and out.
  Status gemv(const uint16_t* d_w, uint32_t rows, uint32_t cols, const uint16_t* d_x, uint16_t* d_y,
              uint32_t n) const {
    const float alpha = 1.0f, beta = 0.0f;
    const cublasStatus_t st =
        gemm_(handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(rows), static_cast<int>(n),
              static_cast<int>(cols), &alpha, d_w, CUDA_R_16BF, static_cast<int>(cols), d_x,
              CUDA_R_16BF, static_cast<int>(cols), &beta, d_y, CUDA_R_16BF, static_cast<int>(rows),
              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) {
      return Status(ErrorCode::kCuda, "cublasGemmEx failed (status " + std::to_string(st) + ")");
    }
    return Status::ok();
  }

 private:
  using Create = cublasStatus_t (*)(cublasHandle_t*);
  using Destroy = cublasStatus_t (*)(cublasHandle_t);
  using SetStream = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void*, const void*, cudaDataType, int, const void*,
                                    cudaDataType, int, const void*, void*, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t);
  void* lib_ = nullptr;
  Create create_ = nullptr;
  Destroy destroy_ = nullptr;
  SetStream set_stream_ = nullptr;
  GemmEx gemm_ = nullptr;
  cublasHandle_t handle_ = nullptr;
};

}  // namespace df11::cuda::detail
