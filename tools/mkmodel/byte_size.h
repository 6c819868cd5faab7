// Human byte sizes on the command line: "200MB", "1.5GB", "512MiB", "1000".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "df11/status.h"

namespace df11::mkmodel {

// Decimal units (KB, MB, GB, TB = powers of 1000, as Hugging Face's max_shard_size) and
// binary units (KiB, MiB, GiB, TiB), case-insensitive, optional "B", optional fraction.
// kInvalidArgument for anything else, zero, or values of 2^60 bytes and more.
Result<uint64_t> parse_byte_size(std::string_view text);

// "1.23 GB" style rendering (decimal units) for messages.
std::string format_byte_size(uint64_t bytes);

}  // namespace df11::mkmodel
