#include <gtest/gtest.h>

#include <filesystem>

#include "cli/cli_harness.hpp"

namespace ridgeline::testing {
namespace {

TEST(FuseCli, CandidatesAndCudaGraphs) {
  auto j = run_json("fuse --model llama-3.1-8b --hw h100-sxm --buckets 128,256,512 --lengths 1..512");
  EXPECT_GE(j["candidates"].size(), 6u);
  EXPECT_GT(j["saved_per_pass_s"].get<double>(), 0);
  // A decode step launches every kernel of the graph: 15 per layer x 32 + head and embedding.
  EXPECT_GT(j["cuda_graphs"]["decode_step_launches"].get<double>(), 32 * 14);
  EXPECT_GT(j["cuda_graphs"]["saved_per_step_s"].get<double>(), 0);
  // 1..512 over 128/256/512: (128·128 + 256·128 + 512·256)/512 = 352 padded for 256.5.
  EXPECT_DOUBLE_EQ(j["buckets"]["mean_padded"].get<double>(), 352.0);
}

TEST(RecomputeCli, PlanAndPresets) {
  auto j = run_json("recompute --model llama-3.1-8b --hw h200 --gpus 8 --tp 8 --seq 8192 --global-batch 64 --budget 100MB");
  EXPECT_TRUE(j["plan"]["fits"].get<bool>());
  EXPECT_LE(j["plan"]["memory_bytes"].get<double>(), 100e6);
  EXPECT_LE(j["plan"]["added_s"].get<double>(), j["full"]["added_s"].get<double>());
  EXPECT_EQ(j["tensors"].size(), 9u);
  RunResult bad = run("recompute --model deepseek-v3 --hw h200 --gpus 8 --tp 8");
  EXPECT_EQ(bad.status, 2);
}

}  // namespace
}  // namespace ridgeline::testing

namespace ridgeline::testing {
namespace {

TEST(ProfileCli, FixtureJson) {
  const std::string fixture = std::string(RIDGELINE_SOURCE_DIR) + "/tests/fixtures/ncu/copy_blocked.csv";
  auto j = run_json("profile " + fixture + " --hw t4");
  for (const char* k : {"total_kernel_time_s", "kernels"}) EXPECT_TRUE(j.contains(k)) << k;
  ASSERT_EQ(j["kernels"].size(), 1u);
  for (const char* k : {"name", "count", "time_s", "flops", "bytes", "intensity_flops_per_byte", "bound", "fraction_of_roof"}) {
    EXPECT_TRUE(j["kernels"][0].contains(k)) << k;
  }
  EXPECT_DOUBLE_EQ(j["total_kernel_time_s"].get<double>(), 21058944e-9);
  RunResult bad = run("profile /nonexistent.csv --hw t4");
  EXPECT_EQ(bad.status, 2);
}

TEST(ProfileCli, ErtFileBecomesAChipFile) {
  // An ERT roofline.json is ceilings, not kernels: `profile` makes it a chip file as
  // `hw import-ert` does (the same code), detected or with --format ert. ERT measures no
  // sizes, so every level needs --capacity.
  const std::string src = std::string(RIDGELINE_SOURCE_DIR) + "/tests/data/ert/roofline.json";
  const std::string caps = " --capacity DRAM=256GB --capacity L1=1.5MiB --capacity L2=48MiB --capacity L3=64MiB";
  RunResult missing = run("profile " + src);
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("--capacity"), std::string::npos) << missing.err;
  const std::string out = std::string(RIDGELINE_TMP_DIR) + "/ert-profile.yaml";
  auto j = run_json("profile " + src + caps + " --name from-profile --out " + out);
  EXPECT_EQ(j["name"], "from-profile");
  EXPECT_EQ(j["out"], out);
  EXPECT_EQ(run_json("hw show " + out)["name"], "from-profile");
  auto same = run_json("profile " + src + " --format ert" + caps + " --name from-profile");  // printed, not written
  EXPECT_EQ(same["memory"], j["memory"]);
  // The ERT flags are for ERT files only.
  RunResult wrong = run("profile " + std::string(RIDGELINE_SOURCE_DIR) + "/tests/data/ert/roofline.json --format csv --hw t4");
  EXPECT_EQ(wrong.status, 2);
  expect_bad("profile " + src + " --format torch --out x.yaml --hw t4", "--format ert");
}

}  // namespace
}  // namespace ridgeline::testing
