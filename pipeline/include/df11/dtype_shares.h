// How a checkpoint's tensor bytes divide among dtypes: inspect reports it, and compress
// refuses a checkpoint without BF16 weights (DF11 codes BF16 only; converting F16 or F32 to
// BF16 would not be lossless).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "df11/dtype.h"
#include "df11/model_folder.h"
#include "df11/status.h"

namespace df11::app {

struct DtypeShare {
  Dtype dtype = Dtype::kU8;
  uint64_t tensors = 0;
  uint64_t bytes = 0;
};

// Every dtype of the folder's tensors, most bytes first (ties: dtype order).
std::vector<DtypeShare> dtype_shares(const ModelFolder& folder);
// The same over parsed headers (a remote repo's).
std::vector<DtypeShare> dtype_shares(const std::vector<const SafetensorsHeader*>& headers);

// "F16 1.20 GB (99.9%, 291 tensors), F32 1.10 MB (0.1%, 2 tensors)".
std::string dtype_shares_text(const std::vector<DtypeShare>& shares);

// kBadDtype "<dir>: no BF16 weights to code: ..." naming the dtypes found, when the folder
// has no non-empty 2-D BF16 tensor.
Status require_bf16_weights(const ModelFolder& folder);
// The same over parsed headers (a checkpoint in memory); `where` begins the message.
Status require_bf16_weights(const std::vector<const SafetensorsHeader*>& headers,
                            const std::string& where);

}  // namespace df11::app
