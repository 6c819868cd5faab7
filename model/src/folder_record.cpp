#include "df11/folder_record.h"

#include <algorithm>
#include <set>
#include <system_error>

#include "df11/file_io.h"
#include "df11/file_sha256.h"
#include "df11/hash.h"
#include "df11/utf8.h"

namespace df11::app {
namespace fs = std::filesystem;

namespace {

// Unrecorded files are listed one per line up to this many; then a count.
constexpr size_t kMaxListedWarnings = 20;

struct FileState {
  uint64_t size = 0;
  std::string sha256;
};

// Size and SHA-256 of a regular file (symlinks followed); a FIFO or device is refused before
// it is opened, so that a hostile folder cannot block the reader.
Result<FileState> read_state(const fs::path& path, const CancelToken& cancel, bool hash = true) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found) {
    return Status(ErrorCode::kNotFound, path.string() + ": not found");
  }
  if (ec) return Status(ErrorCode::kIo, path.string() + ": " + ec.message());
  if (!fs::is_regular_file(status)) {
    return Status(ErrorCode::kIo, path.string() + ": not a regular file");
  }
  FileState state;
  state.size = fs::file_size(path, ec);
  if (ec) return Status(ErrorCode::kIo, path.string() + ": " + ec.message());
  if (hash) {
    DF11_ASSIGN_OR_RETURN(state.sha256, sha256_file_interruptible(path.string(), nullptr, cancel));
  }
  return state;
}

bool is_top_level_safetensors(const std::string& rel) {
  return rel.find('/') == std::string::npos && rel.ends_with(".safetensors");
}

// A model card is a few kilobytes; anything larger is not the one push wrote.
constexpr uint64_t kMaxModelCardBytes = 1u << 20;

// spec 7.7 I5: df11's model card (README.md with the marker) or the Hub's .gitattributes, at
// the top level. (Only called for files the record does not list.)
bool is_publication_file(const fs::path& dir, const std::string& rel) {
  if (rel == ".gitattributes") return true;
  if (rel != "README.md") return false;
  std::error_code ec;
  if (!fs::is_regular_file(dir / rel, ec)) return false;
  auto text = read_file_to_string((dir / rel).string(), kMaxModelCardBytes);
  return text.is_ok() && is_df11_model_card(*text);
}

}  // namespace

bool is_df11_model_card(std::string_view text) {
  return text.find(kModelCardMarker) != std::string_view::npos;
}

Result<std::vector<FolderFile>> hash_folder_files(const fs::path& dir,
                                                  std::vector<std::string> files,
                                                  const CancelToken& cancel) {
  if (files.size() > kMaxFolderFiles) {
    return Status(ErrorCode::kResourceLimit,
                  dir.string() + ": " + std::to_string(files.size()) +
                      " files besides the shards, more than the df11 metadata can record "
                      "(Max_Folder_Files " +
                      std::to_string(kMaxFolderFiles) + ")");
  }
  std::sort(files.begin(), files.end());
  std::vector<FolderFile> out;
  out.reserve(files.size());
  for (const std::string& rel : files) {
    DF11_RETURN_IF_ERROR(cancel.check());
    // spec 5.3 rule P2, and JSON strings are UTF-8.
    if (!is_valid_utf8(rel) || !is_safe_relative_path(rel)) {
      return Status(ErrorCode::kInvalidArgument,
                    (dir / rel).string() +
                        ": this path cannot be recorded in the df11 metadata (not UTF-8, or a "
                        "name longer than 255 bytes or a path longer than 4096): rename it");
    }
    DF11_ASSIGN_OR_RETURN(FileState state, read_state(dir / rel, cancel));
    out.push_back(FolderFile{rel, state.size, std::move(state.sha256)});
  }
  return out;
}

Result<FolderFindings> check_folder_record(const Df11Folder& folder, const CancelToken& cancel,
                                           bool hash_files) {
  FolderFindings findings;
  const ModelFolder& model = folder.folder;
  // I1: the record is in the first shard, from df11 metadata 1.1 on, and only there.
  const Df11Metadata& first = folder.metadata.front();
  for (size_t s = 1; s < folder.metadata.size(); ++s) {
    if (folder.metadata[s].shards || folder.metadata[s].folder_files) {
      findings.failures.push_back(
          {ErrorCode::kBadMetadata,
           model.shard_names[s] +
               ": its df11 metadata has a folder record, which belongs in the "
               "first shard " +
               model.shard_names.front() + " only"});
    }
  }
  if (!first.shards || !first.folder_files) {
    if (spec_minor_version(first.spec_version) >= kFolderRecordMinor) {
      findings.failures.push_back(
          {ErrorCode::kBadMetadata, model.shard_names.front() + ": df11 metadata " +
                                        first.spec_version +
                                        " without 'shards' and 'folder_files' (the folder record "
                                        "every 1.1 folder has in its first shard)"});
    }
    return findings;
  }
  findings.has_record = true;

  // I2: the folder's shards are exactly the recorded ones.
  const std::set<std::string> recorded_shards(first.shards->begin(), first.shards->end());
  const std::set<std::string> present_shards(model.shard_names.begin(), model.shard_names.end());
  for (const std::string& name : recorded_shards) {
    if (present_shards.count(name) == 0) {
      findings.failures.push_back(
          {ErrorCode::kNotFound, name + ": a shard of this folder (recorded in " +
                                     model.shard_names.front() + "), but missing"});
    }
  }
  for (const std::string& name : present_shards) {
    if (recorded_shards.count(name) == 0) {
      findings.failures.push_back(
          {ErrorCode::kBadMetadata, name + ": a shard the folder record in " +
                                        model.shard_names.front() + " does not list"});
    }
  }

  // I3: every recorded file is there with its size and SHA-256.
  std::set<std::string> recorded_files;
  for (const FolderFile& f : *first.folder_files) {
    DF11_RETURN_IF_ERROR(cancel.check());
    recorded_files.insert(f.file);
    auto state = read_state(model.dir / f.file, cancel, hash_files);
    if (!state) {
      if (state.status().code() == ErrorCode::kInterrupted) return state.status();
      findings.failures.push_back(
          {ErrorCode::kCorruptData,
           f.file + ": recorded in the folder record, but " +
               (state.status().code() == ErrorCode::kNotFound ? std::string("missing")
                                                              : state.status().message())});
      continue;
    }
    if (!hash_files) {
      if (state->size != f.size) {
        findings.failures.push_back({ErrorCode::kCorruptData, f.file + ": " +
                                                                  std::to_string(state->size) +
                                                                  " bytes, the folder record has " +
                                                                  std::to_string(f.size)});
      }
      continue;
    }
    findings.hashed.push_back(FolderFile{f.file, state->size, state->sha256});
    if (state->size != f.size || state->sha256 != f.sha256) {
      findings.failures.push_back(
          {ErrorCode::kCorruptData, f.file + ": " + std::to_string(state->size) +
                                        " bytes with sha256 " + state->sha256 +
                                        ", the folder record has " + std::to_string(f.size) +
                                        " bytes with sha256 " + f.sha256});
      continue;
    }
    ++findings.files_checked;
  }

  // I4, I5: files the record does not know.
  std::vector<std::string> present = model.side_files;
  if (model.config_text) present.push_back(kConfigFile);
  if (model.index_text) present.push_back(model.index_name);
  std::sort(present.begin(), present.end());
  size_t unlisted = 0;
  for (const std::string& rel : present) {
    if (recorded_files.count(rel) != 0) continue;
    if (is_publication_file(model.dir, rel)) {
      findings.publication_files.push_back(rel);
      continue;
    }
    if (rel == kConfigFile || rel == model.index_name) {
      findings.failures.push_back(
          {ErrorCode::kBadMetadata, rel + ": written by df11, but not in the folder record"});
    } else if (is_top_level_safetensors(rel)) {
      findings.failures.push_back(
          {ErrorCode::kBadMetadata,
           rel + ": not in the folder record, and the dfloat11 loader loads every *.safetensors "
                 "of the folder"});
    } else if (findings.warnings.size() < kMaxListedWarnings) {
      findings.warnings.push_back(rel + ": not in the folder record (added after compression?)");
    } else {
      ++unlisted;
    }
  }
  if (unlisted != 0) {
    findings.warnings.push_back("... and " + std::to_string(unlisted) +
                                " more files not in the folder record");
  }
  return findings;
}

}  // namespace df11::app
