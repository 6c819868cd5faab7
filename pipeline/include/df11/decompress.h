// df11 decompress: a DF11 folder written by df11 -> the original checkpoint folder, byte for
// byte. Every original .safetensors file is rebuilt from the header text and tensors the
// df11 metadata records, checked while it is written (xxh3 per tensor, SHA-256 per file);
// config.json and the index come back from their recorded bytes; other files are copied.
// A folder published by the dfloat11 tools gives a BF16 checkpoint with the same tensors
// instead (restore_published.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "df11/cancel.h"
#include "df11/reporter.h"
#include "df11/status.h"

namespace df11::app {

struct DecompressOptions {
  std::filesystem::path df11_dir;
  std::filesystem::path out_dir;
  bool force = false;
  int threads = 0;
  size_t parallel_files = 0;  // files rebuilt side by side; 0: from the thread count
  bool file_sha256 = false;   // also hash every rebuilt file against its recorded SHA-256
  // A folder whose .safetensors headers give the shapes of a published folder's weights
  // (spec 7.8; e.g. the original model), where config.json does not.
  std::optional<std::filesystem::path> like;
};

struct DecompressSummary {
  size_t files = 0;  // rebuilt .safetensors files
  size_t tensors = 0;
  size_t side_files = 0;      // restored from metadata or copied
  uint64_t input_bytes = 0;   // DF11 .safetensors files
  uint64_t output_bytes = 0;  // rebuilt .safetensors files
  double seconds = 0;
  bool published = false;  // a folder without df11 metadata: a new BF16 checkpoint was written
};

Result<DecompressSummary> decompress_model(const DecompressOptions& options, Reporter& reporter,
                                           const CancelToken& cancel);

}  // namespace df11::app
