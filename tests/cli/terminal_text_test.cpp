// Names and excerpts from hostile files reach the terminal escaped: no control bytes, no
// bidirectional overrides, nothing that is not UTF-8 (terminal_text.h, console.h).
#include "terminal_text.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli_fixture.h"
#include "console.h"
#include "df11/utf8.h"

namespace df11::clitest {
namespace {

using app::terminal_safe;

TEST(TerminalText, KeepsPrintableUtf8) {
  EXPECT_EQ(terminal_safe("model.layers.0 caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 \\d+"),
            "model.layers.0 caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 \\d+");
  EXPECT_EQ(terminal_safe(""), "");
}

TEST(TerminalText, EscapesControlsBidiAndInvalidBytes) {
  EXPECT_EQ(terminal_safe("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(terminal_safe("line\nnext\r\t"), "line\\x0anext\\x0d\\x09");
  EXPECT_EQ(terminal_safe(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(terminal_safe("\x7f"), "\\x7f");
  EXPECT_EQ(terminal_safe("\xc2\x9b"
                          "31m"),
            "\\xc2\\x9b31m");                                       // C1 CSI
  EXPECT_EQ(terminal_safe("x\xe2\x80\xaey"), "x\\xe2\\x80\\xaey");  // U+202E RLO
  EXPECT_EQ(terminal_safe("\xe2\x81\xa6"), "\\xe2\\x81\\xa6");      // U+2066 LRI
  EXPECT_EQ(terminal_safe("\xe2\x80\xa8"), "\\xe2\\x80\\xa8");      // U+2028 line separator
  EXPECT_EQ(terminal_safe("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(terminal_safe("\xc3"), "\\xc3");                             // truncated sequence
  EXPECT_EQ(terminal_safe("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(terminal_safe("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // surrogate
  EXPECT_EQ(terminal_safe("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(terminal_safe("\xe2\x9c"
                          "a"),
            "\\xe2\\x9ca");  // resynchronises
}

TEST(TerminalText, Utf8Validation) {
  EXPECT_TRUE(app::is_valid_utf8("caf\xc3\xa9 \xf0\x9f\x98\x80"));
  EXPECT_FALSE(app::is_valid_utf8("\xc0\xaf"));
  EXPECT_FALSE(app::is_valid_utf8("\xed\xa0\x80"));
  EXPECT_FALSE(app::is_valid_utf8("\xe2\x9c"));
}

// Every line: valid UTF-8, no control byte but its final newline, no bidi control.
void expect_terminal_safe(const std::string& stream) {
  EXPECT_TRUE(app::is_valid_utf8(stream)) << stream;
  for (size_t i = 0; i < stream.size(); ++i) {
    const auto c = static_cast<unsigned char>(stream[i]);
    EXPECT_TRUE(c == '\n' || (c >= 0x20 && c != 0x7f)) << "byte " << int{c} << " at " << i;
  }
  EXPECT_EQ(stream.find("\xe2\x80\xae"), std::string::npos);
}

TEST(TerminalText, ConsoleEscapesEveryLine) {
  std::ostringstream out, err;
  {
    app::Console console(out, err, 2, false);
    console.result("r\x1b]0;title\x07");
    console.detail("d\r");
    console.report("FAIL tensor 'x\ny'");
    console.warn("w\xff");
    console.error("e\xe2\x80\xae");
  }
  EXPECT_EQ(out.str(), "r\\x1b]0;title\\x07\nd\\x0d\nFAIL tensor 'x\\x0ay'\n");
  EXPECT_EQ(err.str(), "warning: w\\xff\nerror: e\\xe2\\x80\\xae\n");
}

// A checkpoint with a hostile shard file name (escape sequences, a byte that is not UTF-8) and
// a hostile tensor name (a terminal clear, a right-to-left override) that appears twice:
// compress fails naming both, escaped.
TEST(TerminalText, HostileNamesInErrorsAreEscaped) {
  TempDir tmp;
  const fs::path dir = tmp / "model";
  fs::create_directories(dir);
  write_text(dir / "config.json", "{\"model_type\": \"llama\"}\n");
  const std::string evil_file = "evil\x1b]0;owned\x07\xff.safetensors";
  const std::string evil_tensor = "w\x1b[2J\xe2\x80\xae.weight";
  const std::vector<uint8_t> bytes(8, 0);
  const std::vector<TensorData> tensors{{evil_tensor, Dtype::kBF16, {2, 2}, bytes}};
  ASSERT_TRUE(write_safetensors((dir / evil_file).string(), tensors, nullptr).is_ok());
  ASSERT_TRUE(write_safetensors((dir / "b.safetensors").string(), tensors, nullptr).is_ok());

  app::CompressOptions o;
  o.model_dir = dir;
  o.out_dir = tmp / "out";
  std::ostringstream out, err;
  EXPECT_EQ(app::run_compress_command(o, {}, out, err), 1);
  const std::string e = err.str();
  expect_terminal_safe(e);
  expect_terminal_safe(out.str());
  EXPECT_NE(e.find("[duplicate_name]"), std::string::npos) << e;
  EXPECT_NE(e.find("evil\\x1b]0;owned\\x07\\xff.safetensors"), std::string::npos) << e;
  EXPECT_NE(e.find("w\\x1b[2J\\xe2\\x80\\xae.weight"), std::string::npos) << e;
}

}  // namespace
}  // namespace df11::clitest
