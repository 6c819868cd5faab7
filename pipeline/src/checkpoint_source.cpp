#include "checkpoint_source.h"

namespace df11::app {

std::vector<TensorLocation> CheckpointSource::tensors_in_file_order() const {
  std::vector<TensorLocation> order;
  for (size_t s = 0; s < shard_count(); ++s) {
    // The format keeps each header's tensors sorted by data offset.
    for (size_t t = 0; t < header(s).tensors.size(); ++t) order.push_back({s, t});
  }
  return order;
}

}  // namespace df11::app
