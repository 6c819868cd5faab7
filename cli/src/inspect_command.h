// `df11 inspect PATH [--json] [--baseline zstd]`: runs the analysis (pipeline/inspect_model.h)
// and renders it as tables or one JSON document.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace df11::app {

struct InspectCommandOptions {
  std::string path;
  bool json = false;                   // one JSON document on `out` instead of tables
  std::vector<std::string> baselines;  // "zstd" is the only one
  int threads = 0;                     // 0: all cores
  int verbosity = 1;                   // 0 summary, 1 tables, 2 + code tables per group
  bool remote = false;                 // `path` is a Hub id read with Range requests
  int transfers = 8;                   // remote: parallel requests
};

// Returns the process exit code (exit_codes.h): 0 ok, 1 invalid input (corrupt or
// inconsistent files, named in the message on `err`), 2 usage, 3 I/O and other errors.
int run_inspect(const InspectCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace df11::app
