#include "df11/metadata.h"

namespace df11 {
namespace {

// StoredChecksums' field for each schema entry, in kGroupTensors order (spec 5.3).
constexpr std::string StoredChecksums::*kFields[kGroupTensorCount] = {
    &StoredChecksums::luts,          &StoredChecksums::encoded_exponent,
    &StoredChecksums::sign_mantissa, &StoredChecksums::output_positions,
    &StoredChecksums::gaps,          &StoredChecksums::split_positions};

}  // namespace

std::string& StoredChecksums::of(GroupTensor t) { return this->*kFields[static_cast<size_t>(t)]; }

const std::string& StoredChecksums::of(GroupTensor t) const {
  return this->*kFields[static_cast<size_t>(t)];
}

}  // namespace df11
