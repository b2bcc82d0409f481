#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "cli/cli_harness.hpp"

namespace ridgeline::testing {
namespace {

TEST(InferCli, ContractKeys) {
  auto j = run_json("infer --model llama-3.1-8b --hw h100-sxm --batch 4 --prompt 512 --gen 64");
  for (const char* k : {"prefill", "decode", "ttft_s", "tpot_s", "throughput_tokens_per_s", "output_tokens_per_s", "memory",
                        "max_batch", "params", "active_params", "ops"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  for (const char* k : {"weights_bytes", "kv_cache_bytes", "activations_bytes", "total_bytes", "fits"}) {
    EXPECT_TRUE(j["memory"].contains(k)) << k;
  }
  for (const char* phase : {"prefill", "decode"}) {
    EXPECT_LE(j[phase]["t_lower_s"].get<double>(), j[phase]["t_upper_s"].get<double>()) << phase;
  }
  EXPECT_DOUBLE_EQ(j["ttft_s"].get<double>(), j["prefill"]["t_realistic_s"].get<double>());
  EXPECT_DOUBLE_EQ(j["tpot_s"].get<double>(), j["decode"]["t_realistic_s"].get<double>());
  // Static batching: 4 x 64 generated tokens over the end-to-end time.
  EXPECT_NEAR(j["output_tokens_per_s"].get<double>(), 4 * 64 / j["e2e_latency_s"].get<double>(), 1e-9);
  EXPECT_NEAR(j["params"].get<double>(), 8030261248.0, 1.0);
  EXPECT_GT(j["ops"].size(), 20u);
}

// --block-fp8-gemms: the kernel of fp8 block-scaled GEMMs (vLLM's Triton kernel by default,
// DeepGEMM's on request), and a clear error for any other.
TEST(InferCli, BlockFp8GemmKernelFlag) {
  const std::string q = "infer --model llama-3.1-8b --hw h100-sxm --batch 1 --prompt 16 --gen 2";
  EXPECT_EQ(run_json(q)["block_fp8_gemms"], "triton");
  EXPECT_EQ(run_json(q + " --block-fp8-gemms deepgemm")["block_fp8_gemms"], "deepgemm");
  expect_bad(q + " --block-fp8-gemms cutlass", "--block-fp8-gemms");
  // DeepGEMM runs on compute capability 9.x and 10.x alone (docs/hardware.md#arch): refused on
  // an A100 (sm_80) and the MI300X (gfx942), one line naming the chip and its arch; serve too.
  expect_bad("infer --model llama-3.1-8b --hw a100-80gb --batch 1 --prompt 16 --gen 2 --block-fp8-gemms deepgemm",
             "--block-fp8-gemms: deepgemm: DeepGEMM runs on compute capability 9.x and 10.x, and a100-80gb is sm_80; expected triton there");
  expect_bad("serve --model llama-3.1-8b --hw mi300x --concurrency 1 --requests 2 --prompt 16 --gen 2 --block-fp8-gemms deepgemm",
             "--block-fp8-gemms: deepgemm: DeepGEMM runs on compute capability 9.x and 10.x, and mi300x is gfx942");
}

// Each op of the JSON names its kernel class and its realistic time (the class's fixed time and
// fractions applied), beside the lower bound.
TEST(InferCli, OpsNameTheirKernelClassAndRealisticTime) {
  // DeepSeek-V3's prefill of 4096 tokens at TP 8 on H200s, vLLM's Triton kernels (the default):
  // the experts' gate-up GEMM runs in Triton's fused MoE over block-scaled fp8 experts
  // (gemm_expert_scaled). FLOPs 2 x 32768 pairs x 7168 x 512 = 240518168576: 121.541 us at
  // 1978.9 TFLOP/s, over the class's matrix fraction 0.1858 = 654.151 us, and its fixed time
  // 13.31 us: 667.461 us (its 1443069952 B and its tiles' fill on its loads, 21763264 B more, at
  // 0.9256 x 4.8 TB/s take 329.7 us). The lower bound is the bytes at the peak bandwidth, the
  // fill's left out: 1443069952 / 4.8e12 = 300.64 us.
  auto j = run_json("infer --model deepseek-v3 --hw h200 --tp 8 --batch 1 --prompt 4096 --gen 1");
  const nlohmann::json* op = nullptr;
  for (const auto& o : j["ops"]) {
    if (o["phase"] == "prefill" && o["name"] == "experts_gate_up") op = &o;
  }
  ASSERT_NE(op, nullptr);
  EXPECT_EQ((*op)["kernel_class"], "gemm_expert_scaled");
  EXPECT_NEAR((*op)["t_realistic_s"].get<double>(), 667.461e-6, 667.461e-6 * 1e-5);
  EXPECT_NEAR((*op)["t_lower_s"].get<double>(), 300.64e-6, 300.64e-6 * 1e-4);
  // Over its 58 MoE layers: 58 x 667.461483 = 38712.766 us.
  EXPECT_NEAR((*op)["t_total_realistic_s"].get<double>(), 38712.766e-6, 38712.766e-6 * 1e-5);
  for (const auto& o : j["ops"]) {
    EXPECT_GE(o["t_realistic_s"].get<double>(), o["t_lower_s"].get<double>()) << o["name"];
  }
  // The text's op table: the lower bound, the share, then the realistic time and its class.
  const RunResult text = run("infer --model deepseek-v3 --hw h200 --tp 8 --batch 1 --prompt 4096 --gen 1");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("lower  share  realistic  kernel class\n"), std::string::npos) << text.out;
  // The gate-up row: its lower bound (300.64 us above), a share of the phase (not derived here),
  // then 667.461 us and the class.
  const std::size_t row = text.out.find("    experts_gate_up ");
  ASSERT_NE(row, std::string::npos) << text.out;
  const std::string line = text.out.substr(row, text.out.find('\n', row) - row);
  EXPECT_NE(line.find(" 300.6 us "), std::string::npos) << line;
  EXPECT_TRUE(line.ends_with("   667.5 us  gemm_expert_scaled")) << line;
}

TEST(InferCli, APhasesRealisticTimeIsSplitByKernelClass) {
  // Llama-3.1-8B on an H100, batch 1, 128-token prompt, kernels unfused (infer's default).
  // Prefill, launched kernel by kernel: each of its 64 layer norms (two a layer) reads 128 x
  // 4096 bf16 values and the 8192-byte weight and writes 128 x 4096 values, 2105344 B:
  // 0.8837 us + 2105344 B / (3.35 TB/s x 0.6036) = 1.9249 us under the norm class's figures;
  // the final norm runs over the last token alone (the LM head's row), 24576 B, 0.8959 us.
  // Each is under the H100's 5 us launch, which it waits for: 65 x 5 us = 325 us.
  // A decode step replayed as one CUDA graph launches none of its own: each norm of one token
  // reads 8192 + 8192 B and writes 8192 B, 0.8837 us + 24576 B / 2.02206e12 B/s = 0.895854 us;
  // 65 of them 58.2305 us.
  const auto j = run_json("infer --model llama-3.1-8b --hw h100-sxm --batch 1 --prompt 128 --gen 4 --cuda-graphs");
  const auto& prefill = j["prefill"]["time_by_kernel_class_s"];
  EXPECT_NEAR(prefill["norm"].get<double>(), 65 * 5e-6, 1e-12);
  const auto& decode = j["decode"]["last"]["time_by_kernel_class_s"];
  EXPECT_NEAR(decode["norm"].get<double>(), 65 * (0.8837e-6 + 24576 / (3.35e12 * 0.6036)), 1e-11);
  // The classes add up to each phase's realistic time, and no collective runs on one GPU.
  for (const auto* phase : {&j["prefill"], &j["decode"]["last"]}) {
    double sum = 0;
    for (const auto& [name, seconds] : (*phase)["time_by_kernel_class_s"].items()) sum += seconds.get<double>();
    EXPECT_NEAR(sum, (*phase)["t_realistic_s"].get<double>(), 1e-12 * sum);
    EXPECT_FALSE((*phase)["time_by_kernel_class_s"].contains("collective"));
  }
  // The text gives them under each table's lower bounds by kind, largest first.
  const RunResult text = run("infer --model llama-3.1-8b --hw h100-sxm --batch 1 --prompt 128 --gen 4 --cuda-graphs");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("prefill: lower bounds by kind"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("\n  realistic by kernel class: gemm "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("norm 325 us ("), std::string::npos) << text.out;
}

// --moe-a2a: how expert parallelism moves the tokens (an all-to-all of the pairs by default,
// DeepEP's kernels on request), and a clear error for any other.
TEST(InferCli, MoeAllToAllFlag) {
  const std::string q = "infer --model mixtral-8x7b --hw h100-sxm --tp 1 --ep 2 --batch 2 --prompt 16 --gen 2";
  EXPECT_EQ(run_json(q)["moe_a2a"], "pairs");
  EXPECT_EQ(run_json(q + " --moe-a2a deepep")["moe_a2a"], "deepep");
  EXPECT_EQ(run_json(q + " --moe-a2a gather")["moe_a2a"], "gather");
  expect_bad(q + " --moe-a2a nccl", "--moe-a2a");
  // No all-to-all to price: one expert-parallel group, or a dense model.
  expect_bad("infer --model mixtral-8x7b --hw h100-sxm --tp 2 --moe-a2a deepep", "--moe-a2a: deepep moves tokens");
  expect_bad("infer --model llama-3.1-8b --hw h100-sxm --moe-a2a deepep", "--moe-a2a: deepep moves tokens");
  // DeepEP runs on NVIDIA GPUs (NVSHMEM): refused on the MI300X.
  expect_bad("infer --model mixtral-8x7b --hw mi300x --tp 1 --ep 2 --batch 2 --prompt 16 --gen 2 --moe-a2a deepep",
             "--moe-a2a: deepep: DeepEP runs on NVIDIA GPUs, and mi300x is gfx942; expected pairs or gather there");
}

TEST(InferCli, ChipsSetTensorParallelism) {
  auto j = run_json("infer --model llama-3.1-70b --hw h100-sxm --chips 4");
  EXPECT_EQ(j["tp"], 4);
  EXPECT_TRUE(j["memory"]["fits"].get<bool>());
  auto one = run_json("infer --model llama-3.1-70b --hw h100-sxm");
  EXPECT_FALSE(one["memory"]["fits"].get<bool>());
  // The text says the times are a what-if and points to what fits; a plan that fits has no such line.
  const std::string pointer = "(the times above are what it would take if it fit: more chips";
  auto text = run("infer --model llama-3.1-70b --hw h100-sxm");
  EXPECT_NE(text.out.find("-> DOES NOT FIT\n            " + pointer), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("`ridgeline search infer` for the layouts that fit)"), std::string::npos) << text.out;
  EXPECT_EQ(run("infer --model llama-3.1-70b --hw h100-sxm --chips 4").out.find(pointer), std::string::npos);
}

TEST(InferCli, UserConfigJson) {
  // A config.json of an unknown model_type with the standard fields works.
  std::string path = std::string(RIDGELINE_TMP_DIR) + "/tiny_config.json";
  std::ofstream(path) << R"({"model_type": "my_llama", "hidden_size": 256, "intermediate_size": 1024,
    "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000})";
  auto j = run_json("infer --model " + path + " --hw h100-sxm");
  // 2 x (4·256² + 3·256·1024 + 2·256) + 2·1000·256 + 256 = 2 x 1049088 + 512256.
  EXPECT_DOUBLE_EQ(j["params"].get<double>(), 2 * 1049088.0 + 512256);
}

// fp4 weights by flag are NVFP4: an e4m3 scale per 16 values rides with them (0.5 bits a
// weight), and where the chip multiplies fp4 (B200) the GEMMs run W4A4 as the engines serve
// NVFP4 checkpoints; on an H100 (no fp4 rate) they are dequantised and multiplied in bf16.
// gpt-oss's MXFP4 experts (a scale per 32) keep 16-bit activations.
TEST(InferCli, Nvfp4WeightsCarryTheirScalesAndRunW4A4WhereTheChipCan) {
  // Llama-3.1-8B's q_proj at decode, batch 1: weights 4096 x 4096 x 0.5 B = 8,388,608, their
  // scales 4096 x 4096 / 16 = 1,048,576 B, the token's bf16 input and output 2 x 4096 x 2 = 16,384:
  // 9,453,568 bytes.
  for (const char* hw : {"b200", "h100-sxm"}) {
    const auto j = run_json(std::string("infer --model llama-3.1-8b --batch 1 --prompt 16 --gen 2 --weight-dtype fp4 --hw ") + hw);
    bool seen = false;
    for (const auto& op : j["ops"]) {
      if (op["name"] != "q_proj" || op["phase"] != "decode") continue;
      EXPECT_DOUBLE_EQ(op["bytes"].get<double>(), 9453568) << hw;
      seen = true;
    }
    EXPECT_TRUE(seen) << hw;
    const std::string gemm = j["compute_dtype"].get<std::string>();
    if (std::string(hw) == "b200") {
      EXPECT_EQ(gemm.rfind("fp4", 0), 0u) << gemm;  // the GEMMs' FLOPs, nearly all of them
    } else {
      EXPECT_EQ(gemm, "bf16");
    }
  }
  EXPECT_EQ(run_json("infer --model gpt-oss-120b --hw b200 --batch 1 --prompt 16 --gen 2")["compute_dtype"], "bf16");
}

TEST(InferCli, ExpertImbalanceNamedWithItsSource) {
  // Mixtral (E 8, top 2) at --tp 1 --ep 8, batch 8, prompt 512: by default (auto) the routing
  // model, F = 1 + e_8·√(8·6/(7·2·T)) = 1 + 1.4236003·1.8516402/√T = 1 + 2.6359956/√T;
  // prefill routes T = 8·512 = 4096 tokens: 1 + 2.6359956/64 = 1.0411874; a decode step 8
  // tokens: 1 + 2.6359956/2.8284271 = 1.9319652.
  const std::string run_args = "infer --model mixtral-8x7b --hw h100-sxm --tp 1 --ep 8 --batch 8 --prompt 512 --gen 4";
  auto j = run_json(run_args);
  ASSERT_TRUE(j.contains("expert_imbalance")) << j.dump();
  EXPECT_NEAR(j["expert_imbalance"]["prefill"].get<double>(), 1.0411874, 1e-6);
  EXPECT_NEAR(j["expert_imbalance"]["decode"].get<double>(), 1.9319652, 1e-6);
  EXPECT_NE(j["expert_imbalance"]["source"].get<std::string>().find("balanced router"), std::string::npos);
  // A given factor is used as it is, for both, and named as given.
  auto given = run_json(run_args + " --expert-imbalance 1.5");
  EXPECT_EQ(given["expert_imbalance"]["prefill"].get<double>(), 1.5);
  EXPECT_EQ(given["expert_imbalance"]["decode"].get<double>(), 1.5);
  EXPECT_EQ(given["expert_imbalance"]["source"], "--expert-imbalance");
  // No expert parallelism, no key.
  EXPECT_FALSE(run_json("infer --model mixtral-8x7b --hw h100-sxm --tp 2").contains("expert_imbalance"));
  // serve names its mean decode step's.
  auto s = run_json("serve --model mixtral-8x7b --hw h100-sxm --tp 1 --ep 8 --qps 2 --requests 40 --prompt 256 --gen 32");
  ASSERT_TRUE(s["decode_step"].contains("expert_imbalance")) << s["decode_step"].dump();
  EXPECT_GE(s["decode_step"]["expert_imbalance"].get<double>(), 1);
  EXPECT_NE(s["decode_step"]["sources"]["expert_imbalance"].get<std::string>().find("balanced router"), std::string::npos);
}

TEST(InferCli, MeasuredRoutingNamedWithItsSource) {
  // deepseek-v3 carries a routing measurement (TensorRT-LLM tech blog 4: F 2.564 over 32 GPUs at
  // 4096 tokens a step). At --tp 1 --ep 32, batch 32, prompt 128 the prefill routes 32·128 = 4096
  // tokens: F 2.564, the measured point. A decode step routes 32: the chance part's scale is
  // e_32·√(32·248/(255·8)) = 4.0821279 and the skew √(1.564² − (4.0821279/64)²) = 1.5626989, so
  // F = 1 + √(1.5626989² + 4.0821279²/32) = 2.7212700.
  auto j = run_json("infer --model deepseek-v3 --hw h200 --tp 1 --ep 32 --batch 32 --prompt 128 --gen 2");
  ASSERT_TRUE(j.contains("expert_imbalance")) << j.dump();
  EXPECT_NEAR(j["expert_imbalance"]["prefill"].get<double>(), 2.564, 1e-9);
  EXPECT_NEAR(j["expert_imbalance"]["decode"].get<double>(), 2.7212700, 1e-6);
  EXPECT_EQ(j["expert_imbalance"]["source"].get<std::string>().rfind("measured: TensorRT-LLM tech blog 4", 0), 0u);
}

TEST(InferCli, BadInput) {
  for (auto [args, mention] : std::initializer_list<std::pair<const char*, const char*>>{
           {"infer --model llama-3.1-8b --tp 3", "--tp"},
           {"infer --model llama-9-1b", "llama-9-1b"},
           {"infer --model llama-3.1-8b --batch 0", "--batch"},
           {"infer --model llama-3.1-8b --kv-dtype fp7", "--kv-dtype"},
           {"infer --model llama-3.1-8b --ep 2", "--ep"},
           {"infer --model llama-3.1-8b --experts ep", "--experts"},
           {"infer --model mixtral-8x7b --tp 8 --ep 2 --experts ep", "--experts"},  // 16 GPUs, 8 experts
           {"infer --model mixtral-8x7b --experts dp", "--experts"},
           {"infer --model mixtral-8x7b --ep 8 --expert-imbalance 0", "--expert-imbalance"},
           {"infer --model mixtral-8x7b --ep 8 --expert-imbalance 9", "--expert-imbalance"},
           {"infer --model mixtral-8x7b --ep 8 --expert-imbalance often", "--expert-imbalance"},
           {"infer --model llama-3.1-8b --chips 4 --tp 2", "--chips"},
           {"infer --model /nonexistent/config.json", "/nonexistent/config.json"},
           {"infer --model llama-3.1-8b --weight-dtype fp4 --compute-dtype fp4 --hw h100-sxm", "fp4"}}) {
    RunResult r = run(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(mention), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  }
  std::string bad = std::string(RIDGELINE_TMP_DIR) + "/bad_config.json";
  std::ofstream(bad) << R"({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 2, "vocab_size": 10})";
  RunResult r = run("infer --model " + bad);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("num_attention_heads"), std::string::npos) << r.err;
}

TEST(ModelsCli, ListsTheBundledModels) {
  auto j = run_json("models");
  ASSERT_EQ(j.size(), 19u);
  for (const auto& m : j) EXPECT_GT(m["params"].get<double>(), 1e9) << m;
}

TEST(ModelsCli, AHuggingFaceRepositoryNamesItsBundledModel) {
  // A repository as its page names it, in any case, is the bundled model whose config.json came
  // from it (`_source`): the same run as the bundled name. Another repository is refused, naming
  // the bundled model whose repository it extends.
  const auto models = run_json("models --json");
  std::map<std::string, nlohmann::json> repo;
  for (const auto& m : models) repo[m["name"]] = m["repository"];
  EXPECT_EQ(repo.at("llama-3.1-8b"), "meta-llama/Llama-3.1-8B");
  EXPECT_EQ(repo.at("deepseek-r1"), "deepseek-ai/DeepSeek-R1");
  EXPECT_TRUE(repo.at("gpt3-175b").is_null());  // a paper's table, no repository
  const std::string load = " --hw h100-sxm --qps 1 --requests 3 --prompt 64 --gen 4";
  const auto by_repo = run_json("serve --model META-LLAMA/llama-3.1-8b" + load);
  const auto by_name = run_json("serve --model llama-3.1-8b" + load);
  EXPECT_EQ(by_repo["model"], "llama-3.1-8b");
  EXPECT_EQ(by_repo["ttft_s"], by_name["ttft_s"]);
  // Its page's address and the name with a slash after it, as a browser shows them.
  EXPECT_EQ(run_json("serve --model https://huggingface.co/meta-llama/Llama-3.1-8B" + load)["model"], "llama-3.1-8b");
  EXPECT_EQ(run_json("serve --model meta-llama/Llama-3.1-8B/" + load)["model"], "llama-3.1-8b");
  expect_bad("serve --model meta-llama/Llama-3.1-8B-Instruct" + load,
             "--model: 'meta-llama/Llama-3.1-8B-Instruct' is neither a file nor the repository of a bundled model; it extends the "
             "repository of the bundled llama-3.1-8b (meta-llama/Llama-3.1-8B)");
  // A name that continues past a repository's without a word of its own extends none of them.
  const RunResult v32 = run("serve --model deepseek-ai/DeepSeek-V3.2-Exp" + load);
  EXPECT_EQ(v32.status, 2);
  EXPECT_EQ(v32.err.find("extends"), std::string::npos) << v32.err;
  expect_bad("serve --model nosuch/model" + load, "--model: 'nosuch/model' is neither a file nor the repository of a bundled model: give");
  expect_bad("serve --model llama-3.1-8b --draft nosuch/draft --spec-tokens 1 --accept 0.5 --qps 1 --requests 3", "--draft: 'nosuch/draft'");
  // Neither a repository nor a file: a path as before.
  expect_bad("serve --model ./nosuch" + load, "./nosuch: cannot open");
}

TEST(BlockCli, SeedAndExactShapes) {
  auto seed = run_json("block --hw h200 --hidden 4096 --seq 4096 --cp 8 --shapes seed");
  // Seed 000 at h = 4096 on the H200: 12 GEMM units, 2s/h = 2, memory-bound ops 19R/h = 0.956
  // (the seed's 3914/h = 0.95), four all-to-alls 4·989.4e12/(450e9·h) = 2.147 (the seed's 2.1).
  EXPECT_NEAR(seed["units_by_part"]["gemm"].get<double>(), 12, 1e-9);
  EXPECT_NEAR(seed["units_by_part"]["attention"].get<double>(), 2, 1e-9);
  EXPECT_NEAR(seed["units_by_part"]["memory"].get<double>(), 0.95, 0.01);
  EXPECT_NEAR(seed["units_by_part"]["comm"].get<double>(), 2.1, 0.05);
  auto exact = run_json("block --hw h200 --model llama-2-7b --seq 4096 --cp 8");
  // All-to-all CP: each chip attends over all 8 x 4096 = 32768 tokens with 32/8 heads, cp
  // times the FLOPs of its own 4096; causal halves them: 4·(h/cp)·N(N+1)/2 over a GEMM's
  // 2sh² is N(N+1)/(cp·s·h) = (s·cp + 1)/h = 32769/4096 = 8.0002 units (the seed's 2s/h = 2
  // leaves cp out).
  EXPECT_NEAR(exact["units_by_part"]["attention"].get<double>(), 32769.0 / 4096, 8e-3);
  EXPECT_EQ(run("block --hw h200 --model llama-2-7b --seq 4096 --cp 3").status, 2);  // 32 heads
  EXPECT_GT(exact["units_by_part"]["memory"].get<double>(), seed["units_by_part"]["memory"].get<double>());
}

// --hw a,b,c runs the command once per chip: the JSON is the array of what each chip's own run
// gives, the text a table with a column per chip, its rows read from those documents.
TEST(SideBySideCli, EachChipAsItsOwnRun) {
  const std::string infer = "infer --model llama-3.1-8b --batch 8 --prompt 512 --gen 64";
  auto both = run_json(infer + " --hw h100-sxm,h200");
  ASSERT_TRUE(both.is_array());
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0], run_json(infer + " --hw h100-sxm"));
  EXPECT_EQ(both[1], run_json(infer + " --hw h200"));
  // A chip named twice (in any case: catalog names are case-insensitive) is refused, not run
  // twice as two identical columns (issue 42).
  expect_bad(infer + " --hw h100-sxm,h200,h100-sxm", "--hw: 'h100-sxm,h200,h100-sxm' names h100-sxm again");
  expect_bad(infer + " --hw h200,H200", "names h200 again ('H200')");
  const RunResult t = run(infer + " --hw h100-sxm,h200");
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("llama-3.1-8b on each chip"), std::string::npos) << t.out;
  const std::size_t head = t.out.find("h100-sxm");
  ASSERT_NE(head, std::string::npos);
  EXPECT_NE(t.out.find("h200", head), std::string::npos);
  EXPECT_EQ(t.out.find("h100-sxm", head + 1), std::string::npos) << t.out;
  for (const char* row : {"\nTTFT ", "\nTPOT ", "\nfits ", "\ncapacity "}) EXPECT_NE(t.out.find(row), std::string::npos) << row;
  // The same for train (with a price for one of the chips), serve and the searches.
  auto train = run_json("train --model llama-3.1-8b --gpus 8 --hw h100-sxm,h200 --days 1 --price h200=3/h");
  ASSERT_EQ(train.size(), 2u);
  EXPECT_FALSE(train[0]["run"].contains("usd"));
  EXPECT_EQ(train[1]["run"]["usd_per_gpu_hour"].get<double>(), 3);
  EXPECT_EQ(train[1], run_json("train --model llama-3.1-8b --gpus 8 --hw h200 --days 1 --price 3/h"));
  EXPECT_EQ(run_json("serve --model llama-3.1-8b --hw h100-sxm,h200 --concurrency 4 --requests 20").size(), 2u);
  auto search = run_json("search train --model llama-3.1-8b --hw h100-sxm,h200 --gpus 8 --global-batch 8 --threads 1");
  ASSERT_EQ(search.size(), 2u);
  EXPECT_EQ(search[1]["hw"], "h200");
  EXPECT_FALSE(search[1]["best"].empty());
  for (auto [args, mention] : std::initializer_list<std::pair<std::string, const char*>>{
           {infer + " --hw h100-sxm,,h200", "empty item"},
           {infer + " --hw h100-sxm,nope", "nope"},
           {"search infer --model llama-3.1-8b --hw h100-sxm,h200 --plot x.svg", "--plot"},
           {"serve --model llama-3.1-8b --hw h100-sxm,h200 --concurrency 4 --requests 20 --requests-out r.csv", "--requests-out"},
           {"train --model llama-3.1-8b --gpus 8 --hw h100-sxm,h200 --days 1 --price b200=3/h", "not a chip trained on"}}) {
    const RunResult r = run(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(mention), std::string::npos) << args << ": " << r.err;
  }
}

TEST(InferCli, AdviceOnTheBatchUnderEachEngine) {
  // advise infer sizes its batch advice in the engine's steady state: SGLang's prefill-first
  // steps as well as vLLM's mixed ones, each naming the users it serves continuously; an
  // engine it does not know is refused.
  for (const char* engine : {"vllm", "sglang"}) {
    auto j = run_json(std::string("advise infer --model llama-3.1-8b --hw h100-sxm --batch 8 --prompt 1024 --gen 256 --json --engine ") + engine);
    bool sized = false;
    for (const auto& a : j["advice"]) {
      if (a["rule"] == "batch-below-critical") sized = a["fix"].get<std::string>().find("users continuously") != std::string::npos;
    }
    EXPECT_TRUE(sized) << engine << ": " << j.dump();
  }
  expect_bad("advise infer --model llama-3.1-8b --hw h100-sxm --engine tgi", "--engine");
  // The served engine moves its experts' tokens as --moe-a2a says, else as the engine does
  // (vLLM gathers them, docs/serving.md#deepep): the default's served batch is the gather's, the
  // pairs' not (infer's own pass moves the pairs unless told otherwise).
  const std::string q = "advise infer --model mixtral-8x7b --hw h100-sxm --tp 1 --ep 8 --batch 64 --prompt 512 --gen 128 --json --engine vllm";
  auto served = [&](const std::string& flags) {
    const auto j = run_json(q + flags);
    for (const auto& a : j["advice"]) {
      if (a["rule"] == "batch-below-critical") return a["fix"].get<std::string>();
    }
    return std::string();
  };
  const std::string own = served(""), gathered = served(" --moe-a2a gather");
  EXPECT_FALSE(own.empty());
  EXPECT_EQ(own, gathered);
  EXPECT_NE(served(" --moe-a2a pairs"), gathered);
}

}  // namespace
}  // namespace ridgeline::testing
