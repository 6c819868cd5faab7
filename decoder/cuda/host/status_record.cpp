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
    default:
      return Status(ErrorCode::kInternal,
                    what + ": " + block + ": unknown problem code " +
                        str(record_problem(rec.key)));
  }
}

}  // namespace df11::cuda::detail
