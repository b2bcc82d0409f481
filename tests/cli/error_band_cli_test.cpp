// How sure an answer is: every infer, serve and search serve quotes the error band of its
// class from the validation table (docs/serving.md#errors-by-class), and search serve says
// each deployment's distance to its SLO and sizes fleets with headroom (--margin).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "cli/cli_harness.hpp"

namespace ridgeline::testing {
namespace {

// The table embedded at build time, read here from the repository's copy: its classes, and
// its pools over the engines (what a class without rows of a metric borrows).
nlohmann::json bands_file() { return nlohmann::json::parse(slurp(std::string(RIDGELINE_SOURCE_DIR) + "/data/validation/serving_error_bands.json")); }
nlohmann::json table() { return bands_file()["classes"]; }
nlohmann::json pooled() { return bands_file()["pooled"]; }

void expect_figures(const nlohmann::json& got, const nlohmann::json& want, const std::string& what) {
  EXPECT_EQ(got["n"], want["n"]) << what;
  for (const char* k : {"median", "median_abs", "p90_abs", "low", "high"}) {
    EXPECT_DOUBLE_EQ(got[k].get<double>(), want[k].get<double>()) << what << " " << k;
  }
}

// The pools a class borrows from, in order (io::quoted_band): a serving engine's the same dtype
// and kind over every engine, the kind over every dtype, then every row; the static engine's its
// own rows by kind. An engine on ROCm ("sglang on ROCm") takes its platform's pools of its kind
// first, then the others'.
std::vector<std::string> pools_of(const std::string& cls) {
  const std::string kind = cls.substr(cls.rfind(", ") + 2);
  const std::string head = cls.substr(0, cls.rfind(", "));
  std::string engine = head.substr(0, head.rfind(", "));
  const std::string dtype = head.substr(head.rfind(", ") + 2);
  const std::string rocm = " on ROCm";
  const bool on_rocm = engine.size() > rocm.size() && engine.substr(engine.size() - rocm.size()) == rocm;
  if (on_rocm) engine.resize(engine.size() - rocm.size());
  if (engine == "static") {
    if (on_rocm) return {"static on ROCm, any dtype, " + kind, "static, any dtype, " + kind};
    return {"static, any dtype, " + kind};
  }
  std::vector<std::string> pools;
  if (on_rocm) pools = {"any engine on ROCm, " + dtype + ", " + kind, "any engine on ROCm, any dtype, " + kind};
  for (const std::string& p : {"any engine, " + dtype + ", " + kind, "any engine, any dtype, " + kind, std::string("any engine, any dtype, any kind")}) {
    pools.push_back(p);
  }
  return pools;
}

// Rows a class needs of a metric to quote its own band: a median with a middle row.
constexpr int kQuotedRows = 3;

// The median error a class quotes for a metric: its own row's where it has kQuotedRows rows or
// more, else the first of its pools' that has the metric.
double quoted_median(const std::string& cls, const std::string& metric) {
  const nlohmann::json t = table(), p = pooled();
  if (t.contains(cls) && t[cls].contains(metric) && t[cls][metric]["n"].get<int>() >= kQuotedRows) return t[cls][metric]["median"].get<double>();
  for (const std::string& pool : pools_of(cls)) {
    if (p.contains(pool) && p[pool].contains(metric)) return p[pool][metric]["median"].get<double>();
  }
  ADD_FAILURE() << cls << " quotes no " << metric;
  return 0;
}

// An answer's band is its class's row of the table, every metric's figures as written where
// the class has three rows of it or more (a median with a middle row); a metric the class has
// fewer rows of, or none, is the first pool's that has it, named by its `from`, the few own rows
// beside it (`own`: their number, median and extremes); and it quotes every metric its class or
// a pool has, no other.
void expect_band(const nlohmann::json& band, const std::string& cls) {
  ASSERT_EQ(band["class"], cls);
  const nlohmann::json t = table(), p = pooled();
  ASSERT_TRUE(t.contains(cls)) << cls;
  EXPECT_TRUE(band["own_rows"].get<bool>());
  std::set<std::string> want;
  for (const auto& [metric, v] : t[cls].items()) {
    if (v["n"].get<int>() < kQuotedRows) continue;
    want.insert(metric);
    ASSERT_TRUE(band["metrics"].contains(metric)) << metric;
    EXPECT_FALSE(band["metrics"][metric].contains("from")) << metric;
    EXPECT_FALSE(band["metrics"][metric].contains("own")) << metric;
    expect_figures(band["metrics"][metric], v, metric);
  }
  for (const std::string& pool : pools_of(cls)) {
    if (!p.contains(pool)) continue;
    for (const auto& [metric, v] : p[pool].items()) {
      if (!want.insert(metric).second) continue;  // the class's own, or an earlier pool's
      ASSERT_TRUE(band["metrics"].contains(metric)) << metric;
      const nlohmann::json& got = band["metrics"][metric];
      EXPECT_EQ(got["from"], pool) << metric;
      expect_figures(got, v, metric);
      if (!t[cls].contains(metric)) {
        EXPECT_FALSE(got.contains("own")) << metric;
        continue;
      }
      const nlohmann::json& own = t[cls][metric];
      ASSERT_TRUE(got.contains("own")) << metric;
      EXPECT_EQ(got["own"]["n"], own["n"]) << metric;
      for (const char* k : {"median", "low", "high"}) EXPECT_DOUBLE_EQ(got["own"][k].get<double>(), own[k].get<double>()) << metric << k;
    }
  }
  std::set<std::string> got;
  for (const auto& [metric, v] : band["metrics"].items()) got.insert(metric);
  EXPECT_EQ(got, want);
}

// The class is (engine, the dtype the GEMMs run in, dense or MoE); 4-bit float weights are
// their own class whatever they are multiplied in (the table's NVFP4 rows).
TEST(ErrorBandCli, EachAnswerQuotesItsClassRow) {
  const std::string serve = "serve --model llama-3.1-8b --prompt 256 --gen 32 --qps 2 --requests 40 ";
  // bf16 weights on vLLM.
  expect_band(run_json(serve + "--hw h100-sxm")["error_band"], "vllm, 16-bit, dense");
  // fp8 weights where the chip multiplies fp8 (H100): W8A8, class fp8; on an A100, which has
  // no fp8 rate, they are dequantised and multiplied in bf16: class 16-bit.
  EXPECT_EQ(run_json(serve + "--hw h100-sxm --weight-dtype fp8")["error_band"]["class"], "vllm, fp8, dense");
  EXPECT_EQ(run_json(serve + "--hw a100-80gb --weight-dtype fp8")["error_band"]["class"], "vllm, 16-bit, dense");
  // NVFP4 on a B200 with TensorRT-LLM: the table's four throughput rows.
  expect_band(run_json(serve + "--hw b200 --engine trtllm --weight-dtype fp4")["error_band"], "trtllm, fp4, dense");
  // DeepSeek-V3's checkpoint of fp8 blocks, a MoE: its class from the checkpoint, not a flag.
  expect_band(run_json("serve --model deepseek-v3 --hw h200 --tp 8 --prompt 256 --gen 16 --qps 1 --requests 8")["error_band"],
              "vllm, fp8, MoE");
  // infer is the static engine; its band is the TensorRT-LLM v0.5 first-token rows.
  expect_band(run_json("infer --model llama-2-7b --hw h100-sxm --batch 1 --prompt 128 --gen 8")["error_band"], "static, 16-bit, dense");
  // A class the table has no row for says so, in JSON and in text, and quotes its pools'
  // figures instead (next test).
  const nlohmann::json none = run_json(serve + "--hw h100-sxm --engine sglang --weight-dtype fp8")["error_band"];
  EXPECT_EQ(none["class"], "sglang, fp8, dense");
  EXPECT_FALSE(table().contains("sglang, fp8, dense"));
  EXPECT_EQ(none["metrics"].size(), 4u);
  EXPECT_FALSE(none["own_rows"].get<bool>());
  EXPECT_NE(none["note"].get<std::string>().find("no published measurement"), std::string::npos);
  const RunResult text = run(serve + "--hw h100-sxm --engine sglang --weight-dtype fp8");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("error band (sglang, fp8, dense; no published measurement of this class, its pooled classes' instead"),
            std::string::npos)
      << text.out;
}

// A class without rows of a metric quotes the errors of the modelled serving engines pooled:
// first of its dtype and kind, then of its kind over every dtype, then all; the releases no preset
// follows ("(not modelled)": NIM 1.8) and the static engine's rows are in no serving pool. The figures below are read off the docs' tables (docs/serving.md#errors-by-class:
// each row's error in whole percent).
TEST(ErrorBandCli, AClassWithoutRowsBorrowsItsPools) {
  const nlohmann::json t = table(), p = pooled();
  // SGLang serving fp8 weights of a dense model (Llama-3.1-8B on an H100): no row of its own.
  const nlohmann::json dense = run_json("serve --model llama-3.1-8b --prompt 256 --gen 32 --qps 2 --requests 40 --hw h100-sxm "
                                        "--engine sglang --weight-dtype fp8")["error_band"];
  EXPECT_FALSE(dense["own_rows"].get<bool>());
  const nlohmann::json& m = dense["metrics"];
  // TTFT: no modelled serving row has fp8 dense TTFTs (NIM's are not modelled, TensorRT-LLM
  // 0.5's first tokens are the static engine's): the dense pool over every dtype, the serving
  // engines' 42 dense TTFTs. SGLang 0.3's -1, -8 (8B on an A100 at 4 and 8 req/s), -16, -19
  // (70B on 4 x H100); vLLM 0.19's -15, -14; vLLM 0.6's -9, -23 (8B), -33, -36 (70B); and
  // TensorRT-LLM 0.14's 32 (trtllm@0.15: 70B on H100 at 256 out -8 -11 -19 -27, at 16 out -6 -4
  // -7 -18; 8B on H100 -11 -12 -15 -17, -9 -9 -11 -8; 70B on H200 -7 -7 -19 -30, -3 -2 -6 -17;
  // 8B on H200 -8 -14 -14 -16, -6 -8 -7 -5). Sorted, the 21st and 22nd are -11.27 (8B on H100,
  // 256 out, 2 req/s) and -11.14 (70B on H100, 256 out, 4 req/s): a median of -11.2%.
  EXPECT_EQ(m["ttft"]["from"], "any engine, any dtype, dense");
  EXPECT_EQ(m["ttft"]["n"], 4 + 2 + 4 + 32);
  EXPECT_NEAR(m["ttft"]["median"].get<double>(), (-0.1127 - 0.1114) / 2, 2e-4);
  // Output tokens/s: TensorRT-LLM's twelve fp8 rows are the only modelled fp8 dense ones, so
  // that pool is that class exactly.
  EXPECT_EQ(m["output_tps"]["from"], "any engine, fp8, dense");
  expect_figures(m["output_tps"], t["trtllm, fp8, dense"]["output_tps"], "output_tps");
  // TPOT and E2E: no fp8 dense row has one: the dense pool, the 16-bit classes' 8 (SGLang) + 8
  // (vLLM) + 4 (vLLM 0.6) + 32 (TensorRT-LLM 0.14's ITLs) = 52 TPOTs and 4 (SGLang) + 10 (vLLM
  // 0.6) = 14 E2Es.
  EXPECT_EQ(m["tpot"]["from"], "any engine, any dtype, dense");
  EXPECT_EQ(m["tpot"]["n"], 8 + 8 + 4 + 32);
  EXPECT_EQ(m["e2e"]["from"], "any engine, any dtype, dense");
  EXPECT_EQ(m["e2e"]["n"], 4 + 10);
  // Mixtral's 16-bit experts on SGLang: no MoE row is 16-bit, so the MoE pool over every dtype. Its
  // 59 TTFTs are vLLM's 22: 0.8.4's 16 (DGX TP 8: -39 -25 -24 -20; DGX EP 8: -69 -31 -29 -29;
  // Nebius TP 8: -88 -22 -22 -26; Nebius EP 8: -71 -51 -47 -30), November 2025's 3 (-33 -27 -27)
  // and gpustack's 0.11.0 bursts 3 (-16 -28 -32); TensorRT-LLM's 11, 0.21's 6 (-41 -34 -34 -21 -53
  // -44) and InferenceX's 1.3.0rc14 on the B200 5 (-56 -36 -48 -33 -24); SGLang's 26,
  // bench_one_batch's 2 (-54, +4), gpustack's 0.5.3 bursts 4 (-9 -23 -24 -29), InferenceX's 0.5.12
  // clients on the H200 10 (1k/1k at 4-64: -34 -27 -20 -36 -25; 8k/1k: +5 -4 -13 -13 -38) and on the
  // B200 10 (1k/1k at 1-64: -38 -23 -30 -36 -18 -19 -61; 8k/1k: -52 at TP 8, -49 -45 at TP 4),
  // docs/serving.md's tables. Sorted: -88 -71 -69 -61 -56 -54 -53 -52 -51 -49 -48 -47 -45 -44 -41
  // -39 -38 -38 -36 -36 -36 -34 -34 -34 -33 -33 -32 -31 -30 | -30.11 | -29 -29 -29 -28 -27 -27 -27
  // -26 -25 -25 -24 -24 -24 -23 -23 -22 -22 -21 -20 -20 -19 -18 -16 -13 -13 -9 -4 +4 +5: a median
  // of -30.1%, the middle one of 59 (vLLM 0.8.4's Nebius EP 8 at ShareGPT, 94.5 against 135.2 ms;
  // before it InferenceX's B200 1k/1k at 4 clients under SGLang, -30.47%), the highest +5%
  // (InferenceX's H200 8k/1k at 4 clients, 392 against 373 ms: +4.99% before rounding). Its TPOTs
  // (ITLs among them) are vLLM's 16 + 3, TensorRT-LLM's 3 + 6 + 5 and SGLang's 2 + 4 + 10 + 10;
  // its throughputs vLLM's 16 + 3, TensorRT-LLM's 5 and SGLang's 4 + 10 + 10. No MoE row has an
  // E2E: every serving row's, the same 14 as above.
  const nlohmann::json moe = run_json("serve --model mixtral-8x7b --hw h100-sxm --tp 2 --engine sglang --prompt 256 --gen 16 --qps 1 "
                                      "--requests 8")["error_band"]["metrics"];
  EXPECT_EQ(moe["ttft"]["n"], 22 + 11 + 26);
  EXPECT_NEAR(moe["ttft"]["median"].get<double>(), -0.3011, 2e-4);
  EXPECT_NEAR(moe["ttft"]["high"].get<double>(), 0.0499, 0.001);
  EXPECT_EQ(moe["tpot"]["n"], 19 + 14 + 26);
  EXPECT_EQ(moe["output_tps"]["n"], 19 + 5 + 24);
  for (const char* k : {"ttft", "tpot", "output_tps"}) EXPECT_EQ(moe[k]["from"], "any engine, any dtype, MoE") << k;
  EXPECT_EQ(moe["e2e"]["from"], "any engine, any dtype, any kind");
  EXPECT_EQ(moe["e2e"]["n"], 4 + 10);
  // DeepSeek-V3 on SGLang has rows of its own now (bench_one_batch's 2, gpustack's 4, InferenceX's 10 + 10): its
  // class's TTFTs, TPOTs and throughputs, E2E from every serving row.
  const nlohmann::json sgl = run_json("serve --model deepseek-v3 --hw h200 --tp 8 --engine sglang --prompt 256 --gen 16 --qps 1 "
                                      "--requests 8")["error_band"];
  EXPECT_TRUE(sgl["own_rows"].get<bool>());
  expect_band(sgl, "sglang, fp8, MoE");
  for (const char* k : {"ttft", "tpot", "output_tps"}) expect_figures(sgl["metrics"][k], t["sglang, fp8, MoE"][k], k);
  EXPECT_EQ(sgl["metrics"]["ttft"]["n"], 2 + 4 + 10 + 10);
  EXPECT_EQ(sgl["metrics"]["e2e"]["from"], "any engine, any dtype, any kind");
  // vLLM's 16-bit dense class has 2 TTFTs of its own (vLLM 0.19's eight 20k-token clients, with
  // a bf16 and an fp8 cache: -15.05% and -13.57%), too few to quote (a median of two is their
  // mean): the 16-bit dense pool's 42 above, its own two beside. The text says both: the pool's
  // 42 and the two of its own, their median (-14%: (-15.05 - 13.57) / 2 = -14.31) and extremes.
  const nlohmann::json v16 = run_json("serve --model llama-3.1-8b --hw h100-sxm --engine vllm --prompt 256 --gen 16 --qps 1 "
                                      "--requests 8")["error_band"];
  EXPECT_TRUE(v16["own_rows"].get<bool>());
  expect_band(v16, "vllm, 16-bit, dense");
  EXPECT_EQ(v16["metrics"]["ttft"]["from"], "any engine, 16-bit, dense");
  EXPECT_EQ(v16["metrics"]["ttft"]["n"], 42);
  EXPECT_EQ(v16["metrics"]["ttft"]["own"]["n"], 2);
  EXPECT_NEAR(v16["metrics"]["ttft"]["own"]["low"].get<double>(), -0.1505, 0.001);
  EXPECT_NEAR(v16["metrics"]["ttft"]["own"]["high"].get<double>(), -0.1357, 0.001);
  const RunResult v16_text = run("serve --model llama-3.1-8b --hw h100-sxm --engine vllm --prompt 256 --gen 16 --qps 1 --requests 8");
  ASSERT_EQ(v16_text.status, 0) << v16_text.err;
  EXPECT_NE(v16_text.out.find("(42 runs of any engine, 16-bit, dense; its own 2, too few: -14% median, -15% to -14%)"),
            std::string::npos)
      << v16_text.out;
  // A class with rows of a metric keeps them: vLLM's own 22 TTFTs, not the pool's 34.
  const nlohmann::json vllm = run_json("serve --model deepseek-v3 --hw h200 --tp 8 --prompt 256 --gen 16 --qps 1 --requests 8")["error_band"];
  expect_band(vllm, "vllm, fp8, MoE");
  EXPECT_EQ(vllm["metrics"]["ttft"]["n"], 22);
  // The static engine (infer) borrows nothing from serving: Llama's class has its own TTFTs and
  // its pool has nothing else; DeepSeek's has no row and no pool (TensorRT-LLM 0.5's rows are
  // dense), so it quotes no band, and says so.
  expect_band(run_json("infer --model llama-2-7b --hw h100-sxm --batch 1 --prompt 128 --gen 8")["error_band"], "static, 16-bit, dense");
  const nlohmann::json ds = run_json("infer --model deepseek-v3 --hw h200 --chips 8 --prompt 128 --gen 8")["error_band"];
  EXPECT_EQ(ds["class"], "static, fp8, MoE");
  EXPECT_TRUE(ds["metrics"].empty());
  EXPECT_NE(ds["note"].get<std::string>().find("no published measurement"), std::string::npos);
  // A static class without rows borrows its own engine's pool, in the file's order: fp4 weights
  // under infer take TensorRT-LLM 0.5's eight first tokens, whatever their dtype (docs/serving.md's
  // table: -33 -18 -36 -5 on the H100 in fp8, -19 -6 -16 -0 on the A100 in fp16). Sorted: -36 -33
  // -19 -18 | -16 -6 -5 -0: a median of (-18 - 16) / 2 = -17%, within a point (the rounding).
  const nlohmann::json fp4 = run_json("infer --model llama-2-7b --hw b200 --batch 1 --prompt 128 --gen 8 --weight-dtype fp4")["error_band"];
  EXPECT_EQ(fp4["class"], "static, fp4, dense");
  EXPECT_FALSE(fp4["own_rows"].get<bool>());
  EXPECT_EQ(fp4["metrics"]["ttft"]["from"], "static, any dtype, dense");
  EXPECT_EQ(fp4["metrics"]["ttft"]["n"], 4 + 4);
  EXPECT_NEAR(fp4["metrics"]["ttft"]["median"].get<double>(), -0.17, 0.01);
  // The order the answers follow is the file's, one list per engine family (serving_validation.py writes it).
  const nlohmann::json order = bands_file()["pool_order"];
  EXPECT_EQ(order["serving"].size(), 3u);
  EXPECT_EQ(order["static"].size(), 1u);
  // The pools hold no NIM row: the serving fp8 dense pool has throughputs only (TensorRT-LLM's).
  EXPECT_EQ(p["any engine, fp8, dense"].size(), 1u);
  // serve --slo reads a borrowed lean as a class's own and names its pool, in JSON and text:
  // SGLang's 16-bit Mixtral TTFT target is read through the MoE pool's -30% (above); vLLM's Llama
  // TTFT through the 16-bit dense pool's (its own class has two TTFTs, too few), its TPOT through
  // its own class's row (8), which names no pool.
  const std::string slo = "serve --model mixtral-8x7b --hw h100-sxm --tp 2 --engine sglang --prompt 256 --gen 16 --qps 1 --requests 8 "
                          "--slo ttft_p99=10s,tpot_p99=1s";
  const nlohmann::json read = run_json(slo)["slo_with_error_band"]["targets"];
  EXPECT_EQ(read["ttft_p99"]["error_from"], "any engine, any dtype, MoE");
  EXPECT_DOUBLE_EQ(read["ttft_p99"]["median_error"].get<double>(), p["any engine, any dtype, MoE"]["ttft"]["median"].get<double>());
  const RunResult text = run(slo);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("ttft_p99 "), std::string::npos);
  EXPECT_NE(text.out.find("/ (1 -30% of any engine, any dtype, MoE) = "), std::string::npos) << text.out;
  const nlohmann::json own = run_json("serve --model llama-3.1-8b --hw h100-sxm --qps 2 --prompt 256 --gen 32 --requests 40 "
                                      "--weight-dtype bf16 --kv-dtype bf16 --slo ttft_p99=10s,tpot_p99=1s")["slo_with_error_band"]["targets"];
  EXPECT_EQ(own["ttft_p99"]["error_from"], "any engine, 16-bit, dense");
  EXPECT_TRUE(own["tpot_p99"]["error_from"].is_null());
}

// An engine's ROCm build is a class of its own (hw::is_rocm_gpu: the MI300X's and MI325X's gfx942),
// whose rows fill pools of their platform alone: InferenceX's five runs of SGLang 0.5.19 serving
// DeepSeek-R1 on 8 MI325X (docs/serving.md's table) are the class "sglang on ROCm, fp8, MoE" and
// every ROCm pool of fp8 or MoE; no other chip's class borrows them.
TEST(ErrorBandCli, AnEngineOnRocmIsAClassOfItsOwn) {
  const nlohmann::json t = table(), p = pooled();
  const std::string serve = " --model deepseek-r1 --tp 8 --prompt 256 --gen 16 --qps 1 --requests 8";
  // SGLang on the MI325X: its own five TTFTs, TPOTs and throughputs; no ROCm row has an E2E, so
  // that one is every serving row's (the 4 SGLang 0.3 + 10 vLLM 0.6 E2Es: the ROCm pools' none).
  const nlohmann::json sgl = run_json("serve --hw mi325x --engine sglang" + serve)["error_band"];
  expect_band(sgl, "sglang on ROCm, fp8, MoE");
  for (const char* k : {"ttft", "tpot", "output_tps"}) EXPECT_EQ(sgl["metrics"][k]["n"], 5) << k;
  EXPECT_EQ(sgl["metrics"]["e2e"]["from"], "any engine, any dtype, any kind");
  EXPECT_EQ(sgl["metrics"]["e2e"]["n"], 4 + 10);
  // The ROCm pools hold those five rows and nothing else: each is the class's row exactly.
  for (const char* pool : {"any engine on ROCm, fp8, MoE", "any engine on ROCm, any dtype, MoE"}) {
    for (const char* k : {"ttft", "tpot", "output_tps"}) expect_figures(p[pool][k], t["sglang on ROCm, fp8, MoE"][k], std::string(pool) + " " + k);
  }
  // vLLM on the MI300X has no row: it borrows the ROCm pool of its dtype and kind first.
  const nlohmann::json vllm = run_json("serve --hw mi300x --engine vllm" + serve)["error_band"];
  EXPECT_EQ(vllm["class"], "vllm on ROCm, fp8, MoE");
  EXPECT_FALSE(vllm["own_rows"].get<bool>());
  for (const char* k : {"ttft", "tpot", "output_tps"}) EXPECT_EQ(vllm["metrics"][k]["from"], "any engine on ROCm, fp8, MoE") << k;
  // A dense model on ROCm has no ROCm pool of its kind (AMD's vLLM 0.9 rows are not modelled,
  // in no pool): the other chips' dense pools, as on an H100, before any MoE row.
  const nlohmann::json dense = run_json("serve --hw mi300x --engine vllm --model llama-3.1-8b --prompt 256 --gen 16 --qps 1 --requests 8")["error_band"];
  EXPECT_EQ(dense["class"], "vllm on ROCm, 16-bit, dense");
  EXPECT_EQ(dense["metrics"]["ttft"]["from"], "any engine, 16-bit, dense");
  // infer's static engine on the MI300X: "static on ROCm", its ROCm pool empty, TensorRT-LLM 0.5's eight.
  const nlohmann::json st = run_json("infer --model llama-2-7b --hw mi300x --batch 1 --prompt 128 --gen 8")["error_band"];
  EXPECT_EQ(st["class"], "static on ROCm, 16-bit, dense");
  EXPECT_EQ(st["metrics"]["ttft"]["from"], "static, any dtype, dense");
  EXPECT_EQ(st["metrics"]["ttft"]["n"], 8);
  // SGLang's DeepSeek class on the H200 keeps its 26 TTFTs, not the MI325X's 5 (above).
  EXPECT_EQ(run_json("serve --hw h200 --engine sglang" + serve)["error_band"]["metrics"]["ttft"]["n"], 26);
  // The text names the class.
  const RunResult text = run("serve --hw mi325x --engine sglang" + serve);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("error band (sglang on ROCm, fp8, MoE; against published runs"), std::string::npos) << text.out;
  // Each family's order is in the file.
  const nlohmann::json order = bands_file()["pool_order"];
  EXPECT_EQ(order["serving on ROCm"].size(), 5u);
  EXPECT_EQ(order["static on ROCm"].size(), 2u);
}

TEST(ErrorBandCli, SearchServeQuotesTheBestsClassAndItsText) {
  const std::string q = "search serve --model llama-3.1-8b --hw h100-sxm --qps 5 --prompt 256 --gen 32 --requests 100 "
                        "--slo ttft_p99=1s,tpot_p99=50ms --tp 1 --top 1 --weight-dtype bf16 --kv-dtype bf16";  // the 16-bit class (fp8 is searched by default)
  expect_band(run_json(q)["error_band"], "vllm, 16-bit, dense");
  const RunResult r = run(q);
  ASSERT_EQ(r.status, 0) << r.err;
  // The text line carries the TPOT figures of the row: its median error in whole percent.
  const nlohmann::json tpot = table()["vllm, 16-bit, dense"]["tpot"];
  const std::string line = "error band (vllm, 16-bit, dense; against published runs";
  EXPECT_NE(r.out.find(line), std::string::npos) << r.out;
  char want[96];
  std::snprintf(want, sizeof want, "TPOT %+.0f%% median", 100 * tpot["median"].get<double>());
  EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
}

// The SLO binding a deployment and its slack: the least 1 - p99 / target over the targets
// asked, recomputed here from each row's own percentiles.
double slack_of(const nlohmann::json& d, double ttft_target, double tpot_target, std::string& binding) {
  const double ttft = 1 - d["ttft_s"]["p99"].get<double>() / ttft_target;
  const double tpot = 1 - d["tpot_s"]["p99"].get<double>() / tpot_target;
  binding = ttft < tpot ? "ttft" : "tpot";
  return std::min(ttft, tpot);
}

TEST(ErrorBandCli, ServeReadsItsSloThroughTheClasssMedianErrors) {
  // Each target's percentile divided by 1 + e, e the median error the class quotes of its metric
  // where negative (ITL's the TPOT line): what a measurement would typically read, against the
  // target. The class's TTFT is its pool's (two rows of its own: too few), its TPOT its own.
  const nlohmann::json j = run_json("serve --model llama-3.1-8b --hw h100-sxm --qps 20 --prompt 512 --gen 128 --requests 300 "
                                    "--weight-dtype bf16 --kv-dtype bf16 --slo ttft_p99=300ms,tpot_p99=11ms,itl_p90=20ms");
  const nlohmann::json row = table()["vllm, 16-bit, dense"];
  ASSERT_LT(row["ttft"]["n"].get<int>(), 3);
  ASSERT_GE(row["tpot"]["n"].get<int>(), 3);
  const nlohmann::json& b = j["slo_with_error_band"];
  EXPECT_EQ(b["class"], "vllm, 16-bit, dense");
  bool met = true;
  for (const auto& [name, key, metric, stat, limit] :
       {std::tuple{"ttft_p99", "ttft", "ttft_s", "p99", 0.3}, {"tpot_p99", "tpot", "tpot_s", "p99", 0.011}, {"itl_p90", "tpot", "itl_s", "p90", 0.02}}) {
    const double e = std::min(0.0, quoted_median("vllm, 16-bit, dense", key)), p = j[metric][stat].get<double>();
    const nlohmann::json& g = b["targets"][name];
    EXPECT_DOUBLE_EQ(g["predicted_s"].get<double>(), p) << name;
    EXPECT_DOUBLE_EQ(g["median_error"].get<double>(), e) << name;
    EXPECT_DOUBLE_EQ(g["expected_s"].get<double>(), p / (1 + e)) << name;
    EXPECT_EQ(g["within"].get<bool>(), p / (1 + e) <= limit) << name;
    met = met && p / (1 + e) <= limit;
  }
  EXPECT_EQ(b["met"].get<bool>(), met);
  EXPECT_TRUE(run_json("serve --model llama-3.1-8b --hw h100-sxm --qps 2 --requests 20")["slo_with_error_band"].is_null());
  // A target whose metric the class has no row of (E2E here) is read through its pool's lean,
  // the 16-bit dense E2Es of every engine, and still decides: an E2E p99 of 1 ms no request
  // meets leaves the reading missed in JSON and text, whatever the others.
  const std::string tight = "serve --model llama-3.1-8b --hw h100-sxm --qps 2 --prompt 512 --gen 128 --requests 40 "
                            "--weight-dtype bf16 --kv-dtype bf16 --slo ttft_p99=10s,e2e_p99=1ms";
  ASSERT_FALSE(row.contains("e2e"));
  const nlohmann::json tight_json = run_json(tight);
  EXPECT_FALSE(tight_json["slo_with_error_band"]["met"].get<bool>());
  const nlohmann::json& e2e = tight_json["slo_with_error_band"]["targets"]["e2e_p99"];
  EXPECT_DOUBLE_EQ(e2e["median_error"].get<double>(), std::min(0.0, pooled()["any engine, 16-bit, dense"]["e2e"]["median"].get<double>()));
  EXPECT_LT(e2e["median_error"].get<double>(), 0);
  const RunResult text = run(tight);
  EXPECT_NE(text.out.find("SLO with the class's median errors: likely missed: ttft_p99 "), std::string::npos) << text.out;
}

TEST(ErrorBandCli, SloSlackAndMargin) {
  // Llama-3.1-8B at 20 req/s of 512 + 128 tokens: one H100 at TP 1 meets a TPOT p99 of 11 ms
  // with ~14% to spare (its p99 ~9.4 ms), so a 20% margin must rule it out.
  const std::string q = "search serve --model llama-3.1-8b --hw h100-sxm --qps 20 --prompt 512 --gen 128 --requests 300 "
                        "--slo ttft_p99=300ms,tpot_p99=11ms --top 50 --weight-dtype bf16 --kv-dtype bf16";  // 16-bit, as the figures above
  const nlohmann::json plain = run_json(q);
  EXPECT_EQ(plain["margin"].get<double>(), 0);
  std::set<std::string> thin;  // deployments with under 20% to spare
  for (const auto& d : plain["feasible"]) {
    std::string binding;
    const double s = slack_of(d, 0.3, 0.011, binding);
    EXPECT_NEAR(d["slo_slack"].get<double>(), s, 1e-12) << d["command"];
    EXPECT_EQ(d["slo_binding"], binding) << d["command"];
    EXPECT_GE(s, 0) << d["command"];
    if (s < 0.2) thin.insert(d["command"].get<std::string>());
  }
  ASSERT_FALSE(thin.empty()) << "the example should have a deployment with under 20% to spare";

  // --margin 20%: every target is met at 0.8 of itself; the slack is still against the
  // targets as asked, and at least 0.2 for every deployment kept.
  const nlohmann::json wide = run_json(q + " --margin 20%");
  EXPECT_DOUBLE_EQ(wide["margin"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(run_json(q + " --margin 0.2")["margin"].get<double>(), 0.2);
  ASSERT_FALSE(wide["feasible"].empty());
  for (const auto& d : wide["feasible"]) {
    std::string binding;
    const double s = slack_of(d, 0.3, 0.011, binding);
    EXPECT_NEAR(d["slo_slack"].get<double>(), s, 1e-12) << d["command"];
    EXPECT_GE(s, 0.2 - 1e-12) << d["command"];
    EXPECT_EQ(thin.count(d["command"].get<std::string>()), 0u) << d["command"];
  }
  EXPECT_GT(wide["best"]["gpus"].get<int>(), plain["best"]["gpus"].get<int>());

  expect_bad(q + " --margin 95%", "--margin");
  expect_bad(q + " --margin -0.1", "--margin");
  expect_bad("search serve --model llama-3.1-8b --hw h100-sxm --qps 20 --margin 0.1", "--margin");

  // --margin band: each deployment held to its class's targets, target x (1 + e) for the
  // table's median error e of its metric where negative; the best's targets in the JSON, and
  // every deployment kept at least -e from the targets asked.
  const nlohmann::json band = run_json(q + " --margin band");
  EXPECT_TRUE(band["margin_band"].get<bool>());
  EXPECT_EQ(band["margin"].get<double>(), 0);
  const double e_ttft = std::min(0.0, quoted_median("vllm, 16-bit, dense", "ttft"));
  const double e_tpot = std::min(0.0, quoted_median("vllm, 16-bit, dense", "tpot"));
  EXPECT_DOUBLE_EQ(band["best_targets"]["ttft_p99"].get<double>(), 0.3 * (1 + e_ttft));
  EXPECT_DOUBLE_EQ(band["best_targets"]["tpot_p99"].get<double>(), 0.011 * (1 + e_tpot));
  ASSERT_FALSE(band["feasible"].empty());
  for (const auto& d : band["feasible"]) {
    EXPECT_GE(d["slo_slack_by_target"]["ttft"].get<double>(), -e_ttft - 1e-12) << d["command"];
    EXPECT_GE(d["slo_slack_by_target"]["tpot"].get<double>(), -e_tpot - 1e-12) << d["command"];
  }
  EXPECT_TRUE(plain["best_targets"].is_null());
  expect_bad("search serve --model llama-3.1-8b --hw h100-sxm --qps 20 --margin band", "--margin");
  EXPECT_TRUE(run_json(q + " --margin ' Band '")["margin_band"].get<bool>());
  expect_bad(q + " --margin band,10%", "--margin");
}

}  // namespace
}  // namespace ridgeline::testing
