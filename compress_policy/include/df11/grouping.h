// Which tensors of a checkpoint are coded together, derived from tensor names only (no
// per-architecture table), and the pattern_dict that tells the dfloat11 loader about it.
//
// Block mode (default, spec 7.4): every 2-D BF16 tensor "<P>.<sub>.weight", where P is the
// outermost prefix of the module path that ends in a numeric index (layers.N, h.N,
// transformer_blocks.N, double_blocks.N, down_blocks.N, block.N, ...), joins group P, unless
// its last component names an embedding (contains "embed" or ends in "_bias"); every other
// 2-D BF16 ".weight" is a group of its own named by its module path. A block above
// Max_Elements_Compat splits into its numbered sub-modules (experts.N), then into tensors.
// Tensor mode: every 2-D BF16 ".weight" is a group of its own. Everything else (norms,
// biases, 1-D, other dtypes, empty tensors) is stored unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "df11/dtype.h"
#include "df11/group.h"

namespace df11::app {

// One tensor of the checkpoint as grouping sees it (names and shapes, no data).
struct TensorEntry {
  std::string name;
  Dtype dtype = Dtype::kU8;
  std::vector<uint64_t> shape;
  uint64_t n_elements = 0;
};

enum class GroupBy { kBlock, kTensor };
enum class GroupKind {
  kBlock,   // members are sub-modules of a transformer block; pattern_dict lists them
  kModule,  // one tensor, the module's own weight (embeddings, lm_head, --group-by tensor)
};

struct GroupSpec {
  std::string name;  // P, the module path ("model.layers.3")
  GroupKind kind = GroupKind::kModule;
  std::string block_prefix;                 // kBlock: "model.layers"
  std::string block_index;                  // kBlock: "3", digits as written
  std::vector<size_t> members;              // indices into the tensor list, in stream order
  std::vector<std::string> member_modules;  // kBlock: "self_attn.q_proj", ...; kModule: empty
  // Non-empty: the group codes a copy of its one member under this name (a tied
  // "lm_head.weight", tied_head.h); the original files do not hold it (spec 5.3 G8).
  std::string alias_name;
};

struct Grouping {
  std::vector<GroupSpec> groups;   // ordered by their first member
  std::vector<size_t> raw;         // tensors stored unchanged, in input order
  std::vector<std::string> notes;  // why a would-be group was left raw (name clashes)
};

// `tensors` must be in original file order (shard file name, then data offset): that order
// is each group's concatenation order. A group whose name, or one of whose stored tensor
// names, clashes with another group or an existing tensor is left raw, with a note.
// `max_group_elements`: the loader's limit (tests lower it to exercise splitting).
Grouping derive_groups(std::span<const TensorEntry> tensors, GroupBy by,
                       uint64_t max_group_elements = kMaxElementsCompat);

// pattern_dict over `groups`, where coded[i] says whether groups[i] is still coded
// after encoding (a group may fall back to raw). Block groups with one prefix and one member
// list share the key "<prefix>\.\d+"; with several lists, each list gets the exclusive
// alternation of its layer numbers ("model\.layers\.(?:0|5|7)"), so that no module path fully
// matches two keys. Numbers inside a prefix (split MoE experts: "model.layers.3.mlp.experts")
// become \d+ ("model\.layers\.\d+\.mlp\.experts\.\d+"); such a prefix with several lists
// gets the alternation of its groups' full names (the loader applies every matching key). Module
// groups get their escaped path with []. Keys of which no group remains coded are left out. Keys
// appear in the order of their first group.
nlohmann::ordered_json derive_pattern_dict(std::span<const GroupSpec> groups,
                                           const std::vector<bool>& coded);

}  // namespace df11::app
