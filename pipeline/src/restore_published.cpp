#include "restore_published.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "df11/file_io.h"
#include "df11/group_tensors.h"
#include "df11/hash.h"
#include "df11/model_config.h"
#include "file_writer.h"
#include "output_dir.h"
#include "rebuild.h"
#include "stopwatch.h"

namespace df11::app {
namespace fs = std::filesystem;

namespace {

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
  DF11_ASSIGN_OR_RETURN(
      PublishedFolder result,
      read_published_folder(std::move(model), shapes,
                            "pass --like DIR, a folder whose .safetensors files have these "
                            "tensors (e.g. the original model)"));
  DF11_RETURN_IF_ERROR(settle_tied_head(result, cancel));
  return result;
}

namespace {

// config.json without dfloat11_config and df11's quantization_config (the restored folder is
// a plain BF16 checkpoint), or nullopt if nothing else is left.
Result<std::optional<std::string>> restored_config(const std::string& text,
                                                   const std::string& where) {
  nlohmann::ordered_json config =
      nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object()) return Status(ErrorCode::kBadConfig, where + ": not a JSON object");
  config.erase(kDfloat11ConfigKey);
  const auto quant = config.find(kQuantizationConfigKey);
  if (quant != config.end() && quant->is_object() &&
      quant->value("quant_method", "") == kDf11QuantMethod) {
    config.erase(quant);
  }
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
