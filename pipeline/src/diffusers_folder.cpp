#include "df11/diffusers_folder.h"

#include <algorithm>
#include <system_error>

#include "df11/df11_folder.h"
#include "df11/dtype_shares.h"
#include "df11/file_io.h"
#include "df11/hash.h"
#include "df11/model_folder.h"
#include "df11/sha256.h"
#include "output_dir.h"
#include "stopwatch.h"

namespace df11::app {
namespace fs = std::filesystem;

namespace {

// The top-level entries of a folder, sorted by name (the order of everything pipeline does).
Result<std::vector<std::string>> entries_of(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return Status(ErrorCode::kIo, dir.string() + ": cannot list: " + ec.message());
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) return Status(ErrorCode::kIo, dir.string() + ": cannot list: " + ec.message());
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A component compress codes: a folder that opens as a checkpoint with config.json and BF16
// weights. Anything else (tokenizer, scheduler, an F32 VAE) is copied.
bool is_codable_component(const fs::path& dir, const CancelToken& cancel) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec) || !fs::exists(dir / kConfigFile, ec)) return false;
  auto folder = open_model_folder(dir, cancel);
  return folder.is_ok() && require_bf16_weights(*folder).is_ok();
}

// A component decompress restores: one df11 wrote.
bool is_df11_component(const fs::path& dir, const CancelToken& cancel) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  auto folder = open_model_folder(dir, cancel);
  return folder.is_ok() && written_by_df11(*folder);
}

// Copies `rel` (a file, or a folder with everything in it) from `from` to `to`.
Status copy_entry(const fs::path& from, const fs::path& to, const std::string& rel, size_t* files,
                  uint64_t* bytes, const CancelToken& cancel) {
  std::error_code ec;
  const fs::path source = from / rel;
  std::vector<std::string> list;
  if (fs::is_directory(source, ec)) {
    fs::recursive_directory_iterator it(source, fs::directory_options::follow_directory_symlink,
                                        ec);
    if (ec) return Status(ErrorCode::kIo, source.string() + ": cannot list: " + ec.message());
    for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) return Status(ErrorCode::kIo, source.string() + ": cannot list: " + ec.message());
      if (fs::is_directory(it->path(), ec)) continue;
      list.push_back(it->path().lexically_relative(from).generic_string());
    }
    fs::create_directories(to / rel, ec);
    if (ec) return Status(ErrorCode::kIo, (to / rel).string() + ": " + ec.message());
  } else {
    list.push_back(rel);
  }
  std::sort(list.begin(), list.end());
  for (const std::string& file : list) {
    std::error_code size_ec;
    *bytes += fs::file_size(from / file, size_ec);
  }
  *files += list.size();
  return copy_side_files(from, to, list, {}, cancel);
}

// Every regular file under `dir`, relative, sorted.
std::vector<std::string> files_under(const fs::path& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::follow_directory_symlink, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (fs::is_regular_file(it->path(), ec)) {
      files.push_back(it->path().lexically_relative(dir).generic_string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

Result<std::string> sha256_of(const fs::path& file) {
  std::error_code ec;
  if (fs::file_size(file, ec) == 0 && !ec) return sha256_hex({});
  DF11_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(file.string()));
  return sha256_hex(mapped.span());
}

// Every entry of a pipeline folder, into the same name under `staging`: the components that
// `is_component` picks go through `convert(name)` (one model folder each: compress or
// decompress), the rest are copied as they are.
template <class IsComponent, class Convert>
Status for_each_entry(const fs::path& from, const fs::path& staging,
                      const std::vector<std::string>& names, IsComponent is_component,
                      Convert convert, size_t* copied_files, uint64_t* copied_bytes,
                      const CancelToken& cancel) {
  for (const std::string& name : names) {
    DF11_RETURN_IF_ERROR(cancel.check());
    if (!is_component(name)) {
      DF11_RETURN_IF_ERROR(copy_entry(from, staging, name, copied_files, copied_bytes, cancel));
      continue;
    }
    const Status status = convert(name);
    if (!status) return status.with_context(name);
  }
  return Status::ok();
}

}  // namespace

bool is_diffusers_folder(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / kModelIndexFile, ec)) return false;
  auto names = entries_of(dir);
  if (!names) return false;
  return std::none_of(names->begin(), names->end(),
                      [](const std::string& n) { return n.ends_with(".safetensors"); });
}

Result<DiffusersCompressSummary> compress_diffusers(const CompressOptions& options,
                                                    Reporter& reporter, const CancelToken& cancel) {
  const Stopwatch started;
  DF11_RETURN_IF_ERROR(check_distinct_folders(options.model_dir, options.out_dir));
  DF11_ASSIGN_OR_RETURN(std::vector<std::string> names, entries_of(options.model_dir));
  std::vector<std::string> coded;
  for (const std::string& name : names) {
    if (is_codable_component(options.model_dir / name, cancel)) coded.push_back(name);
  }
  if (coded.empty()) {
    return Status(ErrorCode::kBadDtype,
                  options.model_dir.string() +
                      ": a diffusers pipeline (model_index.json) without a component holding "
                      "BF16 weights (a subfolder with config.json and BF16 *.safetensors): "
                      "nothing to code");
  }
  DF11_ASSIGN_OR_RETURN(StagingDir staging, StagingDir::create(options.out_dir, options.force));
  DiffusersCompressSummary summary;
  DF11_RETURN_IF_ERROR(for_each_entry(
      options.model_dir, staging.path(), names,
      [&](const std::string& name) {
        return std::find(coded.begin(), coded.end(), name) != coded.end();
      },
      [&](const std::string& name) -> Status {
        CompressOptions component = options;
        component.model_dir = options.model_dir / name;
        component.out_dir = staging.path() / name;
        component.force = false;
        DF11_ASSIGN_OR_RETURN(CompressSummary result, compress_model(component, reporter, cancel));
        summary.coded.push_back(name);
        summary.summaries.push_back(result);
        return Status::ok();
      },
      &summary.copied_files, &summary.copied_bytes, cancel));
  DF11_RETURN_IF_ERROR(cancel.check());
  DF11_RETURN_IF_ERROR(staging.commit());
  summary.seconds = started.seconds();
  return summary;
}

Result<DiffusersDecompressSummary> decompress_diffusers(const DecompressOptions& options,
                                                        Reporter& reporter,
                                                        const CancelToken& cancel) {
  const Stopwatch started;
  DF11_RETURN_IF_ERROR(check_distinct_folders(options.df11_dir, options.out_dir));
  DF11_ASSIGN_OR_RETURN(std::vector<std::string> names, entries_of(options.df11_dir));
  DF11_ASSIGN_OR_RETURN(StagingDir staging, StagingDir::create(options.out_dir, options.force));
  DiffusersDecompressSummary summary;
  uint64_t copied_bytes = 0;
  DF11_RETURN_IF_ERROR(for_each_entry(
      options.df11_dir, staging.path(), names,
      [&](const std::string& name) { return is_df11_component(options.df11_dir / name, cancel); },
      [&](const std::string& name) -> Status {
        DecompressOptions component = options;
        component.df11_dir = options.df11_dir / name;
        component.out_dir = staging.path() / name;
        component.force = false;
        DF11_ASSIGN_OR_RETURN(DecompressSummary result,
                              decompress_model(component, reporter, cancel));
        summary.restored.push_back(name);
        summary.summaries.push_back(result);
        return Status::ok();
      },
      &summary.copied_files, &copied_bytes, cancel));
  if (summary.restored.empty()) {
    return Status(ErrorCode::kBadMetadata,
                  options.df11_dir.string() +
                      ": a diffusers pipeline (model_index.json) without a component df11 wrote");
  }
  DF11_RETURN_IF_ERROR(cancel.check());
  DF11_RETURN_IF_ERROR(staging.commit());
  summary.seconds = started.seconds();
  return summary;
}

Result<VerifyReport> verify_diffusers(const VerifyOptions& options, Reporter& reporter,
                                      const CancelToken& cancel) {
  DF11_ASSIGN_OR_RETURN(std::vector<std::string> names, entries_of(options.df11_dir));
  VerifyReport total;
  size_t components = 0;
  auto fail = [&](ErrorCode code, const std::string& line) {
    reporter.finding("FAIL " + line);
    total.failures.push_back(make_finding(code, line));
  };
  for (const std::string& name : names) {
    DF11_RETURN_IF_ERROR(cancel.check());
    const fs::path dir = options.df11_dir / name;
    if (is_df11_component(dir, cancel)) {
      VerifyOptions component = options;
      component.df11_dir = dir;
      if (options.against) component.against = *options.against / name;
      DF11_ASSIGN_OR_RETURN(VerifyReport r, verify_model(component, reporter, cancel));
      ++components;
      total.device = r.device;
      total.has_checksums = total.has_checksums && r.has_checksums;
      total.files_sha256 = r.files_sha256;
      total.groups += r.groups;
      total.tensors += r.tensors;
      total.files += r.files;
      total.side_files += r.side_files;
      total.headers += r.headers;
      total.folder_files += r.folder_files;
      total.compared += r.compared;
      total.aliases += r.aliases;
      for (Finding& f : r.failures) {
        // The component's files, as paths in the pipeline folder.
        f.file = f.file.empty() ? name : name + "/" + f.file;
        f.message = name + ": " + f.message;
        total.failures.push_back(std::move(f));
      }
      for (const std::string& n : r.notes) total.notes.push_back(name + ": " + n);
      if (total.different_models.empty()) total.different_models = r.different_models;
      continue;
    }
    if (!options.against) continue;
    // A copied entry: the same bytes as the original pipeline's.
    std::vector<std::string> files;
    std::error_code ec;
    if (fs::is_directory(dir, ec)) {
      for (const std::string& f : files_under(dir)) files.push_back(name + "/" + f);
    } else {
      files.push_back(name);
    }
    for (const std::string& rel : files) {
      auto mine = sha256_of(options.df11_dir / rel);
      auto theirs = sha256_of(*options.against / rel);
      if (!mine) return mine.status();
      if (!theirs) {
        fail(ErrorCode::kMismatch, rel + ": not in " + options.against->string());
      } else if (*mine != *theirs) {
        fail(ErrorCode::kMismatch, rel + ": differs from " + (*options.against / rel).string());
      } else {
        ++total.compared;
      }
    }
  }
  if (components == 0) {
    return Status(ErrorCode::kBadMetadata,
                  options.df11_dir.string() +
                      ": a diffusers pipeline (model_index.json) without a component df11 wrote");
  }
  if (options.against) {
    // Components and files of the original that the DF11 pipeline lacks.
    DF11_ASSIGN_OR_RETURN(std::vector<std::string> original, entries_of(*options.against));
    for (const std::string& name : original) {
      std::error_code ec;
      if (!fs::exists(options.df11_dir / name, ec)) {
        fail(ErrorCode::kMismatch,
             name + ": in " + options.against->string() + " but not in the DF11 pipeline");
      }
    }
  }
  total.notes.push_back("pipeline: " + std::to_string(components) +
                        " coded components verified; files outside them are not covered by "
                        "df11 checksums" +
                        (options.against ? " (compared with the original's)" : ""));
  return total;
}

Result<DiffusersInspectReport> inspect_diffusers(const InspectOptions& options, Reporter& reporter,
                                                 const CancelToken& cancel) {
  const fs::path root(options.path);
  DF11_ASSIGN_OR_RETURN(std::vector<std::string> names, entries_of(root));
  DiffusersInspectReport result;
  for (const std::string& name : names) {
    DF11_RETURN_IF_ERROR(cancel.check());
    std::error_code ec;
    const fs::path dir = root / name;
    if (name == kModelIndexFile) continue;
    if (!fs::is_directory(dir, ec) || !open_model_folder(dir, cancel).is_ok()) {
      result.other.push_back(name);
      continue;
    }
    InspectOptions component = options;
    component.path = dir.string();
    DF11_ASSIGN_OR_RETURN(InspectReport report, inspect_model(component, reporter, cancel));
    result.components.push_back(name);
    result.reports.push_back(std::move(report));
  }
  if (result.components.empty()) {
    return Status(ErrorCode::kNotFound, root.string() +
                                            ": a diffusers pipeline (model_index.json) without a "
                                            "component holding *.safetensors weights");
  }
  return result;
}

}  // namespace df11::app
