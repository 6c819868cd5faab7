// MappedFile, OutputFile and friends: errors name the file, temp files never survive.
#include "df11/file_io.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "format_test_util.h"

namespace df11 {
namespace {

using test::as_bytes;
using test::ScratchDir;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string temp_name(const std::string& path) {
  return path + ".df11-tmp-" + std::to_string(getpid());
}

// Resident pages of this process (includes file-backed pages of mappings).
long resident_pages() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident;
}

TEST(MappedFile, MapsBytesAndEmptyFiles) {
  ScratchDir dir;
  ASSERT_TRUE(write_file_atomic(dir.file("a"), std::string_view("hello")).is_ok());
  ASSERT_TRUE(write_file_atomic(dir.file("empty"), std::string_view()).is_ok());
  Result<MappedFile> a = MappedFile::open(dir.file("a"));
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(a->size(), 5u);
  EXPECT_EQ(std::string(a->span().begin(), a->span().end()), "hello");
  EXPECT_EQ(a->path(), dir.file("a"));

  Result<MappedFile> e = MappedFile::open(dir.file("empty"));
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ(e->size(), 0u);
  EXPECT_TRUE(e->span().empty());
  e->advise_dontneed(0, 100);  // no-op on an empty map

  MappedFile moved = std::move(*a);
  EXPECT_EQ(moved.size(), 5u);
  EXPECT_EQ(a->size(), 0u);
  EXPECT_EQ(a->data(), nullptr);
  moved = std::move(*e);
  EXPECT_EQ(moved.size(), 0u);
}

TEST(MappedFile, ErrorsNameTheFile) {
  ScratchDir dir;
  const std::string missing = dir.file("missing.safetensors");
  EXPECT_STATUS(MappedFile::open(missing).status(), ErrorCode::kNotFound, missing.c_str(),
                "No such file or directory");
  const std::string dir_path = dir.path().string();
  EXPECT_STATUS(MappedFile::open(dir_path).status(), ErrorCode::kIo, dir_path.c_str(),
                "not a regular file");
  if (geteuid() != 0) {  // root reads anything
    ASSERT_TRUE(write_file_atomic(dir.file("locked"), std::string_view("x")).is_ok());
    chmod(dir.file("locked").c_str(), 0);
    EXPECT_STATUS(MappedFile::open(dir.file("locked")).status(), ErrorCode::kIo, "locked",
                  "Permission denied");
  }
}

// A 16 MiB file of varied bytes, its content and its mapping, and the process's resident
// pages once it is mapped (before any page is read through the mapping).
class BigMappedFile : public ::testing::Test {
 protected:
  static constexpr size_t kBytes = 16 << 20;

  void SetUp() override {
    data_.resize(kBytes);
    for (size_t i = 0; i < kBytes; ++i) data_[i] = static_cast<char>(i * 7 + (i >> 12));
    ASSERT_TRUE(write_file_atomic(dir_.file("big"), data_).is_ok());
    Result<MappedFile> opened = MappedFile::open(dir_.file("big"));
    ASSERT_TRUE(opened.is_ok()) << opened.status().message();
    f_.emplace(std::move(*opened));
    before_ = resident_pages();
  }

  ScratchDir dir_;
  std::string data_;
  std::optional<MappedFile> f_;
  const long page_ = sysconf(_SC_PAGESIZE);
  long before_ = 0;
};

TEST_F(BigMappedFile, AdviseDontneedDropsResidentPages) {
  uint64_t sum = 0;
  for (size_t i = 0; i < kBytes; i += static_cast<size_t>(page_)) sum += f_->data()[i];
  const long touched = resident_pages();
  EXPECT_GE(touched - before_, static_cast<long>(kBytes / page_) * 9 / 10) << sum;
  // Unaligned range covering everything: widened to pages, clipped to the file.
  f_->advise_dontneed(1, UINT64_MAX);
  f_->advise_dontneed(0, 1);
  const long dropped = resident_pages();
  EXPECT_LE(dropped - before_, static_cast<long>(kBytes / page_) / 10);
  // The data is still there: pages come back from the page cache. Compared in place: a copy
  // would stay resident under ASan's allocator.
  ASSERT_EQ(f_->span().size(), data_.size());
  EXPECT_EQ(std::memcmp(f_->data(), data_.data(), data_.size()), 0);
  f_->advise_dontneed(kBytes, 10);  // past the end: ignored
  f_->advise_willneed(kBytes - 1, 100);
}

// compress maps each chunk's pages in one call before reading them (MADV_POPULATE_READ):
// they are resident without a read, the range asked (widened to pages and folios), and the
// bytes are the file's.
TEST_F(BigMappedFile, AdvisePopulateMapsTheRangeWithoutReadingIt) {
  // The first half, from an unaligned offset: pages [0, kBytes / 2 / page].
  f_->advise_populate(1, kBytes / 2);
  const long populated = resident_pages() - before_;
  // Before Linux 5.14 the kernel refuses the advice (EINVAL), and the call is a no-op.
  const size_t page = static_cast<size_t>(page_);
  void* probe = mmap(nullptr, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(probe, MAP_FAILED);
  const bool supported = madvise(probe, page, 22 /* POPULATE_READ */) == 0;
  munmap(probe, page);
  if (!supported) GTEST_SKIP() << "MADV_POPULATE_READ is unsupported here (Linux < 5.14)";
  EXPECT_GE(populated, static_cast<long>(kBytes / 2 / page));
  // At most the range and the large folios at its ends (2 MiB each where the page cache
  // holds the file in huge folios), not the whole file.
  EXPECT_LE(populated, static_cast<long>((kBytes / 2 + (4 << 20)) / page) + 2);
  f_->advise_populate(kBytes, 100);             // past the end: ignored
  f_->advise_populate(kBytes - 1, UINT64_MAX);  // clipped to the file
  ASSERT_EQ(f_->span().size(), data_.size());
  EXPECT_EQ(std::memcmp(f_->data(), data_.data(), data_.size()), 0);
  f_->advise_dontneed(0, UINT64_MAX);
  EXPECT_LE(resident_pages() - before_, static_cast<long>(kBytes / page) / 10);
}

TEST(OutputFile, CommitRenamesAndLeavesNoTemp) {
  ScratchDir dir;
  const std::string path = dir.file("out.bin");
  Result<OutputFile> out = OutputFile::create(path);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(out->path(), path);
  EXPECT_EQ(out->temp_path(), temp_name(path));
  EXPECT_EQ(dir.list(), std::vector<std::string>{"out.bin.df11-tmp-" + std::to_string(getpid())});
  // Out-of-order positional writes plus appends.
  ASSERT_TRUE(out->preallocate(10).is_ok());
  ASSERT_TRUE(out->pwrite_all(6, as_bytes("WXYZ")).is_ok());
  ASSERT_TRUE(out->append(as_bytes("abc")).is_ok());
  ASSERT_TRUE(out->append(as_bytes("def")).is_ok());
  ASSERT_TRUE(out->commit().is_ok());
  EXPECT_EQ(dir.list(), std::vector<std::string>{"out.bin"});
  EXPECT_EQ(read_all(path), "abcdefWXYZ");
  EXPECT_STATUS(out->append(as_bytes("x")), ErrorCode::kInvalidArgument, "closed");
}

// On tmpfs, preallocate() checks the free space instead of allocating every page up front
// (the writes allocate them): the size is set, no page is taken, and a size beyond the free
// space fails with ENOSPC naming the file.
TEST(OutputFile, PreallocateOnTmpfsChecksTheSpaceAndAllocatesNothing) {
  struct statfs fs {};
  struct statvfs vfs {};
  if (statfs("/dev/shm", &fs) != 0 || fs.f_type != TMPFS_MAGIC || statvfs("/dev/shm", &vfs) != 0 ||
      vfs.f_blocks == 0) {
    GTEST_SKIP() << "no size-limited tmpfs at /dev/shm";
  }
  char templ[] = "/dev/shm/df11-format-XXXXXX";
  ASSERT_NE(mkdtemp(templ), nullptr);
  const std::string path = std::string(templ) + "/out.bin";
  {
    Result<OutputFile> out = OutputFile::create(path);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    ASSERT_TRUE(out->preallocate(uint64_t{1} << 20).is_ok());
    struct stat st {};
    ASSERT_EQ(stat(out->temp_path().c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 1 << 20);
    EXPECT_EQ(st.st_blocks, 0);
    const uint64_t too_much = (static_cast<uint64_t>(vfs.f_bavail) + 1) * vfs.f_frsize;
    EXPECT_STATUS(out->preallocate(too_much), ErrorCode::kIo, "No space left on device");
    EXPECT_STATUS(out->preallocate(too_much), ErrorCode::kIo, path);
  }
  std::filesystem::remove_all(templ);
}

TEST(OutputFile, DestructionAndAbandonRemoveTheTemp) {
  ScratchDir dir;
  const std::string path = dir.file("out.bin");
  {
    Result<OutputFile> out = OutputFile::create(path);
    ASSERT_TRUE(out.is_ok());
    ASSERT_TRUE(out->append(as_bytes("partial")).is_ok());
  }
  EXPECT_TRUE(dir.list().empty());
  {
    Result<OutputFile> out = OutputFile::create(path);
    ASSERT_TRUE(out.is_ok());
    OutputFile moved = std::move(*out);  // the moved-from object owns nothing
    out = Result<OutputFile>(OutputFile());
    EXPECT_EQ(dir.list().size(), 1u);
    moved.abandon();
    EXPECT_TRUE(dir.list().empty());
  }
  EXPECT_TRUE(dir.list().empty());
}

TEST(OutputFile, CommitReplacesAnExistingFile) {
  ScratchDir dir;
  const std::string path = dir.file("f");
  ASSERT_TRUE(write_file_atomic(path, std::string_view("old contents")).is_ok());
  ASSERT_TRUE(write_file_atomic(path, std::string_view("new")).is_ok());
  EXPECT_EQ(read_all(path), "new");
  EXPECT_EQ(dir.list(), std::vector<std::string>{"f"});
}

TEST(OutputFile, CreateErrors) {
  ScratchDir dir;
  const std::string path = dir.file("f");
  {
    // A leftover temp file of the same name is not clobbered.
    std::ofstream(temp_name(path)) << "someone else's";
    EXPECT_STATUS(OutputFile::create(path).status(), ErrorCode::kIo, path.c_str(), "File exists");
    EXPECT_EQ(read_all(temp_name(path)), "someone else's");
    std::remove(temp_name(path).c_str());
  }
  const std::string in_missing_dir = dir.file("no/such/dir/f");
  EXPECT_STATUS(OutputFile::create(in_missing_dir).status(), ErrorCode::kNotFound,
                in_missing_dir.c_str(), "No such file or directory");
  EXPECT_STATUS(OutputFile::create("").status(), ErrorCode::kInvalidArgument, "empty");
  EXPECT_TRUE(dir.list().empty());
}

// Runs `body` in a child with RLIMIT_FSIZE = limit bytes and SIGXFSZ ignored; the child
// reports the Status it got through a pipe. Returns "code|message".
std::string run_with_file_size_limit(rlim_t limit, const std::function<Status()>& body) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {limit, limit};
    setrlimit(RLIMIT_FSIZE, &rl);
    const Status st = body();
    const std::string msg = std::string(error_code_name(st.code())) + "|" + st.message();
    (void)!write(fds[1], msg.data(), msg.size());
    _exit(0);
  }
  close(fds[1]);
  std::string msg;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) msg.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  if (!WIFEXITED(wstatus)) return "child killed by signal " + std::to_string(WTERMSIG(wstatus));
  return msg;
}

TEST(OutputFile, FileTooLargeIsAnIoErrorAndLeavesNothing) {
  ScratchDir dir;
  const std::string path = dir.file("big.safetensors");
  const std::string payload(10000, 'x');

  std::string got = run_with_file_size_limit(
      4096, [&] { return write_file_atomic(path, std::string_view(payload)); });
  EXPECT_EQ(got.rfind("io|", 0), 0u) << got;
  EXPECT_NE(got.find(path), std::string::npos) << got;
  EXPECT_NE(got.find("File too large"), std::string::npos) << got;
  EXPECT_TRUE(dir.list().empty());

  got = run_with_file_size_limit(4096, [&]() -> Status {
    DF11_ASSIGN_OR_RETURN(OutputFile out, OutputFile::create(path));
    return out.preallocate(payload.size());
  });
  EXPECT_EQ(got.rfind("io|", 0), 0u) << got;
  EXPECT_NE(got.find("File too large"), std::string::npos) << got;
  EXPECT_TRUE(dir.list().empty());

  got = run_with_file_size_limit(4096, [&]() -> Status {
    DF11_ASSIGN_OR_RETURN(OutputFile out, OutputFile::create(path));
    return out.pwrite_all(1 << 20, as_bytes("far"));
  });
  EXPECT_EQ(got.rfind("io|", 0), 0u) << got;
  EXPECT_NE(got.find("at offset 1048576"), std::string::npos) << got;
  EXPECT_TRUE(dir.list().empty());
}

TEST(ReadFileToString, ReadsAndBounds) {
  ScratchDir dir;
  ASSERT_TRUE(write_file_atomic(dir.file("c.json"), std::string_view("{\"a\": 1}\n")).is_ok());
  Result<std::string> s = read_file_to_string(dir.file("c.json"), 100);
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(*s, "{\"a\": 1}\n");
  s = read_file_to_string(dir.file("c.json"), 9);
  ASSERT_TRUE(s.is_ok());
  EXPECT_STATUS(read_file_to_string(dir.file("c.json"), 8).status(), ErrorCode::kResourceLimit,
                "c.json");
  EXPECT_STATUS(read_file_to_string(dir.file("nope"), 8).status(), ErrorCode::kNotFound, "nope");
  EXPECT_STATUS(read_file_to_string(dir.path().string(), 8).status(), ErrorCode::kIo,
                "not a regular file");
}

}  // namespace
}  // namespace df11
