// verify for DF11 folders without df11 metadata (published with the dfloat11 tools): no
// checksums exist, so every group is validated and decoded in full by the strict reference
// decoder (which checks every gap and output position); with --against, pattern_dict says
// which original weights each group holds and those are compared bit for bit.
#include <algorithm>
#include <new>
#include <unordered_set>

#include "df11/decoder.h"
#include "df11/df11_folder.h"
#include "df11/group_tensors.h"
#include "df11/loader_check.h"
#include "df11/member_shapes.h"
#include "df11/member_spans.h"
#include "df11/model_config.h"
#include "df11/published_folder.h"
#include "file_stream.h"
#include "tensor_compare.h"
#include "verify_modes.h"
#if defined(DF11_HAVE_CUDA)
#include "df11/cuda_decoder.h"
#endif

namespace df11::app {
namespace {

// The --against tensor that weight `name` is compared with: itself, or for a head the
// dfloat11 encoder stored as a group of its own while the original ties it to the input
// embedding (spec 7.8), that embedding.
std::string against_name(const std::string& name, const ModelFolder& model,
                         const std::vector<std::string>& against_names, VerifyContext& context) {
  if (context.against->tensors.count(name) != 0) return name;
  const auto embedding = tied_embedding_of(name, model.config_text, against_names);
  if (!embedding) return name;
  context.report.notes.push_back("'" + name + "' compared with '" + *embedding + "' of " +
                                 context.against->dir.string() +
                                 ": the original ties them and stores the embedding only");
  return *embedding;
}

// Compares the decoded group with the original weights the loader would fill from it.
void compare_group(const GroupTensors& group, const GroupView& view,
                   std::span<const uint16_t> decoded, const LoaderPatterns* patterns,
                   TensorComparer& comparer, const std::string& what, const ModelFolder& model,
                   const std::vector<std::string>& against_names, VerifyContext& context) {
  if (patterns == nullptr) {
    context.fail(ErrorCode::kBadConfig,
                 what +
                     ": config.json has no usable dfloat11_config.pattern_dict: cannot tell which "
                     "original weights it holds");
    return;
  }
  auto names = patterns->member_names(group.name);
  if (!names) {
    context.fail(names.status().code(), what + ": " + names.status().message());
    return;
  }
  const size_t n_splits = view.split_positions.size() / 8;
  if (names->size() != n_splits + 1) {
    context.fail(ErrorCode::kBadConfig,
                 what + ": pattern_dict names " + std::to_string(names->size()) +
                     " weights, split_positions has " + std::to_string(n_splits + 1) + " parts");
    return;
  }
  uint64_t begin = 0;
  for (size_t k = 0; k < names->size(); ++k) {
    // validate_group checked the split positions are increasing within (0, n).
    const uint64_t end =
        k < n_splits ? load_le64(view.split_positions.data() + 8 * k) : decoded.size();
    const std::string name = against_name((*names)[k], model, against_names, context);
    std::vector<uint64_t> shape{end - begin};
    const auto it = context.against->tensors.find(name);
    if (it != context.against->tensors.end() &&
        context.against->tensor(it->second).n_elements == end - begin) {
      shape = context.against->tensor(it->second).shape;
    }
    Status status = comparer.begin(name, Dtype::kBF16, shape);
    if (status) {
      comparer.piece(bf16_bytes(decoded.subspan(begin, end - begin)));
      status = comparer.end();
    }
    if (!status) context.fail(status.code(), status.message() + " (" + what + ")");
    ++context.report.compared;
    begin = end;
  }
}

}  // namespace

Status verify_published_folder(const ModelFolder& model, VerifyContext& context) {
  context.report.has_checksums = false;
  context.report.notes.push_back(
      "checksums unavailable: no df11 metadata (not written by df11); every group was "
      "validated and decoded in full with the strict reference decoder");
  std::optional<LoaderPatterns> patterns;
  if (model.config_text) {
    auto read = read_pattern_dict(*model.config_text, "config.json");
    if (!read) {
      context.fail(read.status());
    } else if (*read) {
      auto compiled = LoaderPatterns::compile(**read, "config.json");
      if (!compiled) {
        context.fail(compiled.status());
      } else {
        patterns = std::move(compiled).value();
      }
    }
  }
  std::optional<TensorComparer> comparer;
  std::vector<std::string> against_names;
  if (context.against != nullptr) {
    comparer.emplace(*context.against);
    for (const auto& [name, at] : context.against->tensors) against_names.push_back(name);
    std::sort(against_names.begin(), against_names.end());
  }

  // Spec 7.8: a group's six stored tensors may lie in different shards of the folder.
  auto published = find_published_groups(model);
  if (!published) {
    // Which tensors are stored, and which raw, is unknown: nothing more can be checked.
    context.fail(published.status());
    return Status::ok();
  }
  const std::vector<FolderGroup>& groups = published->groups;

  uint64_t total = 0;
  for (const SafetensorsFile& shard : model.shards) total += shard.header().data_size;
  context.reporter.progress_start("verifying  ", total);
  std::vector<uint16_t> decoded;
  size_t next = 0;  // groups come shard by shard, as their encoded_exponent tensors lie
  for (size_t s = 0; s < model.shards.size(); ++s) {
    const SafetensorsFile& shard = model.shards[s];
    for (; next < groups.size() && groups[next].file() == s; ++next) {
      DF11_RETURN_IF_ERROR(context.cancel.check());
      const FolderGroup& found = groups[next];
      const GroupTensors& group = found.tensors;
      const std::string what = model.shard_names[s] + ": group '" + group.name + "'";
      const GroupView view = published_group_view(found, model.shards);
      auto info = validate_group(view, what);
      if (!info) {
        context.fail(info.status());
        continue;
      }
      try {
        decoded.assign(info->n_elements, 0);
      } catch (const std::bad_alloc&) {
        return Status(
            ErrorCode::kResourceLimit,
            what + ": out of memory for " + std::to_string(info->n_elements) + " decoded weights");
      }
      Status status = decode_group_reference(view, decoded, what);
      if (!status) {
        context.fail(status);
        continue;
      }
#if defined(DF11_HAVE_CUDA)
      if (context.device == DecodeDevice::kCuda) {
        std::vector<uint16_t> on_device(info->n_elements);
        status = cuda::decode_group_to_host(view, on_device, what);
        if (!status) {
          context.fail(status);
        } else if (on_device != decoded) {
          context.fail(ErrorCode::kMismatch,
                       what + ": the CUDA decoder's output differs from the reference decoder's");
        }
      }
#endif
      ++context.report.groups;
      context.report.tensors += view.split_positions.size() / 8 + 1;
      if (comparer)
        compare_group(group, view, decoded, patterns ? &*patterns : nullptr, *comparer, what, model,
                      against_names, context);
      const auto tensors = group.all();
      for (size_t i = 0; i < tensors.size(); ++i) {
        model.shards[found.file_of[i]].mapped().advise_dontneed(tensors[i]->file_offset,
                                                                tensors[i]->byte_size());
        context.reporter.progress_advance(tensors[i]->byte_size());
      }
    }
    for (const TensorInfo& t : shard.header().tensors) {
      if (published->stored.count(&t) != 0) continue;
      ++context.report.tensors;
      if (comparer) {
        Status status = comparer->begin(t.name, t.dtype, t.shape);
        if (status) {
          DF11_RETURN_IF_ERROR(stream_file_range(
              shard.mapped(), t.file_offset, t.byte_size(),
              [&](std::span<const uint8_t> bytes) {
                comparer->piece(bytes);
                return Status::ok();
              },
              context.cancel));
          status = comparer->end();
        }
        if (!status) {
          context.fail(status.code(), status.message() + " (" + model.shard_names[s] + ")");
        }
        ++context.report.compared;
      }
      context.reporter.progress_advance(t.byte_size());
    }
  }
  context.reporter.progress_finish();
  if (context.report.groups == 0) {
    // Nothing was decoded: a plain checkpoint, not a DF11 folder. Saying OK would claim a
    // verification that never happened.
    return not_a_df11_folder(model.dir);
  }
  if (comparer) {
    context.fail_not_compared(*comparer);
    context.report.different_models = comparer->different_models(context.here);
  }
  return Status::ok();
}

}  // namespace df11::app
