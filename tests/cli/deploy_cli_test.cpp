// From answer to deployment: --emit on `serve` and `search serve` (the engine's launch files
// written where asked, their commands those of the simulated deployment, the refusals), and
// search serve's chip summary and default dtypes.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>

#include "cli/cli_harness.hpp"

namespace ridgeline::testing {
namespace {

std::string cleared_path(const char* name) {
  const std::string d = tmp_path(name);
  std::filesystem::remove_all(d);
  return d;
}

// serve --emit vllm: Llama-3.1-8B at TP 2, 3 replicas; the script runs `vllm serve` on the
// model's Hugging Face repository with the preset's limits (an H100: 8192 tokens, 1024
// sequences), the replicas are the README's instances.
TEST(EmitCli, ServeWritesTheEngineLaunch) {
  const std::string dir = cleared_path("emit_serve");
  const auto j = run_json("serve --model llama-3.1-8b --hw h100-sxm --tp 2 --replicas 3 --qps 6 --requests 100 --prompt 512 --gen 64 "
                          "--kv-dtype fp8 --emit vllm --emit-dir " + dir);
  ASSERT_TRUE(j.contains("emitted"));
  EXPECT_EQ(j["emitted"]["engine"], "vllm");
  EXPECT_EQ(j["emitted"]["release"], "0.14");
  EXPECT_EQ(j["emitted"]["model"], "meta-llama/Llama-3.1-8B");
  EXPECT_EQ(j["emitted"]["workers"][0]["instances"], 3);
  EXPECT_EQ(j["emitted"]["workers"][0]["gpus_per_instance"], 2);
  const std::string sh = slurp(dir + "/replica.sh");
  EXPECT_EQ(sh.rfind("#!/bin/sh\n", 0), 0u);
  EXPECT_NE(sh.find("exec vllm serve meta-llama/Llama-3.1-8B \\\n  --port \"${PORT:-8000}\" \\\n  --tensor-parallel-size 2 \\\n"), std::string::npos) << sh;
  EXPECT_NE(sh.find("--kv-cache-dtype fp8 \\\n"), std::string::npos) << sh;
  EXPECT_NE(sh.find("--max-num-batched-tokens 8192 \\\n"), std::string::npos) << sh;
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/replica.sh").c_str(), &st), 0);
  EXPECT_NE(st.st_mode & S_IXUSR, 0u);
  const std::string readme = slurp(dir + "/README.md");
  EXPECT_NE(readme.find("| 3 | replica | 2 | 8000 | `replica.sh` |"), std::string::npos) << readme;
  // The text output says where the files went.
  const RunResult r = run("serve --model llama-3.1-8b --hw h100-sxm --qps 2 --requests 50 --emit trtllm --engine trtllm --emit-dir " + dir + "_trt");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("launch files (trtllm"), std::string::npos) << r.out;
  EXPECT_NE(slurp(dir + "_trt/replica-extra-llm-api-config.yml").find("enable_chunked_prefill: false"), std::string::npos);
}

// search serve --emit: the best deployment, the Pareto front and the listed rows, each in its
// own directory with the serve command that reproduces its numbers.
TEST(EmitCli, SearchServeWritesBestParetoAndRows) {
  const std::string dir = cleared_path("emit_search");
  const auto j = run_json("search serve --model llama-3.1-8b --hw h100-sxm --tp 1,2 --qps 4 --requests 100 --prompt 512 --gen 64 "
                          "--slo ttft_p99=1s,tpot_p99=50ms --top 2 --emit sglang --engine sglang --emit-dir " + dir);
  ASSERT_TRUE(j["emitted"]["best"].is_object());
  EXPECT_EQ(j["emitted"]["best"]["engine"], "sglang");
  EXPECT_EQ(j["emitted"]["feasible"].size(), 2u);
  EXPECT_EQ(j["emitted"]["pareto"].size(), j["pareto"].size());
  const std::string sh = slurp(dir + "/best/replica.sh");
  EXPECT_NE(sh.find("exec python -m sglang.launch_server \\\n  --model-path meta-llama/Llama-3.1-8B \\\n"), std::string::npos) << sh;
  EXPECT_NE(slurp(dir + "/best/README.md").find("ridgeline serve --model llama-3.1-8b"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(dir + "/feasible/02/replica.sh"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/pareto/01/replica.sh"));
}

TEST(SearchServeCli, GraphPaddingOnOffOrBothForTensorRtLlm) {
  // TensorRT-LLM over two attention data-parallel ranks, its graphs padded (--graph-padding on):
  // the deployment says so in its JSON and its serve command, serve of that command gives the
  // same numbers, and its launch file pads (cuda_graph_config.enable_padding: true). With both,
  // two deployments; with vLLM alone the knob has nothing to set.
  const std::string dir = cleared_path("search_padding");
  const std::string base = "search serve --model mixtral-8x7b --hw h100-sxm --tp 1 --ep 2 --qps 4 --requests 100 "
                           "--prompt 1000 --gen 100 --max-num-seqs 64 --max-rate off --weight-dtype bf16 --kv-dtype bf16";
  auto j = run_json(base + " --engine trtllm --graph-padding on --emit trtllm --emit-dir " + dir);
  ASSERT_EQ(j["evaluated"], 1) << j.dump();
  const auto& b = j["best"];
  ASSERT_TRUE(b.is_object()) << j.dump();
  EXPECT_EQ(b["graph_padding"], true);
  std::string command = b["command"];
  EXPECT_NE(command.find("--graph-padding on"), std::string::npos) << command;
  auto s = run_json(command.substr(10));
  for (const char* k : {"ttft_s", "tpot_s", "output_tokens_per_s"}) EXPECT_EQ(s[k], b[k]) << k;
  const std::string yml = slurp(dir + "/best/replica-extra-llm-api-config.yml");
  EXPECT_NE(yml.find("enable_padding: true"), std::string::npos) << yml;
  EXPECT_NE(yml.find("enable_attention_dp: true"), std::string::npos) << yml;
  auto both = run_json(base + " --engine trtllm --graph-padding both");
  EXPECT_EQ(both["evaluated"], 2) << both.dump();
  // Without the knob, TensorRT-LLM's own (padding off); vLLM's JSON says it pads.
  auto preset = run_json(base + " --engine trtllm,vllm");
  ASSERT_EQ(preset["feasible"].size(), 2u) << preset.dump();
  for (const auto& d : preset["feasible"]) EXPECT_EQ(d["graph_padding"], d["engine"] == "vllm") << d.dump();
  expect_bad(base + " --engine trtllm --graph-padding maybe", "--graph-padding: 'maybe' is not on, off or both");
  expect_bad("search serve --model llama-3.1-8b --hw h100-sxm --qps 1 --engine vllm,sglang --graph-padding on",
             "--graph-padding: none of the engines tried has the knob");
}

// A config.json without a repository in it: the launch names the directory that holds it (the
// checkpoint's, which engines load), not the file.
// A sequence limit below vLLM's 256 lowers the largest graph vLLM captures by default (min(2 x
// max_num_seqs, 512), PR #20628): the simulation prices that graph and the launch files say it,
// each kind of instance its own: 2 x 64 = 128 for the prefill instances, 2 x 16 = 32 for decode.
TEST(EmitCli, TheLargestGraphFollowsEachInstancesSequenceLimit) {
  const std::string dir = cleared_path("emit_capture");
  const RunResult r = run("serve --model llama-3.1-8b --hw h100-sxm --prompt 100 --gen 4 --concurrency 1 --requests 2 --disagg 1:1 "
                          "--max-num-seqs 64 --disagg-decode max-num-seqs=16 --emit vllm --emit-dir " + dir);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string prefill = slurp(dir + "/prefill.sh"), decode = slurp(dir + "/decode.sh");
  EXPECT_NE(prefill.find("--max-num-seqs 64 \\\n"), std::string::npos) << prefill;
  EXPECT_NE(prefill.find("--max-cudagraph-capture-size 128 \\\n"), std::string::npos) << prefill;
  EXPECT_NE(decode.find("--max-num-seqs 16 \\\n"), std::string::npos) << decode;
  EXPECT_NE(decode.find("--max-cudagraph-capture-size 32 \\\n"), std::string::npos) << decode;
  // Two drafts: vLLM rounds its list to 512 into multiples of 3 up to 498 (PR #28315), what serve
  // prices; the launch file gives the 512 it rounds from (given 498, vLLM would truncate it to its
  // list's 496 and round to 480).
  const std::string spec_dir = cleared_path("emit_capture_spec");
  const auto spec = run_json("serve --model llama-3.1-8b --hw h100-sxm --prompt 100 --gen 4 --concurrency 1 --requests 2 --draft mtp "
                             "--spec-tokens 2 --accept 0.8 --emit vllm --emit-dir " + spec_dir);
  EXPECT_EQ(spec["engine"]["graph_max_batch"], 498);
  const std::string spec_sh = slurp(spec_dir + "/replica.sh");
  EXPECT_NE(spec_sh.find("--max-cudagraph-capture-size 512 \\\n"), std::string::npos) << spec_sh;
}

TEST(EmitCli, AConfigFileNamesItsDirectory) {
  const std::string dir = cleared_path("emit_config");
  std::filesystem::create_directories(dir + "/my-model");
  std::ofstream(dir + "/my-model/config.json") << R"({"model_type": "llama", "hidden_size": 1024, "intermediate_size": 2816,
    "num_hidden_layers": 4, "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000, "max_position_embeddings": 4096})";
  const auto j = run_json("serve --model " + dir + "/my-model/config.json --hw h100-sxm --qps 2 --requests 20 --prompt 128 --gen 16 "
                          "--emit sglang --engine sglang --emit-dir " + dir + "/launch");
  EXPECT_EQ(j["emitted"]["model"], dir + "/my-model");
  EXPECT_NE(slurp(dir + "/launch/replica.sh").find("--model-path " + dir + "/my-model \\\n"), std::string::npos);
  // A fine-tune's config keeps its base model's _name_or_path: the directory is still the model.
  // A config under another name is no checkpoint: its repository names the model.
  std::ofstream(dir + "/my-model/config.json") << R"({"_name_or_path": "meta-llama/Llama-3.1-8B", "model_type": "llama",
    "hidden_size": 1024, "intermediate_size": 2816, "num_hidden_layers": 4, "num_attention_heads": 16, "num_key_value_heads": 4,
    "vocab_size": 32000, "max_position_embeddings": 4096})";
  std::filesystem::copy_file(dir + "/my-model/config.json", dir + "/renamed.json");
  const std::string tail = " --hw h100-sxm --qps 2 --requests 20 --prompt 128 --gen 16 --emit vllm --emit-dir " + dir + "/launch2";
  EXPECT_EQ(run_json("serve --model " + dir + "/my-model/config.json" + tail)["emitted"]["model"], dir + "/my-model");
  std::filesystem::remove_all(dir + "/launch2");
  EXPECT_EQ(run_json("serve --model " + dir + "/renamed.json" + tail)["emitted"]["model"], "meta-llama/Llama-3.1-8B");
  // Without a repository either, its directory (an engine loads no single file).
  std::filesystem::remove_all(dir + "/launch2");
  std::ofstream(dir + "/my-model/other.json") << R"({"model_type": "llama", "hidden_size": 1024, "intermediate_size": 2816,
    "num_hidden_layers": 4, "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000, "max_position_embeddings": 4096})";
  EXPECT_EQ(run_json("serve --model " + dir + "/my-model/other.json" + tail)["emitted"]["model"], dir + "/my-model");
}

TEST(EmitCli, DeepSeekR1OnTheMi300xLoadsItsRepositoryWithAitersKernelsOn) {
  // DeepSeek-R1's bundled config cites its repository before a note (`_source`
  // "deepseek-ai/DeepSeek-R1 config.json: ..."): the launch loads that repository. On the MI300X
  // (a HIP chip) vLLM's preset runs AITER's kernels: the worker's env and the script export
  // VLLM_ROCM_USE_AITER=1; on the H200 the env is empty.
  const std::string dir = cleared_path("emit_rocm");
  const std::string run_args = " --model deepseek-r1 --tp 8 --concurrency 1 --requests 2 --prompt 64 --gen 4 --emit vllm --emit-dir ";
  const auto j = run_json("serve --hw mi300x" + run_args + dir);
  EXPECT_EQ(j["engine"]["rocm_aiter"], true);
  EXPECT_EQ(j["engine"]["block_fp8_gemms"], "aiter");
  EXPECT_EQ(j["emitted"]["model"], "deepseek-ai/DeepSeek-R1");
  EXPECT_EQ(j["emitted"]["workers"][0]["env"], nlohmann::json({{"VLLM_ROCM_USE_AITER", "1"}}));
  EXPECT_NE(slurp(dir + "/replica.sh").find("\nexport VLLM_ROCM_USE_AITER=1\nexec vllm serve deepseek-ai/DeepSeek-R1 \\\n"), std::string::npos)
      << slurp(dir + "/replica.sh");
  const auto h = run_json("serve --hw h200" + run_args + cleared_path("emit_cuda"));
  EXPECT_EQ(h["engine"]["rocm_aiter"], false);
  EXPECT_TRUE(h["emitted"]["workers"][0]["env"].empty());
}

TEST(EmitCli, DeepSeekR1OnB200sNamesTensorRtLlmsMoeBackend) {
  // docs/deploy.md#moe-backend: the file TensorRT-LLM reads has moe_config.backend DEEPGEMM for
  // DeepSeek-R1's fp8 blocks on B200s, and the run's JSON says the same; on H200s neither.
  const std::string dir = cleared_path("emit_trt_moe");
  const std::string run_args = " --engine trtllm --model deepseek-r1 --tp 8 --concurrency 1 --requests 2 --prompt 64 --gen 4 --emit trtllm --emit-dir ";
  const auto j = run_json("serve --hw b200" + run_args + dir);
  EXPECT_EQ(j["engine"]["moe_backend"], "DEEPGEMM");
  EXPECT_NE(slurp(dir + "/replica-extra-llm-api-config.yml").find("\nmoe_config:\n  backend: DEEPGEMM\n"), std::string::npos)
      << slurp(dir + "/replica-extra-llm-api-config.yml");
  // Disaggregated, the decode instances' own: prefill at EP 8, decode at EP 16 on a GB200 NVL72.
  const std::string dg = cleared_path("emit_trt_moe_disagg");
  const auto d = run_json("serve --hw gb200-nvl72 --engine trtllm --model deepseek-r1 --tp 1 --ep 8 --disagg 1:1 --disagg-decode ep=16 "
                          "--concurrency 1 --requests 2 --prompt 64 --gen 4 --emit trtllm --emit-dir " + dg);
  EXPECT_EQ(d["engine"]["moe_backend"], "DEEPGEMM");
  EXPECT_EQ(d["disagg"]["decode_moe_backend"], "WIDEEP");
  EXPECT_NE(slurp(dg + "/decode-extra-llm-api-config.yml").find("\nmoe_config:\n  backend: WIDEEP\n"), std::string::npos);
  const std::string h200 = cleared_path("emit_trt_moe_h200");
  const auto h = run_json("serve --hw h200" + run_args + h200);
  EXPECT_TRUE(h["engine"]["moe_backend"].is_null());
  EXPECT_TRUE(h["disagg"].is_null());
  EXPECT_EQ(slurp(h200 + "/replica-extra-llm-api-config.yml").find("moe_config"), std::string::npos);
}

TEST(EmitCli, BadEmitFlags) {
  expect_bad("serve --model llama-3.1-8b --hw h100-sxm --qps 2 --emit dynamo", "--emit: 'dynamo' is not an engine");
  expect_bad("serve --model llama-3.1-8b --hw h100-sxm --qps 2 --emit sglang", "--emit sglang: the simulation ran vllm");
  expect_bad("serve --model llama-3.1-8b --hw h100-sxm --qps 2 --emit-dir x", "--emit-dir");
  expect_bad("serve --model llama-3.1-8b --hw h100-sxm --qps 2,4 --emit vllm", "--emit");
  expect_bad("serve --model llama-3.1-8b --hw h100-sxm,h200 --qps 2 --emit vllm", "--emit");
  // No flag list is kept for vLLM 0.8-0.10 (data/engines has 0.13's and 0.14's).
  expect_bad("serve --model llama-3.1-8b --hw h100-sxm --qps 2 --engine vllm@0.9 --emit vllm",
             "--emit vllm: no flag list for the preset vllm@0.10 (0.9-0.10)");
  expect_bad("serve --model llama-3.1-8b --hw h100-sxm --qps 2 --engine vllm@0.8 --emit vllm",
             "--emit vllm: no flag list for the preset vllm@0.8 (0.8)");
  // Nor for TensorRT-LLM's TensorRT engine flow: its engines are built by trtllm-build, not served
  // by trtllm-serve's flags.
  expect_bad("serve --model llama-3.1-8b --hw h100-sxm --qps 2 --engine trtllm@0.14 --emit trtllm",
             "--emit trtllm: no flag list for the preset trtllm@0.15 (TensorRT engine flow, C++ executor, 0.9-0.15): its engines are "
             "built by trtllm-build");
}

// Without --weight-dtype and --kv-dtype the search tries the checkpoint's and fp8 on a chip that
// computes fp8: 2 x 2 dtype pairs on the H100, 1 on the A100 (no fp8 rate), at one TP, engine
// and sequence limit: 5 deployments. Given dtypes are kept as given.
TEST(SearchServeDefaults, Fp8WhereTheChipComputesIt) {
  const std::string base = "search serve --model llama-3.1-8b --tp 1 --max-num-seqs 256 --qps 2 --requests 60 --prompt 512 --gen 64 --max-rate off";
  auto j = run_json(base + " --hw h100-sxm,a100-80gb");
  EXPECT_EQ(j["evaluated"], 5) << j["rejected"].dump();
  int fp8_on_a100 = 0, pairs_on_h100 = 0;
  for (const auto& d : j["feasible"]) {
    if (d["hw"] == "a100-80gb" && (!d["weight_dtype"].is_null() || !d["kv_dtype"].is_null())) ++fp8_on_a100;
    if (d["hw"] == "h100-sxm") ++pairs_on_h100;
  }
  EXPECT_EQ(fp8_on_a100, 0);
  EXPECT_EQ(pairs_on_h100, 4);
  EXPECT_EQ(run_json(base + " --hw h100-sxm --weight-dtype bf16 --kv-dtype bf16")["evaluated"], 1);
  // A quantised checkpoint keeps its weights: gpt-oss's mxfp4 experts, the KV cache either way.
  EXPECT_EQ(run_json("search serve --model gpt-oss-120b --hw h100-sxm --tp 1 --ep 1 --max-num-seqs 256 --qps 1 --requests 30 --prompt 256 "
                     "--gen 32 --max-rate off")["evaluated"], 2);
}

// The chip question in one table: the cheapest feasible deployment per chip, in --json as
// best_per_chip (the first of each chip in the cheapest-first list) and first in the text,
// with the distance to each target: spare = 1 - p99 / target.
TEST(SearchServeDefaults, BestPerChipSummary) {
  const std::string cmd = "search serve --model llama-3.1-8b --hw h100-sxm,h200 --tp 1,2 --qps 4 --requests 100 --prompt 512 --gen 64 "
                          "--slo ttft_p99=1s,tpot_p99=50ms --price h100-sxm=2/h --price h200=3/h --max-rate off";
  auto j = run_json(cmd + " --top 1000");  // every feasible deployment listed
  ASSERT_EQ(j["best_per_chip"].size(), 2u);
  for (const auto& b : j["best_per_chip"]) {
    const auto& feasible = j["feasible"];
    const auto first = std::find_if(feasible.begin(), feasible.end(), [&](const auto& d) { return d["hw"] == b["hw"]; });
    ASSERT_NE(first, feasible.end());
    EXPECT_EQ((*first)["command"], b["command"]);
    EXPECT_DOUBLE_EQ(b["slo_slack_by_target"]["ttft"].get<double>(), 1 - b["ttft_s"]["p99"].get<double>() / 1.0);
    EXPECT_DOUBLE_EQ(b["slo_slack_by_target"]["tpot"].get<double>(), 1 - b["tpot_s"]["p99"].get<double>() / 0.05);
    EXPECT_DOUBLE_EQ(b["slo_slack"].get<double>(), std::min(b["slo_slack_by_target"]["ttft"].get<double>(), b["slo_slack_by_target"]["tpot"].get<double>()));
  }
  const RunResult r = run(cmd);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::size_t summary = r.out.find("best per chip"), best = r.out.find("\nbest (cheapest)");
  ASSERT_NE(summary, std::string::npos) << r.out;
  EXPECT_LT(summary, best);
  // The rows line counts the rows it shows.
  const std::size_t line = r.out.find("cheapest first: the 10 cheapest of ");
  ASSERT_NE(line, std::string::npos) << r.out;
  const std::size_t on = r.out.find(" on ", line), rows_end = r.out.find(" row", on + 4);
  const int rows = std::stoi(r.out.substr(on + 4, rows_end - on - 4));
  const std::size_t table = r.out.find('\n', r.out.find("  hw ", line)) + 1, pareto = r.out.find("\nPareto front", table);
  int lines = 0;
  for (std::size_t i = table; i < pareto; i = r.out.find('\n', i) + 1) ++lines;
  EXPECT_EQ(lines, rows) << r.out.substr(line, pareto - line);
}

}  // namespace
}  // namespace ridgeline::testing

namespace ridgeline::testing {
namespace {

// Finding things: the overview names every command a planner starts from, and `help report`
// lists the pages it writes.
TEST(FindingThings, OverviewAndReportHelp) {
  const RunResult bare = run("");
  EXPECT_EQ(bare.status, 0);
  EXPECT_NE(bare.out.find("search serve --model M"), std::string::npos) << bare.out;
  EXPECT_NE(bare.out.find("--emit vllm|sglang|trtllm"), std::string::npos) << bare.out;
  const RunResult help = run("help report");
  EXPECT_EQ(help.status, 0);
  for (const char* flag : {"--serve", "--fleet", "--train"}) EXPECT_NE(help.out.find(flag), std::string::npos) << flag << "\n" << help.out;
  // The trace the docs use is shipped: 300 requests (tests/fixtures/README.md says how it was made).
  const auto t = run_json("serve --model llama-3.1-8b --hw h100-sxm --trace " + std::string(RIDGELINE_SOURCE_DIR) +
                          "/tests/fixtures/traces/chat_300.csv");
  EXPECT_EQ(t["simulated_requests"], 300);
  // The shipped sample of Azure's conversation trace (the docs' --trace example): its 300
  // requests, their prompt and output lengths the file's ContextTokens and GeneratedTokens
  // (summed here from the file; the run's token rates times its span give the same totals).
  const std::string azure = std::string(RIDGELINE_SOURCE_DIR) + "/tests/fixtures/traces/azure_conv_300.csv";
  std::ifstream in(azure);
  std::string line;
  std::getline(in, line);
  // As downloaded, with Windows line ends (the reader takes both).
  EXPECT_EQ(line, "TIMESTAMP,ContextTokens,GeneratedTokens\r");
  double context = 0, generated = 0;
  int rows = 0;
  while (std::getline(in, line)) {
    const auto c1 = line.find(','), c2 = line.rfind(',');
    context += std::stod(line.substr(c1 + 1, c2 - c1 - 1));
    generated += std::stod(line.substr(c2 + 1));
    ++rows;
  }
  EXPECT_EQ(rows, 300);
  const auto a = run_json("serve --model llama-3.1-8b --hw h100-sxm --trace " + azure);
  EXPECT_EQ(a["simulated_requests"], 300);
  const double span = a["measured_span_s"].get<double>();
  EXPECT_NEAR(a["input_tokens_per_s"].get<double>() * span, context, 1e-6 * context);
  EXPECT_NEAR(a["output_tokens_per_s"].get<double>() * span, generated, 1e-6 * generated);
  // And they work from the report command.
  const std::string out = std::string(RIDGELINE_TMP_DIR) + "/fleet_help.html";
  const auto j = run_json("report --fleet --model llama-3.1-8b --hw h100-sxm --tp 1 --qps 2 --requests 40 --out " + out);
  EXPECT_EQ(j["out"], out);
  // Headroom from the error bands reads as such in the fleet view's inputs, not as 0%.
  run_json("report --fleet --model llama-3.1-8b --hw h100-sxm --tp 1 --qps 2 --requests 40 --slo ttft_p99=2s --margin band --out " + out);
  const std::string html = slurp(out);
  EXPECT_NE(html.find("<th>headroom</th><td>each deployment's class's median error (--margin band)</td>"), std::string::npos)
      << html.substr(html.find("headroom"), 300);
}

}  // namespace
}  // namespace ridgeline::testing
