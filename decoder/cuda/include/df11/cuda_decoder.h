// CUDA DF11 decoder: host API (compiles with the host compiler; no __global__ here).
//
// Minimum contract other modules rely on (the CUDA engineer extends this header with the
// batched, caller-allocated, caller-stream API: workspace query first, then launch, no hidden
// allocation or synchronisation).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "df11/group.h"
#include "df11/status.h"

namespace df11::cuda {

// True if a CUDA device can be used; otherwise false and, if `why` is given, the reason
// ("no CUDA device", driver error text, ...). Never aborts.
bool device_available(std::string* why = nullptr);

// Convenience for tools and tests: validates `group` on the host, copies it to the current
// device, decodes it there and copies n_elements BF16 patterns back into `out` (size must
// equal n_elements). Allocates and synchronises internally (unlike the batched API).
// Reports kCorruptData if the kernel detects an inconsistent stream. `what` names the group.
Status decode_group_to_host(const GroupView& group, std::span<uint16_t> out,
                            const std::string& what);

}  // namespace df11::cuda
