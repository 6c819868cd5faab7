// verify --against: compares the tensors a DF11 folder rebuilds with the same-named tensors
// of the original folder, bit for bit (raw uint16 patterns for BF16: NaN payloads, -0,
// subnormals all count), piece by piece as they are produced.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "df11/dtype.h"
#include "df11/model_folder.h"

namespace df11::app {

class TensorComparer {
 public:
  explicit TensorComparer(const ModelFolder& original) : original_(original) {}

  // Starts comparing tensor `name`. kMismatch if the original has no such tensor or it has
  // another dtype or shape (nothing is compared then).
  Status begin(const std::string& name, Dtype dtype, const std::vector<uint64_t>& shape);
  // The next bytes of the current tensor.
  void piece(std::span<const uint8_t> bytes);
  // kMismatch naming the tensor, the count of differing elements and the first one.
  Status end();

  // Tensors of the original folder never passed to begin() (of this comparer, or of those
  // merged into it): missing from the DF11 folder.
  std::vector<std::string> not_compared() const;
  // Counts what `other` compared as compared here (comparers of parallel workers).
  void merge_seen(const TensorComparer& other) {
    seen_.insert(other.seen_.begin(), other.seen_.end());
    layouts_differing_ += other.layouts_differing_;
    layouts_matching_ += other.layouts_matching_;
  }

  // When most tensors begun differ in name, dtype or shape from the original's (the folders
  // hold different models, not a damaged copy): one line saying so, naming `here` (the
  // folder compared) and the original; empty otherwise.
  std::string different_models(const std::string& here) const;

 private:
  const ModelFolder& original_;
  std::unordered_set<std::string> seen_;
  uint64_t layouts_differing_ = 0;  // begin() refused: no such tensor, another dtype or shape
  uint64_t layouts_matching_ = 0;
  const TensorInfo* current_ = nullptr;
  const SafetensorsFile* file_ = nullptr;
  std::string name_;
  uint64_t offset_ = 0;       // bytes of the current tensor compared so far
  uint64_t differing_ = 0;    // elements that differ
  uint64_t first_diff_ = 0;   // element index of the first difference
  std::string first_detail_;  // "0x3f80 (original) vs 0x3f81"
};

}  // namespace df11::app
