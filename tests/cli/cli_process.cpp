#include "cli_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "cli_test_model.h"

namespace df11::clitest {

// $DF11_CLI when set (a test binary carried to another machine, where the build tree's path
// does not exist), else this build tree's tool.
std::string df11_binary() {
  const char* cli = std::getenv("DF11_CLI");
  if (cli != nullptr && *cli != '\0') return cli;
  return std::string(DF11_BINARY_DIR) + "/cli/df11";
}

ChildProcess::ChildProcess(const std::vector<std::string>& args,
                           const std::filesystem::path& scratch, const SpawnOptions& options) {
  static std::atomic<int> counter{0};
  const std::string tag = std::to_string(counter++);
  out_path_ = scratch / ("stdout-" + tag + ".txt");
  err_path_ = scratch / ("stderr-" + tag + ".txt");
  std::vector<std::string> argv_storage{df11_binary()};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Everything the child needs is prepared before fork: after it, only async-signal-safe
  // calls (the test process has TBB threads).
  const int out_fd = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err_fd = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  rlimit limit{};
  if (options.file_size_limit) {
    limit.rlim_cur = *options.file_size_limit;
    limit.rlim_max = *options.file_size_limit;
  }
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(err_fd, STDERR_FILENO);
    if (options.file_size_limit) ::setrlimit(RLIMIT_FSIZE, &limit);
    // The test runner may ignore signals; the child starts with default dispositions.
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out_fd);
  ::close(err_fd);
  EXPECT_GT(pid_, 0) << "fork failed";
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

void ChildProcess::signal(int sig) const {
  if (pid_ > 0) ::kill(pid_, sig);
}

ProcessResult ChildProcess::wait() {
  ProcessResult result;
  int status = 0;
  struct rusage usage {};
  if (pid_ > 0 && ::wait4(pid_, &status, 0, &usage) == pid_) {
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
    result.max_rss_bytes = static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux: KiB
  }
  pid_ = -1;
  result.out = read_text(out_path_);
  result.err = read_text(err_path_);
  return result;
}

ProcessResult run_df11(const std::vector<std::string>& args, const std::filesystem::path& scratch,
                       const SpawnOptions& options) {
  ChildProcess child(args, scratch, options);
  return child.wait();
}

ProcessResult run_mkmodel(const std::string& args, const std::filesystem::path& scratch) {
  const std::string bin = std::string(DF11_BINARY_DIR) + "/tools/df11-mkmodel";
  const std::filesystem::path out = scratch / "mkmodel.out", err = scratch / "mkmodel.err";
  const int status =
      std::system((bin + " " + args + " >" + out.string() + " 2>" + err.string()).c_str());
  ProcessResult r;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
  r.out = read_text(out);
  r.err = read_text(err);
  return r;
}

}  // namespace df11::clitest
