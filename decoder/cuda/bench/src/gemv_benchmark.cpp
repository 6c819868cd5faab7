// run_gemv_benchmark() (cuda_gemv_benchmark.h): cuBLAS, decode + cuBLAS, the fused
// decode+GEMV and the reference GEMV on one group at several batches, then the model line.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "bench_timing.h"
#include "benchmark_args.h"
#include "bf16_inputs.h"
#include "cublas_dlopen.h"
#include "cuda_error.h"
#include "cuda_gemv_benchmark.h"
#include "device_buffer.h"
#include "df11/cuda_decoder.h"
#include "df11/cuda_gemv.h"

namespace df11::cuda {
namespace {

using detail::Cublas;
using detail::DeviceBuffer;
using detail::DeviceGroupCopy;
using detail::OwnedStream;
using detail::time_runs;

std::string str(uint64_t v) { return std::to_string(v); }

// BF16 ulps between two patterns (ordered as sign-magnitude integers).
uint32_t ulp_distance(uint16_t a, uint16_t b) {
  const auto key = [](uint16_t v) {
    return (v & 0x8000) ? -static_cast<int32_t>(v & 0x7FFF) : static_cast<int32_t>(v & 0x7FFF);
  };
  const int32_t d = key(a) - key(b);
  return static_cast<uint32_t>(d < 0 ? -d : d);
}

// Device buffers freed together.
class Pool {
 public:
  Result<uint16_t*> alloc(uint64_t bytes, const std::string& what) {
    bufs_.emplace_back();
    DF11_RETURN_IF_ERROR(bufs_.back().allocate(bytes, what));
    return bufs_.back().get<uint16_t>();
  }
  Result<uint16_t*> upload(const std::vector<uint16_t>& v, const std::string& what) {
    bufs_.emplace_back();
    DF11_RETURN_IF_ERROR(bufs_.back().upload(
        std::span(reinterpret_cast<const uint8_t*>(v.data()), 2 * v.size()), what));
    return bufs_.back().get<uint16_t>();
  }

 private:
  std::vector<DeviceBuffer> bufs_;
};

Result<std::vector<uint16_t>> download(const uint16_t* d, uint64_t count) {
  std::vector<uint16_t> h(count);
  DF11_CUDA_RETURN_IF_ERROR(cudaMemcpy(h.data(), d, 2 * count, cudaMemcpyDeviceToHost),
                            "cudaMemcpy of a GEMV output");
  return h;
}

struct Setup {
  cudaStream_t stream = nullptr;
  const Cublas* cublas = nullptr;
  std::span<const GemvBenchmarkShape> shapes;
  std::vector<uint64_t> offsets;  // first weight of each member in the group
  int warmup = 0, runs = 0;
};

// Every member through cuBLAS from `d_w` (the group's BF16 weights).
Status cublas_all(const Setup& s, const uint16_t* d_w, const std::vector<uint16_t*>& x_cm,
                  const std::vector<uint16_t*>& y_cm, uint32_t n) {
  for (size_t i = 0; i < s.shapes.size(); ++i) {
    DF11_RETURN_IF_ERROR(s.cublas->gemv(d_w + s.offsets[i], s.shapes[i].rows, s.shapes[i].cols,
                                        x_cm[i], y_cm[i], n));
  }
  return Status::ok();
}

Result<GemvBatchRow> batch_row(const Setup& s, DecodePlan& plan, const DeviceGroup& group,
                               const uint16_t* d_w, uint32_t n) {
  GemvBatchRow row;
  row.batch = n;
  Pool pool;
  const size_t count = s.shapes.size();
  // x row-major [cols, n] for df11, the same values column-major for cuBLAS.
  std::vector<uint16_t*> x(count), x_cm(count), y_cm(count), y_fused(count), y_ref(count);
  std::vector<GemvMatrix> gm(count);
  uint64_t ref_ws = 0;
  for (size_t i = 0; i < count; ++i) {
    const uint32_t rows = s.shapes[i].rows, cols = s.shapes[i].cols;
    const std::vector<uint16_t> xv = support::deterministic_bf16(uint64_t{cols} * n, 7 * n + i);
    std::vector<uint16_t> xt(xv.size());
    for (uint64_t c = 0; c < cols; ++c) {
      for (uint32_t j = 0; j < n; ++j) xt[j * uint64_t{cols} + c] = xv[c * n + j];
    }
    DF11_ASSIGN_OR_RETURN(x[i], pool.upload(xv, "x"));
    DF11_ASSIGN_OR_RETURN(x_cm[i], pool.upload(xt, "x"));
    DF11_ASSIGN_OR_RETURN(y_cm[i], pool.alloc(2ull * rows * n, "y"));
    DF11_ASSIGN_OR_RETURN(y_fused[i], pool.alloc(2ull * rows * n, "y"));
    DF11_ASSIGN_OR_RETURN(y_ref[i], pool.alloc(2ull * rows * n, "y"));
    gm[i] = GemvMatrix{rows, cols, x[i], y_fused[i]};
    ref_ws = std::max<uint64_t>(ref_ws, reference_gemv_workspace_bytes(rows, cols, n));
  }
  DF11_ASSIGN_OR_RETURN(const size_t ws_bytes, gemv_workspace_bytes(plan, gm, n));
  DeviceBuffer ws, rws;
  DF11_RETURN_IF_ERROR(ws.allocate(ws_bytes, "GEMV workspace"));
  DF11_RETURN_IF_ERROR(rws.allocate(ref_ws, "reference GEMV workspace"));
  DF11_RETURN_IF_ERROR(init_workspace(plan, ws.get(), ws_bytes, s.stream));

  const auto reference_all = [&](const uint16_t* weights) -> Status {
    for (size_t i = 0; i < count; ++i) {
      const GemvMatrix m{s.shapes[i].rows, s.shapes[i].cols, x[i], y_ref[i]};
      DF11_RETURN_IF_ERROR(
          launch_reference_gemv(weights + s.offsets[i], m, n, rws.get(), ref_ws, s.stream));
    }
    return Status::ok();
  };
  DF11_ASSIGN_OR_RETURN(row.cublas, time_runs(s.stream, s.warmup, s.runs,
                                              [&] { return cublas_all(s, d_w, x_cm, y_cm, n); }));
  DF11_ASSIGN_OR_RETURN(row.decode_cublas, time_runs(s.stream, s.warmup, s.runs, [&]() -> Status {
                          DF11_RETURN_IF_ERROR(launch_decode(plan, ws.get(), ws_bytes, s.stream));
                          return cublas_all(s, group.d_out, x_cm, y_cm, n);
                        }));
  DF11_RETURN_IF_ERROR(read_decode_status(plan, ws.get(), s.stream));
  DF11_ASSIGN_OR_RETURN(row.fused, time_runs(s.stream, s.warmup, s.runs, [&] {
                          return launch_decode_gemv(plan, gm, n, ws.get(), ws_bytes, s.stream);
                        }));
  DF11_RETURN_IF_ERROR(read_decode_status(plan, ws.get(), s.stream));
  DF11_ASSIGN_OR_RETURN(row.reference,
                        time_runs(s.stream, s.warmup, s.runs, [&] { return reference_all(d_w); }));
  // Exactness: the reference on the GPU-decoded weights (group.d_out, written by the
  // decode + cuBLAS runs), then bit for bit; cuBLAS again from the BF16 weights.
  DF11_RETURN_IF_ERROR(reference_all(group.d_out));
  DF11_RETURN_IF_ERROR(cublas_all(s, d_w, x_cm, y_cm, n));
  DF11_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s.stream), "GEMV checks");
  row.fused_equals_reference = true;
  uint64_t differ = 0, total = 0;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t rows = s.shapes[i].rows;
    DF11_ASSIGN_OR_RETURN(const std::vector<uint16_t> f, download(y_fused[i], rows * n));
    DF11_ASSIGN_OR_RETURN(const std::vector<uint16_t> r, download(y_ref[i], rows * n));
    DF11_ASSIGN_OR_RETURN(const std::vector<uint16_t> c, download(y_cm[i], rows * n));
    row.fused_equals_reference = row.fused_equals_reference && f == r;
    for (uint64_t k = 0; k < rows; ++k) {
      for (uint32_t j = 0; j < n; ++j) {
        const uint32_t d = ulp_distance(f[k * n + j], c[j * rows + k]);
        row.max_ulp_vs_cublas = std::max(row.max_ulp_vs_cublas, d);
        differ += d != 0;
        ++total;
      }
    }
  }
  row.differ_vs_cublas = total ? static_cast<double>(differ) / static_cast<double>(total) : 0;
  return row;
}

// Batch 1 over `blocks` device copies of the group.
Status model_line(const Setup& s, const GroupView& g, const DeviceGroupCopy& input,
                  const DeviceBuffer& d_w, uint32_t blocks, GemvModelLine& line) {
  line.blocks = blocks;
  const uint64_t n_weights = g.n_elements();
  DeviceBuffer d_dec;  // reused by decode + cuBLAS
  DF11_RETURN_IF_ERROR(d_dec.allocate(2 * n_weights, "model: decoded block"));
  std::vector<DeviceGroupCopy> copies(blocks);
  std::vector<DeviceBuffer> weights(blocks);
  std::vector<DeviceGroup> groups;
  for (uint32_t k = 0; k < blocks; ++k) {
    const std::string name = "block " + str(k);
    DF11_RETURN_IF_ERROR(copies[k].clone(input, name));
    DF11_RETURN_IF_ERROR(weights[k].clone(d_w, name + ": BF16 weights"));
    groups.push_back(copies[k].describe(g, d_dec.get<uint16_t>(), name));
  }
  Pool pool;
  std::vector<uint16_t*> x, y;
  std::vector<GemvMatrix> gm_one, gm_all;
  for (size_t i = 0; i < s.shapes.size(); ++i) {
    DF11_ASSIGN_OR_RETURN(uint16_t * xi,
                          pool.upload(support::deterministic_bf16(s.shapes[i].cols, 100 + i), "x"));
    DF11_ASSIGN_OR_RETURN(uint16_t * yi, pool.alloc(2ull * s.shapes[i].rows, "y"));
    x.push_back(xi);
    y.push_back(yi);
    gm_one.push_back({s.shapes[i].rows, s.shapes[i].cols, xi, yi});
  }
  for (uint32_t k = 0; k < blocks; ++k) gm_all.insert(gm_all.end(), gm_one.begin(), gm_one.end());
  std::vector<DecodePlan> plans;
  std::vector<DeviceBuffer> ws(blocks);
  size_t ws_bytes = 0;
  for (uint32_t k = 0; k < blocks; ++k) {
    DF11_ASSIGN_OR_RETURN(DecodePlan p, make_decode_plan({&groups[k], 1}, "model block"));
    DF11_ASSIGN_OR_RETURN(ws_bytes, gemv_workspace_bytes(p, gm_one, 1));
    DF11_RETURN_IF_ERROR(ws[k].allocate(ws_bytes, "model: workspace"));
    DF11_RETURN_IF_ERROR(init_workspace(p, ws[k].get(), ws_bytes, s.stream));
    plans.push_back(std::move(p));
  }
  DF11_ASSIGN_OR_RETURN(DecodePlan all, make_decode_plan(groups, "model"));
  DF11_ASSIGN_OR_RETURN(const size_t all_bytes, gemv_workspace_bytes(all, gm_all, 1));
  DeviceBuffer all_ws;
  DF11_RETURN_IF_ERROR(all_ws.allocate(all_bytes, "model: workspace"));
  DF11_RETURN_IF_ERROR(init_workspace(all, all_ws.get(), all_bytes, s.stream));

  DF11_ASSIGN_OR_RETURN(
      line.cublas, time_runs(s.stream, s.warmup, s.runs, [&]() -> Status {
        for (uint32_t k = 0; k < blocks; ++k) {
          DF11_RETURN_IF_ERROR(cublas_all(s, weights[k].get<uint16_t>(), x, y, 1));
        }
        return Status::ok();
      }));
  DF11_ASSIGN_OR_RETURN(
      line.decode_cublas, time_runs(s.stream, s.warmup, s.runs, [&]() -> Status {
        for (uint32_t k = 0; k < blocks; ++k) {
          DF11_RETURN_IF_ERROR(launch_decode(plans[k], ws[k].get(), ws_bytes, s.stream));
          DF11_RETURN_IF_ERROR(cublas_all(s, d_dec.get<uint16_t>(), x, y, 1));
        }
        return Status::ok();
      }));
  for (uint32_t k = 0; k < blocks; ++k) {
    DF11_RETURN_IF_ERROR(read_decode_status(plans[k], ws[k].get(), s.stream));
  }
  DF11_ASSIGN_OR_RETURN(
      line.fused_per_block, time_runs(s.stream, s.warmup, s.runs, [&]() -> Status {
        for (uint32_t k = 0; k < blocks; ++k) {
          DF11_RETURN_IF_ERROR(
              launch_decode_gemv(plans[k], gm_one, 1, ws[k].get(), ws_bytes, s.stream));
        }
        return Status::ok();
      }));
  for (uint32_t k = 0; k < blocks; ++k) {
    DF11_RETURN_IF_ERROR(read_decode_status(plans[k], ws[k].get(), s.stream));
  }
  DF11_ASSIGN_OR_RETURN(line.fused_one_launch, time_runs(s.stream, s.warmup, s.runs, [&] {
                          return launch_decode_gemv(all, gm_all, 1, all_ws.get(), all_bytes,
                                                    s.stream);
                        }));
  return read_decode_status(all, all_ws.get(), s.stream);
}

Status run(const GroupView& g, std::span<const uint16_t> weights,
           std::span<const GemvBenchmarkShape> shapes, const GemvBenchmarkOptions& o,
           GemvBenchmarkReport& rep) {
  DF11_RETURN_IF_ERROR(detail::check_group_benchmark(g, weights, shapes, o.runs, o.warmup,
                                                     o.batches, "run_gemv_benchmark"));
  int device = 0;
  DF11_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  DF11_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  rep.device_name = prop.name;
  rep.sm_count = prop.multiProcessorCount;
  rep.weights = g.n_elements();

  OwnedStream owned_stream;
  DF11_RETURN_IF_ERROR(owned_stream.create());
  const cudaStream_t stream = owned_stream.get();
  Cublas cublas;
  DF11_RETURN_IF_ERROR(cublas.load(stream));

  Setup s;
  s.stream = stream;
  s.cublas = &cublas;
  s.shapes = shapes;
  s.warmup = o.warmup;
  s.runs = o.runs;
  uint64_t at = 0;
  for (const GemvBenchmarkShape& m : shapes) {
    s.offsets.push_back(at);
    at += uint64_t{m.rows} * m.cols;
  }
  DeviceGroupCopy input;
  DF11_RETURN_IF_ERROR(input.upload(g, "block"));
  rep.coded_bytes = input.bytes();
  DeviceBuffer d_w, d_dec;
  DF11_RETURN_IF_ERROR(
      d_w.upload(std::span(reinterpret_cast<const uint8_t*>(weights.data()), weights.size_bytes()),
                 "BF16 weights"));
  DF11_RETURN_IF_ERROR(d_dec.allocate(weights.size_bytes(), "decoded weights"));
  const DeviceGroup group = input.describe(g, d_dec.get<uint16_t>(), "block");
  DF11_ASSIGN_OR_RETURN(DecodePlan plan, make_decode_plan({&group, 1}, "gemv bench"));
  for (const uint32_t n : o.batches) {
    DF11_ASSIGN_OR_RETURN(GemvBatchRow row, batch_row(s, plan, group, d_w.get<uint16_t>(), n));
    rep.rows.push_back(row);
  }
  // The decode + cuBLAS rows decoded the group: it must be the original weights.
  DF11_ASSIGN_OR_RETURN(const std::vector<uint16_t> decoded,
                        download(d_dec.get<uint16_t>(), weights.size()));
  if (!std::equal(decoded.begin(), decoded.end(), weights.begin())) {
    return Status(ErrorCode::kMismatch,
                  "run_gemv_benchmark: the GPU decode differs from the "
                  "original weights");
  }
  if (o.model_blocks == 0) return Status::ok();
  DF11_RETURN_IF_ERROR(model_line(s, g, input, d_w, o.model_blocks, rep.model));
  rep.model_run = true;
  return Status::ok();
}

}  // namespace

Result<GemvBenchmarkReport> run_gemv_benchmark(const GroupView& group,
                                               std::span<const uint16_t> weights,
                                               std::span<const GemvBenchmarkShape> shapes,
                                               const GemvBenchmarkOptions& options) {
  try {
    GemvBenchmarkReport rep;
    DF11_RETURN_IF_ERROR(run(group, weights, shapes, options, rep));
    return rep;
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit, "run_gemv_benchmark: out of host memory");
  }
}

}  // namespace df11::cuda
