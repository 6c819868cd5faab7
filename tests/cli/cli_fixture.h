// The pipeline test fixture: a temp folder with model/, df11/, restored/ and the three
// commands run through their library entry points with captured output.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "cli_test_model.h"
#include "commands.h"
#include "df11/metadata.h"
#include "df11/model_folder.h"
#include "df11/safetensors.h"
#include "signals.h"

namespace df11::clitest {

namespace fs = std::filesystem;
using app::CompressOptions;
using app::DecompressOptions;
using app::VerifyOptions;

inline constexpr const char* kShard1 = "model-00001-of-00002.safetensors";
inline constexpr const char* kShard2 = "model-00002-of-00002.safetensors";

struct Captured {
  int code = -1;
  std::string out, err;
};

class PipelineFixture : public ::testing::Test {
 protected:
  void SetUp() override { app::reset_interrupt_for_testing(); }

  fs::path model() const { return tmp_ / "model"; }
  fs::path df11() const { return tmp_ / "df11"; }
  fs::path restored() const { return tmp_ / "restored"; }

  CompressOptions compress_options() const {
    CompressOptions o;
    o.model_dir = model();
    o.out_dir = df11();
    // Small chunks and steps: many chunks per group and several encode steps per group.
    o.chunk_weights = 4096;
    o.step_weights = 3 * 4096;
    return o;
  }
  Captured compress(const CompressOptions& o) const {
    std::ostringstream out, err;
    const int code = app::run_compress_command(o, {}, out, err);
    return {code, out.str(), err.str()};
  }
  Captured compress() const { return compress(compress_options()); }
  Captured decompress(bool force = false) const {
    DecompressOptions o;
    o.parallel_files = 2;  // both shards at once: the concurrent path
    o.df11_dir = df11();
    o.out_dir = restored();
    o.force = force;
    std::ostringstream out, err;
    const int code = app::run_decompress_command(o, {}, out, err);
    return {code, out.str(), err.str()};
  }
  Captured verify(const std::optional<fs::path>& against = std::nullopt,
                  const fs::path& dir = {}) const {
    VerifyOptions o;
    o.df11_dir = dir.empty() ? df11() : dir;
    o.against = against;
    o.device = app::DeviceChoice::kCpu;
    o.parallel_files = 2;
    std::ostringstream out, err;
    const int code = app::run_verify_command(o, {}, out, err);
    return {code, out.str(), err.str()};
  }

  // Compress, decompress, compare every file; verify with and without --against.
  void expect_round_trip(const CompressOptions& o) {
    const Captured c = compress(o);
    ASSERT_EQ(c.code, 0) << c.err;
    const Captured d = decompress();
    ASSERT_EQ(d.code, 0) << d.err;
    EXPECT_EQ(tree_sha256(restored()), tree_sha256(model()));
    const Captured v = verify();
    EXPECT_EQ(v.code, 0) << v.out << v.err;
    const Captured va = verify(model());
    EXPECT_EQ(va.code, 0) << va.out << va.err;
    EXPECT_NE(va.out.find(": OK: "), std::string::npos) << va.out;
  }

  TempDir tmp_;
};

inline nlohmann::ordered_json read_json(const fs::path& file) {
  return nlohmann::ordered_json::parse(read_text(file));
}

// Both folders hold the same tensors: names, dtypes, shapes and bytes (bit for bit), whatever
// their files and order.
inline void expect_same_tensors(const fs::path& a, const fs::path& b) {
  auto fa = app::open_model_folder(a);
  auto fb = app::open_model_folder(b);
  ASSERT_TRUE(fa.is_ok()) << fa.status().to_string();
  ASSERT_TRUE(fb.is_ok()) << fb.status().to_string();
  EXPECT_EQ(fa->tensors.size(), fb->tensors.size());
  for (const auto& [name, at] : fa->tensors) {
    const auto it = fb->tensors.find(name);
    if (it == fb->tensors.end()) {
      ADD_FAILURE() << name << ": in " << a << ", not in " << b;
      continue;
    }
    const TensorInfo& ta = fa->tensor(at);
    const TensorInfo& tb = fb->tensor(it->second);
    EXPECT_EQ(ta.dtype, tb.dtype) << name;
    EXPECT_EQ(ta.shape, tb.shape) << name;
    const auto ba = fa->shards[at.shard].tensor_bytes(ta);
    const auto bb = fb->shards[it->second.shard].tensor_bytes(tb);
    EXPECT_TRUE(std::equal(ba.begin(), ba.end(), bb.begin(), bb.end())) << name;
  }
}

inline Df11Metadata metadata_of(const fs::path& shard) {
  auto file = SafetensorsFile::open(shard.string());
  EXPECT_TRUE(file.is_ok()) << file.status().to_string();
  auto meta = read_df11_metadata(file->header());
  EXPECT_TRUE(meta.is_ok() && meta->has_value());
  return **meta;
}

}  // namespace df11::clitest
