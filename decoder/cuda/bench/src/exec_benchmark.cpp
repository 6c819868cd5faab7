// run_exec_benchmark() (cuda_exec_benchmark.h): the execution layout on one group against
// cuBLAS: transcode, layout -> BF16, fused GEMM and its reference per batch, the model line.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "bench_timing.h"
#include "benchmark_args.h"
#include "bf16_inputs.h"
#include "cublas_dlopen.h"
#include "cuda_error.h"
#include "cuda_exec_benchmark.h"
#include "device_buffer.h"
#include "df11/cuda_exec.h"

namespace df11::cuda {
namespace {

using detail::Cublas;
using detail::DeviceBuffer;
using detail::DeviceGroupCopy;
using detail::OwnedStream;
using detail::time_runs;

uint32_t ulp_distance(uint16_t a, uint16_t b) {
  const auto key = [](uint16_t v) {
    return (v & 0x8000) ? -static_cast<int32_t>(v & 0x7FFF) : static_cast<int32_t>(v & 0x7FFF);
  };
  const int32_t d = key(a) - key(b);
  return static_cast<uint32_t>(d < 0 ? -d : d);
}

Result<std::vector<uint16_t>> download(const uint16_t* d, uint64_t count) {
  std::vector<uint16_t> h(count);
  DF11_CUDA_RETURN_IF_ERROR(cudaMemcpy(h.data(), d, 2 * count, cudaMemcpyDeviceToHost),
                            "cudaMemcpy of an output");
  return h;
}

// The blobs of one block on the device.
struct Blobs {
  std::vector<DeviceBuffer> buf;
  std::vector<ExecMatrix> m;
};

struct Setup {
  cudaStream_t stream = nullptr;
  const Cublas* cublas = nullptr;
  std::span<const GemvBenchmarkShape> shapes;
  std::vector<uint64_t> offsets;
  int warmup = 0, runs = 0;
};

Status cublas_all(const Setup& s, const uint16_t* d_w, const std::vector<DeviceBuffer>& x,
                  const std::vector<DeviceBuffer>& y, uint32_t n) {
  for (size_t i = 0; i < s.shapes.size(); ++i) {
    DF11_RETURN_IF_ERROR(s.cublas->gemv(d_w + s.offsets[i], s.shapes[i].rows, s.shapes[i].cols,
                                        x[i].get<uint16_t>(), y[i].get<uint16_t>(), n));
  }
  return Status::ok();
}

Result<ExecBatchRow> batch_row(const Setup& s, const Blobs& blobs, const uint16_t* d_w,
                               DeviceBuffer& ws, uint32_t n) {
  ExecBatchRow row;
  row.batch = n;
  const size_t count = s.shapes.size();
  std::vector<DeviceBuffer> x(count), y_cb(count), y_ex(count), y_ref(count);
  std::vector<ExecGemm> gemms;
  std::vector<Bf16Gemm> refs;
  for (size_t i = 0; i < count; ++i) {
    const uint32_t rows = s.shapes[i].rows, cols = s.shapes[i].cols;
    const std::vector<uint16_t> xv = support::deterministic_bf16(uint64_t{cols} * n, 7 * n + i);
    DF11_RETURN_IF_ERROR(
        x[i].upload(std::span(reinterpret_cast<const uint8_t*>(xv.data()), 2 * xv.size()), "x"));
    DF11_RETURN_IF_ERROR(y_cb[i].allocate(2ull * rows * n, "y"));
    DF11_RETURN_IF_ERROR(y_ex[i].allocate(2ull * rows * n, "y"));
    DF11_RETURN_IF_ERROR(y_ref[i].allocate(2ull * rows * n, "y"));
    gemms.push_back({blobs.m[i], x[i].get<uint16_t>(), y_ex[i].get<uint16_t>()});
    refs.push_back(
        {d_w + s.offsets[i], rows, cols, x[i].get<uint16_t>(), y_ref[i].get<uint16_t>()});
  }
  DF11_ASSIGN_OR_RETURN(row.cublas, time_runs(s.stream, s.warmup, s.runs,
                                              [&] { return cublas_all(s, d_w, x, y_cb, n); }));
  DF11_ASSIGN_OR_RETURN(row.exec, time_runs(s.stream, s.warmup, s.runs, [&] {
                          return launch_exec_gemm(gemms, n, ws.get(), ws.size(), s.stream);
                        }));
  DF11_RETURN_IF_ERROR(read_exec_status(ws.get(), s.stream));
  DF11_ASSIGN_OR_RETURN(row.reference, time_runs(s.stream, s.warmup, s.runs, [&] {
                          return launch_bf16_reference_gemm(refs, n, s.stream);
                        }));
  DF11_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s.stream), "exec GEMM checks");
  row.exec_equals_reference = true;
  uint64_t differ = 0, total = 0;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t outs = uint64_t{s.shapes[i].rows} * n;
    DF11_ASSIGN_OR_RETURN(const std::vector<uint16_t> e, download(y_ex[i].get<uint16_t>(), outs));
    DF11_ASSIGN_OR_RETURN(const std::vector<uint16_t> r, download(y_ref[i].get<uint16_t>(), outs));
    DF11_ASSIGN_OR_RETURN(const std::vector<uint16_t> c, download(y_cb[i].get<uint16_t>(), outs));
    row.exec_equals_reference = row.exec_equals_reference && e == r;
    for (uint64_t k = 0; k < outs; ++k) {  // both [n, rows] row-major
      const uint32_t d = ulp_distance(e[k], c[k]);
      row.max_ulp_vs_cublas = std::max(row.max_ulp_vs_cublas, d);
      differ += d != 0;
      ++total;
    }
  }
  row.differ_vs_cublas = total ? static_cast<double>(differ) / static_cast<double>(total) : 0;
  return row;
}

Status model_line(const Setup& s, const Blobs& one, const DeviceBuffer& d_w, uint32_t blocks,
                  DeviceBuffer& ws, ExecModelLine& line) {
  line.blocks = blocks;
  std::vector<Blobs> copies(blocks);
  std::vector<DeviceBuffer> weights(blocks);
  for (uint32_t k = 0; k < blocks; ++k) {
    const std::string name = "model block " + std::to_string(k);
    DF11_RETURN_IF_ERROR(weights[k].clone(d_w, name + ": BF16 weights"));
    copies[k].buf.resize(one.buf.size());
    for (size_t i = 0; i < one.buf.size(); ++i) {
      DF11_RETURN_IF_ERROR(copies[k].buf[i].clone(one.buf[i], name + ": blob"));
      ExecMatrix m = one.m[i];
      m.d_blob = copies[k].buf[i].get();
      copies[k].m.push_back(m);
    }
  }
  const size_t count = s.shapes.size();
  std::vector<DeviceBuffer> x(count), y(count);
  for (size_t i = 0; i < count; ++i) {
    const std::vector<uint16_t> xv = support::deterministic_bf16(s.shapes[i].cols, 100 + i);
    DF11_RETURN_IF_ERROR(
        x[i].upload(std::span(reinterpret_cast<const uint8_t*>(xv.data()), 2 * xv.size()), "x"));
    DF11_RETURN_IF_ERROR(y[i].allocate(2ull * s.shapes[i].rows, "y"));
  }
  std::vector<std::vector<ExecGemm>> per_block(blocks);
  std::vector<ExecGemm> all;
  for (uint32_t k = 0; k < blocks; ++k) {
    for (size_t i = 0; i < count; ++i) {
      per_block[k].push_back({copies[k].m[i], x[i].get<uint16_t>(), y[i].get<uint16_t>()});
    }
    all.insert(all.end(), per_block[k].begin(), per_block[k].end());
  }
  DF11_ASSIGN_OR_RETURN(
      line.cublas, time_runs(s.stream, s.warmup, s.runs, [&]() -> Status {
        for (uint32_t k = 0; k < blocks; ++k) {
          DF11_RETURN_IF_ERROR(cublas_all(s, weights[k].get<uint16_t>(), x, y, 1));
        }
        return Status::ok();
      }));
  DF11_ASSIGN_OR_RETURN(
      line.exec_per_block, time_runs(s.stream, s.warmup, s.runs, [&]() -> Status {
        for (uint32_t k = 0; k < blocks; ++k) {
          DF11_RETURN_IF_ERROR(launch_exec_gemm(per_block[k], 1, ws.get(), ws.size(), s.stream));
        }
        return Status::ok();
      }));
  DF11_RETURN_IF_ERROR(read_exec_status(ws.get(), s.stream));
  DF11_ASSIGN_OR_RETURN(line.exec_one_call, time_runs(s.stream, s.warmup, s.runs, [&] {
                          return launch_exec_gemm(all, 1, ws.get(), ws.size(), s.stream);
                        }));
  return read_exec_status(ws.get(), s.stream);
}

Status run(const GroupView& g, std::span<const uint16_t> weights,
           std::span<const GemvBenchmarkShape> shapes, const ExecBenchmarkOptions& o,
           ExecBenchmarkReport& rep) {
  DF11_RETURN_IF_ERROR(detail::check_group_benchmark(g, weights, shapes, o.runs, o.warmup,
                                                     o.batches, "run_exec_benchmark"));
  int device = 0;
  DF11_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  DF11_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  rep.device_name = prop.name;
  rep.weights = g.n_elements();
  OwnedStream owned;
  DF11_RETURN_IF_ERROR(owned.create());
  Setup s;
  s.stream = owned.get();
  Cublas cublas;
  DF11_RETURN_IF_ERROR(cublas.load(s.stream));
  s.cublas = &cublas;
  s.shapes = shapes;
  s.warmup = o.warmup;
  s.runs = o.runs;
  uint64_t at = 0;
  std::vector<ExecShape> members;
  for (const GemvBenchmarkShape& m : shapes) {
    s.offsets.push_back(at);
    at += uint64_t{m.rows} * m.cols;
    members.push_back({m.rows, m.cols});
  }
  DeviceGroupCopy input;
  DF11_RETURN_IF_ERROR(input.upload(g, "block"));
  DeviceBuffer d_w;
  DF11_RETURN_IF_ERROR(
      d_w.upload(std::span(reinterpret_cast<const uint8_t*>(weights.data()), weights.size_bytes()),
                 "BF16 weights"));
  const DeviceGroup group = input.describe(g, nullptr, "block");
  // Transcode: one workspace (the group's BF16 scratch inside), blobs sized by the first
  // measure; the timed runs repeat measure + pack into the same blobs.
  DF11_ASSIGN_OR_RETURN(const size_t tws_bytes, exec_group_workspace_bytes(g, members));
  DeviceBuffer tws;
  DF11_RETURN_IF_ERROR(tws.allocate(tws_bytes, "transcode workspace"));
  std::vector<ExecMeasure> measures(members.size());
  DF11_RETURN_IF_ERROR(
      exec_measure_group(group, members, tws.get(), tws_bytes, s.stream, measures));
  Blobs blobs;
  blobs.buf.resize(members.size());
  std::vector<uint8_t*> ptrs;
  for (size_t i = 0; i < members.size(); ++i) {
    DF11_RETURN_IF_ERROR(blobs.buf[i].allocate(measures[i].bytes, "blob"));
    ptrs.push_back(blobs.buf[i].get());
    blobs.m.push_back({blobs.buf[i].get(), measures[i].bytes, members[i].rows, members[i].cols,
                       measures[i].n_exceptions});
    rep.exec_bytes += measures[i].bytes;
    rep.exceptions += measures[i].n_exceptions;
  }
  DF11_ASSIGN_OR_RETURN(
      rep.transcode, time_runs(s.stream, o.warmup, o.runs, [&]() -> Status {
        DF11_RETURN_IF_ERROR(
            exec_measure_group(group, members, tws.get(), tws_bytes, s.stream, measures));
        return launch_exec_pack_group(members, ptrs, tws.get(), tws_bytes, s.stream);
      }));
  DF11_ASSIGN_OR_RETURN(rep.pack, time_runs(s.stream, o.warmup, o.runs, [&] {
                          return launch_exec_pack_group(members, ptrs, tws.get(), tws_bytes,
                                                        s.stream);
                        }));
  // Layout -> BF16, checked against the original weights.
  DeviceBuffer out, copy_dst, ws;
  DF11_RETURN_IF_ERROR(out.allocate(weights.size_bytes(), "BF16 out"));
  DF11_RETURN_IF_ERROR(copy_dst.allocate(weights.size_bytes(), "copy target"));
  DF11_RETURN_IF_ERROR(ws.allocate(kExecStatusBytes, "exec workspace"));
  std::vector<ExecToBf16> items;
  for (size_t i = 0; i < members.size(); ++i) {
    items.push_back({blobs.m[i], out.get<uint16_t>() + s.offsets[i]});
  }
  DF11_CUDA_RETURN_IF_ERROR(cudaMemset(out.get(), 0xFF, out.size()), "poison");
  DF11_ASSIGN_OR_RETURN(rep.to_bf16, time_runs(s.stream, o.warmup, o.runs, [&] {
                          return launch_exec_to_bf16(items, ws.get(), ws.size(), s.stream);
                        }));
  DF11_RETURN_IF_ERROR(read_exec_status(ws.get(), s.stream));
  DF11_ASSIGN_OR_RETURN(const std::vector<uint16_t> back,
                        download(out.get<uint16_t>(), weights.size()));
  rep.to_bf16_exact = std::equal(back.begin(), back.end(), weights.begin());
  DF11_ASSIGN_OR_RETURN(rep.copy, time_runs(s.stream, o.warmup, o.runs, [&]() -> Status {
                          DF11_CUDA_RETURN_IF_ERROR(
                              cudaMemcpyAsync(copy_dst.get(), out.get(), out.size(),
                                              cudaMemcpyDeviceToDevice, s.stream),
                              "cudaMemcpyAsync");
                          return Status::ok();
                        }));
  out.reset();
  copy_dst.reset();
  for (const uint32_t n : o.batches) {
    DF11_ASSIGN_OR_RETURN(ExecBatchRow row, batch_row(s, blobs, d_w.get<uint16_t>(), ws, n));
    rep.rows.push_back(row);
  }
  if (o.model_blocks == 0) return Status::ok();
  tws.reset();
  DF11_RETURN_IF_ERROR(model_line(s, blobs, d_w, o.model_blocks, ws, rep.model));
  rep.model_run = true;
  return Status::ok();
}

}  // namespace

Result<ExecBenchmarkReport> run_exec_benchmark(const GroupView& group,
                                               std::span<const uint16_t> weights,
                                               std::span<const GemvBenchmarkShape> shapes,
                                               const ExecBenchmarkOptions& options) {
  try {
    ExecBenchmarkReport rep;
    DF11_RETURN_IF_ERROR(run(group, weights, shapes, options, rep));
    return rep;
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit, "run_exec_benchmark: out of host memory");
  }
}

}  // namespace df11::cuda
