// Reading back the per-group status records that the CUDA decode kernel (or its host
// emulation) writes when a block finds a problem (GroupStatusRecord, decode_core.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "decode_core.h"
#include "df11/status.h"

namespace df11::cuda::detail {

// Turns a status record written by the kernel (or the emulation) into a Status.
Status record_status(const GroupStatusRecord& rec, const std::string& what);

// Group i's result in records written by the launch with epoch `epoch`: OK unless that launch
// wrote the record (records of other launches carry other epochs).
Status group_record_status(const GroupStatusRecord& rec, uint32_t epoch, const std::string& what);

// The first group (in plan order) whose record the launch `epoch` wrote, as a Status; OK if
// none did. names[i] names group i.
Status workspace_status(std::span<const GroupStatusRecord> records, uint32_t epoch,
                        const std::vector<std::string>& names);

// What the host does for a block's report on the device (atomicMax on the key), for the
// kernel's emulation.
void raise_record(GroupStatusRecord& rec, unsigned long long key, uint32_t detail);

// The header of a host copy of a workspace (copy_decode_status): which launch of which plan
// the records that follow it belong to.
struct StatusCopyHeader {
  uint32_t magic = 0;    // kStatusCopyMagic once filled
  uint32_t epoch = 0;    // the launch whose records were copied
  uint64_t plan_id = 0;  // DecodePlan's process-unique id
};
inline constexpr uint32_t kStatusCopyMagic = 0x53313144;  // "D11S" little-endian
static_assert(sizeof(StatusCopyHeader) == 16 && sizeof(GroupStatusRecord) == 16);

// Bytes of a host copy for n groups.
inline size_t status_copy_bytes(size_t n_groups) {
  return sizeof(StatusCopyHeader) + n_groups * sizeof(GroupStatusRecord);
}

}  // namespace df11::cuda::detail
