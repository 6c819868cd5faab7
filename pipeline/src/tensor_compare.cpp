#include "tensor_compare.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "df11/count_text.h"

namespace df11::app {
namespace {

std::string hex_bytes(const uint8_t* p, uint32_t n) {
  // Little-endian element value, most significant digit first.
  std::string text = "0x";
  char digits[3];
  for (uint32_t i = n; i-- > 0;) {
    std::snprintf(digits, sizeof digits, "%02x", p[i]);
    text += digits;
  }
  return text;
}

}  // namespace

Status TensorComparer::begin(const std::string& name, Dtype dtype,
                             const std::vector<uint64_t>& shape) {
  current_ = nullptr;
  name_ = name;
  offset_ = 0;
  differing_ = 0;
  first_detail_.clear();
  const auto it = original_.tensors.find(name);
  if (it == original_.tensors.end()) {
    ++layouts_differing_;
    return Status(ErrorCode::kMismatch, "tensor '" + name + "': not in " + original_.dir.string());
  }
  seen_.insert(name);
  const TensorInfo& t = original_.tensor(it->second);
  if (t.dtype != dtype || t.shape != shape) {
    ++layouts_differing_;
    return Status(ErrorCode::kMismatch, "tensor '" + name + "': " + dtype_name(dtype) + " " +
                                            shape_to_string(shape) + " here, " +
                                            dtype_name(t.dtype) + " " + shape_to_string(t.shape) +
                                            " in " + original_.shard_names[it->second.shard]);
  }
  ++layouts_matching_;
  current_ = &t;
  file_ = &original_.shards[it->second.shard];
  return Status::ok();
}

void TensorComparer::piece(std::span<const uint8_t> bytes) {
  if (current_ == nullptr) return;
  const uint64_t available = current_->byte_size() - std::min(offset_, current_->byte_size());
  const uint64_t n = std::min<uint64_t>(bytes.size(), available);
  const uint8_t* original = file_->bytes().data() + current_->file_offset + offset_;
  if (std::memcmp(original, bytes.data(), n) != 0) {
    // Element granularity for messages; sub-byte dtypes count bytes.
    const uint32_t width = std::max<uint32_t>(1, dtype_bits(current_->dtype) / 8);
    for (uint64_t i = 0; i + width <= n; i += width) {
      if (std::memcmp(original + i, bytes.data() + i, width) == 0) continue;
      if (differing_++ == 0) {
        first_diff_ = (offset_ + i) / width;
        first_detail_ = hex_bytes(original + i, width) + " in the original, " +
                        hex_bytes(bytes.data() + i, width) + " rebuilt";
      }
    }
  }
  file_->mapped().advise_dontneed(current_->file_offset + offset_, n);
  offset_ += bytes.size();
}

Status TensorComparer::end() {
  if (current_ == nullptr) return Status::ok();
  const TensorInfo& t = *current_;
  current_ = nullptr;
  file_->release(t);  // including fault-around pages the per-piece releases left
  if (offset_ != t.byte_size()) {
    return Status(ErrorCode::kMismatch, "tensor '" + name_ + "': rebuilt " +
                                            std::to_string(offset_) + " bytes, the original has " +
                                            std::to_string(t.byte_size()));
  }
  if (differing_ == 0) return Status::ok();
  const uint32_t width = std::max<uint32_t>(1, dtype_bits(t.dtype) / 8);
  return Status(ErrorCode::kMismatch, "tensor '" + name_ + "': " + std::to_string(differing_) +
                                          " of " + std::to_string(t.byte_size() / width) +
                                          " elements differ from the original; first at element " +
                                          std::to_string(first_diff_) + ": " + first_detail_);
}

std::vector<std::string> TensorComparer::not_compared() const {
  std::vector<std::string> missing;
  for (const auto& [name, at] : original_.tensors) {
    if (seen_.count(name) == 0) missing.push_back(name);
  }
  std::sort(missing.begin(), missing.end());
  return missing;
}

std::string TensorComparer::different_models(const std::string& here) const {
  const uint64_t begun = layouts_differing_ + layouts_matching_;
  const size_t missing = not_compared().size();
  // A few differing tensors are a damaged or edited copy; most, another model.
  if (begun == 0 || 2 * layouts_differing_ <= begun) return "";
  return here + " and " + original_.dir.string() +
         " hold different models: " + std::to_string(layouts_differing_) + " of " +
         count_of(begun, "tensor") + " differ in name, dtype or shape" +
         (missing != 0 ? ", and " + count_of(missing, "tensor") + " of " + original_.dir.string() +
                             " are not in " + here
                       : std::string()) +
         " (is --against the model this folder was compressed from?)";
}

}  // namespace df11::app
