// parse_safetensors(): spec 6.3, rule by rule. Each check cites its rule number so that the
// spec's table of errors and this file can be read side by side.
#include <algorithm>
#include <numeric>
#include <string>

#include "df11/checked_math.h"
#include "df11/group.h"
#include "df11/safetensors.h"
#include "json_util.h"

namespace df11 {
namespace {

using detail::quote_name;
using nlohmann::json;

// spec 6.3 (Max_Header_Json_Depth): the header nests at most root object > tensor entry > shape
// array. One more level is allowed so that a nested array inside "shape" reports kBadShape, not
// kBadJson.
constexpr int kMaxHeaderJsonDepth = 4;

// A JSON number that is a non-negative integer ("-0" included, floats excluded).
bool get_non_negative_integer(const json& v, uint64_t* out) {
  if (v.is_number_unsigned()) {
    *out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer() && v.get<int64_t>() == 0) {
    *out = 0;
    return true;
  }
  return false;
}

std::string offsets_to_string(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

// spec 6.3 rules T1..T8: one tensor entry.
Status parse_tensor_entry(const std::string& name, const json& entry, uint64_t data_size,
                          const std::string& ctx, TensorInfo* t) {
  t->name = name;
  if (!entry.is_object()) return Status(ErrorCode::kBadJson, ctx + ": entry is not a JSON object");
  // T1: exactly the three known fields.
  for (const auto& [key, value] : entry.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      return Status(ErrorCode::kBadJson, ctx + ": unknown field " + quote_name(key));
    }
  }
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!entry.contains(field)) {
      return Status(ErrorCode::kBadJson, ctx + ": missing field '" + field + "'");
    }
  }
  // T2: a known dtype name.
  const json& dtype = entry["dtype"];
  if (!dtype.is_string()) return Status(ErrorCode::kBadDtype, ctx + ": dtype is not a string");
  const auto parsed_dtype = parse_dtype(dtype.get_ref<const std::string&>());
  if (!parsed_dtype) {
    return Status(ErrorCode::kBadDtype,
                  ctx + ": unknown dtype " + quote_name(dtype.get_ref<const std::string&>()));
  }
  t->dtype = *parsed_dtype;
  // T3: shape is an array of at most Max_Rank non-negative integers.
  const json& shape = entry["shape"];
  if (!shape.is_array()) return Status(ErrorCode::kBadShape, ctx + ": shape is not an array");
  if (shape.size() > kMaxRank) {
    return Status(ErrorCode::kBadShape, ctx + ": shape has " + std::to_string(shape.size()) +
                                            " dimensions, more than Max_Rank " +
                                            std::to_string(kMaxRank));
  }
  t->shape.resize(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!get_non_negative_integer(shape[i], &t->shape[i])) {
      return Status(ErrorCode::kBadShape, ctx + ": shape[" + std::to_string(i) + "] = " +
                                              shape[i].dump() + " is not a non-negative integer");
    }
  }
  // T4: data_offsets is [begin, end] of non-negative integers with begin <= end.
  const json& offsets = entry["data_offsets"];
  uint64_t begin = 0, end = 0;
  if (!offsets.is_array() || offsets.size() != 2 || !get_non_negative_integer(offsets[0], &begin) ||
      !get_non_negative_integer(offsets[1], &end)) {
    return Status(ErrorCode::kBadOffsets, ctx + ": data_offsets " + offsets.dump() +
                                              " is not a pair of non-negative integers");
  }
  if (end < begin) {
    return Status(ErrorCode::kBadOffsets,
                  ctx + ": data_offsets " + offsets_to_string(begin, end) + " end before begin");
  }
  t->data_offset_begin = begin;
  t->data_offset_end = end;
  // T5/T6: product(shape) * size must not overflow and must fill whole bytes.
  Result<uint64_t> bytes = tensor_byte_size(t->dtype, t->shape);
  if (!bytes) return bytes.status().with_context(ctx);
  (void)checked_product(t->shape, &t->n_elements);  // cannot fail: tensor_byte_size checked it
  // T7: the offsets hold exactly that many bytes.
  if (end - begin != *bytes) {
    return Status(ErrorCode::kBadShape,
                  ctx + ": dtype " + dtype_name(t->dtype) + " shape " + shape_to_string(t->shape) +
                      " needs " + std::to_string(*bytes) + " bytes but data_offsets " +
                      offsets_to_string(begin, end) + " hold " + std::to_string(end - begin));
  }
  // T8: inside the data buffer.
  if (end > data_size) {
    return Status(ErrorCode::kBadOffsets, ctx + ": data_offsets " + offsets_to_string(begin, end) +
                                              " run past the end of the data buffer (" +
                                              std::to_string(data_size) +
                                              " bytes; is the file truncated?)");
  }
  return Status::ok();
}

// spec 6.3 rule M1: __metadata__ is an object of string values.
Status parse_metadata(const json& value, const std::vector<std::string>& keys,
                      const std::string& file_name, MetadataEntries* out) {
  if (!value.is_object()) {
    return Status(ErrorCode::kBadJson, file_name + ": __metadata__ is not a JSON object");
  }
  out->reserve(keys.size());
  for (const std::string& key : keys) {
    const json& v = value[key];
    if (!v.is_string()) {
      return Status(ErrorCode::kBadJson, file_name + ": __metadata__ value of key " +
                                             quote_name(key) + " is not a string");
    }
    out->emplace_back(key, v.get<std::string>());
  }
  return Status::ok();
}

}  // namespace

const TensorInfo* SafetensorsHeader::find(std::string_view name) const {
  const auto it = index.find(std::string(name));
  return it == index.end() ? nullptr : &tensors[it->second];
}

const std::string* SafetensorsHeader::metadata_value(std::string_view key) const {
  for (const auto& [k, v] : metadata) {
    if (k == key) return &v;
  }
  return nullptr;
}

Result<SafetensorsHeader> parse_safetensors(std::span<const uint8_t> file_bytes,
                                            const std::string& file_name) {
  return parse_safetensors_header(file_bytes, file_bytes.size(), file_name);
}

Result<SafetensorsHeader> parse_safetensors_header(std::span<const uint8_t> prefix,
                                                   uint64_t file_size,
                                                   const std::string& file_name) {
  const std::string& f = file_name;
  if (prefix.size() > file_size) {
    return Status(ErrorCode::kInvalidArgument, f + ": " + std::to_string(prefix.size()) +
                                                   " header bytes given for a file of " +
                                                   std::to_string(file_size) + " bytes");
  }
  // H1: the 8-byte length prefix is present.
  if (file_size < kHeaderLengthBytes) {
    return Status(ErrorCode::kTruncated, f + ": file is " + std::to_string(file_size) +
                                             " bytes, shorter than the 8-byte header length");
  }
  if (prefix.size() < kHeaderLengthBytes) {
    return Status(ErrorCode::kTruncated, f + ": " + std::to_string(prefix.size()) +
                                             " bytes given, fewer than the 8-byte header length");
  }
  const uint64_t n = load_le64(prefix.data());
  // H2: N <= Max_Header_Bytes.
  if (n > kMaxHeaderBytes) {
    return Status(ErrorCode::kHeaderTooLarge, f + ": header length " + std::to_string(n) +
                                                  " exceeds Max_Header_Bytes " +
                                                  std::to_string(kMaxHeaderBytes));
  }
  // H3: the header fits in the file.
  if (n > file_size - kHeaderLengthBytes) {
    return Status(ErrorCode::kHeaderTooLarge,
                  f + ": header length " + std::to_string(n) + " exceeds the " +
                      std::to_string(file_size - kHeaderLengthBytes) +
                      " bytes after the length prefix (is the file truncated?)");
  }
  if (n > prefix.size() - kHeaderLengthBytes) {
    return Status(ErrorCode::kTruncated, f + ": header length " + std::to_string(n) + " but only " +
                                             std::to_string(prefix.size() - kHeaderLengthBytes) +
                                             " header bytes given");
  }
  const auto* text = reinterpret_cast<const char*>(prefix.data() + kHeaderLengthBytes);
  // H4: the header starts with '{' (the safetensors format says MUST).
  if (n == 0 || text[0] != '{') {
    return Status(ErrorCode::kBadJson, f + ": header does not start with '{'");
  }

  SafetensorsHeader h;
  try {
    h.file_name = f;
    h.file_size = file_size;
    h.data_start = kHeaderLengthBytes + n;
    h.data_size = file_size - h.data_start;

    // H5: UTF-8 JSON, one object, no duplicate keys (D1: tensor names unique; D2: keys
    // inside an entry or __metadata__ unique).
    detail::StrictJsonOptions opts;
    opts.what = f;
    opts.top_level_noun = "tensor name";
    opts.duplicate_top_level = ErrorCode::kDuplicateName;
    opts.max_depth = kMaxHeaderJsonDepth;
    opts.ordered_child = std::string(kMetadataKey);
    opts.duplicate_nested = ErrorCode::kBadJson;
    // H6 (early): Max_Tensors tensors plus __metadata__.
    opts.max_top_level_keys = kMaxTensors + 1;
    opts.max_top_level_keys_name = "Max_Tensors";
    DF11_ASSIGN_OR_RETURN(detail::StrictJson doc,
                          detail::parse_json_strict({text, static_cast<size_t>(n)}, opts));
    if (!doc.value.is_object()) {
      return Status(ErrorCode::kBadJson, f + ": header is not a JSON object");
    }
    h.header_text.assign(text, static_cast<size_t>(n));

    // H6: at most Max_Tensors tensors.
    const auto meta_it = doc.value.find(kMetadataKey);
    h.has_metadata = meta_it != doc.value.end();
    const uint64_t n_tensors = doc.top_level_keys.size() - (h.has_metadata ? 1 : 0);
    if (n_tensors > kMaxTensors) {
      return Status(ErrorCode::kResourceLimit, f + ": " + std::to_string(n_tensors) +
                                                   " tensors, more than Max_Tensors " +
                                                   std::to_string(kMaxTensors));
    }
    if (h.has_metadata) {
      DF11_RETURN_IF_ERROR(parse_metadata(*meta_it, doc.ordered_child_keys, f, &h.metadata));
    }

    std::vector<TensorInfo> in_document_order;
    in_document_order.reserve(n_tensors);
    for (const std::string& key : doc.top_level_keys) {
      if (key == kMetadataKey) continue;
      TensorInfo t;
      DF11_RETURN_IF_ERROR(parse_tensor_entry(key, doc.value[key], h.data_size,
                                              f + ": tensor " + quote_name(key), &t));
      t.file_offset = h.data_start + t.data_offset_begin;
      in_document_order.push_back(std::move(t));
    }

    // O1: sorted by offset, the tensors tile the data buffer exactly: the first starts at 0,
    // each starts where the previous ended, the last ends at the end of the file.
    std::vector<size_t> order(in_document_order.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const TensorInfo& x = in_document_order[a];
      const TensorInfo& y = in_document_order[b];
      if (x.data_offset_begin != y.data_offset_begin) {
        return x.data_offset_begin < y.data_offset_begin;
      }
      return x.data_offset_end < y.data_offset_end;
    });
    h.tensors.reserve(order.size());
    h.index.reserve(order.size());
    uint64_t expected = 0;
    for (size_t i : order) {
      TensorInfo& t = in_document_order[i];
      const std::string ctx = f + ": tensor " + quote_name(t.name);
      if (t.data_offset_begin < expected) {
        const TensorInfo& prev = h.tensors.back();
        return Status(ErrorCode::kBadOffsets,
                      ctx + ": data_offsets " +
                          offsets_to_string(t.data_offset_begin, t.data_offset_end) +
                          " overlap tensor " + quote_name(prev.name) + " at " +
                          offsets_to_string(prev.data_offset_begin, prev.data_offset_end));
      }
      if (t.data_offset_begin > expected) {
        return Status(ErrorCode::kBadOffsets,
                      ctx + ": data_offsets " +
                          offsets_to_string(t.data_offset_begin, t.data_offset_end) +
                          " leave a hole: data bytes [" + std::to_string(expected) + ", " +
                          std::to_string(t.data_offset_begin) + ") belong to no tensor");
      }
      expected = t.data_offset_end;
      h.index.emplace(t.name, h.tensors.size());
      h.tensors.push_back(std::move(t));
    }
    if (expected != h.data_size) {
      return Status(ErrorCode::kBadOffsets, f + ": data bytes [" + std::to_string(expected) + ", " +
                                                std::to_string(h.data_size) +
                                                ") after the last tensor belong to no tensor");
    }
  } catch (const nlohmann::json::exception& e) {
    return Status(ErrorCode::kBadJson, f + ": " + e.what());
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit, f + ": out of memory while reading the header");
  }
  return h;
}

}  // namespace df11
