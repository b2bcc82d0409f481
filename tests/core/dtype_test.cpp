#include "ridgeline/core/dtype.hpp"

#include <gtest/gtest.h>

#include "ridgeline/core/error.hpp"

namespace ridgeline {
namespace {

TEST(DType, SizesInBytes) {
  EXPECT_EQ(bytes(DType::fp64), 8.0);
  EXPECT_EQ(bytes(DType::fp32), 4.0);
  EXPECT_EQ(bytes(DType::tf32), 4.0);  // stored in 32 bits
  EXPECT_EQ(bytes(DType::bf16), 2.0);
  EXPECT_EQ(bytes(DType::fp16), 2.0);
  EXPECT_EQ(bytes(DType::fp8_e4m3), 1.0);
  EXPECT_EQ(bytes(DType::fp8_e5m2), 1.0);
  EXPECT_EQ(bytes(DType::int8), 1.0);
  EXPECT_EQ(bytes(DType::int4), 0.5);  // half a byte
  EXPECT_EQ(bytes(DType::fp4), 0.5);
}

TEST(DType, NamesRoundTrip) {
  for (DType t : kAllDTypes) EXPECT_EQ(parse_dtype(name(t)), t);
  EXPECT_EQ(parse_dtype("fp8"), DType::fp8_e4m3);
  EXPECT_FALSE(parse_dtype("bfloat16"));
  EXPECT_FALSE(parse_dtype(""));
}

TEST(DType, UnknownNameErrorNamesFlagAndChoices) {
  try {
    parse_dtype_or_throw("fp12", "--dtype");
    FAIL();
  } catch (const InputError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("--dtype"), std::string::npos);
    EXPECT_NE(m.find("fp12"), std::string::npos);
    EXPECT_NE(m.find("bf16"), std::string::npos);
  }
}

}  // namespace
}  // namespace ridgeline
