#include "inspect_render.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_text.h"
#include "console.h"
#include "df11/byte_units.h"
#include "df11/count_text.h"
#include "df11/inspect_zstd.h"
#include "inspect_table.h"

namespace df11::app {
namespace {

using Json = nlohmann::ordered_json;
using Col = TextTable::Column;
constexpr auto kLeft = TextTable::Align::kLeft;

std::string level_key(int level) { return "level_" + std::to_string(level); }

// "2^-7": the magnitude range [2^(e-127), 2^(e-126)) of BF16 exponent e; e = 0 holds zeros
// and subnormals.
std::string magnitude(uint32_t exponent) {
  if (exponent == 0) return "0/subnormal";
  return "2^" + std::to_string(static_cast<int>(exponent) - 127);
}

std::string ratio_or_dash(const GroupReport& g, double value) {
  return g.coded ? fixed(value, 4) : "raw";
}

std::string zstd_cell(const std::optional<ZstdBaseline>& z, bool strong) {
  if (!z) return "";
  const ZstdResult& r = strong ? z->strong : z->fast;
  return fixed(r.ratio(), 4) + (r.sampled ? "*" : "");
}

// Exponent bits per weight: from the counted code, or from the stored stream's size when
// nothing was counted (a remote DF11 group).
double mean_code_bits(const GroupReport& g) {
  if (g.counts_known) return g.code.mean_length_bits();
  return g.n_elements ? 8.0 * static_cast<double>(g.bytes.encoded_exponent) /
                            static_cast<double>(g.n_elements)
                      : 0.0;
}

// The line that says what a remote inspect read: "read 97.3 KiB of 64.1 MB in 9 requests".
std::string remote_read_text(const RemoteRead& remote) {
  return "read " + format_bytes(remote.bytes_read) + " of " + format_bytes(remote.repo_bytes) +
         " in " + std::to_string(remote.requests) + " HTTP requests";
}

// ---- JSON ----

Json parts_json(const PartBytes& b) {
  return Json{{"encoded_exponent", b.encoded_exponent},
              {"sign_mantissa", b.sign_mantissa},
              {"luts", b.luts},
              {"gaps", b.gaps},
              {"output_positions", b.output_positions},
              {"split_positions", b.split_positions},
              {"total", b.total()}};
}

Json zstd_json(const ZstdBaseline& z) {
  const auto one = [](const ZstdResult& r) {
    return Json{{"input_bytes", r.input_bytes},
                {"output_bytes", r.output_bytes},
                {"ratio", r.ratio()},
                {"sampled", r.sampled}};
  };
  return Json{{level_key(kZstdFastLevel), one(z.fast)},
              {level_key(kZstdStrongLevel), one(z.strong)}};
}

Json group_json(const GroupReport& g) {
  Json j;
  j["name"] = g.name;
  j["file"] = g.file;
  j["coded"] = g.coded;
  if (!g.coded) j["raw_reason"] = g.raw_reason;
  Json members = Json::array();
  for (const MemberReport& m : g.members) {
    members.push_back(Json{{"name", m.name.empty() ? Json(nullptr) : Json(m.name)},
                           {"shape", m.shape.empty() ? Json(nullptr) : Json(m.shape)},
                           {"n_elements", m.n_elements}});
  }
  j["members"] = members;
  j["n_elements"] = g.n_elements;
  j["bf16_bytes"] = g.bf16_bytes();
  j["bytes"] = g.coded ? parts_json(g.bytes) : Json(nullptr);
  j["ratio"] = g.ratio();
  j["counts_known"] = g.counts_known;
  j["entropy_bits_per_weight"] = g.counts_known ? Json(g.code.entropy_bits) : Json(nullptr);
  j["entropy_ratio"] = g.counts_known ? Json(g.entropy_ratio()) : Json(nullptr);
  if (g.coded) {
    j["bound_ratio"] = g.counts_known ? Json(g.bound_ratio()) : Json(nullptr);
    j["coded_bits"] = g.counts_known ? Json(g.code.coded_bits) : Json(nullptr);
    j["mean_code_length_bits"] = mean_code_bits(g);
  }
  if (g.counts_known && (g.coded || g.max_block_weights > 0)) {  // unknown: uncodable, remote
    j["max_block_weights"] = g.max_block_weights;
    j["max_block_weights_exact"] = g.max_block_weights_exact;
    j["compatible"] = g.compatible();
  }
  Json symbols = Json::array();
  for (const CodeSymbol& s : g.code.symbols()) {
    symbols.push_back(Json{{"exponent", s.exponent}, {"count", s.count}, {"length", s.length}});
  }
  j["code"] =
      Json{{"n_luts", g.code.n_luts}, {"max_length", g.code.max_length()}, {"symbols", symbols}};
  if (g.zstd) j["zstd"] = zstd_json(*g.zstd);
  return j;
}

// ---- text ----

void print_files(const InspectReport& r, std::ostream& out) {
  uint64_t total = 0;
  for (const FileReport& f : r.files) total += f.size;
  const char* what = r.kind == CheckpointKind::kBf16 ? "checkpoint"
                     : r.kind == CheckpointKind::kDf11
                         ? "DF11 checkpoint (with df11 metadata)"
                         : "DF11 checkpoint (no df11 metadata: member names from config.json "
                           "pattern_dict where it matches)";
  out << r.path << ": " << what << ", " << r.files.size()
      << (r.files.size() == 1 ? " file, " : " files, ") << format_bytes(total) << "\n";
  if (r.remote) {
    out << "  remote: " << r.remote->repo << " at " << r.remote->commit
        << ", nothing downloaded: " << remote_read_text(*r.remote) << " (headers"
        << (r.remote->sample_bytes
                ? ", " + format_bytes(r.remote->sample_bytes) + " of sampled weights"
                : "")
        << ")\n";
  }
  if (!r.dtypes.empty()) out << "  tensors by dtype: " << dtype_shares_text(r.dtypes) << "\n";
  for (const FileReport& f : r.files) {
    out << "  " << f.file << "  " << format_bytes(f.size) << "  " << count_of(f.n_tensors, "tensor")
        << "\n";
  }
}

void print_group_table(const InspectReport& r, const InspectTotals& t, std::ostream& out) {
  std::vector<Col> cols = {{"group", kLeft}, {"members"},  {"weights"},  {"BF16"},  {"exponents"},
                           {"sign+mant"},    {"overhead"}, {"stored"},   {"ratio"}, {"exp bits/w"},
                           {"entropy"},      {"bound"},    {"max/block"}};
  if (r.zstd) {
    cols.push_back({"zstd-" + std::to_string(kZstdFastLevel)});
    cols.push_back({"zstd-" + std::to_string(kZstdStrongLevel)});
  }
  TextTable table(cols);
  for (const GroupReport& g : r.groups) {
    std::vector<std::string> row = {g.name, std::to_string(g.members.size()),
                                    group_digits(g.n_elements), format_bytes(g.bf16_bytes())};
    if (g.coded) {
      row.insert(
          row.end(),
          {format_bytes(g.bytes.encoded_exponent), format_bytes(g.bytes.sign_mantissa),
           format_bytes(g.bytes.overhead()), format_bytes(g.bytes.total()), fixed(g.ratio(), 4),
           fixed(mean_code_bits(g), 3), g.counts_known ? fixed(g.code.entropy_bits, 3) : "",
           g.counts_known ? fixed(g.bound_ratio(), 4) : "",
           g.counts_known
               ? (g.max_block_weights_exact ? "" : "<=") + group_digits(g.max_block_weights)
               : ""});
    } else {
      row.insert(row.end(), {"", "", "", format_bytes(g.bf16_bytes()), "raw", "",
                             g.code.n_weights ? fixed(g.code.entropy_bits, 3) : "", "",
                             g.max_block_weights ? group_digits(g.max_block_weights) : ""});
    }
    if (r.zstd) {
      row.push_back(zstd_cell(g.zstd, false));
      row.push_back(zstd_cell(g.zstd, true));
    }
    table.add_row(std::move(row));
  }
  table.add_separator();
  std::vector<std::string> total = {
      "total (" + std::to_string(t.n_groups_coded) + " coded)",
      "",
      group_digits(t.coded_weights),
      format_bytes(t.coded_bf16_bytes),
      format_bytes(t.parts.encoded_exponent),
      format_bytes(t.parts.sign_mantissa),
      format_bytes(t.parts.overhead()),
      format_bytes(t.coded_stored_bytes),
      fixed(t.coded_ratio(), 4),
      fixed(t.coded_weights ? 8.0 * static_cast<double>(t.parts.encoded_exponent) /
                                  static_cast<double>(t.coded_weights)
                            : 0.0,
            3),
      t.counts_known ? fixed(t.entropy_bits, 3) : "",
      t.counts_known ? fixed(t.bound_ratio(), 4) : "",
      ""};
  if (r.zstd) {
    total.push_back(zstd_cell(t.zstd, false));
    total.push_back(zstd_cell(t.zstd, true));
  }
  table.add_row(std::move(total));
  table.print(out);
}

void print_tensor_table(const InspectReport& r, std::ostream& out) {
  std::vector<Col> cols = {{"tensor", kLeft}, {"shape", kLeft}, {"weights"}, {"BF16"},
                           {"entropy"},       {"ratio"},        {"bound"}};
  if (r.zstd) {
    cols.push_back({"zstd-" + std::to_string(kZstdFastLevel)});
    cols.push_back({"zstd-" + std::to_string(kZstdStrongLevel)});
  }
  TextTable table(cols);
  for (const TensorReport& tr : r.tensors) {
    if (!tr.alone) continue;
    const GroupReport& a = *tr.alone;
    std::vector<std::string> row = {tr.name,
                                    shape_to_string(tr.shape),
                                    group_digits(tr.n_elements),
                                    format_bytes(tr.bytes),
                                    fixed(a.code.entropy_bits, 3),
                                    ratio_or_dash(a, a.ratio()),
                                    ratio_or_dash(a, a.bound_ratio())};
    if (r.zstd) {
      row.push_back(zstd_cell(tr.zstd, false));
      row.push_back(zstd_cell(tr.zstd, true));
    }
    table.add_row(std::move(row));
  }
  table.print(out);
}

void print_parts(const InspectTotals& t, std::ostream& out) {
  TextTable table({{"part", kLeft}, {"bytes"}, {"share"}, {"bits/weight"}});
  const double n = static_cast<double>(t.coded_weights);
  const double total = static_cast<double>(t.coded_stored_bytes);
  const auto row = [&](const char* name, uint64_t bytes) {
    table.add_row({name, group_digits(bytes), percent(total > 0 ? bytes / total : 0),
                   fixed(n > 0 ? 8.0 * static_cast<double>(bytes) / n : 0, 4)});
  };
  row("encoded_exponent", t.parts.encoded_exponent);
  row("sign_mantissa", t.parts.sign_mantissa);
  row("luts", t.parts.luts);
  row("gaps", t.parts.gaps);
  row("output_positions", t.parts.output_positions);
  row("split_positions", t.parts.split_positions);
  table.add_separator();
  row("total", t.coded_stored_bytes);
  table.print(out, 2);
}

void print_group_details(const GroupReport& g, std::ostream& out) {
  out << "\ngroup " << g.name << " (" << g.file << "): " << g.members.size()
      << (g.members.size() == 1 ? " member, " : " members, ") << group_digits(g.n_elements)
      << " weights";
  if (g.coded) {
    out << ", " << g.code.n_luts << " LUT rows, codes up to " << g.code.max_length() << " bits\n";
  } else {
    out << ", stored unchanged: " << g.raw_reason << "\n";
  }
  TextTable members({{"member", kLeft}, {"shape", kLeft}, {"weights"}});
  for (const MemberReport& m : g.members) {
    members.add_row({m.name.empty() ? "(name unknown)" : m.name,
                     m.shape.empty() ? "" : shape_to_string(m.shape), group_digits(m.n_elements)});
  }
  members.print(out, 2);
  TextTable code({{"exponent"}, {"magnitude", kLeft}, {"count"}, {"share"}, {"length"}});
  const double n = static_cast<double>(g.code.n_weights);
  for (const CodeSymbol& s : g.code.symbols()) {
    code.add_row({std::to_string(s.exponent), magnitude(s.exponent), group_digits(s.count),
                  percent(n > 0 ? static_cast<double>(s.count) / n : 0),
                  s.length ? std::to_string(s.length) : "-"});
  }
  code.print(out, 2);
}

}  // namespace

// JSON schema (every size in bytes, every ratio = compressed / original):
//   path, kind ("bf16" | "df11" | "df11-no-metadata"), files [{file, size, tensors}],
//   groups [{name, file, coded, raw_reason?, members [{name|null, shape|null, n_elements}],
//            n_elements, bf16_bytes, bytes {encoded_exponent, sign_mantissa, luts, gaps,
//            output_positions, split_positions, total} | null, ratio, entropy_bits_per_weight,
//            entropy_ratio, bound_ratio?, coded_bits?, mean_code_length_bits?,
//            max_block_weights?, max_block_weights_exact?, compatible?,
//            code {n_luts, max_length, symbols [{exponent, count, length}]}, zstd?}],
//   tensors [{name, file, dtype, shape, n_elements, bytes, group|null, alone {group}, zstd?}]
//   (bf16 only), raw_tensors [{name, file, dtype, bytes}], totals {...}, baseline, limits,
//   notes [string]. zstd = {level_3: {input_bytes, output_bytes, ratio, sampled},
//   level_19: {...}}.
void order_for_people(InspectReport& r) {
  const auto by_name = [](const auto& a, const auto& b) { return natural_less(a.name, b.name); };
  std::stable_sort(r.groups.begin(), r.groups.end(), by_name);
  std::stable_sort(r.tensors.begin(), r.tensors.end(), by_name);
  std::stable_sort(r.raw.begin(), r.raw.end(), by_name);
}

namespace {

// The report as JSON, without "command" and "ok" (a component's, or the command's body).
Json inspect_json(const InspectReport& r) {
  const InspectTotals t = compute_totals(r);
  Json j;
  j["path"] = r.path;
  j["kind"] = checkpoint_kind_name(r.kind);
  Json files = Json::array();
  for (const FileReport& f : r.files) {
    files.push_back(Json{{"file", f.file}, {"size", f.size}, {"tensors", f.n_tensors}});
  }
  j["files"] = files;
  Json dtypes = Json::array();
  for (const DtypeShare& d : r.dtypes) {
    dtypes.push_back(
        Json{{"dtype", dtype_name(d.dtype)}, {"tensors", d.tensors}, {"bytes", d.bytes}});
  }
  j["dtypes"] = dtypes;
  Json groups = Json::array();
  for (const GroupReport& g : r.groups) groups.push_back(group_json(g));
  j["groups"] = groups;
  if (r.kind == CheckpointKind::kBf16) {
    Json tensors = Json::array();
    for (const TensorReport& tr : r.tensors) {
      Json x{{"name", tr.name},
             {"file", tr.file},
             {"dtype", dtype_name(tr.dtype)},
             {"shape", tr.shape},
             {"n_elements", tr.n_elements},
             {"bytes", tr.bytes},
             {"group", tr.group.empty() ? Json(nullptr) : Json(tr.group)}};
      if (tr.alone) x["alone"] = group_json(*tr.alone);
      if (tr.zstd) x["zstd"] = zstd_json(*tr.zstd);
      tensors.push_back(std::move(x));
    }
    j["tensors"] = tensors;
  }
  Json raw = Json::array();
  for (const RawTensorReport& x : r.raw) {
    raw.push_back(Json{
        {"name", x.name}, {"file", x.file}, {"dtype", dtype_name(x.dtype)}, {"bytes", x.bytes}});
  }
  j["raw_tensors"] = raw;
  Json totals{{"groups", r.groups.size()},
              {"groups_coded", t.n_groups_coded},
              {"coded_weights", t.coded_weights},
              {"coded_bf16_bytes", t.coded_bf16_bytes},
              {"coded_stored_bytes", t.coded_stored_bytes},
              {"coded_bytes", parts_json(t.parts)},
              {"coded_ratio", t.coded_ratio()},
              {"entropy_bits_per_weight", t.counts_known ? Json(t.entropy_bits) : Json(nullptr)},
              {"bound_ratio", t.counts_known ? Json(t.bound_ratio()) : Json(nullptr)},
              {"raw_bytes", t.raw_bytes},
              {"model_original_bytes", t.model_original_bytes()},
              {"tied_copy_bytes", t.tied_copy_bytes},
              {"model_stored_bytes", t.model_stored_bytes()},
              {"model_ratio", t.model_ratio()}};
  uint64_t file_bytes = 0;
  for (const FileReport& f : r.files) file_bytes += f.size;
  totals["file_bytes"] = file_bytes;
  if (r.original_file_bytes) totals["original_file_bytes"] = r.original_file_bytes;
  if (t.zstd) totals["zstd"] = zstd_json(*t.zstd);
  j["totals"] = totals;
  j["baseline"] = r.zstd ? Json{{"zstd",
                                 {{"levels", {kZstdFastLevel, kZstdStrongLevel}},
                                  {"strong_sample_bytes_per_tensor", kZstdStrongSampleBytes}}}}
                         : Json(nullptr);
  j["limits"] = Json{{"max_weights_per_block_compat", kMaxWeightsPerBlockCompat},
                     {"max_code_length", kMaxCodeLength}};
  if (r.remote) {
    const RemoteRead& x = *r.remote;
    j["remote"] = Json{{"repo", x.repo},
                       {"revision", x.revision},
                       {"commit", x.commit},
                       {"repo_bytes", x.repo_bytes},
                       {"bytes_read", x.bytes_read},
                       {"requests", x.requests},
                       {"sample_bytes", x.sample_bytes},
                       {"sample_bytes_per_group", x.sample_bytes_per_group},
                       {"sampled_groups", x.sampled_groups},
                       {"sizes", r.kind == CheckpointKind::kBf16 ? "predicted" : "stored"}};
  }
  j["notes"] = r.notes;
  return j;
}

}  // namespace

void render_inspect_json(const InspectReport& r, std::ostream& out) {
  Json j{{"command", "inspect"}, {"ok", true}};
  Json body = inspect_json(r);
  for (auto& [key, value] : body.items()) j[key] = std::move(value);
  out << j.dump(2) << "\n";
}

namespace {

std::string name_list(const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  return list;
}

}  // namespace

void render_diffusers_inspect_text(const std::string& path, const DiffusersInspectReport& report,
                                   int verbosity, std::ostream& out) {
  out << path << ": diffusers pipeline (" << kModelIndexFile << "), "
      << count_of(report.components.size(), "component")
      << " with weights: " << name_list(report.components);
  if (!report.other.empty()) out << "; not inspected: " << name_list(report.other);
  out << "\n";
  for (size_t i = 0; i < report.components.size(); ++i) {
    out << "\n== " << report.components[i] << " ==\n";
    render_inspect_text(report.reports[i], verbosity, out);
  }
}

void render_diffusers_inspect_json(const std::string& path, const DiffusersInspectReport& report,
                                   std::ostream& out) {
  Json components = Json::array();
  for (size_t i = 0; i < report.components.size(); ++i) {
    Json c{{"name", report.components[i]}};
    Json body = inspect_json(report.reports[i]);
    for (auto& [key, value] : body.items()) c[key] = std::move(value);
    components.push_back(std::move(c));
  }
  const Json j{{"command", "inspect"},
               {"ok", true},
               {"path", path},
               {"kind", "pipeline"},
               {"components", components},
               {"not_inspected", report.other}};
  out << j.dump(2) << "\n";
}

void render_inspect_text(const InspectReport& r, int verbosity, std::ostream& out) {
  const InspectTotals t = compute_totals(r);
  print_files(r, out);
  const bool predicted = r.kind == CheckpointKind::kBf16;
  if (verbosity >= 1 && !r.groups.empty()) {
    const char* heading =
        !predicted ? (r.remote ? "DF11 groups (stored bytes, from the headers; exponent counts "
                                 "need the weights: df11 pull, then inspect the folder):"
                               : "DF11 groups (stored bytes):")
        : r.remote ? "DF11 groups as df11 compress would make them (sizes PREDICTED from a "
                     "sample of each group's weights; see below):"
                   : "DF11 groups as df11 compress would store them (exact sizes from the "
                     "codes; nothing is written):";
    out << "\n" << heading << "\n";
    print_group_table(r, t, out);
  }
  if (verbosity >= 1 && predicted && !r.tensors.empty()) {
    out << "\nEach group member alone (df11 compress --group-by tensor):\n";
    print_tensor_table(r, out);
  }
  if (verbosity >= 2) {
    for (const GroupReport& g : r.groups) print_group_details(g, out);
  }
  out << "\n";
  if (t.coded_weights > 0) {
    out << "Where the bits go (" << t.n_groups_coded
        << (t.n_groups_coded == 1 ? " coded group, " : " coded groups, ")
        << group_digits(t.coded_weights) << " weights):\n";
    print_parts(t, out);
    const std::string coded_bits = fixed(
        8.0 * static_cast<double>(t.parts.encoded_exponent) / static_cast<double>(t.coded_weights),
        3);
    if (!t.counts_known) {
      out << "DF11 codes the exponents in " << coded_bits << " bits/weight; ratio "
          << fixed(t.coded_ratio(), 4) << " (entropy unknown: it needs the weights)\n";
    } else {
      out << "Exponent entropy " << fixed(t.entropy_bits, 3) << " bits/weight"
          << (r.remote ? " (of the sample)" : "") << "; DF11 codes " << coded_bits
          << ".\nRatio: (entropy + 8)/16 = " << fixed((t.entropy_bits + 8) / 16, 4)
          << "; with the stored overhead (tables, gaps, positions) " << fixed(t.bound_ratio(), 4)
          << "; DF11 " << (r.remote ? "predicted " : "") << fixed(t.coded_ratio(), 4) << "\n";
    }
    if (r.remote && predicted) {
      out << "Predicted, not measured: each group's Huffman code is built from the exponents "
             "of a sample of its weights ("
          << format_bytes(r.remote->sample_bytes) << " in all, up to "
          << format_bytes(r.remote->sample_bytes_per_group)
          << " per group from the middle of each member), and its exponent stream is that "
             "code's mean length on the sample times the group's weights; sign+mantissa "
             "bytes and the BF16 sizes are exact. df11 pull + df11 inspect gives the exact "
             "sizes.\n";
    }
    uint64_t most = 0;
    std::string where;
    bool exact = true;
    for (const GroupReport& g : r.groups) {
      if (g.coded && g.max_block_weights >= most) {
        if (g.max_block_weights > most || where.empty()) where = g.name;
        most = g.max_block_weights;
        exact = g.max_block_weights_exact;
      }
    }
    size_t incompatible = 0;
    for (const GroupReport& g : r.groups) incompatible += g.coded && !g.compatible();
    if (t.counts_known) {
      out << "Max weights per block: " << (exact ? "" : "<= ") << group_digits(most) << " ("
          << where << "); limit " << group_digits(kMaxWeightsPerBlockCompat) << ": "
          << (incompatible == 0 ? "every group loads in dfloat11"
                                : std::to_string(incompatible) +
                                      " groups exceed it (the dfloat11 CUDA kernel cannot load "
                                      "them)")
          << "\n";
    }
  } else {
    out << "No coded groups.\n";
  }
  for (const GroupReport& g : r.groups) {
    if (g.alias_of.empty() || !g.coded) continue;
    out << "Tied copy: group '" << g.name << "' codes '" << g.alias_of
        << "' again for the dfloat11 loader (its lm_head is tied): +"
        << format_bytes(g.bytes.total()) << " stored; restoration drops it\n";
  }
  out << "Stored unchanged: " << r.raw.size() << (r.raw.size() == 1 ? " tensor, " : " tensors, ")
      << format_bytes(t.raw_bytes) << "\n";
  out << "Model tensors: " << format_bytes(t.model_original_bytes()) << " -> "
      << format_bytes(t.model_stored_bytes()) << " ("
      << (r.remote && predicted ? "predicted ratio " : "ratio ") << fixed(t.model_ratio(), 4)
      << ")";
  if (r.original_file_bytes) {
    uint64_t file_bytes = 0;
    for (const FileReport& f : r.files) file_bytes += f.size;
    out << "; files " << format_bytes(r.original_file_bytes) << " -> " << format_bytes(file_bytes);
  }
  out << "\n";
  if (t.zstd) {
    out << "zstd on the same bytes: level " << kZstdFastLevel << " "
        << fixed(t.zstd->fast.ratio(), 4) << ", level " << kZstdStrongLevel << " "
        << fixed(t.zstd->strong.ratio(), 4)
        << (t.zstd->strong.sampled
                ? "* (* level " + std::to_string(kZstdStrongLevel) + " on the first " +
                      std::to_string(kZstdStrongSampleBytes >> 10) + " KiB of each tensor)"
                : std::string())
        << "\n";
  }
  for (const std::string& note : r.notes) out << "note: " << note << "\n";
  if (verbosity == 1) out << "(-v: members and code-length table of every group)\n";
}

}  // namespace df11::app
