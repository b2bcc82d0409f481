#include "ridgeline/analysis/training.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ridgeline/analysis/stragglers.hpp"
#include "ridgeline/comm/collective.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/model/transformer.hpp"
#include "ridgeline/ops/matmul.hpp"

namespace ridgeline::analysis {

namespace {

using model::Graph;
using model::OpClass;

// Backward of an op relative to its forward (docs/training.md#backward): a GEMM computes
// the input gradient and the weight gradient (2x); FlashAttention's backward recomputes the
// scores (2.5x the forward FLOPs); memory-bound ops read the saved input and the incoming
// gradient and write the outgoing one (2x); a collective repeats on the gradient (1x).
double backward_factor(OpClass c, ops::AttentionImpl impl) {
  switch (c) {
    case OpClass::gemm: return 2;
    case OpClass::attention: return impl == ops::AttentionImpl::flash ? 2.5 : 2;
    case OpClass::norm:
    case OpClass::elementwise: return 2;
    case OpClass::embedding: return 1;
    case OpClass::comm: return 1;
  }
  return 2;
}

// Layers on the slowest pipeline stage: L/pp, or the ceiling over pp·vpp chunks when uneven.
double slowest_stage_layers(const model::ModelConfig& m, const TrainConfig& cfg) {
  return std::ceil(static_cast<double>(m.layers) / static_cast<double>(cfg.pp * cfg.vpp)) * static_cast<double>(cfg.vpp);
}

// The slowest stage's end of the model (TrainShape's embedding and head parts of a sum): both
// on one stage, else the head's where the last stage is the slowest, the embedding's where the
// first is.
double stage_end(double embed, double head, bool one_stage, bool last_slowest) {
  return one_stage ? embed + head : last_slowest ? head : embed;
}

bool in_layer(const Graph& g, int i) {
  const model::Block b = g.ops[i].block;
  return b != model::Block::embedding && b != model::Block::head;
}

// Ops recomputed in backward: full -> the whole layer; selective -> the attention core
// (Megatron's selective recomputation: the kernels whose saved tensors it drops, attention and
// its dropout, layer_activation_bytes' core).
bool recomputed(const Graph& g, int i, Recompute r) {
  // Under auto, the plan's tensors are recomputed (train_step adds them); none here.
  if (r == Recompute::none || r == Recompute::automatic || !in_layer(g, i)) return false;
  if (r == Recompute::full) return true;
  return g.ops[i].cls == OpClass::attention || std::string_view(g.ops[i].name) == "attn_dropout";
}

// A group of `outer` blocks `outer_stride` ranks apart, each of `inner` ranks `inner_stride` apart
// (inner·inner_stride <= outer_stride): its members per scale-up domain are the inner ones a
// domain holds times the blocks it holds. A torus is placed as one run of the inner stride.
comm::Placement nested_place(const comm::Wiring& w, double inner, double inner_stride, double outer, double outer_stride) {
  if (inner <= 1 || w.topology.fabric == hw::Fabric::torus || outer_stride <= inner * inner_stride) {
    return inner <= 1 ? comm::place(w, outer, outer_stride) : comm::place(w, inner * outer, inner_stride);
  }
  comm::Placement p = comm::place(w, outer, outer_stride);
  const comm::Placement q = comm::place(w, inner, inner_stride);
  p.size = inner * outer;
  p.per_domain = q.per_domain < inner ? q.per_domain : inner * p.per_domain;
  return p;
}

// Transformer Engine's userbuffers defaults (transformer_engine/pytorch/module/base.py,
// initialize_ub): the ring-exchange overlaps (qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad) move
// chunks with the copy engines and num_sm 1; the pipelined reduce-scatters (proj_fprop,
// fc2_fprop) and the bulk ones (qkv_dgrad/wgrad, fc1_dgrad/wgrad) run num_sm 16 with the GEMM
// launched on the SMs left (set_sm_margin), the pipelined ones in num_splits 4.
constexpr double kUbRingSms = 1, kUbKernelSms = 16, kUbPipelineSplits = 4;

// Megatron-Core's bias_swiglu_impl on an H100 80GB HBM3 (linkedin/Liger-Kernel,
// benchmark/data/all_benchmark_data.csv, kernel megatron_swiglu, provider megatron, 8192 tokens,
// triton do_bench): forward 60.4/113.7/220.2/432.9/858.5 us at 2048-32768 columns; the
// "backward" rows run the forward, a sum and the backward (338.5/656.9/1288.7/2554.3/5083.0 us).
// Less the forward and the sum's two passes (read the output, write its gradient: 2/3 of the
// forward's 3 passes at its rate), the backward takes 3.94/4.11/4.19/4.23/4.25 times the
// forward: 4.2.
constexpr double kMegatronSwigluBackward = 4.2;

StepPart scaled(const StepPart& a, double k) { return {a.lower_s * k, a.upper_s * k, a.realistic_s * k}; }
StepPart exposed(const StepPart& comm, const StepPart& window) {
  return {std::max(0.0, comm.lower_s - window.lower_s), std::max(0.0, comm.upper_s - window.lower_s),
          std::max(0.0, comm.realistic_s - window.realistic_s)};
}

// Kernels an op's backward runs: a GEMM's two (the input and the weight gradients),
// FlashAttention's three (the dO·O preprocess, the main kernel, the dQ conversion:
// flash_bwd_launch_template.h's run_mha_bwd), naive attention's five (two batched GEMMs for each
// product, the softmax's backward), a norm's two (the input gradient, then the weights'
// partial sums reduced); others as many as their forward times their backward factor `k`
// (a sequence-parallel gather's backward is a reduce-scatter and a gather).
double backward_kernels(const model::GraphOp& op, ops::AttentionImpl impl, double k) {
  switch (op.cls) {
    case OpClass::gemm: return 2;
    case OpClass::attention: return impl == ops::AttentionImpl::flash ? 3 : 5;
    case OpClass::norm: return 2;
    default: return std::max(1.0, std::round(op.cost.launches * k));
  }
}

// A collective's time over a group placed at `g` (comm::price, the algorithm NCCL's tuner
// would pick): parts as an op, and what it is beside compute (its realistic time, the
// main-memory bytes its kernel moves, the SMs it holds, its bounding link).
struct CollectiveTime {
  StepPart t;
  OverlapComm beside;
};
CollectiveTime collective_time(const comm::Wiring& w, comm::Collective kind, double bytes_, const comm::Placement& g,
                               const ops::Rates& r, double sms) {
  if (g.size <= 1 || bytes_ <= 0) return {};
  const comm::Priced p = comm::price(w, g, kind, bytes_, DType::bf16, comm::Algo::automatic);
  CollectiveTime out;
  out.t = part_of(ops::time_parts(p.cost, r), r, hw::KernelClass::collective);
  out.beside = {out.t.realistic_s, p.cost.bytes[0], sms, p.link >= 0 && p.link == w.net.index && w.net.index != w.up.index};
  return out;
}
// Two collectives one after the other on the same kernels' SMs: their times and bytes add.
void add(CollectiveTime& a, const CollectiveTime& b) {
  add(a.t, b.t);
  a.beside.time_s += b.beside.time_s;
  a.beside.hbm_bytes += b.beside.hbm_bytes;
  a.beside.sms = std::max(a.beside.sms, b.beside.sms);
  a.beside.network = a.beside.network || b.beside.network;
}
CollectiveTime scaled(const CollectiveTime& a, double k) {
  CollectiveTime o = a;
  o.t = {a.t.lower_s * k, a.t.upper_s * k, a.t.realistic_s * k};
  o.beside.time_s *= k;
  o.beside.hbm_bytes *= k;
  return o;
}

}  // namespace

std::string_view name(Reject r) noexcept {
  switch (r) {
    case Reject::tp_across_nodes: return "tp_across_nodes";
    case Reject::tp_model: return "tp_model";
    case Reject::cp_model: return "cp_model";
    case Reject::ep_model: return "ep_model";
    case Reject::stages: return "stages";
    case Reject::global_batch: return "global_batch";
    case Reject::interleave: return "interleave";
    case Reject::sequence_parallel: return "sequence_parallel";
    case Reject::dtype: return "dtype";
    case Reject::too_long: return "too_long";
    case Reject::memory: return "memory";
    case Reject::ttft: return "ttft";
    case Reject::tpot: return "tpot";
    case Reject::count: break;
  }
  return "none";
}

std::string_view name(Framework p) noexcept {
  return p == Framework::fsdp2 ? "fsdp2" : p == Framework::megatron_lm ? "megatron-lm" : "megatron";
}

std::string_view name(Recompute r) noexcept {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
    case Recompute::automatic: return "auto";
  }
  return "none";
}

double layer_activation_bytes(const model::ModelConfig& m, const TrainConfig& cfg) noexcept {
  const double s = static_cast<double>(cfg.seq) / static_cast<double>(cfg.cp);
  const double b = static_cast<double>(cfg.micro_batch);
  const double h = static_cast<double>(m.hidden), t = static_cast<double>(cfg.tp);
  const double a = static_cast<double>(m.heads);
  const double kvw = static_cast<double>(m.kv_heads * m.head_dim), qw = static_cast<double>(m.heads * m.head_dim);
  const double I = static_cast<double>(m.is_moe() ? m.moe.intermediate * m.moe.experts_per_token : m.intermediate);
  const double sb = s * b;
  // 16-bit activations, 2 bytes. Outside the tensor-parallel region (replicated unless
  // sequence parallelism splits them): the two norms' inputs, the QKV input, the MLP input,
  // and with dropout the two 1-byte masks.
  double outside = 2 * sb * h * 4 + (cfg.dropout ? 2 * sb * h : 0);
  // Gemma 2/3's norms on each sublayer's output: their inputs too. One norm a layer read by
  // both sublayers (Phi, Cohere, StableLM's parallel residual): its input and its output only.
  if (m.sandwich_norms) outside += 2 * sb * h * 2;
  if (m.parallel_block) outside -= 2 * sb * h * 2;
  // Inside (split over tp): Q, K, V, the attention output (o_proj input), and the MLP's
  // intermediate tensors: gate, up and the down-projection input (gated), or the GELU
  // input and output (GPT).
  const double mlp = m.mlp == model::MlpKind::gelu ? 2 * 2 * sb * I : 3 * 2 * sb * I;
  double inside = 2 * sb * (qw + 2 * kvw) + 2 * sb * qw + mlp;
  // The attention core: the s x s softmax output (and dropout mask and output) under naive
  // attention; FlashAttention keeps the fp32 log-sum-exp per row instead.
  double core = cfg.attention == ops::AttentionImpl::naive ? (cfg.dropout ? 5 : 2) * a * s * s * b : 4 * a * sb;
  if (cfg.recompute == Recompute::selective) core = 0;
  if (cfg.recompute == Recompute::full) {
    // Only the layer's input is kept; everything else is rebuilt in backward.
    return 2 * sb * h / (cfg.sequence_parallel ? t : 1);
  }
  if (cfg.sequence_parallel) outside /= t;
  return outside + (inside + core) / t;
}

namespace {

// The parallel layout of a plan as the model builder sees it (tp, ep, cp and their options).
model::ForwardConfig layout(const TrainConfig& cfg) noexcept {
  model::ForwardConfig f;
  f.tp = cfg.tp;
  f.ep = cfg.ep;
  f.expert_imbalance = cfg.expert_imbalance;
  f.cp = cfg.cp;
  f.cp_ring = cfg.cp_ring;
  return f;
}

}  // namespace

Reject plan_fault(const model::ModelConfig& m, const TrainConfig& cfg) noexcept {
  switch (model::check(m, layout(cfg))) {
    case model::LayoutFault::none: break;
    case model::LayoutFault::tp_range:
    case model::LayoutFault::tp_heads:
    case model::LayoutFault::tp_kv_heads:
    case model::LayoutFault::tp_width: return Reject::tp_model;
    case model::LayoutFault::cp_mla:
    case model::LayoutFault::cp_ulysses: return Reject::cp_model;
    case model::LayoutFault::ep_range:
    case model::LayoutFault::ep_dense:
    case model::LayoutFault::experts_dense:
    case model::LayoutFault::ep_experts:
    case model::LayoutFault::ep_imbalance: return Reject::ep_model;
  }
  if (cfg.seq % cfg.cp != 0) return Reject::cp_model;
  const std::int64_t dp = cfg.dp > 0 ? cfg.dp : cfg.gpus / (cfg.tp * cfg.pp * cfg.cp);
  if (cfg.ep > 1 && dp % cfg.ep != 0) return Reject::ep_model;
  const std::int64_t stages = cfg.pp * cfg.vpp;
  if ((cfg.vpp > 1 && cfg.pp == 1) || m.layers < stages || (!cfg.uneven_stages && m.layers % stages != 0)) return Reject::stages;
  const std::int64_t gb = cfg.global_batch > 0 ? cfg.global_batch : dp * cfg.micro_batch;
  if (gb % (dp * cfg.micro_batch) != 0) return Reject::global_batch;
  if (cfg.vpp > 1 && (gb / (dp * cfg.micro_batch)) % cfg.pp != 0) return Reject::interleave;
  if (cfg.sequence_parallel && cfg.seq % cfg.tp != 0) return Reject::sequence_parallel;
  return Reject::count;
}

void validate(const model::ModelConfig& m, const hw::System& sys, const TrainConfig& cfg) {
  auto range = [](std::int64_t v, const char* flag, std::int64_t lo, std::int64_t hi) {
    if (v < lo || v > hi) throw InputError(fmt::format("{}: {} is out of range: expected {} to {}", flag, v, lo, hi));
  };
  range(cfg.gpus, "--gpus", 1, std::int64_t{1} << 24);
  range(cfg.tp, "--tp", 1, 4096);
  range(cfg.pp, "--pp", 1, 4096);
  range(cfg.cp, "--cp", 1, 4096);
  range(cfg.ep, "--ep", 1, 4096);
  range(cfg.vpp, "--vpp", 1, 1024);
  range(cfg.seq, "--seq", 1, std::int64_t{1} << 24);
  range(cfg.micro_batch, "--micro-batch", 1, std::int64_t{1} << 20);
  if (cfg.zero < 0 || cfg.zero > 3) throw InputError(fmt::format("--zero: {} is not a ZeRO stage: expected 0, 1, 2 or 3", cfg.zero));
  const std::int64_t model_par = cfg.tp * cfg.pp * cfg.cp;
  const std::int64_t dp = cfg.dp > 0 ? cfg.dp : cfg.gpus / model_par;
  if (dp < 1 || model_par * dp != cfg.gpus) {
    throw InputError(fmt::format("--gpus: tp {} x pp {} x cp {} x dp {} = {} is not {} GPUs", cfg.tp, cfg.pp, cfg.cp, dp,
                                 model_par * dp, cfg.gpus));
  }
  const std::int64_t gb = cfg.global_batch > 0 ? cfg.global_batch : dp * cfg.micro_batch;
  switch (plan_fault(m, cfg)) {
    case Reject::tp_model:
    case Reject::cp_model:
    case Reject::ep_model: {
      model::validate(m, layout(cfg));
      if (cfg.seq % cfg.cp != 0) throw InputError(fmt::format("--cp: --seq {} is not divisible by cp {}", cfg.seq, cfg.cp));
      throw InputError(fmt::format("--ep: {} does not divide the data-parallel degree {}", cfg.ep, dp));
    }
    case Reject::stages:
      if (cfg.vpp > 1 && cfg.pp == 1) throw InputError("--vpp: interleaving needs --pp 2 or more");
      if (m.layers < cfg.pp * cfg.vpp) {
        throw InputError(fmt::format("--pp/--vpp: {} layers cannot fill pp {} x vpp {} stages", m.layers, cfg.pp, cfg.vpp));
      }
      throw InputError(fmt::format("--pp/--vpp: {} layers do not split into pp {} x vpp {} = {} equal stages (--uneven-stages allows it)",
                                   m.layers, cfg.pp, cfg.vpp, cfg.pp * cfg.vpp));
    case Reject::global_batch:
      throw InputError(fmt::format("--global-batch: {} sequences do not split into dp {} x micro-batch {} = {}", gb, dp,
                                   cfg.micro_batch, dp * cfg.micro_batch));
    case Reject::interleave:
      throw InputError(fmt::format("--vpp: the interleaved schedule needs the {} micro-batches to be a multiple of pp {}",
                                   gb / (dp * cfg.micro_batch), cfg.pp));
    case Reject::sequence_parallel:
      throw InputError(fmt::format("--sequence-parallel: --seq {} is not divisible by tp {}", cfg.seq, cfg.tp));
    default: break;
  }
  if (cfg.offload && cfg.recompute != Recompute::automatic) {
    throw InputError(fmt::format("--offload: the planner decides what to offload: needs --recompute auto, not {}", name(cfg.recompute)));
  }
  if (!(cfg.overlap_efficiency >= 0 && cfg.overlap_efficiency <= 1)) {
    throw InputError(fmt::format("--overlap-efficiency: {} is not a fraction in [0, 1]", cfg.overlap_efficiency));
  }
  if (cfg.prefetch < 0 || cfg.prefetch > 64) throw InputError(fmt::format("--prefetch: {} is out of range: expected 0 to 64 layers", cfg.prefetch));
  if (!(cfg.memory_headroom >= 0 && cfg.memory_headroom < 1)) {
    throw InputError(fmt::format("--memory-headroom: {} is not a fraction in [0, 1)", cfg.memory_headroom));
  }
  if (cfg.tp * cfg.cp > 1 && sys.chip.links.empty()) {
    throw InputError(fmt::format("--tp: {} has no link between chips: pass --link-bw", sys.chip.name));
  }
  if (sys.chip.peak(hw::Unit::matrix, cfg.dtype) <= 0) {
    throw InputError(fmt::format("--dtype: {} has no {} matrix rate", sys.chip.name, name(cfg.dtype)));
  }
}

hw::System training_system(const hw::System& sys_in, const TrainConfig& cfg) {
  hw::System sys = sys_in;
  if (cfg.gpus_per_node > 0) sys.chips_per_node = static_cast<int>(cfg.gpus_per_node);
  if (cfg.network_bandwidth_Bps) {
    const int net = sys.chip.link_index(hw::LinkScope::network);
    if (net >= 0) {
      sys.chip.links[net].bandwidth_Bps = *cfg.network_bandwidth_Bps;
      sys.chip.links[net].count = 1;
    } else if (sys.chip.links.size() < static_cast<size_t>(hw::kMaxLinks)) {
      sys.chip.links.push_back({"network", hw::LinkScope::network, *cfg.network_bandwidth_Bps, 1, 5e-6});
    }
  }
  return sys;
}

void train(const model::ModelConfig& m, const hw::System& sys_in, const TrainConfig& cfg, TrainResult& out) {
  validate(m, sys_in, cfg);
  train_core(m, training_system(sys_in, cfg), cfg, out, true);  // with the split by kernel class the report shows
}

void kernel_class_split(const model::ModelConfig& m, const TrainConfig& cfg, const TrainShape& sh, TrainResult& out) noexcept {
  const double L = static_cast<double>(m.layers);
  const double stage_layers = slowest_stage_layers(m, cfg), stage_share = stage_layers / L;
  const double mbs = static_cast<double>(out.micro_batches);
  std::array<double, hw::kKernelClassCount> recomputed_s{};  // per layer, per micro-batch
  if (cfg.recompute == Recompute::automatic && sh.tensors != nullptr) {
    const LayerTensors& t = *sh.tensors;
    for (int k = 0; k < t.kind_count; ++k) {
      const LayerKind& kind = t.kinds[k];
      for (int i = kind.first; i < kind.first + kind.count; ++i) {
        if (out.recompute_choice.action[i] != TensorAction::recompute) continue;
        for (int c = 0; c < hw::kKernelClassCount; ++c) recomputed_s[c] += kind.share * t.tensors[i].class_s[c];
      }
    }
  }
  // The slowest stage's end of the model, as train_step picked it: both on one stage.
  for (int c = 0; c < hw::kKernelClassCount; ++c) {
    const double ends = stage_end(sh.class_embed_s[c], sh.class_head_s[c], cfg.pp == 1, out.slowest_holds_head);
    out.time_by_kernel_class_s[c] = (sh.class_layers_s[c] * stage_share + ends + recomputed_s[c] * stage_layers) * mbs;
  }
}

void train_core(const model::ModelConfig& m, const hw::System& sys, const TrainConfig& cfg, TrainResult& out, bool split) noexcept {
  TrainShape shape;
  train_shape(m, sys, cfg, out, shape);
  train_step(m, sys, cfg, shape, out);
  if (split) kernel_class_split(m, cfg, shape, out);
}

void train_shape(const model::ModelConfig& m, const hw::System& sys, const TrainConfig& cfg, TrainResult& out,
                 TrainShape& sh) noexcept {
  const hw::ChipSpec& chip = sys.chip;
  sh = TrainShape{};
  sh.rates = ops::Rates(chip);
  sh.wiring = comm::wiring(sys);
  const ops::Rates& rates = sh.rates;

  // The forward of one micro-batch on one GPU, every layer (repeat counts), training head.
  model::ForwardConfig f = layout(cfg);
  f.attention = cfg.attention;
  f.sequence_parallel = cfg.sequence_parallel;
  f.training = true;
  f.dropout = cfg.dropout;
  f.precision.activation = DType::bf16;
  f.precision.weight = DType::bf16;
  f.precision.compute = cfg.dtype;
  const double b = static_cast<double>(cfg.micro_batch * cfg.ep), s = static_cast<double>(cfg.seq);
  model::build_forward(m, f, sys, {b, s, s}, out.graph);
  const Graph& g = out.graph;

  sh.grad_norm_allreduce =
      collective_time(sh.wiring, comm::Collective::all_reduce, 4, comm::place(sh.wiring, static_cast<double>(cfg.gpus)), rates, 0).t;
  sh.straggler_slowdown = straggler_slowdown(cfg.gpus);
  // --tp-overlap: the layers' TP collectives by how Transformer Engine overlaps them (ring
  // exchange through the copy engines, 1 SM; pipelined or bulk reduce-scatters, 16 SMs), and
  // the GEMMs they hide behind.
  OverlapComm tp_ring_f{0, 0, kUbRingSms, false}, tp_pipe_f{0, 0, kUbKernelSms, false};
  OverlapComm tp_ring_b{0, 0, kUbRingSms, false}, tp_bulk_b{0, 0, kUbKernelSms, false};
  auto add_tp = [](OverlapComm& c, double t, double hbm) { c.time_s += t, c.hbm_bytes += hbm; };
  ComputeWindow gemm_f, gemm_b;
  // Per op: forward and backward (with recomputation) times, summed per part of the model.
  for (int i = 0; i < g.op_count; ++i) {
    const auto& op = g.ops[i];
    const double r = g.repeat(i);
    // Megatron's conjugate operators: the loss's all-reduces (two scalars per token) have
    // none in backward; the vocab-parallel embedding's all-reduce has none either, but the
    // LM head's input gradient is all-reduced there (the same tokens x hidden bytes, on the
    // last stage: charged to the head below). With sequence parallelism the embedding
    // reduce-scatters, and its backward all-gathers.
    const bool loss_ar = op.cls == OpClass::comm && std::string_view(op.name) == "loss_allreduce";
    const bool embed_ar = op.cls == OpClass::comm && op.block == model::Block::embedding && !cfg.sequence_parallel;
    double k = loss_ar ? 0 : op.backward > 0 ? op.backward : backward_factor(op.cls, cfg.attention);
    // Megatron-Core's gated activation (bias_swiglu_impl: TorchScript helpers) runs its
    // backward as a chain of kernels: Liger-Kernel's H100 timings of it take 4.2 times its
    // forward from 2048 to 32768 columns, where one fused pass (read the input and the
    // gradient, write the gradient) would take 5/3 (docs/training.md#small-kernels).
    if (cfg.framework != Framework::fsdp2 && std::string_view(op.name) == "silu_mul") k = kMegatronSwigluBackward;
    const ops::OpCost& fwd_cost = op.cost;
    ops::Cost cast_f, cast_b;  // separate cast kernels (fp8 only)
    if (op.cls == OpClass::gemm && is_fp8(cfg.dtype)) {
      // bf16 -> fp8 casts (read 2 bytes, write 1 per element), fused with their transposes as
      // Transformer Engine does: the GEMM input and the weight shard (once per micro-batch)
      // in forward, the incoming gradient in backward.
      const double fwd_elems = op.gemm_m * op.gemm_k + op.gemm_k * op.gemm_n, bwd_elems = op.gemm_m * op.gemm_n;
      const double fwd_cast = 3 * fwd_elems, bwd_cast = 3 * bwd_elems;
      cast_f.add_main_bytes(2 * fwd_elems);
      cast_f.add_main_stores(fwd_elems);
      cast_f.launches = 1;
      cast_b.add_main_bytes(2 * bwd_elems);
      cast_b.add_main_stores(bwd_elems);
      cast_b.launches = 1;
      sh.fp8_cast_bytes += (fwd_cast + bwd_cast) * r;
    }
    out.fwd[i] = {ops::time_parts(fwd_cost, rates), fwd_cost.total_flops(), ops::main_traffic(fwd_cost, rates), fwd_cost.total_link_bytes(),
                  fwd_cost.launches};
    // The backward is the forward's cost scaled by k in every count, so every part of its
    // time scales by k too (bytes over bandwidth, latency steps, launches alike).
    const ops::TimeParts& fp = out.fwd[i].parts;
    ops::TimeParts bp = fp;
    bp.kernels = 1;  // (the backward's kernels: backward_kernels, below)
    bp.matrix *= k, bp.vector *= k, bp.memory *= k, bp.comm *= k, bp.launch *= k, bp.comm_latency *= k;
    // A dense GEMM's backward is two GEMMs of other shapes, each quantised on its own: the
    // input gradient [m, n] x [n, k] -> [m, k] and the weight gradient [k, m] x [m, n] -> [k, n].
    bp.matrix_pad = 0;
    bp.memory_pad = 0;  // (a forward kernel's fill on its loads: the backward's kernels are others)
    bp.loop_k = 0;      // (and its K loop: no backward curve prices one)
    if (op.quantised && k > 0) {
      const double M = op.gemm_m, K = op.gemm_k, N = op.gemm_n;
      const hw::GemmSplit split = hw::gemm_split_for(rates.gemm_split, op.kernel);
      // (each with its tiles' fill at its own depth, where the backward's class has one)
      const double fill = rates.achievable[static_cast<int>(model::backward_kernel_class(op.kernel))].fill_k;
      const double pad = ops::gemm_pad_flops(M, K, N, 1, rates.sms, split, fill) + ops::gemm_pad_flops(K, N, M, 1, rates.sms, split, fill);
      bp.matrix_pad = pad * rates.s_per_flop[0][fp.matrix_dtype];
    }
    out.bwd[i] = {bp,
                  out.fwd[i].flops * k,
                  out.fwd[i].bytes * k,
                  out.fwd[i].link_bytes * k,
                  out.fwd[i].launches * k};
    const hw::KernelClass kc = op.kernel, bkc = model::backward_kernel_class(op.kernel);
    StepPart pf = part_of(out.fwd[i].parts, rates, kc);
    StepPart pb = part_of(out.bwd[i].parts, rates, bkc);
    // Every kernel pays its class's fixed time (docs/cost-model.md#kernel-boundaries): an op of
    // several kernels all of theirs (ops::TimeParts::kernels), and a backward runs more kernels
    // than its forward (backward_kernels), whose time part counts one.
    if (k > 0) {
      const double ob = (backward_kernels(op, cfg.attention, k) - 1) * rates.achievable[static_cast<int>(bkc)].overhead_s;
      pb.realistic_s += ob, pb.upper_s += ob;
    }
    double cast_fs = 0, cast_bs = 0;  // the casts' realistic times (pointwise kernels)
    if (cast_f.launches > 0) {
      const StepPart cf = part_of(ops::time_parts(cast_f, rates), rates, hw::KernelClass::pointwise);
      const StepPart cb = part_of(ops::time_parts(cast_b, rates), rates, hw::KernelClass::pointwise);
      add(pf, cf);
      add(pb, cb);
      cast_fs = cf.realistic_s, cast_bs = cb.realistic_s;
    }
    const bool again = recomputed(g, i, cfg.recompute);
    // Which part of the model each pass's time belongs to, as f_/b_layers, f_/b_embed and
    // f_/b_head sum them (below): the embedding's all-reduce's backward is the head's.
    const int f_part = in_layer(g, i) ? 0 : op.block == model::Block::embedding ? 1 : 2;
    const int b_part = f_part == 1 && embed_ar ? 2 : f_part;
    // The realistic time by the class each kernel runs as, a recomputed forward beside the
    // backward (train's split: kernel_class_split).
    {
      const std::array<std::array<double, hw::kKernelClassCount>*, 3> parts{&sh.class_layers_s, &sh.class_embed_s, &sh.class_head_s};
      const double forwards = r * (again ? 2 : 1);
      (*parts[f_part])[static_cast<int>(kc)] += forwards * (pf.realistic_s - cast_fs);
      (*parts[f_part])[static_cast<int>(hw::KernelClass::pointwise)] += forwards * cast_fs;
      (*parts[b_part])[static_cast<int>(bkc)] += r * (pb.realistic_s - cast_bs);
      (*parts[b_part])[static_cast<int>(hw::KernelClass::pointwise)] += r * cast_bs;
    }
    if (again) add(pb, pf);  // the forward runs again inside backward
    const double mf = op.cost.matrix_flops;
    const bool layer = in_layer(g, i);
    if (op.cls == OpClass::gemm && op.weight_bytes > 0) {
      (layer ? sh.matrix_weights_layers : sh.matrix_weights_other) += op.gemm_k * op.gemm_n * r;
      if (cfg.powersgd_rank > 0) {
        const double rank = static_cast<double>(cfg.powersgd_rank);
        // PowerSGD: P = M·Q and Q = Mᵀ·P (2·k·n·r FLOPs each) and the factors instead of M.
        (layer ? sh.compressed_layers : sh.compressed_other) += (op.gemm_k + op.gemm_n) * rank * r;
        (layer ? sh.powersgd_flops_layers : sh.powersgd_flops_other) += 4 * op.gemm_k * op.gemm_n * rank * r;
      }
    }
    sh.fwd_matrix_flops += r * mf;
    if (op.cls == OpClass::attention && op.attention >= 0 && mf > 0) {
      ops::AttentionShape all = g.attention[op.attention];
      const double computed = ops::attention_cost(all).unit_flops(hw::Unit::matrix);
      all.causal = false;
      all.window = 0;
      if (computed > 0) {
        sh.fwd_masked_attention_flops += r * mf * (ops::attention_cost(all).unit_flops(hw::Unit::matrix) / computed - 1);
      }
    }
    sh.hw_matrix_flops += r * mf * (1 + k + (again ? 1 : 0));
    // What a collective beside this pass would see of this op: its realistic time, by what
    // bounds it; a collective of the pass holds its link for its time.
    {
      auto account = [&](ComputeWindow& w, const OpTimes& t, double realistic, double bytes_mult) {
        w.time_s += r * realistic;
        if (op.cls == OpClass::comm) {
          const bool net = op.cost.link >= 0 && op.cost.link == sh.wiring.net.index && sh.wiring.net.index != sh.wiring.up.index;
          (net ? w.net_busy_s : w.up_busy_s) += r * realistic;
        } else if (t.parts.bound() == ops::Bound::memory) {
          w.memory_bound_s += r * realistic;
        } else {
          w.compute_bound_s += r * realistic;
          w.compute_bound_bytes += r * out.fwd[i].bytes * bytes_mult;
        }
      };
      account(layer ? sh.f_window_layers : sh.f_window_other, out.fwd[i], pf.realistic_s, 1);
      account(layer ? sh.b_window_layers : sh.b_window_other, out.bwd[i], pb.realistic_s, k + (again ? 1 : 0));
    }
    const double per_mb_lower = r * (pf.lower_s + pb.lower_s);
    {
      const std::array<std::array<double, 6>*, 3> kinds{&sh.kind_layers_s, &sh.kind_embed_s, &sh.kind_head_s};
      const std::array<std::array<double, 6>*, 3> fwd_kinds{&sh.fwd_kind_layers_s, &sh.fwd_kind_embed_s, &sh.fwd_kind_head_s};
      (*kinds[f_part])[static_cast<int>(op.cls)] += r * pf.lower_s;
      (*kinds[b_part])[static_cast<int>(op.cls)] += r * pb.lower_s;
      (*fwd_kinds[f_part])[static_cast<int>(op.cls)] += r * pf.lower_s;
    }
    if (op.cls == OpClass::comm) (layer ? sh.tp_comm_layers_s : sh.tp_comm_other_s) += per_mb_lower;
    // Weight parameters this GPU holds for this op (bf16 weights: bytes / 2).
    const double p = op.weight_bytes / 2 * r;
    if (op.block == model::Block::embedding) {
      add(sh.f_embed, pf, r);
      add(embed_ar ? sh.b_head : sh.b_embed, pb, r);
      sh.params_embed += p;
    } else if (op.block == model::Block::head) {
      add(sh.f_head, pf, r);
      add(sh.b_head, pb, r);
      sh.params_head += p;
    } else {
      add(sh.f_layers, pf, r);
      add(sh.b_layers, pb, r);
      // The layer's tensor-parallel gathers and scatters (sequence parallelism) and its GEMMs,
      // for --tp-overlap. Transformer Engine overlaps a gather in forward (and the gather that
      // is a reduce-scatter's backward) by exchanging chunks around the ring between GEMM
      // chunks, and a reduce-scatter in forward by pipelining it behind the GEMM's splits; the
      // reduce-scatter that is a gather's backward runs in bulk beside the weight gradient.
      const std::string_view n = op.name;
      const bool gather = n == "attn_allgather" || n == "mlp_allgather";
      if (gather || n == "attn_reducescatter" || n == "mlp_reducescatter") {
        add(sh.f_layers_tp, pf, r);
        add(sh.b_layers_tp, pb, r);
        const double hbm_f = r * out.fwd[i].bytes, hbm_b = r * out.bwd[i].bytes;
        add_tp(gather ? tp_ring_f : tp_pipe_f, pf.realistic_s * r, hbm_f);
        add_tp(gather ? tp_bulk_b : tp_ring_b, pb.realistic_s * r, hbm_b);
      }
      if (op.cls == OpClass::gemm) {
        add(sh.f_layers_gemm, pf, r);
        add(sh.b_layers_gemm, pb, r);
        gemm_f.compute_bound_bytes += r * out.fwd[i].bytes;
        gemm_b.compute_bound_bytes += r * out.bwd[i].bytes;
      }
      sh.params_layers += p;
      if (op.expert_bytes > 0) sh.expert_params_layers += p;
    }
  }
  // --tp-overlap: the layers' TP collectives run under their GEMMs, as far as those last. The
  // bounds hide min(communication, GEMMs) at no cost; the realistic time hides what
  // Transformer Engine's schedule can (a pipelined reduce-scatter's last split waits for the
  // GEMM's last chunk) at the overlap efficiency, and charges the GEMMs the interference.
  if (cfg.tp_overlap && cfg.sequence_parallel && cfg.tp > 1) {
    auto hide = [](StepPart& layers, const StepPart& comm, const StepPart& gemm) {
      layers.lower_s -= std::min(comm.lower_s, gemm.lower_s);
      layers.upper_s -= std::min(comm.upper_s, gemm.upper_s);
    };
    hide(sh.f_layers, sh.f_layers_tp, sh.f_layers_gemm);
    hide(sh.b_layers, sh.b_layers_tp, sh.b_layers_gemm);
    auto pass = [&](ComputeWindow w, const OverlapComm& ring, const OverlapComm& other, double other_hideable) {
      OverlapCost c = overlap(ring, ring.time_s, w, cfg.overlap_efficiency, chip);
      // The other hides in what the ring exchange left of the GEMMs (and of their bytes).
      if (w.time_s > 0) w.compute_bound_bytes *= (w.time_s - c.hidden_s) / w.time_s;
      w.time_s -= c.hidden_s;
      w.compute_bound_s = w.time_s;
      c += overlap(other, other_hideable, w, cfg.overlap_efficiency, chip);
      return c;
    };
    gemm_f.time_s = gemm_f.compute_bound_s = sh.f_layers_gemm.realistic_s;
    gemm_b.time_s = gemm_b.compute_bound_s = sh.b_layers_gemm.realistic_s;
    const OverlapCost fo = pass(gemm_f, tp_ring_f, tp_pipe_f, tp_pipe_f.time_s * (kUbPipelineSplits - 1) / kUbPipelineSplits);
    const OverlapCost bo = pass(gemm_b, tp_ring_b, tp_bulk_b, tp_bulk_b.time_s);
    sh.f_layers.realistic_s -= fo.hidden_s - fo.interference_s;
    sh.b_layers.realistic_s -= bo.hidden_s - bo.interference_s;
    sh.tp_overlap = fo;
    sh.tp_overlap += bo;
  }
  // The activations each kind of layer saves (their bytes set the memory); under --recompute
  // auto, their producers' times and the front of every keep/recompute(/offload) choice, from
  // which train_step picks the fastest that fits its plan's memory.
  const bool planned = cfg.recompute == Recompute::automatic;
  layer_tensors(m, cfg, g, out.fwd, out.bwd, rates, chip, planned, out.tensors);
  sh.tensors = &out.tensors;
  if (planned) {
    build_frontier(out.tensors, cfg.offload, out.frontier);
    sh.frontier = &out.frontier;
  }
}

void train_step(const model::ModelConfig& m, const hw::System& sys, const TrainConfig& cfg, const TrainShape& sh,
                TrainStep& out) noexcept {
  const hw::ChipSpec& chip = sys.chip;
  const ops::Rates& rates = sh.rates;
  const double tp = static_cast<double>(cfg.tp), pp = static_cast<double>(cfg.pp), vpp = static_cast<double>(cfg.vpp);
  // Layers on the slowest stage: L/pp, or the ceiling over pp·vpp chunks when uneven.
  const double L = static_cast<double>(m.layers);
  const double stage_layers = slowest_stage_layers(m, cfg);
  const double stage_share = stage_layers / L;
  const std::int64_t dp = cfg.dp > 0 ? cfg.dp : cfg.gpus / (cfg.tp * cfg.pp * cfg.cp);
  const std::int64_t gb = cfg.global_batch > 0 ? cfg.global_batch : dp * cfg.micro_batch;
  const double mbs = static_cast<double>(gb / (dp * cfg.micro_batch));
  const double b = static_cast<double>(cfg.micro_batch * cfg.ep), s = static_cast<double>(cfg.seq);
  out.dp = dp;
  out.micro_batches = static_cast<std::int64_t>(mbs);
  out.fp8_cast_bytes = sh.fp8_cast_bytes;
  // This GPU runs its stage's share of the layers.
  const double matrix_weights = sh.matrix_weights_layers * stage_share + sh.matrix_weights_other;
  const double compressed_weights = sh.compressed_layers * stage_share + sh.compressed_other;
  const double powersgd_flops = sh.powersgd_flops_layers * stage_share + sh.powersgd_flops_other;
  const double params_layers = sh.params_layers, params_embed = sh.params_embed, params_head = sh.params_head;
  const StepPart &f_embed = sh.f_embed, &b_embed = sh.b_embed, &f_head = sh.f_head, &b_head = sh.b_head;

  // Memory on the first stage's GPU (it holds the most micro-batches in flight): what does
  // not depend on the activations kept per layer.
  auto& mem = out.memory;
  // The cp ranks of a context-parallel group hold the same weights and each computes part of
  // their gradients: gradients are reduced, and ZeRO shards, over dp·cp (Megatron's data-parallel
  // group with context parallelism, torchtitan's FSDP mesh dp_shard x cp).
  const double cpd = static_cast<double>(cfg.cp);
  const double dpd = static_cast<double>(dp) * cpd;
  // Experts are split over ep of the dp ranks and replicated over the other dp/ep: ZeRO
  // shards their states over dp·cp/ep (Megatron's expert-data-parallel group), the rest over dp·cp.
  const double edp = dpd / static_cast<double>(cfg.ep);
  const double expert_stage = sh.expert_params_layers * stage_share;  // this GPU's expert parameters
  const double stage_params = params_layers * stage_share + params_embed + (pp == 1 ? params_head : 0);
  const double dense_stage = stage_params - expert_stage;
  auto sharded = [&](double per_param, int from_stage) {
    const bool z = cfg.zero >= from_stage;
    return dense_stage * per_param / (z ? dpd : 1) + expert_stage * per_param / (z ? edp : 1);
  };
  mem.params_bytes = sharded(2, 3);
  mem.grads_bytes = sharded(bytes(cfg.grad_reduce_dtype), 2);
  mem.optimizer_bytes = sharded(12, 1);
  // ZeRO-3 / FSDP gathers a layer at a time: the layer computing and the `prefetch` ones after
  // it hold their gathered bf16 parameters, and one layer's unsharded gradients wait for their
  // reduce-scatter.
  mem.buffers_bytes = 0;
  if (cfg.zero >= 3 && dpd > 1) {
    const double layer_params = params_layers / L;
    mem.buffers_bytes = (1 + std::max(0, cfg.prefetch)) * layer_params * 2 + layer_params * bytes(cfg.grad_reduce_dtype);
  }
  // 1F1B: the first stage holds min(m, pp) micro-batches of its L/pp layers; interleaving
  // adds (pp - 1)/(pp·vpp) more (Korthikanti et al., section 4.2.3).
  double in_flight = std::min(mbs, pp);
  if (cfg.vpp > 1) in_flight *= 1 + (pp - 1) / (pp * vpp);
  mem.in_flight_micro_batches = in_flight;
  // The embedding output of each in-flight micro-batch; on a single stage the fp32 logits too.
  const double sb = s / static_cast<double>(cfg.cp) * static_cast<double>(cfg.micro_batch);
  double other_activations = in_flight * sb * static_cast<double>(m.hidden) * 2 / (cfg.sequence_parallel ? tp : 1);
  if (pp == 1) other_activations += sb * static_cast<double>(m.vocab) / tp * 4;
  mem.capacity_bytes = chip.main_capacity_bytes();
  // --recompute auto: the fastest choice whose kept tensors let the whole fit in the chip's
  // memory (less the headroom), margin included.
  const RecomputeChoice* choice = nullptr;
  if (cfg.recompute == Recompute::automatic && sh.frontier != nullptr && sh.tensors != nullptr) {
    const double room = mem.capacity_bytes * (1 - cfg.memory_headroom) / (1 + cfg.memory_margin) - mem.params_bytes -
                        mem.grads_bytes - mem.optimizer_bytes - mem.buffers_bytes - other_activations;
    out.activation_budget_bytes = room / (stage_layers * in_flight) - sh.tensors->layer_input_bytes - sh.tensors->fixed_bytes;
    choice = &sh.frontier->best_within(out.activation_budget_bytes);
    out.recompute_choice = *choice;
  }

  // The slowest pipeline stage holds L/pp layers and the embedding (first) or the head (last).
  StepPart f_first = scaled(sh.f_layers, stage_share), b_first = scaled(sh.b_layers, stage_share);
  if (choice) add(b_first, choice->added, stage_layers);
  StepPart f_last = f_first, b_last = b_first;
  add(f_first, f_embed);
  add(b_first, b_embed);
  add(f_last, f_head);
  add(b_last, b_head);
  if (pp == 1) {
    add(f_first, f_head);
    add(b_first, b_head);
    f_last = f_first;
    b_last = b_first;
  }
  const bool last_slower = f_last.realistic_s + b_last.realistic_s > f_first.realistic_s + b_first.realistic_s;
  out.forward = last_slower ? f_last : f_first;
  out.backward = last_slower ? b_last : b_first;
  out.slowest_holds_head = pp > 1 && last_slower;
  // Compute by kind on that stage: its layers and its end of the model (both on one stage);
  // a recomputation choice's forwards run in every layer's backward.
  for (int k = 0; k < 6; ++k) {
    const double ends = stage_end(sh.kind_embed_s[k], sh.kind_head_s[k], pp == 1, last_slower);
    const double fwd_ends = stage_end(sh.fwd_kind_embed_s[k], sh.fwd_kind_head_s[k], pp == 1, last_slower);
    const double recomputed_k = choice ? choice->kind_s[k] * stage_layers : 0;
    out.time_by_kind_s[k] = (sh.kind_layers_s[k] * stage_share + ends + recomputed_k) * mbs;
    out.forward_time_by_kind_s[k] = (sh.fwd_kind_layers_s[k] * stage_share + fwd_ends) * mbs;
    out.backward_time_by_kind_s[k] = out.time_by_kind_s[k] - out.forward_time_by_kind_s[k];
  }
  double params_gpu = params_layers * stage_share + (pp == 1 ? params_embed + params_head : std::max(params_embed, params_head));
  if (m.tie_embeddings && pp > 1) params_gpu = params_layers * stage_share + params_embed;  // both ends hold the table
  out.params_computed_per_gpu = params_gpu;
  out.params_per_gpu = sharded(1, 3);

  // Pipeline sends: the (micro-batch x seq, h) activation forward and its gradient back, at
  // every stage boundary a micro-batch crosses (vpp per GPU when interleaved).
  out.p2p = {};
  if (cfg.pp > 1) {
    const double act = b / static_cast<double>(cfg.ep) * s / static_cast<double>(cfg.cp) * static_cast<double>(m.hidden) * 2 /
                       (cfg.sequence_parallel ? tp : 1);
    // Neighbouring stages sit tp·cp·dp ranks apart.
    const comm::Placement pair = comm::place(sh.wiring, 2, static_cast<double>(cfg.tp * cfg.cp * dp));
    // Megatron-LM before Megatron-Core, without sequence parallelism, sends each tensor-parallel
    // rank's 1/tp of it over the network and all-gathers it over the node's links on arrival
    // (Narayanan et al. 2021, section 4.1, the scatter/gather optimization; Megatron-LM's
    // --scatter-gather-tensors-in-pipeline, on by default, p2p_communication.py); Megatron-Core's
    // p2p_communication.py sends the whole tensor from every rank.
    const bool split = cfg.framework == Framework::megatron_lm && !cfg.sequence_parallel && cfg.tp > 1;
    StepPart one = collective_time(sh.wiring, comm::Collective::send_recv, split ? act / tp : act, pair, rates, 0).t;
    if (split) add(one, collective_time(sh.wiring, comm::Collective::all_gather, act, comm::place(sh.wiring, tp), rates, 0).t);
    out.p2p = scaled(one, 2 * vpp);
  }

  // 1F1B: every micro-batch's forward and backward, plus (pp-1)/vpp of them as the bubble.
  StepPart per_mb = out.forward;
  add(per_mb, out.backward);
  add(per_mb, out.p2p);
  out.bubble = scaled(per_mb, (pp - 1) / vpp);
  out.pipeline = scaled(per_mb, mbs);
  add(out.pipeline, out.bubble);

  // Data parallelism (docs/training.md#the-step). Ranks are ordered tp, cp, then dp:
  // the dp·cp ranks of the group are tp apart.
  const comm::Placement dp_group = comm::place(sh.wiring, dpd, static_cast<double>(cfg.tp));
  // The experts' gradients and parameters go over their expert-data-parallel group instead:
  // the cp ranks (tp apart) of each of the dp/ep ranks holding the same experts (tp·cp·ep apart).
  const comm::Placement edp_group = nested_place(sh.wiring, cpd, static_cast<double>(cfg.tp), edp / cpd,
                                                 static_cast<double>(cfg.tp * cfg.cp * cfg.ep));
  const double expert_share = params_gpu > 0 ? expert_stage / params_gpu : 0;
  double grad_bytes = params_gpu * bytes(cfg.grad_reduce_dtype);
  out.grad_bytes_uncompressed = grad_bytes;
  out.compression = {};
  if (cfg.powersgd_rank > 0) {
    // Matrices travel as their rank-r factors (fp32); vectors (norms, biases) as they are.
    grad_bytes = (params_gpu - matrix_weights + compressed_weights) * 4;
    ops::Cost c;
    const DType fp = chip.peak(hw::Unit::matrix, DType::fp32) > 0 ? DType::fp32 : DType::tf32;
    c.add_flops(hw::Unit::matrix, fp, powersgd_flops);
    // Error feedback: read the gradient and the residual, write the new residual (fp32) in
    // place of the old.
    c.add_main_bytes(3 * 4 * matrix_weights);
    c.launches = 4;
    out.compression = part_of(ops::time_parts(c, rates), rates, hw::KernelClass::gemm);
  }
  out.grad_bytes = grad_bytes;
  const double param_bytes = params_gpu * 2;
  const double grad_elem = grad_bytes / std::max(1.0, params_gpu);  // bytes per gradient (compression included)
  out.dp_comm = {};
  out.exposed_dp_comm = {};
  const double coll_sms = static_cast<double>(chip.topology.collective_sms);
  // A collective over a group, from the shape's memo when a plan before priced it.
  auto memo = [&](comm::Collective kind, double bytes_, const comm::Placement& grp) {
    if (grp.size <= 1 || bytes_ <= 0) return CollectiveTime{};
    for (const TrainShape::PricedCollective& e : sh.priced) {
      if (e.kind == static_cast<int>(kind) && e.bytes == bytes_ && e.size == grp.size && e.per_domain == grp.per_domain &&
          e.extent == grp.extent && e.wrap == grp.wrap) {
        return CollectiveTime{e.t, e.beside};
      }
    }
    const CollectiveTime t = collective_time(sh.wiring, kind, bytes_, grp, rates, coll_sms);
    sh.priced[static_cast<std::size_t>(sh.priced_next)] = {static_cast<int>(kind), bytes_, grp.size, grp.per_domain,
                                                            grp.extent, grp.wrap, t.t, t.beside};
    sh.priced_next = (sh.priced_next + 1) % static_cast<int>(sh.priced.size());
    return t;
  };
  // A data-parallel collective: the dense share over dp·cp, the experts' over dp·cp/ep.
  auto dp_collective = [&](comm::Collective kind, double total) {
    CollectiveTime t = memo(kind, total * (1 - expert_share), dp_group);
    add(t, memo(kind, total * expert_share, edp_group));
    return t;
  };
  // The bounds' exposure, as before the schedule was modelled: what exceeds the window.
  auto bound_exposed = [](const StepPart& comm, const StepPart& window, const StepPart& floor) {
    const StepPart e = exposed(comm, window);
    return StepPart{std::max(e.lower_s, floor.lower_s), std::max(e.upper_s, floor.upper_s), 0};
  };
  // What one micro-batch's forward and backward on the slowest stage are to a collective beside
  // them (realistic), whole and per layer.
  ComputeWindow fwin = sh.f_window_layers.scaled(stage_share), bwin = sh.b_window_layers.scaled(stage_share);
  fwin.add(sh.f_window_other);
  bwin.add(sh.b_window_other);
  fwin.time_s = out.forward.realistic_s;
  bwin.time_s = out.backward.realistic_s;
  const double eta = cfg.dp_overlap ? cfg.overlap_efficiency : 0;
  OverlapCost dpo;
  if (dpd > 1) {
    if (cfg.zero <= 2) {
      // Gradients are reduced once per step, bucket by bucket as the last micro-batch's backward
      // produces them; the last bucket waits for the backward's end. Buckets: Megatron-Core's
      // max(40M, 1M x dp·cp) parameters (distributed_data_parallel.py), PyTorch DDP's 25 MB.
      const double bucket_params = cfg.framework != Framework::fsdp2 ? std::max(40e6, 1e6 * dpd) : 25e6 / grad_elem;
      const double buckets = std::max(1.0, std::ceil(params_gpu / bucket_params));
      const CollectiveTime one = dp_collective(cfg.zero == 0 ? comm::Collective::all_reduce : comm::Collective::reduce_scatter,
                                               grad_bytes / buckets);
      const CollectiveTime all = scaled(one, buckets);
      out.dp_comm = all.t;
      out.exposed_dp_comm = bound_exposed(all.t, out.backward, one.t);
      dpo += overlap(all.beside, all.beside.time_s - one.beside.time_s, bwin, eta, chip);
      if (cfg.zero >= 1) {
        // ZeRO 1/2: the updated bf16 parameters gathered bucket by bucket as the next step's first
        // forward reaches them (Megatron's --overlap-param-gather); the first bucket waits.
        const CollectiveTime g1 = dp_collective(comm::Collective::all_gather, param_bytes / buckets);
        const CollectiveTime ga = scaled(g1, buckets);
        add(out.dp_comm, ga.t);
        add(out.exposed_dp_comm, bound_exposed(ga.t, out.forward, g1.t));
        dpo += overlap(ga.beside, ga.beside.time_s - g1.beside.time_s, fwin, eta, chip);
      }
    } else {
      // ZeRO-3 / FSDP, a layer at a time (FSDP2's fully_shard per transformer block): each
      // micro-batch gathers every layer's bf16 parameters for its forward and again for its
      // backward, and reduce-scatters the layer's gradients after its backward. A gather runs
      // `prefetch` layers ahead, beside the layer computing; the first gather of the forward
      // waits, and so does the last reduce-scatter of the backward. The embedding and head
      // are a unit of their own, hidden behind their own compute.
      const double layer_params = stage_layers > 0 ? params_layers / L : 0;
      const double other_params = std::max(0.0, params_gpu - layer_params * stage_layers);
      const CollectiveTime ag = dp_collective(comm::Collective::all_gather, layer_params * 2);
      const CollectiveTime rs = dp_collective(comm::Collective::reduce_scatter, layer_params * grad_elem);
      const CollectiveTime ag_o = dp_collective(comm::Collective::all_gather, other_params * 2);
      const CollectiveTime rs_o = dp_collective(comm::Collective::reduce_scatter, other_params * grad_elem);
      CollectiveTime fwd = scaled(ag, stage_layers), bwd = scaled(ag, stage_layers);
      add(fwd, ag_o);
      add(bwd, scaled(rs, stage_layers));
      add(bwd, ag_o);
      add(bwd, rs_o);
      out.dp_comm = scaled(fwd.t, mbs);
      add(out.dp_comm, scaled(bwd.t, mbs));
      out.exposed_dp_comm = scaled(bound_exposed(fwd.t, out.forward, ag.t), mbs);
      add(out.exposed_dp_comm, scaled(bound_exposed(bwd.t, out.backward, rs.t), mbs));
      // One layer's windows; the embedding and head's.
      ComputeWindow lf = sh.f_window_layers.scaled(1 / L), lb = sh.b_window_layers.scaled(1 / L);
      lf.time_s = sh.f_layers.realistic_s / L;
      lb.time_s = sh.b_layers.realistic_s / L + (choice ? choice->added.realistic_s : 0);
      ComputeWindow of = sh.f_window_other, ob = sh.b_window_other;
      CollectiveTime lbc = ag;
      add(lbc, rs);
      OverlapCost mb;
      mb += {0, ag.beside.time_s, 0};  // the first gather
      mb += overlap(ag.beside, ag.beside.time_s, lf, eta, chip).scaled(std::max(0.0, stage_layers - 1));
      mb += overlap(ag_o.beside, ag_o.beside.time_s, of, eta, chip);
      mb += overlap(lbc.beside, lbc.beside.time_s, lb, eta, chip).scaled(std::max(0.0, stage_layers - 1));
      mb += overlap(ag.beside, ag.beside.time_s, ob, eta, chip);  // the backward's first gather, beside the head's backward
      mb += {0, rs.beside.time_s, 0};  // the last reduce-scatter
      CollectiveTime other_b = ag_o;
      add(other_b, rs_o);
      mb += overlap(other_b.beside, other_b.beside.time_s, ob, eta, chip);
      dpo += mb.scaled(mbs);
    }
    // --dp-overlap off: after the last backward and before the next forward, nothing to hide behind.
    if (!cfg.dp_overlap) out.exposed_dp_comm = out.dp_comm;
  }
  out.exposed_dp_comm.realistic_s = dpo.exposed_s;

  // Adam: per parameter this GPU updates, read the fp32 master weight, both moments and the
  // fp32 gradient, write the three back and the bf16 copy: 4·4 + 3·4 + 2 = 30 bytes;
  // about 12 FLOPs (moments, bias corrections, square root, update). The three are updated
  // in place; the bf16 copy's 2 bytes are stored to lines not read.
  const double opt_params =
      cfg.zero >= 1 ? (params_gpu - expert_stage) / dpd + expert_stage / edp : params_gpu;
  ops::Cost adam;
  adam.add_main_bytes(28 * opt_params);
  adam.add_main_stores(2 * opt_params);
  adam.add_flops(hw::Unit::vector, DType::fp32, 12 * opt_params);
  adam.launches = 1;
  out.optimizer = part_of(ops::time_parts(adam, rates), rates, hw::KernelClass::pointwise);
  // Before it, the gradients' global norm for clipping: a kernel reads every fp32 gradient this
  // GPU updates (multi_tensor_l2norm; a square and an add each) and one fp32 is all-reduced
  // over all the GPUs; Megatron-Core also zeroes its fp32 gradient buffer every step
  // (zero_grad_buffer), where PyTorch sets gradients to None.
  ops::Cost norm;
  norm.add_main_bytes(4 * opt_params);
  norm.add_flops(hw::Unit::vector, DType::fp32, 2 * opt_params);
  norm.launches = 1;
  out.grad_norm = part_of(ops::time_parts(norm, rates), rates, hw::KernelClass::pointwise);
  if (cfg.framework != Framework::fsdp2) {
    ops::Cost zero;
    zero.add_main_stores(mem.grads_bytes);
    zero.launches = 1;
    add(out.grad_norm, part_of(ops::time_parts(zero, rates), rates, hw::KernelClass::pointwise));
  }
  add(out.grad_norm, sh.grad_norm_allreduce);

  // What hiding communication assumes and costs: the data-parallel traffic's, and the
  // tensor-parallel overlap's inside every micro-batch of the slowest stage.
  out.overlap_efficiency = cfg.overlap_efficiency;
  const double tp_share = stage_share * (mbs + (pp - 1) / vpp);
  out.hidden_comm_s = dpo.hidden_s + sh.tp_overlap.hidden_s * tp_share;
  out.interference_s = dpo.interference_s + sh.tp_overlap.interference_s * tp_share;
  StepPart dp_interference{0, 0, dpo.interference_s};
  // The step waits for the slowest of its GPUs at every collective and send: its compute-bound
  // kernels (GEMMs, attention) run at that GPU's rate, over every micro-batch and the bubble
  // (docs/training.md#the-slowest-gpu). The realistic time only: the bounds stay at the rates.
  // The embedding and head's (the head's: the embedding's gather is memory-bound) where the
  // slowest stage holds the head: the last one, or the only one.
  const bool head_here = pp == 1 || last_slower;
  const double compute_bound_mb = (sh.f_window_layers.compute_bound_s + sh.b_window_layers.compute_bound_s) * stage_share +
                                  (head_here ? sh.f_window_other.compute_bound_s + sh.b_window_other.compute_bound_s : 0);
  out.straggler_s = sh.straggler_slowdown * compute_bound_mb * (mbs + (pp - 1) / vpp);
  StepPart straggler{0, 0, out.straggler_s};

  StepPart step = out.pipeline;
  add(step, out.exposed_dp_comm);
  add(step, dp_interference);
  add(step, straggler);
  add(step, out.compression);
  add(step, out.optimizer);
  add(step, out.grad_norm);
  out.step_time_s = step.realistic_s;
  out.step_time_lower_s = step.lower_s;
  out.step_time_upper_s = step.upper_s;
  out.tp_comm_s = (sh.tp_comm_layers_s * stage_share + sh.tp_comm_other_s + (choice ? choice->comm_s * stage_layers : 0)) * mbs;
  out.exposed_comm_s = out.tp_comm_s + (out.p2p.realistic_s * (mbs + (pp - 1) / vpp)) + out.exposed_dp_comm.realistic_s;

  // FLOPs: per micro-batch this GPU does 1/tp of every layer's matrix work (the graph
  // counts every layer); the step runs gb / micro_batch micro-batches across all replicas.
  const double micro_batches_total = static_cast<double>(gb) / static_cast<double>(cfg.micro_batch);
  out.model_flops_per_step = 3 * sh.fwd_matrix_flops * tp * cpd * micro_batches_total;
  out.hardware_flops_per_step = (sh.hw_matrix_flops + (choice ? choice->matrix_flops * L : 0)) * tp * cpd * micro_batches_total;
  out.tokens_per_step = static_cast<double>(gb) * s;
  out.tokens_per_s = out.tokens_per_step / out.step_time_s;
  const double peak = chip.peak(hw::Unit::matrix, cfg.dtype) * static_cast<double>(cfg.gpus);
  out.mfu = out.model_flops_per_step / (out.step_time_s * peak);
  out.model_flops_full_attention_per_step =
      out.model_flops_per_step + 3 * sh.fwd_masked_attention_flops * tp * cpd * micro_batches_total;
  out.mfu_full_attention = out.model_flops_full_attention_per_step / (out.step_time_s * peak);
  out.hfu = out.hardware_flops_per_step / (out.step_time_s * peak);

  // Activations: per layer per micro-batch (Korthikanti et al., or the auto choice's kept
  // tensors), times the stage's layers and the micro-batches in flight.
  const LayerTensors& lt = *sh.tensors;
  switch (cfg.recompute) {
    case Recompute::none: mem.activation_bytes_per_layer = lt.layer_input_bytes + lt.fixed_bytes + lt.saved_bytes; break;
    case Recompute::selective:  // the attention core is rebuilt in backward
      mem.activation_bytes_per_layer = lt.layer_input_bytes + lt.fixed_bytes + lt.saved_bytes - lt.core_bytes;
      break;
    case Recompute::full: mem.activation_bytes_per_layer = lt.layer_input_bytes; break;  // only the layer's input
    case Recompute::automatic:
      mem.activation_bytes_per_layer = lt.layer_input_bytes + lt.fixed_bytes + (choice ? choice->kept_bytes : lt.saved_bytes);
      break;
  }
  mem.activations_bytes = mem.activation_bytes_per_layer * stage_layers * in_flight + other_activations;
  const double subtotal = mem.params_bytes + mem.grads_bytes + mem.optimizer_bytes + mem.buffers_bytes + mem.activations_bytes;
  mem.margin_bytes = subtotal * cfg.memory_margin;
  mem.total_bytes = subtotal + mem.margin_bytes;
  mem.fits = mem.total_bytes <= mem.capacity_bytes;
}

}  // namespace ridgeline::analysis
