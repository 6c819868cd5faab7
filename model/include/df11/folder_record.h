// The folder record of df11 metadata 1.1 (spec 7.7): the lexicographically first shard lists
// every DF11 shard of the folder ("shards") and the size and SHA-256 of every other file
// ("folder_files": config.json and the index as written, every file copied unchanged), so
// that verify covers every byte of a folder df11 wrote, not only the shards.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "df11/cancel.h"
#include "df11/df11_folder.h"
#include "df11/metadata.h"
#include "df11/status.h"

namespace df11::app {

// Writer: the size and SHA-256 of each file (paths relative to `dir`), sorted by path.
// kInvalidArgument naming the file if its path cannot be recorded (not UTF-8: JSON cannot
// carry it; not a safe relative path, spec 5.3 rule P2); kResourceLimit beyond
// Max_Folder_Files; kIo if a file cannot be read.
Result<std::vector<FolderFile>> hash_folder_files(const std::filesystem::path& dir,
                                                  std::vector<std::string> files,
                                                  const CancelToken& cancel);

// The line `df11 push` writes into the model card (README.md) it adds to a DF11 folder:
// how verify and decompress tell the publication's card from a file of the original model.
inline constexpr std::string_view kModelCardMarker =
    "<!-- df11 model card: written by df11 push, not a file of the original model -->";

// True if `text` (a README.md) is a model card df11 push wrote: it holds kModelCardMarker.
bool is_df11_model_card(std::string_view text);

// A file the record and the folder disagree about: what kind of problem (bad_metadata for a
// record in the wrong place or a shard it does not list, corrupt_data for a file that is not
// as recorded, not_found for a recorded file that is missing) and a line naming the file.
struct RecordFailure {
  ErrorCode code = ErrorCode::kCorruptData;
  std::string message;
};

// What checking a DF11 folder against its record found (spec 7.7 rules I1..I5).
struct FolderFindings {
  std::vector<RecordFailure> failures;
  std::vector<std::string> warnings;  // files the record does not know (I5), one line each
  // Files the record does not list that belong to the publication, not to the model (I5):
  // a top-level README.md that is df11's model card, the Hub's top-level .gitattributes.
  // Not warned about; decompress leaves them out of the restored original (spec 7.6).
  std::vector<std::string> publication_files;
  size_t files_checked = 0;        // recorded files whose size and SHA-256 matched
  bool has_record = false;         // false for folders written with df11 metadata 1.0
  std::vector<FolderFile> hashed;  // every recorded file read, with its size and SHA-256 now
};

// Checks the folder's shards and files against the record in its first shard; every
// recorded file is read in full, or with `hash_files` false only its size is compared (a
// writer's cheap check of what it has just written; `hashed` stays empty). A folder whose
// metadata is 1.0 has no record: nothing is checked (has_record false) unless a shard
// carries a record anyway. Stops early with kInterrupted once `cancel` is cancelled.
Result<FolderFindings> check_folder_record(const Df11Folder& folder, const CancelToken& cancel,
                                           bool hash_files = true);

}  // namespace df11::app
