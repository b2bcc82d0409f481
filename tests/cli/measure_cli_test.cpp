// `ridgeline measure` on this machine: structure only (timings vary from run to run;
// speed is never asserted in tests).
#include <gtest/gtest.h>

#include "cli/cli_harness.hpp"

namespace ridgeline::testing {
namespace {

TEST(MeasureCli, WritesAChipFileThatLoadsEverywhere) {
  const std::string out = std::string(RIDGELINE_TMP_DIR) + "/host.yaml";
  auto j = run_json("measure --threads 1 --max-working-set 4MiB --out " + out);
  ASSERT_TRUE(j.contains("peak_flops_per_s"));
  EXPECT_GT(j["peak_flops_per_s"].size(), 0u);
  for (const auto& [dtype, rate] : j["peak_flops_per_s"].items()) EXPECT_GT(rate.get<double>(), 0) << dtype;
  ASSERT_GE(j["memory"].size(), 1u);
  for (const auto& m : j["memory"]) EXPECT_GT(m["bandwidth_Bps"].get<double>(), 0) << m;
  EXPECT_GE(j["sweep"].size(), 8u);  // 16 KiB .. 4 MiB, doubling
  // The file is a chip file like any other: hw show and op accept it.
  auto show = run_json("hw show " + out);
  EXPECT_EQ(show["name"], "host");
  auto op = run_json("op dot --n 1e6 --dtype fp32 --hw " + out);
  EXPECT_GT(op["t_lower_s"].get<double>(), 0);
}

TEST(MeasureCli, BadFlags) {
  RunResult r = run("measure --threads 0");
  EXPECT_EQ(r.status, 2);
  r = run("measure --max-working-set 1KiB");
  EXPECT_EQ(r.status, 2);
}

}  // namespace
}  // namespace ridgeline::testing
