// The model card (README.md) `df11 push` writes into a DF11 folder that has none: YAML front
// matter for the Hub (base_model, base_model_relation: quantized, tags, pipeline_tag), the
// size table from `df11 inspect`, and how to load the model.
#pragma once

#include <optional>
#include <string>

#include "df11/cancel.h"
#include "df11/status.h"

namespace df11::app {

struct ModelCardInput {
  std::string repo_id;                    // where it is published ("me/Qwen3-8B-DF11")
  std::optional<std::string> base_model;  // the BF16 source repo id
  std::string config_json;                // the folder's config.json text ("" if none)
  // From `df11 inspect --json` totals.
  uint64_t original_bytes = 0;  // whole model, BF16 files
  uint64_t stored_bytes = 0;    // whole model, DF11 files
  uint64_t coded_bf16_bytes = 0;
  uint64_t coded_stored_bytes = 0;
  size_t groups = 0;
};

// The Hub's pipeline_tag for config.json's first architecture ("Qwen3ForCausalLM" ->
// "text-generation"), or empty when it cannot be told.
std::string pipeline_tag_for(const std::string& config_json);

// The whole README.md text.
std::string make_model_card(const ModelCardInput& input);

// Runs inspect on `folder` (a DF11 folder) and fills the size fields of `input`.
Status fill_card_sizes(const std::string& folder, ModelCardInput& input, const CancelToken& cancel);

}  // namespace df11::app
