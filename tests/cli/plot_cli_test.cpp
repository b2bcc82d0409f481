#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/cli_harness.hpp"

namespace ridgeline::testing {
namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(PlotCli, RooflineWithPoints) {
  const std::string dir = RIDGELINE_TMP_DIR;
  std::ofstream(dir + "/points.csv") << "name,intensity,flops_per_s\ngemm,227.6,9e14\nrmsnorm,1,4.8e12\n";
  auto j = run_json("plot roofline --hw h200,tpu-v5e --points " + dir + "/points.csv --out " + dir + "/roof.svg");
  EXPECT_EQ(j["points"], 2);
  const std::string svg = slurp(dir + "/roof.svg");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"point\""), 2u);
  EXPECT_EQ(count(svg, "class=\"ridge\""), 2u);       // one ridge point per chip
  EXPECT_EQ(count(svg, "class=\"ceiling\""), 2u);
  EXPECT_NE(svg.find("ridge 206.1"), std::string::npos);  // H200: 989.4 / 4.8
  EXPECT_FALSE(std::filesystem::exists(dir + "/roof.svg.tmp"));  // written atomically
}

TEST(PlotCli, SweepOfSeed003Q3) {
  // int8 weights, bf16 activations on a TPU v5e at 8.2e11 B/s: D = F = 4096 reaches the
  // 1.97e14 peak from m = 137 (critical 136.09), D = F = 1024 from m = 227 (226.31).
  const std::string out = std::string(RIDGELINE_TMP_DIR) + "/sweep.svg";
  auto j = run_json("plot sweep --hw tpu-v5e --mem-bw 8.2e11 --series 4096x4096,1024x1024 --a-dtype bf16 --b-dtype int8 --from 1 "
                    "--to 511 --out " + out);
  ASSERT_EQ(j["series"].size(), 2u);
  for (int s = 0; s < 2; ++s) {
    const auto& m = j["series"][s]["m"];
    const auto& y = j["series"][s]["attained_flops_per_s"];
    const int critical = s == 0 ? 137 : 227;
    for (size_t i = 0; i < m.size(); ++i) {
      const int mi = m[i].get<int>();
      if (mi >= critical) {
        EXPECT_NEAR(y[i].get<double>(), 1.97e14, 1e3) << mi;
      }
      if (mi < critical - 1) {
        EXPECT_LT(y[i].get<double>(), 1.97e14 * 0.999) << mi;
      }
    }
  }
  EXPECT_EQ(count(slurp(out), "class=\"series\""), 2u);
}

TEST(PlotCli, BadOutput) {
  RunResult r = run("plot roofline --hw h200 --out /nonexistent/dir/roof.svg");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ridgeline::testing

namespace ridgeline::testing {
namespace {

TEST(PlotCli, BreakdownFromInferAndTrainJson) {
  const std::string dir = RIDGELINE_TMP_DIR;
  RunResult inf = run("infer --model llama-3.1-8b --hw h100-sxm --batch 8 --prompt 512 --gen 64 --json");
  ASSERT_EQ(inf.status, 0);
  std::ofstream(dir + "/inf.json") << inf.out;
  auto j = run_json("plot breakdown " + dir + "/inf.json --out " + dir + "/bd.svg");
  EXPECT_EQ(j["bars"], 2);  // prefill and one decode step
  const std::string svg = slurp(dir + "/bd.svg");
  EXPECT_GE(count(svg, "class=\"segment\""), 8u);  // gemm, attention, norm, elementwise, ... in each bar
  // The prefill (milliseconds to seconds) and one decode step (milliseconds) in two panels,
  // each with its own axis: two charts nested in one SVG, each with its title.
  EXPECT_EQ(count(svg, "<svg"), 3u);
  EXPECT_NE(svg.find("llama-3.1-8b on h100-sxm: prefill by op kind (lower bound)"), std::string::npos);
  EXPECT_NE(svg.find("llama-3.1-8b on h100-sxm: one decode step by op kind (lower bound)"), std::string::npos);
  RunResult tr = run("train --model llama-2-7b --hw h100-sxm --gpus 8 --seq 2048 --json");
  ASSERT_EQ(tr.status, 0);
  std::ofstream(dir + "/tr.json") << tr.out;
  EXPECT_EQ(run_json("plot breakdown " + dir + "/tr.json --out " + dir + "/bt.svg")["bars"], 2);  // forward, backward
  // Without recomputation a GEMM's backward is twice its forward (input and weight
  // gradients); full recomputation runs each layer's forward once more inside backward: 3x,
  // except the LM head's GEMM, outside the layers (one micro-batch here: dp 8 x 1 = the batch).
  const auto t = nlohmann::json::parse(tr.out);
  EXPECT_NEAR(t["backward_time_by_kind_s"]["gemm"].get<double>(), 2 * t["forward_time_by_kind_s"]["gemm"].get<double>(),
              1e-9 * t["forward_time_by_kind_s"]["gemm"].get<double>());
  const auto full = run_json("train --model llama-2-7b --hw h100-sxm --gpus 8 --seq 2048 --recompute full");
  ASSERT_EQ(full["micro_batches"], 1);
  double head = 0;
  for (const auto& op : full["ops"]) {
    if (op["block"] == "head" && op["kind"] == "gemm") head += op["t_forward_lower_s"].get<double>() * op["repeat"].get<double>();
  }
  EXPECT_GT(head, 0);
  const double fwd = full["forward_time_by_kind_s"]["gemm"].get<double>();
  EXPECT_NEAR(full["backward_time_by_kind_s"]["gemm"].get<double>(), 3 * fwd - head, 1e-9 * fwd);
  std::ofstream(dir + "/bad.json") << "{\"x\": 1}";
  EXPECT_EQ(run("plot breakdown " + dir + "/bad.json --out " + dir + "/x.svg").status, 2);
}

TEST(PlotCli, MemoryFromInferAndTrainJson) {
  const std::string dir = RIDGELINE_TMP_DIR;
  RunResult inf = run("infer --model llama-3.1-8b --hw h100-sxm --batch 8 --prompt 512 --gen 64 --json");
  ASSERT_EQ(inf.status, 0);
  std::ofstream(dir + "/mem_inf.json") << inf.out;
  auto j = run_json("plot memory " + dir + "/mem_inf.json --out " + dir + "/mem.svg");
  // KV cache: 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 B (bf16) = 131072 B per token,
  // x 8 sequences x (512 + 64) positions = 603979776 B. Capacity: what the engine may use,
  // 0.9 (vLLM's gpu_memory_utilization) of the H100's 81559 MiB.
  EXPECT_DOUBLE_EQ(j["segments"]["kv_cache_bytes"].get<double>(), 603979776.0);
  EXPECT_DOUBLE_EQ(j["capacity_bytes"].get<double>(), 0.9 * 81559.0 * 1048576);
  EXPECT_EQ(j["segments"].size(), 3u);
  const std::string svg = slurp(dir + "/mem.svg");
  EXPECT_EQ(count(svg, "class=\"segment\""), 3u);
  EXPECT_EQ(count(svg, "class=\"limit\""), 1u);
  RunResult tr = run("train --model llama-2-7b --hw h100-sxm --gpus 8 --seq 2048 --json");
  ASSERT_EQ(tr.status, 0);
  std::ofstream(dir + "/mem_tr.json") << tr.out;
  auto t = run_json("plot memory " + dir + "/mem_tr.json --out " + dir + "/mem_tr.svg");
  // The five parts of the training footprint, nothing left out: they add up to the total.
  const auto total = nlohmann::json::parse(tr.out)["memory_per_gpu"]["total_bytes"].get<double>();
  double sum = 0;
  for (const auto& [k, v] : t["segments"].items()) sum += v.get<double>();
  EXPECT_EQ(t["segments"].size(), 5u);
  EXPECT_NEAR(sum, total, 1e-9 * total);
  std::ofstream(dir + "/mem_bad.json") << "{\"memory\": {\"weights_bytes\": \"lots\"}}";
  RunResult bad = run("plot memory " + dir + "/mem_bad.json --out " + dir + "/x.svg");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("memory.weights_bytes"), std::string::npos) << bad.err;
}

TEST(PlotCli, PngNeedsTheConverter) {
  const std::string out = std::string(RIDGELINE_TMP_DIR) + "/roof.png";
  RunResult r = run("plot roofline --hw h200 --out " + out);
  if (std::system("command -v rsvg-convert >/dev/null 2>&1") == 0) {
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(slurp(out).substr(1, 3), "PNG");
  } else {
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("rsvg-convert"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace ridgeline::testing

namespace ridgeline::testing {
namespace {

TEST(PlotCli, OpSweepOverAnyDimension) {
  // bf16 (m,4096)x(4096,4096) on an H200: intensity m·4096/(2m + 4096) FLOPs/byte passes the
  // ridge 989.4e12 / 4.8e12 = 206.125 at m = 844288 / 3683.75 = 229.19: compute-bound from 230.
  const std::string out = std::string(RIDGELINE_TMP_DIR) + "/op_sweep.svg";
  auto j = run_json("op matmul --k 4096 --n 4096 --sweep m=1..512 --hw h200 --plot " + out);
  ASSERT_EQ(j["values"].size(), 512u);  // every m: 512 values are fewer than 600
  int first_compute = 0;
  for (size_t i = 0; i < j["values"].size(); ++i) {
    if (j["bound"][i] == "compute") {
      first_compute = j["values"][i].get<int>();
      break;
    }
  }
  EXPECT_EQ(first_compute, 230);
  EXPECT_EQ(count(slurp(out), "class=\"series\""), 1u);
  // Attention over the context: 128 .. 131072 spans three decades: 600 geometric values.
  auto a = run_json("op attention --heads 32 --kv-heads 8 --q-len 1 --sweep kv-len=128..131072 --hw h100-sxm");
  ASSERT_EQ(a["values"].size(), 600u);
  EXPECT_EQ(a["values"][0].get<double>(), 128);
  EXPECT_EQ(a["values"][599].get<double>(), 131072);
  for (size_t i = 1; i < 600; ++i) EXPECT_GT(a["values"][i].get<double>(), a["values"][i - 1].get<double>());
}

TEST(PlotCli, OpSweepBadInput) {
  for (const char* bad : {"--sweep m=5..1", "--sweep x=1..2", "--sweep m=1-2", "--sweep heads=1..2", "--plot a.svg", "--m 4 --sweep m=1..2",
                          "--sweep k=1..2"}) {
    RunResult r = run(std::string("op matmul --k 8 --n 8 ") + bad);
    EXPECT_EQ(r.status, 2) << bad << r.err;
    const std::string b(bad);
    // The message names the flag at fault: --sweep, --plot, --m (given and swept, or missing), --k (given and swept).
    EXPECT_TRUE(r.err.find("--sweep") != std::string::npos || r.err.find("--plot") != std::string::npos ||
                r.err.find("--m:") != std::string::npos || r.err.find("--k:") != std::string::npos) << b << ": " << r.err;
  }
}

}  // namespace
}  // namespace ridgeline::testing

namespace ridgeline::testing {
namespace {

TEST(PlotCli, RooflineCeilingPerDtypeAndPointsFromResults) {
  const std::string dir = RIDGELINE_TMP_DIR;
  // H100 SXM: bf16 989.4 TFLOP/s dense; fp8 and int8 both 1979 TFLOP/s: one extra ceiling,
  // labelled with both dtypes.
  run_json("plot roofline --hw h100-sxm --dtype bf16,fp8,int8 --out " + dir + "/dtypes.svg");
  const std::string svg = slurp(dir + "/dtypes.svg");
  EXPECT_EQ(count(svg, "class=\"ceiling dtype\""), 1u);
  EXPECT_NE(svg.find("fp8_e4m3, int8 1.979 PFLOP/s"), std::string::npos);
  // The ops of an infer document: every op with FLOPs, bytes and a time.
  const std::string doc = dir + "/infer_points.json";
  RunResult r = run("infer --model llama-3.1-8b --hw h100-sxm --batch 4 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  std::ofstream(doc) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  size_t expected = 0;
  for (const auto& op : j["ops"]) {
    expected += op["flops"].get<double>() > 0 && op["bytes"].get<double>() > 0 && op["attained_flops_per_s"].get<double>() > 0;
  }
  ASSERT_GT(expected, 10u);
  auto p = run_json("plot roofline --hw h100-sxm --from " + doc + " --out " + dir + "/from.svg");
  EXPECT_EQ(p["points"].get<size_t>(), expected);
  EXPECT_EQ(count(slurp(dir + "/from.svg"), "class=\"point\""), expected);
  // One op's document: one point.
  r = run("op matmul --m 256 --k 4096 --n 4096 --hw h200 --json");
  ASSERT_EQ(r.status, 0);
  std::ofstream(dir + "/one_op.json") << r.out;
  EXPECT_EQ(run_json("plot roofline --hw h200 --from " + dir + "/one_op.json --out " + dir + "/one.svg")["points"], 1);
  EXPECT_EQ(run("plot roofline --hw h200 --from " + dir + "/dtypes.svg --out " + dir + "/x.svg").status, 2);
}

}  // namespace
}  // namespace ridgeline::testing
