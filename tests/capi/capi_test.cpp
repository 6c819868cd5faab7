// The C API (df11/df11.h) end to end: a Llama-shaped checkpoint compressed by the df11 tool,
// opened through libdf11.so, every tensor decoded and compared bit for bit with the original
// file's bytes; then the errors an engine meets (missing folder, a plain BF16 folder, corrupt
// data, wrong sizes), each naming the file and the tensor or group.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "cli_process.h"
#include "cli_test_model.h"
#define DF11_EXPERIMENTAL
#include "df11/df11.h"
#include "df11/safetensors.h"

namespace df11::clitest {
namespace {

namespace fs = std::filesystem;

struct Model {
  df11_model* m = nullptr;
  ~Model() { df11_model_close(m); }
};

// A plan of group 0 whose device pointers are all null: its creation fails (unsupported
// without CUDA, invalid arguments with it), yet the plan handle exists to carry messages.
struct NullDevicePlan {
  df11_cuda_plan* plan = nullptr;
  df11_status created = DF11_OK;
  explicit NullDevicePlan(df11_model* m) {
    const size_t g = 0;
    const df11_cuda_group dev{};
    created = df11_cuda_plan_create(m, &g, 1, &dev, &plan);
  }
  ~NullDevicePlan() { df11_cuda_plan_destroy(plan); }
  NullDevicePlan(const NullDevicePlan&) = delete;
  NullDevicePlan& operator=(const NullDevicePlan&) = delete;
};

// The original tensors' bytes, by name.
std::map<std::string, std::vector<uint8_t>> original_tensors(const fs::path& dir) {
  std::map<std::string, std::vector<uint8_t>> all;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".safetensors") continue;
    Result<SafetensorsFile> f = SafetensorsFile::open(e.path().string());
    EXPECT_TRUE(f.is_ok()) << f.status().to_string();
    if (!f.is_ok()) continue;
    for (const TensorInfo& t : f->header().tensors) {
      const std::span<const uint8_t> b = f->tensor_bytes(t);
      all[t.name].assign(b.begin(), b.end());
    }
  }
  return all;
}

// Group 0 of the folder: its shard, its name, and the file offset of its stored tensor
// "<group>.<part>" (where a test flips a byte).
struct GroupSpot {
  std::string file, group;
  uint64_t offset = 0;
};
GroupSpot group0_spot(const fs::path& dir, const std::string& part) {
  Model model;
  EXPECT_EQ(df11_model_open(dir.c_str(), &model.m), DF11_OK);
  GroupSpot spot{df11_group_file(model.m, 0), df11_group_name(model.m, 0)};
  spot.offset = tensor_file_offset(dir / spot.file, spot.group + "." + part);
  return spot;
}

class CApi : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    TinyLlama llama;
    llama.layers = 3;
    llama.tied_embeddings = GetParam();  // tied: the folder may code lm_head as an alias
    write_tiny_llama(tmp_ / "model", llama);
    const ProcessResult r = run_df11(
        {"compress", (tmp_ / "model").string(), "-o", (tmp_ / "df11").string(), "-q"}, tmp_.path());
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  fs::path df11_dir() const { return tmp_ / "df11"; }
  TempDir tmp_;
};

TEST_P(CApi, VersionMatchesTheHeader) {
  EXPECT_EQ(df11_version_number(), unsigned{DF11_VERSION_NUMBER});
  EXPECT_STREQ(df11_version_string(), "0.1.0");
  EXPECT_STREQ(df11_status_name(DF11_ERROR_CORRUPT_DATA), "corrupt_data");
  EXPECT_STREQ(df11_status_name(DF11_ERROR_BAD_CONFIG), "bad_config");
  EXPECT_STREQ(df11_status_name(9999), "unknown");
}

TEST_P(CApi, EveryTensorDecodesToTheOriginalBytes) {
  const auto originals = original_tensors(tmp_ / "model");
  Model model;
  ASSERT_EQ(df11_model_open(df11_dir().c_str(), &model.m), DF11_OK) << df11_model_errmsg(model.m);
  const size_t n = df11_model_tensor_count(model.m);
  ASSERT_EQ(n, originals.size());
  size_t members = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::string name = df11_tensor_name(model.m, i);
    ASSERT_EQ(originals.count(name), 1u) << name;
    const std::vector<uint8_t>& want = originals.at(name);
    ASSERT_EQ(df11_tensor_byte_size(model.m, i), want.size()) << name;
    EXPECT_EQ(df11_model_find_tensor(model.m, name.c_str()), i);
    std::vector<uint16_t> buf(want.size() / 2 + 1);  // 2-byte aligned for members
    ASSERT_EQ(df11_decode_tensor(model.m, i, buf.data(), want.size()), DF11_OK)
        << df11_model_errmsg(model.m);
    EXPECT_EQ(std::memcmp(buf.data(), want.data(), want.size()), 0) << name;
    uint64_t elements = 1;
    for (size_t d = 0; d < df11_tensor_rank(model.m, i); ++d) {
      elements *= df11_tensor_shape(model.m, i)[d];
    }
    if (df11_tensor_group(model.m, i) != SIZE_MAX) {
      ++members;
      EXPECT_STREQ(df11_tensor_dtype(model.m, i), "BF16");
      EXPECT_EQ(2 * elements, want.size()) << name;
    }
  }
  EXPECT_GT(members, 0u);
  // Every group decodes to its members, concatenated.
  ASSERT_GT(df11_model_group_count(model.m), 0u);
  for (size_t g = 0; g < df11_model_group_count(model.m); ++g) {
    const uint64_t elements = df11_group_element_count(model.m, g);
    std::vector<uint16_t> out(elements);
    ASSERT_EQ(df11_decode_group(model.m, g, out.data(), 2 * elements), DF11_OK)
        << df11_model_errmsg(model.m);
    size_t stored = 0;
    for (int part = DF11_PART_LUTS; part <= DF11_PART_SPLIT_POSITIONS; ++part) {
      const void* data = nullptr;
      size_t bytes = 0;
      ASSERT_EQ(
          df11_group_part_bytes(model.m, g, static_cast<df11_group_part>(part), &data, &bytes),
          DF11_OK);
      stored += bytes;
    }
    EXPECT_GT(stored, 0u);
    EXPECT_LT(stored, 2 * elements);  // compressed
    for (size_t k = 0; k < df11_group_member_count(model.m, g); ++k) {
      const size_t t = df11_group_member(model.m, g, k);
      EXPECT_EQ(df11_tensor_group(model.m, t), g);
      const std::vector<uint8_t>& want = originals.at(df11_tensor_name(model.m, t));
      EXPECT_EQ(
          std::memcmp(out.data() + df11_tensor_group_offset(model.m, t), want.data(), want.size()),
          0);
    }
    // Any range decodes to the same weights as the whole group; one outside it is refused.
    std::vector<uint16_t> part(elements + 1);
    const uint64_t ranges[][2] = {
        {0, elements}, {0, 1}, {elements / 3, elements / 3 + 1}, {elements - 1, 1}, {elements, 0}};
    for (const auto& [first, count] : ranges) {
      ASSERT_EQ(df11_decode_group_range(model.m, g, first, part.data(), 2 * count), DF11_OK)
          << df11_model_errmsg(model.m);
      EXPECT_EQ(std::memcmp(part.data(), out.data() + first, 2 * count), 0) << first;
    }
    EXPECT_EQ(df11_decode_group_range(model.m, g, elements - 1, part.data(), 4),
              DF11_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(df11_decode_group_range(model.m, g, 0, part.data(), 3), DF11_ERROR_INVALID_ARGUMENT);
  }
}

// The header's promise: queries and CPU decodes run concurrently on one handle.
TEST_P(CApi, ConcurrentDecodesOnOneHandle) {
  const auto originals = original_tensors(tmp_ / "model");
  Model model;
  ASSERT_EQ(df11_model_open(df11_dir().c_str(), &model.m), DF11_OK);
  const size_t n = df11_model_tensor_count(model.m);
  std::vector<int> mismatches(4);
  std::vector<std::thread> threads;
  for (size_t k = 0; k < mismatches.size(); ++k) {
    threads.emplace_back([&, k] {
      for (size_t round = 0; round < 3; ++round) {
        for (size_t j = 0; j < n; ++j) {
          const size_t i = (j + k * 7) % n;  // the threads start at different tensors
          const std::vector<uint8_t>& want = originals.at(df11_tensor_name(model.m, i));
          std::vector<uint16_t> buf(want.size() / 2 + 1);
          if (df11_decode_tensor(model.m, i, buf.data(), want.size()) != DF11_OK ||
              std::memcmp(buf.data(), want.data(), want.size()) != 0) {
            ++mismatches[k];
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

// A team of the caller's threads, as GOMP_parallel runs one: fn(arg) on `threads` threads,
// this one among them. Counts its calls, so that a test sees the decode went through it.
std::atomic<int> team_calls{0};
void thread_team(void (*fn)(void*), void* arg, unsigned threads, unsigned flags) {
  EXPECT_EQ(flags, 0u);
  ++team_calls;
  std::vector<std::thread> others;
  for (unsigned i = 1; i < threads; ++i) others.emplace_back(fn, arg);
  fn(arg);
  for (std::thread& t : others) t.join();
}

// The _on decodes: the same bits and errors on a caller's team as on oneTBB's threads.
TEST_P(CApi, DecodesOnACallersTeam) {
  Model model;
  ASSERT_EQ(df11_model_open(df11_dir().c_str(), &model.m), DF11_OK);
  for (size_t g = 0; g < df11_model_group_count(model.m); ++g) {
    const uint64_t n = df11_group_element_count(model.m, g);
    std::vector<uint16_t> want(n), got(n, 0xDEAD);
    ASSERT_EQ(df11_decode_group(model.m, g, want.data(), 2 * n), DF11_OK);
    for (unsigned threads : {0u, 1u, 3u, 8u}) {
      const int calls = team_calls;
      ASSERT_EQ(df11_decode_group_on(model.m, g, got.data(), 2 * n, thread_team, threads), DF11_OK)
          << df11_model_errmsg(model.m);
      EXPECT_EQ(got, want) << g << " " << threads;
      EXPECT_EQ(team_calls - calls, threads >= 2 ? 1 : 0) << threads;
      std::fill(got.begin(), got.end(), 0xDEAD);
      const uint64_t first = n / 3, count = n - n / 3 - 1;
      ASSERT_EQ(df11_decode_group_range_on(model.m, g, first, got.data(), 2 * count, thread_team,
                                           threads),
                DF11_OK)
          << df11_model_errmsg(model.m);
      EXPECT_EQ(std::memcmp(got.data(), want.data() + first, 2 * count), 0) << g;
    }
    ASSERT_EQ(df11_decode_group_on(model.m, g, got.data(), 2 * n, nullptr, 8), DF11_OK);
    EXPECT_EQ(got, want);
    EXPECT_EQ(df11_decode_group_range_on(model.m, g, n - 1, got.data(), 4, thread_team, 2),
              DF11_ERROR_INVALID_ARGUMENT);
  }
  const auto [file, group, offset] = group0_spot(df11_dir(), "encoded_exponent");
  Model tbb_m, team_m;
  flip_byte(df11_dir() / file, offset + 100, 0x10);
  ASSERT_EQ(df11_model_open(df11_dir().c_str(), &tbb_m.m), DF11_OK);
  ASSERT_EQ(df11_model_open(df11_dir().c_str(), &team_m.m), DF11_OK);
  std::vector<uint16_t> out(df11_group_element_count(tbb_m.m, 0));
  const df11_status s = df11_decode_group(tbb_m.m, 0, out.data(), 2 * out.size());
  EXPECT_NE(s, DF11_OK);
  EXPECT_EQ(df11_decode_group_on(team_m.m, 0, out.data(), 2 * out.size(), thread_team, 4), s);
  EXPECT_STREQ(df11_model_errmsg(team_m.m), df11_model_errmsg(tbb_m.m));
  EXPECT_NE(std::string(df11_model_errmsg(team_m.m)).find(file + ": group '" + group + "'"),
            std::string::npos);
}

TEST_P(CApi, OpenErrorsNameTheFolder) {
  Model missing;
  EXPECT_EQ(df11_model_open((tmp_ / "nope").c_str(), &missing.m), DF11_ERROR_NOT_FOUND);
  ASSERT_NE(missing.m, nullptr);
  EXPECT_NE(std::string(df11_model_errmsg(missing.m)).find("nope"), std::string::npos)
      << df11_model_errmsg(missing.m);
  EXPECT_EQ(df11_model_errcode(missing.m), DF11_ERROR_NOT_FOUND);
  EXPECT_EQ(df11_model_tensor_count(missing.m), 0u);
  EXPECT_EQ(df11_tensor_name(missing.m, 0), nullptr);

  Model plain;  // a BF16 checkpoint is not a DF11 folder
  EXPECT_EQ(df11_model_open((tmp_ / "model").c_str(), &plain.m), DF11_ERROR_BAD_METADATA);
  EXPECT_NE(std::string(df11_model_errmsg(plain.m)).find("not a folder written by df11"),
            std::string::npos)
      << df11_model_errmsg(plain.m);
  df11_model_close(plain.m);
  plain.m = nullptr;
  EXPECT_EQ(df11_model_open(nullptr, &plain.m), DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(df11_model_open("x", nullptr), DF11_ERROR_INVALID_ARGUMENT);
}

TEST_P(CApi, MisuseIsReportedOnTheHandle) {
  Model model;
  ASSERT_EQ(df11_model_open(df11_dir().c_str(), &model.m), DF11_OK);
  EXPECT_STREQ(df11_model_errmsg(model.m), "");
  const size_t n = df11_model_tensor_count(model.m);
  std::vector<uint16_t> buf(16);
  EXPECT_EQ(df11_decode_tensor(model.m, n, buf.data(), 2), DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(df11_model_errmsg(model.m)).find("out of range"), std::string::npos);
  size_t member = SIZE_MAX;
  for (size_t i = 0; i < n && member == SIZE_MAX; ++i) {
    if (df11_tensor_group(model.m, i) != SIZE_MAX) member = i;
  }
  ASSERT_NE(member, SIZE_MAX);
  const std::string name = df11_tensor_name(model.m, member);
  EXPECT_EQ(df11_decode_tensor(model.m, member, buf.data(), 2), DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(df11_model_errmsg(model.m)).find("member '" + name + "'"),
            std::string::npos)
      << df11_model_errmsg(model.m);
  EXPECT_EQ(df11_model_find_tensor(model.m, "no.such.weight"), SIZE_MAX);
  EXPECT_EQ(df11_model_errcode(model.m), DF11_ERROR_NOT_FOUND);
  EXPECT_NE(std::string(df11_model_errmsg(model.m)).find("no.such.weight"), std::string::npos);
  EXPECT_EQ(df11_tensor_group(model.m, n), SIZE_MAX);
  EXPECT_EQ(df11_group_member(model.m, 0, 1u << 20), SIZE_MAX);
  const void* data = nullptr;
  size_t bytes = 0;
  EXPECT_EQ(df11_group_part_bytes(model.m, 0, static_cast<df11_group_part>(6), &data, &bytes),
            DF11_ERROR_INVALID_ARGUMENT);
  // Beyond the enumerators' range, as a C caller may pass (UBSan's enum check in CI).
  EXPECT_EQ(df11_group_part_bytes(model.m, 0, static_cast<df11_group_part>(99), &data, &bytes),
            DF11_ERROR_INVALID_ARGUMENT);
}

// A flipped bit inside a group's stored exponent stream: the header checksum does not cover
// tensor data, so open succeeds and the decode must report it, naming file and group.
TEST_P(CApi, CorruptStreamIsReportedNamingFileAndGroup) {
  const auto [file, group, offset] = group0_spot(df11_dir(), "encoded_exponent");
  flip_byte(df11_dir() / file, offset + 100, 0x10);
  Model model;
  ASSERT_EQ(df11_model_open(df11_dir().c_str(), &model.m), DF11_OK);
  std::vector<uint16_t> out(df11_group_element_count(model.m, 0));
  const df11_status s = df11_decode_group(model.m, 0, out.data(), 2 * out.size());
  EXPECT_NE(s, DF11_OK);
  const std::string msg = df11_model_errmsg(model.m);
  EXPECT_NE(msg.find(file + ": group '" + group + "'"), std::string::npos) << msg;
  // Each member fails too (its block, or its checksum).
  const size_t t = df11_group_member(model.m, 0, 0);
  std::vector<uint16_t> one(df11_tensor_byte_size(model.m, t) / 2);
  EXPECT_NE(df11_decode_tensor(model.m, t, one.data(), 2 * one.size()), DF11_OK);
  EXPECT_NE(std::string(df11_model_errmsg(model.m)).find(group), std::string::npos);
}

TEST_P(CApi, StoredChecksumsFindAByteThatDecodesFine) {
  {
    Model model;
    ASSERT_EQ(df11_model_open(df11_dir().c_str(), &model.m), DF11_OK);
    for (size_t g = 0; g < df11_model_group_count(model.m); ++g) {
      EXPECT_EQ(df11_group_check_stored(model.m, g), DF11_OK) << df11_model_errmsg(model.m);
    }
    EXPECT_EQ(df11_group_check_stored(model.m, df11_model_group_count(model.m)),
              DF11_ERROR_INVALID_ARGUMENT);
  }
  const auto [file, group, offset] = group0_spot(df11_dir(), "sign_mantissa");
  // A sign/mantissa byte: the stream's structure is intact, one weight changes.
  flip_byte(df11_dir() / file, offset + 7, 0x01);
  Model model;
  ASSERT_EQ(df11_model_open(df11_dir().c_str(), &model.m), DF11_OK);
  EXPECT_EQ(df11_group_check_stored(model.m, 0), DF11_ERROR_CORRUPT_DATA);
  const std::string msg = df11_model_errmsg(model.m);
  EXPECT_NE(msg.find(file + ": group '" + group + "': stored tensor '" + group + ".sign_mantissa'"),
            std::string::npos)
      << msg;
  EXPECT_EQ(df11_group_check_stored(nullptr, 0), DF11_ERROR_INVALID_ARGUMENT);
}

// df11_cuda_check_stored's host side: its scratch size, and its refusals before any device
// work (a NULL model or group list, a group out of range); without CUDA, unsupported.
TEST_P(CApi, CheckStoredOnTheDeviceRefusesBadArguments) {
  Model model;
  ASSERT_EQ(df11_model_open(df11_dir().c_str(), &model.m), DF11_OK);
  EXPECT_EQ(df11_cuda_check_stored_scratch_bytes(0), 0u);
  EXPECT_EQ(df11_cuda_check_stored_scratch_bytes(3), 3 * df11_cuda_check_stored_scratch_bytes(1));
  EXPECT_GE(df11_cuda_check_stored_scratch_bytes(1), 5u * 8);  // five digests at least
  const size_t group = 0;
  const df11_cuda_group dev{};
  EXPECT_EQ(df11_cuda_check_stored(nullptr, &group, &dev, 1, nullptr, 0, nullptr),
            DF11_ERROR_INVALID_ARGUMENT);
  const df11_status none =
      df11_cuda_check_stored(model.m, nullptr, nullptr, 1, nullptr, 0, nullptr);
  const size_t past = df11_model_group_count(model.m);
  const df11_status out = df11_cuda_check_stored(model.m, &past, &dev, 1, nullptr, 0, nullptr);
  if (df11_has_cuda() == 0) {
    EXPECT_EQ(none, DF11_ERROR_UNSUPPORTED);
    EXPECT_EQ(out, DF11_ERROR_UNSUPPORTED);
    return;
  }
  EXPECT_EQ(none, DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(out, DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(df11_model_errmsg(model.m)).find("the model has"), std::string::npos)
      << df11_model_errmsg(model.m);
}

TEST_P(CApi, ExecGemmWithARowStrideIsCheckedOnTheHost) {
  // df11_cuda_exec_gemm_ld: without CUDA unsupported; with it, a row stride below the matrix's
  // rows is refused before anything is launched (the blob's pointer is never read).
  Model model;
  ASSERT_EQ(df11_model_open(df11_dir().c_str(), &model.m), DF11_OK);
  alignas(16) static uint8_t fake_blob[4096];
  alignas(16) static uint16_t fake_x[64], fake_y[64];
  alignas(16) static uint8_t status[DF11_EXEC_STATUS_BYTES];
  df11_exec_gemm g{};
  g.w.d_blob = fake_blob;
  g.w.bytes = sizeof fake_blob;
  g.w.rows = 32;
  g.w.cols = 32;
  g.d_x = fake_x;
  g.d_y = fake_y;
  const df11_status s =
      df11_cuda_exec_gemm_ld(model.m, &g, 1, 1, 31, status, sizeof status, 0, nullptr);
  if (df11_has_cuda() == 0) {
    EXPECT_EQ(s, DF11_ERROR_UNSUPPORTED);
    return;
  }
  EXPECT_EQ(s, DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(df11_model_errmsg(model.m)).find("ld_y 31 is below its 32 rows"),
            std::string::npos)
      << df11_model_errmsg(model.m);
}

TEST_P(CApi, CudaEntryPointsMatchTheBuild) {
  Model model;
  ASSERT_EQ(df11_model_open(df11_dir().c_str(), &model.m), DF11_OK);
  const NullDevicePlan made(model.m);
  df11_cuda_plan* const plan = made.plan;
  const df11_status s = made.created;
  ASSERT_NE(plan, nullptr);
  if (df11_has_cuda() == 0) {
    EXPECT_EQ(s, DF11_ERROR_UNSUPPORTED);
    EXPECT_NE(std::string(df11_cuda_plan_errmsg(plan)).find("without CUDA"), std::string::npos);
  } else {
    EXPECT_EQ(s, DF11_ERROR_INVALID_ARGUMENT);  // null device pointers, checked on the host
    EXPECT_NE(std::string(df11_cuda_plan_errmsg(plan)).find("is null"), std::string::npos)
        << df11_cuda_plan_errmsg(plan);
  }
  EXPECT_EQ(df11_cuda_plan_workspace_bytes(plan), 0u);
  EXPECT_NE(df11_cuda_decode(plan, nullptr, 0, nullptr), DF11_OK);

  // The statuses of several plans: nothing to do for none; a null argument or a plan that
  // failed to be created is an error (its index in `failed`), never an OK read.
  df11_cuda_plan* plans[] = {plan, nullptr};
  const void* workspaces[] = {nullptr, nullptr};
  static uint8_t slots[2 * 256];
  size_t failed = 9;
  EXPECT_EQ(df11_cuda_status_copy_many(nullptr, nullptr, 0, nullptr, 0, nullptr), DF11_OK);
  EXPECT_EQ(df11_cuda_group_status_many(nullptr, 0, nullptr, 0, nullptr), DF11_OK);
  EXPECT_EQ(df11_cuda_status_copy_many(nullptr, workspaces, 1, slots, 256, nullptr),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(df11_cuda_status_copy_many(plans, workspaces, 2, slots, 256, nullptr),
            DF11_ERROR_INVALID_ARGUMENT);  // plans[1] is null
  EXPECT_NE(df11_cuda_status_copy_many(plans, workspaces, 1, slots, 256, nullptr), DF11_OK);
  EXPECT_NE(df11_cuda_group_status_many(plans, 1, slots, 256, &failed), DF11_OK);
  EXPECT_EQ(failed, 0u);
  df11_cuda_plan* const second_null[] = {nullptr};
  EXPECT_EQ(df11_cuda_group_status_many(second_null, 1, slots, 256, &failed),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(failed, 0u);
  EXPECT_EQ(df11_cuda_group_status_many(plans, 1, nullptr, 256, &failed),
            DF11_ERROR_INVALID_ARGUMENT);
}

// The rows and spans decodes' argument checks come first, with or without CUDA:
// DF11_ERROR_INVALID_ARGUMENT and a message naming the argument on the plan (here a plan that
// failed to be created).
TEST_P(CApi, RowsAndSpansDecodeMisuseIsReportedOnThePlan) {
  Model model;
  ASSERT_EQ(df11_model_open(df11_dir().c_str(), &model.m), DF11_OK);
  const NullDevicePlan made(model.m);
  df11_cuda_plan* const plan = made.plan;
  ASSERT_NE(plan, nullptr);
  static int64_t fake_ids[4];  // device pointers the host never dereferences
  static uint16_t fake_out[16];
  const auto message = [&] { return std::string(df11_cuda_plan_errmsg(plan)); };
  EXPECT_EQ(df11_cuda_decode_rows(nullptr, 0, fake_ids, 1, 8, fake_out, nullptr, 0, nullptr),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(df11_cuda_decode_rows(plan, 0, nullptr, 1, 8, fake_out, nullptr, 0, nullptr),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("df11_cuda_decode_rows: d_ids is NULL"), std::string::npos) << message();
  EXPECT_EQ(df11_cuda_decode_rows(plan, 0, fake_ids, 1, 8, nullptr, nullptr, 0, nullptr),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("d_out is NULL"), std::string::npos) << message();
  EXPECT_EQ(df11_cuda_decode_rows(plan, 0, fake_ids, 1, 0, fake_out, nullptr, 0, nullptr),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("row_elements is 0"), std::string::npos) << message();
  EXPECT_EQ(df11_cuda_decode_rows_and_copy_status(plan, 0, nullptr, 2, 8, fake_out, nullptr, 0,
                                                  nullptr, 0, nullptr),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("df11_cuda_decode_rows_and_copy_status: d_ids is NULL"),
            std::string::npos)
      << message();
  // Well-formed arguments on a plan that does not exist: unsupported or invalid, never OK.
  const df11_status s =
      df11_cuda_decode_rows(plan, 0, fake_ids, 1, 8, fake_out, nullptr, 0, nullptr);
  EXPECT_EQ(s, df11_has_cuda() ? DF11_ERROR_INVALID_ARGUMENT : DF11_ERROR_UNSUPPORTED);

  // The selected-rows decode's, likewise.
  static int32_t fake_mask[4];
  const auto selected = [&](const int32_t* mask, size_t width, void* out) {
    return df11_cuda_decode_selected_rows(plan, 0, mask, width, 1, out, nullptr, 0, nullptr);
  };
  EXPECT_EQ(
      df11_cuda_decode_selected_rows(nullptr, 0, fake_mask, 8, 1, fake_out, nullptr, 0, nullptr),
      DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(selected(nullptr, 8, fake_out), DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("df11_cuda_decode_selected_rows: d_mask is NULL"), std::string::npos)
      << message();
  EXPECT_EQ(selected(fake_mask, 8, nullptr), DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("d_out is NULL"), std::string::npos) << message();
  EXPECT_EQ(selected(fake_mask, 0, fake_out), DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("row_elements is 0"), std::string::npos) << message();
  EXPECT_EQ(selected(fake_mask, 8, fake_out),
            df11_has_cuda() ? DF11_ERROR_INVALID_ARGUMENT : DF11_ERROR_UNSUPPORTED);

  // The spans decode's, likewise.
  const uint64_t offsets[DF11_CUDA_MAX_DECODE_SPANS + 1] = {};
  const uint64_t counts[DF11_CUDA_MAX_DECODE_SPANS + 1] = {8};
  const auto spans = [&](const uint64_t* o, const uint64_t* c, size_t n, void* out) {
    return df11_cuda_decode_spans(plan, 0, o, c, n, out, nullptr, 0, nullptr);
  };
  EXPECT_EQ(df11_cuda_decode_spans(nullptr, 0, offsets, counts, 1, fake_out, nullptr, 0, nullptr),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(spans(nullptr, counts, 1, fake_out), DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("df11_cuda_decode_spans: offsets or counts is NULL"), std::string::npos)
      << message();
  EXPECT_EQ(spans(offsets, nullptr, 1, fake_out), DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(spans(offsets, counts, DF11_CUDA_MAX_DECODE_SPANS + 1, fake_out),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("more than DF11_CUDA_MAX_DECODE_SPANS spans"), std::string::npos)
      << message();
  EXPECT_EQ(spans(offsets, counts, 1, nullptr), DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("d_out is NULL"), std::string::npos) << message();
  // Well-formed arguments on a plan that does not exist: unsupported or invalid, never OK.
  EXPECT_EQ(spans(offsets, counts, 1, fake_out),
            df11_has_cuda() ? DF11_ERROR_INVALID_ARGUMENT : DF11_ERROR_UNSUPPORTED);
}

// The fused GEMV's entry points on the host: misuse is DF11_ERROR_INVALID_ARGUMENT with a
// message on the plan whatever the plan's state (no GPU here: the plan cannot be sized), and
// with a GPU the matrices are checked against the plan's members. capi_gpu_test.cpp runs it.
TEST_P(CApi, GemvMisuseIsReportedOnThePlan) {
  Model model;
  ASSERT_EQ(df11_model_open(df11_dir().c_str(), &model.m), DF11_OK);
  static uint8_t fake[16];  // device pointers the host never dereferences
  size_t g = 0;
  while (g < df11_model_group_count(model.m) &&
         std::string(df11_group_name(model.m, g)) != "model.layers.0") {
    ++g;
  }
  ASSERT_LT(g, df11_model_group_count(model.m));
  const df11_cuda_group dev{fake, fake, fake, fake, fake, fake};
  df11_cuda_plan* plan = nullptr;
  const df11_status created = df11_cuda_plan_create(model.m, &g, 1, &dev, &plan);
  ASSERT_NE(plan, nullptr);
  std::vector<df11_gemv_matrix> m(df11_cuda_gemv_matrix_count(plan), {1, 1, fake, fake});
  size_t bytes = 0;
  const auto workspace = [&](uint32_t batch, const df11_gemv_matrix* p, size_t n) {
    return df11_cuda_gemv_workspace_bytes(plan, p, n, batch, &bytes);
  };
  const auto message = [&] { return std::string(df11_cuda_plan_errmsg(plan)); };
  EXPECT_EQ(df11_cuda_decode_gemv(nullptr, m.data(), m.size(), 1, fake, 16, nullptr),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(df11_cuda_gemv_workspace_bytes(nullptr, m.data(), m.size(), 1, &bytes),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(df11_cuda_gemv_matrix_count(nullptr), 0u);
  if (df11_has_cuda() == 0) {
    EXPECT_EQ(created, DF11_ERROR_UNSUPPORTED);
    EXPECT_EQ(df11_cuda_gemv_matrix_count(plan), 0u);
    EXPECT_EQ(workspace(1, m.data(), m.size()), DF11_ERROR_UNSUPPORTED);
    EXPECT_EQ(df11_cuda_decode_gemv(plan, m.data(), m.size(), 1, fake, 16, nullptr),
              DF11_ERROR_UNSUPPORTED);
    EXPECT_EQ(df11_cuda_reference_gemv(plan, fake, m.data(), 1, fake, 16, nullptr),
              DF11_ERROR_UNSUPPORTED);
    EXPECT_NE(message().find("without CUDA"), std::string::npos) << message();
    df11_cuda_plan_destroy(plan);
    return;
  }
  for (const uint32_t batch : {0u, 17u}) {
    EXPECT_EQ(workspace(batch, m.data(), m.size()), DF11_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(message(), "df11_cuda_gemv_workspace_bytes: batch " + std::to_string(batch) +
                             " is not within 1..16");
    EXPECT_EQ(df11_cuda_decode_gemv(plan, m.data(), m.size(), batch, fake, 16, nullptr),
              DF11_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(message(),
              "df11_cuda_decode_gemv: batch " + std::to_string(batch) + " is not within 1..16");
    EXPECT_EQ(df11_cuda_reference_gemv(plan, fake, m.data(), batch, fake, 16, nullptr),
              DF11_ERROR_INVALID_ARGUMENT);
  }
  EXPECT_EQ(df11_cuda_decode_gemv(plan, nullptr, 7, 1, fake, 16, nullptr),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message(), "df11_cuda_decode_gemv: matrices is NULL");
  EXPECT_EQ(df11_cuda_reference_gemv(plan, fake, nullptr, 1, fake, 16, nullptr),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message(), "df11_cuda_reference_gemv: m is NULL");
  if (created != DF11_OK) {  // no usable GPU: the plan reports its failure, and says so
    EXPECT_EQ(df11_cuda_gemv_matrix_count(plan), 0u);
    EXPECT_EQ(workspace(1, m.data(), m.size()), DF11_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(message(), "the plan failed to be created");
    df11_cuda_plan_destroy(plan);
    return;
  }
  // A GPU: the plan's members are the matrices, checked by count and shape.
  ASSERT_EQ(m.size(), 7u);  // q, k, v, o, gate, up, down
  for (size_t i = 0; i < m.size(); ++i) {
    const char* name = nullptr;
    ASSERT_EQ(df11_cuda_gemv_matrix_info(plan, i, &m[i], &name), DF11_OK) << message();
    ASSERT_NE(name, nullptr);
    EXPECT_EQ(df11_tensor_byte_size(model.m, df11_model_find_tensor(model.m, name)),
              2ull * m[i].rows * m[i].cols);
    m[i].d_x = fake;
    m[i].d_y = fake + 8;
  }
  EXPECT_EQ(df11_cuda_gemv_matrix_info(plan, 7, &m[0], nullptr), DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("matrix 7 out of range (the plan has 7)"), std::string::npos);
  EXPECT_EQ(workspace(3, m.data(), m.size()), DF11_OK) << message();
  EXPECT_GE(bytes, df11_cuda_plan_workspace_bytes(plan));
  EXPECT_EQ(workspace(3, m.data(), 6), DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("6 matrices, the plan's groups have 7 members"), std::string::npos);
  std::swap(m[6].rows, m[6].cols);
  EXPECT_EQ(df11_cuda_decode_gemv(plan, m.data(), m.size(), 3, fake, bytes, nullptr),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("matrices[6] ('model.layers.0.mlp.down_proj.weight') is"),
            std::string::npos)
      << message();
  df11_cuda_plan_destroy(plan);
}

// A tied lm_head is coded again as a group of its own for the dfloat11 loader (spec 5.3
// alias): it has no member of its own, and the API says which tensor it copies.
TEST_P(CApi, AliasGroupSaysWhichTensorItCopies) {
  Model model;
  ASSERT_EQ(df11_model_open(df11_dir().c_str(), &model.m), DF11_OK);
  const size_t embed = df11_model_find_tensor(model.m, "model.embed_tokens.weight");
  ASSERT_NE(embed, SIZE_MAX);
  size_t aliases = 0;
  for (size_t g = 0; g < df11_model_group_count(model.m); ++g) {
    const size_t copied = df11_group_alias_of(model.m, g);
    if (copied == SIZE_MAX) {
      EXPECT_GT(df11_group_member_count(model.m, g), 0u) << df11_group_name(model.m, g);
      EXPECT_EQ(df11_group_alias_name(model.m, g), nullptr);
      continue;
    }
    ++aliases;
    EXPECT_STREQ(df11_group_name(model.m, g), "lm_head");
    EXPECT_EQ(copied, embed);
    EXPECT_STREQ(df11_group_alias_name(model.m, g), "lm_head.weight");
    EXPECT_EQ(df11_group_member_count(model.m, g), 0u);
    EXPECT_EQ(2 * df11_group_element_count(model.m, g), df11_tensor_byte_size(model.m, embed));
    // Its decoded weights are the copied tensor's.
    std::vector<uint8_t> group(2 * df11_group_element_count(model.m, g));
    std::vector<uint8_t> tensor(df11_tensor_byte_size(model.m, embed));
    ASSERT_EQ(df11_decode_group(model.m, g, group.data(), group.size()), DF11_OK);
    ASSERT_EQ(df11_decode_tensor(model.m, embed, tensor.data(), tensor.size()), DF11_OK);
    EXPECT_EQ(group, tensor);
  }
  EXPECT_EQ(aliases, GetParam() ? 1u : 0u);
  EXPECT_EQ(df11_group_alias_of(model.m, df11_model_group_count(model.m)), SIZE_MAX);
  EXPECT_EQ(df11_group_alias_of(nullptr, 0), SIZE_MAX);
}

INSTANTIATE_TEST_SUITE_P(Untied, CApi, ::testing::Values(false));
INSTANTIATE_TEST_SUITE_P(Tied, CApi, ::testing::Values(true));

}  // namespace
}  // namespace df11::clitest
