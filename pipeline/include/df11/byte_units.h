// Byte counts for people: "1.23 GB" (decimal units, as disk sizes are usually quoted).
#pragma once

#include <cstdint>
#include <string>

namespace df11::app {

std::string format_bytes(uint64_t bytes);

}  // namespace df11::app
