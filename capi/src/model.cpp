// The C API's model handle (df11/df11.h) over the model-folder library (df11_folder.h) and the
// CPU decoder. No exception crosses into C: every entry point catches at the boundary.
#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "df11/decoder.h"
#include "df11/df11.h"
#include "df11/hash.h"
#include "df11/model_config.h"
#include "df11/published_folder.h"
#include "model_handle.h"

using df11::ErrorCode;
using df11::Result;
using df11::Status;

namespace df11::capi {

namespace {

// Where group cg's stored tensors begin in its shard (the one holding encoded_exponent; a
// published folder's group may have others in other shards), to list it in storage order.
uint64_t group_data_begin(const app::CodedGroup& cg) {
  const auto tensors = cg.tensors.all();
  uint64_t first = UINT64_MAX;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (cg.tensor_shard[i] == cg.shard) first = std::min(first, tensors[i]->data_offset_begin);
  }
  return first;
}

Status build_index(df11_model& m) {
  const app::Df11Folder& f = *m.folder;
  // Storage order: shard by shard, each tensor where it lies; a group's members in
  // concatenation order where the group's first stored tensor lies.
  m.groups.resize(f.groups.size());
  std::vector<std::vector<std::pair<uint64_t, size_t>>> group_at(f.folder.shards.size());
  for (size_t g = 0; g < f.groups.size(); ++g) {
    const app::CodedGroup& cg = f.groups[g];
    group_at[cg.shard].push_back({group_data_begin(cg), g});
  }
  std::vector<std::vector<std::pair<uint64_t, std::string>>> raw_at(f.folder.shards.size());
  for (const auto& [name, t] : f.originals) {
    if (!t.is_member)
      raw_at[t.raw.shard].push_back({f.folder.tensor(t.raw).data_offset_begin, name});
  }
  for (size_t s = 0; s < f.folder.shards.size(); ++s) {
    std::sort(group_at[s].begin(), group_at[s].end());
    std::sort(raw_at[s].begin(), raw_at[s].end());
    size_t gi = 0, ri = 0;
    while (gi < group_at[s].size() || ri < raw_at[s].size()) {
      const bool take_group =
          ri == raw_at[s].size() ||
          (gi < group_at[s].size() && group_at[s][gi].first < raw_at[s][ri].first);
      if (take_group) {
        const size_t g = group_at[s][gi++].second;
        const app::CodedGroup& cg = f.groups[g];
        const GroupMeta& gm = f.metadata[cg.shard].groups[cg.meta_index];
        for (size_t k = 0; k < gm.members.size(); ++k) {
          const MemberMeta& mm = gm.members[k];
          // A member that codes a copy of another tensor (spec 5.3 alias: a tied lm_head) is
          // no original tensor: the tensor it copies is listed where it lies.
          const auto original = f.originals.find(mm.name);
          if (original == f.originals.end() || !original->second.is_member ||
              original->second.group != g || original->second.member != k) {
            continue;
          }
          df11_model::Tensor t;
          t.name = mm.name;
          t.dtype = mm.dtype;
          t.shape = mm.shape;
          t.byte_size = 2 * mm.n_elements;
          t.group = g;
          t.group_offset = cg.member_start[k];
          t.xxh3 = &original->second.xxh3;
          m.groups[g].members.push_back(m.tensors.size());
          m.tensors.push_back(std::move(t));
        }
      } else {
        const std::string& name = raw_at[s][ri++].second;
        const app::OriginalTensor& o = f.originals.at(name);
        const TensorInfo& info = f.folder.tensor(o.raw);
        df11_model::Tensor t;
        t.name = name;
        t.dtype = dtype_name(info.dtype);
        t.shape = info.shape;
        t.byte_size = info.byte_size();
        t.raw = &o.raw;
        t.xxh3 = &o.xxh3;
        m.tensors.push_back(std::move(t));
      }
    }
  }
  for (size_t i = 0; i < m.tensors.size(); ++i) m.by_name.emplace(m.tensors[i].name, i);
  for (const app::AliasMember& a : f.aliases) {
    const app::CodedGroup& cg = f.groups[a.group];
    const auto target = m.by_name.find(a.target);
    if (f.metadata[cg.shard].groups[cg.meta_index].members.size() != 1 ||
        target == m.by_name.end()) {
      continue;  // open_df11_folder checked that the target exists
    }
    m.groups[a.group].alias_of = target->second;
    m.groups[a.group].alias_name = a.name;
  }
  m.validated = std::make_unique<df11_model::Validated[]>(m.groups.size());
  return Status::ok();
}

// spec 7.8: a folder the dfloat11 tools published: pattern_dict names each group's members,
// config.json gives their shapes, every group is validated now; no checksums were recorded.
// Listed in the same storage order as a df11 folder's tensors.
Status build_published_index(df11_model& m,
                             const std::vector<std::vector<app::RestoredTensor>>& shards) {
  const app::Df11Folder& f = *m.folder;
  m.groups.resize(f.groups.size());
  for (size_t s = 0; s < shards.size(); ++s) {
    // (data offset, group or SIZE_MAX, the shard's tensor): a group where its first stored
    // tensor lies, its members in concatenation order.
    std::vector<std::pair<uint64_t, const app::RestoredTensor*>> order;
    std::vector<std::vector<const app::RestoredTensor*>> members(f.groups.size());
    for (const app::RestoredTensor& t : shards[s]) {
      if (t.source.is_member) {
        members[t.source.group].push_back(&t);
      } else {
        order.push_back({f.folder.tensor(t.source.raw).data_offset_begin, &t});
      }
    }
    for (size_t g = 0; g < f.groups.size(); ++g) {
      if (f.groups[g].shard != s || members[g].empty()) continue;
      std::sort(members[g].begin(), members[g].end(),
                [](const app::RestoredTensor* a, const app::RestoredTensor* b) {
                  return a->source.member < b->source.member;
                });
      const uint64_t first = group_data_begin(f.groups[g]);
      for (const app::RestoredTensor* t : members[g]) order.push_back({first, t});
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [offset, rt] : order) {
      df11_model::Tensor t;
      t.name = rt->name;
      t.shape = rt->shape;
      t.byte_size = rt->source.byte_size;
      if (rt->source.is_member) {
        const app::CodedGroup& cg = f.groups[rt->source.group];
        t.dtype = "BF16";
        t.group = rt->source.group;
        t.group_offset = cg.member_start[rt->source.member];
        m.groups[t.group].members.push_back(m.tensors.size());
      } else {
        t.dtype = dtype_name(f.folder.tensor(rt->source.raw).dtype);
        t.raw = &f.originals.at(rt->name).raw;
      }
      m.tensors.push_back(std::move(t));
    }
  }
  for (size_t i = 0; i < m.tensors.size(); ++i) m.by_name.emplace(m.tensors[i].name, i);
  m.validated = std::make_unique<df11_model::Validated[]>(m.groups.size());
  return Status::ok();
}

bool tensor_ok(const df11_model* m, size_t i) {
  return m != nullptr && m->folder && i < m->tensors.size();
}
bool group_ok(const df11_model* m, size_t g) {
  return m != nullptr && m->folder && g < m->groups.size();
}

Status out_of_range(const char* what, size_t i, size_t n) {
  return Status(ErrorCode::kInvalidArgument, std::string(what) + " " + std::to_string(i) +
                                                 " out of range (the model has " +
                                                 std::to_string(n) + ")");
}

// The recorded checksum of an original tensor against the bytes decoded (spec 5.2): the
// decoder checks the stream's structure, this the content.
Status check_xxh3(std::span<const uint8_t> bytes, const std::string& recorded,
                  const std::string& what) {
  const std::string got = xxh3_hex(bytes);
  if (got == recorded) return Status::ok();
  return Status(ErrorCode::kCorruptData, what + ": decoded bytes have XXH3 " + got +
                                             ", the df11 metadata records " + recorded);
}

}  // namespace

Result<GivenShapes> given_shapes(const df11_shape* shapes, size_t n) {
  GivenShapes given;
  if (n == 0) return given;
  const std::string fn = "df11_model_open_with_shapes: ";
  if (shapes == nullptr) {
    return Status(ErrorCode::kInvalidArgument,
                  fn + "shapes is NULL, n_shapes is " + std::to_string(n));
  }
  std::unordered_set<std::string_view> seen;
  given.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const df11_shape& s = shapes[i];
    const std::string entry = fn + "shapes[" + std::to_string(i) + "]";
    if (s.name == nullptr) return Status(ErrorCode::kInvalidArgument, entry + ": name is NULL");
    if (s.dims == nullptr && s.rank > 0) {
      return Status(ErrorCode::kInvalidArgument,
                    entry + " ('" + s.name + "'): dims is NULL, rank is " + std::to_string(s.rank));
    }
    if (!seen.insert(s.name).second) {
      return Status(ErrorCode::kInvalidArgument, entry + ": '" + s.name + "' was given before");
    }
    given.emplace_back(s.name, std::vector<uint64_t>(s.dims, s.dims + s.rank));
  }
  return given;
}

Status open_published(df11_model& m, app::ModelFolder folder, const GivenShapes& given) {
  const std::string dir = folder.dir.string();
  const std::string where = (folder.dir / app::kConfigFile).string();
  std::optional<nlohmann::ordered_json> dict;
  if (folder.config_text) {
    DF11_ASSIGN_OR_RETURN(dict, app::read_pattern_dict(*folder.config_text, where));
  }
  if (!dict) {
    return Status(ErrorCode::kBadMetadata,
                  dir +
                      ": not a folder written by df11 (no shard carries df11 metadata) nor "
                      "published by the dfloat11 tools (no config.json with dfloat11_config)");
  }
  DF11_ASSIGN_OR_RETURN(app::MemberShapes shapes,
                        app::MemberShapes::from_config(folder.config_text));
  for (const auto& [name, shape] : given) shapes.add(name, shape, "the shapes the caller gave");
  const char* hint =
      given.empty()
          ? "df11_model_open takes shapes from config.json only: give them to "
            "df11_model_open_with_shapes, or restore the folder with `df11 decompress --like DIR`"
          : "the shapes the caller gave do not name them either";
  DF11_ASSIGN_OR_RETURN(app::PublishedFolder published,
                        app::read_published_folder(std::move(folder), shapes, hint));
  m.folder.emplace(std::move(published.folder));
  return build_published_index(m, published.shards);
}

Result<const GroupInfo*> validated_group(df11_model& m, size_t g) {
  df11_model::Validated& v = m.validated[g];
  std::call_once(v.once, [&] {
    const app::CodedGroup& cg = m.folder->groups[g];
    Result<GroupInfo> info = validate_group(cg.view, cg.what);
    if (info) {
      v.info = *info;
    } else {
      v.status = info.status();
    }
  });
  if (!v.status) return v.status;
  return &v.info;
}

// A published folder records no checksums (its members carry no xxh3); df11's records the
// stored tensors' in the group's metadata (spec 5.2).
std::vector<std::span<const uint8_t>> recorded_stored_tensors(df11_model& m, size_t g) {
  const app::Df11Folder& f = *m.folder;
  const app::CodedGroup& cg = f.groups[g];
  const std::vector<size_t>& members = m.groups[g].members;
  const bool recorded = std::any_of(members.begin(), members.end(),
                                    [&](size_t t) { return m.tensors[t].xxh3 != nullptr; });
  if (!recorded || cg.shard >= f.metadata.size() ||
      cg.meta_index >= f.metadata[cg.shard].groups.size()) {
    return {};
  }
  const auto tensors = cg.tensors.all();  // kGroupTensors order
  std::vector<std::span<const uint8_t>> out;
  for (size_t k = 0; k < tensors.size(); ++k) {
    // Each stored tensor from the shard whose header describes it.
    out.push_back(f.folder.shards[cg.tensor_shard[k]].tensor_bytes(*tensors[k]));
  }
  return out;
}

Status compare_stored_digests(df11_model& m, size_t g, std::span<const uint64_t> digests) {
  if (digests.empty()) return Status::ok();
  const app::Df11Folder& f = *m.folder;
  const app::CodedGroup& cg = f.groups[g];
  const GroupMeta& meta = f.metadata[cg.shard].groups[cg.meta_index];
  const auto tensors = cg.tensors.all();
  for (size_t k = 0; k < tensors.size() && k < digests.size(); ++k) {
    const std::string& want = meta.stored.of(kGroupTensors[k].id);
    const std::string got = hex64(digests[k]);
    if (got != want) {
      return Status(ErrorCode::kCorruptData, cg.what + ": stored tensor '" + tensors[k]->name +
                                                 "' has xxh3 " + got +
                                                 ", the df11 metadata records " + want);
    }
  }
  return Status::ok();
}

}  // namespace df11::capi

using df11::capi::fail;

namespace {

// An entry point on an opened model: `body` runs at the C boundary (guarded).
template <typename F>
df11_status on_model(df11_model* model, F&& body) {
  if (model == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  return df11::capi::guarded(model->err, [&]() -> Status {
    if (!model->folder) return Status(ErrorCode::kInvalidArgument, "the model failed to open");
    return body(*model->folder);
  });
}

// The caller's output for `what`: exactly `expected` bytes, 2-byte aligned for BF16 output.
Status check_output(const std::string& what, const void* out, size_t out_bytes, uint64_t expected,
                    bool bf16) {
  if (out == nullptr || out_bytes != expected) {
    return Status(ErrorCode::kInvalidArgument, what + ": output of " + std::to_string(out_bytes) +
                                                   " bytes" + (out == nullptr ? " at NULL" : "") +
                                                   ", it decodes to " + std::to_string(expected));
  }
  if (bf16 && reinterpret_cast<uintptr_t>(out) % alignof(uint16_t) != 0) {
    return Status(ErrorCode::kInvalidArgument, what + ": output is not 2-byte aligned");
  }
  return Status::ok();
}

}  // namespace

extern "C" {

unsigned df11_version_number(void) { return DF11_VERSION_NUMBER; }

const char* df11_version_string(void) { return DF11_VERSION_STRING; }

const char* df11_status_name(int status) {
  if (status < 0 || status > static_cast<int>(ErrorCode::kBadConfig)) return "unknown";
  return df11::error_code_name(static_cast<ErrorCode>(status));
}

df11_status df11_model_open(const char* dir, df11_model** out) {
  return df11_model_open_with_shapes(dir, nullptr, 0, out);
}

df11_status df11_model_open_with_shapes(const char* dir, const df11_shape* shapes, size_t n_shapes,
                                        df11_model** out) {
  if (out == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  *out = nullptr;
  df11_model* m = new (std::nothrow) df11_model();
  if (m == nullptr) return DF11_ERROR_RESOURCE_LIMIT;
  *out = m;
  return df11::capi::guarded(m->err, [&]() -> Status {
    const char* fn = n_shapes == 0 ? "df11_model_open" : "df11_model_open_with_shapes";
    if (dir == nullptr)
      return Status(ErrorCode::kInvalidArgument, std::string(fn) + ": dir is NULL");
    DF11_ASSIGN_OR_RETURN(df11::capi::GivenShapes given,
                          df11::capi::given_shapes(shapes, n_shapes));
    DF11_ASSIGN_OR_RETURN(df11::app::ModelFolder folder, df11::app::open_model_folder(dir));
    if (!df11::app::written_by_df11(folder))
      return df11::capi::open_published(*m, std::move(folder), given);
    DF11_ASSIGN_OR_RETURN(df11::app::Df11Folder f, df11::app::open_df11_folder(std::move(folder)));
    // A shard whose header checksum fails cannot be trusted for anything (spec 5.2).
    DF11_RETURN_IF_ERROR(df11::app::first_header_failure(f));
    m->folder.emplace(std::move(f));
    return df11::capi::build_index(*m);
  });
}

void df11_model_close(df11_model* model) { delete model; }

const char* df11_model_errmsg(const df11_model* model) {
  return model == nullptr ? "model handle is NULL" : model->err.last_message();
}

df11_status df11_model_errcode(const df11_model* model) {
  return model == nullptr ? DF11_ERROR_INVALID_ARGUMENT : model->err.last_code();
}

size_t df11_model_tensor_count(const df11_model* model) {
  return model != nullptr && model->folder ? model->tensors.size() : 0;
}

size_t df11_model_group_count(const df11_model* model) {
  return model != nullptr && model->folder ? model->groups.size() : 0;
}

size_t df11_model_find_tensor(df11_model* model, const char* name) {
  if (model == nullptr || !model->folder || name == nullptr) {
    if (model != nullptr) {
      fail(model->err,
           Status(ErrorCode::kInvalidArgument, "df11_model_find_tensor: no model or name"));
    }
    return SIZE_MAX;
  }
  try {
    const auto it = model->by_name.find(name);
    if (it != model->by_name.end()) return it->second;
    fail(model->err, Status(ErrorCode::kNotFound,
                            model->folder->folder.dir.string() + ": no tensor '" + name + "'"));
  } catch (const std::bad_alloc&) {
    fail(model->err, Status(ErrorCode::kResourceLimit, "out of memory"));
  }
  return SIZE_MAX;
}

const char* df11_tensor_name(const df11_model* model, size_t tensor) {
  return df11::capi::tensor_ok(model, tensor) ? model->tensors[tensor].name.c_str() : nullptr;
}

const char* df11_tensor_dtype(const df11_model* model, size_t tensor) {
  return df11::capi::tensor_ok(model, tensor) ? model->tensors[tensor].dtype.c_str() : nullptr;
}

size_t df11_tensor_rank(const df11_model* model, size_t tensor) {
  return df11::capi::tensor_ok(model, tensor) ? model->tensors[tensor].shape.size() : 0;
}

const uint64_t* df11_tensor_shape(const df11_model* model, size_t tensor) {
  if (!df11::capi::tensor_ok(model, tensor) || model->tensors[tensor].shape.empty()) return nullptr;
  return model->tensors[tensor].shape.data();
}

uint64_t df11_tensor_byte_size(const df11_model* model, size_t tensor) {
  return df11::capi::tensor_ok(model, tensor) ? model->tensors[tensor].byte_size : 0;
}

size_t df11_tensor_group(const df11_model* model, size_t tensor) {
  return df11::capi::tensor_ok(model, tensor) ? model->tensors[tensor].group : SIZE_MAX;
}

uint64_t df11_tensor_group_offset(const df11_model* model, size_t tensor) {
  return df11::capi::tensor_ok(model, tensor) ? model->tensors[tensor].group_offset : 0;
}

const char* df11_group_name(const df11_model* model, size_t group) {
  return df11::capi::group_ok(model, group) ? model->folder->groups[group].tensors.name.c_str()
                                            : nullptr;
}

const char* df11_group_file(const df11_model* model, size_t group) {
  if (!df11::capi::group_ok(model, group)) return nullptr;
  return model->folder->folder.shard_names[model->folder->groups[group].shard].c_str();
}

uint64_t df11_group_element_count(const df11_model* model, size_t group) {
  return df11::capi::group_ok(model, group) ? model->folder->groups[group].view.n_elements() : 0;
}

size_t df11_group_member_count(const df11_model* model, size_t group) {
  return df11::capi::group_ok(model, group) ? model->groups[group].members.size() : 0;
}

size_t df11_group_alias_of(const df11_model* model, size_t group) {
  return df11::capi::group_ok(model, group) ? model->groups[group].alias_of : SIZE_MAX;
}

const char* df11_group_alias_name(const df11_model* model, size_t group) {
  if (!df11::capi::group_ok(model, group) || model->groups[group].alias_of == SIZE_MAX) {
    return nullptr;
  }
  return model->groups[group].alias_name.c_str();
}

size_t df11_group_member(const df11_model* model, size_t group, size_t k) {
  if (!df11::capi::group_ok(model, group) || k >= model->groups[group].members.size()) {
    return SIZE_MAX;
  }
  return model->groups[group].members[k];
}

df11_status df11_group_part_bytes(df11_model* model, size_t group, df11_group_part part,
                                  const void** data, size_t* bytes) {
  return on_model(model, [&](const df11::app::Df11Folder& f) -> Status {
    if (group >= model->groups.size()) {
      return df11::capi::out_of_range("group", group, model->groups.size());
    }
    if (data == nullptr || bytes == nullptr) {
      return Status(ErrorCode::kInvalidArgument, "df11_group_part_bytes: data or bytes is NULL");
    }
    const df11::GroupView& v = f.groups[group].view;
    // df11_group_part's numbering is spec 3.2's order of the six tensors.
    static constexpr std::span<const uint8_t> df11::GroupView::*kParts[] = {
        &df11::GroupView::luts,          &df11::GroupView::encoded_exponent,
        &df11::GroupView::sign_mantissa, &df11::GroupView::output_positions,
        &df11::GroupView::gaps,          &df11::GroupView::split_positions};
    const int index = df11::capi::c_enum_value(part);
    if (index < 0 || index >= 6) {
      return Status(ErrorCode::kInvalidArgument,
                    "df11_group_part_bytes: unknown part " + std::to_string(index));
    }
    const std::span<const uint8_t> s = v.*kParts[index];
    *data = s.data();
    *bytes = s.size();
    return Status::ok();
  });
}

df11_status df11_decode_tensor(df11_model* model, size_t tensor, void* out, size_t out_bytes) {
  return on_model(model, [&](const df11::app::Df11Folder& f) -> Status {
    if (tensor >= model->tensors.size()) {
      return df11::capi::out_of_range("tensor", tensor, model->tensors.size());
    }
    const df11_model::Tensor& t = model->tensors[tensor];
    const std::string what = f.describe(t.name, f.originals.at(t.name));
    DF11_RETURN_IF_ERROR(check_output(what, out, out_bytes, t.byte_size, t.raw == nullptr));
    auto* bytes = static_cast<uint8_t*>(out);
    if (t.raw != nullptr) {
      const df11::SafetensorsFile& shard = f.folder.shards[t.raw->shard];
      const std::span<const uint8_t> src = shard.tensor_bytes(f.folder.tensor(*t.raw));
      std::memcpy(bytes, src.data(), src.size());
    } else {
      DF11_ASSIGN_OR_RETURN(const df11::GroupInfo* info,
                            df11::capi::validated_group(*model, t.group));
      const df11::app::CodedGroup& cg = f.groups[t.group];
      DF11_RETURN_IF_ERROR(df11::decode_group(
          cg.view, std::span<uint16_t>(static_cast<uint16_t*>(out), t.byte_size / 2), cg.what,
          t.group_offset, info));
    }
    if (t.xxh3 == nullptr) return Status::ok();  // a published folder records no checksums
    return df11::capi::check_xxh3(std::span<const uint8_t>(bytes, out_bytes), *t.xxh3, what);
  });
}

namespace {

df11_status decode_whole_group(df11_model* model, size_t group, void* out, size_t out_bytes,
                               const df11::CpuTeam* team) {
  return on_model(model, [&](const df11::app::Df11Folder& f) -> Status {
    if (group >= model->groups.size()) {
      return df11::capi::out_of_range("group", group, model->groups.size());
    }
    const df11::app::CodedGroup& cg = f.groups[group];
    const uint64_t n = cg.view.n_elements();
    DF11_RETURN_IF_ERROR(check_output(cg.what, out, out_bytes, 2 * n, true));
    DF11_ASSIGN_OR_RETURN(const df11::GroupInfo* info, df11::capi::validated_group(*model, group));
    DF11_RETURN_IF_ERROR(df11::decode_group(
        cg.view, std::span<uint16_t>(static_cast<uint16_t*>(out), n), cg.what, 0, info, team));
    for (size_t tensor : model->groups[group].members) {
      const df11_model::Tensor& t = model->tensors[tensor];
      if (t.xxh3 == nullptr) continue;
      DF11_RETURN_IF_ERROR(df11::capi::check_xxh3(
          std::span<const uint8_t>(static_cast<const uint8_t*>(out) + 2 * t.group_offset,
                                   t.byte_size),
          *t.xxh3, cg.what + ": member '" + t.name + "'"));
    }
    return Status::ok();
  });
}

df11_status decode_range(df11_model* model, size_t group, uint64_t first, void* out,
                         size_t out_bytes, const df11::CpuTeam* team) {
  return on_model(model, [&](const df11::app::Df11Folder& f) -> Status {
    if (group >= model->groups.size()) {
      return df11::capi::out_of_range("group", group, model->groups.size());
    }
    const df11::app::CodedGroup& cg = f.groups[group];
    const uint64_t n = cg.view.n_elements();
    const uint64_t count = out_bytes / 2;
    if (out == nullptr || out_bytes % 2 != 0 || first > n || count > n - first) {
      return Status(ErrorCode::kInvalidArgument,
                    cg.what + ": weights " + std::to_string(first) + " .. " +
                        std::to_string(first + count) + (out == nullptr ? " into NULL" : "") +
                        (out_bytes % 2 != 0 ? " (an odd byte count)" : "") + " of " +
                        std::to_string(n));
    }
    DF11_RETURN_IF_ERROR(check_output(cg.what, out, out_bytes, out_bytes, true));
    DF11_ASSIGN_OR_RETURN(const df11::GroupInfo* info, df11::capi::validated_group(*model, group));
    return df11::decode_group(cg.view, std::span<uint16_t>(static_cast<uint16_t*>(out), count),
                              cg.what, first, info, team);
  });
}

df11::CpuTeam team_of(df11_team_run run, unsigned threads) {
  df11::CpuTeam team;
  team.run = run;
  team.threads = run == nullptr ? 1 : threads;
  return team;
}

}  // namespace

df11_status df11_decode_group(df11_model* model, size_t group, void* out, size_t out_bytes) {
  return decode_whole_group(model, group, out, out_bytes, nullptr);
}

df11_status df11_decode_group_range(df11_model* model, size_t group, uint64_t first, void* out,
                                    size_t out_bytes) {
  return decode_range(model, group, first, out, out_bytes, nullptr);
}

df11_status df11_decode_group_on(df11_model* model, size_t group, void* out, size_t out_bytes,
                                 df11_team_run run, unsigned threads) {
  const df11::CpuTeam team = team_of(run, threads);
  return decode_whole_group(model, group, out, out_bytes, &team);
}

df11_status df11_decode_group_range_on(df11_model* model, size_t group, uint64_t first, void* out,
                                       size_t out_bytes, df11_team_run run, unsigned threads) {
  const df11::CpuTeam team = team_of(run, threads);
  return decode_range(model, group, first, out, out_bytes, &team);
}

df11_status df11_group_check_stored(df11_model* model, size_t group) {
  return on_model(model, [&](const df11::app::Df11Folder&) -> Status {
    if (group >= model->groups.size()) {
      return df11::capi::out_of_range("group", group, model->groups.size());
    }
    const auto tensors = df11::capi::recorded_stored_tensors(*model, group);
    std::vector<uint64_t> digests;
    for (const auto& bytes : tensors) digests.push_back(df11::xxh3_64(bytes));
    return df11::capi::compare_stored_digests(*model, group, digests);
  });
}

}  // extern "C"
