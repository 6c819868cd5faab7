// Finding a group's stored tensors and checking df11 metadata against a header (spec 3.2, 5.4).
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <span>

#include "df11/metadata.h"
#include "format_test_util.h"

namespace df11 {
namespace {

const std::string kFile = "shard.safetensors";

// A stored tensor: dtype, shape, and bytes with a recognisable fill.
struct Fake {
  Dtype dtype;
  std::vector<uint64_t> shape;
  uint8_t fill;
};

// A file holding the six stored tensors of groups "g" (3 members, 10 weights) and "h"
// (1 member, 4 weights), a raw tensor "norm", with per-tensor overrides.
class GroupFile {
 public:
  GroupFile() {
    add_group("g", 10, 3, 0x10);
    add_group("h", 4, 1, 0x20);
    tensors_["norm"] = {Dtype::kF32, {2}, 0x30};
  }
  std::map<std::string, Fake>& tensors() { return tensors_; }

  Result<SafetensorsHeader> parse(const std::string& file_name = kFile) {
    storage_.clear();
    std::vector<TensorData> data;
    for (const auto& [name, f] : tensors_) {
      Result<uint64_t> bytes = tensor_byte_size(f.dtype, f.shape);
      EXPECT_TRUE(bytes.is_ok());
      storage_.emplace_back(*bytes, f.fill);
    }
    size_t i = 0;
    for (const auto& [name, f] : tensors_) data.push_back({name, f.dtype, f.shape, storage_[i++]});
    Result<std::vector<uint8_t>> file = serialize_safetensors(data, nullptr);
    EXPECT_TRUE(file.is_ok()) << file.status().to_string();
    file_ = std::move(*file);
    return parse_safetensors(file_, file_name);
  }
  const std::vector<uint8_t>& bytes() const { return file_; }

 private:
  void add_group(const std::string& p, uint64_t n, uint64_t members, uint8_t fill) {
    tensors_[p + ".luts"] = {Dtype::kU8, {3, 256}, fill};
    tensors_[p + ".encoded_exponent"] = {Dtype::kU8, {5}, static_cast<uint8_t>(fill + 1)};
    tensors_[p + ".sign_mantissa"] = {Dtype::kU8, {n}, static_cast<uint8_t>(fill + 2)};
    tensors_[p + ".output_positions"] = {Dtype::kU8, {8}, static_cast<uint8_t>(fill + 3)};
    tensors_[p + ".gaps"] = {Dtype::kU8, {320}, static_cast<uint8_t>(fill + 4)};
    tensors_[p + ".split_positions"] = {Dtype::kI64, {members - 1}, static_cast<uint8_t>(fill + 5)};
  }
  std::map<std::string, Fake> tensors_;
  std::vector<std::vector<uint8_t>> storage_;
  std::vector<uint8_t> file_;
};

GroupMeta group_meta(const std::string& name, uint64_t n, size_t members) {
  GroupMeta g;
  g.name = name;
  g.n_elements = n;
  for (size_t i = 0; i < members; ++i) {
    const uint64_t count = i + 1 < members ? 1 : n - (members - 1);
    g.members.push_back(
        {name + ".m" + std::to_string(i), "BF16", {count}, count, "0000000000000000", ""});
  }
  return g;
}

Df11Metadata metadata() {
  Df11Metadata m;
  m.groups = {group_meta("g", 10, 3), group_meta("h", 4, 1)};
  m.tensors = {{"norm", "0000000000000000"}};
  return m;
}

// The view of GroupFile's group "g": each span over its tensor's bytes (sizes and fills).
void expect_view_of_g(const GroupView& v) {
  EXPECT_EQ(v.luts.size(), 768u);
  EXPECT_EQ(v.luts.front(), 0x10);
  EXPECT_EQ(v.encoded_exponent.size(), 5u);
  EXPECT_EQ(v.encoded_exponent.front(), 0x11);
  EXPECT_EQ(v.sign_mantissa.size(), 10u);
  EXPECT_EQ(v.sign_mantissa.back(), 0x12);
  EXPECT_EQ(v.output_positions.front(), 0x13);
  EXPECT_EQ(v.gaps.size(), 320u);
  EXPECT_EQ(v.gaps.front(), 0x14);
  EXPECT_EQ(v.split_positions.size(), 16u);
  EXPECT_EQ(v.split_positions.front(), 0x15);
  EXPECT_EQ(v.n_luts(), 3u);
}

TEST(GroupTensors, FindAndView) {
  GroupFile f;
  Result<SafetensorsHeader> h = f.parse();
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  Result<GroupTensors> g = find_group_tensors(*h, "g");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(g->name, "g");
  EXPECT_EQ(g->luts->name, "g.luts");
  EXPECT_EQ(g->n_elements(), 10u);
  EXPECT_EQ(g->n_members(), 3u);
  expect_view_of_g(group_view(*g, f.bytes()));
}

TEST(GroupTensors, EnumerateFindsEveryGroupInFileOrder) {
  GroupFile f;
  Result<SafetensorsHeader> h = f.parse();
  ASSERT_TRUE(h.is_ok());
  Result<std::vector<GroupTensors>> groups = enumerate_groups(*h);
  ASSERT_TRUE(groups.is_ok()) << groups.status().to_string();
  ASSERT_EQ(groups->size(), 2u);
  EXPECT_EQ((*groups)[0].name, "g");
  EXPECT_EQ((*groups)[1].name, "h");

  // A bare "encoded_exponent" (no module path) is not a group; a half group is an error.
  f.tensors()["encoded_exponent"] = {Dtype::kU8, {1}, 0};
  f.tensors()["x.encoded_exponent"] = {Dtype::kU8, {1}, 0};
  h = f.parse();
  ASSERT_TRUE(h.is_ok());
  EXPECT_STATUS(enumerate_groups(*h).status(), ErrorCode::kBadGroup, kFile.c_str(), "group 'x'",
                "'x.luts' is missing");
}

// Spec 7.8: a published folder's group may keep its stored tensors in several shards.
TEST(GroupTensors, FolderGroupsSpanShards) {
  GroupFile a, b;
  b.tensors().clear();
  for (const char* moved : {"g.sign_mantissa", "g.gaps"}) {
    b.tensors()[moved] = a.tensors()[moved];
    a.tensors().erase(moved);
  }
  b.tensors()["other"] = {Dtype::kF32, {1}, 0x40};
  Result<SafetensorsHeader> ha = a.parse("a.safetensors");
  Result<SafetensorsHeader> hb = b.parse("b.safetensors");
  ASSERT_TRUE(ha.is_ok() && hb.is_ok());
  std::vector<const SafetensorsHeader*> headers{&*ha, &*hb};
  Result<std::vector<FolderGroup>> groups = enumerate_folder_groups(headers, "folder");
  ASSERT_TRUE(groups.is_ok()) << groups.status().to_string();
  ASSERT_EQ(groups->size(), 2u);
  const FolderGroup& g = (*groups)[0];
  EXPECT_EQ(g.tensors.name, "g");
  EXPECT_EQ(g.file(), 0u);
  EXPECT_EQ(g.file_of, (std::array<size_t, kGroupTensorCount>{0, 0, 1, 0, 1, 0}));
  EXPECT_EQ((*groups)[1].tensors.name, "h");
  std::array<std::span<const uint8_t>, kGroupTensorCount> bytes;
  for (size_t i = 0; i < kGroupTensorCount; ++i) {
    bytes[i] = g.file_of[i] == 0 ? std::span(a.bytes()) : std::span(b.bytes());
  }
  expect_view_of_g(group_view(g.tensors, bytes));

  // One shard alone holds half the group.
  EXPECT_STATUS(enumerate_groups(*ha).status(), ErrorCode::kBadGroup, "a.safetensors: group 'g'",
                "'g.sign_mantissa' is missing");
  headers.pop_back();
  EXPECT_STATUS(enumerate_folder_groups(headers, "folder").status(), ErrorCode::kBadGroup,
                "folder: group 'g'", "'g.sign_mantissa' is missing");
  // The dtype and shape checks name the shard holding the tensor.
  b.tensors()["g.gaps"].dtype = Dtype::kI8;
  hb = b.parse("b.safetensors");
  ASSERT_TRUE(hb.is_ok());
  headers = {&*ha, &*hb};
  EXPECT_STATUS(enumerate_folder_groups(headers, "folder").status(), ErrorCode::kBadDtype,
                "b.safetensors: tensor 'g.gaps'", "dtype I8");
  // A stored tensor in two shards is refused: which one would the group use?
  b.tensors()["g.gaps"].dtype = Dtype::kU8;
  b.tensors()["g.luts"] = a.tensors()["g.luts"];
  hb = b.parse("b.safetensors");
  ASSERT_TRUE(hb.is_ok());
  EXPECT_STATUS(enumerate_folder_groups(headers, "folder").status(), ErrorCode::kDuplicateName,
                "folder: group 'g'", "'g.luts' is in both 'a.safetensors' and 'b.safetensors'");
}

TEST(GroupTensors, WrongDtypesAndShapes) {
  struct Case {
    std::string tensor;
    Fake fake;
    ErrorCode code;
    const char* fragment;
  };
  const Case cases[] = {
      {"g.gaps", {Dtype::kI8, {320}, 0}, ErrorCode::kBadDtype, "dtype I8"},
      {"g.split_positions", {Dtype::kU8, {16}, 0}, ErrorCode::kBadDtype, "stores it as I64"},
      {"g.luts", {Dtype::kU8, {768}, 0}, ErrorCode::kBadShape, "[n_luts, 256]"},
      {"g.luts", {Dtype::kU8, {3, 255}, 0}, ErrorCode::kBadShape, "[3, 255]"},
      {"g.luts", {Dtype::kU8, {0, 256}, 0}, ErrorCode::kBadShape, "n_luts >= 1"},
      {"g.encoded_exponent", {Dtype::kU8, {5, 1}, 0}, ErrorCode::kBadShape, "not one-dimensional"},
      {"g.sign_mantissa", {Dtype::kU8, {}, 0}, ErrorCode::kBadShape, "not one-dimensional"},
  };
  for (const Case& c : cases) {
    GroupFile f;
    f.tensors()[c.tensor] = c.fake;
    Result<SafetensorsHeader> h = f.parse();
    ASSERT_TRUE(h.is_ok());
    SCOPED_TRACE(c.tensor);
    EXPECT_STATUS(find_group_tensors(*h, "g").status(), c.code, kFile.c_str(),
                  ("tensor '" + c.tensor + "'").c_str(), c.fragment);
  }
}

TEST(GroupTensors, MetadataAgainstHeader) {
  GroupFile f;
  Result<SafetensorsHeader> h = f.parse();
  ASSERT_TRUE(h.is_ok());
  Result<std::vector<GroupTensors>> groups = check_metadata_against_header(metadata(), *h);
  ASSERT_TRUE(groups.is_ok()) << groups.status().to_string();
  ASSERT_EQ(groups->size(), 2u);
  EXPECT_EQ((*groups)[1].sign_mantissa->name, "h.sign_mantissa");

  Df11Metadata m = metadata();
  m.groups[0] = group_meta("g", 11, 3);
  EXPECT_STATUS(check_metadata_against_header(m, *h).status(), ErrorCode::kBadGroup, kFile.c_str(),
                "tensor 'g.sign_mantissa'", "10 bytes", "11 elements");
  m = metadata();
  m.groups[0] = group_meta("g", 10, 2);
  EXPECT_STATUS(check_group_against_header(m.groups[0], *h).status(), ErrorCode::kBadGroup,
                kFile.c_str(), "tensor 'g.split_positions'", "2 split positions", "2 members");
  m = metadata();
  m.groups[1].name = "missing";
  EXPECT_STATUS(check_metadata_against_header(m, *h).status(), ErrorCode::kBadGroup,
                "group 'missing'", "'missing.luts' is missing");
  m = metadata();
  m.tensors.push_back({"ghost", "0000000000000000"});
  EXPECT_STATUS(check_metadata_against_header(m, *h).status(), ErrorCode::kBadMetadata,
                kFile.c_str(), "'ghost'", "no such tensor");
  m = metadata();
  m.tensors.push_back({"g.gaps", "0000000000000000"});
  EXPECT_STATUS(check_metadata_against_header(m, *h).status(), ErrorCode::kBadMetadata, "'g.gaps'",
                "stored tensor of group 'g'");
  m = metadata();
  m.tensors.clear();
  EXPECT_STATUS(check_metadata_against_header(m, *h).status(), ErrorCode::kBadMetadata,
                "tensor 'norm' is neither");
  m = metadata();
  m.groups.pop_back();
  EXPECT_STATUS(check_metadata_against_header(m, *h).status(), ErrorCode::kBadMetadata,
                "tensor 'h.", "is neither");
}

// spec 6.5: a group's guard is a U8 [0] tensor under its first member's name that is no alias;
// a tensor of another member's name, or of the guard's name with data, is refused.
TEST(GroupTensors, GuardsAgainstHeader) {
  {
    GroupFile f;
    f.tensors()["g.m0"] = {Dtype::kU8, {0}, 0};
    Result<SafetensorsHeader> h = f.parse();
    ASSERT_TRUE(h.is_ok());
    Result<std::vector<GroupTensors>> groups = check_metadata_against_header(metadata(), *h);
    ASSERT_TRUE(groups.is_ok()) << groups.status().to_string();
    ASSERT_NE((*groups)[0].guard, nullptr);
    EXPECT_EQ((*groups)[0].guard->name, "g.m0");
    EXPECT_EQ((*groups)[1].guard, nullptr);  // the shard has none for "h": still valid
    Df11Metadata m = metadata();
    m.groups[0].members[0].alias_of = "norm";  // an alias takes no guard: the next member does
    EXPECT_STATUS(check_metadata_against_header(m, *h).status(), ErrorCode::kBadMetadata,
                  "tensor 'g.m0' is neither");
    EXPECT_EQ(guarded_member(m.groups[0])->name, "g.m1");
  }
  const std::pair<std::string, Fake> bad[] = {
      {"g.m0", {Dtype::kU8, {1}, 0}},
      {"g.m0", {Dtype::kBF16, {0}, 0}},
      {"g.m0", {Dtype::kU8, {0, 0}, 0}},
  };
  for (const auto& [name, fake] : bad) {
    GroupFile f;
    f.tensors()[name] = fake;
    Result<SafetensorsHeader> h = f.parse();
    ASSERT_TRUE(h.is_ok());
    EXPECT_STATUS(check_metadata_against_header(metadata(), *h).status(), ErrorCode::kBadMetadata,
                  kFile.c_str(), "'g.m0' has the name of a member of group 'g'",
                  "not its guard (U8, shape [0])");
  }
  GroupFile f;
  f.tensors()["g.m1"] = {Dtype::kU8, {0}, 0};
  Result<SafetensorsHeader> h = f.parse();
  ASSERT_TRUE(h.is_ok());
  EXPECT_STATUS(check_metadata_against_header(metadata(), *h).status(), ErrorCode::kBadMetadata,
                "tensor 'g.m1' is neither");
}

}  // namespace
}  // namespace df11

// The one place the tests spell the schema out, from the spec 3.2 table itself: everything
// else (reader, writers, metadata, these tests) loops over kGroupTensors.
namespace df11 {
namespace {

TEST(GroupSchema, MatchesSpecTable) {
  const std::pair<const char*, Dtype> expected[] = {
      {"luts", Dtype::kU8},          {"encoded_exponent", Dtype::kU8},
      {"sign_mantissa", Dtype::kU8}, {"output_positions", Dtype::kU8},
      {"gaps", Dtype::kU8},          {"split_positions", Dtype::kI64}};
  ASSERT_EQ(kGroupTensors.size(), std::size(expected));
  for (size_t i = 0; i < kGroupTensors.size(); ++i) {
    const GroupTensorSpec& t = kGroupTensors[i];
    EXPECT_EQ(static_cast<size_t>(t.id), i);
    EXPECT_EQ(t.name(), expected[i].first);
    EXPECT_EQ(t.suffix, "." + std::string(expected[i].first));
    EXPECT_EQ(t.dtype, expected[i].second) << t.name();
    EXPECT_EQ(t.rank, t.id == GroupTensor::kLuts ? 2u : 1u) << t.name();
  }
  EXPECT_EQ(group_tensor_name("model.layers.3", GroupTensor::kGaps), "model.layers.3.gaps");
  EXPECT_EQ(group_tensor_shape(GroupTensor::kLuts, 3 * 256), (std::vector<uint64_t>{3, 256}));
  EXPECT_EQ(group_tensor_shape(GroupTensor::kSplitPositions, 16), (std::vector<uint64_t>{2}));
  EXPECT_EQ(group_tensor_shape(GroupTensor::kGaps, 320), (std::vector<uint64_t>{320}));
}

// The per-struct tables (GroupView::part, GroupBuffers::part, StoredChecksums::of,
// GroupTensors::all) pick the field named like the schema entry.
TEST(GroupSchema, FieldTablesFollowTheSchema) {
  GroupBuffers b;
  b.luts.resize(1);
  b.encoded_exponent.resize(2);
  b.sign_mantissa.resize(3);
  b.output_positions.resize(4);
  b.gaps.resize(5);
  b.split_positions.resize(6);
  StoredChecksums s{"l", "e", "s", "o", "g", "p"};
  const char* first_letters = "lesogp";
  for (size_t i = 0; i < kGroupTensorCount; ++i) {
    const GroupTensor t = kGroupTensors[i].id;
    EXPECT_EQ(b.part(t).size(), i + 1) << kGroupTensors[i].name();
    EXPECT_EQ(b.view().part(t).size(), i + 1) << kGroupTensors[i].name();
    EXPECT_EQ(s.of(t), std::string(1, first_letters[i])) << kGroupTensors[i].name();
  }
  TensorInfo infos[kGroupTensorCount];
  GroupTensors g{"m", &infos[0], &infos[1], &infos[2], &infos[3], &infos[4], &infos[5]};
  const auto all = g.all();
  for (size_t i = 0; i < kGroupTensorCount; ++i) EXPECT_EQ(all[i], &infos[i]);
}

}  // namespace
}  // namespace df11
