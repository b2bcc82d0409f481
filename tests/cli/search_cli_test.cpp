// `ridgeline search`: the JSON contract, each plan equal to `train`/`infer` with its
// settings, the Pareto chart, and bad input.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "cli/cli_harness.hpp"

namespace ridgeline::testing {
namespace {


std::string flags_of(const nlohmann::json& p) {
  std::string s = " --tp " + std::to_string(p["tp"].get<int>()) + " --pp " + std::to_string(p["pp"].get<int>()) + " --cp " +
                  std::to_string(p["cp"].get<int>()) + " --cp-algo " + p["cp_algo"].get<std::string>() + " --ep " +
                  std::to_string(p["ep"].get<int>()) + " --vpp " + std::to_string(p["vpp"].get<int>()) + " --micro-batch " +
                  std::to_string(p["micro_batch"].get<int>()) + " --zero " + std::to_string(p["zero"].get<int>()) +
                  " --recompute " + p["recompute"].get<std::string>();
  if (p["sequence_parallel"].get<bool>()) s += " --sequence-parallel";
  return s;
}

TEST(SearchCli, TrainJsonPlansAreWhatTrainGives) {
  const std::string common = " --model llama-3.1-8b --hw h100-sxm --gpus 16 --seq 4096 --global-batch 32";
  auto j = run_json("search train" + common + " --top 3");
  for (const char* k : {"evaluated", "feasible", "timed", "rejected", "elapsed_s", "plans_per_s", "best", "pareto", "interrupted"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  ASSERT_EQ(j["best"].size(), 3u);
  EXPECT_GT(j["evaluated"].get<double>(), j["feasible"].get<double>());
  std::uint64_t sum = j["feasible"].get<std::uint64_t>();
  for (auto& [k, v] : j["rejected"].items()) sum += v.get<std::uint64_t>();
  EXPECT_EQ(sum, j["evaluated"].get<std::uint64_t>());
  // The best plan and one from the middle of the front, replayed through `train`: every
  // number identical (JSON doubles round-trip exactly).
  const auto& front = j["pareto"];
  ASSERT_FALSE(front.empty());
  const nlohmann::json picks = {j["best"][0], front[front.size() / 2]};
  for (const auto& plan : picks) {
    const nlohmann::json* p = &plan;
    auto t = run_json("train" + common + flags_of(*p));
    for (const char* k : {"step_time_s", "step_time_lower_s", "step_time_upper_s", "tokens_per_s", "mfu", "hfu", "exposed_comm_s", "bubble_s"}) {
      EXPECT_EQ((*p)[k].get<double>(), t[k].get<double>()) << k << flags_of(*p);
    }
    EXPECT_EQ((*p)["memory_per_gpu"]["total_bytes"].get<double>(), t["memory_per_gpu"]["total_bytes"].get<double>());
    EXPECT_EQ((*p)["dp"], t["dp"]);
  }
  // Best first; the front by memory ascending with tokens/s rising.
  EXPECT_LE(j["best"][0]["step_time_s"].get<double>(), j["best"][1]["step_time_s"].get<double>());
  for (size_t i = 1; i < front.size(); ++i) {
    EXPECT_LT(front[i - 1]["memory_per_gpu"]["total_bytes"].get<double>(), front[i]["memory_per_gpu"]["total_bytes"].get<double>());
    EXPECT_LT(front[i - 1]["tokens_per_s"].get<double>(), front[i]["tokens_per_s"].get<double>());
  }
}

TEST(SearchCli, InferJsonAndParetoChart) {
  const std::string svg = std::string(RIDGELINE_TMP_DIR) + "/search_infer_pareto.svg";
  std::remove(svg.c_str());
  // Static batches: each plan is `infer`'s (continuous batching, the default, is SteadyState's).
  auto j = run_json("search infer --engine static --model llama-3.1-8b --hw h100-sxm --chips-max 2 --prompt 256 --gen 32 --batch-max 16 "
                    "--top 2 --plot " + svg);
  ASSERT_EQ(j["best"].size(), 2u);
  const auto& b = j["best"][0];
  for (const char* k : {"chips", "tp", "ep", "batch", "weight_dtype", "kv_dtype", "ttft_s", "tpot_s", "output_tokens_per_s_per_chip"}) {
    EXPECT_TRUE(b.contains(k)) << k;
  }
  auto i = run_json("infer --model llama-3.1-8b --hw h100-sxm --prompt 256 --gen 32 --tp " + std::to_string(b["tp"].get<int>()) +
                    " --batch " + std::to_string(b["batch"].get<int>()) + " --weight-dtype " + b["weight_dtype"].get<std::string>() +
                    " --kv-dtype " + b["kv_dtype"].get<std::string>());
  EXPECT_EQ(b["tpot_s"].get<double>(), i["tpot_s"].get<double>());
  EXPECT_EQ(b["ttft_s"].get<double>(), i["ttft_s"].get<double>());
  const std::string text = slurp(svg);
  ASSERT_FALSE(text.empty());
  // One circle per front plan and one per best plan.
  size_t circles = 0;
  for (size_t p = text.find("class=\"point\""); p != std::string::npos; p = text.find("class=\"point\"", p + 1)) ++circles;
  EXPECT_EQ(circles, j["pareto"].size() + j["best"].size());
}

TEST(SearchCli, InferContinuousBatchingIsTheDefault) {
  // vLLM serving B users continuously: the JSON names the engine and carries the plan's own
  // steady-state numbers; static batches of 64 users prefill all 64 prompts before any first
  // token, continuous batching one prompt among decodes, so its TTFT at batch 64 is smaller.
  auto c = run_json("search infer --model llama-3.1-8b --hw h100-sxm --chips-max 1 --prompt 1024 --gen 128 --batch-max 64 --top 1 "
                    "--weight-dtypes bf16 --kv-dtypes bf16 --json");
  auto st = run_json("search infer --engine static --model llama-3.1-8b --hw h100-sxm --chips-max 1 --prompt 1024 --gen 128 "
                     "--batch-max 64 --top 1 --weight-dtypes bf16 --kv-dtypes bf16 --json");
  EXPECT_EQ(c["engine"], "vllm");
  EXPECT_EQ(st["engine"], "static");
  ASSERT_EQ(c["best"].size(), 1u);
  ASSERT_EQ(st["best"].size(), 1u);
  EXPECT_EQ(c["best"][0]["batch"], 64);
  EXPECT_EQ(st["best"][0]["batch"], 64);
  EXPECT_LT(c["best"][0]["ttft_s"].get<double>(), st["best"][0]["ttft_s"].get<double>() / 4);
  // SGLang's prefill-first steps: a prompt prefills in a step of prompts alone, not in a step
  // of 63 decodes as well, so at the same batch its TTFT is below vLLM's (the simulator
  // agrees: 34.6 against 39.5 ms at these lengths, uniform around them).
  auto sg = run_json("search infer --engine sglang --model llama-3.1-8b --hw h100-sxm --chips-max 1 --prompt 1024 --gen 128 "
                     "--batch-max 64 --top 1 --weight-dtypes bf16 --kv-dtypes bf16 --json");
  EXPECT_EQ(sg["engine"], "sglang");
  ASSERT_EQ(sg["best"].size(), 1u);
  EXPECT_EQ(sg["best"][0]["batch"], 64);
  EXPECT_LT(sg["best"][0]["ttft_s"].get<double>(), c["best"][0]["ttft_s"].get<double>());
  expect_bad("search infer --model llama-3.1-8b --engine tgi", "--engine");
}

TEST(SearchCli, PromptsOverTheBudgetOfAnEngineThatDoesNotChunk) {
  // TensorRT-LLM's preset runs whole prompts (chunked prefill off) within 8192 tokens a step:
  // 12000-token prompts never run, as `serve` finds request by request. Each of the four
  // groups (1 chip, tp 1; weights bf16 and fp8 x KV bf16 and fp8) is one rejected plan,
  // too_long. vLLM chunks them and serves them.
  const std::string space = " --model llama-3.1-8b --hw h100-sxm --chips-max 1 --prompt 12000 --gen 100 --json";
  auto t = run_json("search infer --engine trtllm" + space);
  EXPECT_EQ(t["feasible"], 0);
  EXPECT_EQ(t["evaluated"], 4);
  EXPECT_EQ(t["rejected"]["too_long"], 4);
  EXPECT_TRUE(t["best"].empty());
  // serve rejects every one of them: nothing is served, which is an error (issue 42), naming why.
  expect_bad("serve --engine trtllm --model llama-3.1-8b --hw h100-sxm --qps 1 --requests 20 --prompt 12000 --gen 100",
             "no request can be served: all 20 were rejected (20 with a prompt beyond the step budget of 8192 tokens");
  auto v = run_json("search infer --engine vllm" + space);
  EXPECT_GT(v["feasible"].get<int>(), 0);
  EXPECT_FALSE(v["rejected"].contains("too_long"));
  // Within the budget the preset runs them: 8192-token prompts.
  auto within = run_json("search infer --engine trtllm --model llama-3.1-8b --hw h100-sxm --chips-max 1 --prompt 8192 --gen 100 --json");
  EXPECT_GT(within["feasible"].get<int>(), 0);
}

TEST(SearchCli, TextAndNoFeasiblePlan) {
  RunResult r = run("search train --model llama-3.1-405b --hw a100-40gb --gpus 8 --global-batch 8");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("no feasible plan"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memory"), std::string::npos) << r.out;
  r = run("search train --model llama-3.1-8b --hw h100-sxm --gpus 8 --global-batch 16");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Pareto front"), std::string::npos) << r.out;
}

TEST(SearchCli, BadInput) {
  expect_bad("search train --model llama-3.1-8b --gpus 0 --global-batch 8", "--gpus");
  expect_bad("search train --model llama-3.1-8b --gpus 4294967296 --global-batch 8", "--gpus");
  expect_bad("search train --model llama-3.1-8b --gpus 8 --global-batch 0", "--global-batch");
  expect_bad("search train --model llama-3.1-8b --gpus 8 --global-batch 8 --objective speed", "--objective");
  expect_bad("search train --model llama-3.1-8b --gpus 8 --global-batch 8 --memory-headroom 1.5", "--memory-headroom");
  expect_bad("search train --model llama-3.1-8b --gpus 8 --global-batch 8 --recompute some", "--recompute");
  expect_bad("search train --model llama-3.1-8b --gpus 8 --global-batch 8 --ep 2", "--ep");
  expect_bad("search infer --model llama-3.1-8b --chips-max 0", "--chips-max");
  expect_bad("search infer --model llama-3.1-8b --weight-dtypes bf16,,fp8", "--weight-dtypes");
  expect_bad("search infer --model llama-3.1-8b --kv-dtypes bf17", "--kv-dtypes");
  expect_bad("search infer --model llama-3.1-8b --tpot-max -1ms", "--tpot-max");
}

}  // namespace
}  // namespace ridgeline::testing

namespace ridgeline::testing {
namespace {

const std::string kServe = "search serve --model llama-3.1-8b --qps 20 --requests 400 --slo ttft_p99=1s,tpot_p99=50ms";

TEST(SearchServeCli, SamplingAtATemperatureIsInTheBestsCommand) {
  // The clients' sampling is the workload's: every deployment is priced with it, and the best
  // one's command carries it, so `serve` on that command gives the same numbers.
  auto j = run_json(kServe + " --hw h100-sxm --tp 1 --sampling random");
  ASSERT_TRUE(j["best"].is_object());
  const std::string command = j["best"]["command"];
  ASSERT_EQ(command.rfind("ridgeline serve ", 0), 0u) << command;
  EXPECT_NE(command.find(" --sampling random"), std::string::npos) << command;
  auto s = run_json(command.substr(10));
  EXPECT_EQ(s["workload"]["sampling"], "random");
  for (const char* k : {"ttft_s", "tpot_s", "e2e_s"}) EXPECT_EQ(s[k], j["best"][k]) << k;
  EXPECT_EQ(run_json(kServe + " --hw h100-sxm --tp 1")["best"]["command"].get<std::string>().find("--sampling"), std::string::npos);
}

TEST(SearchServeCli, TheEngineColumnIsAsWideAsItsLongestPreset) {
  // "trtllm@0.15" is 11 characters: its column widens to 12 (a space before it), so the ep
  // column's 1 and the name do not run together as "1trtllm@0.15"; with the family names alone
  // it stays 8 wide.
  const RunResult r = run(kServe + " --hw h100-sxm --tp 1 --max-num-seqs 256 --weight-dtype bf16 --kv-dtype bf16 --engine trtllm@0.15,vllm --top 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("  ep      engine  "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    1 trtllm@0.15  "), std::string::npos) << r.out;
  const RunResult plain = run(kServe + " --hw h100-sxm --tp 1 --max-num-seqs 256 --weight-dtype bf16 --kv-dtype bf16 --engine vllm --top 1");
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_NE(plain.out.find("  ep  engine  "), std::string::npos) << plain.out;
}

TEST(SearchServeCli, BestIsWhatServeGivesWithItsCommand) {
  // Each deployment carries the `serve` command that runs it: the best one, run by `serve`,
  // gives the same numbers to the last bit (the same requests from the same seed).
  auto j = run_json(kServe + " --hw h100-sxm,a100-80gb --tp 1,2 --price h100-sxm=3.78/h --price 'a100-80gb=$1800/month'");
  for (const char* k : {"best", "pareto", "feasible", "evaluated", "rejected", "elapsed_s", "simulations", "ranked_by", "closest"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_EQ(j["ranked_by"], "usd_per_hour");
  const auto& b = j["best"];
  ASSERT_TRUE(b.is_object());
  for (const char* k : {"hw", "tp", "ep", "replicas", "disagg", "engine", "weight_dtype", "kv_dtype", "gpus", "usd_per_hour", "ttft_s",
                        "tpot_s", "output_tokens_per_s_per_gpu", "output_tokens_per_s_per_user", "max_qps", "command"}) {
    EXPECT_TRUE(b.contains(k)) << k;
  }
  EXPECT_TRUE(b["disagg"].is_null());
  // $1800 a month is 1800 / 730 $/h, $3.78/h the H100's; a fleet costs its GPUs' hours.
  const double price = b["hw"] == "h100-sxm" ? 3.78 : 1800.0 / 730;
  EXPECT_NEAR(b["usd_per_hour"].get<double>(), price * b["gpus"].get<double>(), 1e-12);
  std::string command = b["command"];
  ASSERT_EQ(command.rfind("ridgeline serve ", 0), 0u) << command;
  auto s = run_json(command.substr(10));
  for (const char* k : {"ttft_s", "tpot_s", "e2e_s"}) EXPECT_EQ(s[k], b[k]) << k;
  EXPECT_EQ(s["output_tokens_per_s"], b["output_tokens_per_s"]);
  EXPECT_EQ(s["gpus"], b["gpus"]);
  EXPECT_EQ(s["slo_attainment"], b["slo_attainment"]);
  // One USD/h prices every chip of the search, as `train --price` does (the help offered it and
  // the search refused it): $2/h a GPU whichever chip is best.
  auto one = run_json(kServe + " --hw h100-sxm,a100-80gb --tp 1 --price 2/h");
  EXPECT_EQ(one["ranked_by"], "usd_per_hour");
  EXPECT_NEAR(one["best"]["usd_per_hour"].get<double>(), 2 * one["best"]["gpus"].get<double>(), 1e-12);
  // Its engine's host components are the ones its command runs, each with its source.
  ASSERT_TRUE(j["best_engine"].is_object());
  EXPECT_FALSE(j["best_engine"]["host_source"].get<std::string>().empty());
  EXPECT_FALSE(j["best_engine"]["front_end_source"].get<std::string>().empty());
  EXPECT_EQ(j["best_engine"]["name"], b["engine"]);
  for (const char* k : {"step_overhead_s", "per_request_overhead_s", "host_source", "front_end_s", "front_end_source", "eager_host_s",
                        "eager_host_source", "compiled_host_s", "compiled_host_source", "overlap_scheduling", "exposed_step_s",
                        "async_step_s", "async_per_request_s", "mla_op_host_s", "mla_op_call_host_s", "mla_op_host_source", "mla_pad_v",
                        "num_scheduler_steps"}) {
    ASSERT_TRUE(j["best_engine"].contains(k) && s["engine"].contains(k)) << k;
    EXPECT_EQ(s["engine"][k], j["best_engine"][k]) << k;
  }
  // The Pareto front: each point faster per user than the one before and slower per GPU.
  const auto& p = j["pareto"];
  ASSERT_GE(p.size(), 1u);
  for (std::size_t i = 1; i < p.size(); ++i) {
    EXPECT_GT(p[i]["output_tokens_per_s_per_user"].get<double>(), p[i - 1]["output_tokens_per_s_per_user"].get<double>());
    EXPECT_LT(p[i]["output_tokens_per_s_per_gpu"].get<double>(), p[i - 1]["output_tokens_per_s_per_gpu"].get<double>());
  }
}

TEST(SearchServeCli, TheBestsEngineHostIsItsModels) {
  // SGLang 0.4+ on an MLA model: its host launches an eager kernel in 82.6 ms / 1468 = 56.3 us
  // (DeepSeek-V3's eager forward, sgl-project/sglang PR #12160, over ridgeline's 1468 kernels of
  // its step at TP 8; ServeCli.SglangLaunchesAnMlaModelsKernelsAtItsOwnHostTime). The best
  // deployment's engine says so under its command, in text and JSON, with the source.
  const std::string q = "search serve --model deepseek-v3 --hw h200 --tp 8 --engine sglang --prompt 64 --gen 8 --qps 1 --requests 20 "
                        "--slo ttft_p99=5s --max-rate off --max-num-seqs 64 --top 1";
  const auto j = run_json(q);
  ASSERT_TRUE(j["best_engine"].is_object());
  EXPECT_DOUBLE_EQ(j["best_engine"]["eager_host_s"].get<double>(), 56.3e-6);
  EXPECT_NE(j["best_engine"]["eager_host_source"].get<std::string>().find("#12160"), std::string::npos);
  const RunResult r = run(q);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("  its engine, sglang (0.4+), on the host as serve prices it:\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    eager kernels 56.3 us each on the host"), std::string::npos) << r.out;
  // No deployment, no engine.
  EXPECT_TRUE(run_json(q + " --max-gpus 4")["best_engine"].is_null());
}

TEST(SearchServeCli, DeepEpDeploymentsAreWhatServeGivesWithItsCommand) {
  // --moe-a2a deepep prices every deployment's expert all-to-alls as DeepEP's kernels
  // (docs/serving.md#deepep): the best one's command carries the flag, and `serve` gives its
  // numbers; the engines' gathered tokens move more bytes, so the same deployment differs; a
  // space's --moe-a2a given is carried by the command (gather, the engines' own, is not).
  const std::string q = "search serve --model mixtral-8x7b --hw h100-sxm --tp 1 --ep 2 --weight-dtype fp8 --kv-dtype fp8 --qps 2 "
                        "--requests 100 --prompt 512 --gen 64 --slo ttft_p99=5s";
  auto j = run_json(q + " --moe-a2a deepep");
  const auto& b = j["best"];
  ASSERT_TRUE(b.is_object());
  EXPECT_EQ(b["ep"], 2);
  std::string command = b["command"];
  EXPECT_NE(command.find(" --moe-a2a deepep"), std::string::npos) << command;
  auto s = run_json(command.substr(10));
  EXPECT_EQ(s["engine"]["moe_a2a"], "deepep");
  for (const char* k : {"ttft_s", "tpot_s", "e2e_s"}) EXPECT_EQ(s[k], b[k]) << k;
  auto gathered = run_json(q);
  EXPECT_EQ(gathered["best"]["command"].get<std::string>().find("--moe-a2a"), std::string::npos);
  EXPECT_NE(gathered["best"]["tpot_s"], b["tpot_s"]);
  EXPECT_NE(run_json(q + " --moe-a2a pairs")["best"]["command"].get<std::string>().find(" --moe-a2a pairs"), std::string::npos);
  expect_bad(q + " --moe-a2a nccl", "--moe-a2a: 'nccl'");
}

TEST(SearchServeCli, SeedsSizeTheFleetOnTheWorstSeedAndServeShowsIt) {
  // Three seeds: a fleet meets the targets only when its worst seed does, so it has at least
  // the replicas one seed needs; its command carries --seeds 3 and `serve` shows the same run
  // (the worst of the same three seeds).
  const std::string space = kServe + " --hw h100-sxm --tp 1 --engine vllm --max-num-seqs 256 --max-rate off";
  const auto one = run_json(space);
  const auto three = run_json(space + " --seeds 3");
  EXPECT_EQ(three["seeds"]["count"], 3);
  EXPECT_EQ(three["seeds"]["quantile"], 1);
  ASSERT_TRUE(one["best"].is_object() && three["best"].is_object());
  EXPECT_GE(three["best"]["replicas"].get<int>(), one["best"]["replicas"].get<int>());
  const std::string command = three["best"]["command"];
  EXPECT_NE(command.find(" --seeds 3"), std::string::npos) << command;
  const auto s = run_json(command.substr(10));
  for (const char* k : {"ttft_s", "tpot_s", "e2e_s"}) EXPECT_EQ(s[k], three["best"][k]) << k;
  EXPECT_EQ(s["seeds"]["count"], 3);
}

TEST(SearchServeCli, DecodeInstancesOfTheirOwnTpAreWhatServeGives) {
  // Prefill at TP 1, decode at TP 2: the deployment's GPUs are P·1 + D·2, its command
  // carries --disagg-decode tp=2, and `serve` runs it to the same numbers.
  auto j = run_json(kServe + " --hw h100-sxm --tp 1 --decode-tp 2 --disagg on --max-rate off");
  const auto& b = j["best"];
  ASSERT_TRUE(b.is_object()) << j.dump();
  const auto& d = b["disagg"];
  ASSERT_TRUE(d.is_object());
  EXPECT_EQ(d["prefill_tp"], 1);
  EXPECT_EQ(d["decode_tp"], 2);
  EXPECT_EQ(b["gpus"].get<double>(), d["prefill"].get<double>() + 2 * d["decode"].get<double>());
  std::string command = b["command"];
  EXPECT_NE(command.find("--disagg-decode tp=2"), std::string::npos) << command;
  auto s = run_json(command.substr(10));
  for (const char* k : {"ttft_s", "tpot_s", "e2e_s", "gpus", "output_tokens_per_s"}) EXPECT_EQ(s[k], b[k]) << k;
  EXPECT_EQ(s["disagg"]["decode_tp"], 2);
  EXPECT_EQ(s["disagg"]["prefill_tp"], 1);
  expect_bad(kServe + " --hw h100-sxm --decode-tp 2", "--decode-tp");
  expect_bad(kServe + " --hw h100-sxm --draft mtp --spec-tokens 0 --accept 0.8", "--spec-tokens");
  expect_bad(kServe + " --hw h100-sxm --draft mtp --spec-tokens 1,5 --accept 0.8,0.7", "--spec-tokens");
  expect_bad(kServe + " --hw h100-sxm --draft mtp --spec-tokens 1,99 --accept 0.8", "--spec-tokens");
  expect_bad(kServe + " --hw h100-sxm --disagg on --decode-tp 0", "--decode-tp");
}

TEST(SearchServeCli, ChunkedPrefillOnOffOrBoth) {
  // 12000-token prompts over a budget of 8192: only chunked deployments serve them. The best
  // carries --chunked-prefill on, and `serve` of its command gives the same numbers.
  auto j = run_json("search serve --model llama-3.1-8b --hw h100-sxm --tp 1 --engine trtllm --prompt 12000 --gen 100 --qps 2 "
                    "--requests 100 --max-num-seqs 64 --max-rate off --chunked-prefill both --weight-dtype bf16 --kv-dtype bf16");
  ASSERT_EQ(j["evaluated"], 2) << j.dump();
  const auto& b = j["best"];
  ASSERT_TRUE(b.is_object()) << j.dump();
  EXPECT_EQ(b["chunked_prefill"], true);
  std::string command = b["command"];
  EXPECT_NE(command.find("--chunked-prefill on"), std::string::npos) << command;
  auto s = run_json(command.substr(10));
  for (const char* k : {"ttft_s", "tpot_s", "output_tokens_per_s"}) EXPECT_EQ(s[k], b[k]) << k;
  expect_bad("search serve --model llama-3.1-8b --hw h100-sxm --qps 1 --chunked-prefill maybe", "--chunked-prefill: 'maybe'");
  expect_bad("search serve --model llama-3.1-8b --hw h100-sxm --qps 1 --disagg maybe", "--disagg: 'maybe' is not on, off or both");
  expect_bad("search serve --model llama-3.1-8b --hw h100-sxm --qps 1 --experts ep", "--experts: ep: llama-3.1-8b is not a mixture of experts");
  expect_bad("search serve --model mixtral-8x7b --hw h100-sxm --qps 1 --experts tp,dp", "--experts: 'dp'");
}

TEST(SearchServeCli, ACommandRunsTheGraphsTheSearchPriced) {
  // The search prices vLLM at the preset's largest graph, 512 tokens, and its launch files say
  // so. `serve --max-num-seqs 64` alone would size it as vLLM does, 2 x 64 = 128, and run the
  // 300-token prompts' steps without graphs: the command pins 512, and `serve` of it gives the
  // search's numbers. At 256 sequences vLLM's own size is 512: nothing to pin.
  const std::string q = "search serve --model llama-3.1-8b --hw h100-sxm --tp 1 --engine vllm --prompt 300 --gen 50 --qps 4 --requests 100 "
                        "--max-rate off --weight-dtype bf16 --kv-dtype bf16 --max-num-seqs ";
  const auto j = run_json(q + "64");
  const auto& b = j["best"];
  ASSERT_TRUE(b.is_object()) << j.dump();
  const std::string command = b["command"];
  EXPECT_NE(command.find("--max-num-seqs 64 --max-batched-tokens 8192 --graph-max-batch 512"), std::string::npos) << command;
  const auto s = run_json(command.substr(10));
  for (const char* k : {"ttft_s", "tpot_s", "output_tokens_per_s"}) EXPECT_EQ(s[k], b[k]) << k;
  const std::string plain = run_json(q + "256")["best"]["command"];
  EXPECT_EQ(plain.find("--graph-max-batch"), std::string::npos) << plain;
  // vLLM 0.6 has no flag to size its graphs: the search prices the ones its limit captures (64
  // sequences: to 64, 0.6.0's _get_max_graph_batch_size) and the command pins nothing; `serve`
  // of it captures the same and gives the search's numbers.
  const std::string v0q = "search serve --model llama-3.1-8b --hw h100-sxm --tp 1 --engine vllm@0.6 --prompt 300 --gen 50 --qps 4 "
                          "--requests 100 --max-rate off --weight-dtype bf16 --kv-dtype bf16 --max-num-seqs 64";
  const auto v0_search = run_json(v0q);
  const auto& v0 = v0_search["best"];
  ASSERT_TRUE(v0.is_object()) << v0_search.dump();
  const std::string v0_command = v0["command"];
  EXPECT_EQ(v0_command.find("--graph-max-batch"), std::string::npos) << v0_command;
  const auto v0_serve = run_json(v0_command.substr(10));
  EXPECT_EQ(v0_serve["engine"]["graph_max_batch"], 64);
  for (const char* k : {"ttft_s", "tpot_s", "output_tokens_per_s"}) EXPECT_EQ(v0_serve[k], v0[k]) << k;
}

TEST(SearchServeCli, ADeploymentVllmWouldNotStartIsRejectedNotTheSearch) {
  // 8 draft tokens: vLLM rounds its graph sizes to multiples of 9, and a budget of 8 tokens leaves
  // it sizes of 1-8 only, none of which rounds within 8: that engine would not start. Its
  // deployments are rejected (as layouts), the 8192-token ones searched.
  const auto j = run_json("search serve --model llama-3.1-8b --hw h100-sxm --tp 1 --engine vllm --max-batched-tokens 8,8192 --draft mtp "
                          "--spec-tokens 8 --accept 0.5 --max-num-seqs 8 --qps 2 --requests 100 --max-rate off --slo tpot_p99=100ms");
  ASSERT_TRUE(j["best"].is_object()) << j.dump();
  EXPECT_EQ(j["best"]["max_batched_tokens"], 8192);
  EXPECT_GT(j["rejected"]["layout"].get<int>(), 0);
}

TEST(SearchServeCli, SglangDeploymentsWithDraftsRunAndShowItsLimitOf48) {
  // SGLang with drafts and no running-request limit given runs 48 (speculative_hook.py): the
  // deployment shows 48, in its label and JSON, and its command (no --max-num-seqs) reproduces
  // the search's numbers with serve, whose engine has the same 48.
  const std::string q = "search serve --model llama-3.1-8b --hw h100-sxm --tp 1 --engine sglang --draft mtp --spec-tokens 2 "
                        "--accept 0.7 --qps 2 --requests 100 --max-rate off --slo tpot_p99=50ms";
  const auto j = run_json(q);
  ASSERT_TRUE(j["best"].is_object()) << j.dump();
  const auto& best = j["best"];
  EXPECT_EQ(best["max_num_seqs"], 48);
  const std::string command = best["command"];
  EXPECT_EQ(command.find("--max-num-seqs"), std::string::npos) << command;
  const auto s = run_json(command.substr(10));
  EXPECT_EQ(s["engine"]["max_num_seqs"], 48);
  EXPECT_EQ(s["tpot_s"], best["tpot_s"]);
  const RunResult text = run(q);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("sglang 48 seqs"), std::string::npos) << text.out;
}

TEST(SearchServeCli, EachDraftWithItsOwnRates) {
  // Two drafts, each with the --accept after it: Llama-3.1-8B at 0.8,0.7 and an MTP layer at
  // 0.6, 2 draft tokens a step, and plain decoding: 3 deployments at TP 4. Each carries its
  // draft; `serve` of each command runs that draft at its rates, to the same numbers.
  // Tokens per step: 0.8,0.7 as vLLM reports them (the shares of drafts accepted up to each
  // position), 1 + 0.8 + 0.7 = 2.5; 0.6 as α at each position, 1 + 0.6 + 0.6·0.6 = 1.96.
  auto j = run_json("search serve --model llama-3.1-70b --hw h100-sxm --tp 4 --max-num-seqs 256 --qps 4 --requests 200 --max-rate off "
                    "--draft llama-3.1-8b --accept 0.8,0.7 --draft mtp --accept 0.6 --spec-tokens 0,2 --weight-dtype bf16 --kv-dtype bf16");
  ASSERT_EQ(j["evaluated"], 3) << j.dump();
  const auto& f = j["feasible"];
  ASSERT_EQ(f.size(), 3u);
  int seen = 0;
  for (const auto& d : f) {
    std::string command = d["command"];
    auto s = run_json(command.substr(10));
    EXPECT_EQ(s["tpot_s"], d["tpot_s"]) << command;
    EXPECT_EQ(s["output_tokens_per_s"], d["output_tokens_per_s"]) << command;
    if (d["spec_tokens"] == 0) {
      EXPECT_TRUE(d["draft"].is_null());
      EXPECT_FALSE(s.contains("speculation") && s["speculation"].is_object()) << command;
      seen += 1;
      continue;
    }
    EXPECT_EQ(s["speculation"]["k"], 2);
    if (d["draft"] == "llama-3.1-8b") {
      EXPECT_NE(command.find("--draft llama-3.1-8b --spec-tokens 2 --accept 0.8,0.7"), std::string::npos) << command;
      EXPECT_NEAR(s["speculation"]["tokens_per_step"].get<double>(), 2.5, 1e-12);
      EXPECT_EQ(s["speculation"]["accept_form"], "vllm");
      seen += 10;
    } else {
      EXPECT_EQ(d["draft"], "mtp");
      EXPECT_NE(command.find("--draft mtp --spec-tokens 2 --accept 0.6"), std::string::npos) << command;
      EXPECT_NEAR(s["speculation"]["tokens_per_step"].get<double>(), 1.96, 1e-12);
      seen += 100;
    }
  }
  EXPECT_EQ(seen, 111);
  const std::string one = "search serve --model llama-3.1-70b --hw h100-sxm --tp 4 --qps 4 --requests 20";
  expect_bad(one + " --draft llama-3.1-8b --draft mtp --accept 0.6 --spec-tokens 1", "--draft: 'llama-3.1-8b' has no --accept before the next --draft");
  expect_bad(one + " --draft mtp --accept 0.6 --draft llama-3.1-8b --spec-tokens 1", "--accept: 2 --draft and 1 --accept");
  expect_bad(one + " --accept 0.6 --draft mtp --spec-tokens 1", "--accept: each --accept follows its own --draft");
  expect_bad(one + " --draft mtp --accept 0.6 --draft mtp --accept 0.6 --spec-tokens 1", "--draft: 'mtp' with --accept 0.6 is given twice");
  expect_bad(one + " --draft nosuch --accept 0.6 --spec-tokens 1", "--draft: unknown model 'nosuch'");
  expect_bad(one + " --accept 0.6", "--accept");
  expect_bad(one + " --draft mtp --accept 0.6 --draft llama-3.1-8b --accept 0.8,0.7 --spec-tokens 3", "--draft llama-3.1-8b");
  expect_bad(one + " --draft mtp --accept 0.6 --draft llama-3.1-8b --accept 1.5 --spec-tokens 1", "--accept");
}

TEST(SearchServeCli, DecodeInstancesOfTheirOwnEpAreWhatServeGives) {
  // Mixtral's experts: prefill instances at TP 2 EP 1, decode instances at TP 1 EP 2. Each
  // instance holds 2 GPUs, so the fleet's GPUs are 2(P + D); the command carries
  // --disagg-decode tp=1,ep=2 and `serve` runs it to the same numbers.
  const std::string moe = "search serve --model mixtral-8x7b --qps 20 --requests 400 --slo ttft_p99=1s,tpot_p99=50ms --hw h100-sxm";
  auto j = run_json(moe + " --tp 2 --ep 1 --decode-tp 1 --decode-ep 2 --disagg on --max-rate off");
  const auto& b = j["best"];
  ASSERT_TRUE(b.is_object()) << j.dump();
  const auto& d = b["disagg"];
  ASSERT_TRUE(d.is_object());
  EXPECT_EQ(d["prefill_tp"], 2);
  EXPECT_EQ(d["prefill_ep"], 1);
  EXPECT_EQ(d["decode_tp"], 1);
  EXPECT_EQ(d["decode_ep"], 2);
  EXPECT_EQ(b["gpus"].get<double>(), 2 * (d["prefill"].get<double>() + d["decode"].get<double>()));
  std::string command = b["command"];
  EXPECT_NE(command.find("--disagg-decode tp=1,ep=2"), std::string::npos) << command;
  auto s = run_json(command.substr(10));
  for (const char* k : {"ttft_s", "tpot_s", "e2e_s", "gpus", "output_tokens_per_s"}) EXPECT_EQ(s[k], b[k]) << k;
  EXPECT_EQ(s["disagg"]["decode_ep"], 2);
  EXPECT_EQ(s["disagg"]["prefill_ep"], 1);
  // Every decode EP with each prefill EP: --decode-ep same keeps the prefill instances' own.
  auto same = run_json(moe + " --tp 2 --ep 1,2 --decode-tp 1 --decode-ep same --disagg on --max-rate off --top 100");
  for (const auto& x : same["feasible"]) EXPECT_EQ(x["disagg"]["decode_ep"], x["disagg"]["prefill_ep"]) << x.dump();
  expect_bad(moe + " --decode-ep 2", "--decode-ep");
  expect_bad(moe + " --disagg on --decode-ep 0", "--decode-ep");
}

TEST(SearchServeCli, PriceFromAChipFile) {
  // A chip file with price_per_hour ranks by cost without --price; the command names the file.
  const std::string file = std::string(RIDGELINE_TMP_DIR) + "/priced_h100.yaml";
  std::ofstream(file) << slurp(std::string(RIDGELINE_SOURCE_DIR) + "/data/hardware/nvidia/h100-sxm.yaml") << "price_per_hour: 2.69/h\n";
  auto j = run_json(kServe + " --hw " + file + " --tp 1");
  EXPECT_EQ(j["ranked_by"], "usd_per_hour");
  ASSERT_TRUE(j["best"].is_object());
  EXPECT_NEAR(j["best"]["usd_per_hour"].get<double>(), 2.69 * j["best"]["gpus"].get<double>(), 1e-12);
  EXPECT_NE(j["best"]["command"].get<std::string>().find("--hw " + file), std::string::npos);
  // --price overrides the file's.
  auto k = run_json(kServe + " --hw " + file + " --tp 1 --price h100-sxm=1/h");
  EXPECT_NEAR(k["best"]["usd_per_hour"].get<double>(), 1.0 * k["best"]["gpus"].get<double>(), 1e-12);
}

TEST(SearchServeCli, ASpaceRefusedWholeSaysWhatWouldWidenIt) {
  // Llama 3.1 405B's bf16 weights are 2 x 405.9e9 B = 812 GB; eight A100 40GB hold 8 x 42.9 GB =
  // 344 GB: every layout of at most --max-gpus 8 is refused for memory before it is simulated.
  const std::string cmd = "search serve --model llama-3.1-405b --hw a100-40gb --qps 1 --requests 100 --max-gpus 8";
  auto j = run_json(cmd);
  EXPECT_TRUE(j["best"].is_null());
  EXPECT_EQ(j["simulations"], 0);
  ASSERT_GT(j["evaluated"].get<int>(), 0);
  EXPECT_EQ(j["rejected"]["memory"], j["evaluated"]);
  auto r = run(cmd);
  EXPECT_EQ(r.status, 0) << r.err;
  // No SLO was asked: the search looks for a deployment that sustains the load.
  EXPECT_NE(r.out.find("no feasible deployment sustains the load"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("meets the SLOs"), std::string::npos) << r.out;
  const int n = j["evaluated"].get<int>();
  EXPECT_NE(r.out.find("every one of the " + std::to_string(n) + " deployments was refused before it was simulated"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  memory (" + std::to_string(n) + "): the weights and a step's activations leave no KV cache"), std::string::npos)
      << r.out;
}

TEST(SearchServeCli, NothingFeasibleNamesTheClosest) {
  // 1 ms per output token is below any decode step of an 8B model on one node of H100s: no
  // deployment is simulated, the closest is named with its floor.
  auto r = run(kServe.substr(0, kServe.find(" --slo")) + " --hw h100-sxm --slo tpot_p99=1ms");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("no feasible deployment"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("closest:"), std::string::npos) << r.out;
  // Nothing was simulated: the refusals say what would widen the space.
  EXPECT_NE(r.out.find("  tpot_floor ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("a decode step of one sequence alone is beyond the TPOT target"), std::string::npos) << r.out;
  auto j = run_json(kServe.substr(0, kServe.find(" --slo")) + " --hw h100-sxm --slo tpot_p99=1ms");
  EXPECT_TRUE(j["best"].is_null());
  EXPECT_EQ(j["simulations"], 0);
  EXPECT_EQ(j["closest"]["binding"], "tpot");
  EXPECT_GT(j["rejected"]["tpot_floor"].get<int>(), 0);
}

TEST(SearchServeCli, AnItlTargetBelowEveryDecodeStepRejectsOnTheFloor) {
  // As tpot_p99=1ms above: every gap between two tokens is at least a decode step of one
  // sequence, so an ITL target of 1 ms is below every deployment's floor, named "itl".
  auto j = run_json(kServe.substr(0, kServe.find(" --slo")) + " --hw h100-sxm --slo itl_p99=1ms");
  EXPECT_TRUE(j["best"].is_null());
  EXPECT_EQ(j["simulations"], 0);
  EXPECT_EQ(j["closest"]["binding"], "itl");
  EXPECT_EQ(j["slo"], "itl_p99 1 ms");
  const auto r = run(kServe.substr(0, kServe.find(" --slo")) + " --hw h100-sxm --slo itl_p98=1ms");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("'itl_p98' is not a key"), std::string::npos) << r.err;
}

TEST(SearchServeCli, ParetoAtSaturationSaysWhichRateEachPointIsAt) {
  // Each point of the front at its own saturation: a rate at or above the offered 20 req/s (the
  // fleet met its SLO there, and the sweep starts from it), its throughput and speed per user.
  const auto j = run_json(kServe + " --hw h100-sxm --tp 1 --pareto saturation");
  EXPECT_EQ(j["pareto_at"], "saturation");
  ASSERT_FALSE(j["pareto"].empty());
  for (const auto& p : j["pareto"]) {
    ASSERT_TRUE(p["saturation"].is_object()) << p;
    EXPECT_GE(p["saturation"]["qps"].get<double>(), 20);
    EXPECT_GT(p["saturation"]["output_tokens_per_s_per_gpu"].get<double>(), 0);
    EXPECT_GT(p["saturation"]["output_tokens_per_s_per_user"].get<double>(), 0);
  }
  EXPECT_EQ(run_json(kServe + " --hw h100-sxm --tp 1")["pareto_at"], "offered");
  const auto r = run(kServe + " --hw h100-sxm --tp 1 --pareto peak");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--pareto: 'peak' is not a load: expected offered or saturation"), std::string::npos) << r.err;
}

TEST(SearchServeCli, ParetoChart) {
  const std::string svg = std::string(RIDGELINE_TMP_DIR) + "/fleet_pareto.svg";
  auto r = run(kServe + " --hw h100-sxm --tp 1,2,4 --plot " + svg);
  EXPECT_EQ(r.status, 0) << r.err;
  const std::string body = slurp(svg);
  EXPECT_NE(body.find("<svg"), std::string::npos);
  EXPECT_NE(body.find("output tokens/s per GPU"), std::string::npos);
}

TEST(SearchServeCli, BadInput) {
  for (auto [args, mention] : std::initializer_list<std::pair<std::string, std::string>>{
           {kServe + " --hw h100-sxm,nope", "nope"},
           {kServe + " --hw h100-sxm, ", "--hw"},
           {kServe + " --hw h100-sxm --price h100-sxm=2.5", "time unit"},
           {kServe + " --hw h100-sxm --price h100-sxm=2.5EUR/h", "USD"},
           {kServe + " --hw h100-sxm --price h100-sxm=-1/h", "positive"},
           {kServe + " --hw h100-sxm --price b200=2/h", "b200"},
           {kServe + " --hw h100-sxm --price h100-sxm", "'h100-sxm' names a chip without its price: expected CHIP=USD/h"},
           {kServe + " --hw h100-sxm --price b200", "'b200' is neither USD/h nor CHIP=USD/h (as in 2.5/h, or h100-sxm=2.5/h"},
           {kServe + " --hw h100-sxm --price -2/h", "positive"},
           {kServe + " --hw h100-sxm,a100-80gb --price 2/h --price h100-sxm=3/h", "h100-sxm is priced twice"},
           {kServe + " --hw h100-sxm,a100-80gb --price a100-80gb=3/h --price 2/h", "'2/h' prices a100-80gb again"},
           {kServe + " --hw h100-sxm,a100-80gb --price h100-sxm=2/h", "a100-80gb"},
           {kServe + " --hw h100-sxm --qps 5,6", "--qps"},
           {kServe + " --hw h100-sxm --tp 0", "--tp"},
           {kServe + " --hw h100-sxm --engine tgi", "--engine"},
           {kServe + " --hw h100-sxm --max-gpus 0", "--max-gpus"},
           {kServe + " --hw h100-sxm --max-rate maybe", "--max-rate"},
           {kServe + " --hw h100-sxm --chips 8", "--chips"},
           {kServe + " --hw h100-sxm --weight-dtype int3", "--weight-dtype"},
       }) {
    SCOPED_TRACE(args);
    expect_bad(args, mention);
  }
}

}  // namespace
}  // namespace ridgeline::testing
