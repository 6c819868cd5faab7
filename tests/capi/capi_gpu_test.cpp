// The fused decode+GEMV through libdf11.so on a GPU, as an engine calls it (df11/df11.h,
// experimental section): every member of a real compressed folder (ragged shapes: columns
// not a multiple of 8, rows across the 1024-column chunks) at batch 1, 3 and 16, compared bit
// for bit with the reference GEMV on the CPU-decoded weights; then a corrupt device copy, reported
// through the same status calls as after df11_cuda_decode, with double-buffered and shared
// workspaces. Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "bf16_inputs.h"
#include "cli_process.h"
#include "cli_test_model.h"
#define DF11_EXPERIMENTAL
#include "df11/df11.h"
#include "df11/df11_tools.h"           // df11_tools_compact_lengths
#include "df11/exec_compact_encode.h"  // the CPU reference encoder

namespace df11::clitest {
namespace {

struct Model {
  df11_model* m = nullptr;
  ~Model() { df11_model_close(m); }
};

struct Plan {
  df11_cuda_plan* p = nullptr;
  ~Plan() { df11_cuda_plan_destroy(p); }
};

// Device allocations freed together.
class Device {
 public:
  Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device() {
    for (void* p : ptrs_) cudaFree(p);
  }
  void* alloc(size_t bytes) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(bytes, 16)), cudaSuccess);
    ptrs_.push_back(p);
    return p;
  }
  void* upload(const void* data, size_t bytes) {
    void* p = alloc(bytes);
    EXPECT_EQ(cudaMemcpy(p, data, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    return p;
  }
  template <typename T>
  void* upload(const std::vector<T>& v) {
    return upload(v.data(), v.size() * sizeof(T));
  }

 private:
  std::vector<void*> ptrs_;
};

std::vector<uint16_t> download(const void* d, size_t count) {
  std::vector<uint16_t> h(count);
  EXPECT_EQ(cudaMemcpy(h.data(), d, 2 * count, cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

// Index of the group named `name`.
size_t find_group(df11_model* m, const std::string& name) {
  for (size_t g = 0; g < df11_model_group_count(m); ++g) {
    if (name == df11_group_name(m, g)) return g;
  }
  ADD_FAILURE() << "no group " << name;
  return 0;
}

// Uploads group g's five parts and gives it a real output buffer.
df11_cuda_group upload_group(df11_model* m, size_t g, Device& dev) {
  const df11_group_part parts[5] = {DF11_PART_LUTS, DF11_PART_ENCODED_EXPONENT,
                                    DF11_PART_SIGN_MANTISSA, DF11_PART_OUTPUT_POSITIONS,
                                    DF11_PART_GAPS};
  const void* slots[5] = {};
  for (int p = 0; p < 5; ++p) {
    const void* data = nullptr;
    size_t bytes = 0;
    EXPECT_EQ(df11_group_part_bytes(m, g, parts[p], &data, &bytes), DF11_OK);
    slots[p] = dev.upload(data, bytes);
  }
  return df11_cuda_group{slots[0], slots[1], slots[2],
                         slots[3], slots[4], dev.alloc(2 * df11_group_element_count(m, g))};
}

// A plan's matrices with fresh x (per batch) and y buffers, and where each matrix's weights
// lie in the CPU-decoded groups.
struct Matrices {
  std::vector<df11_gemv_matrix> m;
  std::vector<const uint16_t*> d_w;  // the matrix's BF16 weights on the device (decoded on CPU)
};

Matrices matrices_of(df11_model* model, df11_cuda_plan* plan, const std::vector<size_t>& groups,
                     uint32_t batch, Device& dev) {
  Matrices out;
  size_t gi = 0;
  uint64_t at = 0;
  const uint16_t* d_group = nullptr;
  const auto load_group = [&] {
    std::vector<uint16_t> w(df11_group_element_count(model, groups[gi]));
    EXPECT_EQ(df11_decode_group(model, groups[gi], w.data(), 2 * w.size()), DF11_OK)
        << df11_model_errmsg(model);
    d_group = static_cast<const uint16_t*>(dev.upload(w));
  };
  load_group();
  for (size_t i = 0; i < df11_cuda_gemv_matrix_count(plan); ++i) {
    if (at == df11_group_element_count(model, groups[gi])) {
      ++gi;
      at = 0;
      load_group();
    }
    df11_gemv_matrix mi{};
    EXPECT_EQ(df11_cuda_gemv_matrix_info(plan, i, &mi, nullptr), DF11_OK);
    mi.d_x =
        dev.upload(cuda::support::deterministic_bf16(uint64_t{mi.cols} * batch, 31 * i + batch));
    mi.d_y = dev.alloc(2ull * mi.rows * batch);
    out.m.push_back(mi);
    out.d_w.push_back(d_group + at);
    at += uint64_t{mi.rows} * mi.cols;
  }
  EXPECT_EQ(gi + 1, groups.size());
  EXPECT_EQ(at, df11_group_element_count(model, groups[gi]));
  return out;
}

class CApiGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      GTEST_SKIP() << "no usable CUDA device";
    }
    ASSERT_EQ(df11_has_cuda(), 1);
    TinyLlama llama;
    llama.layers = 2;
    llama.hidden = 1040;        // two accumulation chunks (1024 + 16 columns)
    llama.intermediate = 1501;  // down_proj: 1501 columns, not a multiple of 8
    llama.sharded = false;
    write_tiny_llama(tmp_ / "model", llama);
    const ProcessResult r = run_df11(
        {"compress", (tmp_ / "model").string(), "-o", (tmp_ / "df11").string(), "-q"}, tmp_.path());
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  TempDir tmp_;
};

TEST_F(CApiGpu, FusedEqualsReferenceOnDecodedWeightsBitForBit) {
  Model model;
  ASSERT_EQ(df11_model_open((tmp_ / "df11").c_str(), &model.m), DF11_OK);
  // Every group of the model in one plan, in reverse order (any order is allowed).
  std::vector<size_t> groups;
  for (size_t g = df11_model_group_count(model.m); g-- > 0;) groups.push_back(g);
  ASSERT_GE(groups.size(), 3u);  // embed_tokens, two layers (and lm_head)
  Device dev;
  std::vector<df11_cuda_group> d;
  for (size_t g : groups) d.push_back(upload_group(model.m, g, dev));
  Plan plan;
  ASSERT_EQ(df11_cuda_plan_create(model.m, groups.data(), groups.size(), d.data(), &plan.p),
            DF11_OK)
      << df11_cuda_plan_errmsg(plan.p);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  for (const uint32_t batch : {1u, 3u, 16u}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    Matrices ms = matrices_of(model.m, plan.p, groups, batch, dev);
    size_t ws = 0;
    ASSERT_EQ(df11_cuda_gemv_workspace_bytes(plan.p, ms.m.data(), ms.m.size(), batch, &ws), DF11_OK)
        << df11_cuda_plan_errmsg(plan.p);
    void* d_ws = dev.alloc(ws);
    ASSERT_EQ(df11_cuda_workspace_init(plan.p, d_ws, ws, stream), DF11_OK);
    // Too small a workspace is refused before anything is enqueued.
    EXPECT_EQ(df11_cuda_decode_gemv(plan.p, ms.m.data(), ms.m.size(), batch, d_ws, ws - 1, stream),
              DF11_ERROR_INVALID_ARGUMENT);
    ASSERT_EQ(df11_cuda_decode_gemv(plan.p, ms.m.data(), ms.m.size(), batch, d_ws, ws, stream),
              DF11_OK)
        << df11_cuda_plan_errmsg(plan.p);
    ASSERT_EQ(df11_cuda_status_sync(plan.p, d_ws, stream), DF11_OK)
        << df11_cuda_plan_errmsg(plan.p);
    // The reference on the CPU-decoded weights, matrix by matrix, into its own outputs.
    size_t ref_ws = 0;
    for (const df11_gemv_matrix& m : ms.m) {
      size_t b = 0;
      ASSERT_EQ(df11_cuda_reference_gemv_workspace_bytes(plan.p, &m, batch, &b), DF11_OK);
      ref_ws = std::max(ref_ws, b);
    }
    void* d_ref_ws = dev.alloc(ref_ws);
    uint64_t outputs = 0, nonzero = 0;
    for (size_t i = 0; i < ms.m.size(); ++i) {
      df11_gemv_matrix ref = ms.m[i];
      ref.d_y = dev.alloc(2ull * ref.rows * batch);
      ASSERT_EQ(df11_cuda_reference_gemv(plan.p, ms.d_w[i], &ref, batch, d_ref_ws, ref_ws, stream),
                DF11_OK)
          << df11_cuda_plan_errmsg(plan.p);
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      const std::vector<uint16_t> fused = download(ms.m[i].d_y, uint64_t{ref.rows} * batch);
      const std::vector<uint16_t> want = download(ref.d_y, uint64_t{ref.rows} * batch);
      ASSERT_EQ(fused, want) << "matrix " << i << " (" << ref.rows << " x " << ref.cols << ")";
      outputs += fused.size();
      for (uint16_t v : fused) nonzero += (v & 0x7FFF) != 0;
    }
    EXPECT_GT(nonzero, outputs / 2);  // real sums, not an untouched output
  }
  cudaStreamDestroy(stream);
}

// Layer 0's device copy made inconsistent after planning (block 0's output position says one
// weight more than its stream holds: what a corrupt upload looks like to the kernel, which
// must find it while decoding): the fused launch reports it exactly like a decode, through
// both status paths, and workspaces shared or alternated between the corrupt and a good plan,
// and between decodes and fused launches, keep each launch's own report (the epochs of
// decoder/cuda/host/workspace_ledger.h).
TEST_F(CApiGpu, CorruptStreamIsReportedAfterAFusedLaunch) {
  const std::string group = "model.layers.0";
  Model model;
  ASSERT_EQ(df11_model_open((tmp_ / "df11").c_str(), &model.m), DF11_OK);
  const size_t g = find_group(model.m, group);
  const std::string file = df11_group_file(model.m, g);
  Device dev;
  const df11_cuda_group d_good = upload_group(model.m, g, dev);
  df11_cuda_group d_bad = upload_group(model.m, g, dev);
  {
    const void* data = nullptr;
    size_t bytes = 0;
    ASSERT_EQ(df11_group_part_bytes(model.m, g, DF11_PART_OUTPUT_POSITIONS, &data, &bytes),
              DF11_OK);
    ASSERT_GE(bytes, 12u);  // at least two blocks
    std::vector<uint8_t> positions(static_cast<const uint8_t*>(data),
                                   static_cast<const uint8_t*>(data) + bytes);
    uint32_t end0;  // spec 3.2: little-endian uint32 per block boundary
    std::memcpy(&end0, positions.data() + 4, 4);
    ++end0;
    std::memcpy(positions.data() + 4, &end0, 4);
    d_bad.d_output_positions = dev.upload(positions);
  }
  Plan p_good, p_bad;
  ASSERT_EQ(df11_cuda_plan_create(model.m, &g, 1, &d_good, &p_good.p), DF11_OK);
  ASSERT_EQ(df11_cuda_plan_create(model.m, &g, 1, &d_bad, &p_bad.p), DF11_OK);
  const uint32_t batch = 2;
  Matrices m_good = matrices_of(model.m, p_good.p, {g}, batch, dev);
  Matrices m_bad = matrices_of(model.m, p_bad.p, {g}, batch, dev);  // same shapes
  size_t ws_good = 0, ws_bad = 0;
  ASSERT_EQ(
      df11_cuda_gemv_workspace_bytes(p_good.p, m_good.m.data(), m_good.m.size(), batch, &ws_good),
      DF11_OK);
  ASSERT_EQ(df11_cuda_gemv_workspace_bytes(p_bad.p, m_bad.m.data(), m_bad.m.size(), batch, &ws_bad),
            DF11_OK);
  const size_t ws = std::max(ws_good, ws_bad);
  void* a = dev.alloc(ws);
  void* b = dev.alloc(ws);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  // Both plans know both workspaces from the start: no launch below zeroes stale records
  // first, so only the epochs keep the reports apart.
  for (df11_cuda_plan* p : {p_bad.p, p_good.p}) {
    for (void* w : {a, b}) ASSERT_EQ(df11_cuda_workspace_init(p, w, ws, stream), DF11_OK);
  }
  const auto fused = [&](df11_cuda_plan* p, Matrices& m, void* w) {
    return df11_cuda_decode_gemv(p, m.m.data(), m.m.size(), batch, w, ws, stream);
  };
  const auto names_group = [&](df11_cuda_plan* p) {
    const std::string msg = df11_cuda_plan_errmsg(p);
    EXPECT_NE(msg.find(file + ": group '" + group + "'"), std::string::npos) << msg;
  };

  // Double buffering: the corrupt launch into A, the good one into B, then both read.
  ASSERT_EQ(fused(p_bad.p, m_bad, a), DF11_OK);
  ASSERT_EQ(fused(p_good.p, m_good, b), DF11_OK);
  const df11_status s = df11_cuda_status_sync(p_bad.p, a, stream);
  EXPECT_EQ(s, DF11_ERROR_BAD_OUTPUT_POSITIONS) << df11_cuda_plan_errmsg(p_bad.p);
  names_group(p_bad.p);
  EXPECT_NE(std::string(df11_cuda_plan_errmsg(p_bad.p)).find("': block 0: "), std::string::npos)
      << df11_cuda_plan_errmsg(p_bad.p);
  EXPECT_EQ(df11_cuda_status_sync(p_good.p, b, stream), DF11_OK) << df11_cuda_plan_errmsg(p_good.p);

  // Deferred: the copied records say the same, read without the stream.
  std::vector<uint8_t> h(df11_cuda_plan_status_bytes(p_bad.p));
  ASSERT_EQ(df11_cuda_status_copy(p_bad.p, a, h.data(), h.size(), stream), DF11_OK);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(df11_cuda_group_status(p_bad.p, h.data(), h.size(), 0), s);
  names_group(p_bad.p);

  // Several plans' records in one call, into page-locked memory (one launch) and into
  // pageable memory (a copy per plan): the same reports, the corrupt plan found by its index.
  {
    df11_cuda_plan* plans[] = {p_good.p, p_bad.p};
    const void* workspaces[] = {b, a};
    const size_t slot = h.size() + 48;  // any slot at least the plan's bytes
    void* pinned = nullptr;
    ASSERT_EQ(cudaHostAlloc(&pinned, 2 * slot, cudaHostAllocDefault), cudaSuccess);
    std::vector<uint8_t> pageable(2 * slot);
    for (void* buf : {pinned, static_cast<void*>(pageable.data())}) {
      std::memset(buf, 0, 2 * slot);
      ASSERT_EQ(df11_cuda_status_copy_many(plans, workspaces, 2, buf, slot, stream), DF11_OK)
          << df11_cuda_plan_errmsg(p_good.p);
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      size_t failed = 9;
      EXPECT_EQ(df11_cuda_group_status_many(plans, 2, buf, slot, &failed), s);
      EXPECT_EQ(failed, 1u);
      names_group(p_bad.p);
      EXPECT_EQ(df11_cuda_group_status_many(plans, 1, buf, slot, &failed), DF11_OK);
      const auto* slots = static_cast<const uint8_t*>(buf);
      EXPECT_EQ(df11_cuda_group_status(p_bad.p, slots + slot, slot, 0), s);
    }
    // Slots smaller than a plan's bytes, or a slot read for another plan: refused.
    EXPECT_EQ(df11_cuda_status_copy_many(plans, workspaces, 2, pinned, h.size() - 1, stream),
              DF11_ERROR_INVALID_ARGUMENT);
    df11_cuda_plan* swapped[] = {p_bad.p, p_good.p};
    size_t failed = 9;
    EXPECT_EQ(df11_cuda_group_status_many(swapped, 2, pinned, slot, &failed),
              DF11_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(failed, 0u);
    ASSERT_EQ(cudaFreeHost(pinned), cudaSuccess);
  }

  // Shared: the good plan's launch into A ignores the corrupt launch's record still there.
  ASSERT_EQ(fused(p_good.p, m_good, a), DF11_OK);
  EXPECT_EQ(df11_cuda_status_sync(p_good.p, a, stream), DF11_OK) << df11_cuda_plan_errmsg(p_good.p);

  // Decodes and fused launches alternate in one workspace: each read is its latest launch's.
  ASSERT_EQ(df11_cuda_decode(p_bad.p, b, ws, stream), DF11_OK);
  EXPECT_EQ(df11_cuda_status_sync(p_bad.p, b, stream), s);
  ASSERT_EQ(fused(p_good.p, m_good, b), DF11_OK);
  EXPECT_EQ(df11_cuda_status_sync(p_good.p, b, stream), DF11_OK);
  ASSERT_EQ(df11_cuda_decode(p_good.p, b, ws, stream), DF11_OK);
  EXPECT_EQ(df11_cuda_status_sync(p_good.p, b, stream), DF11_OK);
  ASSERT_EQ(fused(p_bad.p, m_bad, b), DF11_OK);
  EXPECT_EQ(df11_cuda_status_sync(p_bad.p, b, stream), s);
  names_group(p_bad.p);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace df11::clitest

namespace df11::clitest {
namespace {

// Each member's blob decoded back (outs[k]) equals the CPU decode of the group at offsets[k].
template <typename Matrix>
void expect_decoded_back(const std::vector<Matrix>& m, const std::vector<void*>& outs,
                         const std::vector<uint16_t>& w, const std::vector<uint64_t>& offsets,
                         const std::vector<const char*>& names) {
  for (size_t k = 0; k < m.size(); ++k) {
    const std::vector<uint16_t> back = download(outs[k], uint64_t{m[k].rows} * m[k].cols);
    EXPECT_TRUE(std::equal(back.begin(), back.end(), w.begin() + offsets[k])) << names[k];
  }
}

// At each batch, a layout's GEMM of every member (`launch(gemms, n, batch)`, then `sync()`)
// equals df11_cuda_exec_reference_gemm on the CPU-decoded weights (d_w + offsets[k]) bit for
// bit, and a batch above `max_batch` (the layout's DF11_*_MAX_BATCH) is refused.
template <typename Gemm, typename Matrix, typename Launch, typename Sync>
void expect_gemms_equal_reference(df11_model* model, Device& dev, cudaStream_t stream,
                                  const std::vector<Matrix>& m, const uint16_t* d_w,
                                  const std::vector<uint64_t>& offsets,
                                  const std::vector<const char*>& names,
                                  std::initializer_list<uint32_t> batches, uint32_t max_batch,
                                  Launch launch, Sync sync) {
  const size_t n = m.size();
  for (const uint32_t batch : batches) {
    std::vector<Gemm> gemms;
    std::vector<void*> refs;
    for (size_t k = 0; k < n; ++k) {
      const void* x = dev.upload(
          df11::cuda::support::deterministic_bf16(uint64_t{batch} * m[k].cols, k + batch));
      gemms.push_back({m[k], x, dev.alloc(2ull * batch * m[k].rows)});
      refs.push_back(dev.alloc(2ull * batch * m[k].rows));
      ASSERT_EQ(df11_cuda_exec_reference_gemm(model, d_w + offsets[k], m[k].rows, m[k].cols, x,
                                              refs.back(), batch, stream),
                DF11_OK);
    }
    ASSERT_EQ(launch(gemms.data(), n, batch), DF11_OK) << df11_model_errmsg(model);
    ASSERT_EQ(sync(), DF11_OK);
    for (size_t k = 0; k < n; ++k) {
      EXPECT_EQ(download(gemms[k].d_y, uint64_t{batch} * m[k].rows),
                download(refs[k], uint64_t{batch} * m[k].rows))
          << names[k] << ", batch " << batch;
    }
    EXPECT_EQ(launch(gemms.data(), n, max_batch + 1), DF11_ERROR_INVALID_ARGUMENT);
  }
}

std::vector<uint8_t> download_bytes(const void* d, size_t bytes) {
  std::vector<uint8_t> h(bytes);
  EXPECT_EQ(cudaMemcpy(h.data(), d, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

// The group's BF16 weights at d_w (its members `m`, packed from the group, one after the
// other) packed into the execution layout with no group (df11_cuda_exec_bf16_*, no model
// handle): the same measures and the same blobs byte for byte; misuse refused, with the
// message on the handle where one is given.
void expect_exec_packed_from_bf16(df11_model* model, Device& dev, cudaStream_t stream,
                                  const uint16_t* d_w, const std::vector<df11_exec_matrix>& m) {
  const size_t n = m.size();
  std::vector<df11_exec_source> src;
  uint64_t at = 0;
  for (const auto& mk : m) {
    src.push_back({d_w + at, mk.rows, mk.cols});
    at += uint64_t{mk.rows} * mk.cols;
  }
  size_t ws = 0;
  ASSERT_EQ(df11_cuda_exec_bf16_workspace_bytes(nullptr, src.data(), n, &ws), DF11_OK);
  void* d_ws = dev.alloc(ws);
  std::vector<df11_exec_matrix> got(n);
  ASSERT_EQ(df11_cuda_exec_bf16_measure(nullptr, src.data(), n, d_ws, ws, stream, got.data()),
            DF11_OK);
  for (size_t k = 0; k < n; ++k) {
    EXPECT_EQ(got[k].d_blob, nullptr);
    EXPECT_EQ(got[k].bytes, m[k].bytes);
    EXPECT_EQ(got[k].rows, m[k].rows);
    EXPECT_EQ(got[k].cols, m[k].cols);
    EXPECT_EQ(got[k].n_exceptions, m[k].n_exceptions);
    got[k].d_blob = dev.alloc(got[k].bytes);
  }
  ASSERT_EQ(df11_cuda_exec_bf16_pack(model, src.data(), n, d_ws, ws, got.data(), stream), DF11_OK)
      << df11_model_errmsg(model);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  for (size_t k = 0; k < n; ++k) {
    EXPECT_EQ(download_bytes(got[k].d_blob, got[k].bytes), download_bytes(m[k].d_blob, m[k].bytes))
        << "member " << k;
  }
  EXPECT_EQ(df11_cuda_exec_bf16_workspace_bytes(nullptr, src.data(), 0, &ws),
            DF11_ERROR_INVALID_ARGUMENT);
  std::vector<df11_exec_source> bad = src;
  bad[0].d_w = nullptr;
  EXPECT_EQ(df11_cuda_exec_bf16_measure(model, bad.data(), n, d_ws, ws, stream, got.data()),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(df11_model_errmsg(model)).find("source 0: d_w is null"), std::string::npos);
  std::vector<df11_exec_matrix> wrong = got;
  wrong[0].rows += 1;
  EXPECT_EQ(df11_cuda_exec_bf16_pack(nullptr, src.data(), n, d_ws, ws, wrong.data(), stream),
            DF11_ERROR_INVALID_ARGUMENT);
}

// The execution layout through the C API, as an engine uses it (df11/df11.h, experimental):
// every group of a real folder transcoded on the GPU, its blobs decoded back equal to the CPU
// decode, and the fused GEMM equal to the reference GEMM on the CPU-decoded weights at batch
// 1, 7, 16, 33, 100 and DF11_EXEC_MAX_BATCH; the same weights packed from BF16 give the same
// blobs.
TEST_F(CApiGpu, ExecLayoutTranscodeDecodeAndGemm) {
  Model model;
  ASSERT_EQ(df11_model_open((tmp_ / "df11").c_str(), &model.m), DF11_OK);
  Device dev;
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  void* d_status = dev.alloc(DF11_EXEC_STATUS_BYTES);
  for (size_t g = 0; g < df11_model_group_count(model.m); ++g) {
    SCOPED_TRACE(df11_group_name(model.m, g));
    const df11_cuda_group d = upload_group(model.m, g, dev);
    size_t n = 0, ws = 0;
    ASSERT_EQ(df11_cuda_exec_workspace_bytes(model.m, g, &n, &ws), DF11_OK)
        << df11_model_errmsg(model.m);
    void* d_ws = dev.alloc(ws);
    std::vector<df11_exec_matrix> m(n);
    std::vector<const char*> names(n);
    ASSERT_EQ(df11_cuda_exec_measure(model.m, g, &d, d_ws, ws, stream, m.data(), names.data(), n),
              DF11_OK)
        << df11_model_errmsg(model.m);
    EXPECT_EQ(df11_cuda_exec_measure(model.m, g, &d, d_ws, ws, stream, m.data(), nullptr, n + 1),
              DF11_ERROR_INVALID_ARGUMENT);
    for (auto& mk : m) mk.d_blob = dev.alloc(mk.bytes);
    ASSERT_EQ(df11_cuda_exec_pack(model.m, g, d_ws, ws, m.data(), n, stream), DF11_OK)
        << df11_model_errmsg(model.m);
    // Back to BF16: the CPU decode of the group, member by member.
    std::vector<uint16_t> w(df11_group_element_count(model.m, g));
    ASSERT_EQ(df11_decode_group(model.m, g, w.data(), 2 * w.size()), DF11_OK);
    const auto* d_w = static_cast<const uint16_t*>(dev.upload(w));
    expect_exec_packed_from_bf16(model.m, dev, stream, d_w, m);
    std::vector<void*> outs;
    uint64_t at = 0;
    std::vector<uint64_t> offsets;
    for (const auto& mk : m) {
      outs.push_back(dev.alloc(2ull * mk.rows * mk.cols));
      offsets.push_back(at);
      at += uint64_t{mk.rows} * mk.cols;
    }
    ASSERT_EQ(at, w.size());
    ASSERT_EQ(df11_cuda_exec_to_bf16(model.m, m.data(), outs.data(), n, d_status,
                                     DF11_EXEC_STATUS_BYTES, stream),
              DF11_OK);
    ASSERT_EQ(df11_cuda_exec_status_sync(model.m, d_status, stream), DF11_OK);
    expect_decoded_back(m, outs, w, offsets, names);
    expect_gemms_equal_reference<df11_exec_gemm>(
        model.m, dev, stream, m, d_w, offsets, names, {1u, 7u, 16u, 33u, 100u, DF11_EXEC_MAX_BATCH},
        DF11_EXEC_MAX_BATCH,
        [&](const df11_exec_gemm* gemms, size_t count, uint32_t batch) {
          return df11_cuda_exec_gemm(model.m, gemms, count, batch, d_status, DF11_EXEC_STATUS_BYTES,
                                     stream);
        },
        [&] { return df11_cuda_exec_status_sync(model.m, d_status, stream); });
  }
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace df11::clitest

namespace df11::clitest {
namespace {

// The member's BF16 weights at d_w packed into the compact layout with no group
// (df11_cuda_compact_bf16_*, no model handle): the group's counts, then the group's blob and
// decode table (`m`, packed from the group) byte for byte; misuse refused.
void expect_packed_from_bf16(Device& dev, cudaStream_t stream, const uint16_t* d_w,
                             const df11_compact_matrix& m, const uint64_t* counts,
                             const uint8_t* lengths, const char* name) {
  SCOPED_TRACE(name);
  const df11_exec_source src{d_w, m.rows, m.cols};
  size_t ws = 0;
  ASSERT_EQ(df11_cuda_compact_bf16_workspace_bytes(nullptr, m.rows, m.cols, &ws), DF11_OK);
  void* d_ws = dev.alloc(ws);
  std::vector<uint64_t> c(DF11_COMPACT_SYMBOLS);
  ASSERT_EQ(df11_cuda_compact_bf16_count(nullptr, &src, d_ws, ws, stream, c.data()), DF11_OK);
  EXPECT_EQ(c, std::vector<uint64_t>(counts, counts + DF11_COMPACT_SYMBOLS));
  df11_compact_matrix got{};
  ASSERT_EQ(df11_cuda_compact_bf16_measure(nullptr, &src, lengths, d_ws, ws, stream, &got),
            DF11_OK);
  EXPECT_EQ(got.d_blob, nullptr);
  EXPECT_EQ(got.bytes, m.bytes);
  EXPECT_EQ(got.stream_bits, m.stream_bits);
  EXPECT_EQ(got.rows, m.rows);
  EXPECT_EQ(got.cols, m.cols);
  got.d_blob = dev.alloc(got.bytes);
  EXPECT_EQ(df11_cuda_compact_bf16_pack(nullptr, &src, lengths, d_ws, ws, &got, stream),
            DF11_ERROR_INVALID_ARGUMENT);  // no table
  got.d_table = dev.alloc(DF11_COMPACT_TABLE_BYTES);
  df11_compact_matrix other = got;
  other.stream_bits += 1;
  EXPECT_EQ(df11_cuda_compact_bf16_pack(nullptr, &src, lengths, d_ws, ws, &other, stream),
            DF11_ERROR_INVALID_ARGUMENT);  // not what the measure gave
  ASSERT_EQ(df11_cuda_compact_bf16_pack(nullptr, &src, lengths, d_ws, ws, &got, stream), DF11_OK);
  EXPECT_EQ(download_bytes(got.d_blob, got.bytes), download_bytes(m.d_blob, m.bytes));
  EXPECT_EQ(download_bytes(got.d_table, DF11_COMPACT_TABLE_BYTES),
            download_bytes(m.d_table, DF11_COMPACT_TABLE_BYTES));
  const df11_exec_source null_src{nullptr, m.rows, m.cols};
  EXPECT_EQ(df11_cuda_compact_bf16_count(nullptr, &null_src, d_ws, ws, stream, c.data()),
            DF11_ERROR_INVALID_ARGUMENT);
}

// The compact layout through the C API, with the codes libdf11-tools chooses: every group of a
// real folder counted, measured and packed on the GPU; each blob byte for byte the CPU reference
// encoder's, decoded back equal to the CPU decode; the fused GEMM equal to the reference GEMM
// at batch 1, 7 and 32; a corrupt blob reported; misuse refused.
TEST_F(CApiGpu, CompactLayoutTranscodeDecodeAndGemm) {
  Model model;
  ASSERT_EQ(df11_model_open((tmp_ / "df11").c_str(), &model.m), DF11_OK);
  Device dev;
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  void* d_status = dev.alloc(DF11_EXEC_STATUS_BYTES);
  ASSERT_EQ(df11_cuda_exec_status_reset(d_status, DF11_EXEC_STATUS_BYTES, stream), DF11_OK);
  for (size_t g = 0; g < df11_model_group_count(model.m); ++g) {
    SCOPED_TRACE(df11_group_name(model.m, g));
    const df11_cuda_group d = upload_group(model.m, g, dev);
    size_t n = 0, ws = 0;
    ASSERT_EQ(df11_cuda_compact_workspace_bytes(model.m, g, &n, &ws), DF11_OK)
        << df11_model_errmsg(model.m);
    void* d_ws = dev.alloc(ws);
    std::vector<df11_compact_matrix> m(n);
    EXPECT_EQ(df11_cuda_compact_pack(model.m, g, d_ws, ws, m.data(), n, stream),
              DF11_ERROR_INVALID_ARGUMENT);  // not measured
    std::vector<uint64_t> counts(n * DF11_COMPACT_SYMBOLS);
    ASSERT_EQ(df11_cuda_compact_count(model.m, g, &d, d_ws, ws, stream, counts.data(), n), DF11_OK)
        << df11_model_errmsg(model.m);
    std::vector<uint8_t> lengths(n * DF11_COMPACT_SYMBOLS);
    for (size_t k = 0; k < n; ++k) {
      ASSERT_EQ(df11_tools_compact_lengths(counts.data() + k * DF11_COMPACT_SYMBOLS,
                                           lengths.data() + k * DF11_COMPACT_SYMBOLS),
                DF11_OK);
    }
    // A code that leaves the member's most common exponent without a codeword is refused.
    std::vector<uint8_t> bad = lengths;
    const auto top = std::max_element(counts.begin(), counts.begin() + DF11_COMPACT_SYMBOLS);
    bad[static_cast<size_t>(top - counts.begin())] = 0;
    std::vector<const char*> names(n);
    EXPECT_EQ(df11_cuda_compact_measure(model.m, g, d_ws, ws, bad.data(), stream, m.data(),
                                        names.data(), n),
              DF11_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(df11_model_errmsg(model.m)).find("member 0"), std::string::npos)
        << df11_model_errmsg(model.m);
    ASSERT_EQ(df11_cuda_compact_measure(model.m, g, d_ws, ws, lengths.data(), stream, m.data(),
                                        names.data(), n),
              DF11_OK)
        << df11_model_errmsg(model.m);
    for (auto& mk : m) {
      mk.d_blob = dev.alloc(mk.bytes);
      mk.d_table = dev.alloc(DF11_COMPACT_TABLE_BYTES);
    }
    ASSERT_EQ(df11_cuda_compact_pack(model.m, g, d_ws, ws, m.data(), n, stream), DF11_OK)
        << df11_model_errmsg(model.m);
    std::vector<uint16_t> w(df11_group_element_count(model.m, g));
    ASSERT_EQ(df11_decode_group(model.m, g, w.data(), 2 * w.size()), DF11_OK);
    const auto* d_w = static_cast<const uint16_t*>(dev.upload(w));
    std::vector<void*> outs;
    std::vector<uint64_t> offsets;
    uint64_t at = 0;
    for (size_t k = 0; k < n; ++k) {
      const uint64_t count = uint64_t{m[k].rows} * m[k].cols;
      const std::span<const uint16_t> weights(w.data() + at, count);
      const auto want = df11::encode_compact_matrix_with_lengths(
          weights, m[k].rows, m[k].cols,
          std::span<const uint8_t, DF11_COMPACT_SYMBOLS>(lengths.data() + k * DF11_COMPACT_SYMBOLS,
                                                         DF11_COMPACT_SYMBOLS),
          names[k]);
      ASSERT_TRUE(want.is_ok()) << want.status().message();
      EXPECT_EQ(download_bytes(m[k].d_blob, m[k].bytes), *want) << names[k];
      // The GPU's counts gave the lengths the CPU encoder chooses from its own counts.
      const auto cpu = df11::encode_compact_matrix(weights, m[k].rows, m[k].cols, names[k]);
      ASSERT_TRUE(cpu.is_ok()) << cpu.status().message();
      EXPECT_EQ(*want, *cpu) << names[k];
      expect_packed_from_bf16(dev, stream, d_w + at, m[k], counts.data() + k * DF11_COMPACT_SYMBOLS,
                              lengths.data() + k * DF11_COMPACT_SYMBOLS, names[k]);
      outs.push_back(dev.alloc(2 * count));
      offsets.push_back(at);
      at += count;
    }
    ASSERT_EQ(at, w.size());
    ASSERT_EQ(df11_cuda_compact_to_bf16_ex(model.m, m.data(), outs.data(), n, d_status,
                                           DF11_EXEC_STATUS_BYTES, 0, stream),
              DF11_OK);
    ASSERT_EQ(df11_cuda_compact_status_sync(model.m, d_status, stream), DF11_OK);
    expect_decoded_back(m, outs, w, offsets, names);
    expect_gemms_equal_reference<df11_compact_gemm>(
        model.m, dev, stream, m, d_w, offsets, names, {1u, 7u, DF11_COMPACT_MAX_BATCH},
        DF11_COMPACT_MAX_BATCH,
        [&](const df11_compact_gemm* gemms, size_t count, uint32_t batch) {
          return df11_cuda_compact_gemm_ex(model.m, gemms, count, batch, d_status,
                                           DF11_EXEC_STATUS_BYTES, DF11_EXEC_KEEP_STATUS, stream);
        },
        [&] { return df11_cuda_compact_status_sync(model.m, d_status, stream); });
    // A corrupt copy of the first blob: its second half (the end of the byte plane and the
    // codeword stream) inverted.
    std::vector<uint8_t> blob = download_bytes(m[0].d_blob, m[0].bytes);
    for (size_t i = blob.size() / 2; i < blob.size(); ++i) blob[i] = static_cast<uint8_t>(~blob[i]);
    df11_compact_matrix c = m[0];
    c.d_blob = dev.upload(blob);
    void* out = dev.alloc(2ull * c.rows * c.cols);
    ASSERT_EQ(df11_cuda_compact_to_bf16_ex(model.m, &c, &out, 1, d_status, DF11_EXEC_STATUS_BYTES,
                                           DF11_EXEC_KEEP_STATUS, stream),
              DF11_OK);
    EXPECT_EQ(df11_cuda_compact_status_sync(model.m, d_status, stream), DF11_ERROR_CORRUPT_DATA);
    // A refused call leaves the record as it was, even one asking for a reset.
    df11_compact_gemm refused{m[0], nullptr, nullptr};
    EXPECT_EQ(df11_cuda_compact_gemm_ex(model.m, &refused, 1, 1, d_status, DF11_EXEC_STATUS_BYTES,
                                        0, stream),
              DF11_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(df11_cuda_compact_status_sync(model.m, d_status, stream), DF11_ERROR_CORRUPT_DATA);
    // The record keeps the report until it is reset.
    ASSERT_EQ(df11_cuda_compact_to_bf16_ex(model.m, m.data(), outs.data(), 1, d_status,
                                           DF11_EXEC_STATUS_BYTES, DF11_EXEC_KEEP_STATUS, stream),
              DF11_OK);
    EXPECT_EQ(df11_cuda_compact_status_sync(model.m, d_status, stream), DF11_ERROR_CORRUPT_DATA);
    ASSERT_EQ(df11_cuda_exec_status_reset(d_status, DF11_EXEC_STATUS_BYTES, stream), DF11_OK);
    EXPECT_EQ(df11_cuda_compact_status_sync(model.m, d_status, stream), DF11_OK);
  }
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace df11::clitest

namespace df11::clitest {
namespace {

// The stored checksums hashed on the GPU where an engine uploaded the groups: DF11_OK for the
// intact folder (every group in one call, in any order); one flipped byte in any of a group's
// five device parts on the device is DF11_ERROR_CORRUPT_DATA naming the file, the group and
// that stored tensor, as df11_group_check_stored names it on the host; bad arguments refused.
TEST_F(CApiGpu, CheckStoredOnTheDeviceFindsOneFlippedByte) {
  Model model;
  ASSERT_EQ(df11_model_open((tmp_ / "df11").c_str(), &model.m), DF11_OK);
  std::vector<size_t> groups;
  for (size_t g = df11_model_group_count(model.m); g-- > 0;) groups.push_back(g);
  Device dev;
  std::vector<df11_cuda_group> d;
  for (size_t g : groups) d.push_back(upload_group(model.m, g, dev));
  const size_t scratch_bytes = df11_cuda_check_stored_scratch_bytes(groups.size());
  void* scratch = dev.alloc(scratch_bytes);
  ASSERT_EQ(df11_cuda_check_stored(model.m, groups.data(), d.data(), groups.size(), scratch,
                                   scratch_bytes, nullptr),
            DF11_OK)
      << df11_model_errmsg(model.m);
  EXPECT_EQ(df11_cuda_check_stored(model.m, groups.data(), d.data(), groups.size(), scratch,
                                   scratch_bytes - 1, nullptr),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(df11_cuda_check_stored(model.m, groups.data(), nullptr, groups.size(), scratch,
                                   scratch_bytes, nullptr),
            DF11_ERROR_INVALID_ARGUMENT);
  const size_t bad_group = df11_model_group_count(model.m);
  EXPECT_EQ(
      df11_cuda_check_stored(model.m, &bad_group, d.data(), 1, scratch, scratch_bytes, nullptr),
      DF11_ERROR_INVALID_ARGUMENT);
  const char* suffixes[5] = {".luts", ".encoded_exponent", ".sign_mantissa", ".output_positions",
                             ".gaps"};
  const size_t victim = groups.size() / 2;
  for (int p = 0; p < 5; ++p) {
    SCOPED_TRACE(suffixes[p]);
    const void* parts[5] = {d[victim].d_luts, d[victim].d_encoded_exponent,
                            d[victim].d_sign_mantissa, d[victim].d_output_positions,
                            d[victim].d_gaps};
    auto* byte = static_cast<uint8_t*>(const_cast<void*>(parts[p]));
    uint8_t v = 0;
    ASSERT_EQ(cudaMemcpy(&v, byte, 1, cudaMemcpyDeviceToHost), cudaSuccess);
    const uint8_t flipped = v ^ 0x10;
    ASSERT_EQ(cudaMemcpy(byte, &flipped, 1, cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(df11_cuda_check_stored(model.m, groups.data(), d.data(), groups.size(), scratch,
                                     scratch_bytes, nullptr),
              DF11_ERROR_CORRUPT_DATA);
    const std::string msg = df11_model_errmsg(model.m);
    const std::string tensor = std::string(df11_group_name(model.m, groups[victim])) + suffixes[p];
    EXPECT_NE(msg.find("stored tensor '" + tensor + "' has xxh3"), std::string::npos) << msg;
    EXPECT_NE(msg.find(".safetensors"), std::string::npos) << msg;
    ASSERT_EQ(cudaMemcpy(byte, &v, 1, cudaMemcpyHostToDevice), cudaSuccess);
  }
  EXPECT_EQ(df11_cuda_check_stored(model.m, groups.data(), d.data(), groups.size(), scratch,
                                   scratch_bytes, nullptr),
            DF11_OK);
}

}  // namespace
}  // namespace df11::clitest

namespace df11::clitest {
namespace {

// A group coded on the GPU by libdf11-tools (df11_tools_cuda_encode_*) and decoded by a plan
// from its parts (df11_cuda_plan_create_parts), as an engine holding a weight only on the
// GPU does: the decode gives the weights back bit for bit; a flipped stream byte is reported
// by the decode's status naming the group; bad host parts and uncodable weights are refused.
struct Encoding {
  df11_cuda_encoding* e = nullptr;
  ~Encoding() { df11_tools_cuda_encoding_free(e); }
};

TEST(CApiGpuEncode, EncodedOnTheGpuDecodesFromItsParts) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    GTEST_SKIP() << "no usable CUDA device";
  }
  const uint64_t n = 300001;
  const std::vector<uint16_t> w = cuda::support::deterministic_bf16(n, 7);
  Device dev;
  void* d_w = dev.upload(w);
  void* d_hist = dev.alloc(DF11_CUDA_HISTOGRAM_SCRATCH_BYTES);
  Encoding enc;
  ASSERT_EQ(df11_tools_cuda_encode_plan(d_w, n, d_hist, DF11_CUDA_HISTOGRAM_SCRATCH_BYTES, nullptr,
                                        &enc.e),
            DF11_OK)
      << df11_tools_cuda_encoding_errmsg(enc.e);
  df11_cuda_encoding_sizes s{};
  ASSERT_EQ(df11_tools_cuda_encoding_sizes(enc.e, &s), DF11_OK);
  EXPECT_EQ(s.n_elements, n);
  EXPECT_EQ(s.sign_mantissa_bytes, n);
  EXPECT_LT(s.encoded_exponent_bytes, n);  // values in (-1, 1): a few bits a weight
  void* d_stream = dev.alloc(s.encoded_exponent_capacity);
  void* d_sm = dev.alloc(s.sign_mantissa_bytes);
  void* d_op = dev.alloc(s.output_positions_bytes);
  void* d_gaps = dev.alloc(s.gaps_bytes);
  void* d_scratch = dev.alloc(s.scratch_bytes);
  ASSERT_EQ(df11_tools_cuda_encode(enc.e, d_w, d_stream, d_sm, d_op, d_gaps, d_scratch,
                                   s.scratch_bytes, nullptr),
            DF11_OK)
      << df11_tools_cuda_encoding_errmsg(enc.e);
  const uint8_t* luts = df11_tools_cuda_encoding_luts(enc.e);
  ASSERT_NE(luts, nullptr);
  void* d_luts = dev.upload(luts, s.luts_bytes);
  std::vector<uint8_t> op(s.output_positions_bytes);
  ASSERT_EQ(cudaMemcpy(op.data(), d_op, op.size(), cudaMemcpyDeviceToHost), cudaSuccess);

  void* d_out = dev.alloc(2 * n);
  df11_group_host_parts host{};
  host.name = "encoded.weight";
  host.luts = luts;
  host.luts_bytes = s.luts_bytes;
  host.output_positions = op.data();
  host.output_positions_bytes = op.size();
  host.encoded_exponent_bytes = s.encoded_exponent_bytes;
  host.sign_mantissa_bytes = s.sign_mantissa_bytes;
  host.gaps_bytes = s.gaps_bytes;
  const df11_cuda_group group{d_luts, d_stream, d_sm, d_op, d_gaps, d_out};
  Plan plan;
  ASSERT_EQ(df11_cuda_plan_create_parts(&host, 1, &group, "rank 0", &plan.p), DF11_OK)
      << df11_cuda_plan_errmsg(plan.p);
  const size_t ws = df11_cuda_plan_workspace_bytes(plan.p);
  void* d_ws = dev.alloc(ws);
  ASSERT_EQ(df11_cuda_workspace_init(plan.p, d_ws, ws, nullptr), DF11_OK);
  ASSERT_EQ(df11_cuda_decode(plan.p, d_ws, ws, nullptr), DF11_OK);
  ASSERT_EQ(df11_cuda_status_sync(plan.p, d_ws, nullptr), DF11_OK) << df11_cuda_plan_errmsg(plan.p);
  EXPECT_EQ(download(d_out, n), w);

  // One flipped byte in the middle of the stream: the decode says so, naming the group.
  uint8_t byte = 0;
  auto* mid = static_cast<uint8_t*>(d_stream) + s.encoded_exponent_bytes / 2;
  ASSERT_EQ(cudaMemcpy(&byte, mid, 1, cudaMemcpyDeviceToHost), cudaSuccess);
  byte ^= 0x5A;
  ASSERT_EQ(cudaMemcpy(mid, &byte, 1, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(df11_cuda_decode(plan.p, d_ws, ws, nullptr), DF11_OK);
  EXPECT_NE(df11_cuda_status_sync(plan.p, d_ws, nullptr), DF11_OK);
  EXPECT_NE(std::string(df11_cuda_plan_errmsg(plan.p)).find("rank 0: group 'encoded.weight'"),
            std::string::npos)
      << df11_cuda_plan_errmsg(plan.p);

  // Host parts that break the spec's structure are refused when planning, naming the group.
  std::vector<uint8_t> bad = op;
  bad[0] = 1;  // op[0] must be 0
  host.output_positions = bad.data();
  Plan refused;
  EXPECT_EQ(df11_cuda_plan_create_parts(&host, 1, &group, "rank 0", &refused.p),
            DF11_ERROR_BAD_OUTPUT_POSITIONS);
  EXPECT_NE(std::string(df11_cuda_plan_errmsg(refused.p)).find("group 'encoded.weight'"),
            std::string::npos)
      << df11_cuda_plan_errmsg(refused.p);
  host.output_positions_bytes += 4;  // sizes that do not fit the stream's
  host.output_positions = op.data();
  Plan wrong_size;
  EXPECT_NE(df11_cuda_plan_create_parts(&host, 1, &group, nullptr, &wrong_size.p), DF11_OK);

  // A NaN cannot be coded: refused by the plan, nothing to encode.
  std::vector<uint16_t> nan = w;
  nan[n / 2] = 0x7FC0;
  void* d_nan = dev.upload(nan);
  Encoding refused_enc;
  EXPECT_EQ(df11_tools_cuda_encode_plan(d_nan, n, d_hist, DF11_CUDA_HISTOGRAM_SCRATCH_BYTES,
                                        nullptr, &refused_enc.e),
            DF11_ERROR_UNCODABLE);
  EXPECT_EQ(df11_tools_cuda_encoding_sizes(refused_enc.e, &s), DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(df11_tools_cuda_encode(refused_enc.e, d_nan, d_stream, d_sm, d_op, d_gaps, d_scratch,
                                   s.scratch_bytes, nullptr),
            DF11_ERROR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace df11::clitest
