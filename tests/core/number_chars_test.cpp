// parse_double_chars against std::from_chars itself (libstdc++ has the floating-point
// overloads here): the native build reads every number as before.
#include "ridgeline/core/number_chars.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <string>

namespace ridgeline {
namespace {

// Both parses of `s` from a value of -7: the same error, the same end and the same bits.
void expect_same(const std::string& s) {
  double a = -7, b = -7;
  const auto ra = std::from_chars(s.data(), s.data() + s.size(), a, std::chars_format::general);
  const auto rb = parse_double_chars(s.data(), s.data() + s.size(), b);
  EXPECT_EQ(ra.ec, rb.ec) << "'" << s << "'";
  EXPECT_EQ(ra.ptr - s.data(), rb.ptr - s.data()) << "'" << s << "'";
  EXPECT_TRUE(std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b))) << "'" << s << "': " << a << " vs " << b;
}

TEST(NumberChars, ReadsWhatFromCharsReads) {
  double v = 0;
  const std::string s = "4.8e12 TB/s";
  const auto r = parse_double_chars(s.data(), s.data() + s.size(), v);
  EXPECT_EQ(r.ec, std::errc());
  EXPECT_EQ(r.ptr - s.data(), 6);  // "4.8e12" and no further
  EXPECT_EQ(v, 4.8e12);
}

TEST(NumberChars, OutOfRangeLeavesTheValue) {
  // 1e400 is above DBL_MAX (1.797...e308); 1e-400 and 2.4e-324 round to zero (the least
  // subnormal is 4.94e-324, halfway 2.47e-324): all three out of range, the value untouched.
  for (const char* s : {"1e400", "-1e400", "1e-400", "2.4e-324"}) {
    double v = -7;
    const auto r = parse_double_chars(s, s + std::strlen(s), v);
    EXPECT_EQ(r.ec, std::errc::result_out_of_range) << s;
    EXPECT_EQ(r.ptr, s + std::strlen(s)) << s;
    EXPECT_EQ(v, -7) << s;
  }
  // Zeros with any exponent and the least subnormal are in range.
  double v = -7;
  const std::string z = "0.000e-999";
  EXPECT_EQ(parse_double_chars(z.data(), z.data() + z.size(), v).ec, std::errc());
  EXPECT_EQ(v, 0);
  const std::string d = "4.9e-324";
  EXPECT_EQ(parse_double_chars(d.data(), d.data() + d.size(), v).ec, std::errc());
  EXPECT_EQ(v, 4.9406564584124654e-324);
}

TEST(NumberChars, EdgesAgreeWithFromChars) {
  for (const char* s : {"", "+1", " 1", "-", ".", "1.", ".5", "1e", "1e+", "1E5x", "0x10", "inf", "-infinity", "infinite", "nan",
                        "nan(abc)", "nanx", "00012", "1.7976931348623157e308", "1.7976931348623159e308",
                        "2.4703282292062327e-324", "2.4703282292062328e-324", "-0", "-.0e5", "00.00001e-330",
                        "123456789012345678901234567890", "0.1000000000000000055511151231257827"}) {
    expect_same(s);
  }
}

// Strings of number-like characters: every one parses as std::from_chars parses it.
RC_GTEST_PROP(NumberChars, AgreesWithFromCharsOnNumberLikeText, ()) {
  const std::string s = *rc::gen::container<std::string>(rc::gen::elementOf(std::string("0123456789.eE+-infatyINFATY()x 0")));
  double a = -7, b = -7;
  const auto ra = std::from_chars(s.data(), s.data() + s.size(), a, std::chars_format::general);
  const auto rb = parse_double_chars(s.data(), s.data() + s.size(), b);
  RC_ASSERT(ra.ec == rb.ec);
  RC_ASSERT(ra.ptr - s.data() == rb.ptr - s.data());
  RC_ASSERT((std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b))));
}

// Numbers with exponents from -400 to 400: the rounding and the range checks agree.
RC_GTEST_PROP(NumberChars, AgreesWithFromCharsOnExponents, ()) {
  const auto mantissa = *rc::gen::inRange<std::uint64_t>(0, 100000000000000000ULL);
  const auto digits = *rc::gen::inRange(0, 19);
  const auto exponent = *rc::gen::inRange(-400, 400);
  std::string s = std::to_string(mantissa);
  if (digits < static_cast<int>(s.size())) s.insert(s.size() - static_cast<std::size_t>(digits), ".");
  s += "e" + std::to_string(exponent);
  double a = -7, b = -7;
  const auto ra = std::from_chars(s.data(), s.data() + s.size(), a, std::chars_format::general);
  const auto rb = parse_double_chars(s.data(), s.data() + s.size(), b);
  RC_ASSERT(ra.ec == rb.ec);
  RC_ASSERT(ra.ptr - s.data() == rb.ptr - s.data());
  RC_ASSERT(std::memcmp(&a, &b, sizeof a) == 0);
}

}  // namespace
}  // namespace ridgeline
