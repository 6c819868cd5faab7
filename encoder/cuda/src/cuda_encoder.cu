// The GPU encoder's kernels and host steps (df11/cuda_encoder.h). encoder/cuda/NOTES.md gives
// the division of work and what was measured.
//
// Each weight's code starts at s[i] = the sum of the lengths of the codes before it (spec 2.5),
// computed in tiles of kTileWeights: a first pass sums each tile's lengths, a scan of those
// sums gives each tile's first bit, and the coding pass scans each tile's lengths again in
// shared memory, so no per-weight offset is stored. From s[i] every output is local:
//   - the code's bits, ORed into the stream (a thread gathers the codes of its consecutive
//     weights into whole 32-bit words and ORs each word once; only words shared with a
//     neighbouring thread are written by two threads);
//   - gap w = s - 64w for the first code starting in window w (spec 3.5), staged one byte per
//     window and packed into 5-bit fields afterwards (windows with no start keep 0);
//   - op[b] = the index of the first code starting in block b (spec 3.6); blocks with no code
//     start (only the last can be one) keep n, as does op[n_blocks];
//   - the sign/mantissa byte (spec 2.1).
#include <cstdint>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>
#include <limits>
#include <string>

#include "df11/cuda_encoder.h"
#include "df11/group.h"

namespace df11::cuda {
namespace {

constexpr uint32_t kThreads = 256;
constexpr uint32_t kPerThread = 32;                       // consecutive weights a thread codes
constexpr uint32_t kTileWeights = kThreads * kPerThread;  // 8192
constexpr uint32_t kRowStride = kPerThread + 2;           // u16; odd word stride: no conflicts
constexpr uint64_t kAlign = 256;

struct CodeTable {
  uint32_t bits[256];
  uint8_t length[256];
};

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

std::string str(uint64_t v) { return std::to_string(v); }

Status cuda_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::ok();
  return Status(ErrorCode::kCuda, std::string("GPU encoder: ") + what + ": " + cudaGetErrorName(e) +
                                      " (" + cudaGetErrorString(e) + ")");
}

__device__ __forceinline__ uint32_t exponent_of(uint16_t w) { return (w >> 7) & 0xFFu; }

__global__ void histogram_kernel(const uint16_t* __restrict__ w, uint64_t n,
                                 unsigned long long* __restrict__ hist) {
  __shared__ uint32_t counts[256];
  counts[threadIdx.x] = 0;
  __syncthreads();
  const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    atomicAdd(&counts[exponent_of(w[i])], 1u);
  }
  __syncthreads();
  if (counts[threadIdx.x] != 0) atomicAdd(&hist[threadIdx.x], counts[threadIdx.x]);
}

// Each tile's total code length.
__global__ void tile_bits_kernel(const uint16_t* __restrict__ w, uint64_t n, CodeTable table,
                                 unsigned long long* __restrict__ tile_bits) {
  __shared__ uint8_t length[256];
  using Reduce = cub::BlockReduce<uint32_t, kThreads>;
  __shared__ typename Reduce::TempStorage reduce;
  length[threadIdx.x] = table.length[threadIdx.x];
  __syncthreads();
  const uint64_t base = uint64_t{blockIdx.x} * kTileWeights;
  uint32_t sum = 0;
  for (uint32_t k = 0; k < kPerThread; ++k) {
    const uint64_t i = base + uint64_t{k} * kThreads + threadIdx.x;
    if (i < n) sum += length[exponent_of(w[i])];
  }
  const uint32_t total = Reduce(reduce).Sum(sum);
  if (threadIdx.x == 0) tile_bits[blockIdx.x] = total;
}

__global__ void fill_positions_kernel(uint32_t* __restrict__ op, uint64_t count, uint32_t n) {
  const uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < count) op[i] = n;
}

struct Outputs {
  uint32_t* stream;       // the encoded_exponent buffer as 32-bit words
  uint64_t stream_words;  // its capacity in words
  uint8_t* sign_mantissa;
  uint32_t* op;  // n_blocks + 1 entries
  uint64_t n_blocks;
  uint8_t* gap_stage;  // one byte per window
  uint64_t n_windows;
};

// OR a big-endian word of stream bits into the little-endian memory word `idx`.
__device__ __forceinline__ void or_word(const Outputs& o, uint64_t idx, uint32_t v) {
  if (v != 0 && idx < o.stream_words) atomicOr(&o.stream[idx], __byte_perm(v, 0, 0x0123));
}

__global__ void __launch_bounds__(kThreads)
    encode_kernel(const uint16_t* __restrict__ w, uint64_t n, CodeTable table,
                  const unsigned long long* __restrict__ tile_first_bit, Outputs o) {
  __shared__ uint32_t bits[256];
  __shared__ uint8_t length[256];
  __shared__ uint16_t tile[kThreads * kRowStride];
  using Scan = cub::BlockScan<uint32_t, kThreads>;
  __shared__ typename Scan::TempStorage scan;
  bits[threadIdx.x] = table.bits[threadIdx.x];
  length[threadIdx.x] = table.length[threadIdx.x];
  const uint64_t base = uint64_t{blockIdx.x} * kTileWeights;
  // Coalesced: the tile's weights into shared memory (row r = thread r's run), and the
  // sign/mantissa bytes straight out.
  for (uint32_t k = 0; k < kPerThread; ++k) {
    const uint32_t e = k * kThreads + threadIdx.x;
    const uint64_t i = base + e;
    uint16_t v = 0;
    if (i < n) {
      v = w[i];
      o.sign_mantissa[i] = static_cast<uint8_t>(((v >> 8) & 0x80u) | (v & 0x7Fu));
    }
    tile[(e / kPerThread) * kRowStride + e % kPerThread] = v;
  }
  __syncthreads();
  const uint64_t first = base + uint64_t{threadIdx.x} * kPerThread;  // this thread's run
  const uint16_t* run = tile + threadIdx.x * kRowStride;
  const uint32_t count =
      first >= n ? 0u : static_cast<uint32_t>(n - first < kPerThread ? n - first : kPerThread);
  uint32_t sum = 0;
  for (uint32_t j = 0; j < count; ++j) sum += length[exponent_of(run[j])];
  uint32_t before = 0;
  Scan(scan).ExclusiveSum(sum, before);
  if (count == 0) return;
  uint64_t pos = tile_first_bit[blockIdx.x] + before;
  // The previous code's length: where the previous code started decides whether this one is
  // the first of its window and of its stream block.
  uint32_t prev_length = 0;
  if (first > 0) {
    prev_length = threadIdx.x > 0
                      ? length[exponent_of(tile[(threadIdx.x - 1) * kRowStride + kPerThread - 1])]
                      : length[exponent_of(w[first - 1])];
  }
  uint64_t word = pos >> 5;
  uint64_t acc = 0;  // stream words `word` and `word + 1`, first bit in the top bit
  for (uint32_t j = 0; j < count; ++j) {
    const uint32_t e = exponent_of(run[j]);
    const uint32_t len = length[e];
    const uint64_t i = first + j;
    const uint64_t window = pos >> 6;
    const uint64_t block = pos >> 15;
    const uint64_t prev = pos - prev_length;
    if (i == 0 || (prev >> 6) != window) {
      if (window < o.n_windows) o.gap_stage[window] = static_cast<uint8_t>(pos & 63);
    }
    if (i == 0 || (prev >> 15) != block) {
      if (block <= o.n_blocks) o.op[block] = static_cast<uint32_t>(i);
    }
    uint32_t off = static_cast<uint32_t>(pos - (word << 5));
    if (off >= 32) {  // at most 63: the previous code ended inside word + 1
      or_word(o, word, static_cast<uint32_t>(acc >> 32));
      acc <<= 32;
      ++word;
      off -= 32;
    }
    if (len != 0) acc |= uint64_t{bits[e]} << (64 - off - len);
    pos += len;
    prev_length = len;
  }
  or_word(o, word, static_cast<uint32_t>(acc >> 32));
  or_word(o, word + 1, static_cast<uint32_t>(acc));
}

// Windows 8t .. 8t + 7: five bytes of 5-bit fields, first field in the top bits (spec 3.5).
__global__ void pack_gaps_kernel(const uint8_t* __restrict__ stage, uint64_t groups,
                                 uint8_t* __restrict__ gaps) {
  const uint64_t t = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (t >= groups) return;
  uint64_t v = 0;
  for (uint32_t k = 0; k < 8; ++k) v = (v << 5) | (stage[8 * t + k] & 0x1Fu);
  for (uint32_t m = 0; m < 5; ++m) gaps[5 * t + m] = static_cast<uint8_t>(v >> (32 - 8 * m));
}

CodeTable table_of(const Code& code) {
  CodeTable t{};
  for (int s = 0; s < 256; ++s) {
    t.bits[s] = code.bits[s];
    t.length[s] = code.length[s];
  }
  return t;
}

// The scratch of encode_on_device: tile sums, tile first bits, the scan's temporary storage,
// the staged gaps; each part 256-byte aligned.
struct ScratchLayout {
  uint64_t tiles = 0;
  uint64_t scan_bytes = 0;
  uint64_t sums = 0, firsts = 0, scan = 0, stage = 0, total = 0;
};

Result<ScratchLayout> scratch_layout(uint64_t n, uint64_t n_windows) {
  ScratchLayout l;
  l.tiles = (n + kTileWeights - 1) / kTileWeights;
  size_t scan_bytes = 0;
  const cudaError_t e = cub::DeviceScan::ExclusiveSum(
      nullptr, scan_bytes, static_cast<const unsigned long long*>(nullptr),
      static_cast<unsigned long long*>(nullptr), static_cast<int64_t>(l.tiles));
  DF11_RETURN_IF_ERROR(cuda_status(e, "sizing the scan of tile lengths"));
  l.scan_bytes = scan_bytes;
  l.sums = 0;
  l.firsts = round_up(l.sums + 8 * l.tiles, kAlign);
  l.scan = round_up(l.firsts + 8 * l.tiles, kAlign);
  l.stage = round_up(l.scan + l.scan_bytes, kAlign);
  l.total = round_up(l.stage + n_windows, kAlign);
  return l;
}

bool aligned(const void* p, uintptr_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

}  // namespace

Status device_histogram(const uint16_t* d_weights, uint64_t n, void* d_scratch,
                        size_t scratch_bytes, cudaStream_t stream, Histogram& out) {
  if (d_weights == nullptr || d_scratch == nullptr || n == 0 ||
      scratch_bytes < kHistogramScratchBytes || !aligned(d_scratch, 8) || !aligned(d_weights, 2)) {
    return Status(ErrorCode::kInvalidArgument,
                  "device_histogram: null or misaligned pointer, no weights, or a scratch "
                  "smaller than " +
                      str(kHistogramScratchBytes) + " bytes");
  }
  auto* hist = static_cast<unsigned long long*>(d_scratch);
  DF11_RETURN_IF_ERROR(cuda_status(cudaMemsetAsync(hist, 0, kHistogramScratchBytes, stream),
                                   "zeroing the histogram"));
  int device = 0, sms = 0;
  DF11_RETURN_IF_ERROR(cuda_status(cudaGetDevice(&device), "cudaGetDevice"));
  DF11_RETURN_IF_ERROR(cuda_status(
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "device attribute"));
  const uint64_t wanted = (n + 255) / 256;
  const uint64_t grid = wanted < uint64_t(sms) * 8 ? wanted : uint64_t(sms) * 8;
  histogram_kernel<<<static_cast<unsigned>(grid), 256, 0, stream>>>(d_weights, n, hist);
  DF11_RETURN_IF_ERROR(cuda_status(cudaGetLastError(), "launching the histogram"));
  unsigned long long host[256];
  DF11_RETURN_IF_ERROR(
      cuda_status(cudaMemcpyAsync(host, hist, sizeof(host), cudaMemcpyDeviceToHost, stream),
                  "copying the histogram"));
  DF11_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(stream), "counting the exponents"));
  for (int s = 0; s < 256; ++s) out[s] = host[s];
  return Status::ok();
}

Result<DeviceEncodePlan> plan_device_encode(const Histogram& histogram, uint64_t n) {
  if (n == 0 || n > std::numeric_limits<uint32_t>::max()) {
    return Status(ErrorCode::kInvalidArgument,
                  "GPU encoder: a group holds 1 to 2^32 - 1 weights, not " + str(n));
  }
  uint64_t total = 0;
  for (uint64_t c : histogram) total += c;
  if (total != n) {
    return Status(ErrorCode::kInvalidArgument, "GPU encoder: the histogram counts " + str(total) +
                                                   " weights, the group has " + str(n));
  }
  DeviceEncodePlan plan;
  DF11_ASSIGN_OR_RETURN(plan.code, build_code(histogram));
  DF11_ASSIGN_OR_RETURN(plan.luts, build_luts(plan.code));
  plan.n_elements = n;
  for (int s = 0; s < 256; ++s) plan.n_bits += histogram[s] * plan.code.length[s];
  plan.n_bytes = (plan.n_bits + 7) / 8;
  plan.n_blocks = (plan.n_bytes + kBytesPerBlock - 1) / kBytesPerBlock;
  plan.gaps_bytes = gap_bytes_for_blocks(plan.n_blocks);
  plan.output_positions_bytes = 4 * (plan.n_blocks + 1);
  plan.encoded_exponent_capacity = round_up(plan.n_bytes, 8);
  DF11_ASSIGN_OR_RETURN(const ScratchLayout l, scratch_layout(n, plan.n_blocks * kWindowsPerBlock));
  plan.scratch_bytes = l.total;
  return plan;
}

Status encode_on_device(const uint16_t* d_weights, const DeviceEncodePlan& plan,
                        const DeviceEncodeOutput& out, void* d_scratch, size_t scratch_bytes,
                        cudaStream_t stream) {
  if (d_weights == nullptr || d_scratch == nullptr || out.encoded_exponent == nullptr ||
      out.sign_mantissa == nullptr || out.output_positions == nullptr || out.gaps == nullptr) {
    return Status(ErrorCode::kInvalidArgument, "encode_on_device: a pointer is null");
  }
  if (!aligned(d_weights, 2) || !aligned(d_scratch, 8) || !aligned(out.encoded_exponent, 8) ||
      !aligned(out.output_positions, 4)) {
    return Status(ErrorCode::kInvalidArgument,
                  "encode_on_device: weights need 2-byte, scratch and encoded_exponent 8-byte, "
                  "output_positions 4-byte alignment");
  }
  const uint64_t n = plan.n_elements;
  const uint64_t n_windows = plan.n_blocks * kWindowsPerBlock;
  if (n == 0 || n > std::numeric_limits<uint32_t>::max() || plan.n_bytes != (plan.n_bits + 7) / 8 ||
      plan.n_blocks != (plan.n_bytes + kBytesPerBlock - 1) / kBytesPerBlock ||
      plan.encoded_exponent_capacity != round_up(plan.n_bytes, 8) ||
      plan.gaps_bytes != gap_bytes_for_blocks(plan.n_blocks) ||
      plan.output_positions_bytes != 4 * (plan.n_blocks + 1)) {
    return Status(ErrorCode::kInvalidArgument, "encode_on_device: the plan is inconsistent");
  }
  DF11_ASSIGN_OR_RETURN(const ScratchLayout l, scratch_layout(n, n_windows));
  if (scratch_bytes < l.total) {
    return Status(ErrorCode::kInvalidArgument, "encode_on_device: the scratch has " +
                                                   str(scratch_bytes) + " bytes, the plan needs " +
                                                   str(l.total));
  }
  auto* base = static_cast<uint8_t*>(d_scratch);
  auto* sums = reinterpret_cast<unsigned long long*>(base + l.sums);
  auto* firsts = reinterpret_cast<unsigned long long*>(base + l.firsts);
  uint8_t* stage = base + l.stage;
  const CodeTable table = table_of(plan.code);

  DF11_RETURN_IF_ERROR(
      cuda_status(cudaMemsetAsync(out.encoded_exponent, 0, plan.encoded_exponent_capacity, stream),
                  "zeroing the stream"));
  DF11_RETURN_IF_ERROR(
      cuda_status(cudaMemsetAsync(stage, 0, n_windows, stream), "zeroing the gaps"));
  auto* op = reinterpret_cast<uint32_t*>(out.output_positions);
  const uint64_t op_count = plan.n_blocks + 1;
  fill_positions_kernel<<<static_cast<unsigned>((op_count + 255) / 256), 256, 0, stream>>>(
      op, op_count, static_cast<uint32_t>(n));
  DF11_RETURN_IF_ERROR(cuda_status(cudaGetLastError(), "launching the positions' fill"));
  const auto tiles = static_cast<unsigned>(l.tiles);
  tile_bits_kernel<<<tiles, kThreads, 0, stream>>>(d_weights, n, table, sums);
  DF11_RETURN_IF_ERROR(cuda_status(cudaGetLastError(), "launching the tile lengths"));
  size_t scan_bytes = l.scan_bytes;
  DF11_RETURN_IF_ERROR(
      cuda_status(cub::DeviceScan::ExclusiveSum(base + l.scan, scan_bytes,
                                                static_cast<const unsigned long long*>(sums),
                                                firsts, static_cast<int64_t>(l.tiles), stream),
                  "scanning the tile lengths"));
  Outputs o;
  o.stream = reinterpret_cast<uint32_t*>(out.encoded_exponent);
  o.stream_words = plan.encoded_exponent_capacity / 4;
  o.sign_mantissa = out.sign_mantissa;
  o.op = op;
  o.n_blocks = plan.n_blocks;
  o.gap_stage = stage;
  o.n_windows = n_windows;
  encode_kernel<<<tiles, kThreads, 0, stream>>>(d_weights, n, table, firsts, o);
  DF11_RETURN_IF_ERROR(cuda_status(cudaGetLastError(), "launching the coder"));
  const uint64_t groups = n_windows / 8;
  pack_gaps_kernel<<<static_cast<unsigned>((groups + 255) / 256), 256, 0, stream>>>(stage, groups,
                                                                                    out.gaps);
  DF11_RETURN_IF_ERROR(cuda_status(cudaGetLastError(), "launching the gaps' packing"));
  return Status::ok();
}

}  // namespace df11::cuda
