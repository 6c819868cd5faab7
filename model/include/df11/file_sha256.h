// SHA-256 of one file that a cancellation stops between reads: the folder record's check
// (folder_record.cpp) reads whole files with it. (The compressor's hashing of the sources,
// compress_policy/source_hasher.h, has its own reader, which also takes the tensors' XXH3.)
#pragma once

#include <atomic>
#include <string>

#include "df11/cancel.h"
#include "df11/status.h"

namespace df11::app {

// SHA-256 of one file (64 lowercase hex), read with read(2) in fixed steps (nothing stays
// resident), stopping with kInterrupted when `cancel` is cancelled or `stop` (may be null)
// is set. kNotFound / kIo name the file.
Result<std::string> sha256_file_interruptible(const std::string& path,
                                              const std::atomic<bool>* stop,
                                              const CancelToken& cancel);

}  // namespace df11::app
