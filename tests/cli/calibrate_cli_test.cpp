// `ridgeline calibrate`: kernels written from a known model into a generic CSV come back as
// that model in the chip file written, and `op` on that file uses it (values by hand).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "cli/cli_harness.hpp"

namespace ridgeline::testing {
namespace {

// On the H100 SXM: bf16 matrix peak 989.4e12 FLOP/s, HBM 3.35e12 B/s.
// GEMMs: 989.4e9·k FLOPs (k ms at the peak) and 3.35e8 bytes (0.1 ms), measured at
// 5 us + k ms / 0.8. Pointwise: 3.35e7·k bytes (10·k us) and no FLOPs, at 2 us + 10k us / 0.9.
// Each test its own file (`name`): ctest runs the tests of a binary in parallel processes.
std::string write_profile(const std::string& name) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream out(path);
  out << "name,duration,flops,bytes,count\n";
  for (double k : {1.0, 4.0, 10.0}) {
    out << fmt::format("sm90_gemm_{},{:.17g},{:.17g},{:.17g},3\n", k, 5e-6 + k * 1e-3 / 0.8, 989.4e9 * k, 3.35e8);
  }
  for (double k : {1.0, 10.0, 100.0}) {
    out << fmt::format("elementwise_{},{:.17g},0,{:.17g},2\n", k, 2e-6 + k * 10e-6 / 0.9, 3.35e7 * k);
  }
  return path;
}

TEST(CalibrateCli, FitsWritesAndIsUsed) {
  const std::string csv = write_profile("calibrate_profile_fits.csv");
  const std::string out = ::testing::TempDir() + "calibrated.yaml";
  std::remove(out.c_str());
  auto j = run_json("calibrate " + csv + " --hw h100-sxm --out " + out + " --name h100-test");
  const auto& g = j["classes"]["gemm"];
  EXPECT_TRUE(g["fitted"].get<bool>());
  EXPECT_EQ(g["kernels"], 3);
  EXPECT_NEAR(g["matrix"].get<double>(), 0.8, 1e-9);
  EXPECT_NEAR(g["overhead_s"].get<double>(), 5e-6, 1e-12);
  const auto& p = j["classes"]["pointwise"];
  EXPECT_NEAR(p["memory"].get<double>(), 0.9, 1e-9);
  EXPECT_NEAR(p["overhead_s"].get<double>(), 2e-6, 1e-12);
  EXPECT_EQ(j["kernels"].size(), 6u);
  EXPECT_EQ(j["out"], out);

  // The chip file: the H100 with the fitted classes.
  auto hw = run_json("hw show " + out);
  EXPECT_EQ(hw["name"], "h100-test");
  EXPECT_NEAR(hw["efficiency"]["gemm"]["matrix"].get<double>(), 0.8, 1e-9);
  EXPECT_NEAR(hw["efficiency"]["gemm"]["overhead_s"].get<double>(), 5e-6, 1e-12);
  EXPECT_DOUBLE_EQ(hw["efficiency"]["gemm"]["memory"].get<double>(), 0.9);  // not fitted: the chip-wide figure
  EXPECT_NE(slurp(out).find("calibrated:"), std::string::npos);

  // A 4096^3 bf16 GEMM on it: 2·4096³ / 989.4e12 = 138.9 us at the peak, 5 us + that / 0.8
  // realistic; its 3·4096²·2 bytes take 30 us at 3.35 TB/s, hidden under the math.
  auto op = run_json("op matmul --m 4096 --k 4096 --n 4096 --hw " + out);
  const double t_math = 2.0 * 4096 * 4096 * 4096 / 989.4e12;
  EXPECT_NEAR(op["t_lower_s"].get<double>(), t_math, 1e-15);
  EXPECT_NEAR(op["t_realistic_s"].get<double>(), 5e-6 + t_math / 0.8, 1e-12);
  // The catalog chip without calibration: 0.9104 of its measured bf16 matmul rate, 794.5 of
  // 989.4 TFLOP/s (matmul_achievable), and the 4.549 us its gemm class's kernel curves give
  // a GEMM (the fitted class figures replace both above), and its tiling on 132 SMs: 512
  // tiles of 256x128 in 4 waves (512/528 = 32/33 useful; the last, 116 tiles, is over half
  // full and runs whole). Its overlap share (0.66 of matrix + memory: 0.66 x (196.0 + 32.2)
  // us) stays under the math.
  auto plain = run_json("op matmul --m 4096 --k 4096 --n 4096 --hw h100-sxm");
  EXPECT_NEAR(plain["t_realistic_s"].get<double>(), 4.549e-6 + 2.0 * 4096 * 4096 * 4096 / (0.9104 * 794.5e12) * 33 / 32, 1e-12);
}

TEST(CalibrateCli, BadInput) {
  const std::string csv = write_profile("calibrate_profile_bad_input.csv");
  expect_bad("calibrate /nonexistent/profile.csv --hw h100-sxm", "/nonexistent/profile.csv");
  expect_bad("calibrate " + csv + " --hw h100-sxm --format xyz", "--format");
  expect_bad("calibrate " + csv + " --hw h100-sxm --out " + ::testing::TempDir() + "x.yaml --name 'Bad Name'", "name");
  const std::string empty = ::testing::TempDir() + "calibrate_empty.csv";
  std::ofstream(empty) << "name,duration,flops,bytes\nk,1e-6,0,0\n";  // neither FLOPs nor bytes: no sample
  expect_bad("calibrate " + empty + " --hw h100-sxm", "nothing to calibrate");
  std::ofstream(empty) << "name,duration,flops,bytes\nk,0,0,0\n";
  expect_bad("calibrate " + empty + " --hw h100-sxm", "duration 0 s");
  const std::string notjson = ::testing::TempDir() + "calibrate_bad.json";
  std::ofstream(notjson) << "{\"ops\": [{\"name\": \"x\", \"measured_s\": ";
  expect_bad("calibrate " + notjson + " --hw h100-sxm --format validate", "calibrate_bad.json");
}

}  // namespace
}  // namespace ridgeline::testing
