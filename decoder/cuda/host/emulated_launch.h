// One group of a launch of the decode kernel, emulated on the host into a workspace record:
// for tests of the launch protocol (epochs, workspaces, status read-back) without a GPU.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "decode_core.h"
#include "df11/group.h"
#include "df11/status.h"

namespace df11::cuda::detail {

// Decodes `group` into `out` as decode_group_emulated() does and, if a block finds a problem,
// raises `workspace_record` with this launch's `epoch` as the kernel's atomicMax does. Returns
// only validation and allocation errors; a corrupt stream goes to the record.
Status emulate_group_launch(const GroupView& group, std::span<uint16_t> out,
                            const std::string& what, uint32_t epoch,
                            GroupStatusRecord& workspace_record);

}  // namespace df11::cuda::detail
