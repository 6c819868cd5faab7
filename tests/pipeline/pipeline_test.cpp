// The model-folder pipeline through its library entry points: compress -> decompress gives
// back every file byte for byte, verify proves it, and every corruption is caught and named.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "cli_fixture.h"
#include "df11/inspect_model.h"
#include "df11/inspect_report.h"
#include "df11/metadata.h"
#include "df11/safetensors.h"
#include "df11/sha256.h"
#include "signals.h"

namespace df11::clitest {
namespace {

using Pipeline = PipelineFixture;

TEST_F(Pipeline, RoundTripIsByteIdenticalAndVerifies) {
  write_tiny_llama(model(), {});
  expect_round_trip(compress_options());
  // Nothing but the outputs is left next to them.
  EXPECT_EQ(list_dir(tmp_.path()), (std::vector<std::string>{"df11", "model", "restored"}));
}

// push's model card reads its sizes from the headers alone (verify decodes beside it): the
// same totals as the full inspect, which decodes every group to count its exponents.
TEST_F(Pipeline, HeadersOnlyInspectGivesTheFullInspectsSizes) {
  write_tiny_llama(model(), {});
  ASSERT_EQ(compress().code, 0);
  app::InspectOptions options;
  options.path = df11().string();
  auto full = app::inspect_model(options, app::null_reporter(), app::CancelToken::never());
  options.headers_only = true;
  auto headers = app::inspect_model(options, app::null_reporter(), app::CancelToken::never());
  ASSERT_TRUE(full.is_ok()) << full.status().to_string();
  ASSERT_TRUE(headers.is_ok()) << headers.status().to_string();
  const app::InspectTotals a = app::compute_totals(*full);
  const app::InspectTotals b = app::compute_totals(*headers);
  EXPECT_TRUE(a.counts_known);
  EXPECT_FALSE(b.counts_known);  // nothing was decoded
  EXPECT_GT(a.n_groups_coded, 0u);
  EXPECT_EQ(b.n_groups_coded, a.n_groups_coded);
  EXPECT_EQ(b.coded_weights, a.coded_weights);
  EXPECT_EQ(b.coded_bf16_bytes, a.coded_bf16_bytes);
  EXPECT_EQ(b.coded_stored_bytes, a.coded_stored_bytes);
  EXPECT_EQ(b.raw_bytes, a.raw_bytes);
  EXPECT_EQ(b.tied_copy_bytes, a.tied_copy_bytes);
  EXPECT_EQ(b.model_original_bytes(), a.model_original_bytes());
  EXPECT_EQ(b.model_stored_bytes(), a.model_stored_bytes());
}

TEST_F(Pipeline, OutputFolderLayout) {
  const auto names = write_tiny_llama(model(), {});
  const Captured c = compress();
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("compressed"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("GB/s"), std::string::npos) << c.out;
  EXPECT_EQ(list_dir(df11()), list_dir(model()));
  EXPECT_EQ(read_text(df11() / "tokenizer.json"), read_text(model() / "tokenizer.json"));
  EXPECT_EQ(read_text(df11() / "extra" / "README.md"), read_text(model() / "extra" / "README.md"));

  // config.json: the original keys in order, then quantization_config {"quant_method": "df11"}
  // (spec 7.2), then dfloat11_config.
  const auto config = read_json(df11() / "config.json");
  const auto original = read_json(model() / "config.json");
  auto it = config.begin();
  for (const auto& [key, value] : original.items()) {
    ASSERT_EQ(it.key(), key);
    EXPECT_EQ(it.value(), value);
    ++it;
  }
  ASSERT_EQ(it.key(), "quantization_config");
  EXPECT_EQ(it.value(), nlohmann::ordered_json({{"quant_method", "df11"}}));
  ++it;
  ASSERT_EQ(it.key(), "dfloat11_config");
  const auto& d = it.value();
  EXPECT_EQ(d["version"], "0.5.0");
  EXPECT_EQ(d["threads_per_block"], nlohmann::ordered_json::array({512}));
  EXPECT_EQ(d["bytes_per_thread"], 8);
  const nlohmann::ordered_json expected_dict = {
      {"model\\.embed_tokens", nlohmann::ordered_json::array()},
      {"model\\.layers\\.\\d+",
       {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
        "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}},
      {"lm_head", nlohmann::ordered_json::array()}};
  EXPECT_EQ(d["pattern_dict"], expected_dict) << d.dump(2);

  // Layer 1 is split across the shards; its group goes to the first member's shard.
  auto s1 = SafetensorsFile::open((df11() / kShard1).string());
  auto s2 = SafetensorsFile::open((df11() / kShard2).string());
  ASSERT_TRUE(s1.is_ok() && s2.is_ok());
  for (const char* suffix : {".luts", ".encoded_exponent", ".sign_mantissa", ".output_positions",
                             ".gaps", ".split_positions"}) {
    EXPECT_NE(s1->header().find(std::string("model.layers.1") + suffix), nullptr) << suffix;
    EXPECT_NE(s2->header().find(std::string("model.layers.2") + suffix), nullptr) << suffix;
  }
  EXPECT_EQ(s2->header().find("model.layers.1.mlp.up_proj.weight"), nullptr);
  EXPECT_NE(s2->header().find("model.layers.1.post_attention_layernorm.weight"), nullptr);
  EXPECT_NE(s2->header().find("model.rotary_emb.inv_freq"), nullptr);
  // Stored dtypes and shapes as the dfloat11 loader reads them.
  const TensorInfo* luts = s1->header().find("model.layers.0.luts");
  ASSERT_NE(luts, nullptr);
  EXPECT_EQ(luts->dtype, Dtype::kU8);
  ASSERT_EQ(luts->shape.size(), 2u);
  EXPECT_EQ(luts->shape[1], 256u);
  EXPECT_EQ(s1->header().find("model.layers.0.output_positions")->dtype, Dtype::kU8);
  EXPECT_EQ(s1->header().find("model.layers.0.output_positions")->byte_size() % 4, 0u);
  const TensorInfo* splits = s1->header().find("model.layers.1.split_positions");
  EXPECT_EQ(splits->dtype, Dtype::kI64);
  EXPECT_EQ(splits->shape, std::vector<uint64_t>{6});
  EXPECT_EQ(s1->header().find("model.embed_tokens.split_positions")->shape,
            std::vector<uint64_t>{0});
  EXPECT_EQ(*s1->header().metadata_value("format"), "pt");
  // spec 6.5: each group's guard, an empty U8 tensor under its first member's name, in the
  // group's shard (and the index, below), after every other tensor; no other member's name is a
  // tensor.
  for (const auto& [shard, guards] :
       {std::pair{&s1->header(),
                  std::vector<std::string>{"model.embed_tokens.weight",
                                           "model.layers.0.self_attn.q_proj.weight",
                                           "model.layers.1.self_attn.q_proj.weight"}},
        std::pair{&s2->header(), std::vector<std::string>{"model.layers.2.self_attn.q_proj.weight",
                                                          "lm_head.weight"}}}) {
    for (const std::string& name : guards) {
      const TensorInfo* guard = shard->find(name);
      ASSERT_NE(guard, nullptr) << name;
      EXPECT_TRUE(is_guard_tensor(*guard)) << name;
      EXPECT_EQ(guard->data_offset_begin, shard->data_size) << name;
    }
    EXPECT_EQ(shard->find("model.layers.1.self_attn.k_proj.weight"), nullptr);
  }

  // df11 metadata: members in file order, sources 1:1, side files in the first shard only.
  const Df11Metadata m1 = metadata_of(df11() / kShard1);
  const Df11Metadata m2 = metadata_of(df11() / kShard2);
  ASSERT_EQ(m1.groups.size(), 3u);  // embed, layers 0 and 1
  EXPECT_EQ(m1.groups[2].name, "model.layers.1");
  ASSERT_EQ(m1.groups[2].members.size(), 7u);
  EXPECT_EQ(m1.groups[2].members[2].name, "model.layers.1.self_attn.v_proj.weight");
  EXPECT_EQ(m1.groups[2].members[3].name, "model.layers.1.self_attn.o_proj.weight");
  ASSERT_EQ(m1.sources.size(), 1u);
  EXPECT_EQ(m1.sources[0].file, kShard1);
  EXPECT_EQ(m2.sources[0].file, kShard2);
  ASSERT_EQ(m1.side_files.size(), 2u);
  EXPECT_EQ(m1.side_files[0].file, "config.json");
  EXPECT_EQ(m1.side_files[0].content, read_text(model() / "config.json"));
  EXPECT_EQ(m1.side_files[1].file, "model.safetensors.index.json");
  EXPECT_TRUE(m2.side_files.empty());

  // spec 7.2: df11's marker, last in dfloat11_config. spec 5.1: the header checksum entry
  // comes last in __metadata__. spec 7.7: the folder record lists every shard and every
  // other file as written (sha256 of the output), in the first shard only.
  EXPECT_EQ(d["df11"], nlohmann::ordered_json({{"spec_version", "1.3"}}));
  EXPECT_EQ(std::prev(d.end()).key(), "df11");
  for (const auto* shard : {&*s1, &*s2}) {
    const MetadataEntries& entries = shard->header().metadata;
    ASSERT_EQ(entries.size(), 3u);
    EXPECT_EQ(entries[1].first, "df11");
    EXPECT_EQ(entries[2].first, "df11_header_xxh3");
  }
  ASSERT_TRUE(m1.shards.has_value() && m1.folder_files.has_value());
  EXPECT_EQ(*m1.shards, (std::vector<std::string>{kShard1, kShard2}));
  const auto output_sha = tree_sha256(df11());
  std::vector<std::string> recorded;
  for (const FolderFile& f : *m1.folder_files) {
    recorded.push_back(f.file);
    EXPECT_EQ(f.sha256, output_sha.at(f.file)) << f.file;
    EXPECT_EQ(f.size, fs::file_size(df11() / f.file)) << f.file;
  }
  EXPECT_EQ(recorded,
            (std::vector<std::string>{"config.json", "extra/README.md", "generation_config.json",
                                      "model.safetensors.index.json", "tokenizer.json"}));
  EXPECT_FALSE(m2.shards.has_value());
  EXPECT_FALSE(m2.folder_files.has_value());

  // The index maps every DF11 tensor to its shard; total_size is their bytes.
  const auto index = read_json(df11() / "model.safetensors.index.json");
  uint64_t total = 0;
  size_t count = 0;
  for (const auto* shard : {&*s1, &*s2}) {
    for (const TensorInfo& t : shard->header().tensors) {
      total += t.byte_size();
      ++count;
      EXPECT_EQ(index["weight_map"][t.name], shard == &*s1 ? kShard1 : kShard2) << t.name;
    }
  }
  EXPECT_EQ(index["weight_map"].size(), count);
  EXPECT_EQ(index["metadata"]["total_size"], total);

  // Exponent stream + sign/mantissa bytes: about 68% of the BF16 bytes (Gaussian weights code
  // to ~2.6 bits of exponent). (Whole files of this tiny model carry relatively large tables
  // and metadata.)
  const double coded =
      static_cast<double>(s1->header().find("model.layers.0.encoded_exponent")->byte_size() +
                          s1->header().find("model.layers.0.sign_mantissa")->byte_size());
  const double ratio = coded / (2.0 * (4 * 64 * 64 + 3 * 64 * 128));
  EXPECT_LT(ratio, 0.70);
  EXPECT_GT(ratio, 0.6);
}

TEST_F(Pipeline, OutputIsDeterministicAtAnyThreadCount) {
  write_tiny_llama(model(), {});
  CompressOptions o = compress_options();
  o.threads = 1;
  ASSERT_EQ(compress(o).code, 0);
  const auto first = tree_sha256(df11());
  o.threads = 0;
  o.force = true;
  o.step_weights = 1 << 20;
  ASSERT_EQ(compress(o).code, 0);
  EXPECT_EQ(tree_sha256(df11()), first);
}

// Issue 21: compress writes several shards side by side, hashes the sources on the side and
// codes each group in windowed steps; the bytes must not depend on any of it. Four shards (a
// layer split over two), several steps per group, a tied lm_head (coded again from the
// embedding in another shard) and a tensor left raw, at 1, 2, 3 and 16 threads.
TEST_F(Pipeline, OutputIsByteIdenticalAtOneTwoThreeAndSixteenThreads) {
  SyntheticCheckpoint c;
  c.config_json =
      R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "tie_word_embeddings": true})";
  c.shards = 4;
  c.nan_tensor = "model.layers.2.mlp.up_proj.weight";
  c.tensors.push_back({"model.embed_tokens.weight", {512, 64}});
  for (int layer = 0; layer < 4; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    c.tensors.push_back({p + "input_layernorm.weight", {64}});
    for (const char* m :
         {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"}) {
      c.tensors.push_back({p + m + ".weight", {64, 64}});
    }
    c.tensors.push_back({p + "post_attention_layernorm.weight", {64}});
    c.tensors.push_back({p + "mlp.gate_proj.weight", {176, 64}});
    c.tensors.push_back({p + "mlp.up_proj.weight", {176, 64}});
    c.tensors.push_back({p + "mlp.down_proj.weight", {64, 176}});
  }
  c.tensors.push_back({"model.norm.weight", {64}});
  write_checkpoint(model(), c);

  CompressOptions o = compress_options();  // 4096-weight chunks, 3 chunks a step
  o.force = true;
  // With and without the sources' SHA-256 (--no-source-sha256): then the coding pass, not the
  // source hasher, computes the members' XXH3.
  std::vector<Df11Metadata> with_sha256;
  for (const bool source_sha256 : {true, false}) {
    o.source_sha256 = source_sha256;
    std::optional<std::map<std::string, std::string>> first;
    for (int threads : {1, 2, 3, 16}) {
      SCOPED_TRACE(testing::Message() << threads << " threads, source_sha256 " << source_sha256);
      o.threads = threads;
      const Captured r = compress(o);
      ASSERT_EQ(r.code, 0) << r.err;
      EXPECT_NE(r.out.find("tied"), std::string::npos) << r.out;
      const auto tree = tree_sha256(df11());
      if (!first) first = tree;
      EXPECT_EQ(tree, *first);
    }
    const Captured d = decompress();
    ASSERT_EQ(d.code, 0) << d.err;
    EXPECT_EQ(tree_sha256(restored()), tree_sha256(model()));
    fs::remove_all(restored());
    const Captured v = verify(model());
    EXPECT_EQ(v.code, 0) << v.out << v.err;
    for (const std::string& shard : list_dir(df11())) {
      if (!shard.ends_with(".safetensors")) continue;
      Df11Metadata m = metadata_of(df11() / shard);
      ASSERT_EQ(m.sources.size(), 1u);
      if (source_sha256) {
        EXPECT_EQ(m.sources[0].sha256, sha256_file((model() / shard).string()).value());
        with_sha256.push_back(std::move(m));
        continue;
      }
      // The same document but the absent SHA-256: every checksum the coding pass computed
      // equals the hasher's.
      EXPECT_EQ(m.sources[0].sha256, "");
      ASSERT_FALSE(with_sha256.empty());
      Df11Metadata expected = with_sha256.front();
      with_sha256.erase(with_sha256.begin());
      expected.sources[0].sha256.clear();
      EXPECT_EQ(m, expected) << shard;
    }
  }
}

TEST_F(Pipeline, VariantsRoundTrip) {
  struct Variant {
    const char* what;
    TinyLlama model;
    app::GroupBy by = app::GroupBy::kBlock;
  };
  TinyLlama tied;
  tied.tied_embeddings = true;
  TinyLlama single;
  single.sharded = false;
  single.layers = 2;
  const std::vector<Variant> variants{{"tied", tied},
                                      {"single file", single},
                                      {"group by tensor", TinyLlama{}, app::GroupBy::kTensor}};
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.what);
    fs::remove_all(model());
    fs::remove_all(df11());
    fs::remove_all(restored());
    write_tiny_llama(model(), v.model);
    CompressOptions o = compress_options();
    o.group_by = v.by;
    expect_round_trip(o);
    const auto dict = read_json(df11() / "config.json")["dfloat11_config"]["pattern_dict"];
    // A tied lm_head is coded as a copy of the embedding (spec 5.3 G8): the key is there too.
    EXPECT_EQ(dict["lm_head"], nlohmann::ordered_json::array()) << dict.dump();
    EXPECT_EQ(fs::exists(df11() / "model.safetensors.index.json"), v.model.sharded);
    if (v.by == app::GroupBy::kTensor) {
      EXPECT_EQ(dict.size(), 2u + 7 * 3) << dict.dump(2);
      EXPECT_EQ(dict["model\\.layers\\.1\\.mlp\\.up_proj"], nlohmann::ordered_json::array());
    }
  }
}

TEST_F(Pipeline, IndexDecidesWhichFilesAreShards) {
  write_tiny_llama(model(), {});
  // A consolidated checkpoint beside the HF shards (as some repositories ship): not in the
  // index, so it is a file to copy, not a shard to compress.
  const std::vector<uint8_t> weights(2 * 64 * 64, 0x3c);
  const std::vector<TensorData> tensors{
      {"layers.0.attention.wq.weight", Dtype::kBF16, {64, 64}, weights}};
  ASSERT_TRUE(
      write_safetensors((model() / "consolidated.safetensors").string(), tensors, nullptr).is_ok());
  expect_round_trip(compress_options());
  EXPECT_EQ(read_text(df11() / "consolidated.safetensors"),
            read_text(model() / "consolidated.safetensors"));
  const auto index = read_json(df11() / "model.safetensors.index.json");
  EXPECT_FALSE(index["weight_map"].contains("layers.0.attention.wq.weight"));

  // An index naming a shard that is not there is an error.
  fs::remove(model() / kShard2);
  std::ostringstream out, err;
  app::Console console(out, err, 1, false);
  CompressOptions o = compress_options();
  o.out_dir = tmp_ / "other";
  auto result = app::compress_model(o, console, app::CancelToken::never());
  EXPECT_EQ(result.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(result.status().message().find(kShard2), std::string::npos);
}

TEST_F(Pipeline, UncodableTensorLeavesItsGroupWithWarning) {
  TinyLlama m;
  m.inf_tensor = "model.layers.1.mlp.up_proj.weight";
  write_tiny_llama(model(), m);
  const Captured c = compress();
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.err.find("warning: "), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("group 'model.layers.1'"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("'model.layers.1.mlp.up_proj.weight' (1 weight)"), std::string::npos)
      << c.err;
  auto s1 = SafetensorsFile::open((df11() / kShard1).string());
  auto s2 = SafetensorsFile::open((df11() / kShard2).string());
  // spec 7.4: the tensor leaves its group, stored unchanged; the rest of the block is coded.
  EXPECT_NE(c.err.find("stored unchanged on their own"), std::string::npos) << c.err;
  EXPECT_NE(s1->header().find("model.layers.1.luts"), nullptr);
  const TensorInfo* guard = s1->header().find("model.layers.1.self_attn.q_proj.weight");
  ASSERT_NE(guard, nullptr);  // spec 6.5: the group's guard, no data
  EXPECT_TRUE(is_guard_tensor(*guard));
  EXPECT_EQ(s1->header().find("model.layers.1.self_attn.k_proj.weight"), nullptr);
  EXPECT_NE(s2->header().find("model.layers.1.mlp.up_proj.weight"), nullptr);
  EXPECT_NE(s1->header().find("model.layers.0.luts"), nullptr);
  const Captured d = decompress();
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(tree_sha256(restored()), tree_sha256(model()));
  EXPECT_EQ(verify(model()).code, 0);

  // Only group of its key: the key goes.
  fs::remove_all(model());
  m.inf_tensor = "model.embed_tokens.weight";
  write_tiny_llama(model(), m);
  CompressOptions o = compress_options();
  o.force = true;
  ASSERT_EQ(compress(o).code, 0);
  const auto dict = read_json(df11() / "config.json")["dfloat11_config"]["pattern_dict"];
  EXPECT_FALSE(dict.contains("model\\.embed_tokens")) << dict.dump();
  EXPECT_TRUE(dict.contains("lm_head")) << dict.dump();
  EXPECT_EQ(verify(model()).code, 0);
}

TEST_F(Pipeline, TiedHeadIsCodedAsAnAliasOfTheEmbedding) {
  TinyLlama m;
  m.tied_embeddings = true;
  write_tiny_llama(model(), m);
  const Captured c = compress();
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("tied copy lm_head.weight = model.embed_tokens.weight coded for the "
                       "dfloat11 loader (+"),
            std::string::npos)
      << c.out;
  const auto dict = read_json(df11() / "config.json")["dfloat11_config"]["pattern_dict"];
  EXPECT_EQ(dict["lm_head"], nlohmann::ordered_json::array()) << dict.dump();
  EXPECT_EQ(read_json(df11() / "config.json")["dfloat11_config"]["df11"]["spec_version"], "1.3");
  // The official encoder's layout: lm_head.* beside model.embed_tokens.* in the same shard.
  const Df11Metadata meta = metadata_of(df11() / kShard1);
  const GroupMeta* head = nullptr;
  const GroupMeta* embed = nullptr;
  for (const GroupMeta& g : meta.groups) {
    if (g.name == "lm_head") head = &g;
    if (g.name == "model.embed_tokens") embed = &g;
  }
  ASSERT_NE(head, nullptr);
  ASSERT_NE(embed, nullptr);
  ASSERT_EQ(head->members.size(), 1u);
  EXPECT_EQ(head->members[0].name, "lm_head.weight");
  EXPECT_EQ(head->members[0].alias_of, "model.embed_tokens.weight");
  EXPECT_EQ(head->members[0].xxh3, embed->members[0].xxh3);
  EXPECT_EQ(head->members[0].shape, embed->members[0].shape);
  // Restoration writes no lm_head.weight: the original files, byte for byte.
  const Captured d = decompress();
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(tree_sha256(restored()), tree_sha256(model()));
  const Captured v = verify(model());
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  EXPECT_NE(v.out.find("1 tied copy decoded equal to the tensor it copies"), std::string::npos)
      << v.out;

  // A copy whose stored weights differ from the embedding's is found by decoding it.
  const uint64_t at = tensor_file_offset(df11() / kShard1, "lm_head.sign_mantissa") + 7;
  flip_byte(df11() / kShard1, at, 0x01);
  const Captured bad = verify();
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_NE(bad.out.find("member 'lm_head.weight' (tied copy of 'model.embed_tokens.weight'): "
                         "decodes to xxh3"),
            std::string::npos)
      << bad.out;
}

TEST_F(Pipeline, ExistingOutputNeedsForce) {
  write_tiny_llama(model(), {});
  fs::create_directories(df11());
  write_text(df11() / "keep.txt", "precious");
  CompressOptions o = compress_options();
  std::ostringstream out, err;
  app::Console console(out, err, 1, false);
  auto result = app::compress_model(o, console, app::CancelToken::never());
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kExists);
  const Captured c = compress(o);
  EXPECT_EQ(c.code, 2);
  EXPECT_NE(c.err.find("--force"), std::string::npos) << c.err;
  EXPECT_EQ(list_dir(df11()), std::vector<std::string>{"keep.txt"});
  EXPECT_EQ(read_text(df11() / "keep.txt"), "precious");
  EXPECT_EQ(list_dir(tmp_.path()), (std::vector<std::string>{"df11", "model"}));

  o.force = true;
  ASSERT_EQ(compress(o).code, 0);
  EXPECT_FALSE(fs::exists(df11() / "keep.txt"));
  EXPECT_TRUE(fs::exists(df11() / kShard1));
  EXPECT_EQ(list_dir(tmp_.path()), (std::vector<std::string>{"df11", "model"}));

  // decompress follows the same rule.
  fs::create_directories(restored());
  EXPECT_EQ(decompress().code, 2);
  EXPECT_TRUE(fs::is_empty(restored()));
  EXPECT_EQ(decompress(/*force=*/true).code, 0);
  EXPECT_EQ(tree_sha256(restored()), tree_sha256(model()));
}

TEST_F(Pipeline, UsageAndInputErrors) {
  std::ostringstream out, err;
  app::Console console(out, err, 1, false);
  CompressOptions o = compress_options();
  auto missing = app::compress_model(o, console, app::CancelToken::never());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);

  write_tiny_llama(model(), {});
  o.out_dir = model() / "inside";
  EXPECT_EQ(app::compress_model(o, console, app::CancelToken::never()).status().code(),
            ErrorCode::kInvalidArgument);

  // Without config.json (BFL/ComfyUI checkpoints): compressed, with a config.json for the
  // loader that no original is recorded for.
  fs::remove(model() / "config.json");
  o.out_dir = df11();
  auto no_config = app::compress_model(o, console, app::CancelToken::never());
  EXPECT_TRUE(no_config.is_ok()) << no_config.status().to_string();
  EXPECT_TRUE(read_json(df11() / "config.json").contains("dfloat11_config"));
  fs::remove_all(df11());

  // A DF11 folder is not compressed again.
  fs::remove_all(model());
  write_tiny_llama(model(), {});
  ASSERT_EQ(compress().code, 0);
  o.model_dir = df11();
  o.out_dir = tmp_ / "again";
  auto again = app::compress_model(o, console, app::CancelToken::never());
  EXPECT_EQ(again.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(again.status().message().find("this folder is already DF11"), std::string::npos);
  EXPECT_FALSE(fs::exists(tmp_ / "again"));
}

TEST_F(Pipeline, LowEntropyGroupsRespectTheLoaderBlockLimit) {
  TinyLlama m;
  m.layers = 2;
  m.vocab = 1024;
  write_tiny_llama(model(), m);
  // lm_head all zeros: a 1-bit code, 32768 weights per block > 23550: must stay raw.
  // embed_tokens 75% zeros: a 1-bit code but fewer weights per block: must be coded.
  const uint64_t head = tensor_file_offset(model() / kShard2, "lm_head.weight");
  const uint64_t embed = tensor_file_offset(model() / kShard1, "model.embed_tokens.weight");
  {
    std::fstream io(model() / kShard2, std::ios::binary | std::ios::in | std::ios::out);
    io.seekp(static_cast<std::streamoff>(head));
    const std::string zeros(2 * 1024 * 64, '\0');
    io.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  }
  {
    std::fstream io(model() / kShard1, std::ios::binary | std::ios::in | std::ios::out);
    for (uint64_t i = 0; i < 1024 * 64; ++i) {
      if (i % 4 == 3) continue;
      io.seekp(static_cast<std::streamoff>(embed + 2 * i));
      io.write("\0\0", 2);
    }
  }
  // The index's sizes are unchanged; the files stay consistent.
  const Captured c = compress();
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.err.find("lm_head"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("23550"), std::string::npos) << c.err;
  EXPECT_EQ(c.err.find("embed_tokens"), std::string::npos) << c.err;
  const auto dict = read_json(df11() / "config.json")["dfloat11_config"]["pattern_dict"];
  EXPECT_FALSE(dict.contains("lm_head"));
  EXPECT_TRUE(dict.contains("model\\.embed_tokens"));
  const Captured v = verify(model());
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  ASSERT_EQ(decompress().code, 0);
  EXPECT_EQ(tree_sha256(restored()), tree_sha256(model()));
}

}  // namespace
}  // namespace df11::clitest
