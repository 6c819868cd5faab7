// Rebuilding original files from a DF11 folder, as a stream: decompress writes the stream to
// disk, verify compares it with the original folder. Each original tensor's bytes are made
// piece by piece (a bounded element range decoded into a reused buffer, or a raw tensor read
// from its mapping), checked against the recorded xxh3, and the file's SHA-256 against the
// recorded one.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "df11/df11_folder.h"
#include "df11/safetensors.h"
#include "file_stream.h"
#include "lazy_buffer.h"

namespace df11::app {

enum class DecodeDevice { kCpu, kCuda };

// Decoded weights per piece: two reused buffers of 2 bytes per weight (2 x 8 MiB) per
// worker, and up to four workers: resident memory stays far below the 256 MB allowance.
inline constexpr uint64_t kDecodePieceWeights = uint64_t{4} << 20;

// Produces the bytes of original tensors. Not thread-safe (one reused buffer).
class TensorProducer {
 public:
  // Stops with kInterrupted between pieces once `cancel` is cancelled.
  TensorProducer(const Df11Folder& folder, DecodeDevice device, const CancelToken& cancel);

  // Feeds the tensor's bytes to `sink` in order, in pieces. Errors name the group or file.
  Status produce(const OriginalTensor& tensor, const ByteSink& sink);

  // validate_group() once per group (cached).
  Result<GroupInfo> info(size_t group);

  // Drops every page of the tensor's stored bytes (a member: its whole group) from the
  // resident set. Per-piece releases leave the kernel's fault-around pages (up to 64 KiB at
  // each boundary) behind; this sweeps them once a file is done.
  void release_all(const OriginalTensor& tensor) const;

 private:
  Status produce_member(const OriginalTensor& tensor, const ByteSink& sink);
  void release_member_pages(const CodedGroup& g, const GroupInfo& info, uint64_t first,
                            uint64_t end) const;

  const Df11Folder& folder_;
  DecodeDevice device_;
  const CancelToken& cancel_;
  std::vector<uint16_t> piece_[2];                      // CPU: two pieces in flight
  std::vector<std::optional<Result<GroupInfo>>> info_;  // per group
  size_t whole_group_ = SIZE_MAX;                       // CUDA: the group held in whole_
  std::vector<uint16_t> whole_;                         // CUDA: one whole decoded group
};

// An original file's layout, from the header text recorded in its SourceFile.
struct SourceLayout {
  std::vector<uint8_t> prefix;  // 8-byte length + header text: file bytes [0, data_start)
  SafetensorsHeader header;     // tensors sorted by offset, tiling the data region
};
Result<SourceLayout> parse_source_layout(const SourceFile& source);

// A tensor of a recorded original header (`source_file`) is an original tensor of the folder
// with the same size, dtype and shape (kBadMetadata naming both otherwise).
Status check_source_tensor(const Df11Folder& folder, const std::string& source_file,
                           const TensorInfo& t);

// What happens to the rebuilt bytes.
class RebuildSink {
 public:
  virtual ~RebuildSink() = default;
  // Bytes of the file at `offset`, in increasing offset order.
  virtual Status write(uint64_t offset, std::span<const uint8_t> bytes) = 0;
  virtual Status begin_tensor(const TensorInfo& tensor) {
    (void)tensor;
    return Status::ok();
  }
  virtual Status end_tensor(const TensorInfo& tensor) {
    (void)tensor;
    return Status::ok();
  }
};

struct RebuildOptions {
  // If set, a tensor that fails (decode error, checksum) is reported here and rebuilding goes
  // on with the next one (verify); otherwise the first failure is returned (decompress).
  std::function<void(const std::string& tensor, const Status& why)> on_tensor_failure;
  // Called with the bytes of every piece produced (progress).
  std::function<void(uint64_t)> on_bytes;
  // Set by for_each_source when another file failed: stop early (kInterrupted).
  const std::atomic<bool>* sibling_failed = nullptr;
  // The caller's cancellation (never null).
  const CancelToken* cancel = &CancelToken::never();
  // Hash the rebuilt file and compare it with the recorded SHA-256: only with --sha256
  // (verify, decompress), since the recorded header text (covered by the shard's header
  // checksum) and every tensor's XXH3 already determine the file (spec 7.6), and SHA-256
  // costs about a third of the CPU time of either command.
  bool check_file_sha256 = false;
};

struct RebuildResult {
  uint64_t tensors = 0;            // tensors rebuilt and checked
  uint64_t failed_tensors = 0;     // reported through on_tensor_failure
  std::vector<std::string> names;  // every tensor of the file, in file order
};

// Streams the source file through `sink`: header, then each tensor in offset order, each
// checked against its recorded xxh3 (kCorruptData naming it), then the whole stream's
// SHA-256 against the recorded one (kCorruptData naming the file; not checked if a tensor
// failed).
Result<RebuildResult> rebuild_source(const Df11Folder& folder, const SourceFile& source,
                                     TensorProducer& producer, RebuildSink& sink,
                                     const RebuildOptions& options);

// --sha256 (`option`, for the message) asks for every original's recorded SHA-256: OK if each
// source records one, else kInvalidArgument naming the files without (spec 5.3, 1.2: a writer
// may leave it out, as `df11 compress` does without --source-sha256; their rebuilt bytes are
// fixed by the checked header and tensors, spec 7.6).
Status require_recorded_sha256(const Df11Folder& folder, const std::string& option);

// How many source files to rebuild side by side: SHA-256 is sequential within a file, so
// throughput scales with files: one per four allowed threads, at most 4. CPU decoding only
// (each worker holds two pieces);
// a CUDA producer holds a whole decoded group, so CUDA runs one file at a time.
size_t source_parallelism(size_t n_sources, DecodeDevice device);

// Calls work(i, producer, options) for every i in [0, n), `parallel` at a time, each worker
// a task of the calling thread's TBB arena (so the thread limit counts it) with its own
// TensorProducer; `options` is `base` with `sibling_failed` set. Returns the first
// failure; after it, workers stop at their next check and no new item starts.
Status for_each_source(
    const Df11Folder& folder, DecodeDevice device, size_t n, size_t parallel,
    const RebuildOptions& base,
    const std::function<Status(size_t, TensorProducer&, const RebuildOptions&)>& work);

}  // namespace df11::app
