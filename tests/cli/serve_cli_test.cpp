// `ridgeline serve` from the command line: the contract's keys, files, sweeps, bad input.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <set>
#include <string>
#include <vector>

#include "cli/cli_harness.hpp"

namespace ridgeline::testing {
namespace {

const std::string kSmall = "serve --model llama-3.1-8b --hw h100-sxm --prompt 512 --gen 64";

TEST(ServeCli, ContractKeys) {
  const auto j = run_json(kSmall + " --qps 5 --requests 200 --slo ttft_p99=1s,tpot_p99=50ms");
  for (const char* k : {"ttft_s", "tpot_s", "itl_s", "e2e_s", "queue_s"}) {
    for (const char* s : {"mean", "p50", "p90", "p95", "p99"}) EXPECT_TRUE(j[k].contains(s)) << k << " " << s;
  }
  for (const char* k : {"requests_per_s", "input_tokens_per_s", "output_tokens_per_s", "output_tokens_per_s_per_gpu", "gpus",
                        "goodput_requests_per_s", "sustainable", "preemptions", "prefix_hit_rate", "kv_utilisation",
                        "simulated_requests", "wall_s"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_TRUE(j["kv_utilisation"].contains("mean") && j["kv_utilisation"].contains("max"));
  EXPECT_EQ(j["simulated_requests"], 200);
  EXPECT_EQ(j["gpus"], 1);
  // Every request's 64 tokens over the measured span.
  EXPECT_NEAR(j["output_tokens_per_s"].get<double>() / j["requests_per_s"].get<double>(), 64, 1e-9);
  EXPECT_TRUE(j["sustainable"].get<bool>());
}

TEST(ServeCli, ItlTargetsAndBadSloKeys) {
  // One client, 5 requests of 512 in / 64 out: 63 gaps each, all decode steps of one sequence
  // (a few us apart as the context grows), so the ITL p99 is within 1 ms of the TPOT p99; a limit
  // of twice the TPOT p99 is met, one of half of it is not (every gap is at least a step).
  const auto j = run_json(kSmall + " --concurrency 1 --requests 5 --slo itl_p99=1s");
  const double tpot = j["tpot_s"]["p99"].get<double>();
  EXPECT_NEAR(j["itl_s"]["p99"].get<double>(), tpot, 1e-3);
  EXPECT_TRUE(j["slo_met"].get<bool>());
  EXPECT_TRUE(run_json(kSmall + " --concurrency 1 --requests 5 --slo itl_p99=" + std::to_string(2e3 * tpot) + "ms")["slo_met"].get<bool>());
  EXPECT_FALSE(run_json(kSmall + " --concurrency 1 --requests 5 --slo itl_p50=" + std::to_string(0.5e3 * tpot) + "ms")["slo_met"].get<bool>());
  // A bad key: exit 2, one line naming it and the keys accepted.
  for (const char* bad : {"itl_p42=1s", "itl=1s", "ilt_p99=1s"}) {
    const auto r = run(kSmall + " --concurrency 1 --requests 5 --slo " + bad);
    EXPECT_EQ(r.status, 2) << bad;
    const std::string key = std::string(bad).substr(0, std::string(bad).find('='));
    EXPECT_NE(r.err.find("'" + key + "' is not a key: expected ttft, tpot, itl or e2e"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST(ServeCli, EachAllReduceRunsItsNormWhereTheEngineFusesThem) {
  // docs/serving.md#allreduce-norm. DeepSeek-V3 at TP 8 on H200s decoding: TensorRT-LLM's
  // PyTorch backend runs each of the 61 layers' two all-reduces with the norm after it, 122
  // kernels fewer a step than with --allreduce-fusion off; vLLM's presets fuse none, and the flag
  // turns it on (its own all-reduce's limit, no token cap of its own). SGLang's rule wants its
  // model list and compute capability 9.0 or 10.x: gpt-oss on H100s fuses, on A100s not,
  // Llama-3.1-70B nowhere. A draft model never. A bad value: exit 2, one line.
  const std::string q = "serve --model deepseek-v3 --hw h200 --tp 8 --concurrency 1 --requests 1 --prompt 64 --gen 8 --engine ";
  const auto trt = run_json(q + "trtllm");
  const auto off = run_json(q + "trtllm --allreduce-fusion off");
  EXPECT_EQ(trt["engine"]["allreduce_norm"], true);
  EXPECT_EQ(trt["engine"]["allreduce_norm_max_tokens"], 0);
  EXPECT_EQ(off["engine"]["allreduce_norm"], false);
  EXPECT_NE(trt["engine"]["allreduce_norm_source"].get<std::string>().find("DeepseekV3DecoderLayer.enable_fusion"), std::string::npos);
  EXPECT_EQ(off["engine"]["allreduce_norm_source"], "--allreduce-fusion");
  // The text says it under the engine, with its source (and nothing where nothing fuses).
  const RunResult text = run(q + "trtllm");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("        each all-reduce with the residual add and RMSNorm after it as one kernel wherever the engine's own "
                          "all-reduce runs (TensorRT-LLM's DeepseekV3DecoderLayer.enable_fusion"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(run(q + "trtllm --allreduce-fusion off").out.find("each all-reduce with"), std::string::npos);
  EXPECT_EQ(off["decode_step"]["kernels"].get<double>() - trt["decode_step"]["kernels"].get<double>(), 122);
  EXPECT_GT(trt["decode_step"]["by_kernel_class_s"]["allreduce_norm"].get<double>(), 0);
  EXPECT_FALSE(off["decode_step"]["by_kernel_class_s"].contains("allreduce_norm"));
  EXPECT_EQ(run_json(q + "vllm")["engine"]["allreduce_norm"], false);
  const auto on = run_json(q + "vllm --allreduce-fusion on");
  EXPECT_EQ(on["engine"]["allreduce_norm"], true);
  EXPECT_EQ(on["engine"]["allreduce_norm_max_tokens"], 0);
  EXPECT_EQ(run_json(q + "sglang")["engine"]["allreduce_norm_max_tokens"], 2048);
  const std::string llama = "serve --model llama-3.1-70b --tp 8 --concurrency 1 --requests 1 --prompt 64 --gen 8 --engine sglang --hw ";
  EXPECT_EQ(run_json(llama + "h200")["engine"]["allreduce_norm"], false);
  const std::string oss = "serve --model gpt-oss-120b --tp 2 --concurrency 1 --requests 1 --prompt 64 --gen 8 --engine sglang --hw ";
  EXPECT_EQ(run_json(oss + "h100-sxm")["engine"]["allreduce_norm"], true);
  EXPECT_EQ(run_json(oss + "a100-80gb")["engine"]["allreduce_norm"], false);
  // A draft model runs its all-reduces apart (TensorRT-LLM's rule wants a Llama wider than 4096;
  // Llama-3.2-1B is 2048): its passes price the same whatever the target's, which differ.
  const std::string spec = "serve --model llama-3.1-70b --hw h100-sxm --tp 4 --engine trtllm --draft llama-3.2-1b --spec-tokens 4 "
                           "--accept 0.7 --concurrency 1 --requests 2 --prompt 64 --gen 16";
  const auto s_on = run_json(spec), s_off = run_json(spec + " --allreduce-fusion off");
  EXPECT_EQ(s_on["speculation"]["draft_s"].get<double>(), s_off["speculation"]["draft_s"].get<double>());
  EXPECT_LT(s_on["speculation"]["verify_s"].get<double>(), s_off["speculation"]["verify_s"].get<double>());
  expect_bad(q + "trtllm --allreduce-fusion maybe", "--allreduce-fusion: 'maybe' is not on or off");
}

TEST(ServeCli, TensorRtLlmLaunchesItsOwnKernelsWithProgrammaticDependentLaunch) {
  // docs/cost-model.md#pdl. DeepSeek-V3 at TP 8 on B200s decoding under TensorRT-LLM (1.2+: on
  // unasked): each of its own kernels hides 0.5 us of its boundary (b200.yaml's pdl_overlap, under
  // its 0.8 us boundary). The step's 122 fused all-reduces (2 x 61 layers, #allreduce-norm) lose
  // 122 x 0.5 us = 61 us against --pdl off; its PyTorch elementwise ops and cuBLAS GEMMs nothing.
  // On H200s no measurement says what it hides: nothing priced, the step the same. A bad value:
  // exit 2, one line.
  const std::string q = "serve --model deepseek-v3 --tp 8 --concurrency 1 --requests 1 --prompt 64 --gen 8 --engine trtllm --hw ";
  const auto on = run_json(q + "b200"), off = run_json(q + "b200 --pdl off");
  EXPECT_EQ(on["engine"]["pdl"], true);
  EXPECT_NE(on["engine"]["pdl_source"].get<std::string>().find("getEnvEnablePDL"), std::string::npos);
  EXPECT_EQ(off["engine"]["pdl"], false);
  EXPECT_EQ(off["engine"]["pdl_source"], "--pdl");
  const auto& c_on = on["decode_step"]["by_kernel_class_s"];
  const auto& c_off = off["decode_step"]["by_kernel_class_s"];
  EXPECT_NEAR(c_off["allreduce_norm"].get<double>() - c_on["allreduce_norm"].get<double>(), 122 * 0.5e-6, 1e-12);
  EXPECT_EQ(c_off["pointwise"].get<double>(), c_on["pointwise"].get<double>());
  EXPECT_EQ(c_off["gemm"].get<double>(), c_on["gemm"].get<double>());
  EXPECT_EQ(on["decode_step"]["kernels"], off["decode_step"]["kernels"]);
  const RunResult text = run(q + "b200");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("        its own kernels launched with programmatic dependent launch, each dispatched while the one before "
                          "drains: 500 ns of its boundary hidden (TensorRT-LLM's getEnvEnablePDL"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(run(q + "b200 --pdl off").out.find("programmatic dependent launch"), std::string::npos);
  const auto h_on = run_json(q + "h200"), h_off = run_json(q + "h200 --pdl off");
  EXPECT_EQ(h_on["decode_step"]["device_s"], h_off["decode_step"]["device_s"]);
  EXPECT_NE(run(q + "h200").out.find("which no measurement found for the h200 says hides anything: none priced"), std::string::npos);
  // TensorRT-LLM 0.19-1.1 (trtllm@1.1) asked for it (TRTLLM_ENABLE_PDL opt-in): off, and its step the
  // one --pdl off gives.
  const auto old = run_json("serve --model deepseek-v3 --tp 8 --concurrency 1 --requests 1 --prompt 64 --gen 8 --engine trtllm@0.20 --hw b200");
  EXPECT_EQ(old["engine"]["pdl"], false);
  EXPECT_EQ(old["engine"]["name"], "trtllm@1.1");
  EXPECT_EQ(old["decode_step"]["device_s"], off["decode_step"]["device_s"]);
  // Not a CUDA GPU of compute capability 9.0 or later: refused, one line.
  expect_bad("serve --model llama-3.1-8b --hw mi300x --concurrency 1 --requests 1 --prompt 64 --gen 8 --engine vllm --pdl on",
             "--pdl on: programmatic dependent launch needs an NVIDIA GPU of compute capability 9.0 or later, and mi300x is gfx942");
  // Nor a CPU or a TPU, whose files name no arch: refused, and no preset has it there.
  expect_bad("serve --model llama-3.1-8b --hw epyc-9654 --concurrency 1 --requests 1 --prompt 64 --gen 8 --engine vllm --pdl on",
             "and epyc-9654 is an amd cpu; expected --pdl off there");
  EXPECT_EQ(run_json("serve --model llama-3.1-8b --hw tpu-v6e --concurrency 1 --requests 1 --prompt 64 --gen 8 --engine sglang")["engine"]["pdl"],
            false);
  // vLLM's preset launches none so; SGLang's launcher has FlashInfer's kernels launched so
  // (TRTLLM_ENABLE_PDL=1), SGLang 0.3 had none; no preset on an A100 (compute capability 8.0).
  const std::string other = "serve --model deepseek-v3 --tp 8 --concurrency 1 --requests 1 --prompt 64 --gen 8 --hw b200 --engine ";
  EXPECT_EQ(run_json(other + "vllm")["engine"]["pdl"], false);
  const auto sg = run_json(other + "sglang");
  EXPECT_EQ(sg["engine"]["pdl"], true);
  EXPECT_NE(sg["engine"]["pdl_source"].get<std::string>().find("TRTLLM_ENABLE_PDL=1"), std::string::npos);
  EXPECT_EQ(run_json("serve --model llama-3.1-8b --concurrency 1 --requests 1 --prompt 64 --gen 8 --hw b200 --engine sglang@0.3")["engine"]["pdl"],
            false);
  EXPECT_EQ(run_json("serve --model llama-3.1-8b --concurrency 1 --requests 1 --prompt 64 --gen 8 --hw a100-80gb --engine trtllm")["engine"]["pdl"],
            false);
  expect_bad(q + "b200 --pdl maybe", "--pdl: 'maybe' is not on or off");
}

TEST(ServeCli, NvlsIsRefusedForAnEngineWhoseNcclHasItOff) {
  // SGLang sets NCCL_NVLS_ENABLE=0 (docs/serving.md#all-reduce): `--algo nvls` cannot be its
  // all-reduce. Exit 2, one line naming the flag and why; vLLM on the same 8 H100s takes it.
  const std::string base = "serve --model llama-3.1-70b --hw h100-sxm --tp 8 --concurrency 1 --requests 2 --prompt 64 --gen 4 --algo nvls";
  const auto r = run(base + " --engine sglang");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--algo: nvls: sglang runs NCCL with NVLS off"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(run(base + " --engine vllm").status, 0);
}

TEST(ServeCli, TensorRtLlmIsRefusedOffNvidiaGpusAndASearchLeavesItOut) {
  // TensorRT-LLM runs on NVIDIA GPUs alone (serving::runs_on): serve on an MI300X exits 2 with
  // one line naming the engine and the chip; a search over both chips and both engines keeps
  // vLLM on the MI300X and TensorRT-LLM on the H100 alone; a search whose chips none run it is
  // refused the same way.
  const auto r = run("serve --model llama-3.1-8b --hw mi300x --engine trtllm --concurrency 1 --requests 2 --prompt 64 --gen 4");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--engine trtllm: TensorRT-LLM runs on NVIDIA GPUs, and mi300x is an amd gpu"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  const std::string search = "search serve --model llama-3.1-8b --qps 2 --requests 20 --prompt 64 --gen 4 --tp 1 --max-num-seqs 64 --json";
  const auto j = run_json(search + " --hw mi300x,h100-sxm --engine vllm,trtllm");
  std::set<std::string> pairs;
  for (const auto& d : j["feasible"]) pairs.insert(d["hw"].get<std::string>() + " " + d["engine"].get<std::string>());
  EXPECT_EQ(pairs, (std::set<std::string>{"h100-sxm trtllm", "h100-sxm vllm", "mi300x vllm"}));
  EXPECT_EQ(j["left_out"], nlohmann::json::array({"trtllm on mi300x"}));
  // search infer side by side refuses it before searching either chip.
  const auto side = run("search infer --model llama-3.1-8b --hw h100-sxm,mi300x --engine trtllm --prompt 64 --gen 4");
  EXPECT_EQ(side.status, 2);
  EXPECT_NE(side.err.find("--engine trtllm: TensorRT-LLM runs on NVIDIA GPUs, and mi300x is an amd gpu"), std::string::npos) << side.err;
  EXPECT_EQ(std::count(side.err.begin(), side.err.end(), '\n'), 1) << side.err;
  const auto none = run(search + " --hw mi300x --engine trtllm");
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("--engine trtllm: TensorRT-LLM runs on NVIDIA GPUs, and mi300x is an amd gpu"), std::string::npos) << none.err;
}

TEST(ServeCli, ClosedLoopConcurrencyOneIsOnePrefillAndDecodeSteps) {
  // One client: no queueing, and TTFT is the same for every request (same prompt, alone).
  const auto j = run_json(kSmall + " --concurrency 1 --requests 5");
  EXPECT_DOUBLE_EQ(j["queue_s"]["max"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(j["ttft_s"]["min"].get<double>(), j["ttft_s"]["max"].get<double>());
  EXPECT_EQ(j["steps"]["total"], 5 * 64);  // a prefill step and 63 decode steps each
}

TEST(ServeCli, WithoutRequestsTheRunChoosesItsWindow) {
  // One client, every request alike (fixed lengths, alone): the blocks of the trend are 1000 / 32
  // = 31 arrivals (1000 measured for the p99 on one replica), all alike, so every check is
  // flat: the first, 8 blocks in, and the first at k >= 4 x 8 / 3, 11 blocks in: arrival 341 is
  // the first measured, the 1000th measured (1340) the last sent; the run stops when it ends
  // (no cool-down in a closed loop of one). With --requests the count is the one given, and no
  // warm-up is no steady state.
  const auto j = run_json(kSmall + " --concurrency 1");
  EXPECT_EQ(j["steady_state"]["window"], "chosen by the run");
  EXPECT_TRUE(j["steady_state"]["reached"].get<bool>());
  EXPECT_EQ(j["steady_state"]["warmup_requests"], 341);
  EXPECT_EQ(j["steady_state"]["measured_requests"], 1000);
  EXPECT_EQ(j["steady_state"]["cooldown_requests"], 0);
  EXPECT_EQ(j["workload"]["requests"], 1341);
  EXPECT_EQ(j["measured_requests"], 1000);
  const auto given = run_json(kSmall + " --concurrency 1 --requests 5");
  EXPECT_EQ(given["steady_state"]["window"], "the requests given");
  EXPECT_FALSE(given["steady_state"]["reached"].get<bool>());
  EXPECT_EQ(given["workload"]["requests"], 5);
}

TEST(ServeCli, ADrainedWarmUpSaysSoAndIsNoSteadyState) {
  // One client, 200 requests alike, 180 of them warm-up: in one stream the trend has stopped by
  // the first measured request (MeasurementWindow.AFixedCountIsSteadyOnlyWhenItsWarmUpOutlastsTheTrend);
  // drained, the measured 20 start on an idle fleet: never steady, and the text and JSON say why.
  // One client alone is the same run either way: request 180 is sent as 179 ends, the engine idle
  // then too, so the two give the same TTFTs.
  const std::string cmd = kSmall + " --concurrency 1 --requests 200 --warmup-requests 180";
  const auto on = run_json(cmd + " --warmup-drain on"), off = run_json(cmd);
  EXPECT_TRUE(on["workload"]["warmup_drained"].get<bool>());
  EXPECT_FALSE(off["workload"]["warmup_drained"].get<bool>());
  EXPECT_FALSE(on["steady_state"]["reached"].get<bool>());
  EXPECT_TRUE(off["steady_state"]["reached"].get<bool>());
  EXPECT_TRUE(on["steady_state"]["drained"].get<bool>());
  EXPECT_FALSE(off["steady_state"]["drained"].get<bool>());
  EXPECT_EQ(on["measured_requests"], 20);
  EXPECT_DOUBLE_EQ(on["ttft_s"]["mean"].get<double>(), off["ttft_s"]["mean"].get<double>());
  const RunResult text = run(cmd + " --warmup-drain on");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("200 requests (180 warm-up, drained before the measured ones start)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("steady state: NO (the warm-up drained first"), std::string::npos) << text.out;
  // Off, the default, stands with no warm-up too (on without one is refused: the table of bad input).
  EXPECT_EQ(run(kSmall + " --concurrency 1 --requests 5 --warmup-drain off").status, 0);
}

TEST(ServeCli, UsersWithoutThinkTimeAreConcurrencyAndWithItSendLess) {
  // --users N alone is --concurrency N (the same run to the bit); thinking 1 s between requests
  // the users send less often: each request's E2E no longer includes anyone's queue behind
  // the others, and the run says how they think.
  const auto c = run_json(kSmall + " --concurrency 4 --requests 40");
  const auto u = run_json(kSmall + " --users 4 --requests 40");
  EXPECT_EQ(u["e2e_s"], c["e2e_s"]);
  EXPECT_EQ(u["workload"]["concurrency"], 4);
  const auto t = run_json(kSmall + " --users 4 --requests 40 --think-time 1s");
  EXPECT_EQ(t["workload"]["think_time"], "1s");
  EXPECT_LT(t["requests_per_s"].get<double>(), u["requests_per_s"].get<double>());
  EXPECT_NE(run(kSmall + " --users 4 --requests 40 --think-time exp:1s").out.find("4 users (closed loop), each thinking exp:1s"),
            std::string::npos);
}

TEST(ServeCli, SeedsGiveTheSpreadOfEveryPercentileAndShowTheWorst) {
  // Three seeds of a Poisson load: the JSON says which seed is shown (the worst by E2E p99, no
  // targets) and each statistic's spread; the run shown is that seed's own run, and its E2E p99
  // is the largest of the three.
  const auto j = run_json(kSmall + " --qps 5 --requests 100 --seeds 3");
  const auto& s = j["seeds"];
  EXPECT_EQ(s["count"], 3);
  EXPECT_EQ(s["first"], 1);
  const auto chosen = s["chosen_seed"].get<std::int64_t>();
  EXPECT_EQ(j["workload"]["seed"], chosen);
  const auto& e2e = s["spread"]["e2e_s"]["p99"];
  EXPECT_DOUBLE_EQ(j["e2e_s"]["p99"].get<double>(), e2e["max"].get<double>());
  EXPECT_LE(e2e["min"].get<double>(), e2e["median"].get<double>());
  EXPECT_LE(e2e["median"].get<double>(), e2e["max"].get<double>());
  const auto alone = run_json(kSmall + " --qps 5 --requests 100 --seed " + std::to_string(chosen));
  EXPECT_DOUBLE_EQ(alone["e2e_s"]["p99"].get<double>(), j["e2e_s"]["p99"].get<double>());
  for (const char* k : {"ttft_s", "tpot_s", "itl_s", "e2e_s", "queue_s"}) {
    for (const char* q : {"mean", "p50", "p90", "p95", "p99"}) EXPECT_TRUE(s["spread"][k][q].contains("median")) << k << q;
  }
}

TEST(ServeCli, TheFrontEndAddsToEachRequestsTtftAndE2e) {
  // One client, its requests alone: the scheduler sees each --front-end after it was sent and
  // runs the same steps, so TTFT and E2E grow by exactly 10 ms and TPOT stays; the engine says so.
  const auto none = run_json(kSmall + " --concurrency 1 --requests 3 --front-end 0s");
  const auto ten = run_json(kSmall + " --concurrency 1 --requests 3 --front-end 10ms");
  EXPECT_DOUBLE_EQ(ten["engine"]["front_end_s"].get<double>(), 10e-3);
  EXPECT_NEAR(ten["ttft_s"]["mean"].get<double>() - none["ttft_s"]["mean"].get<double>(), 10e-3, 1e-9);
  EXPECT_NEAR(ten["e2e_s"]["mean"].get<double>() - none["e2e_s"]["mean"].get<double>(), 10e-3, 1e-9);
  EXPECT_DOUBLE_EQ(ten["tpot_s"]["mean"].get<double>(), none["tpot_s"]["mean"].get<double>());
  EXPECT_DOUBLE_EQ(ten["queue_s"]["max"].get<double>(), 0);
  // The request's parts: the front end, no queue, its prompt's step (the whole TTFT without a
  // front end) and its decode steps (E2E less TTFT, either way).
  EXPECT_DOUBLE_EQ(ten["request"]["front_end_s"].get<double>(), 10e-3);
  EXPECT_DOUBLE_EQ(ten["request"]["queue_s"].get<double>(), 0);
  EXPECT_NEAR(ten["request"]["prefill_s"].get<double>(), none["ttft_s"]["mean"].get<double>(), 1e-9);
  EXPECT_NEAR(ten["request"]["decode_s"].get<double>(), none["e2e_s"]["mean"].get<double>() - none["ttft_s"]["mean"].get<double>(), 1e-9);
}

TEST(ServeCli, SamplingAtATemperatureAddsItsKernelsToEveryStep) {
  // One client of Llama-3.1-8B on an H100 under vLLM: each step samples one sequence's 128256
  // logits. At a temperature (docs/serving.md#sampling) four kernels join greedy's cast and
  // argmax: the division by the temperature in place (8 bytes a logit: 1026048), the softmax
  // (16: 2052096), the exponential noise (4: 513024) and the division by it (12: 1539072),
  // 5130240 bytes at the H100's 3.35 TB/s x 0.9 (no pointwise curve: the chip's figures) =
  // 1.70157 us, and 4 x the 1.3 us kernel boundary: 6.90157 us more in every step, decode and
  // prompt alike.
  const auto greedy = run_json(kSmall + " --concurrency 1 --requests 3");
  const auto random = run_json(kSmall + " --concurrency 1 --requests 3 --sampling random");
  EXPECT_EQ(greedy["workload"]["sampling"], "greedy");
  EXPECT_EQ(random["workload"]["sampling"], "random");
  EXPECT_EQ(random["engine"]["draw"], "exponential");
  EXPECT_NE(random["engine"]["draw_source"].get<std::string>().find("random_sample"), std::string::npos);
  const double step = 5130240 / (3.35e12 * 0.9) + 4 * 1.3e-6;
  EXPECT_NEAR(random["tpot_s"]["mean"].get<double>() - greedy["tpot_s"]["mean"].get<double>(), step, 1e-9);
  EXPECT_NEAR(random["ttft_s"]["mean"].get<double>() - greedy["ttft_s"]["mean"].get<double>(), step, 1e-9);
  // The text names the draw; SGLang draws with FlashInfer's kernel, TensorRT-LLM with torch.multinomial.
  const RunResult text = run(kSmall + " --concurrency 1 --requests 3 --sampling random");
  EXPECT_EQ(text.status, 0);
  EXPECT_NE(text.out.find("sampled at a temperature, nothing cut"), std::string::npos) << text.out;
  EXPECT_EQ(run(kSmall + " --concurrency 1 --requests 3").out.find("sampled at a temperature"), std::string::npos);
  EXPECT_EQ(run_json(kSmall + " --concurrency 1 --requests 3 --sampling random --engine sglang")["engine"]["draw"], "flashinfer");
  EXPECT_EQ(run_json(kSmall + " --concurrency 1 --requests 3 --sampling random --engine trtllm")["engine"]["draw"], "multinomial");
  // Top-p is not modelled: refused, not priced as something else.
  expect_bad(kSmall + " --concurrency 1 --requests 3 --sampling top-p", "--sampling");
}

TEST(ServeCli, AStepsDeviceTimeIsSplitByTheKernelClassEachKernelRunsAs) {
  // One client decoding Llama-3.1-8B on an H100 (vLLM: kernels merged, every decode step one
  // CUDA graph). Its norms: two a layer and the final one, 32 x 2 + 1 = 65, each with the
  // residual add inside: the hidden state, the residual and the weight read, the normalised
  // state and the new residual written, 5 x 4096 bf16 values = 40960 B. The H100's norm class
  // {memory 0.6036, overhead 0.8837 us} (data/hardware/nvidia/h100-sxm.yaml) prices each at
  // 0.8837 us + 40960 B / (3.35 TB/s x 0.6036) = 0.8837 + 0.0202566 us = 0.9039566 us; the
  // 65 take 58.7572 us.
  const auto j = run_json(kSmall + " --concurrency 1 --requests 3");
  const auto& d = j["decode_step"];
  const auto& by = d["by_kernel_class_s"];
  ASSERT_TRUE(by.contains("norm")) << d.dump();
  EXPECT_NEAR(by["norm"].get<double>(), 65 * (0.8837e-6 + 40960 / (3.35e12 * 0.6036)), 1e-11);
  // The classes add up to the device's time (a graph of 325 kernels outlasts its one launch),
  // and one GPU runs no collective.
  double sum = 0;
  for (const auto& [name, seconds] : by.items()) sum += seconds.get<double>();
  EXPECT_NEAR(sum, d["device_s"].get<double>(), 1e-12 * sum);
  EXPECT_FALSE(by.contains("allreduce_custom"));
  EXPECT_TRUE(by.contains("gemm"));
  EXPECT_TRUE(by.contains("attention_decode"));
  // Over 2 GPUs each layer's two all-reduces run in vLLM's own kernel (allreduce_custom), and the
  // prompt step's classes add up to its device time too.
  const auto tp2 = run_json(kSmall + " --tp 2 --concurrency 1 --requests 3");
  EXPECT_GT(tp2["decode_step"]["by_kernel_class_s"].value("allreduce_custom", 0.0), 0);
  double prompt = 0;
  for (const auto& [name, seconds] : tp2["prompt_step"]["by_kernel_class_s"].items()) prompt += seconds.get<double>();
  EXPECT_NEAR(prompt, tp2["prompt_step"]["device_s"].get<double>(), 1e-12 * prompt);
  // The text names them, largest first, with their shares.
  const RunResult text = run(kSmall + " --concurrency 1 --requests 3");
  ASSERT_EQ(text.status, 0);
  const auto line = text.out.find("  by kernel class: gemm ");
  ASSERT_NE(line, std::string::npos) << text.out;
  EXPECT_LT(line, text.out.find("a mean request:"));
}

TEST(ServeCli, EagerStepsLastTheirKernelsTimesTheHostsTime) {
  // One client, every step eager, the host 1 ms a kernel: a decode step of Llama-3.1-8B launches
  // 325 kernels (32 layers x 10 and 5 more: StepModel.AnEagerStepLastsAtLeastItsKernelsTimesTheHostsTime),
  // 325 ms, longer than the device's few ms and vLLM's 0.4 ms of host a step beside it. The
  // engine names the figure and where it came from.
  const auto j = run_json(kSmall + " --concurrency 1 --requests 2 --eager --eager-host 1ms");
  EXPECT_DOUBLE_EQ(j["engine"]["eager_host_s"].get<double>(), 1e-3);
  EXPECT_EQ(j["engine"]["eager_host_source"], "--eager-host");
  EXPECT_NEAR(j["tpot_s"]["mean"].get<double>(), 0.325, 1e-9);
  // The decode step's parts keep the two apart: its 325 kernels launched by the host, 325 ms of
  // them, and the device's own time, a few ms (8B's 16 GB of weights at an H100's rates).
  const auto& d = j["decode_step"];
  EXPECT_DOUBLE_EQ(d["host_launches"].get<double>(), 325);
  EXPECT_NEAR(d["eager_host_s"].get<double>(), 0.325, 1e-12);
  EXPECT_GT(d["device_s"].get<double>(), 16e9 / 3.35e12);
  EXPECT_LT(d["device_s"].get<double>(), 0.02);
  EXPECT_EQ(d["sources"]["eager_host"], "--eager-host");
  // The preset's own figure and source.
  const auto preset = run_json(kSmall + " --concurrency 1 --requests 2");
  EXPECT_DOUBLE_EQ(preset["engine"]["eager_host_s"].get<double>(), 25e-6);
  EXPECT_NE(preset["engine"]["eager_host_source"].get<std::string>().find("#1401"), std::string::npos);
}

TEST(ServeCli, SglangLaunchesAnMlaModelsKernelsAtItsOwnHostTime) {
  // SGLang's DeepSeek-V3 forward of one new token: 82.6 ms eager (sgl-project/sglang PR #12160),
  // its host's launches; ridgeline's prompt step of DeepSeek-V3 at TP 8 as SGLang runs it is 1468
  // kernels (the vLLM 0.8 test below counts a decode step's 1877: 58 MoE layers' shared experts
  // among them, 6 kernels each, their input's quantisation, gate-up GEMM, activation, the
  // activation's quantisation, down GEMM and add, which SGLang's fused shared expert runs inside
  // the routed experts' kernel: 1877 - 58 x 6 = 1529; each of the 61 layers' q_a_proj and
  // kv_a_proj, two GEMMs each after its input's quantisation under vLLM 0.8, one under SGLang:
  // 1529 - 61 x 2 = 1407; a prompt adds each layer's keys' assembly for MLA's prefill, 1407 +
  // 61), so 82.6 ms / 1468 = 56.3 us a kernel (PR #12160 is of October 2025, before SGLang
  // fused the all-reduces with their norms on Hopper, PR #14764: the kernels it ran are these).
  // A one-token prompt's step (SGLang prefills eagerly) under --allreduce-fusion off: 1468 x
  // 56.3 us = 82.6484 ms on the host, over its device's ~11 ms, so the TTFT is that plus the
  // front end (4 ms) and one step's host time beside it (0.4 ms + 1.1 us a request under the
  // overlap: hidden). The preset fuses them (SGLang's main line since PR #28789): each of the 61
  // layers' two norms after an all-reduce runs inside it, 1468 - 122 = 1346 kernels, 75.7798 ms.
  const std::string q = "serve --model deepseek-v3 --hw h200 --tp 8 --prompt 1 --gen 20 --concurrency 1 --requests 1 --engine ";
  const auto sgl = run_json(q + "sglang --allreduce-fusion off");
  EXPECT_DOUBLE_EQ(sgl["engine"]["eager_host_s"].get<double>(), 56.3e-6);
  EXPECT_NE(sgl["engine"]["eager_host_source"].get<std::string>().find("#12160"), std::string::npos);
  EXPECT_EQ(sgl["prompt_step"]["launch"], "eager");
  EXPECT_DOUBLE_EQ(sgl["prompt_step"]["host_launches"].get<double>(), 1468);
  EXPECT_EQ(sgl["engine"]["fuse_shared_experts"], true);
  EXPECT_EQ(sgl["engine"]["fused_qkv_a"], true);
  EXPECT_EQ(sgl["engine"]["allreduce_norm"], false);
  EXPECT_NEAR(sgl["prompt_step"]["eager_host_s"].get<double>(), 82.6484e-3, 1e-12);
  ASSERT_LT(sgl["prompt_step"]["device_s"].get<double>(), 82.6484e-3);
  EXPECT_GT(sgl["ttft_s"]["mean"].get<double>(), 82.6484e-3 + 4e-3);
  const auto fused = run_json(q + "sglang");
  EXPECT_EQ(fused["engine"]["allreduce_norm"], true);
  EXPECT_EQ(fused["engine"]["allreduce_norm_max_tokens"], 2048);
  EXPECT_DOUBLE_EQ(fused["prompt_step"]["host_launches"].get<double>(), 1346);
  EXPECT_NEAR(fused["prompt_step"]["eager_host_s"].get<double>(), 75.7798e-3, 1e-12);
  // Only an MLA model and only SGLang 0.4+: Llama under SGLang, DeepSeek under SGLang 0.3 and
  // under TensorRT-LLM keep the 25 us of SGLang's Llama-3-8B step (PR #1401).
  const std::string llama = "serve --model llama-3.1-8b --hw h100-sxm --prompt 1 --gen 4 --concurrency 1 --requests 1 --engine ";
  EXPECT_DOUBLE_EQ(run_json(llama + "sglang")["engine"]["eager_host_s"].get<double>(), 25e-6);
  EXPECT_DOUBLE_EQ(run_json(q + "sglang@0.3")["engine"]["eager_host_s"].get<double>(), 25e-6);
  const auto trt = run_json(q + "trtllm");
  EXPECT_DOUBLE_EQ(trt["engine"]["eager_host_s"].get<double>(), 25e-6);
  EXPECT_EQ(trt["engine"]["fuse_shared_experts"], false);
  // --eager-host still sets it: 1346 x 10 us = 13.46 ms.
  const auto given = run_json(q + "sglang --eager-host 10us");
  EXPECT_EQ(given["engine"]["eager_host_source"], "--eager-host");
  EXPECT_NEAR(given["prompt_step"]["eager_host_s"].get<double>(), 13.46e-3, 1e-12);
}

TEST(ServeCli, TheTensorRtEngineFlowSaysHowItRunsAndQuotesItsOwnClass) {
  // trtllm@0.14 is the TensorRT engine flow's preset (0.9-0.15): its name, every kernel launched
  // by the C++ runtime (no graphs, no Python time a kernel), no host time priced (none published)
  // and no step planned ahead; its answers quote its own class, TensorRT-LLM 0.14's 32 rows behind
  // Triton (docs/serving.md#against-published-measurements).
  const std::string q = "serve --model llama-3.1-8b --hw h100-sxm --qps 2 --requests 40 --prompt 467 --gen 16 --engine trtllm@0.14";
  const RunResult text = run(q);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("trtllm@0.15 (TensorRT engine flow, C++ executor, 0.9-0.15) engine"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("kernels launched eagerly"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("host: none priced per step (the C++ executor's loop: none published)"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("eager kernels"), std::string::npos) << text.out;
  const nlohmann::json j = run_json(q + " --json");
  EXPECT_EQ(j["engine"]["eager_host_s"].get<double>(), 0);
  EXPECT_FALSE(j["engine"]["overlap_scheduling"].get<bool>());
  EXPECT_EQ(j["engine"]["kv_block"].get<int>(), 64);
  EXPECT_EQ(j["error_band"]["class"], "trtllm@0.15, 16-bit, dense");
  EXPECT_TRUE(j["error_band"]["own_rows"].get<bool>());
  EXPECT_EQ(j["error_band"]["metrics"]["ttft"]["n"].get<int>(), 32);
  // Attention data parallelism is the PyTorch backend's: refused with one line.
  expect_bad("serve --model deepseek-v3 --hw h200 --tp 1 --ep 8 --qps 1 --engine trtllm@0.15",
             "--ep 8: trtllm@0.15 (TensorRT-LLM's TensorRT engine flow) has no attention data parallelism");
  // The PyTorch backend's preset keeps its own class (no 16-bit dense row of its own: pooled).
  EXPECT_EQ(run_json("serve --model llama-3.1-8b --hw h100-sxm --qps 2 --requests 40 --prompt 467 --gen 16 --engine trtllm --json")["error_band"]["class"],
            "trtllm, 16-bit, dense");
}

TEST(ServeCli, VllmV1PromptsPastTheLargestGraphRunEagerly) {
  // One client, the host 1 ms a kernel. vLLM V1 replays a step of up to 512 tokens as piecewise
  // graphs: a 512-token prompt's step leaves the host its 32 attention kernels (32 ms, past the
  // device's ~12 ms for 8 TFLOP). A 513-token one runs without graphs: all 325 kernels
  // (StepModel.AnEagerStepLastsAtLeastItsKernelsTimesTheHostsTime), the compiled model's 293
  // at 1 ms too here (--compiled-host): 325 ms. The same host time a step beside both: the
  // prompts' steps differ by 325 - 32 = 293 ms.
  const std::string q = "serve --model llama-3.1-8b --hw h100-sxm --gen 4 --concurrency 1 --requests 1 --eager-host 1ms --prompt ";
  const auto at512 = run_json(q + "512"), at513 = run_json(q + "513"), all = run_json(q + "513 --compiled-host 1ms");
  EXPECT_EQ(at512["engine"]["graph_max_tokens"], 512);
  EXPECT_NEAR(all["request"]["prefill_s"].get<double>() - at512["request"]["prefill_s"].get<double>(), 0.293, 1e-9);
  // --graph-max-batch moves V1's largest graph, which bounds every step: 1024 captures the 513.
  // Past the graph the compiled model's 293 other kernels cost the host its own time, vLLM's
  // 9.1 us (tritonbench PR #1017) or the flag's: at 0.1 ms they add 29.3 ms, 32 + 29.3 = 61.3 ms
  // in all, 29.3 ms past the 512-token step's 32.
  EXPECT_DOUBLE_EQ(at513["engine"]["compiled_host_s"].get<double>(), 9.1e-6);
  EXPECT_NE(at513["engine"]["compiled_host_source"].get<std::string>().find("#1017"), std::string::npos);
  const auto compiled = run_json(q + "513 --compiled-host 0.1ms");
  EXPECT_NEAR(compiled["request"]["prefill_s"].get<double>() - at512["request"]["prefill_s"].get<double>(), 0.0293, 1e-9);
  const auto captured = run_json(q + "513 --graph-max-batch 1024");
  EXPECT_EQ(captured["engine"]["graph_max_tokens"], 1024);
  EXPECT_NEAR(captured["request"]["prefill_s"].get<double>() - at512["request"]["prefill_s"].get<double>(), 0, 1e-6);
}

TEST(ServeCli, VllmLaunchesMlasAttentionOpFromPython) {
  // vLLM's MLA attention op (MLACommonImpl.forward) holds more than attention, and a piecewise
  // step launches all of it from Python between the graphs. Its CPU time a call, vLLM PR #17668:
  // 216 us over 22 torch ops that launch kernels (the query's absorption, RoPE's 13 PyTorch
  // kernels and two write-backs, the cache write, FlashMLA's query concatenation and kernel, the
  // output's absorption and reshape, the output's copy), 149 us over 7 once RoPE moved out. One
  // line through both: c = 67 us / 15 = 4.46667 us an op, F = 149 - 7c = 117.73333 us a call.
  // vLLM 0.8's op also held q_proj, o_proj and o_proj's all-reduce (until PR #17484), linear
  // layers launched at the engines' 25 us a kernel.
  // DeepSeek-V3 at TP 8 (fp8 128x128 blocks: each block-scaled GEMM has its activations'
  // quantisation kernel before it), one client, 61 layers. A decode step:
  // - 0.8: own RoPE (16: the query's RoPE part made contiguous, 13, two write-backs), cache
  //   write, q_absorb, attention, v_absorb and mla_op_copies' 3 (FlashMLA's query concatenation,
  //   the absorbed output's reshape, the output's copy) = 23, x 61
  //   = 1403 at c = 6.26673 ms, 61 calls at F = 7.18173 ms; projections q_b_proj (quantisation +
  //   GEMM), o_proj (the same) and the all-reduce = 5, x 61 = 305 at 25 us = 7.625 ms; 1708
  //   kernels, 21.07347 ms;
  // - 0.9 (the 0.9-0.10 preset): own cache write, q_absorb, attention, v_absorb and the 3
  //   copies = 7, x 61 = 427 at c = 1.90727 ms, and 61 calls at F:
  //   9.089 ms, 61 x 149 us, the measured call.
  const std::string q = "serve --model deepseek-v3 --hw h200 --tp 8 --prompt 300 --gen 20 --concurrency 1 --requests 1 --engine ";
  const auto v08 = run_json(q + "vllm@0.8"), v09 = run_json(q + "vllm@0.9");
  EXPECT_EQ(v08["engine"]["mla_attention_op"], "projections");
  EXPECT_EQ(v09["engine"]["mla_attention_op"], "absorbed");
  // V padded to the keys' width in a prompt's attention: 0.8.4 alone (PR #13111 came after).
  EXPECT_EQ(v08["engine"]["mla_pad_v"], true);
  EXPECT_EQ(v09["engine"]["mla_pad_v"], false);
  EXPECT_NEAR(v08["engine"]["mla_op_host_s"].get<double>(), 67e-6 / 15, 1e-15);
  EXPECT_NEAR(v08["engine"]["mla_op_call_host_s"].get<double>(), 117.73333333e-6, 1e-12);
  EXPECT_DOUBLE_EQ(v08["decode_step"]["host_launches"].get<double>(), 1708);
  EXPECT_DOUBLE_EQ(v08["decode_step"]["mla_op_launches"].get<double>(), 1403);
  EXPECT_DOUBLE_EQ(v08["decode_step"]["mla_op_calls"].get<double>(), 61);
  EXPECT_NEAR(v08["decode_step"]["eager_host_s"].get<double>(), 21.0734667e-3, 1e-9);
  EXPECT_DOUBLE_EQ(v09["decode_step"]["host_launches"].get<double>(), 427);
  EXPECT_DOUBLE_EQ(v09["decode_step"]["mla_op_launches"].get<double>(), 427);
  EXPECT_NEAR(v09["decode_step"]["eager_host_s"].get<double>(), 9.089e-3, 1e-9);
  EXPECT_NE(v08["decode_step"]["sources"]["mla_op_host"].get<std::string>().find("#17668"), std::string::npos);
  // A 300-token prompt's step (piecewise, within 512 tokens) under 0.8: own RoPE (16), cache
  // write, kv_b_proj (quantisation + GEMM), the keys' assembly, V's padding, the prefill
  // attention, its output's slice and the output's copy = 24, x 61 = 1464; the same 5
  // projections, 305: 1769.
  EXPECT_EQ(v08["prompt_step"]["launch"], "piecewise");
  EXPECT_DOUBLE_EQ(v08["prompt_step"]["host_launches"].get<double>(), 1769);
  EXPECT_DOUBLE_EQ(v08["prompt_step"]["mla_op_launches"].get<double>(), 1464);
  // The kernels of a decode step: 1877 in the layers' other kernels, attention, absorptions and
  // cache writes (1819 before each of the 58 MoE layers added its shared experts' output in a
  // kernel), and the op's copies: 0.8's query concatenation, reshape and output copy, 3 x 61 =
  // 2060, and RoPE's 15 kernels more a layer, 2060 + 915 = 2975. The 0.9-0.10 preset runs
  // q_a_proj and kv_a_proj as one GEMM, as 0.10.0 does (vLLM PR #21116): one GEMM and its
  // input's quantisation fewer a layer, 2060 - 2 x 61 = 1938.
  EXPECT_EQ(v08["engine"]["fused_qkv_a"], false);
  EXPECT_EQ(v09["engine"]["fused_qkv_a"], true);
  EXPECT_DOUBLE_EQ(v09["decode_step"]["kernels"].get<double>(), 1938);
  EXPECT_DOUBLE_EQ(v08["decode_step"]["kernels"].get<double>(), 2975);
  // The engine lines name the op's own kernels, a prompt's among them: RoPE's and V's padding
  // and the output's slice under 0.8 alone (ForwardConfig::mla_pad_v).
  const RunResult t08 = run(q + "vllm@0.8"), t09 = run(q + "vllm@0.9");
  EXPECT_NE(t08.out.find("MLA's attention op: 117.7 us a call (one a layer) and 4.467 us each of its own kernels on the host outside a "
                         "whole graph (RoPE's 16 PyTorch kernels a path, the cache write, absorptions with FlashMLA's query "
                         "concatenation and the output's reshape or a prompt's kv_b_proj and keys' assembly, V's padding and output's "
                         "slice, attention, each path's output copied into the step's; its q_proj"),
            std::string::npos)
      << t08.out;
  EXPECT_NE(t09.out.find("(the cache write, absorptions with FlashMLA's query concatenation and the output's reshape or a prompt's "
                         "kv_b_proj and keys' assembly, attention, each path's output copied into the step's; "),
            std::string::npos)
      << t09.out;
  // A step lasts the longer of the device's time and the launches, plus the loop's host time
  // (serial on 0.8): here the device's, with RoPE's launches on it.
  const double device = v08["decode_step"]["device_s"].get<double>();
  ASSERT_GT(device, 21.0734667e-3);
  EXPECT_NEAR(v08["tpot_s"]["mean"].get<double>(), device + v08["decode_step"]["host_s"].get<double>(), 1e-9);
  // A 1000-token prompt passes the largest graph (512 tokens): the compiled model runs without
  // graphs, its kernels at Inductor's 9.1 us, but the op's stay the op's: 1464 own at c and 61
  // calls at F, 305 projections at 25 us, the other 3036 - 1769 = 1267 at 9.1 us (3036: the
  // 2975 a decode step has, less its 23 own a layer, plus the prompt path's 24):
  // 6.5392 + 7.18173 + 7.625 + 11.5297 = 32.87563 ms.
  const auto long_prompt = run_json("serve --model deepseek-v3 --hw h200 --tp 8 --prompt 1000 --gen 20 --concurrency 1 --requests 1 --engine vllm@0.8");
  EXPECT_EQ(long_prompt["prompt_step"]["launch"], "eager");
  EXPECT_DOUBLE_EQ(long_prompt["prompt_step"]["kernels"].get<double>(), 3036);
  EXPECT_DOUBLE_EQ(long_prompt["prompt_step"]["host_launches"].get<double>(), 3036);
  EXPECT_DOUBLE_EQ(long_prompt["prompt_step"]["mla_op_launches"].get<double>(), 1464);
  EXPECT_DOUBLE_EQ(long_prompt["prompt_step"]["compiled_launches"].get<double>(), 1267);
  EXPECT_NEAR(long_prompt["prompt_step"]["eager_host_s"].get<double>(), 32.8756333e-3, 1e-9);
  // --eager-host sets every kernel the engine's Python launches, the op's too, and nothing a
  // call: 1708 x 10 us.
  const auto given = run_json(q + "vllm@0.8 --eager-host 10us");
  EXPECT_NEAR(given["decode_step"]["eager_host_s"].get<double>(), 17.08e-3, 1e-12);
  EXPECT_EQ(given["engine"]["mla_op_host_source"], "--eager-host");
  EXPECT_DOUBLE_EQ(given["engine"]["mla_op_call_host_s"].get<double>(), 0);
  // A dense model's attention op is attention alone: Llama's 32 layers launch 32, at 25 us.
  const std::string dense = "serve --model llama-3.1-8b --hw h100-sxm --prompt 300 --gen 20 --concurrency 1 --requests 1 --engine ";
  const auto llama = run_json(dense + "vllm@0.8");
  EXPECT_DOUBLE_EQ(llama["decode_step"]["host_launches"].get<double>(), 32);
  EXPECT_DOUBLE_EQ(llama["decode_step"]["mla_op_launches"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(llama["decode_step"]["mla_op_calls"].get<double>(), 0);
  // SGLang's decode step is one graph: nothing launched from the host.
  EXPECT_DOUBLE_EQ(run_json(q + "sglang")["decode_step"]["host_launches"].get<double>(), 0);
  const RunResult text = run(q + "vllm@0.8");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("attention (with MLA, its op from q_proj to o_proj's all-reduce) launched eagerly between them"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("launched by the host outside a graph: 1708 kernels, 21.07 ms (305 at 25 us each, 1403 of MLA's attention op at "
                          "4.467 us and its 61 calls at 117.7 us)"),
            std::string::npos)
      << text.out;
}

TEST(ServeCli, VllmSizesItsLargestGraphFromTheSequenceLimit) {
  // vLLM from 0.10 captures graphs up to min(2 x max_num_seqs, 512) tokens unless told (PR
  // #20628), from 0.13 min(2 x max_num_seqs x (1 + k), 512) with k speculative tokens (PR
  // #30330), rounded down to its capture list and within the token budget. One client, a
  // prompt of 100 tokens: within the preset's 512 its step is piecewise graphs.
  const std::string q = "serve --model llama-3.1-8b --hw h100-sxm --prompt 100 --gen 4 --concurrency 1 --requests 1";
  const auto preset = run_json(q);
  EXPECT_EQ(preset["engine"]["graph_max_tokens"], 512);
  EXPECT_EQ(preset["prompt_step"]["launch"], "piecewise");
  // --max-num-seqs 32: graphs up to 2 x 32 = 64 tokens; the 100-token step runs without them,
  // all 325 kernels launched by the host (32 attention's, 293 the compiled model's).
  const auto small = run_json(q + " --max-num-seqs 32");
  EXPECT_EQ(small["engine"]["graph_max_tokens"], 64);
  EXPECT_EQ(small["engine"]["graph_max_batch"], 64);
  EXPECT_EQ(small["engine"]["capture_follows_seqs"], true);
  EXPECT_EQ(small["prompt_step"]["launch"], "eager");
  EXPECT_DOUBLE_EQ(small["prompt_step"]["host_launches"].get<double>(), 325);
  const RunResult text = run(q + " --max-num-seqs 32");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("up to 64 tokens piecewise graphs, longer ones eagerly (vLLM's largest graph from max_num_seqs 32;"), std::string::npos)
      << text.out;
  // 300 sequences: 600, capped at 512. Off the list: 2 x 30 = 60 is captured up to 56 (steps
  // of 8), 2 x 3 = 6 up to 4 (1, 2, 4); 2 x 150 = 300 up to 288 (steps of 16 from 256, from
  // 0.11.1: PR #26016), on the 0.11-0.13 preset too. A budget of 40 tokens drops the sizes past it.
  EXPECT_EQ(run_json(q + " --max-num-seqs 300")["engine"]["graph_max_tokens"], 512);
  EXPECT_EQ(run_json(q + " --max-num-seqs 30")["engine"]["graph_max_tokens"], 56);
  EXPECT_EQ(run_json(q + " --max-num-seqs 3")["engine"]["graph_max_tokens"], 4);
  EXPECT_EQ(run_json(q + " --max-num-seqs 150")["engine"]["graph_max_tokens"], 288);
  EXPECT_EQ(run_json(q + " --max-num-seqs 150 --engine vllm@0.13")["engine"]["graph_max_tokens"], 288);
  EXPECT_EQ(run_json(q + " --max-num-seqs 32 --max-batched-tokens 40")["engine"]["graph_max_tokens"], 40);
  // --graph-max-batch gives the size itself.
  const auto given = run_json(q + " --max-num-seqs 32 --graph-max-batch 256");
  EXPECT_EQ(given["engine"]["graph_max_tokens"], 256);
  EXPECT_EQ(given["engine"]["capture_follows_seqs"], false);
  EXPECT_EQ(given["prompt_step"]["launch"], "piecewise");
  // The 0.8 and 0.9-0.10 presets keep 0.8's fixed list up to 512; 0.11-0.13 follows the sequences.
  EXPECT_EQ(run_json(q + " --max-num-seqs 32 --engine vllm@0.8")["engine"]["graph_max_tokens"], 512);
  EXPECT_EQ(run_json(q + " --max-num-seqs 32 --engine vllm@0.13")["engine"]["graph_max_tokens"], 64);
  // Three draft tokens: 2 x 32 x 4 = 256 (0.13 and later); the engine line counts tokens.
  const std::string spec = q + " --max-num-seqs 32 --draft mtp --spec-tokens 3 --accept 0.8";
  EXPECT_EQ(run_json(spec)["engine"]["graph_max_tokens"], 256);
  EXPECT_EQ(run_json(spec + " --engine vllm@0.13")["engine"]["graph_max_tokens"], 256);
  const RunResult spec_text = run(spec);
  ASSERT_EQ(spec_text.status, 0) << spec_text.err;
  EXPECT_NE(spec_text.out.find("decode steps up to 256 tokens as one graph"), std::string::npos) << spec_text.out;
  // At the default limit two drafts round vLLM's 512 to 498 (multiples of 3): the rounding, not
  // the sequence limit, so the line does not blame the limit.
  const RunResult two = run("serve --model llama-3.1-8b --hw h100-sxm --prompt 100 --gen 4 --concurrency 1 --requests 1 --draft mtp "
                            "--spec-tokens 2 --accept 0.8");
  ASSERT_EQ(two.status, 0) << two.err;
  EXPECT_NE(two.out.find("decode steps up to 498 tokens as one graph"), std::string::npos) << two.out;
  EXPECT_EQ(two.out.find("largest graph from max_num_seqs"), std::string::npos) << two.out;
  // A CPU captures no CUDA graph: vLLM's CPU backend keeps the preset's figures.
  const auto cpu = run_json("serve --model llama-3.1-8b --hw epyc-9654 --prompt 100 --gen 4 --concurrency 1 --requests 1 --max-num-seqs 32");
  EXPECT_EQ(cpu["engine"]["capture_follows_seqs"], false);
  EXPECT_EQ(cpu["engine"]["graph_max_tokens"], 512);
  // Engines that capture by batch keep theirs: SGLang's and TensorRT-LLM's decode graphs never
  // see a batch past the limit.
  EXPECT_EQ(run_json(q + " --max-num-seqs 32 --engine trtllm")["engine"]["graph_max_batch"], 128);
  EXPECT_EQ(run_json(q + " --max-num-seqs 32 --engine trtllm")["engine"]["capture_follows_seqs"], false);
  // TensorRT-LLM's graphs count sequences, a sequence's drafts inside its graph: 10 clients
  // verifying 3 drafts decode at most 10 sequences a step, 40 tokens, and replay the graph of
  // their batch (1-32 captured). Counted by tokens, 33-40 would be off its exact sizes.
  const auto trt_spec = run_json("serve --model llama-3.1-8b --hw h100-sxm --engine trtllm --draft mtp --spec-tokens 3 --accept 0.8 "
                                 "--concurrency 10 --requests 40");
  EXPECT_GT(trt_spec["decode_step"]["sequences"].get<double>() * 4, 32);
  EXPECT_EQ(trt_spec["decode_step"]["launch"], "graph");
  // vLLM 0.6 sizes its largest graph from the limit too (0.6.0's _get_max_graph_batch_size: 100
  // padded to 104) and its engine line says so; at its default 256 it says nothing.
  const auto v0 = run("serve --model llama-3.1-8b --hw h100-sxm --engine vllm@0.6 --concurrency 2 --requests 4 --max-num-seqs 100");
  ASSERT_EQ(v0.status, 0) << v0.err;
  EXPECT_NE(v0.out.find("decode steps up to 104 sequences as one graph"), std::string::npos) << v0.out;
  EXPECT_NE(v0.out.find("vLLM's largest graph from max_num_seqs 100"), std::string::npos) << v0.out;
  const auto v0_default = run("serve --model llama-3.1-8b --hw h100-sxm --engine vllm@0.6 --concurrency 2 --requests 4");
  EXPECT_EQ(v0_default.out.find("largest graph from max_num_seqs"), std::string::npos) << v0_default.out;
  EXPECT_EQ(run_json("serve --model llama-3.1-8b --hw epyc-9654 --engine vllm@0.6 --prompt 100 --gen 4 --concurrency 1 --requests 1 "
                     "--max-num-seqs 100")["engine"]["capture_follows_seqs"],
            false);
}

TEST(ServeCli, AnEagerV1DecodeStepNamesItsPythonAndCompiledLaunchesApart) {
  // --graph-max-batch 1: vLLM V1's largest graph holds one token, so two clients' decode steps
  // of two run without graphs. Of the 8B's 325 kernels 32 are attention's, launched by the
  // engine's Python at 25 us, and 293 the compiled model's at 9.1 us (tritonbench PR #1017):
  // 32 x 25 + 293 x 9.1 = 800 + 2666.3 us = 3.4663 ms.
  const std::string q = "serve --model llama-3.1-8b --hw h100-sxm --prompt 512 --gen 64 --concurrency 2 --requests 4 --graph-max-batch 1";
  const auto d = run_json(q)["decode_step"];
  EXPECT_DOUBLE_EQ(d["sequences"].get<double>(), 2);
  EXPECT_DOUBLE_EQ(d["host_launches"].get<double>(), 325);
  EXPECT_DOUBLE_EQ(d["compiled_launches"].get<double>(), 293);
  EXPECT_NEAR(d["eager_host_s"].get<double>(), 32 * 25e-6 + 293 * 9.1e-6, 1e-12);
  EXPECT_NE(d["sources"]["compiled_host"].get<std::string>().find("#1017"), std::string::npos);
  const RunResult text = run(q);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("325 kernels, 3.466 ms (32 at 25 us each, 293 of the compiled model at 9.1 us)"), std::string::npos) << text.out;
  // An engine without a compiled model refuses the flag.
  expect_bad("serve --model llama-3.1-8b --hw h100-sxm --qps 1 --engine sglang --compiled-host 9us", "--compiled-host");
  expect_bad("serve --model llama-3.1-8b --hw h100-sxm --qps 1 --engine vllm --graph-max-batch 4 --draft mtp --spec-tokens 7 --accept 0.5",
             "--spec-tokens 7: vLLM rounds its CUDA-graph sizes to multiples of 8");
}

TEST(ServeCli, TheMeanPromptStepIsComposedAsTheStepsThatRanIt) {
  // One request of 1000 prompt tokens: its one prompt step (1000 > 512 tokens: vLLM V1 runs it
  // without graphs) is 1 chunk of 1000 tokens to context 1000, with no decodes. Launched by the
  // host: the 8B's 325 kernels, 32 attention's at 25 us and 293 the compiled model's at 9.1 us,
  // 3.4663 ms (the test above); the host's step, 400 us + 1.1 us for one request. The device's
  // time is the step's: a lone request's TTFT is the front end, the host's step and the step.
  const std::string lone = "serve --model llama-3.1-8b --hw h100-sxm --prompt 1000 --gen 2 --concurrency 1 --requests 1";
  const auto j = run_json(lone);
  const auto p = j["prompt_step"];
  EXPECT_DOUBLE_EQ(p["steps"].get<double>(), 1);
  EXPECT_DOUBLE_EQ(p["chunks"].get<double>(), 1);
  EXPECT_DOUBLE_EQ(p["chunk_tokens"].get<double>(), 1000);
  EXPECT_DOUBLE_EQ(p["chunk_context"].get<double>(), 1000);
  EXPECT_DOUBLE_EQ(p["decodes"].get<double>(), 0);
  EXPECT_EQ(p["launch"], "eager");
  EXPECT_DOUBLE_EQ(p["host_launches"].get<double>(), 325);
  EXPECT_DOUBLE_EQ(p["compiled_launches"].get<double>(), 293);
  EXPECT_NEAR(p["eager_host_s"].get<double>(), 32 * 25e-6 + 293 * 9.1e-6, 1e-12);
  EXPECT_NEAR(p["host_s"].get<double>(), 400e-6 + 1.1e-6, 1e-12);
  EXPECT_NEAR(p["device_s"].get<double>(), j["ttft_s"]["mean"].get<double>() - j["engine"]["front_end_s"].get<double>() - (400e-6 + 1.1e-6), 1e-9);
  EXPECT_NE(p["sources"]["compiled_host"].get<std::string>().find("#1017"), std::string::npos);
  // Within a budget of 512 tokens the prompt runs in two steps: 512 tokens to context 512, then
  // 488 to 1000. Their mean: 1 chunk of 500 tokens to context 756, under 512 tokens: piecewise
  // graphs, the host launching attention's 32 kernels alone (800 us).
  const std::string chunked = lone + " --max-batched-tokens 512 --max-num-seqs 256";
  const auto c = run_json(chunked)["prompt_step"];
  EXPECT_DOUBLE_EQ(c["steps"].get<double>(), 2);
  EXPECT_DOUBLE_EQ(c["chunks"].get<double>(), 1);
  EXPECT_DOUBLE_EQ(c["chunk_tokens"].get<double>(), 500);
  EXPECT_DOUBLE_EQ(c["chunk_context"].get<double>(), 756);
  EXPECT_EQ(c["launch"], "piecewise");
  EXPECT_DOUBLE_EQ(c["host_launches"].get<double>(), 32);
  EXPECT_DOUBLE_EQ(c["compiled_launches"].get<double>(), 0);
  EXPECT_NEAR(c["eager_host_s"].get<double>(), 32 * 25e-6, 1e-12);
  const RunResult text = run(chunked);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("a mean step with prompt tokens (2 of 3 steps; 1 chunk of 500 tokens to context 756, launched as piecewise graphs)"),
            std::string::npos)
      << text.out;
  // Outputs of one token: no decode step, so the prompt step's line is followed by where its
  // parts come from. One client, five requests: five steps, each one prompt.
  const RunResult lone_tokens = run("serve --model llama-3.1-8b --hw h100-sxm --prompt 1000 --gen 1 --concurrency 1 --requests 5");
  ASSERT_EQ(lone_tokens.status, 0) << lone_tokens.err;
  EXPECT_EQ(lone_tokens.out.find("a mean decode step"), std::string::npos) << lone_tokens.out;
  EXPECT_NE(lone_tokens.out.find("a mean step with prompt tokens (5 of 5 steps; 1 chunk of 1000 tokens to context 1000, launched eagerly)"),
            std::string::npos)
      << lone_tokens.out;
  EXPECT_NE(lone_tokens.out.find("  fixed times: h100-sxm's kernel classes"), std::string::npos) << lone_tokens.out;
  // Three requests 200 ms apart, each decoding 99 steps of several ms (longer than 400 ms): the
  // second's prompt step carries the first's decode, the third's both: 0, 1 and 2 decodes,
  // 1 on average, each at a context past its 1000-token prompt and short of its 1100 tokens.
  const auto mixed = run_json("serve --model llama-3.1-8b --hw h100-sxm --prompt 1000 --gen 100 --arrival constant --qps 5 --requests 3");
  EXPECT_DOUBLE_EQ(mixed["steps"]["mixed"].get<double>(), 2);
  EXPECT_DOUBLE_EQ(mixed["prompt_step"]["steps"].get<double>(), 3);
  EXPECT_DOUBLE_EQ(mixed["prompt_step"]["decodes"].get<double>(), 1);
  EXPECT_GT(mixed["prompt_step"]["decode_context"].get<double>(), 1000);
  EXPECT_LT(mixed["prompt_step"]["decode_context"].get<double>(), 1100);
}

TEST(ServeCli, TheMeanPromptStepIsThePrefillInstancesAndTheBusiestRanks) {
  // Disaggregated with a decode cache of 1500 blocks for requests of 3000 tokens: decode
  // instances preempt and recompute, their own mixed steps. The prompt step is the prefill
  // instances': their steps hold no decodes, so it is their prefill steps alone.
  const auto d = run_json("serve --model llama-3.1-8b --hw h100-sxm --qps 50 --requests 300 --prompt 1000 --gen 2000 --disagg 1:1 --kv-blocks 1500");
  ASSERT_GT(d["steps"]["mixed"].get<double>(), 0);  // the decode instances' recomputes
  EXPECT_DOUBLE_EQ(d["prompt_step"]["steps"].get<double>(), d["steps"]["prefill"].get<double>());
  EXPECT_DOUBLE_EQ(d["prompt_step"]["decodes"].get<double>(), 0);
  // gpt-oss-120b on 8 attention data-parallel B200 ranks: a 1024-token prompt's chunk sits whole
  // on its request's rank, so the busiest rank runs at least 1024 tokens, past vLLM V1's 512:
  // the step runs without graphs, its 545 kernels launched by the host, 36 of them attention's
  // at 25 us and 509 the compiled model's at 9.1 us: 900 + 4631.9 us = 5.5319 ms.
  const auto p = run_json("serve --model gpt-oss-120b --hw b200 --chips 8 --ep 8 --experts ep --tp 1 --qps 20 --requests 200 --prompt 1024")["prompt_step"];
  EXPECT_GE(p["launch_tokens"].get<double>(), 1024);
  EXPECT_EQ(p["launch"], "eager");
  EXPECT_DOUBLE_EQ(p["host_launches"].get<double>(), 545);
  EXPECT_NEAR(p["eager_host_s"].get<double>(), 36 * 25e-6 + 509 * 9.1e-6, 1e-12);
}

TEST(ServeCli, RequestsOutCsvAndJsonl) {
  const std::string csv = std::string(RIDGELINE_TMP_DIR) + "/serve_requests.csv";
  const std::string jsonl = std::string(RIDGELINE_TMP_DIR) + "/serve_requests.jsonl";
  ASSERT_EQ(run(kSmall + " --qps 5 --requests 20 --requests-out " + csv).status, 0);
  ASSERT_EQ(run(kSmall + " --qps 5 --requests 20 --requests-out " + jsonl).status, 0);
  std::ifstream in(csv);
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header.substr(0, 31), "id,replica,arrival_s,queue_s,tt");
  int rows = 0;
  while (std::getline(in, line)) ++rows;
  EXPECT_EQ(rows, 20);
  std::ifstream jin(jsonl);
  rows = 0;
  while (std::getline(jin, line)) {
    EXPECT_EQ(nlohmann::json::parse(line)["output_tokens"], 64);
    ++rows;
  }
  EXPECT_EQ(rows, 20);
}

// The rows of a --steps-out CSV after its header, each cut at its commas.
std::vector<std::vector<std::string>> steps_rows(const std::string& csv) {
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
    rows.push_back(cells);
  }
  return rows;
}

// Every step of a closed loop of one client, 2 requests of 100 prompt and 4 output tokens on
// vLLM (the 0.14+ preset): each request a prompt step (its 100 tokens, one chunk, no decodes:
// the first output token) and 3 decode steps of one sequence at contexts 101, 102 and 103 (the
// token fed back and the ones before it): 8 rows, as the JSON counts them. The first request
// reaches the scheduler after the front end's 4 ms; the engine, idle until then, plans its step
// only then: the period is the device's time plus the host's 400 us + 1.1 us per request; the
// decode steps follow back to back, their host time under the device's (async scheduling). The
// second request is sent as the first ends, and reaches the scheduler 4 ms later.
TEST(ServeCli, StepsOutListsEveryStep) {
  const std::string csv = std::string(RIDGELINE_TMP_DIR) + "/serve_steps.csv";
  const auto j = run_json("serve --model llama-3.1-8b --hw h100-sxm --prompt 100 --gen 4 --concurrency 1 --requests 2 --steps-out " + csv);
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "step,replica,start_s,period_s,device_s,prompt_tokens,prompt_chunks,decodes,decode_context,launch");
  const std::vector<std::vector<std::string>> rows = steps_rows(csv);
  for (const auto& cells : rows) ASSERT_EQ(cells.size(), 10u);
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(j["steps"]["total"], 8);
  const auto num = [&](std::size_t i, std::size_t col) { return std::stod(rows[i][col]); };
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(rows[i][0], std::to_string(i));
    const bool prompt = i % 4 == 0;
    EXPECT_DOUBLE_EQ(num(i, 5), prompt ? 100 : 0) << i;
    EXPECT_DOUBLE_EQ(num(i, 6), prompt ? 1 : 0) << i;
    EXPECT_DOUBLE_EQ(num(i, 7), prompt ? 0 : 1) << i;
    EXPECT_DOUBLE_EQ(num(i, 8), prompt ? 0 : 100 + static_cast<double>(i % 4)) << i;
    if (!prompt) {
      EXPECT_NEAR(num(i, 3), num(i, 4), 1e-12) << i;  // the host's time hidden
    }
    if (i % 4 != 3) {
      EXPECT_NEAR(num(i + 1, 2), num(i, 2) + num(i, 3), 1e-9) << i;
    }
  }
  EXPECT_NEAR(num(0, 2), 4e-3, 1e-12);
  EXPECT_NEAR(num(0, 3) - num(0, 4), 400e-6 + 1.1e-6, 1e-9);
  EXPECT_NEAR(num(4, 2), num(3, 2) + num(3, 3) + 4e-3, 1e-9);
}

// SGLang's --scheduler-recv-interval n: its loop reads the requests sent to it only once the
// steps since it last read weigh n (a decode step 1, one with prompt tokens 1000). Two requests
// of a trace, A at 0 s (200 tokens to generate) and B at 0.2 s, no front end: A's prompt is
// step 0, and its weight makes the loop read at once; then A's decode steps 1, 2, ... add 1
// each, and under overlap scheduling (the sglang preset) the pass that reads is the one that
// launches step k, so it reads at the start of every step k that is a multiple of n. B arrives
// during step j (it starts at or before 0.2 s, the next after). Read every step (n = 1) it is
// taken at the start of step j + 1 and its prompt runs in step j + 2, the step after (the one
// starting was planned already); at n = 10 it is taken at the first multiple of 10 after j and
// runs in the step after that. The quiet steps leapt over without --steps-out count alike: B's
// TTFT is the same either way.
TEST(ServeCli, SglangReadsNewRequestsEveryNDecodeSteps) {
  const std::string trace = std::string(RIDGELINE_TMP_DIR) + "/recv_interval_trace.csv";
  std::ofstream(trace) << "timestamp_s,input_tokens,output_tokens\n0,100,200\n0.2,100,4\n";
  const std::string base = "serve --engine sglang --model llama-3.1-8b --hw h100-sxm --front-end '0 s' --per-request --trace " + trace;
  std::vector<double> read_every_step;  // the step starts of the run read every step
  for (const int n : {1, 10}) {
    const std::string csv = std::string(RIDGELINE_TMP_DIR) + "/recv_interval_steps.csv";
    const std::string flags = " --scheduler-recv-interval " + std::to_string(n);
    const auto j = run_json(base + flags + " --steps-out " + csv);
    EXPECT_EQ(j["engine"]["scheduler_recv_interval"], n);
    std::vector<double> start;
    std::vector<int> prompts;  // the steps with prompt tokens
    for (const auto& cells : steps_rows(csv)) {
      ASSERT_EQ(cells.size(), 10u);
      if (std::stod(cells[5]) > 0) prompts.push_back(static_cast<int>(start.size()));
      start.push_back(std::stod(cells[2]));
    }
    if (n == 1) read_every_step = start;
    ASSERT_EQ(prompts.size(), 2u);
    EXPECT_EQ(prompts[0], 0);
    int during = 0;  // the step B arrives in
    while (during + 1 < static_cast<int>(start.size()) && start[static_cast<std::size_t>(during) + 1] <= 0.2) ++during;
    ASSERT_GT(during, 10);
    const int taken = n == 1 ? during + 1 : (during / n + 1) * n;
    EXPECT_EQ(prompts[1], taken + 1) << "n " << n << ", B arrives in step " << during;
    // Read every step, nothing is held unread (JSON request.unread_s); at n = 10 B reaches the
    // scheduler at 0.2 s and is read as step `taken` starts, A (sent to an idle engine) at once:
    // the mean of the two, (start[taken] - 0.2) / 2, part of the queue (the parts add up to TTFT).
    const double unread = n == 1 ? 0 : (start[static_cast<std::size_t>(taken)] - 0.2) / 2;
    EXPECT_NEAR(j["request"]["unread_s"].get<double>(), unread, 1e-9) << n;
    EXPECT_NEAR(j["request"]["unread_s"].get<double>() + j["request"]["queue_s"].get<double>(), j["queue_s"]["mean"].get<double>(), 1e-9) << n;
    // B's TTFT (the rows in the order requests end: found by id).
    const auto ttft_b = [](const nlohmann::json& r) {
      for (std::size_t i = 0; i < r["requests"]["id"].size(); ++i) {
        if (r["requests"]["id"][i] == 1) return r["requests"]["ttft_s"][i].get<double>();
      }
      return -1.0;
    };
    EXPECT_NEAR(ttft_b(j), start[static_cast<std::size_t>(prompts[1]) + 1] - 0.2, 1e-9) << n;  // its first token as its step ends
    const auto leapt = run_json(base + flags);
    EXPECT_DOUBLE_EQ(ttft_b(leapt), ttft_b(j)) << n;
  }
  // B sent exactly as step 33 starts (A's steps are the same in every run until B is read): the
  // step that ended then leaves A to run, so the loop that launches step 33 reads first, at a
  // count of 33 mod 10 = 3, and B waits for step 40 as before: its prompt runs in step 41. (Read
  // every step, it would run in step 33 itself.)
  ASSERT_GT(read_every_step.size(), 33u);
  const std::string edge = std::string(RIDGELINE_TMP_DIR) + "/recv_interval_edge.csv";
  std::ofstream(edge) << "timestamp_s,input_tokens,output_tokens\n0,100,200\n" << fmt::format("{:.12f}", read_every_step[33]) << ",100,4\n";
  const std::string edge_steps = std::string(RIDGELINE_TMP_DIR) + "/recv_interval_edge_steps.csv";
  run_json("serve --engine sglang --model llama-3.1-8b --hw h100-sxm --front-end '0 s' --trace " + edge +
           " --scheduler-recv-interval 10 --steps-out " + edge_steps);
  const std::vector<std::vector<std::string>> rows = steps_rows(edge_steps);
  int second = -1;  // the second step with prompt tokens
  for (std::size_t i = 1; i < rows.size() && second < 0; ++i) {
    if (std::stod(rows[i][5]) > 0) second = static_cast<int>(i);
  }
  EXPECT_EQ(second, 41);
}

// Streaming the steps prices each one on its own, without leaping over the quiet ones: the
// same run. JSON lines carry the CSV's columns.
TEST(ServeCli, StepsOutChangesNothing) {
  const std::string jsonl = std::string(RIDGELINE_TMP_DIR) + "/serve_steps.jsonl";
  const auto with = run_json(kSmall + " --qps 20 --requests 300 --steps-out " + jsonl);
  const auto without = run_json(kSmall + " --qps 20 --requests 300");
  for (const char* metric : {"ttft_s", "tpot_s", "itl_s", "e2e_s"}) {
    for (const char* q : {"p50", "p99", "mean"}) {
      EXPECT_NEAR(with[metric][q].get<double>(), without[metric][q].get<double>(), 1e-9 * without[metric][q].get<double>()) << metric << q;
    }
  }
  EXPECT_EQ(with["steps"]["total"], without["steps"]["total"]);
  std::ifstream in(jsonl);
  std::string line;
  long rows = 0;
  double prompt_tokens = 0;
  while (std::getline(in, line)) {
    const auto row = nlohmann::json::parse(line);
    EXPECT_EQ(row["step"], rows);
    prompt_tokens += row["prompt_tokens"].get<double>();
    ++rows;
  }
  EXPECT_EQ(rows, without["steps"]["total"].get<long>());
  EXPECT_DOUBLE_EQ(prompt_tokens, 300 * 512);  // every prompt computed once (no prefix shared, no preemption)
  EXPECT_EQ(without["preemptions"], 0);
}

TEST(ServeCli, PerRequestColumns) {
  const auto j = run_json(kSmall + " --qps 5 --requests 30 --per-request");
  ASSERT_TRUE(j.contains("requests"));
  EXPECT_EQ(j["requests"]["ttft_s"].size(), 30u);
  EXPECT_EQ(j["requests"]["id"].size(), 30u);
}

TEST(ServeCli, QpsSweepIsOneRunPerRate) {
  const auto j = run_json(kSmall + " --qps 1,4,16 --requests 200");
  ASSERT_EQ(j["sweep"].size(), 3u);
  EXPECT_LE(j["sweep"][0]["e2e_s"]["mean"].get<double>(), j["sweep"][2]["e2e_s"]["mean"].get<double>());
}

TEST(ServeCli, TraceCsvAndAzure) {
  const std::string ours = std::string(RIDGELINE_TMP_DIR) + "/trace.csv";
  std::ofstream(ours) << "timestamp_s,input_tokens,output_tokens\n0,100,10\n0.5,200,20\n1.5,300,30\n";
  auto j = run_json("serve --model llama-3.1-8b --hw h100-sxm --trace " + ours);
  EXPECT_EQ(j["simulated_requests"], 3);
  // 10 + 20 + 30 tokens.
  EXPECT_NEAR(j["output_tokens_per_s"].get<double>() * j["measured_span_s"].get<double>(), 60, 1e-6);
  const std::string azure = std::string(RIDGELINE_TMP_DIR) + "/azure.csv";
  std::ofstream(azure) << "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                          "2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n";
  j = run_json("serve --model llama-3.1-8b --hw h100-sxm --trace " + azure + " --per-request");
  EXPECT_NEAR(j["requests"]["arrival_s"][1].get<double>(), 50.995169 - 46.68059, 1e-6);
}

TEST(ServeCli, EmpiricalLengthsFromATrace) {
  // Every prompt drawn from the trace's input lengths {100, 300}, every output from {7, 9}.
  const std::string t = std::string(RIDGELINE_TMP_DIR) + "/lengths.csv";
  std::ofstream(t) << "timestamp_s,input_tokens,output_tokens\n0,100,7\n1,300,9\n";
  const auto j = run_json("serve --model llama-3.1-8b --hw h100-sxm --qps 5 --requests 50 --per-request --prompt empirical:" + t +
                          " --gen empirical:" + t);
  for (const auto& v : j["requests"]["input_tokens"]) EXPECT_TRUE(v == 100 || v == 300) << v;
  for (const auto& v : j["requests"]["output_tokens"]) EXPECT_TRUE(v == 7 || v == 9) << v;
}

TEST(ServeCli, ReplicasAutoFindsTheFewestMeetingTheSlo) {
  const auto j = run_json(
      "serve --model llama-3.1-8b --hw h100-sxm --concurrency 64 --requests 400 --prompt 1000 --gen 200 "
      "--slo tpot_p99=12ms --replicas auto");
  const int n = j["replicas_search"]["replicas"].get<int>();
  ASSERT_GE(n, 1);
  EXPECT_EQ(j["replicas"], n);
  for (const auto& t : j["replicas_search"]["tried"]) {
    // Fewer replicas than the answer never met the target, the answer did.
    EXPECT_EQ(t["met"].get<bool>(), t["replicas"].get<int>() >= n) << t.dump();
  }
}

TEST(ServeCli, DecodeInstancesOfTheirOwnBudgetAreNamed) {
  // Decode instances that differ from the prefill instances only in their token budget get
  // their own line in the text report (and their budget in the JSON).
  const std::string cmd = kSmall + " --qps 2 --requests 50 --disagg 1:1 --disagg-decode max-batched-tokens=2048";
  EXPECT_NE(run(cmd).out.find("decode instances: 2048 tokens/step"), std::string::npos);
  EXPECT_EQ(run_json(cmd)["disagg"]["decode_max_batched_tokens"], 2048);
}

TEST(ServeCli, BadInput) {
  const std::string trace = std::string(RIDGELINE_TMP_DIR) + "/bad_trace.csv";
  std::ofstream(trace) << "timestamp_s,input_tokens\n0,100\n";
  const std::string unsorted = std::string(RIDGELINE_TMP_DIR) + "/unsorted_trace.csv";
  std::ofstream(unsorted) << "timestamp_s,input_tokens,output_tokens\n1,100,10\n0.5,100,10\n";
  const std::string good = std::string(RIDGELINE_TMP_DIR) + "/good_trace.csv";
  std::ofstream(good) << "timestamp_s,input_tokens,output_tokens\n0,100,10\n";
  const std::string negative = std::string(RIDGELINE_TMP_DIR) + "/negative_trace.csv";
  std::ofstream(negative) << "timestamp_s,input_tokens,output_tokens\n0,100,10\n1,-5,10\n";
  for (auto [args, mention] : std::initializer_list<std::pair<std::string, std::string>>{
           {kSmall, "--qps"},
           {kSmall + " --qps 0", "--qps"},
           {kSmall + " --qps -3", "--qps"},
           {kSmall + " --concurrency 0", "--concurrency"},
           {kSmall + " --qps 1 --prompt normal:5", "--prompt"},
           {kSmall + " --qps 1 --gen lognormal:abc,1", "--gen"},
           {kSmall + " --qps 1 --arrival gamma:0", "--arrival"},
           {kSmall + " --qps 1 --slo ttft_p99=1", "--slo"},
           {kSmall + " --qps 1 --slo latency_p99=1s", "--slo"},
           {kSmall + " --qps 1 --engine tgi", "--engine"},
           {kSmall + " --qps 1 --chunked-prefill maybe", "--chunked-prefill"},
           {kSmall + " --qps 1 --front-end 20s", "--front-end"},
           {kSmall + " --qps 1 --front-end 1", "--front-end"},
           {kSmall + " --qps 1 --scheduler-recv-interval 10", "--scheduler-recv-interval"},
           {kSmall + " --qps 1 --engine sglang --scheduler-recv-interval 0", "--scheduler-recv-interval"},
           {kSmall + " --qps 1 --engine sglang --scheduler-recv-interval 1001", "--scheduler-recv-interval"},
           {kSmall + " --qps 1 --engine sglang --scheduler-recv-interval 10 --disagg 1:1", "--scheduler-recv-interval"},
           {kSmall + " --qps 1 --eager-host 2ms", "--eager-host"},
           {kSmall + " --qps 1 --eager-host fast", "--eager-host"},
           {kSmall + " --qps 1 --compiled-host 2ms", "--compiled-host"},
           {kSmall + " --qps 1 --compiled-host -1us", "--compiled-host"},
           {kSmall + " --qps 1 --compiled-host 9us --eager", "--eager"},
           {kSmall + " --qps 1 --max-num-seqs 100000", "--max-num-seqs"},
           {kSmall + " --qps 1 --requests-out out.txt", "--requests-out"},
           {kSmall + " --qps 1 --steps-out out.txt", "--steps-out"},
           {kSmall + " --qps 1,2 --steps-out s.csv", "--steps-out"},
           {kSmall + " --qps 1 --seeds 2 --steps-out s.csv", "--steps-out"},
           {kSmall + " --qps 1 --steps-out s.csv --requests-out s.csv", "--steps-out"},
           {kSmall + " --qps 1 --steps-out s.csv --requests-out ./s.csv", "--steps-out"},
           {kSmall + " --qps 1 --replicas auto --slo ttft_p99=1s --steps-out s.csv", "--steps-out"},
           {"serve --model llama-3.1-8b --hw h100-sxm,h200 --qps 1 --steps-out s.csv", "--steps-out"},
           {"report --serve --model llama-3.1-8b --hw h100-sxm --qps 1 --out r.html --steps-out s.csv", "--steps-out"},
           {kSmall + " --qps 1 --requests 200 --warmup-requests 200", "--warmup-requests"},
           {kSmall + " --qps 1 --requests 200 --warmup-requests 20 --warmup-drain yes", "--warmup-drain"},
           {kSmall + " --qps 1 --requests 200 --warmup-drain on", "--warmup-drain"},
           {kSmall + " --qps 1 --replicas 0", "--replicas"},
           {kSmall + " --qps 1 --replicas auto", "--slo"},
           {kSmall + " --qps 1 --horizon 5", "--horizon"},
           {kSmall + " --qps 1 --router random", "--router"},
           {kSmall + " --qps 1 --disagg-decode tp=2", "--disagg-decode"},
           {kSmall + " --qps 1 --disagg 1:1 --disagg-decode tp", "--disagg-decode"},
           {kSmall + " --qps 1 --disagg 1:1 --disagg-decode colour=2", "--disagg-decode"},
           {kSmall + " --qps 1 --disagg 1:1 --disagg-decode tp=0", "--disagg-decode tp"},
           {kSmall + " --qps 1 --disagg 1:1 --disagg-decode tp=3", "--disagg-decode"},
           {"serve --model llama-3.1-70b --hw h100-sxm --tp 8 --qps 1 --disagg 1:1 --disagg-decode tp=1", "--disagg-decode"},
           {"serve --model llama-3.1-70b --hw h100-sxm --qps 1", "KV cache"},
           {"serve --model llama-3.1-8b --hw h100-sxm --trace " + trace, "output_tokens"},
           {"serve --model llama-3.1-8b --hw h100-sxm --trace " + unsorted, "line 3"},
           {"serve --model llama-3.1-8b --hw h100-sxm --trace " + negative, "line 3"},
           {"serve --model llama-3.1-8b --hw h100-sxm --trace /nonexistent.csv", "/nonexistent.csv"},
           {kSmall + " --qps 1 --requests 1000000000", "--requests"},
           {"serve --model llama-3.1-8b --hw h100-sxm --trace " + good + " --requests-out " + good, "--requests-out"}}) {
    expect_bad(args, mention);
  }
}

// TensorRT-LLM's default capture list (cuda_graph_config: batches 1-32, 64 and 128, no
// padding; other decode batches run eagerly) and the flags that change it.
TEST(ServeCli, GraphCaptureFlags) {
  const std::string q = "serve --model llama-3.1-8b --hw h100-sxm --engine trtllm --qps 1 --requests 5";
  const nlohmann::json d = run_json(q)["engine"];
  EXPECT_EQ(d["graph_max_batch"], 128);
  EXPECT_TRUE(d["graph_exact_sizes"].get<bool>());
  EXPECT_DOUBLE_EQ(d["exposed_step_s"].get<double>(), 0.58e-3);  // issue #13957's idle host time per step
  const RunResult text = run(q);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("decode steps of 1-32, 64 or 128 sequences as one graph"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("580 us exposed per step"), std::string::npos) << text.out;
  // Padding on: TensorRT-LLM's generated list (llm_args.py _generate_cuda_graph_batch_sizes) for
  // 8192: 1, 2, 4, the multiples of 8 to 128, the powers of two 256-4096 (from 2^8 below
  // 2^floor(log2 8192) = 2^13) and 8192; the sizes past the preset's 2048 sequences not captured
  // (model_engine.py: bs <= batch_size), the largest graph 2048.
  std::vector<std::int64_t> want = {1, 2, 4};
  for (std::int64_t i = 8; i <= 128; i += 8) want.push_back(i);
  for (const std::int64_t i : {256, 512, 1024, 2048}) want.push_back(i);
  const nlohmann::json p = run_json(q + " --graph-max-batch 8192 --graph-padding on")["engine"];
  EXPECT_EQ(p["graph_max_batch"], 2048);
  EXPECT_FALSE(p["graph_exact_sizes"].get<bool>());
  EXPECT_EQ(p["graph_sizes"].get<std::vector<std::int64_t>>(), want);
  // For 300: no power of two from 256 below 2^floor(log2 300) = 256, so 128 then 300.
  const auto odd = run_json(q + " --graph-max-batch 300 --graph-padding on")["engine"]["graph_sizes"].get<std::vector<std::int64_t>>();
  ASSERT_GE(odd.size(), 2u);
  EXPECT_EQ(odd[odd.size() - 2], 128);
  EXPECT_EQ(odd.back(), 300);
  // An explicit list (the TensorRT-LLM 0.20 runs' llm_options.yml), within the limits given.
  const nlohmann::json g =
      run_json(q + " --graph-sizes 1,2,4,8,16,32,64,128,256,384,512,1024,2048,4096,8192 --max-num-seqs 384")["engine"];
  EXPECT_EQ(g["graph_max_batch"], 384);
  EXPECT_EQ(g["graph_sizes"].get<std::vector<std::int64_t>>(), (std::vector<std::int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 256, 384}));
  const RunResult listed = run(q + " --graph-sizes 1,8,64");
  ASSERT_EQ(listed.status, 0) << listed.err;
  EXPECT_NE(listed.out.find("a batch padded to the next captured size (1, 8, 64)"), std::string::npos) << listed.out;
  // The preset without padding prices no padding rows.
  EXPECT_TRUE(d["graph_sizes"].empty());
  // Five clients decode 2-5 sequences a step, padded to the list's next size, 8: the step
  // breakdown names the rows its graph ran.
  const nlohmann::json five =
      run_json("serve --model llama-3.1-8b --hw h100-sxm --engine trtllm --concurrency 5 --requests 40 --graph-sizes 1,8,64")["decode_step"];
  EXPECT_GE(five["sequences"].get<double>(), 2);
  EXPECT_LE(five["sequences"].get<double>(), 5);
  EXPECT_EQ(five["padded_sequences"].get<double>(), 8);
  // vLLM 0.8-0.10's piecewise graphs pad too (by tokens): a list is taken.
  EXPECT_EQ(run_json("serve --model llama-3.1-8b --hw h100-sxm --engine vllm@0.9 --qps 1 --requests 5 --graph-sizes 1,8,64")["engine"]["graph_sizes"],
            (std::vector<std::int64_t>{1, 8, 64}));
  // Disaggregated decode instances keep the sizes within their own limits, whatever the prefill
  // instances' (64 dropped for these at 32 sequences, kept for decode instances of 128).
  expect_bad(q + " --graph-sizes 64,128 --disagg 1:1 --disagg-decode max-num-seqs=32", "--disagg-decode");
  const RunResult split = run(q + " --max-num-seqs 32 --graph-sizes 8,64 --disagg 1:1 --disagg-decode max-num-seqs=128");
  EXPECT_EQ(split.status, 0) << split.err;
  expect_bad(q + " --graph-sizes 8,4", "--graph-sizes");
  expect_bad(q + " --graph-sizes 4,4", "--graph-sizes");
  expect_bad(q + " --graph-sizes 0,4", "--graph-sizes");
  expect_bad(q + " --graph-sizes 1,x", "--graph-sizes");
  expect_bad(q + " --graph-sizes 4096 --max-num-seqs 256", "--graph-sizes");
  expect_bad(q + " --graph-sizes 8 --graph-max-batch 8", "--graph-max-batch");
  expect_bad(q + " --graph-sizes 8 --graph-padding off", "--graph-padding");
  expect_bad(q + " --graph-sizes 8 --eager", "--eager");
  std::string many;
  for (int i = 1; i <= 513; ++i) many += (i == 1 ? "" : ",") + std::to_string(i);
  expect_bad(q + " --graph-sizes " + many, "more than 512");
  // vLLM 0.8-0.10: PIECEWISE only, decode steps too.
  const RunResult v10 = run("serve --model llama-3.1-8b --hw h100-sxm --engine vllm@0.9 --qps 1 --requests 5");
  ASSERT_EQ(v10.status, 0) << v10.err;
  EXPECT_NE(v10.out.find("steps of up to 512 tokens as piecewise graphs, attention launched eagerly between them; longer steps eagerly"),
            std::string::npos)
      << v10.out;
  expect_bad(q + " --graph-max-batch 0", "--graph-max-batch");
  expect_bad(q + " --graph-padding sometimes", "--graph-padding");
  expect_bad(q + " --graph-max-batch 64 --eager", "--eager");
  expect_bad(q + " --graph-padding on --eager", "--eager");
}

// The lists vLLM and SGLang capture and pad a decode batch to when none is given
// (docs/serving.md#graph-padding), each written out from its release's code.
TEST(ServeCli, VllmAndSglangPadToTheirOwnCaptureLists) {
  const std::string q = "serve --model llama-3.1-8b --hw h100-sxm --qps 1 --requests 5 --engine ";
  auto sizes = [&](const std::string& flags) { return run_json(q + flags)["engine"]["graph_sizes"].get<std::vector<std::int64_t>>(); };
  auto steps = [](std::vector<std::int64_t> s, std::int64_t from, std::int64_t to, std::int64_t step) {
    for (std::int64_t i = from; i <= to; i += step) s.push_back(i);
    return s;
  };
  // vLLM V1 0.11.1+ (vllm/config/vllm.py _set_cudagraph_sizes): [1, 2, 4] + range(8, 256, 8) +
  // range(256, 513, 16) for its largest graph of 512 tokens (1024 sequences on an H100): 51 sizes.
  const std::vector<std::int64_t> v14 = steps(steps({1, 2, 4}, 8, 248, 8), 256, 512, 16);
  ASSERT_EQ(v14.size(), 51u);
  EXPECT_EQ(sizes("vllm"), v14);
  EXPECT_EQ(sizes("vllm@0.13"), v14);
  // 32 sequences: min(2 x 32, 512) = 64 tokens, the list up to 64.
  EXPECT_EQ(sizes("vllm --max-num-seqs 32"), steps({1, 2, 4}, 8, 64, 8));
  // V0 0.6 (worker/model_runner.py): [1, 2, 4] + [8 * i for i in range(1, 1025)] up to the
  // sequence limit of 256: 35 sizes.
  EXPECT_EQ(sizes("vllm@0.6"), steps({1, 2, 4}, 8, 256, 8));
  // SGLang 0.3 (cuda_graph_runner.py): [1, 2, 4] + [i * 8 for i in range(1, 21)].
  EXPECT_EQ(sizes("sglang@0.3"), steps({1, 2, 4}, 8, 160, 8));
  // SGLang 2025-26 (server_args.py _generate_cuda_graph_batch_sizes) to cuda_graph_max_bs, 256
  // on an 80 GB GPU at TP 1: [1, 2, 4, 8, 12] + range(16, 257, 8).
  EXPECT_EQ(sizes("sglang"), steps({1, 2, 4, 8, 12}, 16, 256, 8));
  // Its request pool of 100 drops the sizes past 100 and is captured itself.
  std::vector<std::int64_t> pool = steps({1, 2, 4, 8, 12}, 16, 96, 8);
  pool.push_back(100);
  EXPECT_EQ(sizes("sglang --max-num-seqs 100"), pool);
  // Under speculative decoding its other list ("less padding for smaller batch sizes",
  // _generate_cuda_graph_batch_sizes' speculative branch): range(1, 9) + range(10, 33, 2) +
  // range(40, 65, 4) + range(72, 257, 8) to 256, 8 + 12 + 7 + 24 = 51 sizes; 9 sequences
  // verifying drafts pad to 10, where without drafts they pad to 12. With no running-request
  // limit given SGLang runs 48 under drafts (speculative_hook.py), so its pool cuts the list at
  // 48: 1-8, 10-32 in steps of 2, 40, 44, 48 (23 sizes).
  const std::string mtp = "sglang --draft mtp --spec-tokens 2 --accept 0.7";
  const std::vector<std::int64_t> spec = steps(steps(steps(steps({}, 1, 8, 1), 10, 32, 2), 40, 64, 4), 72, 256, 8);
  ASSERT_EQ(spec.size(), 51u);
  EXPECT_EQ(sizes(mtp + " --max-num-seqs 1000"), spec);
  const std::vector<std::int64_t> spec48 = steps(steps(steps({}, 1, 8, 1), 10, 32, 2), 40, 48, 4);
  ASSERT_EQ(spec48.size(), 23u);
  EXPECT_EQ(sizes(mtp), spec48);
  const nlohmann::json by_draft = run_json(q + mtp + " --mixed-chunk on")["engine"];
  EXPECT_EQ(by_draft["max_num_seqs"], 48);
  // Mixed chunks off under drafts whatever the limit (every handler turns them off, and
  // server_args.py asserts it); a limit given stays.
  EXPECT_EQ(by_draft["mixed_chunk"], false);
  const nlohmann::json given = run_json(q + mtp + " --max-num-seqs 64 --mixed-chunk on")["engine"];
  EXPECT_EQ(given["max_num_seqs"], 64);
  EXPECT_EQ(given["mixed_chunk"], false);
  EXPECT_EQ(run_json(q + "sglang --mixed-chunk on")["engine"]["mixed_chunk"], true);
  // A request pool of 100 cuts it the same way, 100 itself captured.
  std::vector<std::int64_t> spec_pool = steps(steps(steps(steps({}, 1, 8, 1), 10, 32, 2), 40, 64, 4), 72, 96, 8);
  spec_pool.push_back(100);
  EXPECT_EQ(sizes(mtp + " --max-num-seqs 100"), spec_pool);
  // A largest graph of 10 (--graph-max-batch, SGLang's --cuda-graph-max-bs): the sizes past it
  // dropped, 10 itself captured.
  EXPECT_EQ(sizes("sglang --graph-max-batch 10"), (std::vector<std::int64_t>{1, 2, 4, 8, 10}));
  // The engine line writes a run of four or more sizes an equal step apart as one.
  const RunResult line = run(q + "sglang");
  ASSERT_EQ(line.status, 0) << line.err;
  EXPECT_NE(line.out.find("captured size (1, 2, 4 to 16 in steps of 4, 24 to 256 in steps of 8)"), std::string::npos) << line.out;
  // vLLM's largest graph of 300 tokens is its list's 288 (steps of 16 from 256), for decode and
  // mixed steps alike; vLLM has no switch for padding.
  const nlohmann::json v300 = run_json(q + "vllm --graph-max-batch 300")["engine"];
  EXPECT_EQ(v300["graph_max_batch"], 288);
  EXPECT_EQ(v300["graph_max_tokens"], 288);
  expect_bad(q + "vllm --graph-padding off", "--graph-padding");
  // SGLang pads by default; its switch off (graphs only at its own sizes) is not modelled.
  expect_bad(q + "sglang --graph-padding off", "--graph-padding off: the sglang engine pads a decode batch to its next captured size");
  // vLLM 0.8-0.10 (piecewise graphs only): [1, 2, 4] + range(8, 513, 8), vllm/config.py before
  // PR #26016. Nothing pads where every step is eager.
  EXPECT_EQ(sizes("vllm@0.9"), steps({1, 2, 4}, 8, 512, 8));
  EXPECT_TRUE(sizes("vllm --eager").empty());
  // Five clients: a mean decode step of more than 4 sequences (at most 5) runs padded to 8.
  const nlohmann::json five = run_json("serve --model llama-3.1-8b --hw h100-sxm --engine vllm --concurrency 5 --requests 40")["decode_step"];
  EXPECT_GT(five["sequences"].get<double>(), 4);
  EXPECT_LE(five["sequences"].get<double>(), 5);
  EXPECT_EQ(five["padded_sequences"].get<double>(), 8);
}

// The kernel each engine's release multiplies fp8 blocks with (docs/serving.md#engines):
// DeepGEMM under TensorRT-LLM (PR #3341) and vLLM 0.14+ (PR #24462), vLLM's Triton kernel under 0.8.
TEST(ServeCli, BlockFp8GemmKernelsAreTheEnginesOwn) {
  const std::string q = "serve --model llama-3.1-8b --hw h100-sxm --qps 1 --requests 5 --engine ";
  EXPECT_EQ(run_json(q + "trtllm")["engine"]["block_fp8_gemms"], "deepgemm");
  EXPECT_EQ(run_json(q + "vllm")["engine"]["block_fp8_gemms"], "deepgemm");
  EXPECT_EQ(run_json(q + "vllm@0.8")["engine"]["block_fp8_gemms"], "triton");
  // The flag overrides the preset's choice, and names itself when its value is not a kernel.
  EXPECT_EQ(run_json(q + "trtllm --block-fp8-gemms triton")["engine"]["block_fp8_gemms"], "triton");
  EXPECT_EQ(run_json(q + "vllm@0.8 --block-fp8-gemms deepgemm")["engine"]["block_fp8_gemms"], "deepgemm");
  expect_bad(q + "vllm --block-fp8-gemms cutlass", "--block-fp8-gemms");
}

// Every engine's default moves expert-parallel tokens as an all-to-all of the pairs; DeepEP is
// each one's option (docs/serving.md#deepep), which the flag turns on.
TEST(ServeCli, MoeTokensAreGatheredUnlessAnotherWayIsAsked) {
  // The serving engines gather the ranks' tokens (vLLM's allgather_reducescatter, SGLang's
  // gathered MoE, TensorRT-LLM's attention-DP allgather); the static engine moves the pairs.
  const std::string q = "serve --model mixtral-8x7b --hw h100-sxm --tp 1 --ep 2 --qps 1 --requests 5 --engine ";
  for (const char* e : {"vllm", "sglang", "trtllm"}) {
    const nlohmann::json j = run_json(q + e);
    EXPECT_EQ(j["engine"]["moe_a2a"], "gather") << e;
    // SGLang alone runs the router, shared experts and dense layers on the gathered rows
    // (docs/serving.md#gathered-dense-layers); SGLang 0.3 had no attention data parallelism.
    EXPECT_EQ(j["engine"]["gathered_dense"], std::string_view(e) == "sglang") << e;
  }
  EXPECT_EQ(run_json(q + "sglang@0.3")["engine"]["gathered_dense"], false);
  EXPECT_EQ(run_json(q + "static")["engine"]["moe_a2a"], "pairs");
  EXPECT_EQ(run_json(q + "sglang --moe-a2a pairs")["engine"]["moe_a2a"], "pairs");
  EXPECT_EQ(run_json(q + "sglang --moe-a2a deepep")["engine"]["moe_a2a"], "deepep");
  expect_bad(q + "sglang --moe-a2a mooncake", "--moe-a2a");
  // DeepEP's low-latency buffer (csrc/config.hpp LowLatencyLayout) for DeepSeek-V3 (h 7168, 256
  // experts) at 128 tokens a chip: a dispatch message 16 + max(2·7168, 7168 + 4·56) = 14352 B,
  // a combine message 14336 B; send max(128·14352, 256·128·14336) = 469762048, receive
  // max(256·128·14352, 256·128·14336) = 470286336, signaling 256·4 = 1024, each twice:
  // 1880098816 B a GPU, reserved, and the KV cache that much smaller. And more: gathering, SGLang
  // splits the shared expert over all 16 GPUs; under DeepEP each GPU holds it whole
  // (_shared_expert_use_tp1). 58 MoE layers x 3 matrices of 7168 x 2048 fp8 weights (1 B) and a
  // 4-byte scale per 128 x 128 block (16 x 56 = 896 blocks a matrix): 58 x 3 x (14680064 + 3584)
  // = 2554954752 B, of which 15/16 more on each GPU: 2395270080 B.
  const std::string d = "serve --model deepseek-v3 --hw h100-sxm --tp 1 --ep 16 --qps 1 --requests 5 --engine sglang";
  const auto with = run_json(d + " --moe-a2a deepep"), without = run_json(d);
  EXPECT_EQ(with["memory"]["reserved_bytes"], 1880098816.0);
  EXPECT_EQ(without["memory"]["reserved_bytes"], 0.0);
  EXPECT_NEAR(without["memory"]["kv_bytes"].get<double>() - with["memory"]["kv_bytes"].get<double>(), 1880098816.0 + 2395270080.0,
              1e-3);
}

// Every component of a step and of a request names where its figure comes from: the chip's
// kernel classes (or its bare kernel boundary), the engine's host path and front end (or the
// flag that set them), the simulation for the rest.
TEST(ServeCli, ComponentsNameTheirSources) {
  const std::string q = "serve --model llama-3.1-8b --qps 2 --requests 20 --prompt 256 --gen 32";
  const nlohmann::json j = run_json(q + " --hw h100-sxm");
  const std::string fixed = j["decode_step"]["sources"]["kernel_fixed"];
  for (const char* k : {"h100-sxm's kernel classes", "gemm", "attention_decode", "allreduce_custom", "hw show h100-sxm"}) {
    EXPECT_NE(fixed.find(k), std::string::npos) << k << ": " << fixed;
  }
  EXPECT_NE(j["decode_step"]["sources"]["host"].get<std::string>().find("#42131"), std::string::npos);
  EXPECT_NE(j["request"]["sources"]["front_end"].get<std::string>().find("tt-inference-server #190"), std::string::npos);
  for (const char* k : {"queue", "prefill", "decode"}) EXPECT_FALSE(j["request"]["sources"][k].get<std::string>().empty()) << k;
  // The A100's three classes with curves (its GEMMs, a STREAM kernel, FlashAttention-2's decode); an
  // L40S without any: its kernel boundary.
  EXPECT_EQ(run_json(q + " --hw a100-80gb")["decode_step"]["sources"]["kernel_fixed"],
            "a100-80gb's kernel classes gemm, pointwise, attention_decode (their curves and sources: hw show a100-80gb)");
  EXPECT_EQ(run_json(q + " --hw l40s")["decode_step"]["sources"]["kernel_fixed"],
            "l40s's kernel boundary, no kernel curve (hw show l40s)");
  // TensorRT-LLM's exposed host time cites its issue; flags that set a figure are named.
  EXPECT_NE(run_json(q + " --hw h100-sxm --engine trtllm")["decode_step"]["sources"]["host"].get<std::string>().find("#13957"),
            std::string::npos);
  const nlohmann::json f = run_json(q + " --hw h100-sxm --front-end 10ms --step-overhead 1ms");
  EXPECT_EQ(f["request"]["sources"]["front_end"], "--front-end");
  EXPECT_EQ(f["decode_step"]["sources"]["host"], "--step-overhead");
  const RunResult text = run(q + " --hw h100-sxm");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("  fixed times: h100-sxm's kernel classes"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  front end: vLLM's server against its LLM class"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("host 400 us + 1.1 us/request per step"), std::string::npos) << text.out;
  // SGLang 0.3's loop is its own line's measured time, between steps and nothing per request: the
  // engine line shows one time a step, and the step's host source is the study's.
  const RunResult sg = run(q + " --hw a100-80gb --engine sglang@0.3");
  ASSERT_EQ(sg.status, 0) << sg.err;
  EXPECT_NE(sg.out.find("        host 2.915 ms per step, between device steps\n"), std::string::npos) << sg.out;
  EXPECT_NE(sg.out.find("host: SGLang 0.2.13's loop on A100s"), std::string::npos) << sg.out;
}

// vLLM 0.6 (V0): `--engine vllm@0.6` runs its own preset, and `--num-scheduler-steps` its
// multi-step scheduling; a release no preset covers (0.7, before 0.6) and multi-step on another
// engine or with chunked prefill exit 2 with one line naming the flag and value.
TEST(ServeCli, VllmV0PresetAndMultiStep) {
  const nlohmann::json j = run_json(kSmall + " --qps 2 --requests 20 --engine vllm@0.6 --num-scheduler-steps 10 --json");
  EXPECT_EQ(j["engine"]["name"], "vllm@0.6");
  EXPECT_EQ(j["engine"]["num_scheduler_steps"], 10);
  EXPECT_EQ(j["engine"]["max_num_seqs"], 256);
  EXPECT_EQ(j["engine"]["prefills_apart"], true);
  EXPECT_EQ(j["error_band"]["class"], "vllm@0.6, 16-bit, dense");
  // Prefills and decodes never share a step.
  EXPECT_EQ(j["steps"]["mixed"], 0) << j["steps"];
  for (const auto& [args, mention] : std::vector<std::pair<std::string, std::string>>{
           {kSmall + " --qps 2 --engine vllm@0.7", "--engine vllm@0.7"},
           {kSmall + " --qps 2 --engine vllm@0.5.4", "--engine vllm@0.5.4"},
           {kSmall + " --qps 2 --num-scheduler-steps 10", "--num-scheduler-steps"},
           {kSmall + " --qps 2 --engine vllm@0.6 --num-scheduler-steps 0", "--num-scheduler-steps"},
           {kSmall + " --qps 2 --engine vllm@0.6 --num-scheduler-steps 10 --chunked-prefill on", "--num-scheduler-steps"},
           {kSmall + " --qps 2 --engine vllm@0.6 --num-scheduler-steps 10 --draft llama-3.2-1b --spec-tokens 3 --accept 0.7", "--num-scheduler-steps"}}) {
    expect_bad(args, mention);
  }
}

}  // namespace
}  // namespace ridgeline::testing
