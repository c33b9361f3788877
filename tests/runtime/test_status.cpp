// Status/Result behaviour: messages, context, propagation.
#include <gtest/gtest.h>

#include "runtime/core/status.hpp"

namespace tl {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return make_error(ErrorCode::invalid_argument, "expected a positive value, got " + std::to_string(v));
  return v;
}

Result<int> twice(int v) {
  TL_RETURN_IF_ERROR(parse_positive(v));
  return 2 * v;
}

TEST(Status, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::ok);
}

TEST(Status, ContextPrefixesMessage) {
  Status s = make_error(ErrorCode::compile, "line 3: unknown type").with_context("compiling gemm.simt");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "compiling gemm.simt: line 3: unknown type");
  EXPECT_STREQ(error_code_name(s.code()), "compile");
}

TEST(Result, PropagatesErrors) {
  EXPECT_EQ(*twice(4), 8);
  auto bad = twice(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::invalid_argument);
  EXPECT_NE(bad.status().message().find("-1"), std::string::npos);
  EXPECT_EQ(bad.value_or(7), 7);
}

}  // namespace
}  // namespace tl
