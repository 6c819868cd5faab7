// --threads N: caps TBB's parallelism for the lifetime of the object (0 = all cores).
#pragma once

#include <tbb/global_control.h>

#include <memory>

namespace df11::app {

class ThreadLimit {
 public:
  explicit ThreadLimit(int threads) {
    if (threads > 0) {
      control_ = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                       static_cast<size_t>(threads));
    }
  }

 private:
  std::unique_ptr<tbb::global_control> control_;
};

}  // namespace df11::app
