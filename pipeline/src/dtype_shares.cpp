#include "df11/dtype_shares.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "df11/byte_units.h"

namespace df11::app {

std::vector<DtypeShare> dtype_shares(const ModelFolder& folder) {
  std::vector<const SafetensorsHeader*> headers;
  for (const SafetensorsFile& shard : folder.shards) headers.push_back(&shard.header());
  return dtype_shares(headers);
}

std::vector<DtypeShare> dtype_shares(const std::vector<const SafetensorsHeader*>& headers) {
  std::map<Dtype, DtypeShare> by_dtype;
  for (const SafetensorsHeader* header : headers) {
    for (const TensorInfo& t : header->tensors) {
      DtypeShare& share = by_dtype[t.dtype];
      share.dtype = t.dtype;
      ++share.tensors;
      share.bytes += t.byte_size();
    }
  }
  std::vector<DtypeShare> shares;
  for (const auto& entry : by_dtype) shares.push_back(entry.second);
  std::stable_sort(shares.begin(), shares.end(),
                   [](const DtypeShare& a, const DtypeShare& b) { return a.bytes > b.bytes; });
  return shares;
}

std::string dtype_shares_text(const std::vector<DtypeShare>& shares) {
  uint64_t total = 0;
  for (const DtypeShare& s : shares) total += s.bytes;
  std::string text;
  for (const DtypeShare& s : shares) {
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.1f%%",
                  total ? 100.0 * static_cast<double>(s.bytes) / static_cast<double>(total) : 0.0);
    text += (text.empty() ? "" : ", ") + std::string(dtype_name(s.dtype)) + " " +
            format_bytes(s.bytes) + " (" + pct + ", " + std::to_string(s.tensors) +
            (s.tensors == 1 ? " tensor)" : " tensors)");
  }
  return text;
}

Status require_bf16_weights(const std::vector<const SafetensorsHeader*>& headers,
                            const std::string& where) {
  for (const SafetensorsHeader* header : headers) {
    for (const TensorInfo& t : header->tensors) {
      if (t.dtype == Dtype::kBF16 && t.shape.size() == 2 && t.n_elements > 0) return Status::ok();
    }
  }
  return Status(ErrorCode::kBadDtype,
                where + ": no BF16 weights to code: the tensors are " +
                    dtype_shares_text(dtype_shares(headers)) +
                    "; DF11 codes BF16 weights only, and converting F16 or F32 to BF16 would "
                    "not be lossless");
}

Status require_bf16_weights(const ModelFolder& folder) {
  std::vector<const SafetensorsHeader*> headers;
  for (const SafetensorsFile& shard : folder.shards) headers.push_back(&shard.header());
  return require_bf16_weights(headers, folder.dir.string());
}

}  // namespace df11::app
