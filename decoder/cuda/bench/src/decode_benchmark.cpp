// run_decode_benchmark(): device copies of the groups, event-timed decode launches, a
// device-to-device copy of the same output bytes for scale, and the inference pattern.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "bench_timing.h"
#include "cuda_benchmark.h"
#include "cuda_error.h"
#include "device_buffer.h"
#include "df11/cuda_decoder.h"

namespace df11::cuda {
namespace detail {
namespace {

class Events {
 public:
  Events() = default;
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  ~Events() {
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stop_ != nullptr) cudaEventDestroy(stop_);
  }
  Status create() {
    DF11_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start_), "cudaEventCreate");
    DF11_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop_), "cudaEventCreate");
    return Status::ok();
  }
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace

Result<TimingMs> time_runs(cudaStream_t stream, int warmup, int runs,
                           const std::function<Status()>& work) {
  Events ev;
  DF11_RETURN_IF_ERROR(ev.create());
  std::vector<double> ms;
  for (int i = 0; i < warmup + runs; ++i) {
    DF11_CUDA_RETURN_IF_ERROR(cudaEventRecord(ev.start_, stream), "cudaEventRecord");
    DF11_RETURN_IF_ERROR(work());
    DF11_CUDA_RETURN_IF_ERROR(cudaEventRecord(ev.stop_, stream), "cudaEventRecord");
    DF11_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(ev.stop_), "cudaEventSynchronize");
    float t = 0;
    DF11_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&t, ev.start_, ev.stop_),
                              "cudaEventElapsedTime");
    if (i >= warmup) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  TimingMs r;
  r.min = ms.front();
  r.max = ms.back();
  r.median = ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
  return r;
}

}  // namespace detail

namespace {

using detail::DeviceBuffer;
using detail::DeviceGroupCopy;
using detail::OwnedStream;
using detail::time_runs;

Status compare_output(const uint16_t* d_out, std::span<const uint16_t> want,
                      const std::string& what) {
  std::vector<uint16_t> got(want.size());
  DF11_CUDA_RETURN_IF_ERROR(
      cudaMemcpy(got.data(), d_out, want.size_bytes(), cudaMemcpyDeviceToHost),
      what + ": cudaMemcpy of the output");
  const auto diff = std::mismatch(got.begin(), got.end(), want.begin());
  if (diff.first != got.end()) {
    const auto i = static_cast<uint64_t>(diff.first - got.begin());
    return Status(ErrorCode::kMismatch, what + ": weight " + std::to_string(i) + " decoded as " +
                                            std::to_string(*diff.first) + ", expected " +
                                            std::to_string(*diff.second));
  }
  return Status::ok();
}

// A decode plan with its own workspace, ready to launch.
struct Launchable {
  DecodePlan plan;
  DeviceBuffer workspace;
};

Result<Launchable> make_launchable(std::span<const DeviceGroup> groups, const std::string& what,
                                   cudaStream_t stream, KernelChoice kernel = KernelChoice::kAuto) {
  DF11_ASSIGN_OR_RETURN(DecodePlan plan, make_decode_plan(groups, what, {kernel}));
  DeviceBuffer ws;
  DF11_RETURN_IF_ERROR(ws.allocate(plan.workspace_bytes(), what + ": workspace"));
  DF11_RETURN_IF_ERROR(init_workspace(plan, ws.get(), plan.workspace_bytes(), stream));
  return Launchable{std::move(plan), std::move(ws)};
}

Status launch(Launchable& l, cudaStream_t stream) {
  return launch_decode(l.plan, l.workspace.get(), l.plan.workspace_bytes(), stream);
}

Status check(const Launchable& l, cudaStream_t stream) {
  return read_decode_status(l.plan, l.workspace.get(), stream);
}

Status run(std::span<const GroupView> groups, std::span<const std::span<const uint16_t>> expected,
           const DecodeBenchmarkOptions& opt, DecodeBenchmarkReport& rep) {
  if (opt.runs < 1 || opt.warmup < 0 || groups.empty() ||
      (!expected.empty() && expected.size() != groups.size())) {
    return Status(ErrorCode::kInvalidArgument,
                  "run_decode_benchmark: need groups, runs >= 1, warmup >= 0 and one expected "
                  "span per group (or none)");
  }
  int device = 0;
  DF11_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  DF11_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  rep.device_name = prop.name;
  rep.sm_count = prop.multiProcessorCount;
  int mem_clock_khz = 0, bus_bits = 0;
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, device);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device);
  rep.peak_dram_gbps = 2.0 * mem_clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;

  OwnedStream owned_stream;
  DF11_RETURN_IF_ERROR(owned_stream.create());
  const cudaStream_t stream = owned_stream.get();

  // Inputs and one output per group.
  std::vector<DeviceGroupCopy> inputs(groups.size());
  std::vector<DeviceBuffer> outputs(groups.size());
  std::vector<DeviceGroup> dgs;
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::string name = "group " + std::to_string(i);
    DF11_RETURN_IF_ERROR(inputs[i].upload(groups[i], name));
    DF11_RETURN_IF_ERROR(outputs[i].allocate(2 * groups[i].n_elements(), name + ": output"));
    dgs.push_back(inputs[i].describe(groups[i], outputs[i].get<uint16_t>(), name));
    rep.elements += groups[i].n_elements();
    rep.input_bytes += inputs[i].bytes();
  }
  rep.output_bytes = 2 * rep.elements;

  DF11_ASSIGN_OR_RETURN(Launchable all, make_launchable(dgs, "bench", stream));
  rep.grid_size = std::min<uint64_t>(all.plan.grid_size(), all.plan.total_blocks());
  rep.shared_bytes = all.plan.shared_bytes();
  rep.compact = all.plan.compact();
  DF11_ASSIGN_OR_RETURN(
      rep.decode, time_runs(stream, opt.warmup, opt.runs, [&] { return launch(all, stream); }));
  DF11_RETURN_IF_ERROR(check(all, stream));
  if (!expected.empty()) {
    for (size_t i = 0; i < groups.size(); ++i) {
      DF11_RETURN_IF_ERROR(compare_output(outputs[i].get<uint16_t>(), expected[i], dgs[i].name));
    }
    rep.verified = true;
  }
  {
    DF11_ASSIGN_OR_RETURN(Launchable compact,
                          make_launchable(dgs, "bench (compact)", stream, KernelChoice::kCompact));
    DF11_ASSIGN_OR_RETURN(rep.decode_compact, time_runs(stream, opt.warmup, opt.runs,
                                                        [&] { return launch(compact, stream); }));
    DF11_RETURN_IF_ERROR(check(compact, stream));
    if (!expected.empty()) {
      for (size_t i = 0; i < groups.size(); ++i) {
        DF11_RETURN_IF_ERROR(
            compare_output(outputs[i].get<uint16_t>(), expected[i], dgs[i].name + " (compact)"));
      }
    }
  }

  // The same bytes moved by the copy engine path, for scale (reads + writes output_bytes).
  {
    DeviceBuffer dst;
    DF11_RETURN_IF_ERROR(dst.allocate(rep.output_bytes, "copy target"));
    DF11_ASSIGN_OR_RETURN(
        rep.copy, time_runs(stream, opt.warmup, opt.runs, [&]() -> Status {
          uint64_t at = 0;
          for (size_t i = 0; i < outputs.size(); ++i) {
            DF11_CUDA_RETURN_IF_ERROR(
                cudaMemcpyAsync(dst.get() + at, outputs[i].get(), outputs[i].size(),
                                cudaMemcpyDeviceToDevice, stream),
                "cudaMemcpyAsync device to device");
            at += outputs[i].size();
          }
          return Status::ok();
        }));
  }

  if (opt.model_copies == 0) return Status::ok();
  rep.model_copies = opt.model_copies;
  // Copies of every input on the device, so that no launch finds its input in L2.
  std::vector<std::vector<DeviceGroupCopy>> copies(opt.model_copies);
  std::vector<Launchable> per_copy;
  DeviceBuffer reused;
  uint64_t max_out = 0;
  for (const GroupView& g : groups) max_out = std::max<uint64_t>(max_out, 2 * g.n_elements());
  DF11_RETURN_IF_ERROR(reused.allocate(max_out * groups.size(), "reused output"));
  for (uint32_t k = 0; k < opt.model_copies; ++k) {
    std::vector<DeviceGroup> block;
    copies[k].resize(groups.size());
    for (size_t i = 0; i < groups.size(); ++i) {
      const std::string name = "copy " + std::to_string(k) + " group " + std::to_string(i);
      DF11_RETURN_IF_ERROR(copies[k][i].clone(inputs[i], name));
      block.push_back(
          copies[k][i].describe(groups[i], reused.get<uint16_t>() + i * (max_out / 2), name));
    }
    DF11_ASSIGN_OR_RETURN(Launchable l, make_launchable(block, "model block", stream));
    per_copy.push_back(std::move(l));
  }
  DF11_ASSIGN_OR_RETURN(rep.model_sequential,
                        time_runs(stream, opt.warmup, opt.runs, [&]() -> Status {
                          for (Launchable& l : per_copy) DF11_RETURN_IF_ERROR(launch(l, stream));
                          return Status::ok();
                        }));
  for (const Launchable& l : per_copy) DF11_RETURN_IF_ERROR(check(l, stream));
  if (!expected.empty()) {
    for (size_t i = 0; i < groups.size(); ++i) {
      DF11_RETURN_IF_ERROR(compare_output(reused.get<uint16_t>() + i * (max_out / 2), expected[i],
                                          "model pattern, group " + std::to_string(i)));
    }
  }
  rep.model_per_launch_ms = rep.model_sequential.median / opt.model_copies;
  rep.model_launch_overhead_ms = rep.model_per_launch_ms - rep.decode.median;

  // All copies as one plan, each into its own output, if the device has room for them.
  size_t free_bytes = 0, total_bytes = 0;
  DF11_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  const uint64_t need = uint64_t{opt.model_copies} * rep.output_bytes;
  if (need + (uint64_t{1} << 30) < free_bytes) {
    DeviceBuffer all_out;
    DF11_RETURN_IF_ERROR(all_out.allocate(need, "model outputs"));
    std::vector<DeviceGroup> model;
    uint64_t at = 0;
    for (uint32_t k = 0; k < opt.model_copies; ++k) {
      for (size_t i = 0; i < groups.size(); ++i) {
        model.push_back(copies[k][i].describe(groups[i], all_out.get<uint16_t>() + at,
                                              "copy " + std::to_string(k)));
        at += groups[i].n_elements();
      }
    }
    DF11_ASSIGN_OR_RETURN(Launchable whole, make_launchable(model, "model", stream));
    DF11_ASSIGN_OR_RETURN(rep.model_batched, time_runs(stream, opt.warmup, opt.runs,
                                                       [&] { return launch(whole, stream); }));
    DF11_RETURN_IF_ERROR(check(whole, stream));
    if (!expected.empty()) {
      const uint64_t last = need / 2 - rep.elements;  // the last copy's first weight
      for (size_t i = 0, off = 0; i < groups.size(); off += groups[i].n_elements(), ++i) {
        DF11_RETURN_IF_ERROR(compare_output(all_out.get<uint16_t>() + last + off, expected[i],
                                            "model batched, last copy"));
      }
    }
    rep.model_batched_run = true;
  }
  return Status::ok();
}

}  // namespace

Result<DecodeBenchmarkReport> run_decode_benchmark(
    std::span<const GroupView> groups, std::span<const std::span<const uint16_t>> expected,
    const DecodeBenchmarkOptions& options) {
  try {
    DecodeBenchmarkReport rep;
    DF11_RETURN_IF_ERROR(run(groups, expected, options, rep));
    return rep;
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit, "run_decode_benchmark: out of host memory");
  }
}

}  // namespace df11::cuda
