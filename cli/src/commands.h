// The df11 subcommands as functions of (options, out, err) -> exit code: what main() calls
// after parsing, and what tests call without spawning a process. Each prints its one-line
// summary (or report) on `out` and "error: ..." on `err`.
#pragma once

#include <ostream>

#include "compress.h"
#include "console.h"
#include "decompress.h"
#include "verify.h"

namespace df11::app {

// How much to print: verbosity 0 (-q), 1 (default), 2+ (-v); progress: draw a bar on err.
struct OutputOptions {
  int verbosity = 1;
  bool progress = false;
};

int run_compress_command(const CompressOptions& options, const OutputOptions& output,
                         std::ostream& out, std::ostream& err);
int run_decompress_command(const DecompressOptions& options, const OutputOptions& output,
                           std::ostream& out, std::ostream& err);
int run_verify_command(const VerifyOptions& options, const OutputOptions& output, std::ostream& out,
                       std::ostream& err);

// "error: <message> [<code name>]" on the console; returns the exit code for `status`.
int report_failure(const Status& status, Console& console);

}  // namespace df11::app
