// `ridgeline validate`: real kernels on this machine, predictions from a chip file with
// round numbers, so the predictions (not the timings, which vary) are derived by hand.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "cli/cli_harness.hpp"

namespace ridgeline::testing {
namespace {

const nlohmann::json* find(const nlohmann::json& ops, const std::string& name) {
  for (const auto& op : ops) {
    if (op["name"] == name) return &op;
  }
  return nullptr;
}

TEST(ValidateCli, PredictionsByHandAndEveryOutputChecked) {
  const std::string hw = std::string(RIDGELINE_SOURCE_DIR) + "/tests/data/validate-host.yaml";
  auto j = run_json("validate --quick --threads 2 --hw " + hw);
  const auto& ops = j["ops"];
  ASSERT_GE(ops.size(), 14u);
  // No measured.threads in this file: nothing to warn about.
  for (const auto& n : j["notes"]) EXPECT_EQ(n.get<std::string>().find("measured on"), std::string::npos) << n;
  for (const auto& op : ops) {
    // Poisoned outputs (NaN) and random inputs: every kernel matched its double-precision reference.
    EXPECT_TRUE(op["checked"].get<bool>()) << op["name"] << " error " << op["max_rel_error"];
    EXPECT_GT(op["measured_s"].get<double>(), 0) << op["name"];
    EXPECT_GT(op["predicted_s"].get<double>(), 0) << op["name"];
    EXPECT_DOUBLE_EQ(op["ratio"].get<double>(), op["measured_s"].get<double>() / op["predicted_s"].get<double>());
  }
  // Working sets: main memory is four times the outermost cache (8 MiB), at least 64 MiB:
  // 67108864 bytes. triad a = b + s·c on n = floor(67108864 / 12) = 5592405 floats: the op
  // model moves 12n = 67108860 bytes; a is written without being read and the chip's stores
  // allocate: 4n = 22369620 bytes of write-allocate. At 10 GB/s:
  // (67108860 + 22369620) / 1e10 = 8.947848 ms, above the 2n / 1e11 = 0.11 ms of
  // arithmetic: memory-bound.
  EXPECT_TRUE(j["write_allocate"].get<bool>());
  const auto* triad = find(ops, "triad (DRAM)");
  ASSERT_NE(triad, nullptr);
  EXPECT_EQ((*triad)["level"], "DRAM");
  EXPECT_EQ((*triad)["bound"], "memory");
  EXPECT_DOUBLE_EQ((*triad)["model_bytes"].get<double>(), 67108860);
  EXPECT_DOUBLE_EQ((*triad)["write_allocate_bytes"].get<double>(), 22369620);
  EXPECT_NEAR((*triad)["predicted_s"].get<double>(), 8.947848e-3, 1e-12);
  // In cache: a quarter of the innermost cache of 1 MiB or more (L1, 1 MiB): 262144 bytes,
  // n = 21845 floats, 12n = 262140 bytes at L1's 400 GB/s = 655.35 ns, and no
  // write-allocate: the stores are done in L1, where a's lines already are.
  const auto* tc = find(ops, "triad (cache)");
  ASSERT_NE(tc, nullptr);
  EXPECT_EQ((*tc)["level"], "L1");
  EXPECT_EQ((*tc)["write_allocate_bytes"].get<double>(), 0);
  EXPECT_NEAR((*tc)["predicted_s"].get<double>(), 262140 / 400e9, 1e-15);
  // sgemm 512: 2·512³ = 268435456 FLOPs at 100 GFLOP/s = 2.68435456 ms; its 3 MiB of
  // operands sit in L3 (8 MiB; L2 is 2 MiB) at 50 GB/s: 63 us. Compute-bound.
  if (j["blas"].get<bool>()) {
    const auto* g = find(ops, "sgemm 512");
    ASSERT_NE(g, nullptr);
    EXPECT_EQ((*g)["level"], "L3");
    EXPECT_EQ((*g)["bound"], "compute");
    EXPECT_NEAR((*g)["predicted_s"].get<double>(), 2.68435456e-3, 1e-12);
  }
  // OpenBLAS's bf16 GEMM needs cblas_sbgemm, absent from Debian's OpenBLAS: skipped, with a
  // note saying so.
  EXPECT_FALSE(j["sbgemm"].get<bool>());
  if (j["blas"].get<bool>()) {
    bool said = false;
    for (const auto& n : j["notes"]) said |= n.get<std::string>().rfind("sbgemm skipped: ", 0) == 0;
    EXPECT_TRUE(said) << j["notes"];
  }
  // oneDNN's bf16 matmul and int8 GEMM (scripts/install-deps.sh installs it; only a build
  // without its headers goes without), against this file's 200 GFLOP/s bf16 and 400 GOP/s
  // int8. bf16 matmul 512: 268435456 FLOPs / 200e9 = 1.34217728 ms; A, B in bf16 and C in
  // fp32 are 2·524288 + 1048576 = 2 MiB, held by the 2 MiB L2. bf16 matmul 128: 4194304
  // FLOPs = 20.97152 us, 131072 bytes in L1. int8 gemm 512: 268435456 / 400e9 = 671.08864
  // us; 2·262144 + 1048576 = 1572864 bytes in L2. int8 gemm 128: 10.48576 us, 98304 bytes
  // in L1. All compute-bound (2 MiB at 200 GB/s is 10.5 us).
  // oneDNN 2.6 has no bf16 matmul without AVX-512 (avx512_core): then a note says so for
  // each size, and only the int8 rows are there.
  const std::string dnn = j["onednn"].get<std::string>();
  if (dnn.rfind("oneDNN not built in", 0) != 0) {
    EXPECT_EQ(dnn.rfind("oneDNN 2.", 0), 0u) << dnn;
    const bool bf16 = !j["onednn_bf16_impl"].get<std::string>().empty();
    if (!bf16) {
      bool said = false;
      for (const auto& n : j["notes"]) said |= n.get<std::string>().rfind("bf16 matmul 512 skipped: ", 0) == 0;
      EXPECT_TRUE(said) << j["notes"];
    }
    const struct {
      const char* name;
      const char* level;
      double bytes, seconds;
    } want[] = {{"bf16 matmul 512 (oneDNN)", "L2", 2097152, 1.34217728e-3},
                {"bf16 matmul 128 (oneDNN)", "L1", 131072, 20.97152e-6},
                {"int8 gemm 512 (oneDNN)", "L2", 1572864, 671.08864e-6},
                {"int8 gemm 128 (oneDNN)", "L1", 98304, 10.48576e-6}};
    for (const auto& w : want) {
      if (!bf16 && std::string(w.name).rfind("bf16", 0) == 0) continue;
      const auto* g = find(ops, w.name);
      ASSERT_NE(g, nullptr) << w.name;
      EXPECT_EQ((*g)["level"], w.level) << w.name;
      EXPECT_EQ((*g)["bound"], "compute") << w.name;
      EXPECT_DOUBLE_EQ((*g)["model_bytes"].get<double>(), w.bytes) << w.name;
      EXPECT_NEAR((*g)["predicted_s"].get<double>(), w.seconds, 1e-15) << w.name;
    }
  }
  // Fusion: the fused RMSNorm -> mul moves two tensors' worth of bytes less than the unfused.
  const auto* un = find(ops, "rmsnorm -> mul, unfused (DRAM)");
  const auto* fu = find(ops, "rmsnorm -> mul, fused (DRAM)");
  ASSERT_TRUE(un && fu);
  EXPECT_LT((*fu)["predicted_s"].get<double>(), (*un)["predicted_s"].get<double>());
  ASSERT_TRUE(j["summary"]["memory"].contains("median_ratio"));
  // The measured kernels on the chip's roofline: every kernel with FLOPs is a point.
  const std::string doc = std::string(RIDGELINE_TMP_DIR) + "/validate.json";
  std::ofstream(doc) << j.dump();
  size_t with_flops = 0;
  for (const auto& op : ops) with_flops += op["flops"].get<double>() > 0;
  auto p = run_json("plot roofline --hw " + hw + " --dtype fp32 --from " + doc + " --out " + std::string(RIDGELINE_TMP_DIR) + "/validate.svg");
  EXPECT_EQ(p["points"].get<size_t>(), with_flops);
}

// The same chip without write_allocate: stores move only their own bytes. Triad (DRAM)
// predicts 12n = 67108860 bytes at 10 GB/s = 6.710886 ms, no write-allocate bytes.
TEST(ValidateCli, StoresThatDoNotAllocateCountNoReadForOwnership) {
  std::ifstream in(std::string(RIDGELINE_SOURCE_DIR) + "/tests/data/validate-host.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string key = "write_allocate: true\n";
  ASSERT_NE(text.find(key), std::string::npos);
  text.erase(text.find(key), key.size());
  // Also says the ceilings were measured on 2 threads while the kernels run on 1.
  text += "measured:\n  threads: 2\n";
  const std::string hw = std::string(RIDGELINE_TMP_DIR) + "/validate-no-wa.yaml";
  std::ofstream(hw) << text;
  auto j = run_json("validate --quick --threads 1 --hw " + hw);
  EXPECT_FALSE(j["write_allocate"].get<bool>());
  bool warned = false;
  for (const auto& n : j["notes"]) warned |= n.get<std::string>().find("measured on 2 threads") != std::string::npos;
  EXPECT_TRUE(warned) << j["notes"];
  for (const auto& op : j["ops"]) EXPECT_EQ(op["write_allocate_bytes"].get<double>(), 0) << op["name"];
  const auto* triad = find(j["ops"], "triad (DRAM)");
  ASSERT_NE(triad, nullptr);
  EXPECT_NEAR((*triad)["predicted_s"].get<double>(), 6.710886e-3, 1e-12);
}

TEST(ValidateCli, BadInput) {
  RunResult r = run("validate --hw h100-sxm");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("measure"), std::string::npos) << r.err;
  r = run("validate --threads 0 --hw h100-sxm");
  EXPECT_EQ(r.status, 2);
  r = run("validate --quick --full");
  EXPECT_EQ(r.status, 2);
  // A misspelt group is named before anything is measured or timed.
  expect_bad("validate --only stream,gemms", "--only: 'gemms' is not a kernel group");
}

// --only stream: dot, axpy and triad, in cache and in DRAM, and nothing else.
TEST(ValidateCli, OnlyTheGroupsAskedFor) {
  const std::string hw = std::string(RIDGELINE_SOURCE_DIR) + "/tests/data/validate-host.yaml";
  auto j = run_json("validate --quick --threads 1 --only stream --hw " + hw);
  ASSERT_EQ(j["ops"].size(), 6u);
  for (const auto& op : j["ops"]) EXPECT_EQ(op["group"], "stream") << op["name"];
  EXPECT_FALSE(j["sbgemm"].get<bool>());
}

}  // namespace
}  // namespace ridgeline::testing
