// The two JSON files of a model folder that DF11 changes: config.json gains
// "dfloat11_config" (what the dfloat11 loader reads), and model.safetensors.index.json maps
// the DF11 tensor names to their shards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "df11/status.h"

namespace df11::app {

// The loader's fixed geometry (spec 3.1: Windows_Per_Block 512, Bytes_Per_Window 8) and the
// format version it understands.
inline constexpr const char* kDfloat11ConfigKey = "dfloat11_config";
inline constexpr const char* kDfloat11Version = "0.5.0";
// spec 7.2: df11's marker inside dfloat11_config, {"spec_version": "1.1"}: this folder was
// written by df11, so every shard carries df11 metadata (the loader ignores the key).
inline constexpr const char* kDf11MarkerKey = "df11";
// spec 7.2: config.json's "quantization_config" of a folder df11 writes, {"quant_method":
// "df11"}: transformers picks its quantizer by this name (the dfloat11 loader ignores the key).
inline constexpr const char* kQuantizationConfigKey = "quantization_config";
inline constexpr const char* kDf11QuantMethod = "df11";
// spec 7.3: Max_Pattern_Dict_Keys, checked before any key is compiled.
inline constexpr size_t kMaxPatternDictKeys = 10'000;

// The original config.json text with "quantization_config" {"quant_method": "df11"} (not
// for an empty original: no config.json) and "dfloat11_config" appended (other keys keep their
// order; the df11 marker is the last key of dfloat11_config), indented by 2 as Hugging Face writes
// it. kBadConfig if the text is not a JSON object, already has dfloat11_config (the input is a DF11
// model already) or has a quantization_config (the input's weights are quantized, not BF16).
Result<std::string> make_df11_config(const std::string& original_config,
                                     const nlohmann::ordered_json& pattern_dict);

// pattern_dict of a config.json, or nullopt if it has no dfloat11_config. kBadConfig if the
// text is not JSON, dfloat11_config is malformed or pattern_dict has more than
// Max_Pattern_Dict_Keys keys.
Result<std::optional<nlohmann::ordered_json>> read_pattern_dict(const std::string& config_text,
                                                                const std::string& file_name);

// The spec_version of df11's marker in dfloat11_config (spec 7.2), or nullopt if the config
// has no dfloat11_config or no marker. kBadConfig if the text is not a JSON object or the
// marker is not {"spec_version": "1.<minor>"}.
Result<std::optional<std::string>> read_df11_marker(const std::string& config_text,
                                                    const std::string& file_name);

// A new index: the original's "metadata" entries (total_size replaced) and a weight_map of
// every tensor (sorted by name, as transformers writes it). kBadConfig if the original is
// not a JSON object.
Result<std::string> make_index(const std::optional<std::string>& original_index,
                               const std::map<std::string, std::string>& weight_map,
                               uint64_t total_size);

}  // namespace df11::app
