// `df11 inspect` on DF11 files: where each group's stored bytes go, its code, and how close
// it comes to its entropy. Works with and without df11 metadata (published dfloat11 models).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "df11/inspect_report.h"
#include "df11/model_folder.h"
#include "df11/status.h"

namespace df11::app {

// True if any shard carries df11 metadata or a DF11 group ("<P>.encoded_exponent").
bool is_df11_checkpoint(const ModelFolder& folder);
bool is_df11_header(const SafetensorsHeader& header);

// Fills report.kind, groups, raw and original_file_bytes from the shards' headers alone
// (`names[i]` is headers[i]'s file; `where`, the folder or repository, names the checkpoint
// in messages): stored sizes and members, exponent counts unknown (GroupReport::counts_known
// false). For a checkpoint whose weights are not at hand.
Status describe_df11_checkpoint(const std::vector<const SafetensorsHeader*>& headers,
                                const std::vector<std::string>& names,
                                const std::optional<std::string>& config_text,
                                const std::string& where, InspectReport& report);

// Fills report.kind, files, groups, raw and original_file_bytes. Every group is validated
// (validate_group) and decoded once, in slices, to count its exponents (the code-length table
// and the entropy need the counts); a group that does not decode fails the call (kCorruptData
// and friends, naming the file and the group).
Status analyze_df11_checkpoint(const ModelFolder& folder, InspectReport& report,
                               const CancelToken& cancel);

}  // namespace df11::app
