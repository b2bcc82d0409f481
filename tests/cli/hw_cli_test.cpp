#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "cli/cli_harness.hpp"

namespace ridgeline::testing {
namespace {

TEST(HwCli, ListHasNameVendorKind) {
  auto j = run_json("hw list");
  ASSERT_TRUE(j.is_array());
  EXPECT_GE(j.size(), 13u);
  for (const auto& e : j) {
    EXPECT_TRUE(e.contains("name") && e.contains("vendor") && e.contains("kind")) << e;
  }
}

TEST(HwCli, AFamilyOrAVariantNamesTheCatalogChipsItCouldMean) {
  // A name that begins catalog names (the family, any case) or runs past one (a variant's full
  // name) is refused with them; one like none of them with the list alone.
  expect_bad("serve --model llama-3.1-8b --hw h100 --qps 1 --requests 3", "--hw: unknown hardware 'h100' (did you mean h100-pcie or h100-sxm?)");
  expect_bad("infer --model llama-3.1-8b --hw A100", "unknown hardware 'A100' (did you mean a100-40gb or a100-80gb?)");
  expect_bad("infer --model llama-3.1-8b --hw h100-sxm5", "unknown hardware 'h100-sxm5' (did you mean h100-sxm?)");
  const RunResult none = run("infer --model llama-3.1-8b --hw x9");
  EXPECT_EQ(none.status, 2);
  EXPECT_EQ(none.err.find("did you mean"), std::string::npos) << none.err;
}

TEST(HwCli, ShowHasTheContractKeys) {
  auto j = run_json("hw show H100-SXM");
  for (const char* k : {"name", "peak_flops_per_s", "sparse_factor", "write_allocate", "vector_flops_per_s", "memory", "links",
                        "ridge_flops_per_byte"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_DOUBLE_EQ(j["peak_flops_per_s"]["bf16"].get<double>(), 989.4e12);
  EXPECT_DOUBLE_EQ(j["memory"][0]["bandwidth_Bps"].get<double>(), 3.35e12);
  EXPECT_DOUBLE_EQ(j["memory"][0]["capacity_bytes"].get<double>(), 81559.0 * 1048576);  // what the driver reports
  // NVLink4: 18 links x 25 GB/s = 450 GB/s per direction.
  EXPECT_DOUBLE_EQ(j["links"][0]["bandwidth_Bps"].get<double>(), 450e9);
}

TEST(HwCli, ShowNamesMeasuredRatesAndTheExpCost) {
  const std::string out = run("hw show h100-sxm").out;
  // The measured bf16 matmul rate beside the peak: 794.5 / 989.4 = 0.803.
  EXPECT_NE(out.find("matmul measured 794.5 TFLOP/s (0.803)"), std::string::npos) << out;
  // 66.9 TFLOP/s of fp32 over 3.9 T exp/s: an exp costs 17.2 fp32 FLOPs.
  EXPECT_NE(out.find("an exp costs 17.2 fp32 FLOPs"), std::string::npos) << out;
  // T4: 16 results per clock per SM x 40 SMs x 1.59 GHz = 1.018 T/s; 8.1 / 1.018 = 8.0.
  EXPECT_NE(run("hw show t4").out.find("an exp costs 8.0 fp32 FLOPs"), std::string::npos);
}

TEST(HwCli, BlockScaledExpertsTakeTheFusedMoesFiguresWhereTheyHaveNoneOfTheirOwn) {
  // The H100's file gives gemm_expert_scaled every figure (the H200's fit of the Triton fused
  // MoE over block-scaled experts: matrix 0.1858, its memory fraction 0.9256 over 0.94 = 0.9847,
  // 13.31 us, each tile 166 columns of K more on its loads). A file that gives it only a matrix
  // fraction (the same file with {matrix: 0.1851} in its place) has memory and fixed time the
  // fused MoE's (gemm_expert: memory 0.883, 12.88 us), figure by figure, and no fill (a class's
  // own); the text names whose figures, each fraction to three places (0.1858 is 0.186, 0.9847
  // 0.985). The fp8 quantisation kernels have a fixed time of their own (2.382 us) and the norms'
  // memory fraction (0.6036: 0.604); DeepEP's normal dispatch inside a node its own link fraction
  // (0.6498: 0.650) and the low-latency dispatch's fixed time.
  const std::string out = run("hw show h100-sxm").out;
  EXPECT_NE(out.find("gemm_expert_scaled        matrix 0.186, memory 0.985, each tile 166 columns of K more on its loads, 13.31 us per kernel\n"),
            std::string::npos) << out;
  EXPECT_NE(out.find("quant                     norm's memory 0.604, 2.382 us per kernel\n"), std::string::npos) << out;
  EXPECT_NE(out.find("deepep_intranode_dispatch link 0.650, deepep_dispatch's 33.19 us per kernel\n"), std::string::npos) << out;
  auto j = run_json("hw show h100-sxm");
  const auto& e = j["efficiency"];
  EXPECT_DOUBLE_EQ(e["gemm_expert_scaled"]["matrix"].get<double>(), 0.1858);
  EXPECT_DOUBLE_EQ(e["gemm_expert_scaled"]["memory"].get<double>(), 0.9847);
  EXPECT_DOUBLE_EQ(e["gemm_expert_scaled"]["overhead_s"].get<double>(), 13.31e-6);
  EXPECT_DOUBLE_EQ(e["gemm_expert_scaled"]["fill_k"].get<double>(), 166);
  std::string file = slurp(std::string(RIDGELINE_SOURCE_DIR) + "/data/hardware/nvidia/h100-sxm.yaml");
  const std::string line = "gemm_expert_scaled: {matrix: 0.1858, memory: 0.9847, overhead: 13.31 us, fill_k: 166}";
  const std::size_t at = file.find(line);
  ASSERT_NE(at, std::string::npos);
  file.replace(at, line.size(), "gemm_expert_scaled: {matrix: 0.1851}");
  const std::string partial = tmp_path("h100_partial_scaled_experts.yaml");
  {
    std::ofstream(partial) << file;
  }
  const std::string pout = run("hw show " + partial).out;
  EXPECT_NE(pout.find("gemm_expert_scaled        matrix 0.185, gemm_expert's memory 0.883, gemm_expert's 12.88 us per kernel\n"),
            std::string::npos) << pout;
  auto pj = run_json("hw show " + partial);
  EXPECT_DOUBLE_EQ(pj["efficiency"]["gemm_expert_scaled"]["matrix"].get<double>(), 0.1851);
  EXPECT_DOUBLE_EQ(pj["efficiency"]["gemm_expert_scaled"]["memory"].get<double>(), 0.883);
  EXPECT_DOUBLE_EQ(pj["efficiency"]["gemm_expert_scaled"]["overhead_s"].get<double>(), 12.88e-6);
  EXPECT_DOUBLE_EQ(pj["efficiency"]["gemm_expert_scaled"]["fill_k"].get<double>(), 0);
  // A chip whose file says nothing of it (the B200: its block-scaled class is an NVFP4 GEMM's)
  // prices such experts as its fused MoE, whole.
  auto b = run_json("hw show b200");
  for (const char* f : {"matrix", "memory", "overhead_s"}) {
    EXPECT_DOUBLE_EQ(b["efficiency"]["gemm_expert_scaled"][f].get<double>(), b["efficiency"]["gemm_expert"][f].get<double>()) << f;
  }
  // DeepGEMM's grouped GEMMs: the H100's own fit (its curves), and on a chip without them (the
  // B200) the fused MoE's figures, whole; an overlap share is a class's own, never taken.
  EXPECT_DOUBLE_EQ(e["gemm_expert_deepgemm"]["matrix"].get<double>(), 0.7041);
  EXPECT_DOUBLE_EQ(e["gemm_expert_deepgemm"]["overlap"].get<double>(), 0.71);
  // Its tiles' fill is its own: the fused MoE's class has none to lend, nor does the B200's.
  EXPECT_DOUBLE_EQ(e["gemm_expert_deepgemm"]["fill_k"].get<double>(), 281);
  EXPECT_DOUBLE_EQ(e["gemm_expert"]["fill_k"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(b["efficiency"]["gemm_expert_deepgemm"]["fill_k"].get<double>(), 0);
  for (const char* f : {"matrix", "memory", "overhead_s"}) {
    EXPECT_DOUBLE_EQ(b["efficiency"]["gemm_expert_deepgemm"][f].get<double>(), b["efficiency"]["gemm_expert"][f].get<double>()) << f;
  }
  EXPECT_DOUBLE_EQ(b["efficiency"]["gemm_expert_deepgemm"]["overlap"].get<double>(), 0.5);  // 0.5: none (never binds)
}

TEST(HwCli, FitPrintsItsFiguresAsTheChipFileKeepsThem) {
  // DeepGEMM's dense class on the H100: the fit's memory fraction is 0.81946..., which the chip
  // file keeps as 0.8195 (4 significant digits, `hw fit`'s own YAML line) and `hw show` prints at
  // three decimals as 0.820; the fit's line says the same, not 0.819.
  const std::string fit = run("hw fit h100-sxm").out, show = run("hw show h100-sxm").out;
  EXPECT_NE(fit.find("gemm_scaled_deepgemm: {matrix: 0.7987, memory: 0.8195,"), std::string::npos) << fit;
  const std::string line = "matrix 0.799, memory 0.820, each tile 500 columns of K more, 3.421 us per kernel";
  EXPECT_NE(fit.find("  gemm_scaled_deepgemm: " + line + "\n"), std::string::npos) << fit;
  EXPECT_NE(show.find("  gemm_scaled_deepgemm      " + line + "\n"), std::string::npos) << show;
}

TEST(HwCli, OverridesApply) {
  auto j = run_json("hw show tpu-v5e --mem-bw 8.1e11 --peak int8=3.94e14");
  EXPECT_DOUBLE_EQ(j["memory"][0]["bandwidth_Bps"].get<double>(), 8.1e11);
  // int8 ridge 3.94e14 / 8.1e11 = 486.4 (seed 003 Q1).
  EXPECT_NEAR(j["ridge_flops_per_byte"]["int8"].get<double>(), 3.94e14 / 8.1e11, 1e-9);
}

TEST(HwCli, UserFileWorksEverywhere) {
  std::string path = std::string(RIDGELINE_SOURCE_DIR) + "/tests/data/toy_chip.yaml";
  auto j = run_json("hw show " + path);
  EXPECT_EQ(j["name"], "toy-accelerator");
  auto op = run_json("op matmul --m 100 --k 100 --n 100 --hw " + path);
  // 2*100^3 FLOPs at 100 TFLOP/s = 20 ns; 6e4 bytes at 1 TB/s = 60 ns; launch 1 us.
  EXPECT_DOUBLE_EQ(op["t_math_s"].get<double>(), 2e6 / 100e12);
  EXPECT_DOUBLE_EQ(op["t_memory_s"].get<double>(), 6e4 / 1e12);
  EXPECT_EQ(op["bound"], "launch");
}

TEST(HwCli, NoArgumentsPrintsAnOverviewWithAnExample) {
  RunResult r = run("");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("ridgeline op matmul"), std::string::npos);
  EXPECT_NE(r.out.find("threshold"), std::string::npos);
}

TEST(HwCli, VersionAndHelp) {
  // The project's version (CMakeLists.txt: 0.1.0), as --version, -V and version.
  for (const char* a : {"--version", "-V", "version"}) {
    RunResult v = run(a);
    EXPECT_EQ(v.status, 0);
    EXPECT_EQ(v.out, "ridgeline 0.1.0\n");
  }
  // help: the overview; help COMMAND [SUBCOMMAND]: that command's flags.
  EXPECT_EQ(run("help").out, run("").out);
  RunResult h = run("help search train");
  EXPECT_EQ(h.status, 0);
  EXPECT_NE(h.out.find("Usage: ridgeline search train"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("--global-batch"), std::string::npos);
  EXPECT_EQ(run("help nosuch").status, 2);
}

TEST(HwCli, ImportErtWritesAChipFileUsableAsHw) {
  const std::string src = std::string(RIDGELINE_SOURCE_DIR) + "/tests/data/ert/roofline.json";
  const std::string out = std::string(RIDGELINE_TMP_DIR) + "/ert.yaml";
  RunResult missing = run("hw import-ert " + src + " --capacity DRAM=256GB --out " + out);
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("no capacity for L1, L2, L3"), std::string::npos) << missing.err;
  auto j = run_json("hw import-ert " + src + " --capacity DRAM=256GB --capacity L1=1.5MiB --capacity L2=48MiB " +
                    "--capacity L3=64MiB --name lab-node --out " + out);
  EXPECT_EQ(j["out"], out);
  EXPECT_EQ(j["name"], "lab-node");
  // On it, 1 GFLOP of fp64 and 8 GB: 8e9 / 90.5e9 B/s = 88.4 ms of DRAM against
  // 1e9 / 320.25e9 FLOP/s = 3.1 ms of math, so memory-bound.
  auto op = run_json("op custom --flops 1e9 --bytes 8e9 --dtype fp64 --unit vector --hw " + out);
  EXPECT_DOUBLE_EQ(op["t_memory_s"].get<double>(), 8e9 / 90.5e9);
  EXPECT_DOUBLE_EQ(op["t_math_s"].get<double>(), 1e9 / 320.25e9);
  EXPECT_EQ(op["bound"], "memory");
  auto show = run_json("hw show " + out);
  EXPECT_EQ(show["name"], "lab-node");
  RunResult bad = run("hw import-ert " + src + " --capacity DRAM --out " + out);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--capacity"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace ridgeline::testing
