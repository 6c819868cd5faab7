// The tools C API (df11/df11_tools.h) through libdf11-tools.so, as a program links it:
// compressing a checkpoint held in memory gives, file for file and byte for byte, what the
// df11 tool writes for the same checkpoint saved as files (sharded and not, tied head or not,
// tensors given as bytes or through a reader); library-made shards round-trip through
// decompress; a shard's header is laid out as the safetensors library writes it; progress
// and cancellation; and every kind of bad input fails with a message naming what is wrong and
// leaves no output.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cli_process.h"
#include "cli_test_model.h"
#include "df11/df11_tools.h"
#include "df11/exec_compact_encode.h"  // the reference encoder
#include "df11/safetensors.h"

namespace df11::clitest {
namespace {

namespace fs = std::filesystem;

struct Checkpoint {
  df11_checkpoint* ck = nullptr;
  Checkpoint() { EXPECT_EQ(df11_checkpoint_create(&ck), DF11_OK); }
  ~Checkpoint() { df11_checkpoint_free(ck); }
  std::string error() const { return df11_checkpoint_errmsg(ck); }
};

// A tensor's bytes for a reader: copies out of the mapped file, and checks that the library
// never calls two readers at once.
struct ReaderState {
  std::atomic<int> in_flight{0};
  std::atomic<int> overlaps{0};
  std::atomic<uint64_t> calls{0};
  int fail_with = 0;  // non-zero: every call fails with it
};
struct TensorSource {
  const uint8_t* bytes;
  ReaderState* state;
};
int read_tensor(void* user, uint64_t offset, void* dst, size_t bytes) {
  auto* source = static_cast<TensorSource*>(user);
  ReaderState& s = *source->state;
  if (s.in_flight.fetch_add(1) != 0) s.overlaps.fetch_add(1);
  s.calls.fetch_add(1);
  std::memcpy(dst, source->bytes + offset, bytes);
  s.in_flight.fetch_sub(1);
  return s.fail_with;
}

// A checkpoint folder on disk described to the tools API as it is: every shard's tensors in
// file order (pointing into the mapped files), its __metadata__, and every other file.
class DescribedFolder {
 public:
  explicit DescribedFolder(const fs::path& dir) : dir_(dir) {
    for (const std::string& name : list_dir(dir)) {
      if (!name.ends_with(".safetensors")) continue;
      Result<SafetensorsFile> file = SafetensorsFile::open((dir / name).string());
      EXPECT_TRUE(file.is_ok()) << file.status().to_string();
      shards_.emplace_back(name, std::move(file).value());
    }
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      const std::string rel = entry.path().lexically_relative(dir).generic_string();
      if (entry.is_regular_file() &&
          !(rel.ends_with(".safetensors") && rel.find('/') == rel.npos)) {
        files_[rel] = read_text(entry.path());
      }
    }
  }

  // Adds everything; `with_files`: name each tensor's shard (else the library shards);
  // `reader`: give the bytes through read_tensor instead of pointers.
  void add_to(df11_checkpoint* ck, bool with_files = true, ReaderState* reader = nullptr,
              const std::vector<std::string>& skip_files = {}) {
    for (const auto& [name, file] : shards_) {
      for (const TensorInfo& t : file.header().tensors) {
        const std::span<const uint8_t> bytes = file.tensor_bytes(t);
        const char* shard = with_files ? name.c_str() : nullptr;
        df11_status rc;
        if (reader != nullptr) {
          sources_.push_back(std::make_unique<TensorSource>(TensorSource{bytes.data(), reader}));
          rc = df11_checkpoint_add_tensor_reader(ck, shard, t.name.c_str(), dtype_name(t.dtype),
                                                 t.shape.size(), t.shape.data(), bytes.size(),
                                                 read_tensor, sources_.back().get());
        } else {
          rc = df11_checkpoint_add_tensor(ck, shard, t.name.c_str(), dtype_name(t.dtype),
                                          t.shape.size(), t.shape.data(), bytes.data(),
                                          bytes.size());
        }
        ASSERT_EQ(rc, DF11_OK) << df11_checkpoint_errmsg(ck);
      }
      if (!with_files) continue;
      for (const auto& [key, value] : file.header().metadata) {
        ASSERT_EQ(df11_checkpoint_set_shard_metadata(ck, name.c_str(), key.c_str(), value.c_str()),
                  DF11_OK)
            << df11_checkpoint_errmsg(ck);
      }
    }
    for (const auto& [rel, text] : files_) {
      if (std::find(skip_files.begin(), skip_files.end(), rel) != skip_files.end()) continue;
      ASSERT_EQ(df11_checkpoint_add_file(ck, rel.c_str(), text.data(), text.size()), DF11_OK)
          << df11_checkpoint_errmsg(ck);
    }
  }

 private:
  fs::path dir_;
  std::vector<std::pair<std::string, SafetensorsFile>> shards_;
  std::map<std::string, std::string> files_;
  std::vector<std::unique_ptr<TensorSource>> sources_;
};

void expect_same_tree(const fs::path& a, const fs::path& b) {
  const auto ta = tree_sha256(a);
  const auto tb = tree_sha256(b);
  ASSERT_FALSE(ta.empty());
  EXPECT_EQ(ta, tb) << a << " and " << b << " differ";
}

void df11_ok(const std::vector<std::string>& args, const fs::path& scratch) {
  const ProcessResult r = run_df11(args, scratch);
  EXPECT_EQ(r.exit_code, 0) << "df11 " << args.front() << ": " << r.err << r.out;
}

// Nothing of an output: neither the folder nor its staging sibling.
void expect_no_output(const fs::path& out) {
  EXPECT_FALSE(fs::exists(out));
  for (const std::string& name : list_dir(out.parent_path())) {
    EXPECT_EQ(name.find(out.filename().string() + ".df11-tmp"), std::string::npos) << name;
  }
}

struct Shape {
  bool sharded;
  bool tied;
  bool reader;
};

class ToolsCompress : public ::testing::TestWithParam<Shape> {};

TEST_P(ToolsCompress, FromMemoryEqualsTheToolOnTheSavedFolder) {
  TempDir tmp;
  TinyLlama llama;
  llama.sharded = GetParam().sharded;
  llama.tied_embeddings = GetParam().tied;
  write_tiny_llama(tmp / "bf16", llama);
  df11_ok(
      {"compress", (tmp / "bf16").string(), "-o", (tmp / "disk").string(), "-q", "--source-sha256"},
      tmp.path());

  DescribedFolder folder(tmp / "bf16");
  Checkpoint c;
  ReaderState reader;
  folder.add_to(c.ck, true, GetParam().reader ? &reader : nullptr);
  ASSERT_EQ(df11_checkpoint_set_option(c.ck, DF11_COMPRESS_SOURCE_SHA256, 1), DF11_OK);
  ASSERT_EQ(df11_checkpoint_compress(c.ck, (tmp / "memory").string().c_str()), DF11_OK)
      << c.error();
  expect_same_tree(tmp / "disk", tmp / "memory");
  if (GetParam().reader) {
    EXPECT_GT(reader.calls.load(), 0u);
    EXPECT_EQ(reader.overlaps.load(), 0) << "two reads ran at once";
  }
  EXPECT_EQ(df11_checkpoint_result(c.ck, DF11_RESULT_SHARDS), llama.sharded ? 2u : 1u);
  EXPECT_GT(df11_checkpoint_result(c.ck, DF11_RESULT_GROUPS_CODED), 0u);
  EXPECT_LT(df11_checkpoint_result(c.ck, DF11_RESULT_OUTPUT_BYTES),
            df11_checkpoint_result(c.ck, DF11_RESULT_INPUT_BYTES));
  df11_ok(
      {"verify", (tmp / "memory").string(), "--against", (tmp / "bf16").string(), "--sha256", "-q"},
      tmp.path());
}

INSTANTIATE_TEST_SUITE_P(Shapes, ToolsCompress,
                         ::testing::Values(Shape{true, false, false}, Shape{false, true, false},
                                           Shape{true, true, true}, Shape{false, false, true}),
                         [](const auto& info) {
                           return std::string(info.param.sharded ? "Sharded" : "OneFile") +
                                  (info.param.tied ? "Tied" : "Untied") +
                                  (info.param.reader ? "Reader" : "Bytes");
                         });

// Shards the library makes: named and indexed as huggingface_hub does, and the folder
// decompresses (SHA-256 checked) into a BF16 checkpoint that the tool compresses into the
// same bytes again: the recorded headers and hashes are those of real files.
TEST(ToolsCompress, LibraryShardsRoundTripThroughDecompress) {
  TempDir tmp;
  TinyLlama llama;
  llama.sharded = false;
  write_tiny_llama(tmp / "bf16", llama);
  DescribedFolder folder(tmp / "bf16");
  Checkpoint c;
  folder.add_to(c.ck, /*with_files=*/false);
  ASSERT_EQ(df11_checkpoint_set_option(c.ck, DF11_COMPRESS_SHARD_BYTES, 60000), DF11_OK);
  ASSERT_EQ(df11_checkpoint_set_option(c.ck, DF11_COMPRESS_SOURCE_SHA256, 1), DF11_OK);
  ASSERT_EQ(df11_checkpoint_compress(c.ck, (tmp / "memory").string().c_str()), DF11_OK)
      << c.error();
  const uint64_t shards = df11_checkpoint_result(c.ck, DF11_RESULT_SHARDS);
  ASSERT_GE(shards, 3u);
  const std::string last =
      "model-0000" + std::to_string(shards) + "-of-0000" + std::to_string(shards) + ".safetensors";
  EXPECT_TRUE(fs::exists(tmp / "memory" / last)) << last;
  EXPECT_TRUE(fs::exists(tmp / "memory" / "model.safetensors.index.json"));

  df11_ok({"decompress", (tmp / "memory").string(), "-o", (tmp / "restored").string(), "--sha256",
           "-q"},
          tmp.path());
  const std::string index = read_text(tmp / "restored" / "model.safetensors.index.json");
  EXPECT_NE(index.find("\"total_size\""), std::string::npos) << index;
  EXPECT_NE(index.find("\"model.embed_tokens.weight\": \"model-00001-of-0000"), std::string::npos)
      << index;
  df11_ok({"compress", (tmp / "restored").string(), "-o", (tmp / "again").string(), "-q",
           "--source-sha256"},
          tmp.path());
  expect_same_tree(tmp / "memory", tmp / "again");
}

// The header of a shard that was never written is the one the safetensors library would
// write: compact JSON, __metadata__ first, tensors in the order given, spaces to 8 bytes.
TEST(ToolsCompress, ShardHeaderIsLaidOutAsSafetensorsWritesIt) {
  TempDir tmp;
  std::vector<uint8_t> weight(2 * 64 * 64);
  for (size_t i = 0; i < weight.size(); i += 2) {
    weight[i] = static_cast<uint8_t>(i * 37);
    weight[i + 1] = static_cast<uint8_t>(0x3c + (i / 2) % 3);  // 0x3c.. : about 0.01 .. 0.06
  }
  const float scale[2] = {1.0f, 0.5f};
  const uint64_t w_shape[2] = {64, 64};
  const uint64_t s_shape[1] = {2};
  Checkpoint c;
  ASSERT_EQ(df11_checkpoint_add_tensor(c.ck, "model.safetensors", "proj.weight", "BF16", 2, w_shape,
                                       weight.data(), weight.size()),
            DF11_OK);
  ASSERT_EQ(df11_checkpoint_add_tensor(c.ck, "model.safetensors", "a_scale", "F32", 1, s_shape,
                                       scale, sizeof scale),
            DF11_OK);
  ASSERT_EQ(df11_checkpoint_set_shard_metadata(c.ck, "model.safetensors", "format", "pt"), DF11_OK);
  const std::string config = "{\"model_type\": \"toy\"}";
  ASSERT_EQ(df11_checkpoint_add_file(c.ck, "config.json", config.data(), config.size()), DF11_OK);
  ASSERT_EQ(df11_checkpoint_set_option(c.ck, DF11_COMPRESS_SOURCE_SHA256, 1), DF11_OK);
  ASSERT_EQ(df11_checkpoint_compress(c.ck, (tmp / "df11").string().c_str()), DF11_OK) << c.error();
  df11_ok({"decompress", (tmp / "df11").string(), "-o", (tmp / "bf16").string(), "--sha256", "-q"},
          tmp.path());

  std::string header =
      "{\"__metadata__\":{\"format\":\"pt\"},"
      "\"proj.weight\":{\"dtype\":\"BF16\",\"shape\":[64,64],\"data_offsets\":[0,8192]},"
      "\"a_scale\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8192,8200]}}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string expected(8, '\0');
  for (int i = 0; i < 8; ++i) expected[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  expected += header;
  expected.append(reinterpret_cast<const char*>(weight.data()), weight.size());
  expected.append(reinterpret_cast<const char*>(scale), sizeof scale);
  EXPECT_EQ(read_text(tmp / "bf16" / "model.safetensors"), expected);
  EXPECT_EQ(read_text(tmp / "bf16" / "config.json"), config);
}

// A tensor above the 64 MiB a reader is asked for at once: read in several calls at growing
// offsets, and the folder is the same as from its bytes.
TEST(ToolsCompress, ReaderOfATensorAboveOneStep) {
  TempDir tmp;
  const uint64_t shape[2] = {4224, 8192};  // 69 MB of BF16
  std::vector<uint16_t> w(shape[0] * shape[1]);
  uint64_t x = 88172645463325252ull;
  for (uint16_t& v : w) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v = static_cast<uint16_t>(0x3c00 + (x % 0x0500)) | static_cast<uint16_t>((x >> 40) & 0x8000);
  }
  const std::string config = "{\"model_type\": \"toy\"}";
  ReaderState reader;
  TensorSource source{reinterpret_cast<const uint8_t*>(w.data()), &reader};
  for (const bool through_reader : {false, true}) {
    Checkpoint c;
    const df11_status added =
        through_reader
            ? df11_checkpoint_add_tensor_reader(c.ck, nullptr, "proj.weight", "BF16", 2, shape,
                                                2 * w.size(), read_tensor, &source)
            : df11_checkpoint_add_tensor(c.ck, nullptr, "proj.weight", "BF16", 2, shape, w.data(),
                                         2 * w.size());
    ASSERT_EQ(added, DF11_OK) << c.error();
    ASSERT_EQ(df11_checkpoint_add_file(c.ck, "config.json", config.data(), config.size()), DF11_OK);
    const fs::path out = tmp / (through_reader ? "reader" : "bytes");
    ASSERT_EQ(df11_checkpoint_compress(c.ck, out.string().c_str()), DF11_OK) << c.error();
  }
  expect_same_tree(tmp / "bytes", tmp / "reader");
  // Planning and coding each read it in two steps (64 MiB, then the rest).
  EXPECT_EQ(reader.calls.load(), 4u);
  // The shard's SHA-256 (DF11_COMPRESS_SOURCE_SHA256) reads it a third time, in two steps too.
  Checkpoint c;
  ASSERT_EQ(df11_checkpoint_add_tensor_reader(c.ck, nullptr, "proj.weight", "BF16", 2, shape,
                                              2 * w.size(), read_tensor, &source),
            DF11_OK);
  ASSERT_EQ(df11_checkpoint_add_file(c.ck, "config.json", config.data(), config.size()), DF11_OK);
  ASSERT_EQ(df11_checkpoint_set_option(c.ck, DF11_COMPRESS_SOURCE_SHA256, 1), DF11_OK);
  ASSERT_EQ(df11_checkpoint_compress(c.ck, (tmp / "sha").string().c_str()), DF11_OK) << c.error();
  EXPECT_EQ(reader.calls.load(), 4u + 6u);
  EXPECT_EQ(reader.overlaps.load(), 0);
}

int stop_at_compressing(void* user, const char* phase, uint64_t done, uint64_t total) {
  auto* seen = static_cast<std::vector<std::string>*>(user);
  EXPECT_LE(done, total);
  if (seen->empty() || seen->back() != phase) seen->push_back(phase);
  return std::string(phase) == "compressing" && done > 0 ? 1 : 0;
}

int count_progress(void* user, const char* phase, uint64_t done, uint64_t total) {
  static_cast<std::map<std::string, std::pair<int, uint64_t>>*>(user)->operator[](phase) = {0,
                                                                                            done};
  EXPECT_LE(done, total);
  return 0;
}

TEST(ToolsCompress, ProgressReportsPhasesAndCanStop) {
  TempDir tmp;
  write_tiny_llama(tmp / "bf16", TinyLlama{});
  DescribedFolder folder(tmp / "bf16");
  {
    Checkpoint c;
    folder.add_to(c.ck);
    std::map<std::string, std::pair<int, uint64_t>> last;
    ASSERT_EQ(df11_checkpoint_set_progress(c.ck, count_progress, &last), DF11_OK);
    ASSERT_EQ(df11_checkpoint_compress(c.ck, (tmp / "done").string().c_str()), DF11_OK)
        << c.error();
    ASSERT_EQ(last.count("planning"), 1u);
    ASSERT_EQ(last.count("compressing"), 1u);
    EXPECT_GT(last["compressing"].second, 0u);
  }
  Checkpoint c;
  folder.add_to(c.ck);
  std::vector<std::string> phases;
  ASSERT_EQ(df11_checkpoint_set_progress(c.ck, stop_at_compressing, &phases), DF11_OK);
  EXPECT_EQ(df11_checkpoint_compress(c.ck, (tmp / "stopped").string().c_str()),
            DF11_ERROR_INTERRUPTED);
  EXPECT_NE(c.error().find("progress callback"), std::string::npos) << c.error();
  EXPECT_EQ(phases, (std::vector<std::string>{"planning", "compressing"}));
  expect_no_output(tmp / "stopped");
}

TEST(ToolsCompress, WarningsAreKept) {
  TempDir tmp;
  TinyLlama llama;
  llama.inf_tensor = "model.layers.1.mlp.up_proj.weight";
  write_tiny_llama(tmp / "bf16", llama);
  df11_ok({"compress", (tmp / "bf16").string(), "-o", (tmp / "disk").string(), "-q"}, tmp.path());
  DescribedFolder folder(tmp / "bf16");
  Checkpoint c;
  folder.add_to(c.ck);
  ASSERT_EQ(df11_checkpoint_compress(c.ck, (tmp / "memory").string().c_str()), DF11_OK)
      << c.error();
  expect_same_tree(tmp / "disk", tmp / "memory");
  bool named = false;
  for (size_t i = 0; i < df11_checkpoint_warning_count(c.ck); ++i) {
    named = named || std::string(df11_checkpoint_warning(c.ck, i)).find(llama.inf_tensor) !=
                         std::string::npos;
  }
  EXPECT_TRUE(named) << "no warning names the tensor with +Inf";
  EXPECT_EQ(df11_checkpoint_warning(c.ck, df11_checkpoint_warning_count(c.ck)), nullptr);
}

// ---- Bad input: a clear error naming the tensor or file, and no output ----

class ToolsBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    write_tiny_llama(tmp_ / "bf16", TinyLlama{});
    folder_ = std::make_unique<DescribedFolder>(tmp_ / "bf16");
  }
  // Compresses into tmp/out, expecting `code` and a message containing `needle`.
  void expect_refused(Checkpoint& c, df11_status code, const std::string& needle) {
    EXPECT_EQ(df11_checkpoint_compress(c.ck, out().string().c_str()), code) << c.error();
    EXPECT_EQ(df11_checkpoint_errcode(c.ck), code);
    EXPECT_NE(c.error().find(needle), std::string::npos) << c.error();
    expect_no_output(out());
  }
  fs::path out() const { return tmp_ / "out"; }
  TempDir tmp_;
  std::unique_ptr<DescribedFolder> folder_;
};

TEST_F(ToolsBadInput, WrongSizeBadDtypeAndBadArgumentsAreRefusedAtOnce) {
  Checkpoint c;
  const uint64_t shape[2] = {4, 8};
  std::vector<uint8_t> bytes(64);
  EXPECT_EQ(
      df11_checkpoint_add_tensor(c.ck, nullptr, "w.weight", "BF16", 2, shape, bytes.data(), 60),
      DF11_ERROR_BAD_SHAPE);
  EXPECT_NE(c.error().find("tensor 'w.weight': BF16 [4, 8] is 64 bytes, but 60 were given"),
            std::string::npos)
      << c.error();
  EXPECT_EQ(
      df11_checkpoint_add_tensor(c.ck, nullptr, "w.weight", "BF17", 2, shape, bytes.data(), 64),
      DF11_ERROR_BAD_DTYPE);
  EXPECT_NE(c.error().find("tensor 'w.weight': unknown dtype 'BF17'"), std::string::npos)
      << c.error();
  EXPECT_EQ(df11_checkpoint_add_tensor(c.ck, nullptr, "w.weight", "BF16", 2, shape, nullptr, 64),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(df11_checkpoint_add_tensor(c.ck, "../model.safetensors", "w.weight", "BF16", 2, shape,
                                       bytes.data(), 64),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(c.error().find("not a shard file name"), std::string::npos) << c.error();
  EXPECT_EQ(
      df11_checkpoint_add_tensor(c.ck, nullptr, "__metadata__", "BF16", 2, shape, bytes.data(), 64),
      DF11_ERROR_INVALID_ARGUMENT);
  const uint64_t huge[2] = {UINT64_MAX / 2, 4};
  EXPECT_EQ(
      df11_checkpoint_add_tensor(c.ck, nullptr, "h.weight", "BF16", 2, huge, bytes.data(), 64),
      DF11_ERROR_OVERFLOW);
  EXPECT_EQ(df11_checkpoint_add_file(c.ck, "/etc/passwd", "x", 1), DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(df11_checkpoint_add_file(c.ck, "a/../b", "x", 1), DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(df11_checkpoint_add_file(c.ck, "extra.safetensors", "x", 1),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(df11_checkpoint_set_shard_metadata(c.ck, "none.safetensors", "format", "pt"),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(df11_checkpoint_set_option(c.ck, DF11_COMPRESS_GROUP_BY, 2),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(df11_checkpoint_set_option(c.ck, DF11_COMPRESS_SOURCE_SHA256, 2),
            DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(c.error().find("DF11_COMPRESS_SOURCE_SHA256 (0 or 1): 2 is out of range"),
            std::string::npos)
      << c.error();
  EXPECT_EQ(df11_checkpoint_set_option(c.ck, static_cast<df11_compress_option>(99), 0),
            DF11_ERROR_INVALID_ARGUMENT);
  // Nothing was added: compressing says so.
  const std::string config = "{}";
  ASSERT_EQ(df11_checkpoint_add_file(c.ck, "config.json", config.data(), config.size()), DF11_OK);
  expect_refused(c, DF11_ERROR_INVALID_ARGUMENT, "no tensors");
}

TEST_F(ToolsBadInput, DuplicateTensorName) {
  Checkpoint c;
  folder_->add_to(c.ck);
  const uint64_t shape[1] = {2};
  const uint16_t w[2] = {0x3f80, 0x3f80};
  ASSERT_EQ(df11_checkpoint_add_tensor(c.ck, "model-00002-of-00002.safetensors",
                                       "model.embed_tokens.weight", "BF16", 1, shape, w, 4),
            DF11_OK);
  expect_refused(c, DF11_ERROR_DUPLICATE_NAME,
                 "model-00002-of-00002.safetensors: tensor 'model.embed_tokens.weight' also "
                 "appears in model-00001-of-00002.safetensors");
}

TEST_F(ToolsBadInput, MissingConfig) {
  Checkpoint c;
  folder_->add_to(c.ck, true, nullptr, {"config.json"});
  expect_refused(c, DF11_ERROR_NOT_FOUND, "config.json: not given");
}

TEST_F(ToolsBadInput, DuplicateFile) {
  Checkpoint c;
  folder_->add_to(c.ck);
  ASSERT_EQ(df11_checkpoint_add_file(c.ck, "tokenizer.json", "{}", 2), DF11_OK);
  expect_refused(c, DF11_ERROR_DUPLICATE_NAME, "file 'tokenizer.json' given twice");
}

TEST_F(ToolsBadInput, SomeTensorsWithoutAShardFile) {
  Checkpoint c;
  folder_->add_to(c.ck);
  const uint64_t shape[1] = {2};
  const uint16_t w[2] = {0x3f80, 0x3f80};
  ASSERT_EQ(df11_checkpoint_add_tensor(c.ck, nullptr, "stray.weight", "BF16", 1, shape, w, 4),
            DF11_OK);
  expect_refused(c, DF11_ERROR_INVALID_ARGUMENT, "give every tensor a file, or none");
}

TEST_F(ToolsBadInput, IndexThatDoesNotNameAShard) {
  Checkpoint c;
  folder_->add_to(c.ck);
  const uint64_t shape[1] = {2};
  const uint16_t w[2] = {0x3f80, 0x3f80};
  ASSERT_EQ(df11_checkpoint_add_tensor(c.ck, "model-00003-of-00003.safetensors", "stray.weight",
                                       "BF16", 1, shape, w, 4),
            DF11_OK);
  expect_refused(c, DF11_ERROR_BAD_CONFIG,
                 "model.safetensors.index.json: its weight_map names no tensor of shard "
                 "'model-00003-of-00003.safetensors'");
}

TEST_F(ToolsBadInput, NoBf16Weights) {
  Checkpoint c;
  const uint64_t shape[2] = {4, 4};
  const std::vector<float> w(16, 0.5f);
  ASSERT_EQ(df11_checkpoint_add_tensor(c.ck, nullptr, "w.weight", "F32", 2, shape, w.data(), 64),
            DF11_OK);
  ASSERT_EQ(df11_checkpoint_add_file(c.ck, "config.json", "{}", 2), DF11_OK);
  expect_refused(c, DF11_ERROR_BAD_DTYPE, "checkpoint in memory: no BF16 weights to code");
}

TEST_F(ToolsBadInput, FailingReader) {
  Checkpoint c;
  ReaderState reader;
  reader.fail_with = 7;
  folder_->add_to(c.ck, true, &reader);
  expect_refused(c, DF11_ERROR_IO, "the read callback failed (returned 7)");
  EXPECT_NE(c.error().find("tensor '"), std::string::npos) << c.error();
}

TEST_F(ToolsBadInput, ExistingOutputNeedsForce) {
  fs::create_directories(out());
  Checkpoint c;
  folder_->add_to(c.ck);
  EXPECT_EQ(df11_checkpoint_compress(c.ck, out().string().c_str()), DF11_ERROR_EXISTS) << c.error();
  EXPECT_TRUE(list_dir(out()).empty());
  ASSERT_EQ(df11_checkpoint_set_option(c.ck, DF11_COMPRESS_FORCE, 1), DF11_OK);
  EXPECT_EQ(df11_checkpoint_compress(c.ck, out().string().c_str()), DF11_OK) << c.error();
  EXPECT_TRUE(fs::exists(out() / "config.json"));
}

TEST(ToolsHub, MalformedRepoIdIsRefusedWithoutNetwork) {
  df11_hub* hub = nullptr;
  ASSERT_EQ(df11_hub_create(&hub), DF11_OK);
  const char* dir = "unchanged";
  EXPECT_EQ(df11_hub_pull(hub, "not a repo id", &dir), DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(dir, nullptr);
  EXPECT_NE(std::string(df11_hub_errmsg(hub)).find("not a repo id"), std::string::npos)
      << df11_hub_errmsg(hub);
  EXPECT_EQ(df11_hub_set_transfers(hub, 0), DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(df11_hub_set_transfers(hub, 65), DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(df11_hub_set_transfers(hub, 4), DF11_OK);
  df11_hub_free(hub);
}

TEST(ToolsVersion, MatchesTheHeader) {
  EXPECT_EQ(df11_tools_version_number(), static_cast<unsigned>(DF11_TOOLS_VERSION_NUMBER));
}

// df11_tools_compact_lengths is the reference encoder's choose_compact_lengths: equal lengths
// for a weight matrix's exponent counts (most of the 256 absent, a long tail), a prefix code
// of at most 12 bits (Kraft sum <= 1), nothing for an absent exponent; bad input refused.
TEST(ToolsCompactLengths, AreTheReferenceEncodersLengths) {
  std::array<uint64_t, 256> counts{};
  counts[0] = 1000;                                                      // padding
  for (int e = 100; e < 127; ++e) counts[e] = uint64_t{1} << (e - 100);  // up to 2^26
  counts[200] = 1;                                                       // an outlier
  std::array<uint8_t, 256> got{};
  ASSERT_EQ(df11_tools_compact_lengths(counts.data(), got.data()), DF11_OK);
  const auto want = df11::choose_compact_lengths(counts);
  ASSERT_TRUE(want.is_ok());
  EXPECT_EQ(got, *want);
  double kraft = 0;
  for (size_t e = 0; e < 256; ++e) {
    EXPECT_EQ(got[e] == 0, counts[e] == 0) << e;
    EXPECT_LE(got[e], 12u) << e;
    if (got[e] != 0) kraft += std::ldexp(1.0, -got[e]);
  }
  EXPECT_LE(kraft, 1.0);
  std::array<uint64_t, 256> one{};
  one[127] = 5;
  ASSERT_EQ(df11_tools_compact_lengths(one.data(), got.data()), DF11_OK);
  EXPECT_EQ(got[127], 1u);
  const std::array<uint64_t, 256> none{};
  EXPECT_EQ(df11_tools_compact_lengths(none.data(), got.data()), DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(df11_tools_compact_lengths(nullptr, got.data()), DF11_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(df11_tools_compact_lengths(counts.data(), nullptr), DF11_ERROR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace df11::clitest
