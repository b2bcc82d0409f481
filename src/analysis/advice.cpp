#include "ridgeline/analysis/advice.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "ridgeline/analysis/fusion.hpp"
#include "ridgeline/analysis/search.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/core/units.hpp"

namespace ridgeline::analysis {

namespace {

std::string t(double s) { return format_quantity(s, Quantity::time); }

void sort_by_gain(std::vector<Advice>& v) {
  std::stable_sort(v.begin(), v.end(), [](const Advice& a, const Advice& b) { return a.gain_s > b.gain_s; });
}

bool looks_like_gemm(const std::string& name) {
  for (const char* k : {"gemm", "Gemm", "GEMM", "matmul", "_mm", "cutlass", "xmma", "sm80_", "sm90_"}) {
    if (name.find(k) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

std::vector<Advice> advise_profile(const profile::Profile& p, const profile::ProfileAnalysis& a, const hw::ChipSpec& chip) {
  std::vector<Advice> out;
  // Seed 004: "GPU util < 40%": the GPU waits on data loading or the host.
  if (p.span_s > 0 && p.idle_s > 0.2 * p.span_s) {
    out.push_back({"gpu-idle",
                   fmt::format("the GPU is idle {:.0f}% of the {} timeline ({:.0f} gaps)", 100 * p.idle_s / p.span_s, t(p.span_s), p.idle_gaps),
                   p.idle_s, "profile",
                   "find what the host does in the gaps: data loading (more DataLoader workers, pinned memory, DALI), "
                   "synchronisations, or launches (CUDA graphs); at inference, larger or continuous batches",
                   "seed 004, common bottlenecks"});
  }
  // Seed 004: many tiny kernels: launch overhead dominates -> CUDA graphs.
  double tiny = 0, tiny_time = 0;
  for (const auto& k : p.launches) {
    if (k.duration_s < chip.launch_overhead_s) {
      tiny += k.count;
      tiny_time += k.duration_s * k.count;
    }
  }
  if (tiny >= 10 && tiny >= 0.3 * a.total_launches) {
    out.push_back({"tiny-kernels",
                   fmt::format("{:.0f} of {:.0f} kernels run shorter than a {} launch", tiny, a.total_launches, t(chip.launch_overhead_s)),
                   std::max(0.0, tiny * chip.launch_overhead_s - tiny_time), "profile",
                   "replay the step as a CUDA graph (torch.compile mode=\"reduce-overhead\"); with varying shapes capture one "
                   "graph per bucket and pad (see `ridgeline fuse --buckets`), or fuse the kernels",
                   "seed 004, CUDA graphs"});
  }
  // Kernels far from their roof, by the time reaching it would save.
  for (const auto& k : a.kernels) {
    if (k.gap_s <= 0.02 * a.total_kernel_time_s || k.fraction_of_roof >= 0.6 || !k.has_bytes) continue;
    const bool gemm = looks_like_gemm(k.name);
    std::string fix;
    if (k.bound == ops::Bound::memory && gemm) {
      fix = "a memory-bound GEMM: raise the batch past the critical batch, or store weights in int8/fp8 (the critical batch "
            "halves, seed 003)";
    } else if (k.bound == ops::Bound::memory) {
      fix = "memory-bound: fuse it with its neighbours so intermediates stay in registers (seed 000), vectorise its loads";
    } else {
      fix = "compute-bound far below the peak: check it runs on tensor cores in the intended dtype and its tiles fill the SMs";
    }
    const std::string name = k.name.size() > 60 ? k.name.substr(0, 57) + "..." : k.name;
    out.push_back({"far-from-roof",
                   fmt::format("{}: {:.0f} calls, {}, {:.0f}% of its roof ({}-bound)", name, k.count, t(k.time_s),
                               100 * k.fraction_of_roof, ops::name(k.bound)),
                   k.gap_s, "profile", fix, "roofline"});
  }
  sort_by_gain(out);
  return out;
}

std::vector<Advice> advise_inference(const model::ModelConfig& m, const hw::System& sys, const InferenceConfig& cfg,
                                     const InferenceResult& r, BatchModel* served) {
  std::vector<Advice> out;
  const double steps = static_cast<double>(cfg.gen - 1);
  const double B = static_cast<double>(cfg.batch);
  auto alt = std::make_unique<InferenceResult>();
  auto run = [&](InferenceConfig c) {
    infer_core(m, sys, c, *alt);
    return alt->e2e_s;
  };
  if (!r.memory.fits) {
    out.push_back({"does-not-fit",
                   fmt::format("{:.3g} GB needed per chip, {:.3g} GB available", r.memory.total_bytes / 1e9, r.memory.capacity_bytes / 1e9),
                   0, "", "raise --tp, or store weights in fp8/int8/int4 (--weight-dtype) and the KV cache in fp8 (--kv-dtype)",
                   "memory"});
  }
  // The engine serving the users, when one is given: whether it can run them at all.
  const Reject served_fault = served != nullptr ? served->prepare(m, sys, cfg) : Reject::count;
  if (served_fault == Reject::too_long) {
    out.push_back({"prompt-over-budget",
                   fmt::format("the engine runs each prompt whole in one step of its token budget, and a {}-token prompt exceeds "
                               "it: no request is ever served",
                               cfg.prompt),
                   0, "", "turn on chunked prefill (TensorRT-LLM: enable_chunked_prefill) or raise the token budget (max_num_tokens) "
                   "above the prompt", "docs/serving.md#steady-state"});
  }
  // Seed 004: small batch -> launch overhead; CUDA graphs.
  if (!cfg.cuda_graphs && steps >= 1 && r.cuda_graphs_gain_s > 0.05 * r.decode_last.t_realistic_s) {
    out.push_back({"cuda-graphs",
                   fmt::format("a decode step launches {:.0f} kernels ({} of overhead) for {} of work", r.decode_last.launches,
                               t(r.decode_launch_s), t(r.decode_last.t_realistic_s)),
                   r.cuda_graphs_gain_s * steps, "request batch",
                   "capture the decode step as a CUDA graph (--cuda-graphs); pad to graph buckets for varying batch sizes",
                   "seed 004, CUDA graphs (1.5-3x at batch < 32)"});
  }
  // Kernels' fixed times (each class's, docs/cost-model.md#kernel-boundaries): device time per
  // kernel that CUDA graphs do not remove. Fewer kernels remove it: the engines' merged GEMMs and
  // norms (--kernels merged: the projections sharing an input one GEMM, residual adds inside the
  // next norm), sized by pricing the plan merged. Both in CUDA graphs, whatever the plan's
  // setting: the launches are the cuda-graphs rule's.
  if (steps >= 1 && !cfg.forward.merged_kernels) {
    InferenceConfig graphed = cfg;
    graphed.cuda_graphs = true;
    const double e2e = run(graphed), kernels = alt->decode_graph.kernels();
    const double fixed = alt->decode_total.kernel_fixed_s, total = alt->decode_total.t_realistic_s;
    graphed.forward.merged_kernels = true;
    const double gain = e2e - run(graphed), merged_kernels = alt->decode_graph.kernels();
    if (fixed > 0.1 * total && gain > 0 && kernels > merged_kernels) {
      out.push_back({"kernel-boundaries",
                     fmt::format("{} of every {} decode step (in a CUDA graph) is its {:.0f} kernels' fixed times ({} a kernel on "
                                 "average, each at its class's figure, `hw show`; {:.0f}% of the step), which graphs do not remove",
                                 t(fixed / steps), t(total / steps), kernels, t(fixed / steps / kernels), 100 * fixed / total),
                     gain, "request batch",
                     fmt::format("merge the projections that share an input into one GEMM each (Q, K and V; gate and up in a gated MLP) and the "
                                 "residual adds into the next norm, as the serving engines do (--kernels merged): {:.0f} kernels a "
                                 "decode step instead of {:.0f}",
                                 merged_kernels, kernels),
                     "docs/cost-model.md#kernel-boundaries"});
    }
  }
  // Seed 003: decode below the critical batch is memory-bound: larger batches are nearly free.
  if (steps >= 1 && r.decode_total.bound == ops::Bound::memory && r.critical_batch > B && r.max_batch > cfg.batch) {
    InferenceConfig big = cfg;
    big.batch = std::min<std::int64_t>(r.max_batch, static_cast<std::int64_t>(std::ceil(r.critical_batch)));
    big.batch -= big.batch % cfg.forward.ep;
    if (big.batch > cfg.batch && served != nullptr && served_fault == Reject::count) {
      // As an engine serves them: both batches in the continuous-batching steady state.
      big.batch = std::min(big.batch, served->max_batch());
      const ServingPoint now = served->at(B), then = served->at(static_cast<double>(big.batch));
      if (big.batch > cfg.batch && then.fits && now.output_tokens_per_s > 0 && then.output_tokens_per_s > now.output_tokens_per_s) {
        const double per_token_now = 1 / now.output_tokens_per_s, per_token_big = 1 / then.output_tokens_per_s;
        out.push_back({"batch-below-critical",
                       fmt::format("decode is memory-bound at batch {}; its GEMMs turn compute-bound at {:.0f} and the engine's cache "
                                   "holds {} sequences",
                                   cfg.batch, r.critical_batch, served->max_batch()),
                       (per_token_now - per_token_big) * B * static_cast<double>(cfg.gen), "request batch",
                       fmt::format("serve {} users continuously: {:.1f}x the tokens per second, TTFT {} and TPOT {} (now {} and {})",
                                   big.batch, per_token_now / per_token_big, t(then.ttft_s), t(then.tpot_s), t(now.ttft_s),
                                   t(now.tpot_s)),
                       "seed 003, critical batch; docs/serving.md#steady-state"});
      }
    } else if (big.batch > cfg.batch && served == nullptr) {
      const double e2e_big = run(big);
      const double per_token_now = r.e2e_s / (B * static_cast<double>(cfg.gen));
      const double per_token_big = e2e_big / (static_cast<double>(big.batch) * static_cast<double>(cfg.gen));
      out.push_back({"batch-below-critical",
                     fmt::format("decode is memory-bound at batch {}; its GEMMs turn compute-bound at {:.0f} and {} sequences fit",
                                 cfg.batch, r.critical_batch, r.max_batch),
                     (per_token_now - per_token_big) * B * static_cast<double>(cfg.gen), "request batch",
                     fmt::format("serve batch {} (static batches, as infer prices them): {:.1f}x the tokens per second", big.batch,
                                 per_token_now / per_token_big),
                     "seed 003, critical batch"});
    }
  }
  // Seed 003: weights in 8 bits halve the linear layers' bytes and the critical batch (the
  // embedding and the LM head stay 16-bit: docs/models.md#quantised-weights).
  const DType w = cfg.forward.precision.weight.value_or(m.checkpoint_dtype());
  if (bytes(w) >= 2 && r.decode_total.bound == ops::Bound::memory && steps >= 1) {
    InferenceConfig q = cfg;
    q.forward.precision.weight = DType::fp8_e4m3;
    const double e2e_q = run(q);
    if (e2e_q < r.e2e_s) {
      out.push_back({"quantize-weights",
                     fmt::format("decode is memory-bound and reads {}-bit weights", bits(w)), r.e2e_s - e2e_q, "request batch",
                     fmt::format("store the linear layers' weights in fp8 or int8 (--weight-dtype fp8; the embedding and LM head stay "
                                 "16-bit): {:.2f}x the weight bytes, and the critical batch halves",
                                 alt->memory.weights_bytes / r.memory.weights_bytes),
                     "seed 003, int8 weights with bf16 activations"});
    }
  }
  // The KV cache dominates memory: fp8 KV doubles the batch that fits.
  const DType kv = cfg.forward.precision.kv_cache.value_or(cfg.forward.precision.activation);
  if (bytes(kv) >= 2 && r.memory.kv_cache_bytes > 0.3 * r.memory.total_bytes) {
    out.push_back({"fp8-kv-cache",
                   fmt::format("the KV cache is {:.0f}% of the memory per chip", 100 * r.memory.kv_cache_bytes / r.memory.total_bytes), 0, "",
                   "store the KV cache in fp8 (--kv-dtype fp8): half its bytes, nearly twice the sequences per chip", "memory"});
  }
  sort_by_gain(out);
  return out;
}

namespace {

// A plan in train's words, e.g. "tp 2 pp 1 dp 32 ZeRO 3 recompute auto +SP".
std::string plan_words(const TrainPlan& p) {
  return fmt::format("tp {} pp {} dp {}{}{}{} micro-batch {} ZeRO {} recompute {}{}", p.tp, p.pp, p.dp, p.cp > 1 ? fmt::format(" cp {}", p.cp) : "",
                     p.ep > 1 ? fmt::format(" ep {}", p.ep) : "", p.vpp > 1 ? fmt::format(" vpp {}", p.vpp) : "", p.micro_batch, p.zero,
                     name(p.recompute), p.sequence_parallel ? " +SP" : "");
}

// The plans the search finds on the same GPUs, sequence and global batch: the fastest whole,
// and each of its changes to `cfg` alone (evaluated by train), by the time each saves per step.
void better_plans(const model::ModelConfig& m, const hw::System& sys, const TrainConfig& cfg, const TrainResult& r, std::vector<Advice>& out) {
  TrainSearchSpace space;
  space.base = cfg;
  space.base.global_batch = static_cast<std::int64_t>(std::llround(r.tokens_per_step / static_cast<double>(cfg.seq)));
  space.base.dp = 0;
  space.tp_across_nodes = cfg.tp > sys.chip.chips_per_node;
  space.top = 1;
  SearchControl control;
  control.threads = 1;
  TrainSearchResult found;
  try {
    found = search_train(m, sys, space, control);
  } catch (const InputError&) {
    return;  // a space the search does not cover (the plan's own errors were train's)
  }
  if (found.best.empty()) return;
  const TrainPlan& b = found.best.front();
  const double step = r.step_time_s;
  if (r.memory.fits && !(b.step_time_s < 0.98 * step)) return;
  // Each setting that differs, as a flag, and the plan with that change alone.
  struct Change {
    std::string flag;
    TrainConfig cfg;
  };
  std::vector<Change> changes;
  auto change = [&](bool differs, std::string flag, auto apply) {
    if (!differs) return;
    TrainConfig c = cfg;
    c.dp = 0;
    apply(c);
    changes.push_back({std::move(flag), c});
  };
  change(b.tp != cfg.tp, fmt::format("--tp {}", b.tp), [&](TrainConfig& c) { c.tp = b.tp; });
  change(b.pp != cfg.pp, fmt::format("--pp {}", b.pp), [&](TrainConfig& c) { c.pp = b.pp; });
  change(b.cp != cfg.cp, fmt::format("--cp {}", b.cp), [&](TrainConfig& c) { c.cp = b.cp; });
  change(b.ep != cfg.ep, fmt::format("--ep {}", b.ep), [&](TrainConfig& c) { c.ep = b.ep; });
  change(b.vpp != cfg.vpp, fmt::format("--vpp {}", b.vpp), [&](TrainConfig& c) { c.vpp = b.vpp; });
  change(b.micro_batch != cfg.micro_batch, fmt::format("--micro-batch {}", b.micro_batch), [&](TrainConfig& c) { c.micro_batch = b.micro_batch; });
  change(b.zero != cfg.zero, fmt::format("--zero {}", b.zero), [&](TrainConfig& c) { c.zero = b.zero; });
  change(b.recompute != cfg.recompute, fmt::format("--recompute {}", name(b.recompute)), [&](TrainConfig& c) { c.recompute = b.recompute; });
  change(b.sequence_parallel != cfg.sequence_parallel, b.sequence_parallel ? "--sequence-parallel" : "without --sequence-parallel",
         [&](TrainConfig& c) { c.sequence_parallel = b.sequence_parallel; });
  change(b.cp > 1 && b.cp_ring != cfg.cp_ring, b.cp_ring ? "--cp-algo ring" : "--cp-algo ulysses", [&](TrainConfig& c) { c.cp_ring = b.cp_ring; });
  std::string flags;
  for (const Change& c : changes) flags += (flags.empty() ? "" : " ") + c.flag;
  out.push_back({"better-plan",
                 fmt::format("the fastest plan on these {} GPUs at this sequence and global batch ({}) takes {} per step against {}{}",
                             cfg.gpus, plan_words(b), t(b.step_time_s), t(step), r.memory.fits ? "" : " (and this plan does not fit)"),
                 std::max(0.0, step - b.step_time_s), "step",
                 fmt::format("{} (`ridgeline search train` lists the plans)", flags), "ridgeline search train"});
  // Each change alone, where it is a valid plan that fits and is faster.
  auto alone = std::make_unique<TrainResult>();
  for (const Change& c : changes) {
    if (changes.size() == 1 || plan_fault(m, c.cfg) != Reject::count) continue;
    try {
      train(m, sys, c.cfg, *alone);
    } catch (const InputError&) {
      continue;
    }
    if (!alone->memory.fits || !(alone->step_time_s < 0.99 * step)) continue;
    out.push_back({"plan-change", fmt::format("{} alone: {} per step against {}", c.flag, t(alone->step_time_s), t(step)),
                   step - alone->step_time_s, "step", c.flag + " (one change of the fastest plan's)", "ridgeline search train"});
  }
}

}  // namespace

std::vector<Advice> advise_training(const model::ModelConfig& m, const hw::System& sys, const TrainConfig& cfg,
                                    const TrainResult& r) {
  std::vector<Advice> out;
  const double step = r.step_time_s;
  if (!r.memory.fits) {
    out.push_back({"does-not-fit",
                   fmt::format("{:.3g} GB needed per GPU, {:.3g} GB available", r.memory.total_bytes / 1e9, r.memory.capacity_bytes / 1e9), 0,
                   "", "recompute activations (`ridgeline recompute` plans it), shard states (--zero 1-3), or raise --tp/--pp",
                   "seed 000, recomputation"});
  }
  // Seed 004: "All-reduce > 30% of step time -> reduce DP replicas, increase gradient accumulation".
  if (r.exposed_dp_comm.realistic_s > 0.3 * step || r.dp_comm.realistic_s > 0.3 * step) {
    out.push_back({"dp-comm",
                   fmt::format("data-parallel communication {} per step ({} exposed) of a {} step", t(r.dp_comm.realistic_s),
                               t(r.exposed_dp_comm.realistic_s), t(step)),
                   r.exposed_dp_comm.realistic_s, "step",
                   "accumulate more micro-batches per step, reduce in bf16, or compress gradients (--grad-compression powersgd:R)",
                   "seed 004, common bottlenecks"});
  }
  // Seed 004: "MFU < 20% -> memory-bound kernels": fuse them.
  if (r.mfu < 0.2) {
    FusionConfig fc;
    fc.tokens = cfg.seq * cfg.micro_batch;
    fc.tp = cfg.tp;
    FusionResult fr = analyze_fusion(m, sys.chip, fc);
    // Forward and backward (~2x) of every micro-batch on this stage.
    const double gain = fr.saved_per_pass_s * 3 / static_cast<double>(cfg.pp) * static_cast<double>(r.micro_batches);
    out.push_back({"low-mfu", fmt::format("MFU {:.1f}%", 100 * r.mfu), gain, "step",
                   "fuse the memory-bound chains and GEMM epilogues (`ridgeline fuse`), use FlashAttention, raise the micro-batch",
                   "seed 004 and seed 000, operator fusion"});
  }
  // The pipeline bubble: more micro-batches or interleaving.
  if (cfg.pp > 1 && r.bubble.realistic_s > 0.1 * step) {
    out.push_back({"pipeline-bubble",
                   fmt::format("the bubble is {} of a {} step ({} micro-batches over {} stages)", t(r.bubble.realistic_s), t(step),
                               r.micro_batches, cfg.pp),
                   r.bubble.realistic_s / 2, "step",
                   fmt::format("interleave the schedule (--vpp {}) or raise the global batch: the bubble is (p-1)/(v·m)", cfg.vpp * 2),
                   "Narayanan et al. 2021"});
  }
  if (r.tp_comm_s > 0.2 * step) {
    out.push_back({"tp-comm", fmt::format("tensor-parallel communication {} of a {} step", t(r.tp_comm_s), t(step)), 0, "step",
                   cfg.sequence_parallel ? "lower --tp, or keep tp within a node"
                                         : "enable --sequence-parallel (same bytes, norms and residuals split) or lower --tp",
                   "Korthikanti et al. 2022"});
  }
  better_plans(m, sys, cfg, r, out);
  sort_by_gain(out);
  return out;
}

}  // namespace ridgeline::analysis
