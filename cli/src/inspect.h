// `df11 inspect PATH [--json] [--baseline zstd]`: explains where the bits of a checkpoint go.
//
// PATH is a DF11 folder, a plain BF16 checkpoint folder, or a single .safetensors file.
//  - DF11: per group, the stored bytes by part, the ratio vs BF16, the code-length table with
//    exponent counts (each group is decoded once to count them), the exponent entropy and the
//    ratio bound it implies, and the fullest block against the dfloat11 loader's limit.
//  - BF16: the same, predicted exactly for what `df11 compress` would write (its grouping, its
//    codes, its raw fallbacks), per group and per tensor alone; `--baseline zstd` adds zstd's
//    ratio on the same bytes at levels 3 (every byte) and 19 (first 256 KiB of each tensor).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace df11::app {

struct InspectOptions {
  std::string path;
  bool json = false;                   // one JSON document on `out` instead of tables
  std::vector<std::string> baselines;  // "zstd" is the only one
  int threads = 0;                     // 0: all cores
  int verbosity = 1;                   // 0 summary, 1 tables, 2 + code tables per group
};

// Returns the process exit code (exit_codes.h): 0 ok, 1 invalid input (corrupt or
// inconsistent files, named in the message on `err`), 2 usage, 3 I/O and other errors.
int run_inspect(const InspectOptions& options, std::ostream& out, std::ostream& err);

}  // namespace df11::app
