// Runs the real df11 binary in a child process (fork + exec) for the CLI tests: exit code,
// stdout, stderr; optionally with RLIMIT_FSIZE, or started in the background to be signalled.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace df11::clitest {

// The df11 binary of this build tree.
std::string df11_binary();

struct ProcessResult {
  int exit_code = -1;   // -1 if killed by a signal
  int term_signal = 0;  // the signal that killed it, or 0
  std::string out;
  std::string err;
  uint64_t max_rss_bytes = 0;  // the child's peak resident set (getrusage's ru_maxrss)
};

struct SpawnOptions {
  std::optional<uint64_t> file_size_limit;  // RLIMIT_FSIZE in bytes
};

class ChildProcess {
 public:
  // Starts `df11 args...` with stdout/stderr captured in files under `scratch`.
  ChildProcess(const std::vector<std::string>& args, const std::filesystem::path& scratch,
               const SpawnOptions& options = {});
  ~ChildProcess();  // kills and reaps a child still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int sig) const;
  ProcessResult wait();

 private:
  pid_t pid_ = -1;
  std::filesystem::path out_path_, err_path_;
};

// Runs to completion.
ProcessResult run_df11(const std::vector<std::string>& args, const std::filesystem::path& scratch,
                       const SpawnOptions& options = {});

// Runs this build tree's df11-mkmodel with `args` (shell-quoted by the caller) to completion,
// its output captured under `scratch` (max_rss_bytes is not measured).
ProcessResult run_mkmodel(const std::string& args, const std::filesystem::path& scratch);

}  // namespace df11::clitest
