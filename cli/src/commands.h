// The df11 subcommands as functions of (options, out, err) -> exit code: what main() calls
// after parsing, and what tests call without spawning a process. Each prints its one-line
// summary (or, with --json, one JSON document) on `out` and "error: ... [code]" on `err`.
#pragma once

#include <ostream>
#include <string>

#include "console.h"
#include "df11/compress.h"
#include "df11/decompress.h"
#include "df11/verify.h"

namespace df11::app {

// How much to print: verbosity 0 (-q), 1 (default), 2+ (-v); progress: draw a bar on err;
// json: the result as one JSON document on out instead of the summary line.
struct OutputOptions {
  int verbosity = 1;
  bool progress = false;
  bool json = false;
};

int run_compress_command(const CompressOptions& options, const OutputOptions& output,
                         std::ostream& out, std::ostream& err);
int run_decompress_command(const DecompressOptions& options, const OutputOptions& output,
                           std::ostream& out, std::ostream& err);
int run_verify_command(const VerifyOptions& options, const OutputOptions& output, std::ostream& out,
                       std::ostream& err);

// The one error format of the tool: "error: <message> [<code name>]".
std::string error_line(const Status& status);

// Prints error_line(status) on the console; returns the exit code for `status`.
int report_failure(const Status& status, Console& console);

}  // namespace df11::app
