#include "model_card.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "df11/count_text.h"
#include "df11/folder_record.h"
#include "df11/inspect_model.h"

namespace df11::app {
namespace {

std::string ends_with_any(const std::string& arch,
                          std::initializer_list<std::pair<const char*, const char*>> table) {
  for (const auto& [suffix, tag] : table) {
    const std::string s(suffix);
    if (arch.size() >= s.size() && arch.compare(arch.size() - s.size(), s.size(), s) == 0) {
      return tag;
    }
  }
  return {};
}

std::string gb(uint64_t bytes) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f GB", static_cast<double>(bytes) / 1e9);
  return buffer;
}

std::string percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "-";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%",
                100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buffer;
}

// A YAML scalar in double quotes (repo ids are plain, but the card must stay valid YAML).
std::string yaml_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string pipeline_tag_for(const std::string& config_json) {
  nlohmann::json j = nlohmann::json::parse(config_json, nullptr, false);
  if (!j.is_object() || !j.contains("architectures") || !j["architectures"].is_array() ||
      j["architectures"].empty() || !j["architectures"][0].is_string()) {
    return {};
  }
  const std::string arch = j["architectures"][0].get<std::string>();
  if (arch.rfind("T5", 0) == 0 || arch.rfind("Bart", 0) == 0 || arch.rfind("MT5", 0) == 0) {
    return "text2text-generation";
  }
  return ends_with_any(arch, {{"ForCausalLM", "text-generation"},
                              {"LMHeadModel", "text-generation"},
                              {"ForConditionalGeneration", "image-text-to-text"},
                              {"ForSequenceClassification", "text-classification"},
                              {"ForTokenClassification", "token-classification"},
                              {"ForQuestionAnswering", "question-answering"},
                              {"ForMaskedLM", "fill-mask"},
                              {"ForImageClassification", "image-classification"},
                              {"ForSpeechSeq2Seq", "automatic-speech-recognition"}});
}

std::string make_model_card(const ModelCardInput& in) {
  std::ostringstream o;
  o << "---\n";
  if (in.base_model) {
    o << "base_model: " << yaml_quoted(*in.base_model) << "\n";
    o << "base_model_relation: quantized\n";
  }
  o << "tags:\n  - dfloat11\n  - df11\n  - lossless compression\n";
  const std::string tag = pipeline_tag_for(in.config_json);
  if (!tag.empty()) o << "pipeline_tag: " << tag << "\n";
  o << "---\n\n" << kModelCardMarker << "\n\n";
  const std::string name = in.repo_id.substr(in.repo_id.find('/') + 1);
  o << "# " << name << "\n\n";
  o << "A losslessly compressed copy of ";
  if (in.base_model) {
    o << "[" << *in.base_model << "](https://huggingface.co/" << *in.base_model << ")";
  } else {
    o << "a BF16 model";
  }
  o << " in the DFloat11 (DF11) format: the exponent of every BF16 weight is Huffman-coded and "
       "the sign and mantissa are kept as they are, so the weights decode to exactly the "
       "original bits.\n\n";
  o << "| | BF16 | DF11 | DF11 / BF16 |\n|---|---:|---:|---:|\n";
  o << "| Compressed weights (" << count_of(in.groups, "group") << ") | " << gb(in.coded_bf16_bytes)
    << " | " << gb(in.coded_stored_bytes) << " | "
    << percent(in.coded_stored_bytes, in.coded_bf16_bytes) << " |\n";
  o << "| Whole model | " << gb(in.original_bytes) << " | " << gb(in.stored_bytes) << " | "
    << percent(in.stored_bytes, in.original_bytes) << " |\n\n";
  o << "Sizes from `df11 inspect`.\n\n";
  o << "## How to use\n\n";
  o << "With the official loader (`pip install dfloat11[cuda12]`), which decodes on the GPU:\n\n";
  o << "```python\nfrom dfloat11 import DFloat11Model\n\n"
    << "model = DFloat11Model.from_pretrained(\"" << in.repo_id
    << "\", device_map=\"auto\")\n```\n\n";
  o << "With the df11 SDK and command-line tool:\n\n";
  o << "```bash\ndf11 pull " << in.repo_id << "            # into the Hugging Face cache\n"
    << "df11 verify " << in.repo_id << "          # decode everything, check every checksum\n"
    << "df11 decompress " << in.repo_id << " -o " << name
    << "-bf16   # the original files, byte for byte\n```\n\n";
  o << "In C++, `df11::decode_group` (CPU) or `df11::cuda::launch_decode` (GPU) decode a group "
       "of weights into memory the caller owns; see the df11 README.\n";
  return o.str();
}

Status fill_card_sizes(const std::string& folder, ModelCardInput& input,
                       const CancelToken& cancel) {
  InspectOptions options;
  options.path = folder;
  options.headers_only = true;  // sizes only: no decode (push verifies beside it)
  DF11_ASSIGN_OR_RETURN(InspectReport report, inspect_model(options, null_reporter(), cancel));
  const InspectTotals t = compute_totals(report);
  input.original_bytes = t.model_original_bytes();
  input.stored_bytes = t.model_stored_bytes();
  input.coded_bf16_bytes = t.coded_bf16_bytes;
  input.coded_stored_bytes = t.coded_stored_bytes;
  input.groups = t.n_groups_coded;
  return Status::ok();
}

}  // namespace df11::app
