// The safetensors container (spec 6): strict parsing from bytes, and a streaming writer.
//
// A file is: 8-byte little-endian header length N, N bytes of UTF-8 JSON header, then the
// data buffer. parse_safetensors() checks every rule of spec 6.3 and reports the first
// violation with a specific ErrorCode and a message naming the file and the tensor.
// Nothing here knows about DF11 codes: groups are plain tensors at this level.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "df11/dtype.h"
#include "df11/file_io.h"
#include "df11/status.h"

namespace df11 {

// spec 6.1: the header length prefix (Header_Length_Bytes).
inline constexpr uint64_t kHeaderLengthBytes = 8;
// spec 6.3: Max_Header_Bytes, the same bound as the reference safetensors implementation.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// spec 6.3: Max_Tensors per file (a 100 MB header cannot describe many more anyway; the bound
// keeps index maps and sorting predictable).
inline constexpr uint64_t kMaxTensors = 1'000'000;
// spec 6.3: Max_Rank, dimensions per shape.
inline constexpr size_t kMaxRank = 64;
// spec 6.4: the writer pads the header with spaces so that the data starts at a multiple
// of Header_Alignment bytes.
inline constexpr uint64_t kHeaderAlignment = 8;
// spec 6.1: the reserved key for the string->string map.
inline constexpr std::string_view kMetadataKey = "__metadata__";

// The __metadata__ map in document order (keys unique).
using MetadataEntries = std::vector<std::pair<std::string, std::string>>;

struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::kU8;
  std::vector<uint64_t> shape;
  uint64_t n_elements = 0;         // product(shape), checked
  uint64_t data_offset_begin = 0;  // bytes, relative to the data buffer start
  uint64_t data_offset_end = 0;    // one past the last byte, relative to the data start
  uint64_t file_offset = 0;        // absolute: 8 + N + data_offset_begin

  uint64_t byte_size() const { return data_offset_end - data_offset_begin; }
};

struct SafetensorsHeader {
  std::string file_name;    // as given to the parser; prefixes every message
  uint64_t file_size = 0;   // bytes
  std::string header_text;  // the N header bytes exactly as stored, trailing padding included
  uint64_t data_start = 0;  // 8 + N
  uint64_t data_size = 0;   // file_size - data_start
  std::vector<TensorInfo> tensors;  // sorted by data_offset_begin (ties: document order)
  std::unordered_map<std::string, size_t> index;  // name -> position in `tensors`
  bool has_metadata = false;                      // whether the header had a __metadata__ key
  MetadataEntries metadata;                       // __metadata__ in document order

  const TensorInfo* find(std::string_view name) const;
  // Value of a __metadata__ key, or nullptr.
  const std::string* metadata_value(std::string_view key) const;
};

// Parses and validates a whole safetensors file held in memory (usually a MappedFile's
// bytes). `file_name` prefixes every error message. The result does not point into
// `file_bytes`.
Result<SafetensorsHeader> parse_safetensors(std::span<const uint8_t> file_bytes,
                                            const std::string& file_name);

// The same checks from the first bytes of a file only (at least 8 + N of them, N the header
// length they start with) and its total size: for a file that is not at hand (a Hub file read
// with HTTP Range requests). The tensors' data is not looked at by either function.
// kTruncated if `prefix` holds fewer than 8 + N bytes.
Result<SafetensorsHeader> parse_safetensors_header(std::span<const uint8_t> prefix,
                                                   uint64_t file_size,
                                                   const std::string& file_name);

// A memory-mapped, validated safetensors file. Move-only.
class SafetensorsFile {
 public:
  static Result<SafetensorsFile> open(const std::string& path);

  const SafetensorsHeader& header() const { return header_; }
  const MappedFile& mapped() const { return file_; }
  std::span<const uint8_t> bytes() const { return file_.span(); }

  // Bytes of one tensor inside the mapping (valid while this object lives).
  std::span<const uint8_t> tensor_bytes(const TensorInfo& tensor) const;
  // kNotFound naming the file and tensor if absent.
  Result<std::span<const uint8_t>> tensor_bytes(std::string_view name) const;
  // Drops the tensor's pages from this process's resident set (see MappedFile).
  void release(const TensorInfo& tensor) const;

 private:
  SafetensorsFile(MappedFile file, SafetensorsHeader header)
      : file_(std::move(file)), header_(std::move(header)) {}
  MappedFile file_;
  SafetensorsHeader header_;
};

// ---- Writing (spec 6.4) ----

// The bytes before the data buffer and where each tensor goes, for callers that pwrite
// tensor data at its offset (streaming: no tensor data needs to be held at once).
struct FinalizedLayout {
  std::vector<uint8_t> prefix;  // length + header JSON + padding: file bytes [0, data_start)
  uint64_t data_start = 0;      // prefix.size(), a multiple of kHeaderAlignment
  uint64_t file_size = 0;       // data_start + sum of tensor byte sizes
  std::vector<uint64_t> tensor_offsets;  // absolute file offset of each tensor, insertion order

  // The header JSON with its padding (prefix without the 8-byte length).
  std::string_view header_text() const {
    return {reinterpret_cast<const char*>(prefix.data()) + kHeaderLengthBytes,
            prefix.size() - kHeaderLengthBytes};
  }
};

// Builds a safetensors header. Tensors are laid out back to back in insertion order; the
// header is compact JSON, keys in insertion order ("__metadata__" first when set), padded
// with spaces to a multiple of kHeaderAlignment bytes, so that parse_safetensors() of the
// written file gives back the same tensors and metadata.
class SafetensorsLayout {
 public:
  // kInvalidArgument if byte_size != tensor_byte_size(dtype, shape) or the name is
  // "__metadata__"; kDuplicateName for a repeated name; kResourceLimit past kMaxTensors or
  // kMaxRank; kOverflow if the shape overflows.
  Status add_tensor(std::string name, Dtype dtype, std::vector<uint64_t> shape, uint64_t byte_size);
  // Sets the __metadata__ map (written even if empty). kDuplicateName for a repeated key.
  Status set_metadata(MetadataEntries metadata);

  size_t tensor_count() const { return tensors_.size(); }

  // kHeaderTooLarge if the header would exceed kMaxHeaderBytes; kOverflow if the data does
  // not fit in 64 bits; kInvalidArgument for a name or value that is not valid UTF-8.
  Result<FinalizedLayout> finalize() const;

 private:
  struct Entry {
    std::string name;
    Dtype dtype;
    std::vector<uint64_t> shape;
    uint64_t byte_size;
  };
  std::vector<Entry> tensors_;
  std::unordered_map<std::string, size_t> names_;
  bool has_metadata_ = false;
  MetadataEntries metadata_;
};

// A tensor with its data, for the convenience writers below (the bytes are borrowed).
struct TensorData {
  std::string name;
  Dtype dtype = Dtype::kU8;
  std::vector<uint64_t> shape;
  std::span<const uint8_t> bytes;
};

// The whole file in memory (tests, fuzzers, small files). `metadata` null: no __metadata__.
Result<std::vector<uint8_t>> serialize_safetensors(std::span<const TensorData> tensors,
                                                   const MetadataEntries* metadata);

// Writes the file atomically (OutputFile: temp file, fsync, rename).
Status write_safetensors(const std::string& path, std::span<const TensorData> tensors,
                         const MetadataEntries* metadata);

}  // namespace df11
