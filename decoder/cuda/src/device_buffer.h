// Owned device memory for the convenience paths (decode_group_to_host, the benchmark); the
// batched API itself never allocates.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "cuda_error.h"
#include "df11/cuda_decoder.h"
#include "df11/group.h"

namespace df11::cuda::detail {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), size_(o.size_) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      size_ = o.size_;
    }
    return *this;
  }
  ~DeviceBuffer() { reset(); }

  // At least 1 byte is allocated, so that empty arrays still get a valid, distinct pointer.
  Status allocate(size_t bytes, const std::string& what) {
    reset();
    void* p = nullptr;
    DF11_CUDA_RETURN_IF_ERROR(cudaMalloc(&p, bytes == 0 ? 1 : bytes),
                              what + ": cudaMalloc(" + std::to_string(bytes) + " bytes)");
    ptr_ = p;
    size_ = bytes;
    return Status::ok();
  }
  // Allocates and copies `host` (synchronous copy).
  Status upload(std::span<const uint8_t> host, const std::string& what) {
    DF11_RETURN_IF_ERROR(allocate(host.size(), what));
    if (host.empty()) return Status::ok();
    DF11_CUDA_RETURN_IF_ERROR(cudaMemcpy(ptr_, host.data(), host.size(), cudaMemcpyHostToDevice),
                              what + ": cudaMemcpy to device");
    return Status::ok();
  }
  // Allocates and copies another device buffer (synchronous copy).
  Status clone(const DeviceBuffer& other, const std::string& what) {
    DF11_RETURN_IF_ERROR(allocate(other.size(), what));
    if (other.size() == 0) return Status::ok();
    DF11_CUDA_RETURN_IF_ERROR(cudaMemcpy(ptr_, other.ptr_, other.size(), cudaMemcpyDeviceToDevice),
                              what + ": cudaMemcpy device to device");
    return Status::ok();
  }
  void reset() {
    if (ptr_ != nullptr) cudaFree(ptr_);
    ptr_ = nullptr;
    size_ = 0;
  }
  template <typename T = uint8_t>
  T* get() const {
    return static_cast<T*>(ptr_);
  }
  size_t size() const { return size_; }

 private:
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

// The five input arrays of one group on the device.
struct DeviceGroupCopy {
  DeviceBuffer luts, stream, sign_mantissa, output_positions, gaps;

  Status upload(const GroupView& g, const std::string& what) {
    DF11_RETURN_IF_ERROR(luts.upload(g.luts, what + ": luts"));
    DF11_RETURN_IF_ERROR(stream.upload(g.encoded_exponent, what + ": encoded_exponent"));
    DF11_RETURN_IF_ERROR(sign_mantissa.upload(g.sign_mantissa, what + ": sign_mantissa"));
    DF11_RETURN_IF_ERROR(output_positions.upload(g.output_positions, what + ": output_positions"));
    return gaps.upload(g.gaps, what + ": gaps");
  }
  Status clone(const DeviceGroupCopy& o, const std::string& what) {
    DF11_RETURN_IF_ERROR(luts.clone(o.luts, what + ": luts"));
    DF11_RETURN_IF_ERROR(stream.clone(o.stream, what + ": encoded_exponent"));
    DF11_RETURN_IF_ERROR(sign_mantissa.clone(o.sign_mantissa, what + ": sign_mantissa"));
    DF11_RETURN_IF_ERROR(output_positions.clone(o.output_positions, what + ": output_positions"));
    return gaps.clone(o.gaps, what + ": gaps");
  }
  // The batched API's description of these copies of `g`, decoding into `out`.
  DeviceGroup describe(const GroupView& g, uint16_t* out, std::string name) const {
    DeviceGroup d;
    d.host = g;
    d.d_luts = luts.get();
    d.d_encoded_exponent = stream.get();
    d.d_sign_mantissa = sign_mantissa.get();
    d.d_output_positions = output_positions.get();
    d.d_gaps = gaps.get();
    d.d_out = out;
    d.name = std::move(name);
    return d;
  }
  uint64_t bytes() const {
    return luts.size() + stream.size() + sign_mantissa.size() + output_positions.size() +
           gaps.size();
  }
};

}  // namespace df11::cuda::detail
