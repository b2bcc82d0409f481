#include "ridgeline/core/units.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "ridgeline/core/error.hpp"

namespace ridgeline {
namespace {

double q(const char* s, Quantity k, bool bare = false) { return parse_quantity(s, k, "test", bare); }

TEST(Units, ParsesTheIssueExamples) {
  EXPECT_DOUBLE_EQ(q("4.8 TB/s", Quantity::bandwidth), 4.8e12);
  EXPECT_DOUBLE_EQ(q("989 TFLOPS", Quantity::flop_rate), 989e12);
  EXPECT_DOUBLE_EQ(q("141 GB", Quantity::bytes), 141e9);
  EXPECT_DOUBLE_EQ(q("80 GiB", Quantity::bytes), 80.0 * 1024 * 1024 * 1024);  // GB != GiB
  EXPECT_DOUBLE_EQ(q("450 GB/s", Quantity::bandwidth), 450e9);
  EXPECT_DOUBLE_EQ(q("2 us", Quantity::time), 2e-6);
}

TEST(Units, OtherSpellings) {
  EXPECT_DOUBLE_EQ(q("394 TOPS", Quantity::flop_rate), 394e12);
  EXPECT_DOUBLE_EQ(q("1.97e14 FLOP/s", Quantity::flop_rate), 1.97e14);
  EXPECT_DOUBLE_EQ(q("2.25 PFLOPS", Quantity::flop_rate), 2.25e15);
  EXPECT_DOUBLE_EQ(q("400 Gb/s", Quantity::bandwidth), 50e9);  // bits: 400/8 GB/s
  EXPECT_DOUBLE_EQ(q("64 GiB/s", Quantity::bandwidth), 64.0 * (1ull << 30));
  EXPECT_DOUBLE_EQ(q("50 MiB", Quantity::bytes), 50.0 * (1 << 20));
  EXPECT_DOUBLE_EQ(q("3ms", Quantity::time), 3e-3);
  EXPECT_DOUBLE_EQ(q("10 ns", Quantity::time), 1e-8);
  EXPECT_DOUBLE_EQ(q("0 s", Quantity::time), 0.0);
  EXPECT_DOUBLE_EQ(q("989e12", Quantity::flop_rate, true), 989e12);  // bare allowed on flags
}

TEST(Units, Rejects) {
  EXPECT_THROW(q("3.35", Quantity::bandwidth), InputError);          // unit required in files
  EXPECT_THROW(q("3.35 TB", Quantity::bandwidth), InputError);       // a size is not a bandwidth
  EXPECT_THROW(q("3.35 TB/s", Quantity::bytes), InputError);
  EXPECT_THROW(q("12 parsecs", Quantity::time), InputError);
  EXPECT_THROW(q("nan TB/s", Quantity::bandwidth), InputError);
  EXPECT_THROW(q("inf GB", Quantity::bytes), InputError);
  EXPECT_THROW(q("-1 GB", Quantity::bytes), InputError);
  EXPECT_THROW(q("", Quantity::bytes), InputError);
  EXPECT_THROW(q("GB", Quantity::bytes), InputError);
  EXPECT_THROW(q("1e308 EB", Quantity::bytes), InputError);  // overflows to infinity
  EXPECT_THROW(q("1e-320", Quantity::bandwidth, true), InputError);  // a denormal bandwidth
  EXPECT_THROW(q("1e30 TFLOPS", Quantity::flop_rate), InputError);
  EXPECT_THROW(q("2 hours", Quantity::time), InputError);
  EXPECT_THROW(q("5000 s", Quantity::time), InputError);
}

TEST(Units, ErrorNamesWhereAndWhat) {
  try {
    parse_quantity("3.35", Quantity::bandwidth, "h.yaml: memory[0].bandwidth", false);
    FAIL();
  } catch (const InputError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("h.yaml: memory[0].bandwidth"), std::string::npos) << m;
    EXPECT_NE(m.find("no unit"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos);  // one line
  }
}

TEST(Units, PositiveIntegers) {
  EXPECT_EQ(parse_positive_int("4096", "--k"), 4096);
  EXPECT_EQ(parse_positive_int("1e6", "--k"), 1000000);
  EXPECT_THROW(parse_positive_int("0", "--k"), InputError);
  EXPECT_THROW(parse_positive_int("-3", "--k"), InputError);
  EXPECT_THROW(parse_positive_int("2.5", "--k"), InputError);
  EXPECT_THROW(parse_positive_int("nan", "--k"), InputError);
  EXPECT_THROW(parse_positive_int("99999999999999999999", "--k"), InputError);
}

TEST(Units, PricesPerHour) {
  EXPECT_DOUBLE_EQ(parse_usd_per_hour("2.5/h", "--price"), 2.5);
  EXPECT_DOUBLE_EQ(parse_usd_per_hour("$2.5 / hour", "--price"), 2.5);
  EXPECT_DOUBLE_EQ(parse_usd_per_hour("2.5 USD/hr", "--price"), 2.5);
  EXPECT_DOUBLE_EQ(parse_usd_per_hour("60/day", "--price"), 2.5);      // 60 / 24
  EXPECT_DOUBLE_EQ(parse_usd_per_hour("1825/month", "--price"), 2.5);  // a month is 8760 h / 12 = 730 h
  for (const char* bad : {"2.5", "2.5/min", "2.5 EUR/h", "-1/h", "0/h", "inf/h", "abc/h", "/h"}) {
    EXPECT_THROW(parse_usd_per_hour(bad, "--price"), InputError) << bad;
  }
  // A word is no price (it said "has no time unit" for a chip's name), a number without a unit
  // still wants its unit.
  for (const char* word : {"b200", " $h100-sxm", "", "$"}) {
    try {
      parse_usd_per_hour(word, "--price");
      ADD_FAILURE() << word;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("is not a price: expected US dollars per hour"), std::string::npos) << e.what();
    }
  }
  try {
    parse_usd_per_hour("2.5", "--price");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("has no time unit"), std::string::npos) << e.what();
  }
}

// Counts take a bare decimal prefix (token budgets: 15T); nothing else follows the number.
TEST(Units, CountsWithPrefixes) {
  EXPECT_DOUBLE_EQ(parse_quantity("15T", Quantity::count, "--tokens", true), 15e12);
  EXPECT_DOUBLE_EQ(parse_quantity("2.5 G", Quantity::count, "--tokens", true), 2.5e9);
  EXPECT_DOUBLE_EQ(parse_quantity("300k", Quantity::count, "--tokens", true), 3e5);
  EXPECT_DOUBLE_EQ(parse_quantity("2e12", Quantity::count, "--tokens", true), 2e12);
  for (const char* bad : {"15 TB", "15 tokens", "15Ti", "T", "-1T"}) {
    EXPECT_THROW(parse_quantity(bad, Quantity::count, "--tokens", true), InputError) << bad;
  }
}

TEST(Units, FormatsWithPrefixes) {
  EXPECT_EQ(format_quantity(989.4e12, Quantity::flop_rate), "989.4 TFLOP/s");
  EXPECT_EQ(format_quantity(3.35e12, Quantity::bandwidth), "3.35 TB/s");
  EXPECT_EQ(format_quantity(80e9, Quantity::bytes), "80 GB");
  EXPECT_EQ(format_quantity(1.0107e-3, Quantity::time), "1.011 ms");
  EXPECT_EQ(format_quantity(0, Quantity::time), "0 s");
}

}  // namespace
}  // namespace ridgeline
