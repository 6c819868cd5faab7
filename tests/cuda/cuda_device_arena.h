// Test helpers for the GPU tests: one device allocation carved into arrays at chosen
// (mis)alignments, with poisoned guard bytes around every output to prove that no kernel
// writes outside its group's output.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "df11/cuda_decoder.h"
#include "df11/group.h"

namespace df11::cuda_test {

#define DF11_CUDA_ASSERT(call) \
  ASSERT_EQ((call), cudaSuccess) << cudaGetErrorString(cudaGetLastError())

inline constexpr uint8_t kPoison = 0xA5;
inline constexpr uint64_t kGuardBytes = 64;

// Bump allocator over one cudaMalloc; everything is freed at once.
class DeviceArena {
 public:
  explicit DeviceArena(uint64_t bytes) {
    if (cudaMalloc(&base_, bytes) != cudaSuccess) base_ = nullptr;
    size_ = bytes;
    if (base_ != nullptr) cudaMemset(base_, kPoison, bytes);
  }
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;
  ~DeviceArena() {
    if (base_ != nullptr) cudaFree(base_);
  }
  bool ok() const { return base_ != nullptr; }

  // `bytes` at an address that is `misalign` bytes past a 256-byte boundary, after a guard.
  uint8_t* reserve(uint64_t bytes, uint32_t misalign) {
    used_ += kGuardBytes;
    used_ = (used_ + 255) / 256 * 256 + misalign;
    uint8_t* p = static_cast<uint8_t*>(base_) + used_;
    used_ += bytes + kGuardBytes;
    if (used_ > size_) {
      ADD_FAILURE() << "DeviceArena: out of space";
      return nullptr;
    }
    return p;
  }
  uint8_t* upload(std::span<const uint8_t> host, uint32_t misalign) {
    uint8_t* p = reserve(host.size(), misalign);
    if (p != nullptr && !host.empty()) {
      EXPECT_EQ(cudaMemcpy(p, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
    }
    return p;
  }
  // Bytes an upload of these sizes needs at most.
  static uint64_t footprint(uint64_t bytes) { return bytes + 2 * kGuardBytes + 512; }

 private:
  void* base_ = nullptr;
  uint64_t size_ = 0;
  uint64_t used_ = 0;
};

// A group's five arrays uploaded into an arena, and room for its output with guards.
struct PlacedGroup {
  cuda::DeviceGroup device;
  uint64_t n = 0;
};

inline uint64_t placed_footprint(const GroupView& g) {
  return DeviceArena::footprint(g.luts.size()) + DeviceArena::footprint(g.n_bytes()) +
         DeviceArena::footprint(g.n_elements()) +
         DeviceArena::footprint(g.output_positions.size()) + DeviceArena::footprint(g.gaps.size()) +
         DeviceArena::footprint(2 * g.n_elements());
}

// misalign 0 puts every array on a 256-byte boundary (fast paths); other values shift the
// inputs by misalign bytes and the output by misalign weights (2 * misalign bytes).
inline PlacedGroup place(DeviceArena& arena, const GroupView& g, uint32_t misalign,
                         const std::string& name) {
  PlacedGroup p;
  p.n = g.n_elements();
  p.device.host = g;
  p.device.name = name;
  p.device.d_luts = arena.upload(g.luts, misalign);
  p.device.d_encoded_exponent = arena.upload(g.encoded_exponent, misalign);
  p.device.d_sign_mantissa = arena.upload(g.sign_mantissa, misalign);
  p.device.d_output_positions = arena.upload(g.output_positions, misalign);
  p.device.d_gaps = arena.upload(g.gaps, misalign);
  p.device.d_out = reinterpret_cast<uint16_t*>(arena.reserve(2 * p.n, 2 * misalign));
  return p;
}

// Damages a placed group's coded stream on the device (every 7th byte XORed with 0x5A), so
// that its decode fails; returns whether the copies succeeded.
inline bool corrupt_stream(const PlacedGroup& p, size_t bytes) {
  std::vector<uint8_t> bad(bytes);
  auto* d = const_cast<uint8_t*>(p.device.d_encoded_exponent);
  if (cudaMemcpy(bad.data(), d, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) return false;
  for (size_t i = 0; i < bad.size(); i += 7) bad[i] ^= 0x5A;
  return cudaMemcpy(d, bad.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess;
}

// Copies the output back and checks that the guard bytes on both sides are still poison.
inline std::vector<uint16_t> fetch_output(const PlacedGroup& p, bool* guards_ok) {
  std::vector<uint8_t> raw(2 * p.n + 2 * kGuardBytes);
  const uint8_t* start = reinterpret_cast<const uint8_t*>(p.device.d_out) - kGuardBytes;
  EXPECT_EQ(cudaMemcpy(raw.data(), start, raw.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  bool ok = true;
  for (uint64_t i = 0; i < kGuardBytes; ++i) {
    ok = ok && raw[i] == kPoison && raw[kGuardBytes + 2 * p.n + i] == kPoison;
  }
  *guards_ok = ok;
  std::vector<uint16_t> out(p.n);
  if (p.n != 0) std::memcpy(out.data(), raw.data() + kGuardBytes, 2 * p.n);
  return out;
}

// Workspace for a plan (always at least one byte so that the pointer is valid).
class DeviceWorkspace {
 public:
  explicit DeviceWorkspace(size_t bytes) : bytes_(bytes) { cudaMalloc(&ptr_, bytes ? bytes : 1); }
  DeviceWorkspace(const DeviceWorkspace&) = delete;
  DeviceWorkspace& operator=(const DeviceWorkspace&) = delete;
  ~DeviceWorkspace() { cudaFree(ptr_); }
  void* get() const { return ptr_; }
  size_t size() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// A non-blocking stream of its own and a launch captured on it in a CUDA graph, as an engine's
// captured step: capture(enqueue) records enqueue(stream()) (a Status) and instantiates the
// graph; replay() launches it and waits.
class CapturedLaunch {
 public:
  CapturedLaunch() { cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking); }
  CapturedLaunch(const CapturedLaunch&) = delete;
  CapturedLaunch& operator=(const CapturedLaunch&) = delete;
  ~CapturedLaunch() {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  cudaStream_t stream() const { return stream_; }

  template <class Enqueue>
  Status capture(Enqueue&& enqueue) {
    if (stream_ == nullptr) return Status(ErrorCode::kCuda, "no stream");
    if (cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal) != cudaSuccess) {
      return Status(ErrorCode::kCuda, "cudaStreamBeginCapture failed");
    }
    const Status launched = enqueue(stream_);
    cudaGraph_t graph = nullptr;
    const bool ended = cudaStreamEndCapture(stream_, &graph) == cudaSuccess;
    DF11_RETURN_IF_ERROR(launched);
    if (!ended) return Status(ErrorCode::kCuda, "cudaStreamEndCapture failed");
    const bool made = cudaGraphInstantiate(&exec_, graph, 0) == cudaSuccess;
    cudaGraphDestroy(graph);
    return made ? Status::ok() : Status(ErrorCode::kCuda, "cudaGraphInstantiate failed");
  }

  Status replay() {
    if (exec_ == nullptr || cudaGraphLaunch(exec_, stream_) != cudaSuccess ||
        cudaStreamSynchronize(stream_) != cudaSuccess) {
      return Status(ErrorCode::kCuda, "graph replay failed");
    }
    return Status::ok();
  }

 private:
  cudaStream_t stream_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// Plans, initialises, launches on `stream` and reads the status of `groups`.
inline Status decode_batch(std::span<const cuda::DeviceGroup> groups, cudaStream_t stream,
                           uint32_t* launches = nullptr,
                           cuda::KernelChoice kernel = cuda::KernelChoice::kAuto,
                           uint32_t max_thread_blocks = 0) {
  Result<cuda::DecodePlan> plan =
      cuda::make_decode_plan(groups, "batch", {kernel, max_thread_blocks});
  if (plan.is_ok() && kernel != cuda::KernelChoice::kAuto) {
    EXPECT_EQ(plan->compact(), kernel == cuda::KernelChoice::kCompact);
  }
  if (!plan.is_ok()) return plan.status();
  if (launches != nullptr) *launches = plan->launches();
  DeviceWorkspace ws(plan->workspace_bytes());
  DF11_RETURN_IF_ERROR(cuda::init_workspace(*plan, ws.get(), ws.size(), stream));
  DF11_RETURN_IF_ERROR(cuda::launch_decode(*plan, ws.get(), ws.size(), stream));
  return cuda::read_decode_status(*plan, ws.get(), stream);
}

}  // namespace df11::cuda_test
