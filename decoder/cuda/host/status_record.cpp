// Status records of the decode kernel as df11::Status (status_record.h).
#include "status_record.h"

#include <cstdint>
#include <string>

namespace df11::cuda::detail {
namespace {

std::string str(uint64_t v) { return std::to_string(v); }

}  // namespace

Status record_status(const GroupStatusRecord& rec, const std::string& what) {
  const std::string block = "block " + str(record_block(rec.key));
  switch (record_problem(rec.key)) {
    case kProblemCount:
      return Status(ErrorCode::kBadOutputPositions,
                    what + ": " + block + ": decoded " + str(rec.detail) +
                        " codes, which does not match output_positions");
    case kProblemBoundary:
      return Status(ErrorCode::kBadGap,
                    what + ": " + block + ": window " + str(rec.detail) +
                        ": its codes do not end where the next window's gap says");
    case kProblemUnusable:
      return Status(ErrorCode::kCorruptData,
                    what + ": " + block + ": window " + str(rec.detail) +
                        ": a code reaches a lookup-table entry no valid code uses");
    case kProblemStreamEnd:
      return Status(ErrorCode::kCorruptData,
                    what + ": " + block +
                        ": the group's last code does not end in the last byte of "
                        "encoded_exponent (only the last byte may hold padding)");
    case kProblemFirstGap:
      return Status(ErrorCode::kBadGap, what + ": gaps field 0 = " + str(rec.detail) +
                                            ", but the stream's first code starts at bit 0");
    case kProblemTooMany:
      return Status(ErrorCode::kBadOutputPositions,
                    what + ": " + block + ": holds " + str(rec.detail) +
                        " weights on the device, more than the plan was made for (device "
                        "copy differs from the validated host copy?)");
    case kProblemRowId:
      return Status(ErrorCode::kInvalidArgument,
                    what + ": rows decode: ids[" + str(rec.detail) +
                        "] is not a row of the group (negative or past its last row)");
    default:
      return Status(ErrorCode::kInternal,
                    what + ": " + block + ": unknown problem code " + str(record_problem(rec.key)));
  }
}

Status group_record_status(const GroupStatusRecord& rec, uint32_t epoch, const std::string& what) {
  if (epoch == 0 || record_epoch(rec.key) != epoch) return Status::ok();
  return record_status(rec, what);
}

Status workspace_status(std::span<const GroupStatusRecord> records, uint32_t epoch,
                        const std::vector<std::string>& names) {
  for (size_t i = 0; i < records.size() && i < names.size(); ++i) {
    DF11_RETURN_IF_ERROR(group_record_status(records[i], epoch, names[i]));
  }
  return Status::ok();
}

void raise_record(GroupStatusRecord& rec, unsigned long long key, uint32_t detail) {
  if (key > rec.key) {
    rec.key = key;
    rec.detail = detail;
  }
}

}  // namespace df11::cuda::detail
