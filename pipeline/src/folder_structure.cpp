#include "folder_structure.h"

#include <set>
#include <unordered_set>
#include <vector>

#include "df11/folder_record.h"
#include "df11/header_checksum.h"
#include "df11/loader_check.h"
#include "df11/model_config.h"
#include "df11/model_folder.h"
#include "rebuild.h"

namespace df11::app {

std::string member_list(const GroupMeta& meta) {
  std::string list;
  for (const MemberMeta& m : meta.members) list += (list.empty() ? "'" : ", '") + m.name + "'";
  return list;
}

namespace {

// The DF11 config.json must make the loader decode every group into its members, in order.
void check_loader(const Df11Folder& folder, const FindingFn& fail) {
  if (!folder.folder.config_text) {
    fail(ErrorCode::kNotFound, "config.json: missing; the dfloat11 loader needs it");
    return;
  }
  auto dict = read_pattern_dict(*folder.folder.config_text, "config.json");
  if (!dict) {
    fail(dict.status().code(), dict.status().message());
    return;
  }
  if (!*dict) {
    fail(ErrorCode::kBadConfig,
         "config.json: no dfloat11_config; the dfloat11 loader cannot load this folder");
    return;
  }
  auto patterns = LoaderPatterns::compile(**dict, "config.json");
  if (!patterns) {
    fail(patterns.status().code(), patterns.status().message());
    return;
  }
  for (const CodedGroup& g : folder.groups) {
    const GroupMeta& meta = folder.metadata[g.shard].groups[g.meta_index];
    auto names = patterns->member_names(meta.name);
    if (!names) {
      fail(names.status().code(), g.what + ": " + names.status().message());
      continue;
    }
    std::vector<std::string> expected;
    for (const MemberMeta& m : meta.members) expected.push_back(m.name);
    if (*names != expected) {
      fail(ErrorCode::kBadConfig,
           g.what + ": config.json pattern_dict makes the loader decode it into " +
               std::to_string(names->size()) + " weights starting with '" + names->front() +
               "', but its members are " + member_list(meta));
    }
  }
}

// Each shard records the original file of its own name (spec 5.2), and its own __metadata__
// entries other than "df11" are that original's, copied: compare them.
void check_shard_metadata(const Df11Folder& folder, size_t shard, const FindingFn& fail) {
  const std::string& name = folder.folder.shard_names[shard];
  // Written by this spec version, the document is exactly what serialize_df11_metadata
  // makes of its content: any other text (an unknown key, a dropped empty list) was altered.
  const Df11Metadata& meta = folder.metadata[shard];
  // 1.1 documents serialize the same way (1.2 only adds the optional alias_of).
  if (spec_minor_version(meta.spec_version) >= kFolderRecordMinor &&
      spec_minor_version(meta.spec_version) <= spec_minor_version(kDf11SpecVersion)) {
    auto canonical = serialize_df11_metadata(meta);
    const std::string* stored =
        folder.folder.shards[shard].header().metadata_value(kDf11MetadataKey);
    if (!canonical || stored == nullptr || *canonical != *stored) {
      fail(ErrorCode::kCorruptData,
           name +
               ": df11 metadata text differs from what its content serializes to "
               "(altered after writing)");
    }
  }
  for (const SourceFile& source : folder.metadata[shard].sources) {
    if (source.file != name) continue;
    auto layout = parse_source_layout(source);
    if (!layout) return;  // reported when the source is rebuilt
    MetadataEntries own;
    for (const auto& entry : folder.folder.shards[shard].header().metadata) {
      if (entry.first != kDf11MetadataKey && entry.first != kHeaderChecksumKey) {
        own.push_back(entry);
      }
    }
    if (own != layout->header.metadata) {
      fail(ErrorCode::kCorruptData,
           name + ": __metadata__ entries differ from the original file's");
    }
    return;
  }
  fail(ErrorCode::kBadMetadata,
       name + ": its df11 metadata records no original file of the same name");
}

// spec 7.2: config.json carries df11's marker exactly when the shards carry df11 metadata
// (from 1.1 on; 1.0 folders have no marker), with the shards' spec_version.
void check_marker(const Df11Folder& folder, const FindingFn& fail) {
  if (!folder.folder.config_text) return;  // check_loader reports it
  auto marker = read_df11_marker(*folder.folder.config_text, "config.json");
  if (!marker) {
    fail(marker.status().code(), marker.status().message());
    return;
  }
  const std::string& version = folder.metadata.front().spec_version;
  if (!marker->has_value()) {
    if (spec_minor_version(version) >= kFolderRecordMinor) {
      fail(ErrorCode::kBadConfig,
           "config.json: dfloat11_config has no \"df11\" marker, but the shards carry "
           "df11 metadata " +
               version);
    }
    return;
  }
  if (**marker != version) {
    fail(ErrorCode::kBadConfig, "config.json: dfloat11_config.df11 says spec_version " + **marker +
                                    ", the " + "df11 metadata of " +
                                    folder.folder.shard_names.front() + " " + version);
  }
}

}  // namespace

void check_folder_structure(const Df11Folder& folder, const FindingFn& fail) {
  check_loader(folder, fail);
  for (size_t s = 0; s < folder.folder.shards.size(); ++s) check_shard_metadata(folder, s, fail);
  check_marker(folder, fail);
  if (Status recorded = check_side_files_recorded(folder); !recorded) {
    fail(recorded.code(), recorded.message());
  }
}

void check_sources_cover_originals(const Df11Folder& folder, const FindingFn& fail) {
  std::unordered_set<std::string> in_sources;
  for (const SourceRef& ref : folder.sources) {
    auto layout = parse_source_layout(folder.source(ref));
    if (!layout) continue;  // reported where the source is read
    for (const TensorInfo& t : layout->header.tensors) in_sources.insert(t.name);
  }
  std::vector<std::string> missing;
  for (const auto& [name, original] : folder.originals) {
    if (in_sources.count(name) == 0) {
      missing.push_back(folder.describe(name, original) +
                        ": listed in the metadata but in no source file's header");
    }
  }
  std::sort(missing.begin(), missing.end());
  for (const std::string& line : missing) fail(ErrorCode::kBadMetadata, line);
}

Status check_written_folder(const std::filesystem::path& dir, const CancelToken& cancel) {
  std::vector<std::string> findings;
  const FindingFn fail = [&](ErrorCode, const std::string& line) { findings.push_back(line); };
  Status result = [&]() -> Status {
    DF11_ASSIGN_OR_RETURN(ModelFolder model, open_model_folder(dir, cancel));
    DF11_ASSIGN_OR_RETURN(Df11Folder folder, open_df11_folder(std::move(model)));
    for (const Status& header : folder.header_checks) {
      if (!header) fail(header.code(), header.message());
    }
    check_folder_structure(folder, fail);
    DF11_ASSIGN_OR_RETURN(FolderFindings record,
                          check_folder_record(folder, cancel, /*hash_files=*/false));
    for (const RecordFailure& f : record.failures) fail(f.code, f.message);
    // compress wrote (and recorded) every file
    for (const std::string& line : record.warnings) fail(ErrorCode::kInternal, line);
    // Every tensor of every recorded original, against what the metadata says of it.
    for (const SourceRef& ref : folder.sources) {
      const SourceFile& source = folder.source(ref);
      auto layout = parse_source_layout(source);
      if (!layout) {
        fail(layout.status().code(), layout.status().message());
        continue;
      }
      for (const TensorInfo& t : layout->header.tensors) {
        if (Status s = check_source_tensor(folder, source.file, t); !s) fail(s.code(), s.message());
      }
    }
    check_sources_cover_originals(folder, fail);
    return Status::ok();
  }();
  if (!result) {
    if (result.code() == ErrorCode::kInterrupted) return result;
    fail(result.code(), result.message());
  }
  if (findings.empty()) return Status::ok();
  constexpr size_t kListed = 5;
  std::string list;
  for (size_t i = 0; i < findings.size() && i < kListed; ++i) {
    list += (i == 0 ? "" : "; ") + findings[i];
  }
  if (findings.size() > kListed) {
    list += "; and " + std::to_string(findings.size() - kListed) + " more problems";
  }
  return Status(ErrorCode::kInternal,
                dir.string() +
                    ": compress wrote a folder that df11 verify would reject, a bug in df11 "
                    "(nothing was kept): " +
                    list);
}

}  // namespace df11::app
