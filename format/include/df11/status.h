// df11::Status and df11::Result<T>: how every fallible df11 call reports failure.
//
// No df11 API throws across its boundary. A Status carries a frozen ErrorCode and a message
// that says where and what ("model-00002.safetensors: tensor 'x.gaps': field 1041 ...").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace df11 {

// Frozen numbers: append new codes at the end, never renumber (they are exit codes' reasons,
// printed by the CLI and matched by tests and vectors).
enum class ErrorCode : int {
  kOk = 0,
  kIo = 1,                   // open/read/write/rename failed (errno text in the message)
  kInvalidArgument = 2,      // a caller's argument is unusable (API misuse, bad CLI option)
  kHeaderTooLarge = 3,       // safetensors header length beyond kMaxHeaderBytes or the file
  kTruncated = 4,            // file or buffer shorter than its structure says
  kBadJson = 5,              // header or metadata is not valid JSON / wrong JSON types
  kBadDtype = 6,             // unknown dtype, or wrong dtype for a DF11 member
  kBadShape = 7,             // shape inconsistent with byte size or element count
  kBadOffsets = 8,           // data offsets overlap, leave holes or fall out of bounds
  kDuplicateName = 9,        // a tensor name appears twice
  kOverflow = 10,            // arithmetic on untrusted sizes would overflow
  kBadMetadata = 11,         // df11 metadata (the "df11" key) is missing fields or inconsistent
  kBadGroup = 12,            // a DF11 group's tensors are missing or inconsistent in size
  kBadLut = 13,              // lookup table: pointer to a missing row, code length 0 or > 32
  kBadGap = 14,              // a gap field does not point at a code boundary
  kBadOutputPositions = 15,  // output positions not monotonic / not ending at n
  kCorruptData = 16,         // checksum mismatch or a stream that does not decode as declared
  kUncodable = 17,           // input the DF11 code cannot represent (exponent >= 240, ...)
  kResourceLimit = 18,       // input asks for more memory/groups/time than allowed
  kNotFound = 19,            // file, tensor or group does not exist
  kExists = 20,              // an output exists and replacing it was not asked for
  kCuda = 21,                // CUDA runtime error
  kInterrupted = 22,         // the caller cancelled the operation
  kUnsupported = 23,         // valid but not supported by this build (e.g. no CUDA)
  kMismatch = 24,            // verify --against: decoded tensor differs from the original
  kInternal = 25,            // a df11 bug: please report
  kBadConfig = 26,           // config.json / dfloat11_config / pattern_dict is unusable
};

// Stable lower_snake name of a code, e.g. "bad_offsets". Never null.
const char* error_code_name(ErrorCode code);

// The kind of failure a code stands for, for callers that sort failures into their own
// classes (the df11 tool's exit codes; an engine deciding whether a retry can help).
enum class ErrorClass {
  kNone,         // kOk
  kCancelled,    // kInterrupted
  kUsage,        // the caller asked for something unusable (bad argument, output exists)
  kData,         // the input data is invalid or corrupt, or differs from what it must match
  kEnvironment,  // I/O, resources, missing files, CUDA, unsupported, internal errors
};
ErrorClass error_class(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }
  bool is_ok() const { return code_ == ErrorCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "bad_offsets: model.safetensors: tensor 'w': ..." (or "ok").
  std::string to_string() const;

  // Returns a copy whose message is prefixed with `context + ": "` (code unchanged).
  Status with_context(const std::string& context) const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

// Either a value or a non-OK Status: never OK without a value.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  // An OK status carries no value, so building a Result from one is a df11 bug: it becomes
  // kInternal here rather than an OK result whose value() reads an empty optional (as
  // absl::StatusOr does with an OK status).
  Result(Status status)  // NOLINT: implicit by design
      : status_(status.is_ok() ? Status(ErrorCode::kInternal,
                                        "a Result was built from an OK Status without a value")
                               : std::move(status)) {}

  bool is_ok() const { return status_.is_ok(); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const { return status_; }

  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace df11

// Propagates a non-OK Status from an expression of type Status.
#define DF11_RETURN_IF_ERROR(expr)                  \
  do {                                              \
    ::df11::Status df11_status_ = (expr);           \
    if (!df11_status_.is_ok()) return df11_status_; \
  } while (0)

#define DF11_CONCAT_INNER_(a, b) a##b
#define DF11_CONCAT_(a, b) DF11_CONCAT_INNER_(a, b)
// DF11_ASSIGN_OR_RETURN(auto x, expr_returning_Result);
#define DF11_ASSIGN_OR_RETURN(lhs, rexpr)                 \
  auto DF11_CONCAT_(df11_result_, __LINE__) = (rexpr);    \
  if (!DF11_CONCAT_(df11_result_, __LINE__).is_ok())      \
    return DF11_CONCAT_(df11_result_, __LINE__).status(); \
  lhs = std::move(DF11_CONCAT_(df11_result_, __LINE__)).value()
