// The checks of a DF11 folder written by df11 that read only headers and small files (nothing
// decoded, no shard hashed): verify runs them beside its checksums, and compress runs them on
// the folder it has just written, before renaming it into place, so that it never reports
// success for a folder that verify would reject.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "df11/cancel.h"
#include "df11/df11_folder.h"
#include "df11/metadata.h"
#include "df11/status.h"

namespace df11::app {

// Receives one finding: its kind and a line naming the file (and group or tensor) first.
using FindingFn = std::function<void(ErrorCode code, const std::string& line)>;

// "'a', 'b'": a group's member names for messages.
std::string member_list(const GroupMeta& meta);

// config.json's pattern_dict makes the loader decode every group into its members, in order
// (spec 7.3); config.json carries the df11 marker with the shards' spec_version (7.2); each
// shard's df11 metadata is the canonical text of its content and records the original of
// its own name, whose __metadata__ entries it keeps (5.1, 5.4); the original config.json and
// index are recorded (side files).
void check_folder_structure(const Df11Folder& folder, const FindingFn& fail);

// Every original tensor the metadata lists lies in a recorded source header (spec 7.6 step
// 2), so that restoration writes it.
void check_sources_cover_originals(const Df11Folder& folder, const FindingFn& fail);

// compress's self-check of the folder it wrote in `dir`: the shards' headers and metadata
// (open_df11_folder), header checksums, the checks above, the folder record by file size
// (spec 7.7, no file hashed), and every recorded source header against the metadata. Costs
// the headers and the small files only. kInternal naming `dir` and the first five findings
// (and how many more there were): a bug in compress, not in the input.
Status check_written_folder(const std::filesystem::path& dir, const CancelToken& cancel);

}  // namespace df11::app
