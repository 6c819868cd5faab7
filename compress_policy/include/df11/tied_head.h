// Tied output heads (spec 7.4): a checkpoint whose lm_head shares the input embedding's
// weight stores that weight once, as the embedding. The dfloat11 loader replaces the
// embedding's weight with a freshly decoded tensor, which breaks the tie and leaves lm_head
// without weights (wrong logits). The official encoder therefore codes lm_head as a group of
// its own; df11 does the same, and records that group as an alias of the embedding (spec 5.3
// G8), so that restoration writes the original files without it.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "df11/grouping.h"
#include "df11/model_folder.h"

namespace df11::app {

// The module the loader decodes a tied copy into: transformers names the head of every
// *ForCausalLM / *LMHeadModel / *ForConditionalGeneration "lm_head".
inline constexpr const char* kTiedHeadModule = "lm_head";

// The index in `tensors` of the input embedding that lm_head is tied to, or nullopt when the
// checkpoint has no tie to express: config.json's tie_word_embeddings (top level, else in
// text_config) is true, or absent for an architecture with an LM head (transformers' default
// is to tie); the checkpoint holds no "lm_head.weight"; and a 2-D BF16 input embedding exists
// (by role: shared, embed_tokens, wte, word_embeddings, tok_embeddings, preferred in that
// order; with vocab_size in config.json its first dimension must equal it). An unreadable
// config.json is no tie (compress reports it elsewhere).
std::optional<size_t> find_tied_embedding(std::span<const TensorEntry> tensors,
                                          const std::string& config_text);

// The name of the tensor a folder's lm_head is tied to (find_tied_embedding over the
// folder's tensors in file order and its config.json), or nullopt. verify --against uses it:
// a published DF11 folder of a tied model codes "lm_head.weight", which the original lacks.
std::optional<std::string> tied_embedding_name(const ModelFolder& folder);

// Appends the group "lm_head" coding `tensors[embedding]` again, under the member name
// "lm_head.weight" (GroupSpec::alias_name), unless that would clash with a group or a tensor
// (then a note says so and nothing is added).
void add_tied_head(Grouping& grouping, std::span<const TensorEntry> tensors, size_t embedding);

}  // namespace df11::app
