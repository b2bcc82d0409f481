// Engine launches: every flag, YAML key and listed value of many deployments is in the flag list
// of the release its preset follows (read here from data/engines/ itself), and the values of
// hand-checked deployments are those the simulation ran, derived in the comments.
#include "ridgeline/planning/launch.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "ridgeline/core/error.hpp"
#include "ridgeline/io/engine_cli.hpp"
#include "ridgeline/io/model_file.hpp"
#include "ridgeline/model/speculation.hpp"
#include "ridgeline/report/launch.hpp"
#include "toy_chip.hpp"

namespace ridgeline::planning {
namespace {

using serving::EngineKind;
using serving::EngineRef;

// The lists as the repository holds them, parsed apart from io::engine_cli.
std::map<std::string, nlohmann::json> data_lists() {
  std::map<std::string, nlohmann::json> out;
  for (const auto& e : std::filesystem::directory_iterator(std::string(RIDGELINE_SOURCE_DIR) + "/data/engines")) {
    std::ifstream in(e.path());
    const nlohmann::json j = nlohmann::json::parse(in);
    out[j.at("preset").get<std::string>()] = j;
  }
  return out;
}

bool listed(const nlohmann::json& list, const char* field, const std::string& item) {
  if (!list.contains(field)) return false;
  const auto& a = list[field];
  return std::find(a.begin(), a.end(), item) != a.end();
}

// Whether every flag, key and (where the list has them) value of `p` is in the file's lists.
void expect_listed(const LaunchPlan& p) {
  static const std::map<std::string, nlohmann::json> lists = data_lists();
  ASSERT_TRUE(lists.count(p.flags_preset)) << p.flags_preset;
  const nlohmann::json& l = lists.at(p.flags_preset);
  const nlohmann::json choices = l.value("choices", nlohmann::json::object());
  auto value_ok = [&](const std::string& key, const std::string& v) {
    return !choices.contains(key) || std::find(choices[key].begin(), choices[key].end(), v) != choices[key].end();
  };
  for (const LaunchWorker& w : p.workers) {
    // The program and subcommand are the list's own.
    for (std::size_t i = 0; i < l["command"].size(); ++i) EXPECT_EQ(w.command.at(i), l["command"][i].get<std::string>());
    for (const LaunchArg& a : w.args) {
      EXPECT_TRUE(listed(l, "flags", a.flag)) << p.preset << ": " << a.flag;
      EXPECT_TRUE(value_ok(a.flag, a.value)) << p.preset << ": " << a.flag << " " << a.value;
    }
    for (const LaunchYaml& y : w.yaml) {
      EXPECT_TRUE(listed(l, "yaml_keys", y.key)) << p.preset << ": " << y.key;
      EXPECT_TRUE(value_ok(y.key, y.value)) << p.preset << ": " << y.key << " " << y.value;
    }
  }
  EXPECT_EQ(unlisted(p), "");
}

std::string arg(const LaunchWorker& w, const std::string& flag) {
  for (const LaunchArg& a : w.args) {
    if (a.flag == flag) return a.value.empty() ? "<switch>" : a.value;
  }
  return "<absent>";
}
std::string yaml(const LaunchWorker& w, const std::string& key) {
  for (const LaunchYaml& y : w.yaml) {
    if (y.key == key) return y.value;
  }
  return "<absent>";
}

serving::ServeConfig config(EngineRef engine, const hw::System& sys, std::int64_t tp, std::int64_t ep = 1) {
  serving::ServeConfig c;
  c.forward.tp = tp;
  c.forward.ep = ep;
  c.engine = serving::engine_preset(engine, sys.chip, tp);
  return c;
}

TEST(EngineLists, EveryPresetHasAListWithItsSource) {
  const std::map<std::string, nlohmann::json> lists = data_lists();
  for (const char* preset : {"vllm", "vllm@0.13", "sglang", "sglang@0.3", "trtllm"}) {
    ASSERT_TRUE(lists.count(preset)) << preset;
    const nlohmann::json& l = lists.at(preset);
    EXPECT_GT(l["source"].get<std::string>().size(), 100u) << preset;
    EXPECT_GT(l["flags"].size(), 10u) << preset;
    const io::EngineCliSpec* s = io::engine_cli(preset);
    ASSERT_NE(s, nullptr) << preset;
    EXPECT_EQ(s->flags.size(), l["flags"].size());
    std::set<std::string> unique(s->flags.begin(), s->flags.end());
    EXPECT_EQ(unique.size(), s->flags.size()) << preset << ": a flag listed twice";
  }
  EXPECT_EQ(io::engine_cli("vllm@0.8"), nullptr);
  // TensorRT-LLM 0.19-1.1 launch by the PyTorch backend's list, read from both copies of its
  // serve.py (data/engines/trtllm-1.0.json: also_presets); the TensorRT flow has none.
  const io::EngineCliSpec* opt_in = io::engine_cli("trtllm@1.1");
  ASSERT_NE(opt_in, nullptr);
  EXPECT_EQ(opt_in->preset, "trtllm");
  EXPECT_EQ(io::engine_cli("trtllm@0.15"), nullptr);
  // Every name a list serves is a preset as launch_plan spells it (serving::name of what
  // --engine parses it to: an alias such as "trtllm@0.20" would never be looked up), and no
  // name is served by two lists.
  std::map<std::string, int> served;
  for (const io::EngineCliSpec& l : io::engine_clis()) {
    std::vector<std::string> names = l.also_presets;
    names.push_back(l.preset);
    for (const std::string& n : names) {
      const std::optional<serving::EngineRef> ref = serving::parse_engine(n);
      ASSERT_TRUE(ref.has_value()) << n;
      EXPECT_EQ(serving::name(*ref), n);
      ++served[n];
    }
  }
  for (const auto& [n, count] : served) EXPECT_EQ(count, 1) << n << ": served by more than one list";
}

// Llama-3.1-70B at TP 4 on H100s, vLLM 0.14+: the preset of a GPU of 70 GiB or more (not an
// A100) is 8192 tokens and 1024 sequences (engine.cpp, arg_utils.py _set_default_args), block
// 16, gpu_memory_utilization 0.9; fp8 weights from a bf16 checkpoint are --quantization fp8 and
// an e4m3 cache is --kv-cache-dtype fp8.
TEST(Launch, VllmAggregatedReplicasCarryTheSimulatedKnobs) {
  const model::ModelConfig m = io::resolve_model("llama-3.1-70b");
  const hw::System sys = testing::catalog_system("h100-sxm");
  serving::ServeConfig c = config(EngineKind::vllm, sys, 4);
  c.replicas = 3;
  c.forward.precision.weight = DType::fp8_e4m3;
  c.forward.precision.kv_cache = DType::fp8_e4m3;
  const LaunchPlan p = launch_plan(m, c, LaunchTarget::vllm, {"meta-llama/Llama-3.1-70B", ""});
  expect_listed(p);
  EXPECT_EQ(p.release, "0.14");
  ASSERT_EQ(p.workers.size(), 1u);
  const LaunchWorker& w = p.workers[0];
  EXPECT_EQ(w.instances, 3);
  EXPECT_EQ(w.gpus_per_instance, 4);
  EXPECT_EQ(w.command, (std::vector<std::string>{"vllm", "serve", "meta-llama/Llama-3.1-70B"}));
  EXPECT_EQ(arg(w, "--tensor-parallel-size"), "4");
  EXPECT_EQ(arg(w, "--data-parallel-size"), "<absent>");
  EXPECT_EQ(arg(w, "--max-num-seqs"), "1024");
  EXPECT_EQ(arg(w, "--max-num-batched-tokens"), "8192");
  EXPECT_EQ(arg(w, "--block-size"), "16");
  EXPECT_EQ(arg(w, "--gpu-memory-utilization"), "0.9");
  EXPECT_EQ(arg(w, "--quantization"), "fp8");
  EXPECT_EQ(arg(w, "--kv-cache-dtype"), "fp8");
  EXPECT_EQ(arg(w, "--enable-chunked-prefill"), "<switch>");
  EXPECT_EQ(arg(w, "--enable-prefix-caching"), "<switch>");
  EXPECT_EQ(arg(w, "--max-cudagraph-capture-size"), "512");
  EXPECT_EQ(arg(w, "--dtype"), "bfloat16");
  EXPECT_EQ(arg(w, "--speculative-config"), "<absent>");
  // The knobs a user changed are the knobs launched: no prefix cache, prompts whole, eager,
  // an explicit cache size.
  c.engine.prefix_caching = false;
  c.engine.chunked_prefill = false;
  c.engine.decode_graphs = c.engine.mixed_graphs = serving::GraphMode::eager;
  c.engine.kv_blocks_override = 5000;
  c.engine.kv_memory_fraction = 0.85;
  const LaunchWorker w2 = launch_plan(m, c, LaunchTarget::vllm, {"m", ""}).workers[0];
  EXPECT_EQ(arg(w2, "--no-enable-prefix-caching"), "<switch>");
  EXPECT_EQ(arg(w2, "--no-enable-chunked-prefill"), "<switch>");
  EXPECT_EQ(arg(w2, "--enforce-eager"), "<switch>");
  EXPECT_EQ(arg(w2, "--max-cudagraph-capture-size"), "<absent>");
  EXPECT_EQ(arg(w2, "--num-gpu-blocks-override"), "5000");
  EXPECT_EQ(arg(w2, "--gpu-memory-utilization"), "0.85");
}

// Speculative decoding is vLLM's --speculative-config JSON: a draft model by its repository, or
// the model's own MTP layers.
TEST(Launch, VllmSpeculativeConfigIsJson) {
  const model::ModelConfig m = io::resolve_model("llama-3.1-70b");
  const model::ModelConfig d = io::resolve_model("llama-3.1-8b");
  const hw::System sys = testing::catalog_system("h100-sxm");
  serving::ServeConfig c = config(EngineKind::vllm, sys, 4);
  c.spec.k = 3;
  c.spec.draft = &d;
  const LaunchPlan p = launch_plan(m, c, LaunchTarget::vllm, {"meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-8B"});
  expect_listed(p);
  const nlohmann::json j = nlohmann::json::parse(arg(p.workers[0], "--speculative-config"));
  EXPECT_EQ(j["method"], "draft_model");
  EXPECT_EQ(j["model"], "meta-llama/Llama-3.1-8B");
  EXPECT_EQ(j["num_speculative_tokens"], 3);
  const model::ModelConfig ds = io::resolve_model("deepseek-v3");
  const model::ModelConfig mtp = model::mtp_draft(ds);
  serving::ServeConfig c2 = config(EngineKind::vllm, testing::catalog_system("h200"), 8);
  c2.spec.k = 1;
  c2.spec.mtp = true;
  c2.spec.draft = &mtp;
  const LaunchPlan p2 = launch_plan(ds, c2, LaunchTarget::vllm, {"deepseek-ai/DeepSeek-V3", ""});
  expect_listed(p2);
  const nlohmann::json j2 = nlohmann::json::parse(arg(p2.workers[0], "--speculative-config"));
  EXPECT_EQ(j2["method"], "mtp");
  EXPECT_EQ(j2["num_speculative_tokens"], 1);
  // DeepSeek-V3's checkpoint is fp8 already: no --quantization.
  EXPECT_EQ(arg(p2.workers[0], "--quantization"), "<absent>");
}

// Mixtral at TP 2 x EP 4 (8 GPUs): vLLM TP 2 with 4 data-parallel ranks and expert parallelism;
// SGLang --tp-size 8 with 4 attention groups (dp attention) and --ep-size 4 (MoE TP 8/4 = 2);
// TensorRT-LLM --tp_size 8 --ep_size 4, attention data parallelism only at TP 1.
TEST(Launch, ExpertParallelismOnEachEngine) {
  const model::ModelConfig m = io::resolve_model("mixtral-8x7b");
  const hw::System sys = testing::catalog_system("h100-sxm");
  const LaunchPlan v = launch_plan(m, config(EngineKind::vllm, sys, 2, 4), LaunchTarget::vllm, {"x", ""});
  expect_listed(v);
  EXPECT_EQ(v.workers[0].gpus_per_instance, 8);
  EXPECT_EQ(arg(v.workers[0], "--tensor-parallel-size"), "2");
  EXPECT_EQ(arg(v.workers[0], "--data-parallel-size"), "4");
  EXPECT_EQ(arg(v.workers[0], "--enable-expert-parallel"), "<switch>");
  // --kv-blocks 1002 is the replica's: each of vLLM's 4 data-parallel ranks takes the override
  // for its own cache, so 1002 / 4 = 250 each, and a note says the simulation gave 1002 mod 4 = 2
  // ranks 251.
  serving::ServeConfig blocks = config(EngineKind::vllm, sys, 2, 4);
  blocks.engine.kv_blocks_override = 1002;
  const LaunchPlan vb = launch_plan(m, blocks, LaunchTarget::vllm, {"x", ""});
  EXPECT_EQ(arg(vb.workers[0], "--num-gpu-blocks-override"), "250");
  ASSERT_FALSE(vb.notes.empty());
  EXPECT_NE(vb.notes.back().find("gave 2 of them one block more"), std::string::npos) << vb.notes.back();
  const LaunchPlan s = launch_plan(m, config(EngineKind::sglang, sys, 2, 4), LaunchTarget::sglang, {"x", ""});
  expect_listed(s);
  EXPECT_EQ(arg(s.workers[0], "--tp-size"), "8");
  EXPECT_EQ(arg(s.workers[0], "--dp-size"), "4");
  EXPECT_EQ(arg(s.workers[0], "--enable-dp-attention"), "<switch>");
  // SGLang's pool in tokens, per attention rank: 1002 blocks / 4 ranks = 250 pages of
  // kv_block tokens each.
  serving::ServeConfig sb = config(EngineKind::sglang, sys, 2, 4);
  sb.engine.kv_blocks_override = 1002;
  const LaunchPlan sbp = launch_plan(m, sb, LaunchTarget::sglang, {"x", ""});
  EXPECT_EQ(arg(sbp.workers[0], "--max-total-tokens"), std::to_string(250 * sb.engine.kv_block));
  EXPECT_EQ(arg(s.workers[0], "--ep-size"), "4");
  const LaunchPlan t = launch_plan(m, config(EngineKind::trtllm, sys, 2, 4), LaunchTarget::trtllm, {"x", ""});
  expect_listed(t);
  EXPECT_EQ(arg(t.workers[0], "--tp_size"), "8");
  EXPECT_EQ(arg(t.workers[0], "--ep_size"), "4");
  EXPECT_EQ(yaml(t.workers[0], "enable_attention_dp"), "<absent>");
  EXPECT_FALSE(t.notes.empty());
  const LaunchPlan t1 = launch_plan(m, config(EngineKind::trtllm, sys, 1, 8), LaunchTarget::trtllm, {"x", ""});
  EXPECT_EQ(yaml(t1.workers[0], "enable_attention_dp"), "true");
  // SGLang 0.3 had no expert parallelism: refused, naming the flag.
  try {
    launch_plan(m, config(EngineRef{EngineKind::sglang, 3}, sys, 2, 4), LaunchTarget::sglang, {"x", ""});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--emit sglang"), std::string::npos) << e.what();
  }
}

// SGLang under attention data parallelism runs DeepSeek-V3's dense layers over every GPU on the
// gathered rows where each GPU's share holds whole 128-column fp8 blocks: their 18432 columns are
// 144 blocks, 18 a GPU over 8 (nothing to ask), 4.5 over 32, where the simulation keeps them on
// each group's rows over its TP and the file asks for that (--moe-dense-tp-size TP; at TP 2 a note
// that SGLang takes 2 only from April 2026). The shared expert's 2048 columns (16 blocks) over 32
// GPUs are 64 columns each: a note, no flag, unless DeepEP runs them (whole on each GPU).
TEST(Launch, SglangKeepsDenseLayersOnTheRanksWhereTheirBlocksDoNotSplit) {
  const model::ModelConfig m = io::resolve_model("deepseek-v3");
  const hw::System sys = testing::catalog_system("h100-sxm");
  const auto has_note = [](const LaunchPlan& p, const char* what) {
    return std::any_of(p.notes.begin(), p.notes.end(), [&](const std::string& n) { return n.find(what) != std::string::npos; });
  };
  const LaunchPlan eight = launch_plan(m, config(EngineKind::sglang, sys, 1, 8), LaunchTarget::sglang, {"x", ""});
  expect_listed(eight);
  EXPECT_EQ(arg(eight.workers[0], "--moe-dense-tp-size"), "<absent>");
  EXPECT_FALSE(has_note(eight, "shared experts: SGLang"));
  const LaunchPlan wide = launch_plan(m, config(EngineKind::sglang, sys, 1, 32), LaunchTarget::sglang, {"x", ""});
  expect_listed(wide);
  EXPECT_EQ(arg(wide.workers[0], "--moe-dense-tp-size"), "1");
  EXPECT_TRUE(has_note(wide, "shared experts: SGLang splits them over all 32 GPUs, 64 columns each"));
  EXPECT_FALSE(has_note(wide, "dense layers: --moe-dense-tp-size"));
  // TP 2 x EP 16: the dense layers over each group's 2 GPUs, and the note on the release.
  const LaunchPlan two = launch_plan(m, config(EngineKind::sglang, sys, 2, 16), LaunchTarget::sglang, {"x", ""});
  EXPECT_EQ(arg(two.workers[0], "--moe-dense-tp-size"), "2");
  EXPECT_TRUE(has_note(two, "dense layers: --moe-dense-tp-size 2"));
  EXPECT_TRUE(has_note(two, "split over its 2 GPUs"));
  // Under DeepEP SGLang runs the shared experts whole on each GPU itself: no note; the pairs'
  // simulation leaves SGLang's own gathered layout, which splits them: the note.
  serving::ServeConfig deepep = config(EngineKind::sglang, sys, 1, 32);
  deepep.engine.moe_a2a = model::ForwardConfig::MoeA2A::deepep;
  EXPECT_FALSE(has_note(launch_plan(m, deepep, LaunchTarget::sglang, {"x", ""}), "shared experts: SGLang"));
  serving::ServeConfig pairs = config(EngineKind::sglang, sys, 1, 32);
  pairs.engine.moe_a2a = model::ForwardConfig::MoeA2A::pairs;
  EXPECT_TRUE(has_note(launch_plan(m, pairs, LaunchTarget::sglang, {"x", ""}), "shared experts: SGLang"));
}

// DeepEP (--moe-a2a deepep, docs/serving.md#deepep) at TP 2 x EP 4: SGLang's --moe-a2a-backend
// deepep (its auto mode: low-latency kernels for decode batches, normal ones else); vLLM's
// --all2all-backend, the normal kernels on an aggregated instance with a note that it runs them
// at every step, the low-latency ones on a decode instance; TensorRT-LLM a note only. The pairs'
// default sets neither flag.
TEST(Launch, DeepEpOnEachEngine) {
  const model::ModelConfig m = io::resolve_model("mixtral-8x7b");
  const hw::System sys = testing::catalog_system("h100-sxm");
  auto deepep = [&](serving::ServeConfig c) {
    c.engine.moe_a2a = model::ForwardConfig::MoeA2A::deepep;
    return c;
  };
  const LaunchPlan s = launch_plan(m, deepep(config(EngineKind::sglang, sys, 2, 4)), LaunchTarget::sglang, {"x", ""});
  expect_listed(s);
  EXPECT_EQ(arg(s.workers[0], "--moe-a2a-backend"), "deepep");
  EXPECT_EQ(arg(launch_plan(m, config(EngineKind::sglang, sys, 2, 4), LaunchTarget::sglang, {"x", ""}).workers[0], "--moe-a2a-backend"),
            "<absent>");
  const LaunchPlan v = launch_plan(m, deepep(config(EngineKind::vllm, sys, 2, 4)), LaunchTarget::vllm, {"x", ""});
  expect_listed(v);
  EXPECT_EQ(arg(v.workers[0], "--all2all-backend"), "deepep_high_throughput");
  EXPECT_TRUE(std::any_of(v.notes.begin(), v.notes.end(), [](const std::string& n) { return n.find("DeepEP: vLLM runs") != std::string::npos; }));
  const LaunchPlan t = launch_plan(m, deepep(config(EngineKind::trtllm, sys, 2, 4)), LaunchTarget::trtllm, {"x", ""});
  EXPECT_TRUE(std::any_of(t.notes.begin(), t.notes.end(), [](const std::string& n) { return n.find("DeepEP: TensorRT-LLM") != std::string::npos; }));
  // Disaggregated under vLLM: the prefill instances run the normal kernels, the decode ones
  // (their own engine, DeepEP too) the low-latency ones.
  serving::ServeConfig dg = deepep(config(EngineKind::vllm, sys, 2, 4));
  dg.disagg.prefill = 1;
  dg.disagg.decode = 1;
  dg.disagg.decode_engine = dg.engine;
  const LaunchPlan d = launch_plan(m, dg, LaunchTarget::vllm, {"x", ""});
  ASSERT_EQ(d.workers.size(), 2u);
  EXPECT_EQ(arg(d.workers[0], "--all2all-backend"), "deepep_high_throughput");
  EXPECT_EQ(arg(d.workers[1], "--all2all-backend"), "deepep_low_latency");
}

// Mixtral at TP 4 with whole experts over the 4 GPUs (--experts ep; docs/serving.md#moe-layouts):
// vLLM -tp 4 --enable-expert-parallel and no data-parallel ranks; SGLang --tp-size 4 --ep-size 4
// without dp attention; TensorRT-LLM --tp_size 4 --ep_size 4. With --ep 2 on top (8 GPUs,
// attention DP 2 x TP 4, experts over all 8): vLLM -tp 4 -dp 2 with expert parallelism and no
// note (its own layout); SGLang --ep-size 8.
TEST(Launch, WholeExpertsOverTheTensorParallelGpus) {
  const model::ModelConfig m = io::resolve_model("mixtral-8x7b");
  const hw::System sys = testing::catalog_system("h100-sxm");
  auto whole = [&](EngineRef e, std::int64_t tp, std::int64_t ep) {
    serving::ServeConfig c = config(e, sys, tp, ep);
    c.forward.experts = model::ForwardConfig::Experts::expert;
    return c;
  };
  const LaunchPlan v = launch_plan(m, whole(EngineKind::vllm, 4, 1), LaunchTarget::vllm, {"x", ""});
  expect_listed(v);
  EXPECT_EQ(arg(v.workers[0], "--tensor-parallel-size"), "4");
  EXPECT_EQ(arg(v.workers[0], "--enable-expert-parallel"), "<switch>");
  EXPECT_EQ(arg(v.workers[0], "--data-parallel-size"), "<absent>");
  const LaunchPlan s = launch_plan(m, whole(EngineKind::sglang, 4, 1), LaunchTarget::sglang, {"x", ""});
  expect_listed(s);
  EXPECT_EQ(arg(s.workers[0], "--tp-size"), "4");
  EXPECT_EQ(arg(s.workers[0], "--ep-size"), "4");
  EXPECT_EQ(arg(s.workers[0], "--enable-dp-attention"), "<absent>");
  const LaunchPlan t = launch_plan(m, whole(EngineKind::trtllm, 4, 1), LaunchTarget::trtllm, {"x", ""});
  expect_listed(t);
  EXPECT_EQ(arg(t.workers[0], "--tp_size"), "4");
  EXPECT_EQ(arg(t.workers[0], "--ep_size"), "4");
  const LaunchPlan v2 = launch_plan(m, whole(EngineKind::vllm, 4, 2), LaunchTarget::vllm, {"x", ""});
  EXPECT_EQ(arg(v2.workers[0], "--data-parallel-size"), "2");
  EXPECT_EQ(arg(v2.workers[0], "--enable-expert-parallel"), "<switch>");
  for (const std::string& n : v2.notes) EXPECT_EQ(n.find("expert parallelism"), std::string::npos) << n;
  const LaunchPlan s2 = launch_plan(m, whole(EngineKind::sglang, 4, 2), LaunchTarget::sglang, {"x", ""});
  EXPECT_EQ(arg(s2.workers[0], "--tp-size"), "8");
  EXPECT_EQ(arg(s2.workers[0], "--ep-size"), "8");
}

// SGLang's memory knobs as the preset derives them for an H100 (81559 MiB) at TP 1:
// chunked_prefill_size 8192 and cuda_graph_max_bs 256 (memory in [60, 160) GiB, tp < 4);
// reserved = max(512 + 1.5 x 8192 + 2 x 256 + 1/8 x 1024, 10240) = 13440 MB, so
// mem_fraction_static = (81559 - 13440) / 81559 = 0.83521 -> "0.8352". max_running_requests is
// left to SGLang (0: from the cache), the radix cache on, page size 1.
TEST(Launch, SglangMemoryAndSchedulerKnobs) {
  const model::ModelConfig m = io::resolve_model("llama-3.1-8b");
  const hw::System sys = testing::catalog_system("h100-sxm");
  const LaunchPlan p = launch_plan(m, config(EngineKind::sglang, sys, 1), LaunchTarget::sglang, {"meta-llama/Llama-3.1-8B", ""});
  expect_listed(p);
  const LaunchWorker& w = p.workers[0];
  EXPECT_EQ(w.command, (std::vector<std::string>{"python", "-m", "sglang.launch_server"}));
  EXPECT_EQ(arg(w, "--model-path"), "meta-llama/Llama-3.1-8B");
  EXPECT_EQ(arg(w, "--chunked-prefill-size"), "8192");
  EXPECT_EQ(arg(w, "--cuda-graph-max-bs"), "256");
  // (81559 - max(512 + 1.5 x 8192 + 2 x 256 + 1/8 x 1024, 10240)) / 81559 MiB = 68119 / 81559
  // = 0.83521, rounded to three places as SGLang rounds it (round(..., 3)).
  EXPECT_EQ(arg(w, "--mem-fraction-static"), "0.835");
  EXPECT_EQ(arg(w, "--max-prefill-tokens"), "16384");
  EXPECT_EQ(arg(w, "--max-running-requests"), "<absent>");
  EXPECT_EQ(arg(w, "--page-size"), "1");
  EXPECT_EQ(arg(w, "--disable-radix-cache"), "<absent>");
  EXPECT_EQ(arg(w, "--disable-overlap-schedule"), "<absent>");
  EXPECT_EQ(arg(w, "--max-total-tokens"), "<absent>");
  // Under drafts the 48 running requests are SGLang's own: written for one server (a release
  // before the rule runs the same), left to SGLang under disaggregation (written, its PD hook
  // would reserve decode slots besides); a limit given is written.
  serving::ServeConfig drafted = config(EngineKind::sglang, sys, 1);
  serving::settle_draft_limits(drafted.engine, 2);
  ASSERT_EQ(drafted.engine.max_num_seqs, 48);
  EXPECT_EQ(arg(launch_plan(m, drafted, LaunchTarget::sglang, {"x", ""}).workers[0], "--max-running-requests"), "48");
  drafted.disagg.prefill = drafted.disagg.decode = 1;
  const LaunchPlan pd = launch_plan(m, drafted, LaunchTarget::sglang, {"x", ""});
  ASSERT_FALSE(pd.workers.empty());
  for (const LaunchWorker& pw : pd.workers) EXPECT_EQ(arg(pw, "--max-running-requests"), "<absent>");
  serving::ServeConfig limited = config(EngineKind::sglang, sys, 1);
  limited.engine.max_num_seqs = 64;
  serving::settle_draft_limits(limited.engine, 2);
  EXPECT_EQ(arg(launch_plan(m, limited, LaunchTarget::sglang, {"x", ""}).workers[0], "--max-running-requests"), "64");
  // A cache given in blocks (--kv-blocks 1000) of 16-token pages: SGLang's pool is in tokens,
  // 1000 x 16 = 16000.
  serving::ServeConfig sized = config(EngineKind::sglang, sys, 1);
  sized.engine.kv_block = 16;
  sized.engine.kv_blocks_override = 1000;
  const LaunchPlan ps = launch_plan(m, sized, LaunchTarget::sglang, {"x", ""});
  expect_listed(ps);
  EXPECT_EQ(arg(ps.workers[0], "--max-total-tokens"), "16000");
  EXPECT_EQ(arg(ps.workers[0], "--page-size"), "16");
  // 0.3: overlap opt-in and off in the preset, so nothing; no --page-size; an e4m3 cache has no
  // flag (e5m2 only), an e5m2 one does.
  serving::ServeConfig old = config(EngineRef{EngineKind::sglang, 3}, sys, 1);
  const LaunchPlan p3 = launch_plan(m, old, LaunchTarget::sglang, {"x", ""});
  expect_listed(p3);
  EXPECT_EQ(p3.release, "0.3");
  EXPECT_EQ(arg(p3.workers[0], "--page-size"), "<absent>");
  EXPECT_EQ(arg(p3.workers[0], "--enable-overlap-schedule"), "<absent>");
  old.forward.precision.kv_cache = DType::fp8_e4m3;
  EXPECT_THROW(launch_plan(m, old, LaunchTarget::sglang, {"x", ""}), InputError);
  old.forward.precision.kv_cache = DType::fp8_e5m2;
  EXPECT_EQ(arg(launch_plan(m, old, LaunchTarget::sglang, {"x", ""}).workers[0], "--kv-cache-dtype"), "fp8_e5m2");
}

// TensorRT-LLM's preset: max_batch_size 2048, max_num_tokens 8192, free fraction 0.9; in the
// YAML chunked prefill off, block reuse on, graphs of decode batches up to 128 without padding,
// the overlap scheduler on.
TEST(Launch, TrtllmServeAndItsYaml) {
  const model::ModelConfig m = io::resolve_model("llama-3.1-8b");
  const hw::System sys = testing::catalog_system("b200");
  serving::ServeConfig c = config(EngineKind::trtllm, sys, 1);
  c.forward.precision.kv_cache = DType::fp8_e4m3;
  const LaunchPlan p = launch_plan(m, c, LaunchTarget::trtllm, {"meta-llama/Llama-3.1-8B", ""});
  expect_listed(p);
  const LaunchWorker& w = p.workers[0];
  EXPECT_EQ(w.command, (std::vector<std::string>{"trtllm-serve", "meta-llama/Llama-3.1-8B"}));
  EXPECT_EQ(arg(w, "--backend"), "pytorch");
  EXPECT_EQ(arg(w, "--max_batch_size"), "2048");
  EXPECT_EQ(arg(w, "--max_num_tokens"), "8192");
  EXPECT_EQ(arg(w, "--kv_cache_free_gpu_memory_fraction"), "0.9");
  EXPECT_EQ(arg(w, "--extra_llm_api_options"), "replica-extra-llm-api-config.yml");
  EXPECT_EQ(yaml(w, "enable_chunked_prefill"), "false");
  EXPECT_EQ(yaml(w, "kv_cache_config.enable_block_reuse"), "true");
  EXPECT_EQ(yaml(w, "kv_cache_config.dtype"), "fp8");
  EXPECT_EQ(yaml(w, "cuda_graph_config.max_batch_size"), "128");
  EXPECT_EQ(yaml(w, "cuda_graph_config.enable_padding"), "false");
  EXPECT_EQ(yaml(w, "disable_overlap_scheduler"), "false");
  // No cache-size key in the release's list: --kv-blocks 1000 of 32-token blocks is a note
  // naming 32000 tokens, not a flag.
  serving::ServeConfig sized = c;
  sized.engine.kv_blocks_override = 1000;
  sized.engine.kv_block = 32;
  const LaunchPlan ps = launch_plan(m, sized, LaunchTarget::trtllm, {"x", ""});
  expect_listed(ps);
  EXPECT_TRUE(std::any_of(ps.notes.begin(), ps.notes.end(), [](const std::string& n) {
    return n.find("1000 blocks") != std::string::npos && n.find("32000 tokens") != std::string::npos;
  })) << (ps.notes.empty() ? "" : ps.notes.back());
  // The YAML as written: nested under its parents.
  const std::vector<report::LaunchFile> files = report::launch_files(p, {});
  const auto y = std::find_if(files.begin(), files.end(), [](const report::LaunchFile& f) { return f.name == "replica-extra-llm-api-config.yml"; });
  ASSERT_NE(y, files.end());
  EXPECT_NE(y->text.find("kv_cache_config:\n  enable_block_reuse: true\n  dtype: fp8\n"), std::string::npos) << y->text;
  EXPECT_NE(y->text.find("cuda_graph_config:\n  max_batch_size: 128\n  enable_padding: false\n"), std::string::npos) << y->text;
  // A run padded to a list (--graph-sizes, serving.md#graph-padding) launches with that list.
  serving::ServeConfig listed = c;
  listed.engine.graph_sizes = {1, 8, 64};
  listed.engine.graph_exact_sizes = false;
  const LaunchPlan pl = launch_plan(m, listed, LaunchTarget::trtllm, {"x", ""});
  expect_listed(pl);
  EXPECT_EQ(yaml(pl.workers[0], "cuda_graph_config.batch_sizes"), "[1, 8, 64]");
  EXPECT_EQ(yaml(pl.workers[0], "cuda_graph_config.enable_padding"), "true");
}

// A disaggregated fleet: the prefill and decode instances, each with its own plan, the KV
// transfer on both (vLLM's NIXL connector, SGLang's disaggregation mode, TensorRT-LLM's cache
// transceiver).
TEST(Launch, DisaggregatedPrefillAndDecodeWorkers) {
  const model::ModelConfig m = io::resolve_model("llama-3.1-70b");
  const hw::System sys = testing::catalog_system("h200");
  for (const LaunchTarget t : {LaunchTarget::vllm, LaunchTarget::sglang, LaunchTarget::trtllm}) {
    serving::ServeConfig c = config(engine_kind(t), sys, 2);
    c.disagg.prefill = 3;
    c.disagg.decode = 1;
    c.disagg.decode_tp = 8;
    c.disagg.decode_engine = serving::engine_preset(engine_kind(t), sys.chip, 8);
    const LaunchPlan p = launch_plan(m, c, t, {"meta-llama/Llama-3.1-70B", ""});
    expect_listed(p);
    ASSERT_EQ(p.workers.size(), 2u);
    EXPECT_EQ(p.workers[0].role, LaunchRole::prefill);
    EXPECT_EQ(p.workers[0].instances, 3);
    EXPECT_EQ(p.workers[0].gpus_per_instance, 2);
    EXPECT_EQ(p.workers[1].role, LaunchRole::decode);
    EXPECT_EQ(p.workers[1].instances, 1);
    EXPECT_EQ(p.workers[1].gpus_per_instance, 8);
    if (t == LaunchTarget::vllm) {
      EXPECT_EQ(arg(p.workers[1], "--tensor-parallel-size"), "8");
      EXPECT_EQ(nlohmann::json::parse(arg(p.workers[0], "--kv-transfer-config"))["kv_connector"], "NixlConnector");
    } else if (t == LaunchTarget::sglang) {
      EXPECT_EQ(arg(p.workers[0], "--disaggregation-mode"), "prefill");
      EXPECT_EQ(arg(p.workers[1], "--disaggregation-mode"), "decode");
      EXPECT_EQ(arg(p.workers[1], "--tp-size"), "8");
    } else {
      EXPECT_EQ(yaml(p.workers[1], "cache_transceiver_config.backend"), "DEFAULT");
      EXPECT_EQ(arg(p.workers[1], "--extra_llm_api_options"), "decode-extra-llm-api-config.yml");
    }
  }
}

// Every combination of plan and knobs on every preset: a launch, when the release has one, uses
// only listed flags, keys and values; otherwise one clear InputError naming --emit.
TEST(Launch, EveryEmittedFlagIsInItsReleaseList) {
  const model::ModelConfig dense = io::resolve_model("llama-3.1-70b");
  const model::ModelConfig moe = io::resolve_model("mixtral-8x7b");
  const model::ModelConfig draft = io::resolve_model("llama-3.1-8b");
  const model::ModelConfig mtp = model::mtp_draft(dense);
  const hw::System sys = testing::catalog_system("h100-sxm");
  int plans = 0, refused = 0;
  for (const EngineRef e : {EngineRef{EngineKind::vllm}, EngineRef{EngineKind::vllm, 13}, EngineRef{EngineKind::sglang},
                            EngineRef{EngineKind::sglang, 3}, EngineRef{EngineKind::trtllm}}) {
    const LaunchTarget target = e.kind == EngineKind::vllm ? LaunchTarget::vllm : e.kind == EngineKind::sglang ? LaunchTarget::sglang : LaunchTarget::trtllm;
    for (const model::ModelConfig* m : {&dense, &moe}) {
      for (const auto& [tp, ep] : {std::pair{1, 1}, {4, 1}, {1, 8}, {2, 2}}) {
        if (ep > 1 && !m->is_moe()) continue;
        for (int knobs = 0; knobs < 64; ++knobs) {
          serving::ServeConfig c = config(e, sys, tp, ep);
          if (knobs & 1) c.forward.precision.weight = DType::fp8_e4m3;
          if (knobs & 2) c.forward.precision.kv_cache = (knobs & 32) ? DType::fp8_e5m2 : DType::fp8_e4m3;
          if (knobs & 4) c.engine.chunked_prefill = !c.engine.chunked_prefill, c.engine.prefix_caching = !c.engine.prefix_caching;
          if (knobs & 8) c.engine.decode_graphs = c.engine.mixed_graphs = serving::GraphMode::eager, c.engine.kv_blocks_override = 1000;
          if (knobs & 16) {
            c.spec.k = 2;
            c.spec.draft = (knobs & 32) ? &mtp : &draft;
            c.spec.mtp = (knobs & 32) != 0;
          }
          if ((knobs & 48) == 48) c.disagg.prefill = 2, c.disagg.decode = 1;
          try {
            const LaunchPlan p = launch_plan(*m, c, target, {"org/model", "org/draft"});
            expect_listed(p);
            ++plans;
          } catch (const InputError& err) {
            EXPECT_NE(std::string(err.what()).find("--emit"), std::string::npos) << err.what();
            ++refused;
          }
        }
      }
    }
  }
  EXPECT_GT(plans, 500);
  EXPECT_GT(refused, 0);
}

TEST(Launch, OnRocmTheScriptSwitchesAitersKernelsOnAsThePresetRanThem) {
  // On the MI300X (gfx942, a HIP chip) vLLM's and SGLang's presets run AITER's kernels (the
  // chip's block-fp8 GEMM curve is AITER's CK kernel's): each worker exports the engine's switch,
  // off by default (VLLM_ROCM_USE_AITER, SGLANG_USE_AITER), and a note says why; the script
  // writes it before the command. On an H100 neither.
  const model::ModelConfig m = io::resolve_model("deepseek-r1");
  hw::System mi = testing::catalog_system("mi300x");
  mi.chips = 8;
  for (const auto& [target, var] : {std::pair{LaunchTarget::vllm, "VLLM_ROCM_USE_AITER"}, std::pair{LaunchTarget::sglang, "SGLANG_USE_AITER"}}) {
    SCOPED_TRACE(var);
    const LaunchPlan p = launch_plan(m, config(EngineRef{engine_kind(target), 0}, mi, 8), target, {"deepseek-ai/DeepSeek-R1", ""});
    expect_listed(p);
    ASSERT_EQ(p.workers.size(), 1u);
    ASSERT_EQ(p.workers[0].env.size(), 1u);
    EXPECT_EQ(p.workers[0].env[0].flag, var);
    EXPECT_EQ(p.workers[0].env[0].value, "1");
    const std::string lead = std::string("ROCm: ") + var + "=1";  // (a lambda takes no structured binding: clang 14)
    EXPECT_TRUE(std::any_of(p.notes.begin(), p.notes.end(), [&](const std::string& n) { return n.rfind(lead, 0) == 0; }));
    const std::vector<report::LaunchFile> files = report::launch_files(p, {});
    const auto sh = std::find_if(files.begin(), files.end(), [](const report::LaunchFile& f) { return f.name == "replica.sh"; });
    ASSERT_NE(sh, files.end());
    const std::size_t exported = sh->text.find(std::string("\nexport ") + var + "=1\n"), exec = sh->text.find("\nexec ");
    EXPECT_NE(exported, std::string::npos) << sh->text;
    EXPECT_LT(exported, exec) << sh->text;
  }
  hw::System h100 = testing::catalog_system("h100-sxm");
  h100.chips = 8;
  const LaunchPlan p = launch_plan(m, config(EngineKind::vllm, h100, 8), LaunchTarget::vllm, {"deepseek-ai/DeepSeek-R1", ""});
  EXPECT_TRUE(p.workers[0].env.empty());
  EXPECT_FALSE(config(EngineKind::vllm, h100, 8).engine.rocm_aiter);
}

TEST(Launch, TheScriptAsksTheEngineForTheRunsAllReduceFusion) {
  // docs/serving.md#allreduce-norm: where the run's fusion of each all-reduce with the norm after
  // it differs from what the engine's model code does unasked, the script asks for the run's.
  // TensorRT-LLM fuses DeepSeek-R1's unasked: run apart, its worker exports
  // TRTLLM_DEEPSEEK_EAGER_FUSION_DISABLED=1 (Llama-3.1-70B's: TRTLLM_LLAMA_EAGER_FUSION_DISABLED);
  // run fused, nothing. SGLang fuses DeepSeek's unasked and not Llama's: Llama run fused gets
  // --enable-flashinfer-allreduce-fusion; DeepSeek run apart a note (no flag of the release
  // stops its rule). vLLM's presets fuse nothing: a run fused gets a note.
  hw::System h200 = testing::catalog_system("h200");
  h200.chips = 8;
  const model::ModelConfig r1 = io::resolve_model("deepseek-r1"), llama = io::resolve_model("llama-3.1-70b");
  const auto cfg = [&](EngineKind k, const model::ModelConfig& m, bool fused) {
    serving::ServeConfig c = config(k, h200, 8);
    c.engine = serving::engine_preset(k, h200.chip, 8, m);
    c.engine.allreduce_norm = fused;
    return c;
  };
  const auto has_note = [](const LaunchPlan& p, const char* lead) {
    return std::any_of(p.notes.begin(), p.notes.end(), [&](const std::string& n) { return n.rfind(lead, 0) == 0; });
  };
  for (const bool deepseek : {true, false}) {
    const model::ModelConfig& m = deepseek ? r1 : llama;
    const char* var = deepseek ? "TRTLLM_DEEPSEEK_EAGER_FUSION_DISABLED" : "TRTLLM_LLAMA_EAGER_FUSION_DISABLED";
    EXPECT_TRUE(cfg(EngineKind::trtllm, m, true).engine.allreduce_norm_default) << var;
    // (Beside TRTLLM_ENABLE_PDL, which every TensorRT-LLM script says: #pdl.)
    const LaunchPlan apart = launch_plan(m, cfg(EngineKind::trtllm, m, false), LaunchTarget::trtllm, {"m", ""});
    ASSERT_EQ(apart.workers[0].env.size(), 2u) << var;
    EXPECT_EQ(apart.workers[0].env[0].flag, var);
    EXPECT_EQ(apart.workers[0].env[0].value, "1");
    const LaunchPlan fused = launch_plan(m, cfg(EngineKind::trtllm, m, true), LaunchTarget::trtllm, {"m", ""});
    ASSERT_EQ(fused.workers[0].env.size(), 1u) << var;
    EXPECT_EQ(fused.workers[0].env[0].flag, "TRTLLM_ENABLE_PDL");
  }
  const auto flagged = [](const LaunchPlan& p) {
    const auto& a = p.workers[0].args;
    return std::any_of(a.begin(), a.end(), [](const LaunchArg& x) { return x.flag == "--enable-flashinfer-allreduce-fusion"; });
  };
  const LaunchPlan sgl_llama = launch_plan(llama, cfg(EngineKind::sglang, llama, true), LaunchTarget::sglang, {"m", ""});
  expect_listed(sgl_llama);
  EXPECT_TRUE(flagged(sgl_llama));
  EXPECT_FALSE(flagged(launch_plan(r1, cfg(EngineKind::sglang, r1, true), LaunchTarget::sglang, {"m", ""})));
  EXPECT_TRUE(has_note(launch_plan(r1, cfg(EngineKind::sglang, r1, false), LaunchTarget::sglang, {"m", ""}), "all-reduce and norm apart"));
  EXPECT_TRUE(has_note(launch_plan(llama, cfg(EngineKind::vllm, llama, true), LaunchTarget::vllm, {"m", ""}), "all-reduces fused"));
  EXPECT_FALSE(has_note(launch_plan(llama, cfg(EngineKind::vllm, llama, false), LaunchTarget::vllm, {"m", ""}), "all-reduces fused"));
}

TEST(Launch, TheScriptTurnsProgrammaticDependentLaunchOffWhereTheRunHadItOff) {
  // docs/cost-model.md#pdl: TensorRT-LLM 1.2 launches its own kernels with PDL unasked, as the
  // preset does, and releases before only when asked (trtllm@1.1): the script says the run's
  // either way, TRTLLM_ENABLE_PDL=1 or 0. SGLang's and vLLM's below.
  hw::System b200 = testing::catalog_system("b200");
  b200.chips = 8;
  const model::ModelConfig r1 = io::resolve_model("deepseek-r1");
  const auto cfg = [&](EngineKind k, bool pdl) {
    serving::ServeConfig c = config(k, b200, 8);
    c.engine = serving::engine_preset(k, b200.chip, 8, r1);
    c.engine.pdl = pdl;
    return c;
  };
  EXPECT_TRUE(serving::engine_preset(EngineKind::trtllm, b200.chip, 8, r1).pdl);
  EXPECT_TRUE(serving::engine_preset(EngineKind::sglang, b200.chip, 8, r1).pdl);
  EXPECT_FALSE(serving::engine_preset(EngineKind::vllm, b200.chip, 8, r1).pdl);
  // Not a CUDA GPU of compute capability 9.0 or later: no engine's preset has it.
  EXPECT_FALSE(serving::engine_preset(EngineKind::trtllm, testing::catalog_system("a100-80gb").chip, 8, r1).pdl);
  EXPECT_FALSE(serving::engine_preset(EngineKind::sglang, testing::catalog_system("mi300x").chip, 8, r1).pdl);
  const LaunchPlan off = launch_plan(r1, cfg(EngineKind::trtllm, false), LaunchTarget::trtllm, {"m", ""});
  expect_listed(off);
  ASSERT_EQ(off.workers[0].env.size(), 1u);
  EXPECT_EQ(off.workers[0].env[0].flag, "TRTLLM_ENABLE_PDL");
  EXPECT_EQ(off.workers[0].env[0].value, "0");
  const LaunchPlan on = launch_plan(r1, cfg(EngineKind::trtllm, true), LaunchTarget::trtllm, {"m", ""});
  ASSERT_EQ(on.workers[0].env.size(), 1u);
  EXPECT_EQ(on.workers[0].env[0].value, "1");
  // TensorRT-LLM 0.19-1.1 (trtllm@1.1): opt-in, its preset off; the engine flow of 0.9-0.15 too.
  EXPECT_FALSE(serving::engine_preset(serving::EngineRef{EngineKind::trtllm, serving::kTrtllmOptInPdlVersion}, b200.chip, 8, r1).pdl);
  // Its script takes the PyTorch backend's flag list and says the run's off.
  serving::ServeConfig c11 = config(EngineKind::trtllm, b200, 8);
  c11.engine = serving::engine_preset(serving::EngineRef{EngineKind::trtllm, serving::kTrtllmOptInPdlVersion}, b200.chip, 8, r1);
  const LaunchPlan p11 = launch_plan(r1, c11, LaunchTarget::trtllm, {"m", ""});
  expect_listed(p11);
  EXPECT_EQ(p11.preset, "trtllm@1.1");
  EXPECT_EQ(p11.flags_preset, "trtllm");
  ASSERT_EQ(p11.workers[0].env.size(), 1u);
  EXPECT_EQ(p11.workers[0].env[0].value, "0");
  EXPECT_FALSE(serving::engine_preset(serving::EngineRef{EngineKind::trtllm, serving::kTrtllmEnginesVersion}, b200.chip, 8, r1).pdl);
  const auto has_note = [](const LaunchPlan& p, const char* lead) {
    return std::any_of(p.notes.begin(), p.notes.end(), [&](const std::string& n) { return n.rfind(lead, 0) == 0; });
  };
  // vLLM's preset launches none so: a run with it on gets a note.
  EXPECT_TRUE(has_note(launch_plan(r1, cfg(EngineKind::vllm, true), LaunchTarget::vllm, {"m", ""}), "kernels launched with programmatic"));
  EXPECT_FALSE(has_note(launch_plan(r1, cfg(EngineKind::vllm, false), LaunchTarget::vllm, {"m", ""}), "kernels launched with programmatic"));
  // SGLang's launcher turns it on for FlashInfer's kernels unless TRTLLM_ENABLE_PDL is 0: a run
  // with it off exports that, with a note (its own norms keep it); on, nothing.
  const LaunchPlan sg_off = launch_plan(r1, cfg(EngineKind::sglang, false), LaunchTarget::sglang, {"m", ""});
  expect_listed(sg_off);
  ASSERT_EQ(sg_off.workers[0].env.size(), 1u);
  EXPECT_EQ(sg_off.workers[0].env[0].flag, "TRTLLM_ENABLE_PDL");
  EXPECT_EQ(sg_off.workers[0].env[0].value, "0");
  EXPECT_TRUE(has_note(sg_off, "kernels launched without programmatic"));
  const LaunchPlan sg_on = launch_plan(r1, cfg(EngineKind::sglang, true), LaunchTarget::sglang, {"m", ""});
  EXPECT_TRUE(sg_on.workers[0].env.empty());
  EXPECT_FALSE(has_note(sg_on, "kernels launched"));
}

TEST(Launch, TrtllmNamesTheMoeBackendWhereItsDefaultDoesNotRunTheExperts) {
  // docs/deploy.md#moe-backend: TensorRT-LLM's default MoE backend runs fp8 block-scaled experts
  // on Hopper alone. DeepSeek-R1's fp8 checkpoint on B200s (arch sm_100) and on a GB200 NVL72
  // (sm_100) takes DEEPGEMM up to EP 8 and WIDEEP past it, each with its note; on H200s (sm_90),
  // Llama's 16-bit checkpoint on B200s, DeepSeek on B200s in fp4 by flag (another checkpoint,
  // NVFP4) and the TensorRT engine flow nothing. trtllm@1.1 takes the PyTorch backend's list and
  // the same backend. Any checkpoint's fp8 blocks do (the limit is the kernel's): Qwen3-30B-A3B
  // with a [128, 128] fp8 quantization_config too. A file without `arch` is taken for Blackwell
  // by its fp4 products: the B200's with `arch` cleared still is, the H200's is not. The run's
  // JSON (its resolved engine, serving::moe_backend) says what the launch writes.
  const model::ModelConfig r1 = io::resolve_model("deepseek-r1"), llama = io::resolve_model("llama-3.1-70b");
  model::ModelConfig qwen_fp8 = io::resolve_model("qwen3-30b-a3b");
  qwen_fp8.quantized = true;
  qwen_fp8.quant.dtype = DType::fp8_e4m3;
  qwen_fp8.quant.scale_bits_per_weight = 32.0 / (128 * 128);
  const auto backend = [](const LaunchPlan& p, std::size_t worker = 0) { return yaml(p.workers[worker], "moe_config.backend"); };
  const auto has_note = [](const LaunchPlan& p, const char* lead) {
    return std::count_if(p.notes.begin(), p.notes.end(), [&](const std::string& n) { return n.rfind(lead, 0) == 0; });
  };
  const auto run = [&](const model::ModelConfig& m, hw::System sys, std::int64_t tp, std::int64_t ep, EngineRef engine = EngineKind::trtllm) {
    sys.chips = static_cast<int>(tp * ep);
    serving::ServeConfig c = config(engine, sys, tp, ep);
    c.engine = serving::engine_preset(engine, sys.chip, tp, m);
    return c;
  };
  const auto plan = [&](const model::ModelConfig& m, const serving::ServeConfig& c) {
    const LaunchPlan p = launch_plan(m, c, LaunchTarget::trtllm, {"m", ""});
    expect_listed(p);
    // The run's engine, resolved for its layout, names the same backend.
    const std::string_view resolved = serving::moe_backend(c.engine, m, c.forward);
    EXPECT_EQ(backend(p), resolved.empty() ? "<absent>" : std::string(resolved));
    return p;
  };
  hw::System b200 = testing::catalog_system("b200"), h200 = testing::catalog_system("h200"), gb200 = testing::catalog_system("gb200-nvl72");
  EXPECT_EQ(b200.chip.arch, "sm_100");
  EXPECT_EQ(h200.chip.arch, "sm_90");
  EXPECT_EQ(serving::engine_preset(EngineKind::trtllm, b200.chip, 8, r1).moe_backend, "DEEPGEMM");
  const LaunchPlan deepgemm = plan(r1, run(r1, b200, 8, 1));
  EXPECT_EQ(backend(deepgemm), "DEEPGEMM");
  EXPECT_EQ(has_note(deepgemm, "moe_config.backend DEEPGEMM"), 1);
  const LaunchPlan wide = plan(r1, run(r1, gb200, 1, 16));
  EXPECT_EQ(backend(wide), "WIDEEP");
  EXPECT_EQ(has_note(wide, "moe_config.backend WIDEEP"), 1);
  EXPECT_EQ(backend(plan(r1, run(r1, gb200, 1, 8))), "DEEPGEMM");
  EXPECT_EQ(backend(plan(r1, run(r1, h200, 8, 1))), "<absent>");
  EXPECT_EQ(backend(plan(llama, run(llama, b200, 8, 1))), "<absent>");
  EXPECT_EQ(backend(plan(qwen_fp8, run(qwen_fp8, b200, 4, 1))), "DEEPGEMM");
  EXPECT_EQ(backend(plan(r1, run(r1, b200, 8, 1, EngineRef{EngineKind::trtllm, serving::kTrtllmOptInPdlVersion}))), "DEEPGEMM");
  serving::ServeConfig fp4 = run(r1, b200, 8, 1);
  fp4.forward.precision.weight = DType::fp4;
  EXPECT_EQ(backend(plan(r1, fp4)), "<absent>");
  EXPECT_EQ(serving::engine_preset(serving::EngineRef{EngineKind::trtllm, serving::kTrtllmEnginesVersion}, b200.chip, 8, r1).moe_backend, "");
  // Disaggregated: each instance's own, each note once. Prefill at EP 8, decode at EP 16.
  serving::ServeConfig dg = run(r1, gb200, 1, 8);
  dg.disagg.prefill = dg.disagg.decode = 1;
  dg.disagg.decode_ep = 16;
  const LaunchPlan both = launch_plan(r1, dg, LaunchTarget::trtllm, {"m", ""});
  expect_listed(both);
  ASSERT_EQ(both.workers.size(), 2u);
  EXPECT_EQ(backend(both, 0), "DEEPGEMM");
  EXPECT_EQ(backend(both, 1), "WIDEEP");
  EXPECT_EQ(has_note(both, "moe_config.backend DEEPGEMM"), 1);
  EXPECT_EQ(has_note(both, "moe_config.backend WIDEEP"), 1);
  hw::System unnamed_b200 = b200, unnamed_h200 = h200;
  unnamed_b200.chip.arch.clear();
  unnamed_h200.chip.arch.clear();
  EXPECT_TRUE(hw::is_sm100_family(unnamed_b200.chip));
  EXPECT_FALSE(hw::is_sm100_family(unnamed_h200.chip));
  EXPECT_EQ(backend(plan(r1, run(r1, unnamed_b200, 8, 1))), "DEEPGEMM");
  EXPECT_EQ(backend(plan(r1, run(r1, unnamed_h200, 8, 1))), "<absent>");
  EXPECT_FALSE(hw::is_sm100_family(testing::catalog_system("mi325x").chip));
}

TEST(Launch, AnotherEngineThanTheSimulationsIsRefused) {
  const model::ModelConfig m = io::resolve_model("llama-3.1-8b");
  const hw::System sys = testing::catalog_system("h100-sxm");
  try {
    launch_plan(m, config(EngineKind::vllm, sys, 1), LaunchTarget::sglang, {"x", ""});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--emit sglang: the simulation ran vllm: give --engine sglang to size the deployment on the engine it launches");
  }
}

}  // namespace
}  // namespace ridgeline::planning
