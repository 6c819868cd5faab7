#include "df11/status.h"

namespace df11 {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kIo: return "io";
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kHeaderTooLarge: return "header_too_large";
    case ErrorCode::kTruncated: return "truncated";
    case ErrorCode::kBadJson: return "bad_json";
    case ErrorCode::kBadDtype: return "bad_dtype";
    case ErrorCode::kBadShape: return "bad_shape";
    case ErrorCode::kBadOffsets: return "bad_offsets";
    case ErrorCode::kDuplicateName: return "duplicate_name";
    case ErrorCode::kOverflow: return "overflow";
    case ErrorCode::kBadMetadata: return "bad_metadata";
    case ErrorCode::kBadGroup: return "bad_group";
    case ErrorCode::kBadLut: return "bad_lut";
    case ErrorCode::kBadGap: return "bad_gap";
    case ErrorCode::kBadOutputPositions: return "bad_output_positions";
    case ErrorCode::kCorruptData: return "corrupt_data";
    case ErrorCode::kUncodable: return "uncodable";
    case ErrorCode::kResourceLimit: return "resource_limit";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kExists: return "exists";
    case ErrorCode::kCuda: return "cuda";
    case ErrorCode::kInterrupted: return "interrupted";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kMismatch: return "mismatch";
    case ErrorCode::kInternal: return "internal";
    case ErrorCode::kBadConfig: return "bad_config";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return std::string(error_code_name(code_)) + ": " + message_;
}

Status Status::with_context(const std::string& context) const {
  if (is_ok()) return *this;
  return Status(code_, context + ": " + message_);
}

}  // namespace df11
