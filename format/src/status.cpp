#include "df11/status.h"

namespace df11 {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kIo:
      return "io";
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kHeaderTooLarge:
      return "header_too_large";
    case ErrorCode::kTruncated:
      return "truncated";
    case ErrorCode::kBadJson:
      return "bad_json";
    case ErrorCode::kBadDtype:
      return "bad_dtype";
    case ErrorCode::kBadShape:
      return "bad_shape";
    case ErrorCode::kBadOffsets:
      return "bad_offsets";
    case ErrorCode::kDuplicateName:
      return "duplicate_name";
    case ErrorCode::kOverflow:
      return "overflow";
    case ErrorCode::kBadMetadata:
      return "bad_metadata";
    case ErrorCode::kBadGroup:
      return "bad_group";
    case ErrorCode::kBadLut:
      return "bad_lut";
    case ErrorCode::kBadGap:
      return "bad_gap";
    case ErrorCode::kBadOutputPositions:
      return "bad_output_positions";
    case ErrorCode::kCorruptData:
      return "corrupt_data";
    case ErrorCode::kUncodable:
      return "uncodable";
    case ErrorCode::kResourceLimit:
      return "resource_limit";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kExists:
      return "exists";
    case ErrorCode::kCuda:
      return "cuda";
    case ErrorCode::kInterrupted:
      return "interrupted";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kMismatch:
      return "mismatch";
    case ErrorCode::kInternal:
      return "internal";
    case ErrorCode::kBadConfig:
      return "bad_config";
  }
  return "unknown";
}

ErrorClass error_class(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return ErrorClass::kNone;
    case ErrorCode::kInterrupted:
      return ErrorClass::kCancelled;
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kExists:
      return ErrorClass::kUsage;
    // The data itself is wrong: a container or group that does not validate, a checksum or
    // comparison that fails.
    case ErrorCode::kHeaderTooLarge:
    case ErrorCode::kTruncated:
    case ErrorCode::kBadJson:
    case ErrorCode::kBadDtype:
    case ErrorCode::kBadShape:
    case ErrorCode::kBadOffsets:
    case ErrorCode::kDuplicateName:
    case ErrorCode::kOverflow:
    case ErrorCode::kBadMetadata:
    case ErrorCode::kBadGroup:
    case ErrorCode::kBadLut:
    case ErrorCode::kBadGap:
    case ErrorCode::kBadOutputPositions:
    case ErrorCode::kCorruptData:
    case ErrorCode::kMismatch:
    case ErrorCode::kBadConfig:
      return ErrorClass::kData;
    case ErrorCode::kIo:
    case ErrorCode::kUncodable:
    case ErrorCode::kResourceLimit:
    case ErrorCode::kNotFound:
    case ErrorCode::kCuda:
    case ErrorCode::kUnsupported:
    case ErrorCode::kInternal:
      return ErrorClass::kEnvironment;
  }
  return ErrorClass::kEnvironment;
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
