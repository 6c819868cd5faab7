// The execution layouts' invalid-blob tests (spec/EXEC_LAYOUT.md and spec/EXEC_COMPACT.md,
// section 3): a blob's validator and decoder both refuse it the same way.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "df11/status.h"

namespace df11 {

// validate(b, "m.bin") fails with `code`, its message starting "m.bin: " and holding `part`;
// decode(b, out, "m.bin") into an output of n weights fails with `code` too, writing nothing.
template <class Validate, class Decode>
void expect_rejected(Validate validate, Decode decode, const std::vector<uint8_t>& b, size_t n,
                     ErrorCode code, const std::string& part) {
  const auto r = validate(b, "m.bin");
  ASSERT_FALSE(r.is_ok()) << part;
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  EXPECT_NE(r.status().message().find(part), std::string::npos) << r.status().to_string();
  EXPECT_EQ(r.status().message().rfind("m.bin: ", 0), 0u) << r.status().to_string();
  std::vector<uint16_t> out(n, 0x1234);
  EXPECT_EQ(decode(std::span<const uint8_t>(b), std::span<uint16_t>(out), "m.bin").code(), code);
  EXPECT_EQ(out, std::vector<uint16_t>(n, 0x1234));  // nothing written
}

}  // namespace df11
