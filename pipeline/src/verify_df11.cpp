// verify for folders written by df11: checksums of everything, loader compatibility of
// pattern_dict, every original file rebuilt in a stream (nothing written) and, with
// --against, compared with the original folder.

#include <algorithm>
#include <array>

#include "df11/df11_folder.h"
#include "df11/file_io.h"
#include "df11/folder_record.h"
#include "df11/hash.h"
#include "df11/header_checksum.h"
#include "df11/model_config.h"
#include "df11/sha256.h"
#include "file_stream.h"
#include "folder_structure.h"
#include "parallel_tasks.h"
#include "tensor_compare.h"
#include "verify_modes.h"

namespace df11::app {
namespace {

// Shards are hashed side by side: smaller steps than a single stream's keep the resident
// pages of all of them about where one stream's are.
constexpr uint64_t kShardStepBytes = 16ull << 20;

// The xxh3 of every stored group tensor (spec 5.2) of one shard, in kGroupTensors order per
// group (`hashes[group]`), streamed from the mapping in file order; with `sha256`, the same
// read also gives the SHA-256 of the whole shard file (what push sends as its LFS object id),
// so that no second pass over the bytes is needed for it.
Status hash_shard(const Df11Folder& folder, size_t shard,
                  std::vector<std::array<std::string, kGroupTensors.size()>>& hashes,
                  std::string* sha256, VerifyContext& context) {
  struct Piece {
    uint64_t begin = 0, end = 0;  // file offsets
    size_t group = 0, k = 0;
  };
  std::vector<Piece> pieces;
  for (size_t i = 0; i < folder.groups.size(); ++i) {
    const CodedGroup& g = folder.groups[i];
    if (g.shard != shard) continue;
    const auto tensors = g.tensors.all();  // kGroupTensors order
    for (size_t k = 0; k < tensors.size(); ++k) {
      pieces.push_back(
          {tensors[k]->file_offset, tensors[k]->file_offset + tensors[k]->byte_size(), i, k});
    }
  }
  std::sort(pieces.begin(), pieces.end(),
            [](const Piece& a, const Piece& b) { return a.begin < b.begin; });
  std::vector<Xxh3> xxh(pieces.size());
  const MappedFile& mapped = folder.folder.shards[shard].mapped();
  if (sha256 == nullptr) {
    for (size_t p = 0; p < pieces.size(); ++p) {
      DF11_RETURN_IF_ERROR(stream_file_range(
          mapped, pieces[p].begin, pieces[p].end - pieces[p].begin,
          [&](std::span<const uint8_t> bytes) {
            xxh[p].update(bytes);
            context.reporter.progress_advance(bytes.size());
            return Status::ok();
          },
          context.cancel, kShardStepBytes));
    }
  } else {
    // Tensors tile the data buffer without overlap (spec 6.3 O1): walk the file once,
    // handing each step to the SHA-256 and to the pieces it overlaps.
    Sha256 whole;
    uint64_t at = 0;
    size_t p = 0;
    DF11_RETURN_IF_ERROR(stream_file_range(
        mapped, 0, mapped.size(),
        [&](std::span<const uint8_t> bytes) {
          whole.update(bytes);
          const uint64_t end = at + bytes.size();
          while (p < pieces.size() && pieces[p].begin < end) {
            const uint64_t from = std::max(pieces[p].begin, at);
            const uint64_t to = std::min(pieces[p].end, end);
            if (to > from) {
              xxh[p].update(bytes.subspan(from - at, to - from));
              context.reporter.progress_advance(to - from);
            }
            if (pieces[p].end > end) break;
            ++p;
          }
          at = end;
          return Status::ok();
        },
        context.cancel, kShardStepBytes));
    *sha256 = whole.hex_digest();
    context.add_folder_digest(FolderFile{folder.folder.shard_names[shard], mapped.size(), *sha256});
  }
  for (size_t p = 0; p < pieces.size(); ++p) {
    hashes[pieces[p].group][pieces[p].k] = xxh[p].hex_digest();
  }
  return Status::ok();
}

// Compares a group's stored xxh3 (hash_shard) with its metadata.
void check_stored(const Df11Folder& folder, const CodedGroup& g,
                  const std::array<std::string, kGroupTensors.size()>& hashes,
                  VerifyContext& context) {
  const GroupMeta& meta = folder.metadata[g.shard].groups[g.meta_index];
  const auto tensors = g.tensors.all();  // kGroupTensors order
  for (size_t k = 0; k < tensors.size(); ++k) {
    const std::string& recorded = meta.stored.of(kGroupTensors[k].id);
    if (hashes[k] != recorded) {
      context.fail(ErrorCode::kCorruptData, "tensor '" + tensors[k]->name + "' (" + g.what +
                                                "): stored bytes have xxh3 " + hashes[k] +
                                                ", the metadata records " + recorded +
                                                "; members affected: " + member_list(meta));
    }
  }
}

// split_positions must hold the members' cumulative element counts (the loader splits the
// decoded group there).
void check_splits(const Df11Folder& folder, const CodedGroup& g, VerifyContext& context) {
  const GroupMeta& meta = folder.metadata[g.shard].groups[g.meta_index];
  for (size_t k = 0; k + 1 < g.member_start.size() - 1; ++k) {
    const uint64_t stored = load_le64(g.view.split_positions.data() + 8 * k);
    if (stored != g.member_start[k + 1]) {
      context.fail(ErrorCode::kBadGroup, "tensor '" + g.tensors.name + ".split_positions' (" +
                                             g.what + "): entry " + std::to_string(k) + " is " +
                                             std::to_string(stored) + ", member '" +
                                             meta.members[k].name + "' ends at element " +
                                             std::to_string(g.member_start[k + 1]));
      return;
    }
  }
}

// spec 5.3 G8: an alias group (a tied lm_head) decodes to the bytes of the tensor it copies.
// open_df11_folder checked that both record the same xxh3; decoding the copy against it
// proves the copy's own stored bytes carry the same weights (restoration never reads them).
void check_alias(const Df11Folder& folder, const AliasMember& alias, TensorProducer& producer,
                 VerifyContext& context) {
  OriginalTensor copy;
  copy.is_member = true;
  copy.group = alias.group;
  copy.member = alias.member;
  Xxh3 hash;
  const Status status = producer.produce(copy, [&](std::span<const uint8_t> bytes) {
    hash.update(bytes);
    context.reporter.progress_advance(bytes.size());
    return Status::ok();
  });
  const std::string what = folder.groups[alias.group].what + ": member '" + alias.name +
                           "' (tied copy of '" + alias.target + "')";
  if (!status) {
    context.fail(status.code(), what + ": " + status.message());
  } else if (hash.hex_digest() != folder.originals.at(alias.target).xxh3) {
    context.fail(ErrorCode::kCorruptData, what + ": decodes to xxh3 " + hash.hex_digest() + ", '" +
                                              alias.target + "' has " +
                                              folder.originals.at(alias.target).xxh3);
  } else {
    std::lock_guard<std::mutex> lock(context.mutex);
    ++context.report.aliases;
  }
}

// Header checksums (spec 5.2) and the folder record (spec 7.7).
Status check_folder_integrity(const Df11Folder& folder, VerifyContext& context) {
  for (size_t s = 0; s < folder.header_checks.size(); ++s) {
    if (folder.header_checks[s]) {
      if (folder.folder.shards[s].header().metadata_value(kHeaderChecksumKey) != nullptr) {
        ++context.report.headers;
      }
    } else {
      context.fail(folder.header_checks[s]);
    }
  }
  DF11_ASSIGN_OR_RETURN(FolderFindings findings, check_folder_record(folder, context.cancel));
  if (context.folder_sha256) {
    for (FolderFile& f : findings.hashed) context.add_folder_digest(std::move(f));
    if (context.on_folder_digest) context.on_folder_digest(nullptr);
  }
  for (const RecordFailure& f : findings.failures) context.fail(f.code, f.message);
  for (const std::string& line : findings.warnings) context.reporter.warning(line);
  if (!findings.has_record &&
      spec_minor_version(folder.metadata.front().spec_version) < kFolderRecordMinor) {
    context.report.notes.push_back(
        "df11 metadata " + folder.metadata.front().spec_version +
        ": no folder record and no header checksums (written before 1.1): files other than "
        "the shards and the shard headers' informational fields are not covered");
  }
  context.report.folder_files = findings.files_checked;
  return Status::ok();
}

// Feeds rebuilt tensors to the comparer (when --against is given); nothing is written.
class CompareSink : public RebuildSink {
 public:
  explicit CompareSink(TensorComparer* comparer) : comparer_(comparer) {}
  Status write(uint64_t, std::span<const uint8_t> bytes) override {
    if (in_tensor_ && comparer_ != nullptr) comparer_->piece(bytes);
    return Status::ok();
  }
  Status begin_tensor(const TensorInfo& t) override {
    in_tensor_ = true;
    pending_ = comparer_ != nullptr ? comparer_->begin(t.name, t.dtype, t.shape) : Status::ok();
    if (comparer_ != nullptr) ++compared_;
    return Status::ok();
  }
  Status end_tensor(const TensorInfo&) override {
    in_tensor_ = false;
    if (!pending_) return pending_;
    return comparer_ != nullptr ? comparer_->end() : Status::ok();
  }
  size_t compared() const { return compared_; }

 private:
  TensorComparer* comparer_;
  bool in_tensor_ = false;
  Status pending_;
  size_t compared_ = 0;
};

}  // namespace

Status verify_df11_folder(ModelFolder model, VerifyContext& context) {
  DF11_ASSIGN_OR_RETURN(Df11Folder folder, open_df11_folder(std::move(model)));
  if (context.file_sha256) DF11_RETURN_IF_ERROR(require_recorded_sha256(folder, "--sha256"));
  Reporter& reporter = context.reporter;
  uint64_t total = 0;
  for (const CodedGroup& g : folder.groups) {
    for (const TensorInfo* t : g.tensors.all()) total += t->byte_size();
  }
  for (const SourceRef& ref : folder.sources) total += folder.source(ref).size;
  for (const AliasMember& a : folder.aliases) {
    const CodedGroup& g = folder.groups[a.group];
    total += 2 * (g.member_start[a.member + 1] - g.member_start[a.member]);
  }
  reporter.progress_start("verifying  ", total);

  // Shards side by side (each read once, in file order).
  const size_t n_shards = folder.folder.shards.size();
  std::vector<std::array<std::string, kGroupTensors.size()>> stored(folder.groups.size());
  std::vector<std::string> shard_sha256(n_shards);
  std::vector<Status> shard_status(n_shards);
  run_tasks(n_shards, [&](size_t s) {
    shard_status[s] =
        hash_shard(folder, s, stored, context.folder_sha256 ? &shard_sha256[s] : nullptr, context);
  });
  for (const Status& status : shard_status) DF11_RETURN_IF_ERROR(status);

  TensorProducer producer(folder, context.device, context.cancel);  // validates each group once
  for (size_t i = 0; i < folder.groups.size(); ++i) {
    const CodedGroup& g = folder.groups[i];
    check_stored(folder, g, stored[i], context);
    auto info = producer.info(i);
    if (!info) {
      context.fail(info.status().code(),
                   info.status().message() + " (members affected: " +
                       member_list(folder.metadata[g.shard].groups[g.meta_index]) + ")");
    }
    check_splits(folder, g, context);
  }
  for (const AliasMember& a : folder.aliases) check_alias(folder, a, producer, context);
  const FindingFn fail = [&context](ErrorCode code, const std::string& line) {
    context.fail(code, line);
  };
  check_folder_structure(folder, fail);
  DF11_RETURN_IF_ERROR(check_folder_integrity(folder, context));

  std::optional<TensorComparer> comparer;  // what all workers compared, merged
  if (context.against != nullptr) comparer.emplace(*context.against);
  RebuildOptions options;
  options.check_file_sha256 = context.file_sha256;
  options.cancel = &context.cancel;
  options.on_bytes = [&](uint64_t n) { reporter.progress_advance(n); };
  options.on_tensor_failure = [&](const std::string&, const Status& why) { context.fail(why); };
  const size_t n_sources = folder.sources.size();
  DF11_RETURN_IF_ERROR(for_each_source(
      folder, context.device, n_sources,
      context.parallel_files != 0 ? context.parallel_files
                                  : source_parallelism(n_sources, context.device),
      options,
      [&](size_t i, TensorProducer& worker, const RebuildOptions& worker_options) -> Status {
        std::optional<TensorComparer> local;
        if (context.against != nullptr) local.emplace(*context.against);
        CompareSink sink(local ? &*local : nullptr);
        auto result =
            rebuild_source(folder, folder.source(folder.sources[i]), worker, sink, worker_options);
        if (!result) {
          // Data problems are findings; anything else (I/O, a signal) stops verification.
          if (error_class(result.status().code()) != ErrorClass::kData) return result.status();
          context.fail(result.status());
          return Status::ok();
        }
        std::lock_guard<std::mutex> lock(context.mutex);
        context.report.tensors += result->tensors;
        if (result->failed_tensors == 0) ++context.report.files;
        context.report.compared += sink.compared();
        if (local) comparer->merge_seen(*local);
        return Status::ok();
      }));
  check_sources_cover_originals(folder, fail);
  for (const SideFile& side : folder.side_files) {
    const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(side.content.data()),
                                         side.content.size());
    if (sha256_hex(bytes) != side.sha256 || side.content.size() != side.size) {
      context.fail(ErrorCode::kCorruptData,
                   side.file + ": recorded content does not match its recorded sha256/size");
      continue;
    }
    ++context.report.side_files;
    if (context.against != nullptr) {
      auto original =
          read_file_to_string((context.against->dir / side.file).string(), kMaxIndexBytes);
      if (!original || *original != side.content) {
        context.fail(ErrorCode::kMismatch, side.file + ": recorded original differs from " +
                                               (context.against->dir / side.file).string());
      }
    }
  }
  reporter.progress_finish();
  context.report.groups = folder.groups.size();
  if (comparer) {
    context.fail_not_compared(*comparer);
    context.report.different_models = comparer->different_models(context.here);
  }
  return Status::ok();
}

}  // namespace df11::app
