// SafetensorsLayout and the convenience writers: spec 6.4.
#include <cstring>
#include <unordered_set>

#include "df11/checked_math.h"
#include "df11/group.h"
#include "df11/safetensors.h"
#include "json_util.h"

namespace df11 {

using detail::quote_name;

Status SafetensorsLayout::add_tensor(std::string name, Dtype dtype, std::vector<uint64_t> shape,
                                     uint64_t byte_size) {
  const std::string ctx = "tensor " + quote_name(name);
  if (name == kMetadataKey) {
    return Status(ErrorCode::kInvalidArgument, ctx + ": the name is reserved for the metadata map");
  }
  if (tensors_.size() >= kMaxTensors) {
    return Status(ErrorCode::kResourceLimit,
                  ctx + ": more than Max_Tensors " + std::to_string(kMaxTensors) + " tensors");
  }
  if (shape.size() > kMaxRank) {
    return Status(ErrorCode::kResourceLimit, ctx + ": shape has more than Max_Rank " +
                                                 std::to_string(kMaxRank) + " dimensions");
  }
  DF11_ASSIGN_OR_RETURN(uint64_t expected, [&]() -> Result<uint64_t> {
    Result<uint64_t> r = tensor_byte_size(dtype, shape);
    if (!r) return r.status().with_context(ctx);
    return r;
  }());
  if (expected != byte_size) {
    return Status(ErrorCode::kInvalidArgument, ctx + ": " + std::to_string(byte_size) +
                                                   " bytes given, but dtype " + dtype_name(dtype) +
                                                   " shape " + shape_to_string(shape) + " needs " +
                                                   std::to_string(expected));
  }
  if (!names_.emplace(name, tensors_.size()).second) {
    return Status(ErrorCode::kDuplicateName, ctx + ": added twice");
  }
  tensors_.push_back(Entry{std::move(name), dtype, std::move(shape), byte_size});
  return Status::ok();
}

Status SafetensorsLayout::set_metadata(MetadataEntries metadata) {
  std::unordered_set<std::string> seen;
  for (const auto& [key, value] : metadata) {
    if (!seen.insert(key).second) {
      return Status(ErrorCode::kDuplicateName,
                    "__metadata__ key " + quote_name(key) + " given twice");
    }
  }
  has_metadata_ = true;
  metadata_ = std::move(metadata);
  return Status::ok();
}

Result<FinalizedLayout> SafetensorsLayout::finalize() const {
  FinalizedLayout out;
  std::string text;
  try {
    // ordered_json keeps insertion order; names are already known unique (add_tensor).
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (has_metadata_) {
      nlohmann::ordered_json meta = nlohmann::ordered_json::object();
      for (const auto& [key, value] : metadata_) detail::append_member(meta, key, value);
      detail::append_member(header, std::string(kMetadataKey), std::move(meta));
    }
    out.tensor_offsets.reserve(tensors_.size());
    uint64_t offset = 0;
    for (const Entry& e : tensors_) {
      uint64_t end = 0;
      if (!checked_add(offset, e.byte_size, &end)) {
        return Status(ErrorCode::kOverflow,
                      "tensor " + quote_name(e.name) + ": data offsets overflow 64 bits");
      }
      nlohmann::ordered_json entry = nlohmann::ordered_json::object();
      detail::append_member(entry, "dtype", dtype_name(e.dtype));
      detail::append_member(entry, "shape", e.shape);
      detail::append_member(entry, "data_offsets", nlohmann::ordered_json::array({offset, end}));
      detail::append_member(header, e.name, std::move(entry));
      out.tensor_offsets.push_back(offset);
      offset = end;
    }
    text = header.dump();
    // spec 6.4: pad with spaces so that the data starts 8-byte aligned.
    text.append((kHeaderAlignment - text.size() % kHeaderAlignment) % kHeaderAlignment, ' ');
    if (text.size() > kMaxHeaderBytes) {
      return Status(ErrorCode::kHeaderTooLarge, "header would be " + std::to_string(text.size()) +
                                                    " bytes, more than Max_Header_Bytes " +
                                                    std::to_string(kMaxHeaderBytes));
    }
    out.data_start = kHeaderLengthBytes + text.size();
    if (!checked_add(out.data_start, offset, &out.file_size)) {
      return Status(ErrorCode::kOverflow, "file size overflows 64 bits");
    }
    for (uint64_t& o : out.tensor_offsets) o += out.data_start;
    out.prefix.resize(out.data_start);
    store_le64(out.prefix.data(), text.size());
    std::memcpy(out.prefix.data() + kHeaderLengthBytes, text.data(), text.size());
  } catch (const nlohmann::json::exception& e) {
    // dump() throws on strings that are not valid UTF-8.
    return Status(ErrorCode::kInvalidArgument, std::string("cannot serialize header: ") + e.what());
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit, "out of memory while serializing a header");
  }
  return out;
}

namespace {

Result<FinalizedLayout> layout_for(std::span<const TensorData> tensors,
                                   const MetadataEntries* metadata) {
  SafetensorsLayout layout;
  for (const TensorData& t : tensors) {
    DF11_RETURN_IF_ERROR(layout.add_tensor(t.name, t.dtype, t.shape, t.bytes.size()));
  }
  if (metadata != nullptr) DF11_RETURN_IF_ERROR(layout.set_metadata(*metadata));
  return layout.finalize();
}

}  // namespace

Result<std::vector<uint8_t>> serialize_safetensors(std::span<const TensorData> tensors,
                                                   const MetadataEntries* metadata) {
  DF11_ASSIGN_OR_RETURN(FinalizedLayout layout, layout_for(tensors, metadata));
  std::vector<uint8_t> out;
  try {
    out = std::move(layout.prefix);
    out.resize(static_cast<size_t>(layout.file_size));
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit,
                  "out of memory for a " + std::to_string(layout.file_size) + "-byte file");
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].bytes.empty()) {
      std::memcpy(out.data() + layout.tensor_offsets[i], tensors[i].bytes.data(),
                  tensors[i].bytes.size());
    }
  }
  return out;
}

Status write_safetensors(const std::string& path, std::span<const TensorData> tensors,
                         const MetadataEntries* metadata) {
  Result<FinalizedLayout> layout = layout_for(tensors, metadata);
  if (!layout) return layout.status().with_context(path);
  DF11_ASSIGN_OR_RETURN(OutputFile out, OutputFile::create(path));
  DF11_RETURN_IF_ERROR(out.preallocate(layout->file_size));
  DF11_RETURN_IF_ERROR(out.pwrite_all(0, layout->prefix));
  for (size_t i = 0; i < tensors.size(); ++i) {
    DF11_RETURN_IF_ERROR(out.pwrite_all(layout->tensor_offsets[i], tensors[i].bytes));
  }
  return out.commit();
}

}  // namespace df11
