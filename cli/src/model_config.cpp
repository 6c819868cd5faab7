#include "model_config.h"

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
    Json df11 = Json::object();
    df11["version"] = kDfloat11Version;
    df11["threads_per_block"] = Json::array({512});
    df11["bytes_per_thread"] = 8;
    df11["pattern_dict"] = pattern_dict;
    config[kDfloat11ConfigKey] = std::move(df11);
    return config.dump(2) + "\n";
  } catch (const Json::exception& e) {
    return Status(ErrorCode::kBadConfig, std::string("config.json: ") + e.what());
  }
}

Result<std::optional<Json>> read_pattern_dict(const std::string& config_text,
                                              const std::string& file_name) {
  try {
    const Json config = Json::parse(config_text);
    if (!config.is_object()) {
      return Status(ErrorCode::kBadConfig, file_name + ": not a JSON object");
    }
    const auto it = config.find(kDfloat11ConfigKey);
    if (it == config.end()) return std::optional<Json>();
    const auto dict = it->find("pattern_dict");
    if (!it->is_object() || dict == it->end() || !dict->is_object()) {
      return Status(ErrorCode::kBadConfig,
                    file_name + ": dfloat11_config.pattern_dict is missing or not an object");
    }
    for (const auto& [key, value] : dict->items()) {
      bool ok = value.is_array();
      for (const auto& v : value) ok = ok && v.is_string();
      if (!ok) {
        return Status(ErrorCode::kBadConfig,
                      file_name + ": pattern_dict['" + key + "'] must be a list of module names");
      }
    }
    return std::optional<Json>(*dict);
  } catch (const Json::exception& e) {
    return Status(ErrorCode::kBadConfig, file_name + ": " + e.what());
  }
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
