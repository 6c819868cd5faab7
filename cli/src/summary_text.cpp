#include "summary_text.h"

#include <cstdio>

#include "cli_text.h"
#include "df11/byte_units.h"

namespace df11::app {
namespace {

double ratio_percent(uint64_t part, uint64_t whole) {
  return whole != 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

double gb_per_second(uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0;
}

}  // namespace

std::string compress_summary_line(const CompressOptions& options, const CompressSummary& s) {
  char text[256];
  std::snprintf(text, sizeof text, "%s -> %s (%.1f%%; coded weights %.1f%%), ",
                format_bytes(s.input_bytes).c_str(), format_bytes(s.output_bytes).c_str(),
                ratio_percent(s.output_bytes, s.input_bytes),
                ratio_percent(s.coded_output_bytes, s.coded_input_bytes));
  char timing[96];
  std::snprintf(timing, sizeof timing, " in %.2f s (%.2f GB/s)", s.seconds,
                gb_per_second(s.input_bytes, s.seconds));
  std::string line = "compressed " + options.model_dir.string() + " -> " +
                     options.out_dir.string() + ": " + text + count_of(s.groups_coded, "group") +
                     " (" + count_of(s.tensors_coded, "tensor") + ") coded, " +
                     count_of(s.tensors_raw, "tensor") + " unchanged," + timing;
  if (!s.tied_copies.empty()) {
    // spec 7.4: the loader needs the tied head as its own group; restoration drops the copy.
    line += "; tied copy " + s.tied_copies.front();
    for (size_t i = 1; i < s.tied_copies.size(); ++i) line += ", " + s.tied_copies[i];
    line += " coded for the dfloat11 loader (+" + format_bytes(s.tied_copy_bytes) + ")";
  }
  return line;
}

std::string decompress_summary_line(const DecompressOptions& options, const DecompressSummary& s) {
  char timing[160];
  std::snprintf(timing, sizeof timing, "%s -> %s in %.2f s (%.2f GB/s)",
                format_bytes(s.input_bytes).c_str(), format_bytes(s.output_bytes).c_str(),
                s.seconds, gb_per_second(s.output_bytes, s.seconds));
  return "restored " + options.df11_dir.string() + " -> " + options.out_dir.string() + ": " +
         count_of(s.files, "file") + " (" + count_of(s.tensors, "tensor") + ", " +
         (s.published           ? "a new BF16 checkpoint, no checksums recorded"
          : options.file_sha256 ? "xxh3 and file sha256 checked"
                                : "xxh3 checked") +
         ") + " + count_of(s.side_files, "other file") + ", " + timing;
}

std::string verify_summary_line(const VerifyOptions& options, const VerifyReport& r) {
  std::string line = "verify " + options.df11_dir.string() + " (" + r.device + "): ";
  line += r.ok() ? "OK: " : "FAILED: " + count_of(r.failures.size(), "problem") + "; ";
  line += count_of(r.groups, "group") + " decoded, " + count_of(r.tensors, "tensor") + " checked";
  if (r.has_checksums) {
    line += " (xxh3), " + count_of(r.files, "file") +
            (r.files_sha256 ? " rebuilt and matched to recorded sha256, "
                            : " rebuilt from recorded headers, ") +
            count_of(r.side_files, "recorded side file") + ", " +
            count_of(r.headers, "header checksum") + ", " +
            count_of(r.folder_files, "folder file") + " (sha256)";
    if (r.aliases != 0) {
      line += ", " + std::to_string(r.aliases) + " tied cop" + (r.aliases == 1 ? "y" : "ies") +
              " decoded equal to the tensor " + (r.aliases == 1 ? "it copies" : "they copy");
    }
  } else {
    line += "; checksums unavailable (no df11 metadata)";
  }
  if (options.against) {
    line += "; " + count_of(r.compared, "tensor") + " compared bit for bit with " +
            options.against->string();
  }
  return line;
}

nlohmann::ordered_json compress_json(const CompressOptions& options, const CompressSummary& s) {
  nlohmann::ordered_json j;
  j["command"] = "compress";
  j["ok"] = true;
  j["input"] = options.model_dir.string();
  j["output"] = options.out_dir.string();
  j["shards"] = s.shards;
  j["tensors"] = s.tensors;
  j["groups_coded"] = s.groups_coded;
  j["tensors_coded"] = s.tensors_coded;
  j["groups_raw"] = s.groups_raw;
  j["tensors_raw"] = s.tensors_raw;
  j["input_bytes"] = s.input_bytes;
  j["output_bytes"] = s.output_bytes;
  j["ratio"] = ratio_percent(s.output_bytes, s.input_bytes) / 100.0;
  j["coded_input_bytes"] = s.coded_input_bytes;
  j["coded_output_bytes"] = s.coded_output_bytes;
  j["coded_ratio"] = ratio_percent(s.coded_output_bytes, s.coded_input_bytes) / 100.0;
  j["tied_copies"] = s.tied_copies;
  j["tied_copy_bytes"] = s.tied_copy_bytes;
  j["seconds"] = s.seconds;
  j["gb_per_second"] = gb_per_second(s.input_bytes, s.seconds);
  return j;
}

nlohmann::ordered_json decompress_json(const DecompressOptions& options,
                                       const DecompressSummary& s) {
  nlohmann::ordered_json j;
  j["command"] = "decompress";
  j["ok"] = true;
  j["input"] = options.df11_dir.string();
  j["output"] = options.out_dir.string();
  j["files"] = s.files;
  j["tensors"] = s.tensors;
  j["side_files"] = s.side_files;
  j["file_sha256_checked"] = options.file_sha256;
  // A folder published by the dfloat11 tools: a new BF16 checkpoint, not the original files.
  j["published"] = s.published;
  j["input_bytes"] = s.input_bytes;
  j["output_bytes"] = s.output_bytes;
  j["seconds"] = s.seconds;
  j["gb_per_second"] = gb_per_second(s.output_bytes, s.seconds);
  return j;
}

nlohmann::ordered_json verify_json(const VerifyOptions& options, const VerifyReport& r) {
  nlohmann::ordered_json j;
  j["command"] = "verify";
  j["ok"] = r.ok();
  j["folder"] = options.df11_dir.string();
  j["device"] = r.device;
  j["groups"] = r.groups;
  j["tensors"] = r.tensors;
  j["has_checksums"] = r.has_checksums;
  j["files"] = r.files;
  j["files_sha256"] = r.files_sha256;
  j["side_files"] = r.side_files;
  j["headers"] = r.headers;
  j["folder_files"] = r.folder_files;
  j["aliases"] = r.aliases;
  if (options.against) {
    j["against"] = options.against->string();
    j["compared"] = r.compared;
  }
  nlohmann::ordered_json failures = nlohmann::ordered_json::array();
  const auto or_null = [](const std::string& s) {
    return s.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s);
  };
  for (const Finding& f : r.failures) {
    failures.push_back({{"file", or_null(f.file)},
                        {"group", or_null(f.group)},
                        {"tensor", or_null(f.tensor)},
                        {"code", error_code_name(f.code)},
                        {"message", f.message}});
  }
  j["failures"] = failures;
  j["different_models"] = or_null(r.different_models);
  j["notes"] = r.notes;
  j["device_notes"] = r.device_notes;
  return j;
}

std::vector<std::string> diffusers_compress_lines(const CompressOptions& options,
                                                  const DiffusersCompressSummary& s) {
  std::vector<std::string> lines;
  uint64_t in = 0, out = 0;
  for (size_t i = 0; i < s.coded.size(); ++i) {
    CompressOptions component = options;
    component.model_dir = options.model_dir / s.coded[i];
    component.out_dir = options.out_dir / s.coded[i];
    lines.push_back(compress_summary_line(component, s.summaries[i]));
    in += s.summaries[i].input_bytes;
    out += s.summaries[i].output_bytes;
  }
  char timing[32];
  std::snprintf(timing, sizeof timing, "%.2f s", s.seconds);
  lines.push_back("compressed pipeline " + options.model_dir.string() + " -> " +
                  options.out_dir.string() + ": " + count_of(s.coded.size(), "component") +
                  " coded (" + format_bytes(in) + " -> " + format_bytes(out) + "), " +
                  count_of(s.copied_files, "other file") + " copied (" +
                  format_bytes(s.copied_bytes) + "), in " + timing);
  return lines;
}

std::string diffusers_decompress_line(const DecompressOptions& options,
                                      const DiffusersDecompressSummary& s) {
  size_t files = 0, tensors = 0;
  uint64_t out = 0;
  for (const DecompressSummary& c : s.summaries) {
    files += c.files;
    tensors += c.tensors;
    out += c.output_bytes;
  }
  char timing[32];
  std::snprintf(timing, sizeof timing, "%.2f s", s.seconds);
  return "decompressed pipeline " + options.df11_dir.string() + " -> " + options.out_dir.string() +
         ": " + count_of(s.restored.size(), "component") + " restored (" + count_of(files, "file") +
         ", " + count_of(tensors, "tensor") + ", " + format_bytes(out) + "), " +
         count_of(s.copied_files, "other file") + " copied, in " + timing;
}

nlohmann::ordered_json diffusers_compress_json(const CompressOptions& options,
                                               const DiffusersCompressSummary& s) {
  nlohmann::ordered_json j;
  j["command"] = "compress";
  j["ok"] = true;
  j["input"] = options.model_dir.string();
  j["output"] = options.out_dir.string();
  j["pipeline"] = true;
  nlohmann::ordered_json components = nlohmann::ordered_json::object();
  for (size_t i = 0; i < s.coded.size(); ++i) {
    CompressOptions component = options;
    component.model_dir = options.model_dir / s.coded[i];
    component.out_dir = options.out_dir / s.coded[i];
    components[s.coded[i]] = compress_json(component, s.summaries[i]);
  }
  j["components"] = components;
  j["copied_files"] = s.copied_files;
  j["copied_bytes"] = s.copied_bytes;
  j["seconds"] = s.seconds;
  return j;
}

nlohmann::ordered_json diffusers_decompress_json(const DecompressOptions& options,
                                                 const DiffusersDecompressSummary& s) {
  nlohmann::ordered_json j;
  j["command"] = "decompress";
  j["ok"] = true;
  j["input"] = options.df11_dir.string();
  j["output"] = options.out_dir.string();
  j["pipeline"] = true;
  nlohmann::ordered_json components = nlohmann::ordered_json::object();
  for (size_t i = 0; i < s.restored.size(); ++i) {
    DecompressOptions component = options;
    component.df11_dir = options.df11_dir / s.restored[i];
    component.out_dir = options.out_dir / s.restored[i];
    components[s.restored[i]] = decompress_json(component, s.summaries[i]);
  }
  j["components"] = components;
  j["copied_files"] = s.copied_files;
  j["seconds"] = s.seconds;
  return j;
}

nlohmann::ordered_json error_json(const std::string& command, const Status& status) {
  nlohmann::ordered_json j;
  j["command"] = command;
  j["ok"] = false;
  j["error"] = {{"code", error_code_name(status.code())}, {"message", status.message()}};
  return j;
}

}  // namespace df11::app
