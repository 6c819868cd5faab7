// The model card `df11 push` adds to a DF11 folder (README.md) and the Hub's .gitattributes
// are the publication's files, not the original model's: verify says nothing of them and
// decompress does not put them into the restored original. The original's own README, which
// compress records, comes back; a README added by hand is still reported and copied.
#include "model_card.h"

#include <gtest/gtest.h>

#include <string>

#include "cli_fixture.h"
#include "df11/folder_record.h"

namespace df11::clitest {
namespace {

class ModelCard : public PipelineFixture {
 protected:
  std::string card() const {
    app::ModelCardInput in;
    in.repo_id = "me/tiny-DF11";
    in.base_model = "org/tiny";
    in.config_json = read_text(model() / "config.json");
    return app::make_model_card(in);
  }
  void compress_tiny() {
    write_tiny_llama(model(), {});
    const Captured c = compress();
    ASSERT_EQ(c.code, 0) << c.err;
  }
};

TEST_F(ModelCard, PushedCardAndGitattributesAreThePublications) {
  compress_tiny();
  write_text(df11() / "README.md", card());
  write_text(df11() / ".gitattributes", "*.safetensors filter=lfs diff=lfs merge=lfs -text\n");
  const Captured v = verify(model());
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  EXPECT_EQ(v.err, "");  // no "not in the folder record" warning
  const Captured d = decompress();
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(d.err, "");
  EXPECT_FALSE(fs::exists(restored() / "README.md"));
  EXPECT_FALSE(fs::exists(restored() / ".gitattributes"));
  EXPECT_EQ(tree_sha256(restored()), tree_sha256(model()));
}

TEST_F(ModelCard, TheOriginalsReadmeComesBack) {
  write_tiny_llama(model(), {});
  write_text(model() / "README.md", "# tiny\nthe original card\n");
  const Captured c = compress();
  ASSERT_EQ(c.code, 0) << c.err;
  // push leaves a folder with a README as it is; even a README that carries the marker is
  // the original's when the folder record lists it.
  const Captured d = decompress();
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(read_text(restored() / "README.md"), "# tiny\nthe original card\n");
  EXPECT_EQ(tree_sha256(restored()), tree_sha256(model()));
}

TEST_F(ModelCard, AReadmeAddedByHandIsStillReported) {
  compress_tiny();
  write_text(df11() / "README.md", "# my notes\n");
  const Captured v = verify();
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  EXPECT_NE(v.err.find("README.md: not in the folder record (added after compression?)"),
            std::string::npos)
      << v.err;
  const Captured d = decompress();
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(read_text(restored() / "README.md"), "# my notes\n");
}

TEST_F(ModelCard, TheCardSaysWhatItIs) {
  write_tiny_llama(model(), {});
  const std::string text = card();
  EXPECT_NE(text.find(std::string(app::kModelCardMarker)), std::string::npos) << text;
  EXPECT_TRUE(app::is_df11_model_card(text));
  EXPECT_FALSE(app::is_df11_model_card("# a model\n"));
}

}  // namespace
}  // namespace df11::clitest
