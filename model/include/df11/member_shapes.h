// Shapes of the weights a published DF11 folder's groups hold. The dfloat11 tools record only
// each member's element count (split_positions), so restoring a BF16 checkpoint needs the
// shapes from elsewhere: config.json for the architecture families the DFloat11 hub publishes
// (spec 7.8), the headers of a folder with the same tensor names (--like), or the caller (the
// C API's df11_model_open_with_shapes: the model the weights are loaded into).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "df11/model_folder.h"
#include "df11/status.h"

namespace df11::app {

class MemberShapes {
 public:
  // From config.json's text (without one: no family). A config that is not a JSON object is
  // kBadConfig; an unrecognised architecture gives shapes for no name (family() empty).
  static Result<MemberShapes> from_config(const std::optional<std::string>& config_text);

  // Adds every tensor of `like` (its headers only are read): its shapes win over config.json's.
  void add_like(const ModelFolder& like);

  // Adds the shape of weight `name` given by `source` (named in messages: "the shapes passed
  // to df11_model_open_with_shapes"); it wins over config.json's. False (nothing added) if a
  // shape was added for `name` already.
  bool add(const std::string& name, std::vector<uint64_t> shape, const std::string& source);

  // The shape of weight `name`, or nullopt if no source knows it.
  std::optional<std::vector<uint64_t>> shape_of(const std::string& name) const;

  // Where shape_of(name) comes from, for messages: the source given to add(), "--like" or
  // "config.json".
  std::string source_of(const std::string& name) const;

  // "llama", "phi3", "flux", ... or empty when config.json names no known family.
  const std::string& family() const { return family_; }

  // config.json has no model config at all (no model_type, architectures or _class_name): the
  // dfloat11 encoder's own config.json holds dfloat11_config alone.
  bool config_is_bare() const { return config_is_bare_; }

 private:
  struct Given {
    std::vector<uint64_t> shape;
    size_t source;  // index into sources_
  };

  std::optional<std::vector<uint64_t>> from_family(const std::string& name) const;
  size_t source_index(const std::string& source);

  std::string family_;
  nlohmann::json config_;             // the config that describes the family's dimensions
  bool language_model_only_ = false;  // config_ is a wrapper's text_config
  bool config_is_bare_ = false;
  std::unordered_map<std::string, Given> given_;
  std::vector<std::string> sources_;
};

// The input embedding that weight `name` is tied to, if `name` is an output head
// ("lm_head.weight", "language_model.lm_head.weight") and config.json does not say
// tie_word_embeddings: false; the embedding is the one name among `candidates` that ends in
// "embed_tokens.weight" with the same prefix (or "wte.weight", "shared.weight"). Used where
// a published folder stores the tied head as a group of its own (the dfloat11 encoder does)
// while the original checkpoint holds the embedding only.
std::optional<std::string> tied_embedding_of(const std::string& name,
                                             const std::optional<std::string>& config_text,
                                             const std::vector<std::string>& candidates);

// True if config.json says tie_word_embeddings: true (at the top or in text_config).
bool config_ties_embeddings(const std::optional<std::string>& config_text);

}  // namespace df11::app
