// Profile import: the shared Nsight Compute fixture, synthetic pages, the CSV reader.
#include <gtest/gtest.h>

#include <filesystem>

#include "ridgeline/core/error.hpp"
#include "ridgeline/io/csv.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "ridgeline/io/profile_file.hpp"
#include "ridgeline/profile/analysis.hpp"

namespace ridgeline {
namespace {

const std::string kFixture = std::string(RIDGELINE_SOURCE_DIR) + "/../shared/fixtures/ncu/copy_blocked.csv";

TEST(Csv, QuotesCommasAndLineEnds) {
  auto rows = io::parse_csv("a,\"b,c\",\"say \"\"hi\"\"\"\r\n1,2,3\n\n\"multi\nline\",x,\n", "t.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0][1], "b,c");
  EXPECT_EQ(rows[0][2], "say \"hi\"");
  EXPECT_EQ(rows[1][2], "3");
  EXPECT_EQ(rows[2][0], "multi\nline");
  EXPECT_EQ(rows[2][2], "");
  EXPECT_THROW(io::parse_csv("a,\"never closed\n", "t.csv"), InputError);
}

TEST(Ncu, SharedFixtureOnT4) {
  if (!std::filesystem::exists(kFixture)) GTEST_SKIP() << "no ../shared/fixtures beside the checkout";
  profile::Profile p = io::load_profile(kFixture, "");
  EXPECT_EQ(p.format, "ncu-details");
  ASSERT_EQ(p.launches.size(), 1u);
  const auto& k = p.launches[0];
  // "Duration","ns","21,058,944"; "Memory Throughput","byte/s","196,456,177,859.63".
  EXPECT_DOUBLE_EQ(k.duration_s, 21058944e-9);
  EXPECT_DOUBLE_EQ(k.dram_bytes, 196456177859.63 * 21058944e-9);  // 4.137 GB moved
  EXPECT_FALSE(k.has_flops);  // a copy kernel profiled without the SASS FLOP counters
  EXPECT_FALSE(p.warnings.empty());
  // On a T4 (320 GB/s): 196.46 GB/s is 61.4% of the roof; Nsight Compute itself reports
  // "DRAM Throughput" 61.84% against the 317.7 GB/s it measures as the peak.
  profile::ProfileAnalysis a = profile::analyze(p, io::catalog_chip("t4"), DType::fp16);
  ASSERT_EQ(a.kernels.size(), 1u);
  EXPECT_NEAR(a.kernels[0].fraction_of_roof, 196456177859.63 / 320e9, 1e-12);
  EXPECT_NEAR(a.kernels[0].fraction_of_roof, 0.6184, 0.005);
  EXPECT_EQ(a.kernels[0].bound, ops::Bound::memory);
  // At the roof the 4.137 GB take 12.93 ms: 8.13 ms to gain.
  EXPECT_NEAR(a.kernels[0].gap_s, 21058944e-9 - 196456177859.63 * 21058944e-9 / 320e9, 1e-15);
  EXPECT_FALSE(a.kernels[0].above_roof);
}

TEST(Ncu, RawPageWithCountersUnitsAndToolLines) {
  // Two launches of one GEMM-like kernel: FFMA x2, FADD x1; bytes in Kbyte; time in usecond.
  const char* raw =
      "==PROF== Connected to process 123\n"
      "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"dram__bytes.sum\","
      "\"sm__sass_thread_inst_executed_op_ffma_pred_on.sum\",\"sm__sass_thread_inst_executed_op_fadd_pred_on.sum\"\n"
      "\"\",\"\",\"usecond\",\"Kbyte\",\"inst\",\"inst\"\n"
      "\"0\",\"sgemm_128x64, tn\",\"10.5\",\"1,000\",\"2,000,000\",\"1000\"\n"
      "==PROF== Disconnected\n"
      "\"1\",\"sgemm_128x64, tn\",\"9.5\",\"1,000\",\"2,000,000\",\"1000\"\n";
  profile::Profile p = io::parse_ncu_csv(raw, "raw.csv");
  EXPECT_EQ(p.format, "ncu-raw");
  ASSERT_EQ(p.launches.size(), 2u);
  EXPECT_EQ(p.launches[0].name, "sgemm_128x64, tn");  // the comma inside the quotes stays
  EXPECT_DOUBLE_EQ(p.launches[0].duration_s, 10.5e-6);
  EXPECT_DOUBLE_EQ(p.launches[0].dram_bytes, 1e6);
  EXPECT_DOUBLE_EQ(p.launches[0].flops_fp32, 2 * 2e6 + 1000);
  // Aggregated on an A100 (19.5 TFLOP/s fp32, 1555 GB/s): 2 calls, 20 us, 8.002 MFLOP, 2 MB.
  profile::ProfileAnalysis a = profile::analyze(p, io::catalog_chip("a100-40gb"), DType::bf16);
  ASSERT_EQ(a.kernels.size(), 1u);
  const auto& k = a.kernels[0];
  EXPECT_EQ(k.count, 2);
  EXPECT_DOUBLE_EQ(k.time_s, 20e-6);
  EXPECT_DOUBLE_EQ(k.flops, 8002000);
  EXPECT_DOUBLE_EQ(k.intensity_flops_per_byte, 8002000.0 / 2e6);
  // Roof at 4.0 FLOP/B: min(19.5e12, 1555e9 x 4.001) = 6.222 TFLOP/s; attained 0.4001 TFLOP/s.
  EXPECT_NEAR(k.fraction_of_roof, (8002000.0 / 20e-6) / (1555e9 * 4.001), 1e-9);
  EXPECT_EQ(k.bound, ops::Bound::memory);
}

TEST(Ncu, BadFiles) {
  EXPECT_THROW(io::parse_ncu_csv("", "e.csv"), InputError);
  EXPECT_THROW(io::parse_ncu_csv("a,b,c\n1,2,3\n", "e.csv"), InputError);                      // no Kernel Name
  EXPECT_THROW(io::parse_ncu_csv("\"Kernel Name\",\"x\"\n", "e.csv"), InputError);              // no units row
  EXPECT_THROW(io::parse_generic_csv("name,duration,flops\nk,1,2\n", "g.csv"), InputError);     // no bytes
  EXPECT_THROW(io::parse_generic_csv("name,duration,flops,bytes\nk,-1,2,3\n", "g.csv"), InputError);
  EXPECT_THROW(io::load_profile("/nonexistent.csv", ""), InputError);
}

TEST(GenericCsv, UnitsInTheHeader) {
  auto p = io::parse_generic_csv("name,duration_us,flops,bytes,count\nmatmul,100,2e12,1e9,3\n", "g.csv");
  ASSERT_EQ(p.launches.size(), 1u);
  EXPECT_DOUBLE_EQ(p.launches[0].duration_s, 100e-6);
  EXPECT_EQ(p.launches[0].count, 3);
  // On an H100 at bf16: 3 x 2e12 FLOPs at 989.4 TFLOP/s need 6.064 ms, done in 300 us: above the roof.
  auto a = profile::analyze(p, io::catalog_chip("h100-sxm"), DType::bf16);
  EXPECT_TRUE(a.kernels[0].above_roof);
}

}  // namespace
}  // namespace ridgeline
