// The zstd baseline of `df11 inspect --baseline zstd`: what a general-purpose compressor
// makes of the same BF16 bytes, at a fast and a strong level.
#pragma once

#include <cstdint>
#include <span>

#include "df11/inspect_report.h"
#include "df11/status.h"

namespace df11::app {

inline constexpr int kZstdFastLevel = 3;
inline constexpr int kZstdStrongLevel = 19;
// Level 19 runs at a few MB/s per core, so it sees a deterministic sample: the first
// kZstdStrongSampleBytes of each tensor (all of it when smaller). Level 3 sees every byte.
// On Gaussian BF16 weights the level-19 ratio of a 256 KiB sample is within 0.001 of that of
// a 1 MiB one, at a fifth of the time (0.04 s vs 0.21 s per tensor here): a 200-tensor model
// costs seconds, not minutes.
inline constexpr uint64_t kZstdStrongSampleBytes = uint64_t{256} << 10;

// Compressed size of `bytes` as one zstd frame at `level`, on the calling thread; the output
// goes through a fixed buffer and is discarded, so memory stays small for any input size.
Result<uint64_t> zstd_frame_size(std::span<const uint8_t> bytes, int level);

// Both levels on one tensor's bytes (level 19 on the sample).
Result<ZstdBaseline> zstd_baseline(std::span<const uint8_t> bytes);

}  // namespace df11::app
