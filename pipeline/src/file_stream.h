// Reading a byte range of a memory-mapped file in bounded steps: each step is handed to a
// sink, then its pages are dropped from the resident set and cancellation is checked,
// so that copying or hashing a tensor of any size keeps memory flat and stops promptly.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "df11/cancel.h"
#include "df11/file_io.h"
#include "df11/status.h"

namespace df11::app {

inline constexpr uint64_t kStreamStepBytes = 64ull << 20;

using ByteSink = std::function<Status(std::span<const uint8_t>)>;

// Feeds bytes [offset, offset + length) of `file` to `sink` in steps of `step_bytes` (> 0;
// callers streaming several files at once take smaller steps: each step is resident while
// the sink works on it). The caller has checked the range against the file size.
// Stops with kInterrupted between steps once `cancel` is cancelled.
Status stream_file_range(const MappedFile& file, uint64_t offset, uint64_t length,
                         const ByteSink& sink, const CancelToken& cancel,
                         uint64_t step_bytes = kStreamStepBytes);

}  // namespace df11::app
