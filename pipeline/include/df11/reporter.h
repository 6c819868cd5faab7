// How a pipeline (compress, decompress, verify, inspect) tells its caller what happens,
// without knowing whether anyone prints it: the CLI renders it on a terminal (cli/console.h),
// a test collects it, an engine ignores it. Every method may be called from worker threads
// at once; implementations synchronise themselves. The defaults drop everything.
#pragma once

#include <cstdint>
#include <string>

namespace df11::app {

class Reporter {
 public:
  virtual ~Reporter() = default;

  // Something worth saying at normal verbosity that is neither a warning nor a result
  // ("--baseline zstd applies to BF16 checkpoints").
  virtual void note(const std::string& /*line*/) {}
  // Per-group and per-file details ("model.layers.0: 7 tensors, ..."), for verbose output.
  virtual void detail(const std::string& /*line*/) {}
  // A finding the caller must see even when quiet (a tensor that failed verification).
  virtual void finding(const std::string& /*line*/) {}
  // Something the user should know that does not fail the run (a group stored raw).
  virtual void warning(const std::string& /*line*/) {}

  // Progress over `total` units (bytes). advance() is called from worker threads, often:
  // keep it to an atomic add.
  virtual void progress_start(const std::string& /*label*/, uint64_t /*total*/) {}
  virtual void progress_advance(uint64_t /*n*/) {}
  virtual void progress_finish() {}

  // Verbosity the caller asked for (0 quiet, 1 normal, 2 verbose): lets a pipeline skip
  // building detail lines nobody will read.
  virtual int verbosity() const { return 1; }
};

// A Reporter that drops everything (verbosity 0).
inline Reporter& null_reporter() {
  struct Null final : Reporter {
    int verbosity() const override { return 0; }
  };
  static Null reporter;
  return reporter;
}

}  // namespace df11::app
