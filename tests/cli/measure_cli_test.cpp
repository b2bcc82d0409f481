// `ridgeline measure` on this machine: structure only (timings vary from run to run;
// speed is never asserted in tests).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

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
  EXPECT_TRUE(show["write_allocate"].get<bool>());  // x86 write-back memory
  auto op = run_json("op dot --n 1e6 --dtype fp32 --hw " + out);
  EXPECT_GT(op["t_lower_s"].get<double>(), 0);

  // Each level's roof with the kernel that set it and the spread of its repeated timings, and
  // whether it is unstable (issue 42): as many as the chip's memory levels, in its order; the
  // chip file records each level's kernel and spread.
  ASSERT_EQ(j["levels"].size(), j["memory"].size());
  for (std::size_t i = 0; i < j["levels"].size(); ++i) {
    const auto& l = j["levels"][i];
    EXPECT_EQ(l["name"], j["memory"][i]["name"]);
    EXPECT_DOUBLE_EQ(l["bandwidth_Bps"].get<double>(), j["memory"][i]["bandwidth_Bps"].get<double>());
    EXPECT_GE(l["spread"].get<double>(), 0);
    EXPECT_EQ(l["unstable"].get<bool>(), l["spread"].get<double>() > 0.10 || !l["why"].is_null()) << l;
    bool listed = false;
    for (const auto& u : j["unstable_levels"]) listed |= u == l["name"];
    EXPECT_EQ(listed, l["unstable"].get<bool>()) << l;
  }
  const std::string yaml = slurp(out);
  EXPECT_NE(yaml.find("_spread: "), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("_kernel: "), std::string::npos) << yaml;

  // The host: CPUs, the cache topology (hwloc, or sysfs without it), innermost first.
  const auto& h = j["host"];
  EXPECT_GE(h["cpus"].get<int>(), 1);
  EXPECT_TRUE(h["topology"] == "hwloc" || h["topology"] == "sysfs") << h["topology"];
  ASSERT_GE(h["caches"].size(), 1u);
  for (std::size_t i = 1; i < h["caches"].size(); ++i) {
    EXPECT_GT(h["caches"][i]["level"].get<int>(), h["caches"][i - 1]["level"].get<int>());
    EXPECT_GE(h["caches"][i]["size_bytes"].get<double>(), h["caches"][i - 1]["size_bytes"].get<double>());
  }
  // Peaks below a bound no x86 core reaches: per CPU, the widest vector the ISA has (16
  // fp32 lanes with AVX-512, else 8) times 2 FLOPs per FMA times 2 FMA units times 6 GHz;
  // fp64 half of it, bf16 pairs twice and int8 quads four times (vdpbf16ps, vpdpbusd).
  const double lanes32 = h["isa"]["avx512f"].get<bool>() ? 16 : 8;
  const double per_fp32 = lanes32 * 2 * 2 * 6e9;
  const double cpus = h["cpus"].get<double>();
  const std::map<std::string, double> bound = {
      {"fp64", cpus * per_fp32 / 2}, {"fp32", cpus * per_fp32}, {"bf16", cpus * per_fp32 * 2}, {"int8", cpus * per_fp32 * 4}};
  for (const auto& [dtype, rate] : j["peak_flops_per_s"].items()) {
    ASSERT_TRUE(bound.count(dtype)) << dtype;
    EXPECT_LT(rate.get<double>(), bound.at(dtype)) << dtype;
  }
}

// likwid-bench's kernels beside ridgeline's (only where Debian's likwid is installed, as
// it is by scripts/install-deps.sh). The ratios vary with the machine: only their
// presence and sign are checked, and that every ceiling measured has its row.
TEST(MeasureCli, CompareLikwid) {
  if (std::system("command -v likwid-bench > /dev/null 2>&1") != 0) GTEST_SKIP() << "likwid-bench not installed";
  auto j = run_json("measure --quick --threads 1 --max-working-set 64KiB --compare likwid");
  ASSERT_TRUE(j.contains("compare")) << j.dump();
  EXPECT_EQ(j["compare"]["tool"], "likwid-bench");
  const auto& rows = j["compare"]["rows"];
  // fp64 and fp32 peaks, then read, copy and triad at each all-core working set (one in
  // each cache level below 64 KiB and one at 64 KiB).
  ASSERT_GE(j["sweep_all_cores"].size(), 1u);
  ASSERT_EQ(rows.size(), 2 + 3 * j["sweep_all_cores"].size()) << rows.dump();
  EXPECT_EQ(rows[0]["ceiling"], "fp64 peak, 1 thread");
  EXPECT_EQ(rows[1]["ceiling"], "fp32 peak, 1 thread");
  EXPECT_EQ(rows[0]["unit"], "FLOP/s");
  EXPECT_NE(rows.back()["ceiling"].get<std::string>().find("triad, 1 thread"), std::string::npos) << rows.back();
  // Quick: one round per row (ridgeline's kernel timed again, then likwid-bench's), so the
  // medians are that round's figures and the ratio is theirs.
  for (const auto& r : rows) {
    EXPECT_GT(r["likwid"].get<double>(), 0) << r;
    ASSERT_EQ(r["rounds"].size(), 1u) << r;
    EXPECT_EQ(r["rounds"][0]["ridgeline"], r["ridgeline"]) << r;
    EXPECT_EQ(r["rounds"][0]["likwid"], r["likwid"]) << r;
    EXPECT_GT(r["ridgeline"].get<double>(), 0) << r;
    EXPECT_DOUBLE_EQ(r["ratio"].get<double>(), r["ridgeline"].get<double>() / r["likwid"].get<double>()) << r;
  }
  EXPECT_EQ(rows.back()["unit"], "B/s");
}

TEST(MeasureCli, BadFlags) {
  RunResult r = run("measure --threads 0");
  EXPECT_EQ(r.status, 2);
  r = run("measure --max-working-set 1KiB");
  EXPECT_EQ(r.status, 2);
  r = run("measure --compare stream");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("expected likwid"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ridgeline::testing
