// A real full disk (issue 3): the df11 binary compresses and decompresses onto a small tmpfs
// that a ballast file has nearly filled. Each run must fail with exit code 3 and an error
// that says "No space left on device" and names the file, leave nothing in the output's
// parent folder and give every byte back to the filesystem; once the ballast is deleted the
// same commands succeed on the same filesystem.
//
// The tmpfs is mounted with mount(2) here (root); where that is not permitted (a container
// without CAP_SYS_ADMIN), a forked child mounts it inside its own user and mount namespaces
// and the test reaches it through /proc/<child>/root. If neither works, the test is skipped
// with the reason. binary_test.cpp covers the same paths with RLIMIT_FSIZE (EFBIG).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli_process.h"
#include "cli_test_model.h"

namespace df11::clitest {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kTmpfsBytes = 16 * kMiB;
constexpr const char* kTmpfsOptions = "size=16m,mode=0755";

enum class MountMethod {
  kAny,            // mount(2) here; if not permitted, a user + mount namespace
  kUserNamespace,  // only the namespace (exercises the fallback where mount(2) works too)
};

// A small tmpfs mounted on `dir` for the lifetime of the object.
class SmallTmpfs {
 public:
  SmallTmpfs(const fs::path& dir, MountMethod method) : dir_(dir) {
    if (method == MountMethod::kAny) {
      if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, kTmpfsOptions) == 0) {
        mounted_here_ = true;
        root_ = dir;
        return;
      }
      why_not_ = std::string("mount(2): ") + std::strerror(errno);
    }
    mount_in_namespace();
  }
  ~SmallTmpfs() {
    if (mounted_here_) ::umount2(dir_.c_str(), MNT_DETACH);
    if (holder_ > 0) {
      ::close(release_fd_);  // the holder exits; its namespaces, and the tmpfs, go with it
      int status = 0;
      ::waitpid(holder_, &status, 0);
    }
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;

  bool ok() const { return !root_.empty(); }
  const std::string& why_not() const { return why_not_; }
  // Where this process sees the filesystem's root.
  const fs::path& root() const { return root_; }

 private:
  // Writes a /proc id map file of this process (async-signal-safe).
  static bool write_id_map(const char* file, const char* text) {
    const int fd = ::open(file, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const ssize_t n = ::write(fd, text, std::strlen(text));
    ::close(fd);
    return n == static_cast<ssize_t>(std::strlen(text));
  }

  // A child process unshares a user and a mount namespace (a child of fork is
  // single-threaded, as CLONE_NEWUSER requires), maps root to itself there (files on a
  // filesystem mounted in that namespace can only be created by users mapped into it: the
  // test process is root outside), mounts the tmpfs, reports errno (0)
  // through a pipe and waits until `release_fd_` is closed.
  void mount_in_namespace() {
    int report[2], release[2];
    if (::pipe2(report, O_CLOEXEC) != 0 || ::pipe2(release, O_CLOEXEC) != 0) {
      why_not_ += std::string("; pipe: ") + std::strerror(errno);
      return;
    }
    const std::string target = dir_.string();
    const pid_t pid = ::fork();
    if (pid == 0) {
      // Only async-signal-safe calls from here (the test process may have threads).
      ::close(report[0]);
      ::close(release[1]);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      int err = 0;
      if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
        err = errno;
      } else if (!write_id_map("/proc/self/setgroups", "deny") ||
                 !write_id_map("/proc/self/uid_map", "0 0 1") ||
                 !write_id_map("/proc/self/gid_map", "0 0 1")) {
        err = errno;
      } else if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
                 ::mount("tmpfs", target.c_str(), "tmpfs", 0, kTmpfsOptions) != 0) {
        err = errno;
      }
      (void)!::write(report[1], &err, sizeof err);
      char byte;
      while (::read(release[0], &byte, 1) < 0 && errno == EINTR) {
      }
      ::_exit(0);
    }
    ::close(report[1]);
    ::close(release[0]);
    if (pid < 0) {
      why_not_ += std::string("; fork: ") + std::strerror(errno);
      ::close(report[0]);
      ::close(release[1]);
      return;
    }
    holder_ = pid;
    release_fd_ = release[1];
    int err = -1;
    const bool got = ::read(report[0], &err, sizeof err) == static_cast<ssize_t>(sizeof err);
    ::close(report[0]);
    if (!got || err != 0) {
      why_not_ += std::string("; unshare(CLONE_NEWUSER | CLONE_NEWNS) + mount: ") +
                  (got ? std::strerror(err) : "no report from the child");
      return;
    }
    root_ = fs::path("/proc/" + std::to_string(pid) + "/root") / dir_.relative_path();
  }

  fs::path dir_;
  fs::path root_;
  std::string why_not_;
  bool mounted_here_ = false;
  pid_t holder_ = -1;
  int release_fd_ = -1;
};

struct Space {
  uint64_t total = 0;  // bytes
  uint64_t free = 0;   // bytes available
};

Space space_of(const fs::path& path) {
  struct statvfs st {};
  EXPECT_EQ(::statvfs(path.c_str(), &st), 0) << path << ": " << std::strerror(errno);
  return {uint64_t{st.f_blocks} * st.f_frsize, uint64_t{st.f_bavail} * st.f_frsize};
}

// Fills `file` with `bytes` zero bytes (really written: tmpfs has no holes to cheat with).
void write_ballast(const fs::path& file, uint64_t bytes) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << file << ": " << std::strerror(errno);
  const std::vector<char> chunk(kMiB, 0);
  uint64_t left = bytes;
  while (left > 0) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, chunk.size()));
    const ssize_t w = ::write(fd, chunk.data(), n);
    if (w <= 0) break;
    left -= static_cast<uint64_t>(w);
  }
  ::close(fd);
  ASSERT_EQ(left, 0u) << file << ": ballast not written: " << std::strerror(errno);
}

class AuditFullDisk : public ::testing::TestWithParam<MountMethod> {
 protected:
  void SetUp() override {
    fs::create_directories(tmp_ / "mnt");
    fs::create_directories(tmp_ / "logs");
    tmpfs_.emplace(tmp_ / "mnt", GetParam());
    if (!tmpfs_->ok()) GTEST_SKIP() << "no small filesystem to fill: " << tmpfs_->why_not();
    const Space space = space_of(tmpfs_->root());
    ASSERT_EQ(space.total, kTmpfsBytes) << "not the tmpfs: " << tmpfs_->root();
    fs::create_directories(out_parent());
    fs::create_directories(tmpfs_->root() / "ballast");
  }
  void TearDown() override { tmpfs_.reset(); }  // unmount before tmp_ is removed

  fs::path model() const { return tmp_ / "model"; }
  // The output folders' parent on the small filesystem: it must hold nothing but them.
  fs::path out_parent() const { return tmpfs_->root() / "out"; }
  fs::path ballast() const { return tmpfs_->root() / "ballast" / "ballast.bin"; }

  ProcessResult run(const std::vector<std::string>& args) { return run_df11(args, tmp_ / "logs"); }

  // Fills the filesystem up to `leave` free bytes.
  void fill_leaving(uint64_t leave) {
    const uint64_t free = space_of(tmpfs_->root()).free;
    ASSERT_GT(free, leave);
    write_ballast(ballast(), free - leave);
  }

  // The command failed on the full disk and left the filesystem as it found it.
  void expect_full_disk_failure(const ProcessResult& r, const std::string& output_name,
                                const std::vector<std::string>& parent_before,
                                uint64_t free_before) {
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_EQ(r.term_signal, 0);
    EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
    // The file being written: "<out>.df11-tmp-<pid>/<name>: cannot ... (temporary file ...)".
    EXPECT_NE(r.err.find((out_parent() / output_name).string()), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(".safetensors"), std::string::npos) << r.err;
    EXPECT_EQ(list_dir(out_parent()), parent_before);  // no staging folder, no partial file
    EXPECT_EQ(space_of(tmpfs_->root()).free, free_before);
  }

  TempDir tmp_;
  std::optional<SmallTmpfs> tmpfs_;
};

TEST_P(AuditFullDisk, CompressAndDecompressFailCleanlyThenSucceed) {
  TinyLlama m;  // two shards, ~2.2 + ~3.8 MB of BF16 (~1.5 + ~2.6 MB compressed)
  m.layers = 4;
  m.hidden = 256;
  m.intermediate = 512;
  m.vocab = 1024;
  write_tiny_llama(model(), m);
  const fs::path reference = tmp_ / "df11-reference";  // on the ordinary disk
  ASSERT_EQ(run({"compress", model(), "-o", reference}).exit_code, 0);
  const fs::path df11 = out_parent() / "df11";
  const fs::path restored = out_parent() / "restored";
  const std::string shard1 = "model-00001-of-00002.safetensors";

  // compress: first no shard fits, then only the first one does (the failure comes after a
  // whole file was written into the staging folder).
  for (const uint64_t leave : {kMiB, fs::file_size(reference / shard1) + kMiB / 2}) {
    SCOPED_TRACE("compress with " + std::to_string(leave) + " bytes left");
    fill_leaving(leave);
    const uint64_t free_full = space_of(tmpfs_->root()).free;
    const ProcessResult c = run({"compress", model(), "-o", df11});
    expect_full_disk_failure(c, "df11", {}, free_full);
    fs::remove(ballast());
  }
  const ProcessResult c = run({"compress", model(), "-o", df11});
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  EXPECT_EQ(tree_sha256(df11), tree_sha256(reference));
  EXPECT_EQ(list_dir(out_parent()), std::vector<std::string>{"df11"});

  // decompress next to the DF11 folder, the same two ways.
  for (const uint64_t leave : {2 * kMiB, fs::file_size(model() / shard1) + kMiB / 2}) {
    SCOPED_TRACE("decompress with " + std::to_string(leave) + " bytes left");
    fill_leaving(leave);
    const uint64_t free_full = space_of(tmpfs_->root()).free;
    const ProcessResult d = run({"decompress", df11, "-o", restored});
    expect_full_disk_failure(d, "restored", {"df11"}, free_full);
    fs::remove(ballast());
  }
  const ProcessResult d = run({"decompress", df11, "-o", restored});
  ASSERT_EQ(d.exit_code, 0) << d.out << d.err;
  EXPECT_EQ(tree_sha256(restored), tree_sha256(model()));
  EXPECT_EQ(list_dir(out_parent()), (std::vector<std::string>{"df11", "restored"}));
}

INSTANTIATE_TEST_SUITE_P(Tmpfs, AuditFullDisk,
                         ::testing::Values(MountMethod::kAny, MountMethod::kUserNamespace),
                         [](const ::testing::TestParamInfo<MountMethod>& info) {
                           return info.param == MountMethod::kAny ? std::string("Mount")
                                                                  : std::string("UserNamespace");
                         });

}  // namespace
}  // namespace df11::clitest
