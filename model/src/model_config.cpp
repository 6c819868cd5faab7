#include "df11/model_config.h"

#include "df11/metadata.h"

namespace df11::app {

using Json = nlohmann::ordered_json;

Result<std::string> make_df11_config(const std::string& original_config, const Json& pattern_dict) {
  try {
    Json config = Json::parse(original_config);
    if (!config.is_object()) {
      return Status(ErrorCode::kBadConfig, "config.json: not a JSON object");
    }
    if (config.contains(kDfloat11ConfigKey)) {
      return Status(ErrorCode::kBadConfig,
                    "config.json: already has dfloat11_config (the input is a DF11 model)");
    }
    const auto quant = config.find(kQuantizationConfigKey);
    if (quant != config.end() && !quant->is_null()) {
      const Json method = quant->is_object() ? quant->value("quant_method", Json()) : Json();
      return Status(ErrorCode::kBadConfig,
                    "config.json: has a quantization_config (quant_method " +
                        method.dump().substr(0, 100) +
                        "): the input's weights are quantized; df11 codes BF16 weights");
    }
    // spec 7.2: transformers loads the folder through the quantizer df11 registers. A
    // checkpoint without config.json keeps dfloat11_config alone (no model to build).
    if (!config.empty()) config[kQuantizationConfigKey] = Json{{"quant_method", kDf11QuantMethod}};
    Json df11 = Json::object();
    df11["version"] = kDfloat11Version;
    df11["threads_per_block"] = Json::array({512});
    df11["bytes_per_thread"] = 8;
    df11["pattern_dict"] = pattern_dict;
    df11[kDf11MarkerKey] = Json{{"spec_version", std::string(kDf11SpecVersion)}};
    config[kDfloat11ConfigKey] = std::move(df11);
    return config.dump(2) + "\n";
  } catch (const Json::exception& e) {
    return Status(ErrorCode::kBadConfig, std::string("config.json: ") + e.what());
  }
}

namespace {

// config.json's dfloat11_config value, or nullopt if it has none. kBadConfig if the text is
// not a JSON object.
Result<std::optional<Json>> read_dfloat11_config(const std::string& config_text,
                                                 const std::string& file_name) {
  try {
    Json config = Json::parse(config_text);
    if (!config.is_object()) {
      return Status(ErrorCode::kBadConfig, file_name + ": not a JSON object");
    }
    const auto it = config.find(kDfloat11ConfigKey);
    if (it == config.end()) return std::optional<Json>();
    return std::optional<Json>(std::move(*it));
  } catch (const Json::exception& e) {
    return Status(ErrorCode::kBadConfig, file_name + ": " + e.what());
  }
}

// "1.<decimal digits>".
bool is_major_1_version(const std::string& v) {
  if (v.size() < 3 || v.size() > 11 || !v.starts_with("1.")) return false;
  return v.find_first_not_of("0123456789", 2) == std::string::npos;
}

}  // namespace

Result<std::optional<Json>> read_pattern_dict(const std::string& config_text,
                                              const std::string& file_name) {
  DF11_ASSIGN_OR_RETURN(std::optional<Json> d, read_dfloat11_config(config_text, file_name));
  if (!d) return std::optional<Json>();
  const auto dict = d->is_object() ? d->find("pattern_dict") : d->end();
  if (dict == d->end() || !dict->is_object()) {
    return Status(ErrorCode::kBadConfig,
                  file_name + ": dfloat11_config.pattern_dict is missing or not an object");
  }
  if (dict->size() > kMaxPatternDictKeys) {
    return Status(ErrorCode::kBadConfig, file_name + ": pattern_dict has " +
                                             std::to_string(dict->size()) +
                                             " keys, more than Max_Pattern_Dict_Keys " +
                                             std::to_string(kMaxPatternDictKeys));
  }
  for (const auto& [key, value] : dict->items()) {
    bool ok = value.is_array();
    for (const auto& v : value) ok = ok && v.is_string();
    if (!ok) {
      return Status(ErrorCode::kBadConfig,
                    file_name + ": pattern_dict['" + key + "'] must be a list of module names");
    }
  }
  return std::optional<Json>(std::move(*dict));
}

Result<std::optional<std::string>> read_df11_marker(const std::string& config_text,
                                                    const std::string& file_name) {
  DF11_ASSIGN_OR_RETURN(std::optional<Json> d, read_dfloat11_config(config_text, file_name));
  if (!d || !d->is_object()) return std::optional<std::string>();
  const auto marker = d->find(kDf11MarkerKey);
  if (marker == d->end()) return std::optional<std::string>();
  const auto version = marker->is_object() ? marker->find("spec_version") : marker->end();
  if (!marker->is_object() || marker->size() != 1 || version == marker->end() ||
      !version->is_string() || !is_major_1_version(version->get_ref<const std::string&>())) {
    return Status(ErrorCode::kBadConfig,
                  file_name + ": dfloat11_config.df11 = " + marker->dump().substr(0, 200) +
                      " is not {\"spec_version\": \"1.<minor>\"}");
  }
  return std::optional<std::string>(version->get<std::string>());
}

Result<std::string> make_index(const std::optional<std::string>& original_index,
                               const std::map<std::string, std::string>& weight_map,
                               uint64_t total_size) {
  try {
    Json index = Json::object();
    Json metadata = Json::object();
    if (original_index) {
      const Json original = Json::parse(*original_index);
      if (!original.is_object()) {
        return Status(ErrorCode::kBadConfig, "model.safetensors.index.json: not a JSON object");
      }
      const auto it = original.find("metadata");
      if (it != original.end() && it->is_object()) metadata = *it;
      // Other top-level keys than metadata and weight_map are kept as they were.
      for (const auto& [key, value] : original.items()) {
        if (key != "metadata" && key != "weight_map") index[key] = value;
      }
    }
    metadata["total_size"] = total_size;
    Json map = Json::object();
    for (const auto& [tensor, shard] : weight_map) map[tensor] = shard;
    Json result = Json::object();
    result["metadata"] = std::move(metadata);
    result["weight_map"] = std::move(map);
    for (auto& [key, value] : index.items()) result[key] = value;
    return result.dump(2) + "\n";
  } catch (const Json::exception& e) {
    return Status(ErrorCode::kBadConfig, std::string("model.safetensors.index.json: ") + e.what());
  }
}

}  // namespace df11::app
