// df11::Result: a value or a non-OK Status, never OK without a value.
#include "df11/status.h"

#include <gtest/gtest.h>

#include <string>

namespace df11 {
namespace {

TEST(Result, HoldsAValue) {
  Result<std::string> r(std::string("x"));
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(*r, "x");
}

TEST(Result, CarriesAnError) {
  Result<int> r(Status(ErrorCode::kNotFound, "a.safetensors: no such file"));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(r.status().message(), "a.safetensors: no such file");
}

// An OK status has no value to give: the Result reports the bug instead of reading as OK.
TEST(Result, FromOkStatusIsAnInternalError) {
  Result<int> r(Status::ok());
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInternal);
  EXPECT_NE(r.status().message().find("OK Status without a value"), std::string::npos);
}

}  // namespace
}  // namespace df11
