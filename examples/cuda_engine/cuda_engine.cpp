// cuda_engine: how an inference engine uses df11 on the GPU, through the C API.
//
// Load time: open the DF11 folder, upload every coded group to the GPU once (the compressed
// bytes stay resident), and make one decode plan per transformer block, all writing into one
// reused device buffer (sized for the largest block).
// Per forward pass: for each block, decode its groups into the buffer on the engine's stream,
// then "use" the weights (here: copy them back and compare with the CPU decode, bit for bit).
// Two workspaces alternate (double buffering) and each block's status is read without
// waiting for the stream: a deferred copy, checked once the block's weights were used.
//
//   cuda_engine MODEL_DIR [PASSES]        exit 0 only if every block matched in every pass
#include <cuda_runtime.h>
#include <df11/df11.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

#define CHECK_CUDA(expr)                                                      \
  do {                                                                        \
    cudaError_t e_ = (expr);                                                  \
    if (e_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "error: %s: %s\n", #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                           \
    }                                                                         \
  } while (0)

// The block a group belongs to: "model.layers.12" for "model.layers.12.mlp", else itself.
std::string block_of(const std::string& group) {
  const std::string key = ".layers.";
  const size_t at = group.find(key);
  if (at == std::string::npos) return group;
  size_t end = at + key.size();
  while (end < group.size() && group[end] >= '0' && group[end] <= '9') ++end;
  return group.substr(0, end);
}

struct Block {
  std::string name;
  std::vector<size_t> groups;
  std::vector<uint64_t> out_offset;  // elements into the shared output buffer
  uint64_t elements = 0;
  df11_cuda_plan* plan = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s MODEL_DIR [PASSES]\n", argv[0]);
    return 2;
  }
  const int passes = argc == 3 ? std::atoi(argv[2]) : 2;
  df11_model* model = nullptr;
  if (df11_model_open(argv[1], &model) != DF11_OK) {
    std::fprintf(stderr, "error: %s\n", df11_model_errmsg(model));
    df11_model_close(model);
    return 1;
  }
  if (!df11_has_cuda()) {
    std::fprintf(stderr, "error: this df11 was built without CUDA\n");
    return 1;
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s; df11 %s\n", prop.name, df11_version_string());

  // Upload every group's parts once, 16-byte aligned (the kernel's fast paths).
  const size_t n_groups = df11_model_group_count(model);
  const df11_group_part parts[5] = {DF11_PART_LUTS, DF11_PART_ENCODED_EXPONENT,
                                    DF11_PART_SIGN_MANTISSA, DF11_PART_OUTPUT_POSITIONS,
                                    DF11_PART_GAPS};
  std::vector<df11_cuda_group> dev(n_groups);
  std::vector<void*> allocations;
  uint64_t stored = 0, decoded = 0;
  for (size_t g = 0; g < n_groups; ++g) {
    const void* data[5];
    size_t bytes[5], total = 0;
    for (int p = 0; p < 5; ++p) {
      if (df11_group_part_bytes(model, g, parts[p], &data[p], &bytes[p]) != DF11_OK) {
        std::fprintf(stderr, "error: %s\n", df11_model_errmsg(model));
        return 1;
      }
      total += (bytes[p] + 15) / 16 * 16;
    }
    char* d = nullptr;
    CHECK_CUDA(cudaMalloc(&d, total));
    allocations.push_back(d);
    const void** slots[5] = {&dev[g].d_luts, &dev[g].d_encoded_exponent, &dev[g].d_sign_mantissa,
                             &dev[g].d_output_positions, &dev[g].d_gaps};
    for (int p = 0; p < 5; ++p) {
      CHECK_CUDA(cudaMemcpy(d, data[p], bytes[p], cudaMemcpyHostToDevice));
      *slots[p] = d;
      d += (bytes[p] + 15) / 16 * 16;
      stored += bytes[p];
    }
    decoded += 2 * df11_group_element_count(model, g);
  }
  std::printf("uploaded %zu groups: %llu stored bytes for %llu BF16 bytes (%.1f%%)\n", n_groups,
              static_cast<unsigned long long>(stored), static_cast<unsigned long long>(decoded),
              decoded ? 100.0 * static_cast<double>(stored) / static_cast<double>(decoded) : 0.0);

  // Blocks of consecutive groups, and the one output buffer they share.
  std::vector<Block> blocks;
  for (size_t g = 0; g < n_groups; ++g) {
    const std::string b = block_of(df11_group_name(model, g));
    if (blocks.empty() || blocks.back().name != b) blocks.push_back(Block{b, {}, {}, 0, nullptr});
    Block& blk = blocks.back();
    blk.groups.push_back(g);
    blk.out_offset.push_back(blk.elements);
    // 8 weights of padding keep every output 16-byte aligned.
    blk.elements += (df11_group_element_count(model, g) + 7) / 8 * 8;
  }
  uint64_t buffer_elements = 0;
  for (const Block& b : blocks) buffer_elements = std::max(buffer_elements, b.elements);
  uint16_t* d_weights = nullptr;
  CHECK_CUDA(cudaMalloc(&d_weights, 2 * std::max<uint64_t>(buffer_elements, 1)));

  size_t workspace_bytes = 0, status_bytes = 0;
  for (Block& b : blocks) {
    std::vector<df11_cuda_group> d(b.groups.size());
    for (size_t i = 0; i < b.groups.size(); ++i) {
      d[i] = dev[b.groups[i]];
      d[i].d_out = d_weights + b.out_offset[i];
    }
    if (df11_cuda_plan_create(model, b.groups.data(), b.groups.size(), d.data(), &b.plan) !=
        DF11_OK) {
      std::fprintf(stderr, "error: %s\n", df11_cuda_plan_errmsg(b.plan));
      return 1;
    }
    workspace_bytes = std::max(workspace_bytes, df11_cuda_plan_workspace_bytes(b.plan));
    status_bytes = std::max(status_bytes, df11_cuda_plan_status_bytes(b.plan));
  }
  std::printf("%zu blocks, one %.1f MiB output buffer\n", blocks.size(),
              2.0 * static_cast<double>(buffer_elements) / (1 << 20));

  // Two workspaces and two pinned status buffers, alternating block by block; every plan
  // shares them (the status read is that of the latest decode into the workspace).
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void* d_ws[2];
  void* h_status[2];
  for (int i = 0; i < 2; ++i) {
    CHECK_CUDA(cudaMalloc(&d_ws[i], std::max<size_t>(workspace_bytes, 16)));
    CHECK_CUDA(cudaMallocHost(&h_status[i], std::max<size_t>(status_bytes, 16)));
    if (df11_cuda_workspace_init(blocks[0].plan, d_ws[i], workspace_bytes, stream) != DF11_OK) {
      std::fprintf(stderr, "error: %s\n", df11_cuda_plan_errmsg(blocks[0].plan));
      return 1;
    }
  }
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));

  std::vector<uint16_t> gpu(buffer_elements), cpu;
  int failures = 0;
  for (int pass = 0; pass < passes; ++pass) {
    float decode_ms = 0;
    for (size_t bi = 0; bi < blocks.size(); ++bi) {
      Block& b = blocks[bi];
      const int w = static_cast<int>(bi % 2);
      CHECK_CUDA(cudaEventRecord(start, stream));
      if (df11_cuda_decode(b.plan, d_ws[w], workspace_bytes, stream) != DF11_OK ||
          df11_cuda_status_copy(b.plan, d_ws[w], h_status[w], status_bytes, stream) != DF11_OK) {
        std::fprintf(stderr, "error: %s: %s\n", b.name.c_str(), df11_cuda_plan_errmsg(b.plan));
        return 1;
      }
      CHECK_CUDA(cudaEventRecord(stop, stream));
      // The engine's use of the weights: here, a copy back for the comparison.
      CHECK_CUDA(
          cudaMemcpyAsync(gpu.data(), d_weights, 2 * b.elements, cudaMemcpyDeviceToHost, stream));
      CHECK_CUDA(cudaStreamSynchronize(stream));
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
      decode_ms += ms;
      bool ok = true;
      for (size_t i = 0; i < b.groups.size(); ++i) {
        if (df11_cuda_group_status(b.plan, h_status[w], status_bytes, i) != DF11_OK) {
          std::fprintf(stderr, "error: %s\n", df11_cuda_plan_errmsg(b.plan));
          ok = false;
          continue;
        }
        const uint64_t n = df11_group_element_count(model, b.groups[i]);
        cpu.resize(n);
        if (df11_decode_group(model, b.groups[i], cpu.data(), 2 * n) != DF11_OK) {
          std::fprintf(stderr, "error: %s\n", df11_model_errmsg(model));
          ok = false;
          continue;
        }
        if (std::memcmp(cpu.data(), gpu.data() + b.out_offset[i], 2 * n) != 0) {
          std::fprintf(stderr, "error: %s: group '%s': GPU and CPU decodes differ\n",
                       b.name.c_str(), df11_group_name(model, b.groups[i]));
          ok = false;
        }
      }
      if (!ok) ++failures;
      if (pass == 0) {
        std::printf("pass %d  %-24s %3zu groups %10llu weights  %s\n", pass, b.name.c_str(),
                    b.groups.size(), static_cast<unsigned long long>(b.elements),
                    ok ? "bit-exact vs CPU" : "FAILED");
      }
    }
    std::printf(
        "pass %d: %zu blocks decoded, %.3f ms of GPU decode in total (cudaEvent, one "
        "run, includes the status copies)\n",
        pass, blocks.size(), decode_ms);
  }
  if (df11_cuda_status_sync(blocks.back().plan, d_ws[(blocks.size() - 1) % 2], stream) != DF11_OK) {
    std::fprintf(stderr, "error: %s\n", df11_cuda_plan_errmsg(blocks.back().plan));
    ++failures;
  }

  for (Block& b : blocks) df11_cuda_plan_destroy(b.plan);
  for (int i = 0; i < 2; ++i) {
    cudaFree(d_ws[i]);
    cudaFreeHost(h_status[i]);
  }
  cudaFree(d_weights);
  for (void* p : allocations) cudaFree(p);
  cudaStreamDestroy(stream);
  df11_model_close(model);
  std::printf("%s\n",
              failures == 0 ? "OK: every block matched the CPU decode in every pass" : "FAILED");
  return failures == 0 ? 0 : 1;
}
