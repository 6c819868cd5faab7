// Small checkpoints on disk for the tools' tests (df11 inspect): BF16 folders written with the
// format's safetensors writer, and DF11 files built from encode_group() output, with or
// without df11 metadata. Header-only: tests/common/*.cpp compile into every test binary.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "df11/encoder.h"
#include "df11/file_io.h"
#include "df11/hash.h"
#include "df11/metadata.h"
#include "df11/safetensors.h"

namespace df11::test {

// Round-to-nearest-even float -> BF16 bits (finite inputs).
inline uint16_t tools_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// n BF16 weights ~ N(0, std) (Box-Muller on a 64-bit LCG: deterministic for a seed).
inline std::vector<uint16_t> gaussian_bf16(uint64_t n, float std, uint64_t seed) {
  std::vector<uint16_t> out(n);
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  const auto uniform = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (static_cast<double>(state >> 11) + 0.5) * 0x1.0p-53;
  };
  for (uint64_t i = 0; i < n; i += 2) {
    const double r = std::sqrt(-2.0 * std::log(uniform()));
    const double a = 6.283185307179586 * uniform();
    out[i] = tools_bf16(static_cast<float>(std * r * std::cos(a)));
    if (i + 1 < n) out[i + 1] = tools_bf16(static_cast<float>(std * r * std::sin(a)));
  }
  return out;
}

struct ToolsTensor {
  std::string name;
  Dtype dtype = Dtype::kBF16;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> bytes;  // little-endian data
};

inline ToolsTensor bf16_tensor(std::string name, std::vector<uint64_t> shape,
                               const std::vector<uint16_t>& weights) {
  ToolsTensor t{std::move(name), Dtype::kBF16, std::move(shape), {}};
  t.bytes.resize(2 * weights.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    t.bytes[2 * i] = static_cast<uint8_t>(weights[i]);
    t.bytes[2 * i + 1] = static_cast<uint8_t>(weights[i] >> 8);
  }
  return t;
}

inline std::vector<uint16_t> bf16_weights(const ToolsTensor& t) {
  std::vector<uint16_t> w(t.bytes.size() / 2);
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = static_cast<uint16_t>(t.bytes[2 * i] | (t.bytes[2 * i + 1] << 8));
  }
  return w;
}

// Writes a safetensors file with __metadata__ {"format": "pt"} (or `metadata`).
inline void write_tools_safetensors(const std::string& path,
                                    const std::vector<ToolsTensor>& tensors,
                                    const MetadataEntries& metadata = {{"format", "pt"}}) {
  std::vector<TensorData> data;
  for (const ToolsTensor& t : tensors) data.push_back({t.name, t.dtype, t.shape, t.bytes});
  const Status s = write_safetensors(path, data, &metadata);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
}

// One coded group for a DF11 file: module path and member tensors (in stream order).
struct ToolsGroup {
  std::string name;
  std::vector<ToolsTensor> members;
};

struct EncodedToolsGroup {
  GroupBuffers buffers;
  GroupPlan plan;
};

inline EncodedToolsGroup encode_tools_group(const ToolsGroup& g) {
  std::vector<std::vector<uint16_t>> weights;
  for (const ToolsTensor& m : g.members) weights.push_back(bf16_weights(m));
  std::vector<std::span<const uint16_t>> spans(weights.begin(), weights.end());
  EncodedToolsGroup out;
  auto buffers = encode_group(spans, &out.plan);
  EXPECT_TRUE(buffers.is_ok()) << buffers.status().to_string();
  if (buffers) out.buffers = std::move(buffers).value();
  return out;
}

// A DF11 shard: each group's six tensors plus `raw` tensors unchanged; with `with_metadata`,
// the "df11" __metadata__ document (groups, members with checksums, raw tensors).
inline void write_df11_file(const std::string& path, const std::vector<ToolsGroup>& groups,
                            const std::vector<ToolsTensor>& raw, bool with_metadata) {
  std::vector<ToolsTensor> tensors;
  Df11Metadata md;
  md.encoder = "df11 tests";
  for (const ToolsGroup& g : groups) {
    const EncodedToolsGroup e = encode_tools_group(g);
    const GroupBuffers& b = e.buffers;
    const auto u8 = [&](const char* suffix, const std::vector<uint8_t>& bytes,
                        std::vector<uint64_t> shape) {
      tensors.push_back({g.name + suffix, Dtype::kU8, std::move(shape), bytes});
    };
    u8(".luts", b.luts, {b.luts.size() / 256, 256});
    u8(".encoded_exponent", b.encoded_exponent, {b.encoded_exponent.size()});
    u8(".sign_mantissa", b.sign_mantissa, {b.sign_mantissa.size()});
    u8(".output_positions", b.output_positions, {b.output_positions.size()});
    u8(".gaps", b.gaps, {b.gaps.size()});
    tensors.push_back({g.name + ".split_positions",
                       Dtype::kI64,
                       {b.split_positions.size() / 8},
                       b.split_positions});
    GroupMeta gm;
    gm.name = g.name;
    for (const ToolsTensor& m : g.members) {
      MemberMeta mm;
      mm.name = m.name;
      mm.shape = m.shape;
      mm.n_elements = m.bytes.size() / 2;
      mm.xxh3 = xxh3_hex(m.bytes);
      gm.n_elements += mm.n_elements;
      gm.members.push_back(mm);
    }
    gm.stored = {xxh3_hex(b.luts),          xxh3_hex(b.encoded_exponent),
                 xxh3_hex(b.sign_mantissa), xxh3_hex(b.output_positions),
                 xxh3_hex(b.gaps),          xxh3_hex(b.split_positions)};
    md.groups.push_back(gm);
  }
  for (const ToolsTensor& t : raw) {
    tensors.push_back(t);
    md.tensors.push_back({t.name, xxh3_hex(t.bytes)});
  }
  std::sort(md.tensors.begin(), md.tensors.end(),
            [](const RawTensorMeta& a, const RawTensorMeta& b) { return a.name < b.name; });
  MetadataEntries entries = {{"format", "pt"}};
  if (with_metadata) {
    auto text = serialize_df11_metadata(md);
    ASSERT_TRUE(text.is_ok()) << text.status().to_string();
    entries.push_back({std::string(kDf11MetadataKey), *text});
  }
  write_tools_safetensors(path, tensors, entries);
}

}  // namespace df11::test
