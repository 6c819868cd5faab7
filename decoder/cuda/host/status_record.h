// Reading back the per-group status records that the CUDA decode kernel (or its host
// emulation) writes when a block finds a problem (GroupStatusRecord, decode_core.h).
#pragma once

#include <string>

#include "decode_core.h"
#include "df11/status.h"

namespace df11::cuda::detail {

// Turns a status record written by the kernel (or the emulation) into a Status.
Status record_status(const GroupStatusRecord& rec, const std::string& what);

}  // namespace df11::cuda::detail
