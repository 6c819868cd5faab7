#include "rebuild.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_set>

#include "df11/decoder.h"
#include "df11/hash.h"
#include "df11/member_spans.h"
#include "df11/sha256.h"
#include "parallel_tasks.h"
#include "thread_limit.h"
#if defined(DF11_HAVE_CUDA)
#include "df11/cuda_decoder.h"
#endif

namespace df11::app {
namespace {

// The blocks [b0, b1) holding the codes of elements [first, end): those whose output ranges
// meet it (spec 3.6: block b decodes elements [op[b], op[b+1])).
std::pair<uint64_t, uint64_t> blocks_of(const GroupView& g, const GroupInfo& info, uint64_t first,
                                        uint64_t end) {
  uint64_t lo = 0, hi = info.n_blocks;  // first block with op[b + 1] > first
  while (lo < hi) {
    const uint64_t mid = (lo + hi) / 2;
    if (read_output_position(g, mid + 1) > first) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  const uint64_t b0 = lo;
  hi = info.n_blocks;  // first block with op[b] >= end
  while (lo < hi) {
    const uint64_t mid = (lo + hi) / 2;
    if (read_output_position(g, mid) >= end) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return {b0, lo};
}

}  // namespace

TensorProducer::TensorProducer(const Df11Folder& folder, DecodeDevice device,
                               const CancelToken& cancel)
    : folder_(folder), device_(device), cancel_(cancel), info_(folder.groups.size()) {}

Result<GroupInfo> TensorProducer::info(size_t group) {
  if (!info_[group]) {
    const CodedGroup& g = folder_.groups[group];
    info_[group].emplace(validate_group(g.view, g.what));
  }
  return *info_[group];
}

Status TensorProducer::produce(const OriginalTensor& tensor, const ByteSink& sink) {
  if (tensor.is_member) return produce_member(tensor, sink);
  const TensorInfo& t = folder_.folder.tensor(tensor.raw);
  return stream_file_range(folder_.folder.shards[tensor.raw.shard].mapped(), t.file_offset,
                           t.byte_size(), sink, cancel_);
}

Status TensorProducer::produce_member(const OriginalTensor& tensor, const ByteSink& sink) {
  const CodedGroup& g = folder_.groups[tensor.group];
  DF11_ASSIGN_OR_RETURN(GroupInfo gi, info(tensor.group));
  const uint64_t first = g.member_start[tensor.member];
  const uint64_t end = g.member_start[tensor.member + 1];
  try {
    if (device_ == DecodeDevice::kCuda) {
#if defined(DF11_HAVE_CUDA)
      if (whole_group_ != tensor.group) {
        whole_group_ = SIZE_MAX;
        whole_.resize(gi.n_elements);
        DF11_RETURN_IF_ERROR(cuda::decode_group_to_host(g.view, whole_, g.what));
        whole_group_ = tensor.group;
      }
      for (uint64_t pos = first; pos < end; pos += kDecodePieceWeights) {
        DF11_RETURN_IF_ERROR(cancel_.check());
        const uint64_t k = std::min(kDecodePieceWeights, end - pos);
        DF11_RETURN_IF_ERROR(sink(bf16_bytes(std::span<const uint16_t>(whole_).subspan(pos, k))));
      }
      release_member_pages(g, gi, first, end);
#else
      return Status(ErrorCode::kUnsupported, "this df11 was built without CUDA");
#endif
    } else {
      // Two buffers: piece i goes through the sink (hashing, writing: one thread) while
      // piece i + 1 is decoded (all threads).
      const uint64_t size = std::min(kDecodePieceWeights, end - first);
      for (auto& buffer : piece_) buffer.resize(size);
      auto decode_piece = [&](uint64_t pos, int slot) {
        const std::span<uint16_t> out(piece_[slot].data(), std::min(size, end - pos));
        return decode_group(g.view, out, g.what, pos, &gi);
      };
      DF11_RETURN_IF_ERROR(decode_piece(first, 0));
      int slot = 0;
      for (uint64_t pos = first; pos < end; pos += size, slot ^= 1) {
        DF11_RETURN_IF_ERROR(cancel_.check());
        const uint64_t next = pos + size;
        Status sunk, decoded;
        run_side_by_side(
            [&] {
              const std::span<const uint16_t> piece(piece_[slot].data(), std::min(size, end - pos));
              sunk = sink(bf16_bytes(piece));
            },
            [&] {
              if (next < end) decoded = decode_piece(next, slot ^ 1);
              // Piece `pos` was decoded last round. Unmapping its stored bytes is kernel work
              // that would otherwise follow the sink, the critical path; a block it shares
              // with piece `next` may fault back in, no more.
              release_member_pages(g, gi, pos, std::min(end, next));
            });
        DF11_RETURN_IF_ERROR(sunk);
        DF11_RETURN_IF_ERROR(decoded);
      }
    }
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit, g.what + ": out of memory for the decoded weights");
  }
  return Status::ok();
}

void TensorProducer::release_all(const OriginalTensor& tensor) const {
  if (!tensor.is_member) {
    const TensorInfo& t = folder_.folder.tensor(tensor.raw);
    folder_.folder.shards[tensor.raw.shard].release(t);
    return;
  }
  const CodedGroup& g = folder_.groups[tensor.group];
  const auto tensors = g.tensors.all();
  for (size_t i = 0; i < tensors.size(); ++i) {
    folder_.folder.shards[g.tensor_shard[i]].release(*tensors[i]);
  }
}

void TensorProducer::release_member_pages(const CodedGroup& g, const GroupInfo& info,
                                          uint64_t first, uint64_t end) const {
  // The stored bytes of elements [first, end) are done with: keep the resident set flat.
  // Each stored tensor in its own shard: a published folder's group may span shards.
  const auto file_of = [&](GroupTensor t) -> const MappedFile& {
    return folder_.folder.shards[g.tensor_shard[static_cast<size_t>(t)]].mapped();
  };
  file_of(GroupTensor::kSignMantissa)
      .advise_dontneed(g.tensors.sign_mantissa->file_offset + first, end - first);
  const auto [b0, b1] = blocks_of(g.view, info, first, end);
  // Blocks [b0, b1): their stream bytes, gap fields (spec 3.5: 512 windows x 5 bits = 320
  // bytes per block) and output positions.
  const uint64_t lo = b0 * kBytesPerBlock,
                 hi = std::min<uint64_t>(b1 * kBytesPerBlock, info.n_bytes);
  if (hi > lo) {
    file_of(GroupTensor::kEncodedExponent)
        .advise_dontneed(g.tensors.encoded_exponent->file_offset + lo, hi - lo);
  }
  constexpr uint64_t kGapBytesPerBlock = kWindowsPerBlock * kGapBits / 8;
  file_of(GroupTensor::kGaps)
      .advise_dontneed(g.tensors.gaps->file_offset + b0 * kGapBytesPerBlock,
                       (b1 - b0) * kGapBytesPerBlock);
  file_of(GroupTensor::kOutputPositions)
      .advise_dontneed(g.tensors.output_positions->file_offset + 4 * b0, 4 * (b1 - b0));
}

Result<SourceLayout> parse_source_layout(const SourceFile& source) {
  const uint64_t header_bytes = source.header.size();
  if (source.size < kHeaderLengthBytes + header_bytes) {
    return Status(ErrorCode::kBadMetadata, source.file + ": recorded size " +
                                               std::to_string(source.size) +
                                               " is smaller than its recorded header");
  }
  // The format's parser validates a whole file; give it one whose data region is untouched
  // address space (MAP_NORESERVE zero pages are never materialised by the header parse).
  DF11_ASSIGN_OR_RETURN(LazyBuffer file, LazyBuffer::create(source.size, source.file.c_str()));
  store_le64(file.data(), header_bytes);
  std::memcpy(file.data() + kHeaderLengthBytes, source.header.data(), header_bytes);
  auto header = parse_safetensors(file.span(), source.file + " (recorded header)");
  if (!header) return header.status();
  SourceLayout layout;
  layout.prefix.assign(file.data(), file.data() + kHeaderLengthBytes + header_bytes);
  layout.header = std::move(header).value();
  return layout;
}

namespace {

Status check_shape(const Df11Folder& folder, const std::string& source_file, const TensorInfo& t,
                   const OriginalTensor& o) {
  const std::string where = source_file + ": tensor '" + t.name + "'";
  if (o.byte_size != t.byte_size()) {
    return Status(ErrorCode::kBadMetadata,
                  where + ": " + std::to_string(t.byte_size()) + " bytes in the original header, " +
                      std::to_string(o.byte_size) + " in " + folder.describe(t.name, o));
  }
  if (o.is_member) {
    const MemberMeta& m = folder.member_meta(o);
    if (t.dtype != Dtype::kBF16 || t.shape != m.shape) {
      return Status(ErrorCode::kBadMetadata,
                    where + ": " + dtype_name(t.dtype) + " " + shape_to_string(t.shape) +
                        " in the original header, BF16 " + shape_to_string(m.shape) + " in " +
                        folder.describe(t.name, o));
    }
  } else {
    const TensorInfo& raw = folder.folder.tensor(o.raw);
    if (t.dtype != raw.dtype || t.shape != raw.shape) {
      return Status(ErrorCode::kBadMetadata,
                    where + ": " + dtype_name(t.dtype) + " " + shape_to_string(t.shape) +
                        " in the original header, " + dtype_name(raw.dtype) + " " +
                        shape_to_string(raw.shape) + " in " + folder.describe(t.name, o));
    }
  }
  return Status::ok();
}

}  // namespace

Status check_source_tensor(const Df11Folder& folder, const std::string& source_file,
                           const TensorInfo& t) {
  const auto it = folder.originals.find(t.name);
  if (it == folder.originals.end()) {
    return Status(ErrorCode::kBadMetadata,
                  source_file + ": tensor '" + t.name +
                      "' of the original is neither a group member nor a raw tensor here");
  }
  return check_shape(folder, source_file, t, it->second);
}

Status require_recorded_sha256(const Df11Folder& folder, const std::string& option) {
  std::vector<std::string> missing;
  for (const SourceRef& ref : folder.sources) {
    if (folder.source(ref).sha256.empty()) missing.push_back(folder.source(ref).file);
  }
  if (missing.empty()) return Status::ok();
  std::string list = missing.front();
  if (missing.size() > 1) list += " and " + std::to_string(missing.size() - 1) + " more";
  return Status(ErrorCode::kInvalidArgument,
                option + ": " + folder.folder.dir.string() +
                    ": the original files' SHA-256 was not recorded (" + list +
                    "; compressed without --source-sha256), so there is nothing to check "
                    "against; without " +
                    option + " every rebuilt byte is still checked (header and tensor checksums)");
}

Result<RebuildResult> rebuild_source(const Df11Folder& folder, const SourceFile& source,
                                     TensorProducer& producer, RebuildSink& sink,
                                     const RebuildOptions& options) {
  DF11_ASSIGN_OR_RETURN(SourceLayout layout, parse_source_layout(source));
  RebuildResult result;
  Sha256 sha;
  const bool check_sha = options.check_file_sha256;
  if (check_sha) sha.update(layout.prefix);
  DF11_RETURN_IF_ERROR(sink.write(0, layout.prefix));
  auto cancelled = [&] {
    return options.sibling_failed != nullptr &&
           options.sibling_failed->load(std::memory_order_relaxed);
  };
  const Status cancel_status(ErrorCode::kInterrupted,
                             source.file + ": stopped (another file failed)");
  for (const TensorInfo& t : layout.header.tensors) {
    DF11_RETURN_IF_ERROR(options.cancel->check());
    if (cancelled()) return cancel_status;
    result.names.push_back(t.name);
    const auto it = folder.originals.find(t.name);
    Status status = check_source_tensor(folder, source.file, t);
    if (status) status = sink.begin_tensor(t);
    if (status) {
      Xxh3 hash;
      uint64_t offset = layout.header.data_start + t.data_offset_begin;
      status = producer.produce(it->second, [&](std::span<const uint8_t> bytes) {
        if (cancelled()) return cancel_status;
        // The checksums beside the write: a file's writes queue on its lock on tmpfs, so
        // its writer thread is the critical path of the largest file on many cores, and
        // XXH3 on it added ~10% there. SHA-256 (~2 GB/s, sequential by nature) beside both.
        Status written;
        auto hashes = [&] {
          if (check_sha) {
            run_side_by_side([&] { sha.update(bytes); }, [&] { hash.update(bytes); });
          } else {
            hash.update(bytes);
          }
        };
        run_side_by_side(hashes, [&] { written = sink.write(offset, bytes); });
        DF11_RETURN_IF_ERROR(written);
        offset += bytes.size();
        if (options.on_bytes) options.on_bytes(bytes.size());
        return Status::ok();
      });
      if (status && hash.hex_digest() != it->second.xxh3) {
        status = Status(ErrorCode::kCorruptData,
                        folder.describe(t.name, it->second) + ": rebuilt bytes have xxh3 " +
                            hash.hex_digest() + ", the metadata records " + it->second.xxh3);
      }
      if (status) status = sink.end_tensor(t);
    }
    if (status) {
      ++result.tensors;
      continue;
    }
    if (!options.on_tensor_failure || error_class(status.code()) != ErrorClass::kData)
      return status;
    options.on_tensor_failure(t.name, status);
    ++result.failed_tensors;
  }
  std::unordered_set<size_t> groups_done;
  for (const TensorInfo& t : layout.header.tensors) {
    const auto it = folder.originals.find(t.name);
    if (it == folder.originals.end()) continue;
    if (!it->second.is_member || groups_done.insert(it->second.group).second) {
      producer.release_all(it->second);
    }
  }
  if (check_sha && result.failed_tensors == 0) {
    if (source.sha256.empty()) {
      // Callers check first (require_recorded_sha256); this keeps a missed check from passing.
      return Status(ErrorCode::kInvalidArgument,
                    source.file + ": the original file's SHA-256 was not recorded");
    }
    const std::string digest = sha.hex_digest();
    if (digest != source.sha256) {
      return Status(ErrorCode::kCorruptData, source.file + ": rebuilt file has sha256 " + digest +
                                                 ", the metadata records " + source.sha256);
    }
  }
  return result;
}

}  // namespace df11::app

namespace df11::app {

size_t source_parallelism(size_t n_sources, DecodeDevice device) {
  if (device == DecodeDevice::kCuda || n_sources <= 1) return 1;
  return helper_threads(std::min<size_t>(n_sources, 4));
}

Status for_each_source(
    const Df11Folder& folder, DecodeDevice device, size_t n, size_t parallel,
    const RebuildOptions& base,
    const std::function<Status(size_t, TensorProducer&, const RebuildOptions&)>& work) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  Status first_error;
  RebuildOptions options = base;
  options.sibling_failed = &failed;
  auto worker = [&] {
    TensorProducer producer(folder, device, *options.cancel);
    for (size_t i = next.fetch_add(1); i < n && !failed.load(); i = next.fetch_add(1)) {
      Status status = work(i, producer, options);
      if (status) continue;
      std::lock_guard<std::mutex> lock(mutex);
      if (first_error.is_ok()) first_error = status;
      failed.store(true);
    }
  };
  // The workers are tasks of the caller's arena, not threads of their own: --threads N then
  // means N threads in all, as in compress. With a thread per file, N decoding threads and the
  // files' writers ran side by side (19 on 16 cores for decompress --threads 16).
  if (parallel <= 1) {
    worker();
  } else {
    run_tasks(parallel, [&](size_t) { worker(); });
  }
  return first_error;
}

}  // namespace df11::app
