// A serving run's inputs checked, and what each kind of instance runs: its plan, its engine as
// it will run, its memory and KV cache (docs/serving.md#memory).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "ridgeline/analysis/inference.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/core/memory.hpp"
#include "ridgeline/core/units.hpp"
#include "ridgeline/ops/estimate.hpp"
#include "simulation.hpp"

namespace ridgeline::serving {

using detail::kBytesPerRequest;
using detail::kMaxSimulated_s;
using detail::resolved_engine;
using detail::transfer_link;

namespace detail {

[[noreturn]] void time_overflow(const std::string& what, Ps t, double s) {
  throw InputError(fmt::format("serve: simulated time overflows: {} starting at {:.6g} s lasts {:.3g} s, past the {:g} s (46 days) a run "
                               "can simulate: the chip's rates (--peak, --mem-bw, --link-bw, --disagg-link-bw or its file) are too low for "
                               "this model and load",
                               what, to_s(t), s, kMaxSimulated_s));
}

EngineConfig resolved_engine(const model::ModelConfig& m, const InstancePlan& plan, const ServeMemory& mem) {
  EngineConfig e = plan.engine;
  // TensorRT-LLM's MoE backend for this layout, as its launch file writes it.
  e.moe_backend = moe_backend(e, m, plan.forward);
  // Attention data-parallel groups: SGLang runs a scheduler per rank (docs/serving.md#moe-layouts),
  // each sizing its own request pool from its own cache, and its admission is more cautious:
  // schedule_conservativeness x 0.3 (server_args.py _handle_data_parallelism), which scales the
  // initial new_token_ratio and, with it, the minimum (init x the min factor; the decay steps stay).
  const std::int64_t ranks = e.kind == EngineKind::sglang ? std::max<std::int64_t>(1, plan.forward.ep) : 1;
  if (e.max_num_seqs == 0) {
    // SGLang max_running_requests per rank: clamp(tokens / context_len x 512, 2048, 4096), at most
    // tokens / 2, of the rank's own tokens (model_runner_kv_cache_mixin.py _resolve_max_num_reqs);
    // the replica's: the ranks' sum.
    const double tokens = std::floor(static_cast<double>(mem.kv_tokens) / static_cast<double>(ranks));
    const double context = m.max_positions > 0 ? static_cast<double>(m.max_positions) : 32768;
    const double reqs = std::clamp(std::floor(tokens / context * 512), 2048.0, 4096.0);
    e.max_num_seqs = ranks * std::max<std::int64_t>(1, static_cast<std::int64_t>(std::min(reqs, std::floor(tokens / 2))));
  }
  if (ranks > 1) {
    e.new_token_ratio_init *= 0.3;
    e.new_token_ratio_min *= 0.3;
  }
  if (ranks_run_eagerly(e, plan.forward.ep) && (e.decode_graphs != GraphMode::eager || e.mixed_graphs != GraphMode::eager)) {
    e.decode_graphs = e.mixed_graphs = GraphMode::eager;
    e.sources += "; under data parallelism every step eager (vllm/platforms/cuda.py: enforce_eager forced from PR #13931 to PR #18724)";
  }
  if (plan.forward.ep > 1) {
    switch (rank_padding(e)) {
      case model::ForwardConfig::RankPad::always:
        e.sources += "; data-parallel ranks padded to the busiest's tokens in every step, to its graph size in graph steps "
                     "(get_dp_padding, PRs #18724, #26375; docs/serving.md#rank-padding)";
        break;
      case model::ForwardConfig::RankPad::max_len:
        e.sources += "; data-parallel ranks padded to the busiest's graph size in graph steps, to its sequences in eager decode steps "
                     "whose ranks are balanced (DpPaddingMode.MAX_LEN: sum_len * 2 >= max_len * dp_size; docs/serving.md#rank-padding)";
        break;
      case model::ForwardConfig::RankPad::graphs:
        e.sources += "; data-parallel ranks padded to the busiest's graph size in graph steps (docs/serving.md#rank-padding)";
        break;
      case model::ForwardConfig::RankPad::none:
        if (graphs_need_equal_ranks(e)) {
          e.sources += "; data-parallel ranks replay a decode graph only when every rank holds the same batch, else run eagerly "
                       "(maybe_get_cuda_graph: all_batch_size_equal; docs/serving.md#rank-padding)";
        }
        break;
    }
  }
  return e;
}

}  // namespace detail

InstancePlan instance_plan(const ServeConfig& cfg, bool decode) {
  InstancePlan p{cfg.forward, cfg.engine};
  if (decode) {
    const Disagg& dg = cfg.disagg;
    if (dg.decode_tp > 0) p.forward.tp = dg.decode_tp;
    if (dg.decode_ep > 0) p.forward.ep = dg.decode_ep;
    if (dg.decode_engine) p.engine = *dg.decode_engine;
  }
  settle_output_processing(p.engine, cfg.spec.on());
  return p;
}

ServeMemory serve_memory(const model::ModelConfig& m, const hw::System& sys, const ServeConfig& cfg, bool decode) {
  const InstancePlan plan = instance_plan(cfg, decode);
  const model::ForwardConfig& f = plan.forward;
  const EngineConfig& e = plan.engine;
  ServeMemory mem;
  auto g = std::make_unique<model::Graph>();
  // The decode pass's weights as the engine lays them out: MXFP4 experts padded for its kernel
  // (ForwardConfig::mxfp4_expert_align) and MLA's absorbed projections dequantised where it does
  // (a prompt's fp8 kv_b_proj, which vLLM keeps beside them, is not in this pass: not counted);
  // and of them the padding, the same pass without it, where the experts are MXFP4.
  const model::ForwardConfig held = engine_forward(f, e);
  model::build_forward(m, held, sys, {static_cast<double>(f.ep), 1, 1}, *g);
  mem.capacity_bytes = sys.chip.main_capacity_bytes();
  mem.weights_bytes = analysis::weight_bytes(*g);
  if (held.mxfp4_expert_align > 0 && model::mxfp4_experts(m, held, sys.chip)) {
    model::ForwardConfig unpadded = held;
    unpadded.mxfp4_expert_align = 0;
    model::build_forward(m, unpadded, sys, {static_cast<double>(f.ep), 1, 1}, *g);
    mem.expert_pad_bytes = mem.weights_bytes - analysis::weight_bytes(*g);
    mem.expert_pad_align = mem.expert_pad_bytes > 0 ? e.mxfp4_expert_align : 0;
  }
  mem.kv_bytes_per_token = model::kv_bytes_per_token(m, f);
  if (cfg.spec.on()) {
    // The draft's weights (an MTP layer shares the target's embedding and head) and its own
    // KV cache beside the target's, in the same blocks.
    mem.draft_weights_bytes = analysis::draft_weight_bytes(cfg.spec, sys, held, *g);
    mem.draft_kv_bytes_per_token = model::kv_bytes_per_token(*cfg.spec.draft, f);
    mem.weights_bytes += mem.draft_weights_bytes;
    mem.kv_bytes_per_token += mem.draft_kv_bytes_per_token;
  }
  // The activations of the largest step: the token budget over as many sequences as may run.
  const double ep = static_cast<double>(f.ep);
  const double budget = static_cast<double>(e.max_batched_tokens);
  const double seqs = e.max_num_seqs > 0 ? std::min(static_cast<double>(e.max_num_seqs), budget) : budget;
  mem.activations_bytes = analysis::activation_bytes(m, f, std::max(1.0, seqs / ep), std::max(1.0, budget / ep));
  // DeepEP's low-latency buffer, registered for RDMA on every chip (docs/serving.md#deepep):
  // the engine's all-to-all.
  mem.reserved_bytes = e.reserved_bytes + model::deepep_buffer_bytes(m, engine_forward(f, e));
  const double C = mem.capacity_bytes, W = mem.weights_bytes, A = mem.activations_bytes, R = mem.reserved_bytes;
  switch (e.memory_rule) {
    case MemoryRule::profiled: mem.kv_bytes = e.kv_memory_fraction * C - W - A - R; break;
    case MemoryRule::static_fraction: mem.kv_bytes = e.kv_memory_fraction * C - W - R; break;
    case MemoryRule::of_free: mem.kv_bytes = e.kv_memory_fraction * (C - W - A - R); break;
  }
  // A block is a page of the engine's block of tokens in each layer of a KV cache group: every
  // layer, or (sliding-window layers freed) as many as the group holds (docs/serving.md#sliding-window-layers).
  mem.kv_layout = kv_layout(m, e, cfg.spec.on());
  const double block_bytes =
      mem.kv_layout.hybrid()
          ? mem.kv_bytes_per_token / static_cast<double>(m.layers) * static_cast<double>(mem.kv_layout.layers_per_block * e.kv_block)
          : mem.kv_bytes_per_token * static_cast<double>(e.kv_block);
  mem.kv_block_bytes = block_bytes;
  // Each EP group holds the cache of its own sequences.
  const double blocks = mem.kv_bytes > 0 && block_bytes > 0 ? std::floor(mem.kv_bytes / block_bytes) * ep : 0;
  mem.kv_blocks = e.kv_blocks_override > 0 ? e.kv_blocks_override : static_cast<std::int64_t>(std::min(blocks, 1e15));
  mem.kv_tokens = mem.kv_layout.tokens_in(mem.kv_blocks);
  return mem;
}

void validate(const model::ModelConfig& m, const hw::System& sys, const ServeConfig& cfg) {
  const model::ForwardConfig& f = cfg.forward;
  model::validate(m, f);
  model::validate(m, cfg.spec);
  if (cfg.spec.on()) {
    try {
      model::validate(*cfg.spec.draft, f);
    } catch (const InputError& e) {
      throw InputError(fmt::format("--draft {}: {}", cfg.spec.draft->name, e.what()));
    }
  }
  if (f.cp != 1) throw InputError("--cp: serving engines do not split a request's sequence over chips");
  if (f.attention != ops::AttentionImpl::flash) throw InputError("--attention: serving engines run flash (paged) attention kernels");
  if (f.training) throw InputError("serve: a training pass cannot be served");
  validate(cfg.engine);
  validate_ranks(cfg.engine, f.ep);
  validate(cfg.workload);
  if (!(cfg.accept_spread >= 0 && cfg.accept_spread <= 1)) {
    throw InputError(fmt::format("--accept-spread: {} is out of range: expected a standard deviation of the acceptance rates from 0 to 1", cfg.accept_spread));
  }
  if (cfg.replicas < 1 || cfg.replicas > 4096) {
    throw InputError(fmt::format("--replicas: {} is out of range: expected 1 to 4096", cfg.replicas));
  }
  const Disagg& dg = cfg.disagg;
  if (dg.on()) {
    if (dg.prefill < 1 || dg.decode < 1 || dg.prefill + dg.decode > 4096) {
      throw InputError(fmt::format("--disagg: {}:{} is out of range: expected at least one prefill and one decode instance, "
                                   "4096 in all", dg.prefill, dg.decode));
    }
    if (cfg.replicas != 1) throw InputError("--disagg/--replicas: a disaggregated deployment counts its instances in --disagg P:D");
    if (transfer_link(sys, cfg).Bps <= 0) {
      throw InputError(fmt::format("--disagg: {} has no link between instances: pass --disagg-link-bw", sys.chip.name));
    }
  }
  if (dg.decode_tp < 0 || dg.decode_tp > 4096 || dg.decode_ep < 0 || dg.decode_ep > 4096) {
    throw InputError(fmt::format("--disagg-decode: tp={} ep={} is out of range: expected 1 to 4096", dg.decode_tp, dg.decode_ep));
  }
  if (dg.decode_tp > 0 || dg.decode_ep > 0 || dg.decode_engine) {
    if (!dg.on()) throw InputError("--disagg-decode: decode instances of their own need --disagg P:D");
    // The decode instances' plan and engine, checked as the prefill instances' are below.
    const InstancePlan dp = instance_plan(cfg, true);
    try {
      model::validate(m, dp.forward);
      if (cfg.spec.on()) model::validate(*cfg.spec.draft, dp.forward);
      validate(dp.engine);
      validate_ranks(dp.engine, dp.forward.ep);
      if ((dp.forward.tp > 1 || dp.forward.ep > 1) && sys.chip.links.empty()) {
        throw InputError(fmt::format("tp={} ep={}: {} has no link between chips", dp.forward.tp, dp.forward.ep, sys.chip.name));
      }
      comm::check_algo(sys.chip, dp.engine.collective_algo);
      if (dp.engine.preemption == Preemption::swap &&
          (sys.chip.link_index(hw::LinkScope::host) < 0 || dp.engine.policy != StepPolicy::running_first)) {
        throw InputError("preemption by swap is vLLM's (V0) mode, over a host link");
      }
    } catch (const InputError& e) {
      throw InputError(fmt::format("--disagg-decode: {}", e.what()));
    }
  }
  if (sys.chip.main_bandwidth_Bps() <= 0) throw InputError(fmt::format("--hw {}: no main memory", sys.chip.name));
  if ((f.tp > 1 || f.ep > 1) && sys.chip.links.empty()) {
    throw InputError(fmt::format("--tp/--ep: {} has no link between chips: pass --link-bw", sys.chip.name));
  }
  comm::check_algo(sys.chip, f.algo);
  comm::check_algo(sys.chip, cfg.engine.collective_algo);
  if (cfg.engine.preemption == Preemption::swap && sys.chip.link_index(hw::LinkScope::host) < 0) {
    throw InputError(fmt::format("--preemption: swap needs a host link and {} has none", sys.chip.name));
  }
  if (!(cfg.horizon_s >= 0 && cfg.horizon_s <= kMaxSimulated_s)) {
    throw InputError(fmt::format("--horizon: {} s is out of range: expected 0 to {:g} s (46 days)", cfg.horizon_s, kMaxSimulated_s));
  }
  const WorkloadSpec& w = cfg.workload;
  const bool open = w.arrival == Arrival::poisson || w.arrival == Arrival::gamma || w.arrival == Arrival::constant;
  if (open && !cfg.window.on && static_cast<double>(w.requests) / w.qps > kMaxSimulated_s / 2) {
    throw InputError(fmt::format("--qps: {} requests at {:g} per second arrive over {:.3g} s: expected at most {:g} s (23 days); "
                                 "raise --qps or lower --requests",
                                 w.requests, w.qps, static_cast<double>(w.requests) / w.qps, kMaxSimulated_s / 2));
  }
  if (w.arrival == Arrival::trace && !w.trace.empty() && w.trace.back().arrival_s > kMaxSimulated_s / 2) {
    throw InputError(fmt::format("--trace: its requests span {:.3g} s: expected at most {:g} s (23 days)", w.trace.back().arrival_s,
                                 kMaxSimulated_s / 2));
  }
  if (cfg.engine.preemption == Preemption::swap && cfg.engine.policy != StepPolicy::running_first) {
    throw InputError(fmt::format("--preemption: swap is vLLM's (V0) mode; {} {}", name(cfg.engine.kind),
                                 cfg.engine.policy == StepPolicy::prefill_first ? "retracts and recomputes" : "never preempts"));
  }
  // vLLM 0.6's arg_utils.py refuses speculative decoding with multi-step ("Speculative decoding is
  // not supported with multi-step (--num-scheduler-steps > 1)").
  if (cfg.engine.scheduler_steps > 1 && cfg.spec.on()) {
    throw InputError(fmt::format("--num-scheduler-steps: {} with speculative decoding (--draft): vLLM 0.6 runs multi-step without it; "
                                 "drop one of them", cfg.engine.scheduler_steps));
  }
  // SGLang's decode servers read the requests handed to them (their pre-allocation, which the
  // prefill waits for) through the same gated loop: not modelled (docs/serving.md#recv-interval).
  if (cfg.engine.recv_interval > 1 && cfg.disagg.on()) {
    throw InputError(fmt::format("--scheduler-recv-interval: {} with --disagg: a decode server reading its hand-overs every few steps "
                                 "delays the prefill it waits for, which is not modelled; drop one of them",
                                 cfg.engine.recv_interval));
  }
  // A rate on the chip for every kernel: a dtype its units lack (a T4's bf16, an A100's fp8)
  // priced the steps at no rate, NaN seconds, which the run reported as a step past the time it
  // simulates (ops::check_supported names it, as `infer` does). Decode instances of their own
  // run the same dtypes on the same chip.
  {
    const InstancePlan p = instance_plan(cfg, false);
    auto graph = std::make_unique<model::Graph>();
    model::build_forward(m, engine_forward(p.forward, p.engine), sys, {static_cast<double>(p.forward.ep), 1, 1}, *graph);
    for (int i = 0; i < graph->op_count; ++i) ops::check_supported(graph->ops[i].cost.expand(), sys.chip);
  }
  // Room for a cache block on every kind of instance.
  for (const bool decode : {false, true}) {
    if (decode && !dg.on()) break;
    const ServeMemory mem = serve_memory(m, sys, cfg, decode);
    if (mem.kv_blocks >= 1) continue;
    const InstancePlan p = instance_plan(cfg, decode);
    throw InputError(fmt::format(
        "{}--hw {}: {} x {} leaves no room for the KV cache: weights {}, activations of a {}-token step {}, reserved {} "
        "within {} of {} (try more --tp, lower --weight-dtype, or a smaller --max-batched-tokens)",
        decode ? "--disagg-decode: " : "", sys.chip.name, p.forward.tp * p.forward.ep, sys.chip.name,
        format_quantity(mem.weights_bytes, Quantity::bytes), p.engine.max_batched_tokens, format_quantity(mem.activations_bytes, Quantity::bytes),
        format_quantity(mem.reserved_bytes, Quantity::bytes), p.engine.kv_memory_fraction, format_quantity(mem.capacity_bytes, Quantity::bytes)));
  }
}

namespace {

// An open loop or a closed one holds at least this many requests at once: a closed loop its
// clients; an open loop those that arrived by the last arrival less the most the fleet can
// have finished by then. Every step lasts at least the engine's host time per step and runs
// at most its sequence limit, and a request needs a step per output token (k + 1 tokens a step
// when speculating) at the fewest its length distribution allows. A trace's span is known
// only as it is read: the run checks it then (Simulation::alloc_slot).
double least_in_system(const model::ModelConfig& m, const ServeConfig& cfg, const ServeMemory& mem, const ServeMemory& decode_mem) {
  const WorkloadSpec& w = cfg.workload;
  const double n = static_cast<double>(w.requests);
  if (w.arrival == Arrival::closed) return std::min(n, static_cast<double>(w.concurrency));
  if (w.arrival == Arrival::trace) return 0;
  const EngineConfig e0 = resolved_engine(m, instance_plan(cfg, false), mem);
  const EngineConfig e1 = resolved_engine(m, instance_plan(cfg, true), decode_mem);
  const double step_s = std::min(e0.step_overhead_s, e1.step_overhead_s);
  if (!(step_s > 0)) return 0;
  const double seqs = static_cast<double>(std::max(e0.max_num_seqs, e1.max_num_seqs));
  const double instances = static_cast<double>(cfg.disagg.on() ? cfg.disagg.prefill + cfg.disagg.decode : cfg.replicas);
  const bool fixed = w.gen.kind == LengthDist::Kind::fixed || w.gen.kind == LengthDist::Kind::uniform;
  const double steps = std::max(1.0, std::ceil((fixed ? w.gen.a : 1) / static_cast<double>(cfg.spec.k + 1)));
  const double span = (n - 1) / w.qps;
  return std::max(0.0, n - instances * (span / step_s) * seqs / steps);
}

}  // namespace

namespace detail {

void check_memory(const model::ModelConfig& m, const ServeConfig& cfg, const ServeMemory& mem, const ServeMemory& decode_mem) {
  const double limit = memory_limit_bytes();
  const double least = least_in_system(m, cfg, mem, decode_mem);
  if (!(limit > 0) || least * kBytesPerRequest <= limit / 2) return;
  throw InputError(fmt::format("serve: at least {:.4g} of the {} requests would be in the system at once, {} at {} bytes each, and this run "
                               "may use {} (half of this process's memory limit): {}",
                               least, cfg.workload.requests, format_quantity(least * kBytesPerRequest, Quantity::bytes), kBytesPerRequest,
                               format_quantity(limit / 2, Quantity::bytes),
                               cfg.workload.arrival == Arrival::closed ? "lower --concurrency"
                                                                       : "the load outruns the fleet (lower --qps or --requests, or add --replicas)"));
}

}  // namespace detail

}  // namespace ridgeline::serving
