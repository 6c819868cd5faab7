#include "restore_published.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "df11/file_io.h"
#include "df11/group_tensors.h"
#include "df11/hash.h"
#include "file_writer.h"
#include "loader_check.h"
#include "model_config.h"
#include "output_dir.h"
#include "rebuild.h"
#include "stopwatch.h"

namespace df11::app {
namespace fs = std::filesystem;

namespace {

uint64_t element_count(const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) {
    if (d != 0 && n > UINT64_MAX / d) return UINT64_MAX;  // cannot match any group's count
    n *= d;
  }
  return n;
}

std::string name_list(const std::vector<std::string>& names) {
  constexpr size_t kShown = 5;
  std::string text;
  for (size_t i = 0; i < names.size() && i < kShown; ++i) {
    text += (i == 0 ? "'" : ", '") + names[i] + "'";
  }
  if (names.size() > kShown) text += " and " + std::to_string(names.size() - kShown) + " more";
  return text;
}

Result<uint64_t> decoded_digest(TensorProducer& producer, const OriginalTensor& t) {
  Xxh3 hash;
  DF11_RETURN_IF_ERROR(producer.produce(t, [&](std::span<const uint8_t> bytes) {
    hash.update(bytes);
    return Status::ok();
  }));
  return hash.digest();
}

// spec 7.8: the dfloat11 encoder stores a tied head as a group of its own; the original
// checkpoint holds only the embedding. The head is left out when config.json ties the two and
// they decode to the same bytes; otherwise it stays, and the note says why.
Status settle_tied_head(PublishedFolder& result, const CancelToken& cancel) {
  const Df11Folder& df = result.folder;
  const auto& config = df.folder.config_text;
  if (!config_ties_embeddings(config)) return Status::ok();
  std::vector<std::string> names;
  for (const auto& [name, t] : df.originals) names.push_back(name);
  std::sort(names.begin(), names.end());
  TensorProducer producer(df, DecodeDevice::kCpu, cancel);
  for (const std::string& head : names) {
    const auto embedding = tied_embedding_of(head, config, names);
    if (!embedding) continue;
    const OriginalTensor& h = df.originals.at(head);
    const OriginalTensor& e = df.originals.at(*embedding);
    bool same = h.byte_size == e.byte_size;
    if (same) {
      DF11_ASSIGN_OR_RETURN(uint64_t hd, decoded_digest(producer, h));
      DF11_ASSIGN_OR_RETURN(uint64_t ed, decoded_digest(producer, e));
      same = hd == ed;
    }
    if (!same) {
      result.tie_note = "config.json ties '" + head + "' to '" + *embedding +
                        "', but they differ here: both are restored";
      continue;
    }
    result.dropped_head = head;
    result.tie_note = "'" + head + "' decodes identically to '" + *embedding +
                      "' (config.json ties them): restored as the original stores it, the "
                      "embedding only";
    for (auto& shard : result.shards) {
      shard.erase(std::remove_if(shard.begin(), shard.end(),
                                 [&](const RestoredTensor& t) { return t.name == head; }),
                  shard.end());
    }
    break;
  }
  return Status::ok();
}

}  // namespace

Result<PublishedFolder> open_published_folder(ModelFolder model, const MemberShapes& shapes,
                                              const CancelToken& cancel) {
  PublishedFolder result;
  Df11Folder& df = result.folder;
  df.folder = std::move(model);
  const ModelFolder& folder = df.folder;
  const std::string where = (folder.dir / kConfigFile).string();
  if (!folder.config_text) {
    return Status(ErrorCode::kBadConfig,
                  where +
                      ": missing; its dfloat11_config.pattern_dict says which weights each "
                      "group holds");
  }
  DF11_ASSIGN_OR_RETURN(std::optional<nlohmann::ordered_json> dict,
                        read_pattern_dict(*folder.config_text, where));
  if (!dict) {
    return Status(ErrorCode::kBadConfig,
                  where + ": no dfloat11_config: cannot tell which weights the groups hold");
  }
  DF11_ASSIGN_OR_RETURN(LoaderPatterns patterns, LoaderPatterns::compile(*dict, where));

  std::vector<std::string> unknown;
  result.shards.resize(folder.shards.size());
  for (size_t s = 0; s < folder.shards.size(); ++s) {
    const SafetensorsFile& shard = folder.shards[s];
    DF11_ASSIGN_OR_RETURN(std::vector<GroupTensors> groups, enumerate_groups(shard.header()));
    std::unordered_set<std::string> stored;
    for (GroupTensors& group : groups) {
      CodedGroup coded;
      coded.shard = s;
      coded.what = folder.shard_names[s] + ": group '" + group.name + "'";
      coded.view = group_view(group, shard.bytes());
      DF11_ASSIGN_OR_RETURN(GroupInfo info, validate_group(coded.view, coded.what));
      auto names = patterns.member_names(group.name);
      if (!names) {
        return Status(names.status().code(),
                      folder.shard_names[s] + ": " + names.status().message());
      }
      const size_t n_splits = coded.view.split_positions.size() / 8;
      if (names->size() != n_splits + 1) {
        return Status(ErrorCode::kBadGroup, coded.what + ": pattern_dict names " +
                                                std::to_string(names->size()) +
                                                " weights, split_positions has " +
                                                std::to_string(n_splits + 1) + " parts");
      }
      coded.member_start.push_back(0);
      // validate_group checked the split positions are increasing within (0, n).
      for (size_t k = 0; k < n_splits; ++k) {
        coded.member_start.push_back(load_le64(coded.view.split_positions.data() + 8 * k));
      }
      coded.member_start.push_back(info.n_elements);
      for (const TensorInfo* t : group.all()) stored.insert(t->name);
      for (size_t k = 0; k < names->size(); ++k) {
        const std::string& name = (*names)[k];
        const uint64_t count = coded.member_start[k + 1] - coded.member_start[k];
        RestoredTensor restored;
        restored.name = name;
        restored.source.is_member = true;
        restored.source.group = df.groups.size();
        restored.source.member = k;
        restored.source.byte_size = 2 * count;
        if (auto shape = shapes.shape_of(name)) {
          if (element_count(*shape) != count) {
            return Status(ErrorCode::kBadShape,
                          coded.what + ": member '" + name + "' holds " + std::to_string(count) +
                              " weights, its shape " + shape_to_string(*shape) + " (from " +
                              (shapes.family().empty() ? "--like" : "config.json or --like") +
                              ") has " + std::to_string(element_count(*shape)));
          }
          restored.shape = std::move(*shape);
        } else {
          unknown.push_back(name);
        }
        if (!df.originals.emplace(name, restored.source).second) {
          return Status(ErrorCode::kDuplicateName,
                        coded.what + ": weight '" + name + "' appears twice in the folder");
        }
        result.shards[s].push_back(std::move(restored));
      }
      coded.tensors = std::move(group);
      df.groups.push_back(std::move(coded));
    }
    const auto& tensors = shard.header().tensors;
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (stored.count(tensors[i].name) != 0) continue;
      RestoredTensor restored;
      restored.name = tensors[i].name;
      restored.shape = tensors[i].shape;
      restored.source.raw = TensorLocation{s, i};
      restored.source.byte_size = tensors[i].byte_size();
      if (!df.originals.emplace(restored.name, restored.source).second) {
        return Status(
            ErrorCode::kDuplicateName,
            folder.shard_names[s] + ": tensor '" + restored.name + "' appears twice in the folder");
      }
      result.shards[s].push_back(std::move(restored));
    }
  }
  if (!unknown.empty()) {
    // A head the dfloat11 encoder stored as a group of its own has its tied embedding's
    // shape (the original, e.g. a --like folder, holds the embedding only).
    std::vector<std::string> names;
    for (const auto& [name, t] : df.originals) names.push_back(name);
    std::sort(names.begin(), names.end());
    for (auto& shard : result.shards) {
      for (RestoredTensor& t : shard) {
        if (std::find(unknown.begin(), unknown.end(), t.name) == unknown.end()) continue;
        const auto embedding = tied_embedding_of(t.name, folder.config_text, names);
        if (!embedding) continue;
        const auto shape = shapes.shape_of(*embedding);
        if (!shape || 2 * element_count(*shape) != t.source.byte_size) continue;
        t.shape = *shape;
        unknown.erase(std::find(unknown.begin(), unknown.end(), t.name));
      }
    }
  }
  if (!unknown.empty()) {
    std::sort(unknown.begin(), unknown.end());
    const std::string family =
        shapes.family().empty()
            ? "config.json names no architecture df11 knows"
            : "config.json's " + shapes.family() + " family does not cover them";
    return Status(ErrorCode::kUnsupported,
                  folder.dir.string() + ": the shapes of " + std::to_string(unknown.size()) +
                      " coded weights are unknown (" + family + "): " + name_list(unknown) +
                      "; pass --like DIR, a folder whose .safetensors files have these tensors "
                      "(e.g. the original model)");
  }
  for (auto& shard : result.shards) {
    std::sort(shard.begin(), shard.end(),
              [](const RestoredTensor& a, const RestoredTensor& b) { return a.name < b.name; });
  }
  DF11_RETURN_IF_ERROR(settle_tied_head(result, cancel));
  return result;
}

namespace {

// config.json without dfloat11_config (the restored folder is a plain BF16 checkpoint), or
// nullopt if nothing else is left.
Result<std::optional<std::string>> restored_config(const std::string& text,
                                                   const std::string& where) {
  nlohmann::ordered_json config =
      nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object()) return Status(ErrorCode::kBadConfig, where + ": not a JSON object");
  config.erase(kDfloat11ConfigKey);
  if (config.empty()) return std::optional<std::string>();
  return std::optional<std::string>(config.dump(2) + "\n");
}

Status write_shard(const PublishedFolder& published, size_t s, const fs::path& path,
                   TensorProducer& producer, Reporter& reporter, const CancelToken& cancel,
                   uint64_t* data_bytes) {
  const Df11Folder& df = published.folder;
  SafetensorsLayout layout;
  DF11_RETURN_IF_ERROR(layout.set_metadata(MetadataEntries{{"format", "pt"}}));
  for (const RestoredTensor& t : published.shards[s]) {
    const Dtype dtype = t.source.is_member ? Dtype::kBF16 : df.folder.tensor(t.source.raw).dtype;
    DF11_RETURN_IF_ERROR(layout.add_tensor(t.name, dtype, t.shape, t.source.byte_size));
  }
  DF11_ASSIGN_OR_RETURN(FinalizedLayout finalized, layout.finalize());
  DF11_ASSIGN_OR_RETURN(OutputFile file, OutputFile::create(path.string()));
  DF11_RETURN_IF_ERROR(file.preallocate(finalized.file_size));
  {
    FileWriter writer(file);
    DF11_RETURN_IF_ERROR(writer.write(0, finalized.prefix));
    for (size_t i = 0; i < published.shards[s].size(); ++i) {
      DF11_RETURN_IF_ERROR(cancel.check());
      uint64_t offset = finalized.tensor_offsets[i];
      DF11_RETURN_IF_ERROR(
          producer.produce(published.shards[s][i].source, [&](std::span<const uint8_t> bytes) {
            DF11_RETURN_IF_ERROR(writer.write(offset, bytes));
            offset += bytes.size();
            reporter.progress_advance(bytes.size());
            return Status::ok();
          }));
    }
  }
  *data_bytes = finalized.file_size - finalized.data_start;
  return file.commit();
}

}  // namespace

Result<DecompressSummary> restore_published_folder(ModelFolder model,
                                                   const DecompressOptions& options,
                                                   Reporter& reporter, const CancelToken& cancel) {
  const Stopwatch started;
  DF11_ASSIGN_OR_RETURN(MemberShapes shapes, MemberShapes::from_config(model.config_text));
  if (options.like) {
    DF11_ASSIGN_OR_RETURN(ModelFolder like, open_model_folder(*options.like, cancel));
    shapes.add_like(like);
  }
  DF11_ASSIGN_OR_RETURN(PublishedFolder published,
                        open_published_folder(std::move(model), shapes, cancel));
  const ModelFolder& folder = published.folder.folder;
  DF11_ASSIGN_OR_RETURN(std::optional<std::string> config,
                        restored_config(*folder.config_text, (folder.dir / kConfigFile).string()));
  DF11_ASSIGN_OR_RETURN(StagingDir staging, StagingDir::create(options.out_dir, options.force));
  reporter.warning(
      folder.dir.string() +
      ": no df11 metadata (published by the dfloat11 tools): the original files' bytes "
      "were not recorded, so this writes a new BF16 checkpoint with the same tensors "
      "(each checked by the strict decoder, no checksums to compare)");
  if (!published.tie_note.empty()) reporter.warning(published.tie_note);
  if (!config) {
    reporter.warning(std::string(kConfigFile) +
                     " held only dfloat11_config: the restored folder has no config.json (copy the "
                     "original model's)");
  }

  DecompressSummary summary;
  uint64_t total = 0;
  for (const auto& shard : published.shards) {
    for (const RestoredTensor& t : shard) total += t.source.byte_size;
  }
  reporter.progress_start("restoring  ", total);
  TensorProducer producer(published.folder, DecodeDevice::kCpu, cancel);
  std::map<std::string, std::string> weight_map;
  uint64_t total_size = 0;
  for (size_t s = 0; s < folder.shards.size(); ++s) {
    uint64_t data_bytes = 0;
    DF11_RETURN_IF_ERROR(write_shard(published, s, staging.path() / folder.shard_names[s], producer,
                                     reporter, cancel, &data_bytes));
    for (const RestoredTensor& t : published.shards[s]) weight_map[t.name] = folder.shard_names[s];
    total_size += data_bytes;
    summary.output_bytes += data_bytes;
    summary.tensors += published.shards[s].size();
    ++summary.files;
  }
  if (folder.index_text || folder.shards.size() > 1) {
    DF11_ASSIGN_OR_RETURN(std::string index, make_index(folder.index_text, weight_map, total_size));
    DF11_RETURN_IF_ERROR(write_file_atomic((staging.path() / kIndexFile).string(), index));
    ++summary.side_files;
  }
  if (config) {
    DF11_RETURN_IF_ERROR(write_file_atomic((staging.path() / kConfigFile).string(), *config));
    ++summary.side_files;
  }
  DF11_RETURN_IF_ERROR(copy_side_files(
      folder.dir, staging.path(), folder.side_files,
      [&](uint64_t n) { reporter.progress_advance(n); }, cancel));
  summary.side_files += folder.side_files.size();
  reporter.progress_finish();
  DF11_RETURN_IF_ERROR(cancel.check());
  DF11_RETURN_IF_ERROR(staging.commit());
  for (const SafetensorsFile& shard : folder.shards)
    summary.input_bytes += shard.header().file_size;
  summary.seconds = started.seconds();
  summary.published = true;
  return summary;
}

}  // namespace df11::app
