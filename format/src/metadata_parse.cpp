// parse_df11_metadata(): spec 5.3, rule by rule.
#include <algorithm>
#include <charconv>
#include <unordered_set>

#include "df11/checked_math.h"
#include "df11/hash.h"
#include "df11/metadata.h"
#include "json_util.h"

namespace df11 {
namespace {

using detail::quote_name;
using nlohmann::json;

// Forward-compatible top-level keys may nest; the known schema needs 6 levels.
constexpr int kMaxMetadataJsonDepth = 32;

Status bad(const std::string& ctx, const std::string& what) {
  return Status(ErrorCode::kBadMetadata, ctx + ": " + what);
}

// spec 5.3 rule S1: an object with exactly these fields (all required unless listed in
// `optional`).
Status check_fields(const json& j, const std::string& ctx,
                    const std::vector<std::string_view>& required,
                    const std::vector<std::string_view>& optional = {}) {
  if (!j.is_object()) return bad(ctx, "is not a JSON object");
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (std::string_view k : required) known = known || key == k;
    for (std::string_view k : optional) known = known || key == k;
    if (!known) return bad(ctx, "unknown field " + quote_name(key));
  }
  for (std::string_view k : required) {
    const std::string name(k);
    if (!j.contains(name)) return bad(ctx, "missing field '" + name + "'");
  }
  return Status::ok();
}

Status get_string(const json& j, const char* key, const std::string& ctx, std::string* out) {
  const json& v = j.at(key);
  if (!v.is_string()) return bad(ctx, std::string("field '") + key + "' is not a string");
  *out = v.get<std::string>();
  return Status::ok();
}

Status get_name(const json& j, const char* key, const std::string& ctx, std::string* out) {
  DF11_RETURN_IF_ERROR(get_string(j, key, ctx, out));
  if (out->empty()) return bad(ctx, std::string("field '") + key + "' is empty");
  return Status::ok();
}

Status get_uint(const json& j, const char* key, const std::string& ctx, uint64_t* out) {
  const json& v = j.at(key);
  if (!v.is_number_unsigned()) {
    return bad(ctx,
               std::string("field '") + key + "' = " + v.dump() + " is not a non-negative integer");
  }
  *out = v.get<uint64_t>();
  return Status::ok();
}

// spec 5.3 rule S2: digests are lowercase hex of a fixed length.
Status get_hex(const json& j, const char* key, size_t length, const std::string& ctx,
               std::string* out) {
  DF11_RETURN_IF_ERROR(get_string(j, key, ctx, out));
  if (!is_lower_hex(*out, length)) {
    return bad(ctx, std::string("field '") + key + "' = " + quote_name(*out) + " is not " +
                        std::to_string(length) + " lowercase hex digits");
  }
  return Status::ok();
}

// spec 5.3 rule F1: decompression writes these names into the output folder.
Status get_file_name(const json& j, const std::string& ctx, std::string* out) {
  DF11_RETURN_IF_ERROR(get_string(j, "file", ctx, out));
  if (!is_safe_file_name(*out)) {
    return bad(ctx, "field 'file' = " + quote_name(*out) +
                        " is not a plain file name (1..255 bytes, no '/', not '.' or '..')");
  }
  return Status::ok();
}

// spec 5.3 rule L1, checked before any entry is read.
Status check_count(const json& j, const char* key, size_t limit, const char* limit_name,
                   const std::string& ctx) {
  if (j.size() > limit) {
    return Status(ErrorCode::kResourceLimit, ctx + ": " + std::to_string(j.size()) +
                                                 " entries in '" + key + "', more than " +
                                                 limit_name + " " + std::to_string(limit));
  }
  return Status::ok();
}

// spec 5.3 rules V1 ("M.m" with decimal M and m) and V2 (only major 1 is understood).
Status check_spec_version(const std::string& v, const std::string& ctx) {
  const size_t dot = v.find('.');
  auto all_digits = [](std::string_view s) {
    if (s.empty() || s.size() > 9) return false;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
    }
    return true;
  };
  if (dot == std::string::npos || !all_digits(std::string_view(v).substr(0, dot)) ||
      !all_digits(std::string_view(v).substr(dot + 1))) {
    return bad(ctx, "spec_version " + quote_name(v) + " is not of the form MAJOR.MINOR");
  }
  int major = 0;
  std::from_chars(v.data(), v.data() + dot, major);
  if (major != kDf11SpecMajor) {
    return Status(ErrorCode::kUnsupported, ctx + ": spec_version " + quote_name(v) +
                                               " is not supported (this build reads " +
                                               std::to_string(kDf11SpecMajor) + ".x)");
  }
  return Status::ok();
}

Status parse_shape(const json& j, const std::string& ctx, std::vector<uint64_t>* out) {
  const json& shape = j.at("shape");
  if (!shape.is_array()) return Status(ErrorCode::kBadShape, ctx + ": shape is not an array");
  if (shape.size() > kMaxRank) {
    return Status(ErrorCode::kBadShape, ctx + ": shape has " + std::to_string(shape.size()) +
                                            " dimensions, more than Max_Rank " +
                                            std::to_string(kMaxRank));
  }
  out->resize(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!shape[i].is_number_unsigned()) {
      return Status(ErrorCode::kBadShape, ctx + ": shape[" + std::to_string(i) + "] = " +
                                              shape[i].dump() + " is not a non-negative integer");
    }
    (*out)[i] = shape[i].get<uint64_t>();
  }
  return Status::ok();
}

// `ctx` followed by the entry's name when it has a usable one, so that every message about an
// entry (even "unknown field") says which entry.
std::string named_context(const json& j, const std::string& ctx) {
  if (!j.is_object()) return ctx;
  const auto it = j.find("name");
  if (it == j.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) return ctx;
  return ctx + " " + quote_name(it->get_ref<const std::string&>());
}

// spec 5.3 rules G1..G6 for one member.
Status parse_member(const json& j, const std::string& ctx, MemberMeta* m) {
  const std::string mctx = named_context(j, ctx);
  DF11_RETURN_IF_ERROR(
      check_fields(j, mctx, {"name", "dtype", "shape", "n_elements", "xxh3"}, {"alias_of"}));
  DF11_RETURN_IF_ERROR(get_name(j, "name", ctx, &m->name));
  DF11_RETURN_IF_ERROR(get_string(j, "dtype", mctx, &m->dtype));
  if (m->dtype != "BF16") {
    return Status(ErrorCode::kBadDtype,
                  mctx + ": dtype " + quote_name(m->dtype) + ", a DF11 group member must be BF16");
  }
  DF11_RETURN_IF_ERROR(parse_shape(j, mctx, &m->shape));
  DF11_RETURN_IF_ERROR(get_uint(j, "n_elements", mctx, &m->n_elements));
  uint64_t product = 0;
  if (!checked_product(m->shape, &product)) {
    return Status(ErrorCode::kOverflow,
                  mctx + ": shape " + shape_to_string(m->shape) + " overflows 64 bits");
  }
  if (product != m->n_elements) {
    return Status(ErrorCode::kBadShape, mctx + ": n_elements " + std::to_string(m->n_elements) +
                                            " != product of shape " + shape_to_string(m->shape) +
                                            " = " + std::to_string(product));
  }
  DF11_RETURN_IF_ERROR(get_hex(j, "xxh3", kXxh3HexLength, mctx, &m->xxh3));
  // G8 (1.2): an alias names another tensor of the folder; which one is checked folder-wide.
  if (j.contains("alias_of")) {
    DF11_RETURN_IF_ERROR(get_name(j, "alias_of", mctx, &m->alias_of));
    if (m->alias_of == m->name) return bad(mctx, "alias_of names the member itself");
  }
  return Status::ok();
}

Status parse_stored(const json& j, const std::string& ctx, StoredChecksums* s) {
  // spec 5.3: one xxh3 per stored tensor, keyed by the schema's names (group_schema.h).
  std::vector<std::string_view> names;
  for (const GroupTensorSpec& t : kGroupTensors) names.push_back(t.name());
  DF11_RETURN_IF_ERROR(check_fields(j, ctx, names));
  for (const GroupTensorSpec& t : kGroupTensors) {
    const std::string key(t.name());
    DF11_RETURN_IF_ERROR(get_hex(j, key.c_str(), kXxh3HexLength, ctx, &s->of(t.id)));
  }
  return Status::ok();
}

struct NameSets {
  std::unordered_set<std::string> groups;
  std::unordered_set<std::string> tensors;  // members and raw tensors: unique model-wide
  std::unordered_set<std::string> files;    // sources and side files share the output folder
};

Status claim(std::unordered_set<std::string>* set, const std::string& name, const char* noun,
             const std::string& ctx) {
  if (!set->insert(name).second) {
    return Status(ErrorCode::kDuplicateName,
                  ctx + ": " + noun + " " + quote_name(name) + " appears twice");
  }
  return Status::ok();
}

Status parse_group(const json& j, const std::string& ctx, NameSets* names, GroupMeta* g) {
  const std::string gctx = named_context(j, ctx);
  DF11_RETURN_IF_ERROR(check_fields(j, gctx, {"name", "n_elements", "members", "stored"}));
  DF11_RETURN_IF_ERROR(get_name(j, "name", ctx, &g->name));
  DF11_RETURN_IF_ERROR(claim(&names->groups, g->name, "group", gctx));
  DF11_RETURN_IF_ERROR(get_uint(j, "n_elements", gctx, &g->n_elements));
  const json& members = j.at("members");
  if (!members.is_array()) return bad(gctx, "members is not an array");
  if (members.empty()) return bad(gctx, "members is empty");
  DF11_RETURN_IF_ERROR(
      check_count(members, "members", kMaxMembersPerGroup, "Max_Members_Per_Group", gctx));
  g->members.resize(members.size());
  uint64_t sum = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    MemberMeta& m = g->members[i];
    DF11_RETURN_IF_ERROR(
        parse_member(members[i], gctx + ": members[" + std::to_string(i) + "]", &m));
    DF11_RETURN_IF_ERROR(claim(&names->tensors, m.name, "tensor", gctx));
    if (!checked_add(sum, m.n_elements, &sum)) {
      return Status(ErrorCode::kOverflow, gctx + ": the members' element counts overflow 64 bits");
    }
  }
  // G7: the group is exactly its members, concatenated.
  if (sum != g->n_elements) {
    return bad(gctx, "n_elements " + std::to_string(g->n_elements) +
                         " != sum of the members' n_elements " + std::to_string(sum));
  }
  return parse_stored(j.at("stored"), gctx + ": stored", &g->stored);
}

Status parse_raw_tensors(const json& j, const std::string& ctx, NameSets* names,
                         std::vector<RawTensorMeta>* out) {
  if (!j.is_object()) return bad(ctx, "'tensors' is not a JSON object");
  DF11_RETURN_IF_ERROR(check_count(j, "tensors", kMaxRawTensors, "Max_Raw_Tensors", ctx));
  out->reserve(j.size());
  // nlohmann::json objects iterate in key order: the vector comes out sorted by name.
  for (const auto& [name, value] : j.items()) {
    const std::string tctx = ctx + ": tensors " + quote_name(name);
    if (name.empty()) return bad(ctx, "'tensors' has an empty name");
    DF11_RETURN_IF_ERROR(claim(&names->tensors, name, "tensor", ctx));
    DF11_RETURN_IF_ERROR(check_fields(value, tctx, {"xxh3"}));
    RawTensorMeta t;
    t.name = name;
    DF11_RETURN_IF_ERROR(get_hex(value, "xxh3", kXxh3HexLength, tctx, &t.xxh3));
    out->push_back(std::move(t));
  }
  return Status::ok();
}

// The fields sources and side files share: a file name unique in the output folder (F2), its size
// and SHA-256. Returns the context naming the file for the caller's further checks.
// `sha256_optional`: spec 5.3 (1.2), a source MAY leave its sha256 out; a present one is
// checked as any other (S2).
Result<std::string> parse_file_fields(const json& j, const std::string& ctx, const char* payload,
                                      NameSets* names, std::string* file, uint64_t* size,
                                      std::string* sha256, bool sha256_optional) {
  if (sha256_optional) {
    DF11_RETURN_IF_ERROR(check_fields(j, ctx, {"file", "size", payload}, {"sha256"}));
  } else {
    DF11_RETURN_IF_ERROR(check_fields(j, ctx, {"file", "size", "sha256", payload}));
  }
  DF11_RETURN_IF_ERROR(get_file_name(j, ctx, file));
  std::string fctx = ctx + " " + quote_name(*file);
  DF11_RETURN_IF_ERROR(claim(&names->files, *file, "file", ctx));
  DF11_RETURN_IF_ERROR(get_uint(j, "size", fctx, size));
  if (j.contains("sha256")) {
    DF11_RETURN_IF_ERROR(get_hex(j, "sha256", kSha256HexLength, fctx, sha256));
  }
  return fctx;
}

Status parse_source(const json& j, const std::string& ctx, NameSets* names, SourceFile* s) {
  DF11_ASSIGN_OR_RETURN(const std::string sctx,
                        parse_file_fields(j, ctx, "header", names, &s->file, &s->size, &s->sha256,
                                          /*sha256_optional=*/true));
  DF11_RETURN_IF_ERROR(get_string(j, "header", sctx, &s->header));
  // R1: the original header is a plausible safetensors header that fits in the file.
  if (s->header.empty() || s->header.front() != '{' || s->header.size() > kMaxHeaderBytes) {
    return bad(sctx,
               "header is not a safetensors header (starts with '{', at most "
               "Max_Header_Bytes)");
  }
  if (s->size < kHeaderLengthBytes || s->size - kHeaderLengthBytes < s->header.size()) {
    return bad(sctx, "size " + std::to_string(s->size) + " cannot hold its " +
                         std::to_string(s->header.size()) + "-byte header");
  }
  return Status::ok();
}

Status parse_side_file(const json& j, const std::string& ctx, NameSets* names, SideFile* s) {
  DF11_ASSIGN_OR_RETURN(const std::string sctx,
                        parse_file_fields(j, ctx, "content", names, &s->file, &s->size, &s->sha256,
                                          /*sha256_optional=*/false));
  DF11_RETURN_IF_ERROR(get_string(j, "content", sctx, &s->content));
  // R2: the size is the content's.
  if (s->content.size() != s->size) {
    return bad(sctx, "size " + std::to_string(s->size) + " but content has " +
                         std::to_string(s->content.size()) + " bytes");
  }
  return Status::ok();
}

// spec 5.3 rules P1..P3 (1.1): the folder record. Both lists or neither; each sorted bytewise
// without repeats (one canonical form), shard names are plain *.safetensors names, folder file
// paths are safe relative paths, and no path is also a shard.
Status parse_folder_record(const json& doc, const std::string& ctx, Df11Metadata* m) {
  const auto shards = doc.find("shards");
  const auto files = doc.find("folder_files");
  if (shards == doc.end() && files == doc.end()) return Status::ok();
  if (shards == doc.end() || files == doc.end()) {
    return bad(ctx, "'shards' and 'folder_files' must be present together");
  }
  if (!shards->is_array()) return bad(ctx, "'shards' is not an array");
  if (!files->is_array()) return bad(ctx, "'folder_files' is not an array");
  DF11_RETURN_IF_ERROR(check_count(*shards, "shards", kMaxFolderFiles, "Max_Folder_Files", ctx));
  DF11_RETURN_IF_ERROR(
      check_count(*files, "folder_files", kMaxFolderFiles, "Max_Folder_Files", ctx));
  // P3: strictly increasing, so that equal records serialize to equal bytes.
  auto check_order = [&](const std::string& previous, const std::string& name,
                         const std::string& ectx) -> Status {
    if (name == previous) {
      return Status(ErrorCode::kDuplicateName, ectx + ": " + quote_name(name) + " appears twice");
    }
    if (name < previous) return bad(ectx, quote_name(name) + " is out of order (not sorted)");
    return Status::ok();
  };
  std::vector<std::string>& names = m->shards.emplace();
  names.reserve(shards->size());
  for (size_t i = 0; i < shards->size(); ++i) {
    const std::string sctx = ctx + ": shards[" + std::to_string(i) + "]";
    const json& v = (*shards)[i];
    if (!v.is_string()) return bad(sctx, "is not a string");
    const std::string& name = v.get_ref<const std::string&>();
    // P1: a plain file name in the folder's top level, as the loader globs *.safetensors.
    if (!is_safe_file_name(name) || !name.ends_with(".safetensors")) {
      return bad(sctx, quote_name(name) + " is not a plain *.safetensors file name");
    }
    if (!names.empty()) DF11_RETURN_IF_ERROR(check_order(names.back(), name, sctx));
    names.push_back(name);
  }
  std::vector<FolderFile>& out = m->folder_files.emplace();
  out.reserve(files->size());
  for (size_t i = 0; i < files->size(); ++i) {
    const std::string fctx = ctx + ": folder_files[" + std::to_string(i) + "]";
    const json& j = (*files)[i];
    DF11_RETURN_IF_ERROR(check_fields(j, fctx, {"file", "size", "sha256"}));
    FolderFile f;
    DF11_RETURN_IF_ERROR(get_string(j, "file", fctx, &f.file));
    // P2: decompression and verify open these paths inside the folder: no traversal.
    if (!is_safe_relative_path(f.file)) {
      return bad(fctx, "field 'file' = " + quote_name(f.file) +
                           " is not a relative path inside the folder");
    }
    const std::string nctx = fctx + " " + quote_name(f.file);
    if (!out.empty()) DF11_RETURN_IF_ERROR(check_order(out.back().file, f.file, fctx));
    if (std::binary_search(names.begin(), names.end(), f.file)) {
      return Status(ErrorCode::kDuplicateName, nctx + ": also listed in 'shards'");
    }
    DF11_RETURN_IF_ERROR(get_uint(j, "size", nctx, &f.size));
    DF11_RETURN_IF_ERROR(get_hex(j, "sha256", kSha256HexLength, nctx, &f.sha256));
    out.push_back(std::move(f));
  }
  return Status::ok();
}

template <typename T, typename ParseOne>
Status parse_array(const json& doc, const char* key, size_t limit, const char* limit_name,
                   const std::string& ctx, std::vector<T>* out, ParseOne parse_one) {
  const auto it = doc.find(key);
  if (it == doc.end()) return Status::ok();  // optional arrays default to empty
  if (!it->is_array()) return bad(ctx, std::string("'") + key + "' is not an array");
  DF11_RETURN_IF_ERROR(check_count(*it, key, limit, limit_name, ctx));
  out->resize(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    DF11_RETURN_IF_ERROR(
        parse_one((*it)[i], ctx + ": " + key + "[" + std::to_string(i) + "]", &(*out)[i]));
  }
  return Status::ok();
}

}  // namespace

bool is_safe_file_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxFileNameBytes || name == "." || name == "..") {
    return false;
  }
  return name.find('/') == std::string_view::npos && name.find('\0') == std::string_view::npos;
}

bool is_safe_relative_path(std::string_view path) {
  if (path.empty() || path.size() > kMaxFolderPathBytes) return false;
  for (size_t begin = 0;;) {
    const size_t slash = path.find('/', begin);
    const std::string_view part = path.substr(
        begin, slash == std::string_view::npos ? std::string_view::npos : slash - begin);
    if (!is_safe_file_name(part)) return false;  // also rejects "" (leading, doubled, trailing /)
    if (slash == std::string_view::npos) return true;
    begin = slash + 1;
  }
}

int spec_minor_version(std::string_view spec_version) {
  int minor = 0;
  const size_t dot = spec_version.find('.');
  if (dot == std::string_view::npos) return 0;
  std::from_chars(spec_version.data() + dot + 1, spec_version.data() + spec_version.size(), minor);
  return minor;
}

Result<Df11Metadata> parse_df11_metadata(std::string_view json_text, const std::string& file_name) {
  const std::string ctx = file_name + ": df11 metadata";
  detail::StrictJsonOptions opts;
  opts.what = ctx;
  opts.duplicate_top_level = ErrorCode::kDuplicateName;
  opts.duplicate_nested = ErrorCode::kDuplicateName;
  opts.max_depth = kMaxMetadataJsonDepth;
  Df11Metadata m;
  try {
    DF11_ASSIGN_OR_RETURN(detail::StrictJson doc,
                          detail::parse_json_strict({json_text.data(), json_text.size()}, opts));
    const json& j = doc.value;
    if (!j.is_object()) return bad(ctx, "is not a JSON object");
    // Unknown top-level keys are skipped: a later 1.x may add some (spec 5.3 rule S1).
    for (const char* k : {"spec_version", "encoder", "groups", "tensors"}) {
      if (!j.contains(k)) return bad(ctx, std::string("missing field '") + k + "'");
    }
    DF11_RETURN_IF_ERROR(get_string(j, "spec_version", ctx, &m.spec_version));
    DF11_RETURN_IF_ERROR(check_spec_version(m.spec_version, ctx));
    DF11_RETURN_IF_ERROR(get_string(j, "encoder", ctx, &m.encoder));
    NameSets names;
    if (!j.at("groups").is_array()) return bad(ctx, "'groups' is not an array");
    DF11_RETURN_IF_ERROR(parse_array(j, "groups", kMaxGroups, "Max_Groups", ctx, &m.groups,
                                     [&](const json& g, const std::string& c, GroupMeta* out) {
                                       return parse_group(g, c, &names, out);
                                     }));
    DF11_RETURN_IF_ERROR(parse_raw_tensors(j.at("tensors"), ctx, &names, &m.tensors));
    DF11_RETURN_IF_ERROR(parse_array(j, "sources", kMaxSources, "Max_Sources", ctx, &m.sources,
                                     [&](const json& s, const std::string& c, SourceFile* out) {
                                       return parse_source(s, c, &names, out);
                                     }));
    DF11_RETURN_IF_ERROR(parse_array(j, "side_files", kMaxSideFiles, "Max_Side_Files", ctx,
                                     &m.side_files,
                                     [&](const json& s, const std::string& c, SideFile* out) {
                                       return parse_side_file(s, c, &names, out);
                                     }));
    DF11_RETURN_IF_ERROR(parse_folder_record(j, ctx, &m));
  } catch (const nlohmann::json::exception& e) {
    return Status(ErrorCode::kBadMetadata, ctx + ": " + e.what());
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit, ctx + ": out of memory");
  }
  return m;
}

Result<std::optional<Df11Metadata>> read_df11_metadata(const SafetensorsHeader& header) {
  const std::string* text = header.metadata_value(kDf11MetadataKey);
  if (text == nullptr) return std::optional<Df11Metadata>();
  DF11_ASSIGN_OR_RETURN(Df11Metadata m, parse_df11_metadata(*text, header.file_name));
  return std::optional<Df11Metadata>(std::move(m));
}

}  // namespace df11
