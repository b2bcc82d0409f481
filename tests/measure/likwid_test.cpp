// Reading likwid-bench's report: the lines `measure --compare likwid` takes its numbers from.
#include "ridgeline/measure/likwid.hpp"

#include <gtest/gtest.h>

namespace ridgeline::measure {
namespace {

// The tail of a likwid-bench 5.2 report, as it prints it (peakflops_avx512_fma, one thread,
// 8 kB, -i 2000000), with "Runtime:" added before "Time:" to check that keys match only at
// the start of a line.
constexpr const char* kReport =
    "Cycles:\t\t\t1947687846\n"
    "CPU Clock:\t\t2596081048\n"
    "Runtime:\t\t99\n"
    "Time:\t\t\t7.502415e-01 sec\n"
    "Iterations:\t\t2000000\n"
    "Iterations per thread:\t2000000\n"
    "Number of Flops:\t60000000000\n"
    "MFlops/s:\t\t79974.24\n"
    "MByte/s:\t\t21326.47\n";

TEST(Likwid, ReadsFieldsAtTheStartOfALine) {
  EXPECT_DOUBLE_EQ(*likwid_field(kReport, "Time:"), 0.7502415);  // not Runtime's 99
  EXPECT_DOUBLE_EQ(*likwid_field(kReport, "Iterations per thread:"), 2e6);
  EXPECT_FALSE(likwid_field(kReport, "Stores per update:").has_value());
}

TEST(Likwid, RatesInBaseUnits) {
  // MFlops/s and MByte/s are 10^6 FLOP/s and bytes/s: 79974.24e6 and 21326.47e6.
  EXPECT_DOUBLE_EQ(*likwid_value(kReport, "MFlops/s:"), 79974.24e6);
  EXPECT_DOUBLE_EQ(*likwid_value(kReport, "MByte/s:"), 21326.47e6);
  // The report's own arithmetic agrees: 60e9 FLOPs in 0.7502415 s = 79974.24 MFlops/s.
  EXPECT_NEAR(60e9 / *likwid_field(kReport, "Time:"), *likwid_value(kReport, "MFlops/s:"), 1e6);
  EXPECT_FALSE(likwid_value("MByte/s:\t\tnan\n", "MByte/s:").has_value());
  EXPECT_FALSE(likwid_value("MByte/s:\t\t-3\n", "MByte/s:").has_value());
  EXPECT_FALSE(likwid_value("", "MByte/s:").has_value());
}

}  // namespace
}  // namespace ridgeline::measure
