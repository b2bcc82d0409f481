// Engine launches of a serving configuration (docs/deploy.md): each knob of the simulation as
// the flag, YAML key or value of the release its preset follows, checked against that
// release's flag list.
#include "ridgeline/planning/launch.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

#include "ridgeline/core/error.hpp"
#include "ridgeline/io/engine_cli.hpp"

namespace ridgeline::planning {

namespace {

using serving::EngineConfig;
using serving::EngineKind;

// A number as an engine parses it: integers without a point, fractions to 4 digits.
std::string num(double v) { return fmt::format("{:.4g}", v); }
std::string num(std::int64_t v) { return fmt::format("{}", v); }

// Builds one worker's flags, refusing any its release's list does not have: a flag the
// program writes and the engine would reject is a bug (an internal error, not bad input).
class WorkerBuilder {
 public:
  WorkerBuilder(const io::EngineCliSpec& cli, LaunchWorker& w) : cli_(cli), w_(w) {}
  void flag(const std::string& f, const std::string& value = "") {
    if (!cli_.has_flag(f)) throw std::logic_error(fmt::format("launch: {} is not in the flag list of {} {}", f, cli_.engine, cli_.release));
    if (!cli_.allows(f, value)) throw std::logic_error(fmt::format("launch: {} {} is not a listed value", f, value));
    w_.args.push_back({f, value});
  }
  void yaml(const std::string& key, const std::string& value) {
    if (!cli_.has_yaml_key(key)) throw std::logic_error(fmt::format("launch: YAML key {} is not in the list of {} {}", key, cli_.engine, cli_.release));
    if (!cli_.allows(key, value)) throw std::logic_error(fmt::format("launch: {}: {} is not a listed value", key, value));
    w_.yaml.push_back({key, value});
  }

 private:
  const io::EngineCliSpec& cli_;
  LaunchWorker& w_;
};

// --dtype: the activations' dtype (vLLM's and SGLang's weights-and-activations dtype).
std::string torch_dtype(DType d) {
  switch (d) {
    case DType::bf16: return "bfloat16";
    case DType::fp16: return "float16";
    case DType::fp32: return "float32";
    default: return "auto";
  }
}

// The context a launch needs beside its worker's plan.
struct Context {
  const model::ModelConfig& m;
  const serving::ServeConfig& cfg;
  const io::EngineCliSpec& cli;
  const LaunchNames& names;
  LaunchPlan& plan;
  bool disagg = false;
};

// A note added once: each worker of a fleet (prefill and decode, replicas) may reach it.
void note_once(LaunchPlan& plan, std::string note) {
  if (std::find(plan.notes.begin(), plan.notes.end(), note) == plan.notes.end()) plan.notes.push_back(std::move(note));
}

// The weights as simulated against the checkpoint: nullopt when they are the checkpoint's own
// (nothing to ask of the engine), else the dtype asked.
std::optional<DType> asked_weights(const model::ModelConfig& m, const model::ForwardConfig& f) {
  if (!f.precision.weight) return std::nullopt;
  const DType w = *f.precision.weight;
  if (w == m.checkpoint_dtype()) return std::nullopt;
  return w;
}

// A weight dtype the engine quantises to on loading (fp8, from a 16-bit checkpoint), or a note
// that a checkpoint in that format must be given as MODEL.
bool online_fp8(Context& c, DType w, const char* engine) {
  if (w == DType::fp8_e4m3 && !c.m.quantized) return true;
  c.plan.notes.push_back(fmt::format("weights {}: {} has no flag that converts this checkpoint's {} weights on loading; give a "
                                     "checkpoint stored in {} as the model", name(w), engine,
                                     c.m.quantized ? std::string(name(c.m.quant.dtype)) : std::string(name(c.m.weight_dtype)), name(w)));
  return false;
}

// The KV cache dtype when it is not the activations' (nullopt: the engine's auto).
std::optional<DType> asked_kv(const model::ForwardConfig& f) {
  if (!f.precision.kv_cache || *f.precision.kv_cache == f.precision.activation) return std::nullopt;
  return f.precision.kv_cache;
}

// A cache of a given size (--kv-blocks: the simulated replica's) is given to an engine per
// attention data-parallel rank, each rank sizing its own: blocks / ep each, with a note when
// they do not divide (the simulation gives the first blocks mod ep ranks one more:
// serving::rank_pool_blocks).
std::int64_t rank_blocks(Context& c, const model::ForwardConfig& f, const EngineConfig& e, bool decode, const char* engine, const char* flag) {
  if (e.kv_blocks_override % f.ep != 0 && !decode) {
    c.plan.notes.push_back(fmt::format("a cache of {} blocks over {} data-parallel ranks: {} gives each rank the same {} ({} blocks); "
                                       "the simulation gave {} of them one block more",
                                       e.kv_blocks_override, f.ep, engine, flag, e.kv_blocks_override / f.ep, e.kv_blocks_override % f.ep));
  }
  return e.kv_blocks_override / f.ep;
}

// Expert parallelism simulated as an all-to-all of the pairs (--moe-a2a pairs): no engine has
// such a mode without an all-to-all backend; each gathers its ranks' tokens (docs/serving.md#deepep).
void pairs_note(Context& c, const model::ForwardConfig& f, const EngineConfig& e, bool decode, const char* engine) {
  if (f.ep > 1 && e.moe_a2a == model::ForwardConfig::MoeA2A::pairs && !decode) {
    c.plan.notes.push_back(fmt::format("--moe-a2a pairs: {} moves no pairs by default; it gathers every data-parallel rank's tokens "
                                       "to every GPU (what --moe-a2a gather prices), which this file leaves as it is",
                                       engine));
  }
}

// A run with programmatic dependent launch (--pdl on) on an engine whose kernels the preset
// launches without it: no switch of the release does it (docs/cost-model.md#pdl).
void pdl_note(Context& c, const char* engine) {
  c.plan.notes.push_back(fmt::format("kernels launched with programmatic dependent launch, as simulated (--pdl on): {} decides that per kernel "
                                     "in its own code and FlashInfer's (which turns it on by itself on SM90+), not by a flag of the release "
                                     "followed, so its kernels may not all run so",
                                     engine));
}

void vllm_worker(Context& c, const model::ForwardConfig& f, const EngineConfig& e, LaunchWorker& w, bool decode) {
  WorkerBuilder b(c.cli, w);
  b.flag("--port", num(w.port));
  b.flag("--tensor-parallel-size", num(f.tp));
  const bool whole_experts = f.experts == model::ForwardConfig::Experts::expert;
  if (f.ep > 1) {
    // ep groups of tp GPUs, attention data-parallel across them: vLLM's data-parallel ranks with
    // expert parallelism over all of them.
    b.flag("--data-parallel-size", num(f.ep));
    b.flag("--enable-expert-parallel");
    if (f.tp > 1 && !whole_experts && !decode) {
      c.plan.notes.push_back(fmt::format("expert parallelism: vLLM spreads whole experts over all {} GPUs of an instance; the simulation "
                                         "splits them over {} groups and each expert over the {} GPUs of a group (the same bytes per GPU, "
                                         "other all-to-alls): simulate --experts ep for vLLM's layout", f.tp * f.ep, f.ep, f.tp));
    }
  } else if (whole_experts && f.tp > 1) {
    // Attention tensor-parallel, whole experts over the same GPUs.
    b.flag("--enable-expert-parallel");
  }
  pairs_note(c, f, e, decode, "vLLM");
  if (f.ep > 1 && e.moe_a2a == model::ForwardConfig::MoeA2A::deepep) {
    // DeepEP (docs/serving.md#deepep): vLLM runs one of its kernels at every step, the
    // low-latency one on a decode instance, the normal one elsewhere.
    b.flag("--all2all-backend", decode ? "deepep_low_latency" : "deepep_high_throughput");
    if (!decode) {
      c.plan.notes.push_back("DeepEP: vLLM runs its normal kernels (deepep_high_throughput) at every step, where the simulation "
                             "priced the low-latency ones at 128 tokens a GPU or fewer (SGLang's deepep auto mode)");
    }
  }
  b.flag("--dtype", torch_dtype(f.precision.activation));
  if (const auto wd = asked_weights(c.m, f); wd && online_fp8(c, *wd, "vLLM")) b.flag("--quantization", "fp8");
  if (const auto kv = asked_kv(f)) {
    if (*kv == DType::fp8_e4m3) b.flag("--kv-cache-dtype", "fp8");
    else if (*kv == DType::fp8_e5m2) b.flag("--kv-cache-dtype", "fp8_e5m2");
    else throw InputError(fmt::format("--emit vllm: a {} KV cache: vLLM stores the cache in the model's dtype or fp8 (--kv-dtype fp8)", name(*kv)));
  }
  b.flag("--max-num-seqs", num(e.max_num_seqs));
  b.flag("--max-num-batched-tokens", num(e.max_batched_tokens));
  b.flag(e.chunked_prefill ? "--enable-chunked-prefill" : "--no-enable-chunked-prefill");
  b.flag(e.prefix_caching ? "--enable-prefix-caching" : "--no-enable-prefix-caching");
  if (e.pdl && !e.pdl_default && !decode) pdl_note(c, "vLLM");
  if (e.allreduce_norm && !decode) {
    c.plan.notes.push_back("all-reduces fused with their norms, as simulated (--allreduce-fusion on): vLLM's compilation pass fuses them at "
                           "-O2 from 0.17 (PR #34299); the release followed runs them apart");
  }
  b.flag("--block-size", num(e.kv_block));
  b.flag("--gpu-memory-utilization", num(e.kv_memory_fraction));
  // Each rank's EngineCore sizes its own cache and applies the override to it
  // (vllm/v1/core/kv_cache_utils.py may_override_num_blocks, from the CacheConfig every rank shares).
  if (e.kv_blocks_override > 0) b.flag("--num-gpu-blocks-override", num(rank_blocks(c, f, e, decode, "vLLM", "override")));
  if (e.decode_graphs == serving::GraphMode::eager && e.mixed_graphs == serving::GraphMode::eager) {
    b.flag("--enforce-eager");
  } else {
    // Under speculative decoding the size vLLM rounds from (its list to 512 rounded to 498 for two
    // drafts: given 498, vLLM would truncate it to its list's 496 first, and round to 480).
    b.flag("--max-cudagraph-capture-size", num(e.graph_capture_max > 0 ? e.graph_capture_max : e.graph_max_batch));
    if (e.graph_exact_sizes && !decode) c.plan.notes.push_back("graph padding off: vLLM pads a decode batch to the next captured size");
  }
  if (e.preemption == serving::Preemption::swap && !decode) {
    c.plan.notes.push_back("preemption by swapping: vLLM V1 preempts by recomputation only");
  }
  const model::Speculation& sp = c.cfg.spec;
  if (sp.on()) {
    std::string json;
    if (sp.mtp) {
      json = fmt::format(R"({{"method": "mtp", "num_speculative_tokens": {}}})", sp.k);
      if (!c.cli.allows("--speculative-config method", "mtp")) throw std::logic_error("launch: mtp is not a listed method");
    } else {
      if (!c.cli.allows("--speculative-config method", "draft_model")) throw std::logic_error("launch: draft_model is not a listed method");
      json = fmt::format(R"({{"method": "draft_model", "model": "{}", "num_speculative_tokens": {}}})", c.names.draft, sp.k);
    }
    b.flag("--speculative-config", json);
  }
  if (c.disagg) {
    if (!c.cli.allows("--kv-transfer-config kv_connector", "NixlConnector")) throw std::logic_error("launch: NixlConnector is not listed");
    b.flag("--kv-transfer-config", R"({"kv_connector": "NixlConnector", "kv_role": "kv_both"})");
  }
}

void sglang_worker(Context& c, const model::ForwardConfig& f, const EngineConfig& e, LaunchWorker& w, bool decode) {
  WorkerBuilder b(c.cli, w);
  const bool old = serving::is_sglang_03(e.ref());  // 0.3: no --page-size, --ep-size, speculative or disaggregation flags
  b.flag("--model-path", c.names.model);
  b.flag("--port", num(w.port));
  b.flag("--tp-size", num(f.tp * f.ep));
  if (f.ep > 1) {
    if (old) throw InputError("--emit sglang: SGLang 0.3 has no expert parallelism (--ep-size came later): simulate --ep 1 or --engine sglang");
    // ep attention groups of tp GPUs (dp attention), experts over ep groups, each split over tp:
    // SGLang's MoE tensor parallelism is tp-size / ep-size.
    b.flag("--dp-size", num(f.ep));
    b.flag("--enable-dp-attention");
    // SGLang runs a MoE model's dense layers over every GPU on the gathered rows, which its fp8
    // layers refuse where a GPU's share would cut a 128-column block: the simulation priced them on
    // each group's own rows there, split over its tp (model::gathers_dense_mlp), SGLang's
    // --moe-dense-tp-size TP (1, PR #4836, April 2025, for DeepSeek-V3 on 32 GPUs; the attention
    // TP size from PR #23996, April 2026). Its shared experts have no such flag.
    const model::ForwardConfig run = serving::engine_forward(f, e);
    const double gpus = static_cast<double>(f.tp * f.ep), shared = static_cast<double>(c.m.moe.shared_intermediate);
    if (run.gathered_dense && c.m.is_moe()) {
      if (c.m.moe_layer_count() < c.m.layers && !model::gathers_dense_mlp(c.m, run, static_cast<double>(c.m.intermediate))) {
        b.flag("--moe-dense-tp-size", num(f.tp));
        if (f.tp > 1) {
          note_once(c.plan, fmt::format("dense layers: --moe-dense-tp-size {} (each attention group's TP, as simulated) needs an SGLang of "
                                "April 2026 or later (PR #23996); before it only 1, each GPU running them whole on its own rows",
                                f.tp));
        }
      }
      if (c.m.moe.shared_experts > 0 && e.moe_a2a != model::ForwardConfig::MoeA2A::deepep && !model::gathers_dense_mlp(c.m, run, shared)) {
        note_once(c.plan, fmt::format("shared experts: SGLang splits them over all {:g} GPUs, {:g} columns each, which cuts the checkpoint's "
                              "128-column fp8 blocks and its fp8 layers refuse; the simulation priced them on each group's own rows, {}; "
                              "under --moe-a2a deepep SGLang runs them whole on each GPU and loads them",
                              gpus, shared / gpus, f.tp > 1 ? fmt::format("split over its {} GPUs", f.tp) : std::string("whole on each GPU")));
      }
    }
  }
  // Whole experts over every GPU (--experts ep), or over the ep groups (each expert split over tp).
  if (f.ep_size() > 1) {
    if (old) throw InputError("--emit sglang: SGLang 0.3 has no expert parallelism (--ep-size came later): simulate --experts tp or --engine sglang");
    b.flag("--ep-size", num(f.ep_size()));
  }
  pairs_note(c, f, e, decode, "SGLang");
  if (f.ep > 1 && e.moe_a2a == model::ForwardConfig::MoeA2A::deepep) {
    // DeepEP, its mode `auto` (the default): low-latency kernels for decode batches, normal ones
    // for the others (docs/serving.md#deepep).
    if (old) throw InputError("--emit sglang: SGLang 0.3 has no DeepEP: simulate --moe-a2a gather or --engine sglang");
    b.flag("--moe-a2a-backend", "deepep");
  }
  b.flag("--dtype", torch_dtype(f.precision.activation));
  if (const auto wd = asked_weights(c.m, f); wd && online_fp8(c, *wd, "SGLang")) b.flag("--quantization", "fp8");
  if (const auto kv = asked_kv(f)) {
    const std::string v = *kv == DType::fp8_e4m3 ? "fp8_e4m3" : *kv == DType::fp8_e5m2 ? "fp8_e5m2" : std::string(name(*kv));
    if (!c.cli.allows("--kv-cache-dtype", v)) {
      throw InputError(fmt::format("--emit sglang: a {} KV cache: SGLang {} stores an 8-bit cache as {} only: simulate that --kv-dtype", name(*kv),
                                   c.cli.release, old ? "fp8_e5m2" : "fp8_e4m3 or fp8_e5m2"));
    }
    b.flag("--kv-cache-dtype", v);
  }
  b.flag("--mem-fraction-static", num(e.kv_memory_fraction));
  // A cache of a given size: SGLang's pool in tokens, each rank's model runner capping its own
  // at --max-total-tokens (model_runner_kv_cache_mixin.py _apply_token_constraints, per dp worker).
  if (e.kv_blocks_override > 0) b.flag("--max-total-tokens", num(rank_blocks(c, f, e, decode, "SGLang", "--max-total-tokens") * e.kv_block));
  // Under disaggregation not SGLang's own 48 under drafts: given, its PD hook (run before the
  // speculative one in server_args.py) would reserve decode slots besides.
  if (e.max_num_seqs > 0 && !(e.seqs_by_draft && c.disagg)) b.flag("--max-running-requests", num(e.max_num_seqs));
  b.flag("--chunked-prefill-size", e.chunked_prefill ? num(e.max_batched_tokens) : "-1");
  if (e.max_prefill_tokens > 0) b.flag("--max-prefill-tokens", num(e.max_prefill_tokens));
  if (!old) b.flag("--page-size", num(e.kv_block));
  else if (e.kv_block != 1) throw InputError(fmt::format("--emit sglang: --kv-block {}: SGLang 0.3 pages its cache token by token (1)", e.kv_block));
  if (!e.prefix_caching) b.flag("--disable-radix-cache");
  if (e.mixed_chunk) b.flag("--enable-mixed-chunk");
  if (e.decode_graphs == serving::GraphMode::eager) {
    b.flag("--disable-cuda-graph");
  } else {
    if (!old) b.flag("--cuda-graph-max-bs", num(e.graph_max_batch));
    if (e.graph_exact_sizes) b.flag("--disable-cuda-graph-padding");
  }
  if (!old && !e.overlap_scheduling) b.flag("--disable-overlap-schedule");
  if (e.recv_interval > 1) b.flag("--scheduler-recv-interval", num(e.recv_interval));  // (validate: not SGLang 0.3)
  // Each all-reduce with the norm after it in FlashInfer's fused kernel where the run had it and
  // SGLang's auto rule does not (docs/serving.md#allreduce-norm); the other way, no flag of the
  // release followed turns its rule off.
  if (e.allreduce_norm && !e.allreduce_norm_default) b.flag("--enable-flashinfer-allreduce-fusion");
  if (!e.allreduce_norm && e.allreduce_norm_default && !decode) {
    c.plan.notes.push_back("all-reduce and norm apart, as simulated (--allreduce-fusion off): SGLang fuses them for this model on this GPU "
                           "unasked, and the release's flags have no switch to stop it (its later --enforce-disable-flashinfer-allreduce-"
                           "fusion does)");
  }
  // Programmatic dependent launch: its 0.5+ launcher turns it on for FlashInfer's kernels (unless
  // TRTLLM_ENABLE_PDL is 0, in the later releases; docs/cost-model.md#pdl); its sgl-kernel norms
  // keep it on SM90+.
  if (!e.pdl && e.pdl_default) {
    w.env.push_back({"TRTLLM_ENABLE_PDL", "0"});
    if (!decode) {
      c.plan.notes.push_back("kernels launched without programmatic dependent launch, as simulated (--pdl off): TRTLLM_ENABLE_PDL=0 "
                             "stops FlashInfer's where the launcher respects it (some 0.5 releases set it to 1 whatever is given); "
                             "SGLang's own norms still launch with it on SM90+, which no flag changes");
    }
  }
  if (e.pdl && !e.pdl_default && !decode) pdl_note(c, "SGLang");
  if (old && e.overlap_scheduling) b.flag("--enable-overlap-schedule");
  if (e.preemption == serving::Preemption::swap && !decode) c.plan.notes.push_back("preemption by swapping: SGLang retracts requests and recomputes them");
  const model::Speculation& sp = c.cfg.spec;
  if (sp.on()) {
    if (old) throw InputError("--emit sglang: SGLang 0.3 has no speculative decoding");
    if (!sp.mtp) {
      throw InputError("--emit sglang: a draft model: SGLang's speculative algorithms in the flag list are EAGLE, EAGLE3 and NEXTN (MTP); "
                       "simulate --draft mtp or emit vllm");
    }
    // NEXTN: the model's own MTP layers, k steps of one token each: k + 1 tokens verified.
    b.flag("--speculative-algorithm", "NEXTN");
    b.flag("--speculative-num-steps", num(static_cast<std::int64_t>(sp.k)));
    b.flag("--speculative-eagle-topk", "1");
    b.flag("--speculative-num-draft-tokens", num(static_cast<std::int64_t>(sp.k + 1)));
  }
  if (c.disagg) {
    if (old) throw InputError("--emit sglang: SGLang 0.3 has no prefill-decode disaggregation");
    b.flag("--disaggregation-mode", decode ? "decode" : "prefill");
    b.flag("--disaggregation-transfer-backend", "nixl");
  }
}

void trtllm_worker(Context& c, const model::ForwardConfig& f, const EngineConfig& e, LaunchWorker& w, bool decode) {
  WorkerBuilder b(c.cli, w);
  b.flag("--backend", "pytorch");
  b.flag("--port", num(w.port));
  // TensorRT-LLM's tp_size is every GPU of the instance; moe_tp = tp_size / ep_size.
  b.flag("--tp_size", num(f.tp * f.ep));
  if (f.ep_size() > 1) b.flag("--ep_size", num(f.ep_size()));
  pairs_note(c, f, e, decode, "TensorRT-LLM");
  if (f.ep > 1 && e.moe_a2a == model::ForwardConfig::MoeA2A::deepep && !decode) {
    c.plan.notes.push_back("DeepEP: TensorRT-LLM chooses its MoE all-to-all itself (its wide-EP MoE backend, set in the MoE "
                           "config); nothing here sets it");
  }
  b.flag("--max_batch_size", num(e.max_num_seqs));
  b.flag("--max_num_tokens", num(e.max_batched_tokens));
  b.flag("--kv_cache_free_gpu_memory_fraction", num(e.kv_memory_fraction));
  b.flag("--extra_llm_api_options", fmt::format("{}-extra-llm-api-config.yml", name(w.role)));
  if (f.precision.activation != c.m.weight_dtype && f.precision.activation != DType::bf16 && !decode) {
    c.plan.notes.push_back(fmt::format("activations {}: trtllm-serve runs the checkpoint's dtype", name(f.precision.activation)));
  }
  if (const auto wd = asked_weights(c.m, f); wd && !decode) {
    c.plan.notes.push_back(fmt::format("weights {}: TensorRT-LLM reads quantised weights from the checkpoint (an NVIDIA ModelOpt {} export): "
                                       "give it as the model", name(*wd), name(*wd)));
  }
  if (e.kv_blocks_override > 0 && !decode) {
    c.plan.notes.push_back(fmt::format("a cache of {} blocks (--kv-blocks): TensorRT-LLM sizes its cache from the memory fraction; "
                                       "kv_cache_config.max_tokens ({} tokens) is not in the list of the release", e.kv_blocks_override,
                                       e.kv_blocks_override * e.kv_block));
  }
  b.yaml("enable_chunked_prefill", e.chunked_prefill ? "true" : "false");
  b.yaml("kv_cache_config.enable_block_reuse", e.prefix_caching ? "true" : "false");
  if (const auto kv = asked_kv(f)) {
    if (*kv != DType::fp8_e4m3) {
      throw InputError(fmt::format("--emit trtllm: a {} KV cache: TensorRT-LLM's 8-bit cache is fp8 (e4m3): simulate --kv-dtype fp8", name(*kv)));
    }
    b.yaml("kv_cache_config.dtype", "fp8");
  }
  if (e.decode_graphs == serving::GraphMode::eager) {
    b.yaml("cuda_graph_config", "null");
  } else if (!e.graph_sizes.empty()) {
    // The capture list the run padded to (--graph-sizes, or the one TensorRT-LLM generates):
    // given as a list, each size within the engine's limits.
    b.yaml("cuda_graph_config.batch_sizes", fmt::format("[{}]", fmt::join(e.graph_sizes, ", ")));
    b.yaml("cuda_graph_config.enable_padding", "true");
  } else {
    b.yaml("cuda_graph_config.max_batch_size", num(e.graph_max_batch));
    b.yaml("cuda_graph_config.enable_padding", e.graph_exact_sizes ? "false" : "true");
  }
  b.yaml("disable_overlap_scheduler", e.overlap_scheduling ? "false" : "true");
  // The MoE backend where the default does not run the experts (EngineConfig::moe_backend, as
  // serving::moe_backend resolves it for this instance's layout): fp8 blocks on datacenter
  // Blackwell, DEEPGEMM, or WIDEEP past an expert-parallel size of 8; each instance's own.
  if (const std::string_view backend = serving::moe_backend(e, c.m, f); !backend.empty()) {
    b.yaml("moe_config.backend", std::string(backend));
    std::string note =
        backend == "WIDEEP"
            ? "moe_config.backend WIDEEP: TensorRT-LLM's default MoE backend runs fp8 block-scaled experts on Hopper (SM90) alone; its "
              "DeepSeek-R1 deployment guide runs them in WIDEEP (without EPLB) on the GB200 NVL72 past an expert-parallel size of 8. "
              "The simulation priced DeepGEMM's grouped GEMMs, not WIDEEP's own all-to-all"
            : fmt::format("moe_config.backend {}: TensorRT-LLM's default MoE backend runs fp8 block-scaled experts on Hopper (SM90) alone; "
                          "its DeepSeek-R1 deployment guide runs them in DEEPGEMM on B200/GB200 up to an expert-parallel size of 8",
                          backend);
    note_once(c.plan, std::move(note));
  }
  // Its model code fuses each all-reduce with the norm after it for DeepSeek-V3 and for Llama of
  // hidden > 4096 unless the model's switch says not (docs/serving.md#allreduce-norm).
  if (!e.allreduce_norm && e.allreduce_norm_default) {
    w.env.push_back({c.m.model_type == "deepseek_v3" ? "TRTLLM_DEEPSEEK_EAGER_FUSION_DISABLED" : "TRTLLM_LLAMA_EAGER_FUSION_DISABLED", "1"});
  }
  // Programmatic dependent launch as the run had it, said either way: on by default in 1.2.0,
  // opt-in before (docs/cost-model.md#pdl), so the script runs as simulated on either.
  w.env.push_back({"TRTLLM_ENABLE_PDL", e.pdl ? "1" : "0"});
  if (e.allreduce_norm && !e.allreduce_norm_default && !decode) {
    c.plan.notes.push_back("all-reduces fused with their norms, as simulated (--allreduce-fusion on): TensorRT-LLM's model code fuses them for "
                           "DeepSeek-V3 and Llama of hidden > 4096 only, so this model runs them apart");
  }
  if (f.ep > 1) {
    // Attention data parallelism in TensorRT-LLM spans every GPU (attention TP 1).
    if (f.tp == 1) b.yaml("enable_attention_dp", "true");
    else if (!decode) {
      c.plan.notes.push_back(fmt::format("attention: TensorRT-LLM runs it tensor-parallel over all {} GPUs (or data-parallel over all of them); "
                                         "the simulation's {} data-parallel groups of TP {} have no equivalent", f.tp * f.ep, f.ep, f.tp));
    }
  }
  const model::Speculation& sp = c.cfg.spec;
  if (sp.on()) {
    if (!sp.mtp) {
      throw InputError("--emit trtllm: a draft model: the DraftTarget speculative_config changed its keys between releases and is not in "
                       "the list; simulate --draft mtp or emit vllm");
    }
    b.yaml("speculative_config.decoding_type", "MTP");
    b.yaml("speculative_config.num_nextn_predict_layers", num(static_cast<std::int64_t>(sp.k)));
  }
  if (c.disagg) b.yaml("cache_transceiver_config.backend", "DEFAULT");
}

}  // namespace

std::string_view name(LaunchTarget t) noexcept {
  switch (t) {
    case LaunchTarget::vllm: return "vllm";
    case LaunchTarget::sglang: return "sglang";
    case LaunchTarget::trtllm: return "trtllm";
  }
  return "?";
}

std::optional<LaunchTarget> parse_launch_target(std::string_view s) noexcept {
  if (s == "vllm") return LaunchTarget::vllm;
  if (s == "sglang") return LaunchTarget::sglang;
  if (s == "trtllm") return LaunchTarget::trtllm;
  return std::nullopt;
}

serving::EngineKind engine_kind(LaunchTarget t) noexcept {
  switch (t) {
    case LaunchTarget::vllm: return EngineKind::vllm;
    case LaunchTarget::sglang: return EngineKind::sglang;
    case LaunchTarget::trtllm: return EngineKind::trtllm;
  }
  return EngineKind::vllm;
}

std::string_view name(LaunchRole r) noexcept {
  switch (r) {
    case LaunchRole::replica: return "replica";
    case LaunchRole::prefill: return "prefill";
    case LaunchRole::decode: return "decode";
  }
  return "?";
}

LaunchPlan launch_plan(const model::ModelConfig& m, const serving::ServeConfig& cfg, LaunchTarget target, const LaunchNames& names) {
  const EngineConfig& e = cfg.engine;
  if (e.kind != engine_kind(target)) {
    throw InputError(fmt::format("--emit {}: the simulation ran {}: give --engine {} to size the deployment on the engine it launches", name(target),
                                 serving::name(e.kind), name(target)));
  }
  const std::string preset = serving::name(e.ref());
  // A list may serve other releases' presets (trtllm@1.1 takes the PyTorch backend's, read from
  // both copies: data/engines, also_presets).
  const io::EngineCliSpec* cli = io::engine_cli(preset);
  if (cli == nullptr) {
    // Why there is none: TensorRT-LLM's TensorRT engine flow is built, not launched by flags.
    const char* why = e.kind == serving::EngineKind::trtllm
                          ? "its engines are built by trtllm-build, not launched by trtllm-serve's flags; simulate with --engine trtllm "
                            "(the PyTorch backend) to emit a launch"
                          : "launch files are written for the presets whose release's flags are listed (data/engines); simulate with "
                            "one of those";
    throw InputError(fmt::format("--emit {}: no flag list for the preset {} ({}): {}", name(target), preset, e.releases, why));
  }
  LaunchPlan plan;
  plan.target = target;
  plan.preset = preset;
  plan.flags_preset = cli->preset;  // trtllm@1.1 launches as trtllm's list says
  plan.release = cli->release;
  plan.flags_source = cli->source;
  plan.model = names.model;
  Context c{m, cfg, *cli, names, plan, cfg.disagg.on()};
  auto add = [&](LaunchRole role, std::int64_t instances, std::int64_t port, bool decode) {
    const serving::InstancePlan ip = serving::instance_plan(cfg, decode);
    LaunchWorker w;
    w.role = role;
    w.instances = instances;
    w.gpus_per_instance = ip.forward.tp * ip.forward.ep;
    w.port = port;
    w.command = cli->command;
    if (target != LaunchTarget::sglang) w.command.push_back(names.model);  // SGLang's is --model-path
    // ROCm's AITER kernels, off by default in both engines (vllm/envs.py VLLM_ROCM_USE_AITER;
    // python/sglang/srt/environ.py SGLANG_USE_AITER): on as the preset ran them.
    if (ip.engine.rocm_aiter && target != LaunchTarget::trtllm) {
      w.env.push_back({target == LaunchTarget::vllm ? "VLLM_ROCM_USE_AITER" : "SGLANG_USE_AITER", "1"});
    }
    switch (target) {
      case LaunchTarget::vllm: vllm_worker(c, ip.forward, ip.engine, w, decode); break;
      case LaunchTarget::sglang: sglang_worker(c, ip.forward, ip.engine, w, decode); break;
      case LaunchTarget::trtllm: trtllm_worker(c, ip.forward, ip.engine, w, decode); break;
    }
    plan.workers.push_back(std::move(w));
  };
  if (cfg.engine.rocm_aiter) {
    plan.notes.push_back(fmt::format("ROCm: {}=1 (the script exports it): the AITER kernels SGLang's ROCm image and AMD's vLLM guide switch on, as the "
                                     "simulation assumed (its MoE as AITER's fused kernels{}); {} leaves them off without it",
                                     target == LaunchTarget::vllm ? "VLLM_ROCM_USE_AITER" : "SGLANG_USE_AITER",
                                     target == LaunchTarget::vllm ? ", its block-fp8 GEMMs as AITER's CK kernel"
                                                                  : "; SGLang's block-fp8 GEMMs, AITER's Triton kernel on gfx942, priced by the CK kernel's curve",
                                     serving::name(e.kind)));
  }
  if (c.disagg) {
    add(LaunchRole::prefill, cfg.disagg.prefill, 8100, false);
    add(LaunchRole::decode, cfg.disagg.decode, 8200, true);
    plan.notes.push_back(fmt::format("disaggregated: {} prefill and {} decode instances exchange each request's KV cache; a router in front sends "
                                     "every request to a prefill instance, then to a decode instance (Dynamo's frontend or the engine's own "
                                     "prefill-decode router)", cfg.disagg.prefill, cfg.disagg.decode));
  } else {
    add(LaunchRole::replica, cfg.replicas, 8000, false);
    if (cfg.replicas > 1) {
      plan.notes.push_back(fmt::format("{} replicas behind a {} router, as simulated", cfg.replicas, serving::name(cfg.router)));
    }
  }
  if (const std::string bad = unlisted(plan); !bad.empty()) throw std::logic_error("launch: unlisted " + bad);
  return plan;
}

std::string unlisted(const LaunchPlan& plan) {
  const io::EngineCliSpec* cli = io::engine_cli(plan.flags_preset);
  if (cli == nullptr) return "preset " + plan.flags_preset;
  for (const LaunchWorker& w : plan.workers) {
    for (const LaunchArg& a : w.args) {
      if (!cli->has_flag(a.flag)) return a.flag;
      if (!cli->allows(a.flag, a.value)) return a.flag + " " + a.value;
    }
    for (const LaunchYaml& y : w.yaml) {
      if (!cli->has_yaml_key(y.key)) return y.key;
      if (!cli->allows(y.key, y.value)) return y.key + " " + y.value;
    }
  }
  return "";
}

}  // namespace ridgeline::planning
