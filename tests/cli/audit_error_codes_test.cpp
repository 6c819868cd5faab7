// Error code audit (issue 3: "check that every error code has a test"): one test per
// df11::ErrorCode that builds a real failing input, calls the public API (format, encoder,
// decoder, or the CLI's df11_app) and expects exactly that code, a message naming the file,
// tensor or group where the API takes a name, and the exit code the CLI maps it to
// (exit_codes.h). AuditErrorCodes.EveryCodeIsAudited walks the enum by its underlying values,
// so a code appended to status.h without an AUDIT_ERROR_CODE test here fails.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_model.h"
#include "commands.h"
#include "console.h"
#include "df11/decoder.h"
#include "df11/encoder.h"
#include "df11/file_io.h"
#include "df11/metadata.h"
#include "df11/model_config.h"
#include "df11/model_folder.h"
#include "df11/safetensors.h"
#include "df11/status.h"
#include "df11/verify.h"
#include "encoder_test_data.h"
#include "exit_codes.h"
#include "format_test_util.h"
#include "output_dir.h"
#include "signals.h"
#include "tensor_compare.h"

namespace df11::clitest {
namespace {

namespace fs = std::filesystem;

// Codes that have an AUDIT_ERROR_CODE test in this file (filled during static
// initialisation, before any test runs).
std::set<int>& audited_codes() {
  static std::set<int> codes;
  return codes;
}

bool register_audited(ErrorCode code) {
  audited_codes().insert(static_cast<int>(code));
  return true;
}

// Defines TEST(AuditErrorCodes, <code>) and records <code> as audited.
#define AUDIT_ERROR_CODE(code)                                                             \
  [[maybe_unused]] const bool audit_registered_##code = register_audited(ErrorCode::code); \
  TEST(AuditErrorCodes, code)

// The status has `code`, the CLI exits with `exit_code` for it, and the message contains
// every one of `names` (the file, tensor or group the failing call was given).
void expect_error(const Status& status, ErrorCode code, int exit_code,
                  std::initializer_list<std::string> names) {
  EXPECT_EQ(status.code(), code) << status.to_string();
  EXPECT_EQ(app::exit_code_for(status), exit_code) << status.to_string();
  EXPECT_FALSE(status.message().empty());
  for (const std::string& name : names) {
    EXPECT_NE(status.message().find(name), std::string::npos)
        << "message does not name '" << name << "': " << status.to_string();
  }
}

Status parse(const std::vector<uint8_t>& file) {
  return parse_safetensors(file, "audit.safetensors").status();
}

// A real coded group of gaussian weights (two blocks of stream).
GroupBuffers encoded_group() {
  static const std::vector<uint16_t> weights = df11::testing::gaussian_bf16(14000, 0.02, 7);
  std::span<const uint16_t> member(weights);
  Result<GroupBuffers> g = encode_group(std::span<const std::span<const uint16_t>>(&member, 1));
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  return g.is_ok() ? std::move(g).value() : GroupBuffers{};
}

Status decode(const GroupBuffers& g) {
  std::vector<uint16_t> out(g.sign_mantissa.size());
  const Status reference = decode_group_reference(g.view(), out, "audit.safetensors: group 'g'");
  // The fast decoder must report the same error as the reference one.
  const Status fast = decode_group(g.view(), out, "audit.safetensors: group 'g'");
  EXPECT_EQ(fast.to_string(), reference.to_string());
  return reference;
}

AUDIT_ERROR_CODE(kOk) {
  const std::string header = R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})";
  const Status s = parse(test::make_safetensors(header, 4));
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(s.code(), ErrorCode::kOk);
  EXPECT_EQ(app::exit_code_for(s), app::kExitOk);
}

AUDIT_ERROR_CODE(kIo) {
  // Root ignores file permissions, so the OS errors come from the shape of the paths: a
  // folder where a file is expected, and a path through a regular file (ENOTDIR).
  TempDir tmp;
  const fs::path file = tmp / "plain.safetensors";
  write_text(file, "x");
  expect_error(MappedFile::open(tmp.path().string()).status(), ErrorCode::kIo, app::kExitOtherError,
               {tmp.path().string(), "not a regular file"});
  const std::string through_file = (file / "x").string();
  expect_error(MappedFile::open(through_file).status(), ErrorCode::kIo, app::kExitOtherError,
               {through_file, "Not a directory"});
  expect_error(OutputFile::create(through_file).status(), ErrorCode::kIo, app::kExitOtherError,
               {through_file, "Not a directory"});
  expect_error(SafetensorsFile::open(through_file).status(), ErrorCode::kIo, app::kExitOtherError,
               {through_file});
}

AUDIT_ERROR_CODE(kInvalidArgument) {
  SafetensorsLayout layout;
  expect_error(layout.add_tensor("w", Dtype::kU8, {4}, 3), ErrorCode::kInvalidArgument,
               app::kExitUsage, {"'w'"});
}

AUDIT_ERROR_CODE(kHeaderTooLarge) {
  // The length prefix claims 1000 header bytes in a 10-byte file.
  expect_error(parse(test::make_safetensors("{}", 0, 1000)), ErrorCode::kHeaderTooLarge,
               app::kExitDataError, {"audit.safetensors"});
}

AUDIT_ERROR_CODE(kTruncated) {
  // Shorter than the 8-byte length prefix.
  expect_error(parse({1, 0, 0, 0, 0}), ErrorCode::kTruncated, app::kExitDataError,
               {"audit.safetensors"});
}

AUDIT_ERROR_CODE(kBadJson) {
  expect_error(parse(test::make_safetensors("{\"w\": [1, 2", 0)), ErrorCode::kBadJson,
               app::kExitDataError, {"audit.safetensors"});
}

AUDIT_ERROR_CODE(kBadDtype) {
  const std::string header = R"({"w":{"dtype":"Q7","shape":[1],"data_offsets":[0,1]}})";
  expect_error(parse(test::make_safetensors(header, 1)), ErrorCode::kBadDtype, app::kExitDataError,
               {"audit.safetensors", "'w'"});
}

AUDIT_ERROR_CODE(kBadShape) {
  // 3 U8 elements in 4 bytes.
  const std::string header = R"({"w":{"dtype":"U8","shape":[3],"data_offsets":[0,4]}})";
  expect_error(parse(test::make_safetensors(header, 4)), ErrorCode::kBadShape, app::kExitDataError,
               {"audit.safetensors", "'w'"});
}

AUDIT_ERROR_CODE(kBadOffsets) {
  const std::string header = R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                             R"("b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})";
  expect_error(parse(test::make_safetensors(header, 3)), ErrorCode::kBadOffsets,
               app::kExitDataError, {"audit.safetensors", "'b'"});
}

AUDIT_ERROR_CODE(kDuplicateName) {
  SafetensorsLayout layout;
  ASSERT_TRUE(layout.add_tensor("w", Dtype::kU8, {1}, 1).is_ok());
  expect_error(layout.add_tensor("w", Dtype::kU8, {2}, 2), ErrorCode::kDuplicateName,
               app::kExitDataError, {"'w'"});
}

AUDIT_ERROR_CODE(kOverflow) {
  // 2^96 elements.
  const std::string header =
      R"({"w":{"dtype":"U8","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,0]}})";
  expect_error(parse(test::make_safetensors(header, 0)), ErrorCode::kOverflow, app::kExitDataError,
               {"audit.safetensors", "'w'"});
}

AUDIT_ERROR_CODE(kBadMetadata) {
  expect_error(
      parse_df11_metadata(R"({"spec_version":"1.1","encoder":"df11 0.1.0"})", "shard.safetensors")
          .status(),
      ErrorCode::kBadMetadata, app::kExitDataError, {"shard.safetensors", "groups"});
}

AUDIT_ERROR_CODE(kBadGroup) {
  GroupBuffers g = encoded_group();
  ASSERT_FALSE(g.gaps.empty());
  g.gaps.pop_back();  // one byte short of ceil(5 * n_windows / 8)
  expect_error(decode(g), ErrorCode::kBadGroup, app::kExitDataError,
               {"audit.safetensors", "group 'g'"});
}

AUDIT_ERROR_CODE(kBadLut) {
  GroupBuffers g = encoded_group();
  g.luts.resize(kLutRowSize);  // only the root row: no code-length row
  expect_error(decode(g), ErrorCode::kBadLut, app::kExitDataError,
               {"audit.safetensors", "group 'g'"});
}

AUDIT_ERROR_CODE(kBadGap) {
  GroupBuffers g = encoded_group();
  g.gaps[0] |= 0x80;  // spec 3.5: window 0's first code starts at bit 0, not 16
  expect_error(decode(g), ErrorCode::kBadGap, app::kExitDataError,
               {"audit.safetensors", "group 'g'"});
}

AUDIT_ERROR_CODE(kBadOutputPositions) {
  GroupBuffers g = encoded_group();
  store_le32(g.output_positions.data(), 1);  // spec 3.6: entry 0 must be 0
  expect_error(decode(g), ErrorCode::kBadOutputPositions, app::kExitDataError,
               {"audit.safetensors", "group 'g'"});
}

AUDIT_ERROR_CODE(kCorruptData) {
  GroupBuffers g = encoded_group();
  // The stream ends one byte early: the last codes cannot be decoded.
  ASSERT_NE(g.encoded_exponent.size() % kBytesPerBlock, 1u);  // n_blocks stays the same
  g.encoded_exponent.pop_back();
  expect_error(decode(g), ErrorCode::kCorruptData, app::kExitDataError,
               {"audit.safetensors", "group 'g'"});
}

AUDIT_ERROR_CODE(kUncodable) {
  // spec 3.3: exponents 240..255 cannot be coded; +Inf has exponent 255.
  std::vector<uint16_t> weights = df11::testing::gaussian_bf16(1000, 0.02, 3);
  weights[123] = 0x7f80;
  std::span<const uint16_t> member(weights);
  expect_error(encode_group(std::span<const std::span<const uint16_t>>(&member, 1)).status(),
               ErrorCode::kUncodable, app::kExitOtherError, {"123"});
}

AUDIT_ERROR_CODE(kResourceLimit) {
  TempDir tmp;
  const fs::path file = tmp / "config.json";
  write_text(file, "{\"hidden_size\": 64}");
  expect_error(read_file_to_string(file.string(), 8).status(), ErrorCode::kResourceLimit,
               app::kExitOtherError, {file.string()});
}

AUDIT_ERROR_CODE(kNotFound) {
  TempDir tmp;
  const std::string missing = (tmp / "absent.safetensors").string();
  expect_error(SafetensorsFile::open(missing).status(), ErrorCode::kNotFound, app::kExitOtherError,
               {missing});
  const fs::path file = tmp / "one.safetensors";
  const std::vector<uint8_t> data{1, 2};
  const TensorData tensor{"w", Dtype::kU8, {2}, data};
  ASSERT_TRUE(write_safetensors(file.string(), std::span(&tensor, 1), nullptr).is_ok());
  Result<SafetensorsFile> opened = SafetensorsFile::open(file.string());
  ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
  expect_error(opened->tensor_bytes("model.absent.weight").status(), ErrorCode::kNotFound,
               app::kExitOtherError, {file.string(), "model.absent.weight"});
}

AUDIT_ERROR_CODE(kExists) {
  TempDir tmp;
  fs::create_directories(tmp / "out");
  expect_error(app::StagingDir::create(tmp / "out", /*force=*/false).status(), ErrorCode::kExists,
               app::kExitUsage, {(tmp / "out").string()});
  EXPECT_EQ(list_dir(tmp.path()), std::vector<std::string>{"out"});  // no temp folder made
}

AUDIT_ERROR_CODE(kCuda) {
  // kCuda only comes from the CUDA runtime. With CUDA, hiding every device makes
  // `verify --device cuda` fail with it; without CUDA the same request is kUnsupported, as
  // no CUDA call exists in such a build to fail (kCuda is unreachable there).
  TempDir tmp;
  write_tiny_llama(tmp / "model", {});
  app::VerifyOptions options;
  options.df11_dir = tmp / "model";
  options.device = app::DeviceChoice::kCuda;
  std::ostringstream out, err;
  app::Console console(out, err, /*verbosity=*/0, /*progress_bar=*/false);
#if defined(DF11_HAVE_CUDA)
  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  expect_error(app::verify_model(options, console, app::CancelToken::never()).status(),
               ErrorCode::kCuda, app::kExitOtherError, {"--device cuda"});
#else
  expect_error(app::verify_model(options, console, app::CancelToken::never()).status(),
               ErrorCode::kUnsupported, app::kExitOtherError, {"--device cuda", "without CUDA"});
  EXPECT_EQ(app::exit_code_for(Status(ErrorCode::kCuda, "x")), app::kExitOtherError);
#endif
}

AUDIT_ERROR_CODE(kInterrupted) {
  app::install_signal_handlers();
  app::reset_interrupt_for_testing();
  EXPECT_TRUE(app::interrupt_token().check().is_ok());
  ASSERT_EQ(::raise(SIGTERM), 0);  // the handler only records it
  expect_error(app::interrupt_token().check(), ErrorCode::kInterrupted, 128 + SIGTERM, {});
  app::reset_interrupt_for_testing();
  ASSERT_EQ(::raise(SIGINT), 0);
  expect_error(app::interrupt_token().check(), ErrorCode::kInterrupted, 128 + SIGINT, {});
  app::reset_interrupt_for_testing();
}

AUDIT_ERROR_CODE(kUnsupported) {
  expect_error(
      parse_df11_metadata(R"({"spec_version":"2.0","encoder":"df11 9","groups":[],"tensors":{}})",
                          "shard.safetensors")
          .status(),
      ErrorCode::kUnsupported, app::kExitOtherError, {"shard.safetensors", "2.0"});
}

AUDIT_ERROR_CODE(kMismatch) {
  TempDir tmp;
  write_tiny_llama(tmp / "model", {});
  Result<app::ModelFolder> original = app::open_model_folder(tmp / "model");
  ASSERT_TRUE(original.is_ok()) << original.status().to_string();
  const std::string name = "model.layers.0.mlp.up_proj.weight";
  const TensorInfo* info = nullptr;
  const SafetensorsFile* shard = nullptr;
  for (const SafetensorsFile& f : original->shards) {
    if ((info = f.header().find(name)) != nullptr) {
      shard = &f;
      break;
    }
  }
  ASSERT_NE(info, nullptr);
  std::span<const uint8_t> bytes = shard->tensor_bytes(*info);
  std::vector<uint8_t> rebuilt(bytes.begin(), bytes.end());
  rebuilt[10] ^= 0x01;  // one mantissa bit of element 5
  app::TensorComparer comparer(*original);
  ASSERT_TRUE(comparer.begin(name, info->dtype, info->shape).is_ok());
  comparer.piece(rebuilt);
  expect_error(comparer.end(), ErrorCode::kMismatch, app::kExitDataError, {"'" + name + "'"});
  expect_error(comparer.begin("model.absent.weight", Dtype::kBF16, {2}), ErrorCode::kMismatch,
               app::kExitDataError, {"'model.absent.weight'"});
}

AUDIT_ERROR_CODE(kInternal) {
  // Only reachable through misuse of an internal API: committing a staging folder twice.
  TempDir tmp;
  Result<app::StagingDir> staging = app::StagingDir::create(tmp / "out", /*force=*/false);
  ASSERT_TRUE(staging.is_ok()) << staging.status().to_string();
  ASSERT_TRUE(staging->commit().is_ok());
  expect_error(staging->commit(), ErrorCode::kInternal, app::kExitOtherError, {"StagingDir"});
  EXPECT_EQ(list_dir(tmp.path()), std::vector<std::string>{"out"});
}

AUDIT_ERROR_CODE(kBadConfig) {
  expect_error(app::read_pattern_dict("{\"dfloat11_config\": ", "model/config.json").status(),
               ErrorCode::kBadConfig, app::kExitDataError, {"model/config.json"});
  // spec 7.2: an original config with a quantization_config holds quantized weights.
  expect_error(app::make_df11_config("{\"quantization_config\": {\"quant_method\": \"gptq\"}}",
                                     nlohmann::ordered_json::object())
                   .status(),
               ErrorCode::kBadConfig, app::kExitDataError, {"config.json", "\"gptq\""});
}

// Every value the enum names (error_code_name() knows it; -Wswitch -Werror in status.cpp
// makes a new enumerator without a name fail the build) has an AUDIT_ERROR_CODE test.
TEST(AuditErrorCodes, EveryCodeIsAudited) {
  int named = 0;
  for (int v = 0; v <= 255; ++v) {
    const std::string name = error_code_name(static_cast<ErrorCode>(v));
    if (name == "unknown") continue;
    ++named;
    EXPECT_EQ(audited_codes().count(v), 1u)
        << "ErrorCode " << v << " (" << name << ") has no AUDIT_ERROR_CODE test";
  }
  EXPECT_GT(named, static_cast<int>(ErrorCode::kBadConfig));
  EXPECT_EQ(audited_codes().size(), static_cast<size_t>(named));
}

}  // namespace
}  // namespace df11::clitest
