// decompress --write-mode mapped (mapped_writer.h): each restored file's pages written by all
// of its threads through a shared mapping. The output is the same, byte for byte, at every
// thread count; writes outside the mapping and a file that cannot be mapped are errors that
// name the file.
#include <sstream>

#include "cli_fixture.h"
#include "df11/file_io.h"
#include "mapped_writer.h"

namespace df11::clitest {
namespace {

using app::MappedWriter;
using WriteMode = DecompressOptions::WriteMode;

class MappedWrites : public PipelineFixture {
 protected:
  void SetUp() override {
    PipelineFixture::SetUp();
    // ~5 M weights in two shards: files of several 1 MiB write pieces, each tensor's bytes
    // starting at an offset that is no multiple of a page.
    TinyLlama m;
    m.layers = 2;
    m.hidden = 512;
    m.intermediate = 1024;
    m.vocab = 2048;
    write_tiny_llama(model(), m);
    ASSERT_EQ(compress().code, 0);
  }
  int decompress_with(WriteMode mode, int threads, std::string* err_text = nullptr) {
    DecompressOptions o;
    o.df11_dir = df11();
    o.out_dir = restored();
    o.force = true;
    o.threads = threads;
    o.write_mode = mode;
    std::ostringstream out, err;
    const int code = app::run_decompress_command(o, {}, out, err);
    if (err_text != nullptr) *err_text = err.str();
    return code;
  }
};

TEST_F(MappedWrites, RestoreIsByteIdenticalAtEveryThreadCount) {
  if (!MappedWriter::supported()) GTEST_SKIP() << "kernel without MADV_POPULATE_WRITE";
  const auto original = tree_sha256(model());
  for (const int threads : {1, 2, 3, 16}) {
    SCOPED_TRACE(testing::Message() << threads << " threads");
    ASSERT_EQ(decompress_with(WriteMode::kMapped, threads), 0);
    EXPECT_EQ(tree_sha256(restored()), original);
  }
  ASSERT_EQ(decompress_with(WriteMode::kPwrite, 3), 0);
  EXPECT_EQ(tree_sha256(restored()), original);
}

TEST_F(MappedWrites, WritesOutsideTheMappingAreRefusedNamingTheFile) {
  if (!MappedWriter::supported()) GTEST_SKIP() << "kernel without MADV_POPULATE_WRITE";
  const fs::path path = tmp_ / "out.bin";
  Result<OutputFile> file = OutputFile::create(path.string());
  ASSERT_TRUE(file.is_ok()) << file.status().message();
  ASSERT_TRUE(file->preallocate(3 << 20).is_ok());
  // Three pieces and a bit, at an unaligned offset: every byte lands where it belongs.
  std::vector<uint8_t> bytes((2 << 20) + 12345);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 1);
  {
    Result<MappedWriter> writer = MappedWriter::open(*file, 3 << 20);
    ASSERT_TRUE(writer.is_ok()) << writer.status().message();
    ASSERT_TRUE(writer->write(777, bytes).is_ok());
    const Status beyond =
        writer->write((3 << 20) - 10, std::span<const uint8_t>(bytes).first(11));
    EXPECT_EQ(beyond.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(beyond.message().find(path.string() + ": bytes [3145718, 3145729) lie beyond the "
                                                    "3145728 mapped bytes"),
              std::string::npos)
        << beyond.message();
  }  // unmapped before the commit
  ASSERT_TRUE(file->commit().is_ok());
  const std::string back = read_text(path);
  ASSERT_EQ(back.size(), size_t{3} << 20);
  EXPECT_EQ(back.substr(0, 777), std::string(777, '\0'));
  EXPECT_EQ(back.compare(777, bytes.size(), reinterpret_cast<const char*>(bytes.data()),
                         bytes.size()),
            0);
}

TEST_F(MappedWrites, AFileThatCannotBeMappedIsAnErrorNamingIt) {
  const fs::path path = tmp_ / "gone.bin";
  Result<OutputFile> file = OutputFile::create(path.string());
  ASSERT_TRUE(file.is_ok()) << file.status().message();
  file->abandon();  // the temporary file is deleted: nothing to open
  const Result<MappedWriter> writer = MappedWriter::open(*file, 4096);
  ASSERT_FALSE(writer.is_ok());
  EXPECT_EQ(writer.status().code(), ErrorCode::kIo);
  EXPECT_NE(writer.status().message().find(path.string() + ": cannot open temporary file"),
            std::string::npos)
      << writer.status().message();
}

}  // namespace
}  // namespace df11::clitest
