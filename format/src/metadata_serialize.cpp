// serialize_df11_metadata(): the writer's half of spec 5.3. Key order is fixed here (it is
// the order of spec 5.3's schema), so equal metadata always gives equal bytes.
#include <algorithm>

#include "df11/metadata.h"
#include "json_util.h"

namespace df11 {
namespace {

using Json = nlohmann::ordered_json;
using detail::append_member;

Json member_json(const MemberMeta& m) {
  Json j = Json::object();
  append_member(j, "name", m.name);
  append_member(j, "dtype", m.dtype);
  append_member(j, "shape", m.shape);
  append_member(j, "n_elements", m.n_elements);
  append_member(j, "xxh3", m.xxh3);
  if (!m.alias_of.empty()) append_member(j, "alias_of", m.alias_of);
  return j;
}

Json stored_json(const StoredChecksums& s) {
  Json j = Json::object();
  for (const GroupTensorSpec& t : kGroupTensors)
    append_member(j, std::string(t.name()), s.of(t.id));
  return j;
}

Json group_json(const GroupMeta& g) {
  Json members = Json::array();
  for (const MemberMeta& m : g.members) members.push_back(member_json(m));
  Json j = Json::object();
  append_member(j, "name", g.name);
  append_member(j, "n_elements", g.n_elements);
  append_member(j, "members", std::move(members));
  append_member(j, "stored", stored_json(g.stored));
  return j;
}

}  // namespace

Result<std::string> serialize_df11_metadata(const Df11Metadata& metadata) {
  try {
    Json groups = Json::array();
    for (const GroupMeta& g : metadata.groups) groups.push_back(group_json(g));

    std::vector<const RawTensorMeta*> raw;
    raw.reserve(metadata.tensors.size());
    for (const RawTensorMeta& t : metadata.tensors) raw.push_back(&t);
    std::stable_sort(raw.begin(), raw.end(), [](const RawTensorMeta* a, const RawTensorMeta* b) {
      return a->name < b->name;
    });
    Json tensors = Json::object();
    for (const RawTensorMeta* t : raw) {
      Json entry = Json::object();
      append_member(entry, "xxh3", t->xxh3);
      append_member(tensors, t->name, std::move(entry));
    }

    Json sources = Json::array();
    for (const SourceFile& s : metadata.sources) {
      Json j = Json::object();
      append_member(j, "file", s.file);
      append_member(j, "size", s.size);
      // spec 5.3 (1.2): optional for sources; left out when not recorded.
      if (!s.sha256.empty()) append_member(j, "sha256", s.sha256);
      append_member(j, "header", s.header);
      sources.push_back(std::move(j));
    }
    Json side_files = Json::array();
    for (const SideFile& s : metadata.side_files) {
      Json j = Json::object();
      append_member(j, "file", s.file);
      append_member(j, "size", s.size);
      append_member(j, "sha256", s.sha256);
      append_member(j, "content", s.content);
      side_files.push_back(std::move(j));
    }

    Json doc = Json::object();
    append_member(doc, "spec_version", metadata.spec_version);
    append_member(doc, "encoder", metadata.encoder);
    append_member(doc, "groups", std::move(groups));
    append_member(doc, "tensors", std::move(tensors));
    append_member(doc, "sources", std::move(sources));
    append_member(doc, "side_files", std::move(side_files));
    if (metadata.shards) append_member(doc, "shards", *metadata.shards);
    if (metadata.folder_files) {
      Json files = Json::array();
      for (const FolderFile& f : *metadata.folder_files) {
        Json j = Json::object();
        append_member(j, "file", f.file);
        append_member(j, "size", f.size);
        append_member(j, "sha256", f.sha256);
        files.push_back(std::move(j));
      }
      append_member(doc, "folder_files", std::move(files));
    }
    return doc.dump();
  } catch (const nlohmann::json::exception& e) {
    // dump() rejects strings that are not valid UTF-8.
    return Status(ErrorCode::kInvalidArgument,
                  std::string("cannot serialize df11 metadata: ") + e.what());
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit, "out of memory serializing df11 metadata");
  }
}

}  // namespace df11
