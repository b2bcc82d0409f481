#include "ridgeline/analysis/training.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

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

bool in_layer(const Graph& g, int i) {
  const model::Block b = g.ops[i].block;
  return b != model::Block::embedding && b != model::Block::head;
}

// Ops recomputed in backward: full -> the whole layer; selective -> the attention core
// (Megatron's selective recomputation: the kernel whose saved tensors it drops,
// layer_activation_bytes' core).
bool recomputed(const Graph& g, int i, Recompute r) {
  // Under auto, the plan's tensors are recomputed (train_step adds them); none here.
  if (r == Recompute::none || r == Recompute::automatic || !in_layer(g, i)) return false;
  if (r == Recompute::full) return true;
  return g.ops[i].cls == OpClass::attention;
}

StepPart scaled(const StepPart& a, double k) { return {a.lower_s * k, a.upper_s * k, a.realistic_s * k}; }
StepPart exposed(const StepPart& comm, const StepPart& window) {
  return {std::max(0.0, comm.lower_s - window.lower_s), std::max(0.0, comm.upper_s - window.lower_s),
          std::max(0.0, comm.realistic_s - window.realistic_s)};
}

// A collective's time over a group placed at `g` (comm::price, the algorithm NCCL's tuner
// would pick): parts as an op.
StepPart collective_time(const comm::Wiring& w, comm::Collective kind, double bytes_, const comm::Placement& g,
                         const ops::Rates& r) {
  if (g.size <= 1 || bytes_ <= 0) return {};
  const ops::Cost c = comm::price(w, g, kind, bytes_, DType::bf16, comm::Algo::automatic).cost;
  return part_of(ops::time_parts(c, r), r, hw::KernelClass::collective);
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
  train_core(m, training_system(sys_in, cfg), cfg, out);
}

void train_core(const model::ModelConfig& m, const hw::System& sys, const TrainConfig& cfg, TrainResult& out) noexcept {
  TrainShape shape;
  train_shape(m, sys, cfg, out, shape);
  train_step(m, sys, cfg, shape, out);
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
  f.precision.activation = DType::bf16;
  f.precision.weight = DType::bf16;
  f.precision.compute = cfg.dtype;
  const double b = static_cast<double>(cfg.micro_batch * cfg.ep), s = static_cast<double>(cfg.seq);
  model::build_forward(m, f, sys, {b, s, s}, out.graph);
  const Graph& g = out.graph;

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
    const double k = loss_ar ? 0 : backward_factor(op.cls, cfg.attention);
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
    bp.matrix *= k, bp.vector *= k, bp.memory *= k, bp.comm *= k, bp.launch *= k, bp.comm_latency *= k;
    // A dense GEMM's backward is two GEMMs of other shapes, each quantised on its own: the
    // input gradient [m, n] x [n, k] -> [m, k] and the weight gradient [k, m] x [m, n] -> [k, n].
    bp.matrix_pad = 0;
    if (op.quantised && k > 0) {
      const double M = op.gemm_m, K = op.gemm_k, N = op.gemm_n;
      const double pad = ops::gemm_pad_flops(M, K, N, 1, rates.sms) + ops::gemm_pad_flops(K, N, M, 1, rates.sms);
      bp.matrix_pad = pad * rates.s_per_flop[0][fp.matrix_dtype];
    }
    out.bwd[i] = {bp,
                  out.fwd[i].flops * k,
                  out.fwd[i].bytes * k,
                  out.fwd[i].link_bytes * k,
                  out.fwd[i].launches * k};
    const hw::KernelClass kc = op.kernel;
    StepPart pf = part_of(out.fwd[i].parts, rates, kc);
    StepPart pb = part_of(out.bwd[i].parts, rates, model::backward_kernel_class(op.kernel));
    if (cast_f.launches > 0) {
      add(pf, part_of(ops::time_parts(cast_f, rates), rates, hw::KernelClass::pointwise));
      add(pb, part_of(ops::time_parts(cast_b, rates), rates, hw::KernelClass::pointwise));
    }
    const bool again = recomputed(g, i, cfg.recompute);
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
    const double per_mb_lower = r * (pf.lower_s + pb.lower_s);
    (layer ? sh.kind_layers_s : sh.kind_other_s)[static_cast<int>(op.cls)] += per_mb_lower;
    (layer ? sh.fwd_kind_layers_s : sh.fwd_kind_other_s)[static_cast<int>(op.cls)] += r * pf.lower_s;
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
      // for --tp-overlap.
      const std::string_view n = op.name;
      if (n == "attn_allgather" || n == "attn_reducescatter" || n == "mlp_allgather" || n == "mlp_reducescatter") {
        add(sh.f_layers_tp, pf, r);
        add(sh.b_layers_tp, pb, r);
      }
      if (op.cls == OpClass::gemm) {
        add(sh.f_layers_gemm, pf, r);
        add(sh.b_layers_gemm, pb, r);
      }
      sh.params_layers += p;
      if (op.expert_bytes > 0) sh.expert_params_layers += p;
    }
  }
  // --tp-overlap: the layers' TP collectives run under their GEMMs, as far as those last.
  if (cfg.tp_overlap && cfg.sequence_parallel && cfg.tp > 1) {
    auto hide = [](StepPart& layers, const StepPart& comm, const StepPart& gemm) {
      layers.lower_s -= std::min(comm.lower_s, gemm.lower_s);
      layers.upper_s -= std::min(comm.upper_s, gemm.upper_s);
      layers.realistic_s -= std::min(comm.realistic_s, gemm.realistic_s);
    };
    hide(sh.f_layers, sh.f_layers_tp, sh.f_layers_gemm);
    hide(sh.b_layers, sh.b_layers_tp, sh.b_layers_gemm);
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
  const double stage_layers = std::ceil(L / (pp * vpp)) * vpp;
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
  for (int k = 0; k < 6; ++k) {
    out.time_by_kind_s[k] = (sh.kind_layers_s[k] * stage_share + sh.kind_other_s[k]) * mbs;
    out.forward_time_by_kind_s[k] = (sh.fwd_kind_layers_s[k] * stage_share + sh.fwd_kind_other_s[k]) * mbs;
    out.backward_time_by_kind_s[k] = out.time_by_kind_s[k] - out.forward_time_by_kind_s[k];
  }
  const double params_layers = sh.params_layers, params_embed = sh.params_embed, params_head = sh.params_head;
  const StepPart &f_embed = sh.f_embed, &b_embed = sh.b_embed, &f_head = sh.f_head, &b_head = sh.b_head;

  // Memory on the first stage's GPU (it holds the most micro-batches in flight): what does
  // not depend on the activations kept per layer.
  auto& mem = out.memory;
  const double dpd = static_cast<double>(dp);
  // Experts are split over ep of the dp ranks and replicated over the other dp/ep: ZeRO
  // shards their states over dp/ep (Megatron's expert-data-parallel group), the rest over dp.
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
                        mem.grads_bytes - mem.optimizer_bytes - other_activations;
    out.activation_budget_bytes = room / (stage_layers * in_flight) - sh.tensors->layer_input_bytes - sh.tensors->fixed_bytes;
    choice = &sh.frontier->best_within(out.activation_budget_bytes);
    out.recompute_choice = *choice;
    // Its recomputed forwards and exposed offloads run in every layer's backward.
    for (int k = 0; k < 6; ++k) {
      const double add_k = choice->kind_s[k] * stage_layers * mbs;
      out.time_by_kind_s[k] += add_k;
      out.backward_time_by_kind_s[k] += add_k;
    }
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
    StepPart one = collective_time(sh.wiring, comm::Collective::send_recv, act, pair, rates);
    out.p2p = scaled(one, 2 * vpp);
  }

  // 1F1B: every micro-batch's forward and backward, plus (pp-1)/vpp of them as the bubble.
  StepPart per_mb = out.forward;
  add(per_mb, out.backward);
  add(per_mb, out.p2p);
  out.bubble = scaled(per_mb, (pp - 1) / vpp);
  out.pipeline = scaled(per_mb, mbs);
  add(out.pipeline, out.bubble);

  // Data parallelism: gradients reduced once per step (after the last micro-batch's
  // backward, bucketed and overlapped with it); ZeRO-1/2 gather the updated bf16
  // parameters (overlapped with the next forward); ZeRO-3 gathers parameters for every
  // micro-batch's forward and backward and reduce-scatters gradients each time.
  const comm::Placement dp_group = comm::place(sh.wiring, dpd, static_cast<double>(cfg.tp * cfg.cp));
  // The experts' gradients and parameters go over their expert-data-parallel group instead:
  // the dp/ep ranks holding the same experts, tp·cp·ep apart.
  const comm::Placement edp_group = comm::place(sh.wiring, edp, static_cast<double>(cfg.tp * cfg.cp * cfg.ep));
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
  out.dp_comm = {};
  out.exposed_dp_comm = {};
  // A data-parallel collective: the dense share over dp, the experts' over dp/ep.
  auto dp_collective = [&](comm::Collective kind, double total) {
    StepPart t = collective_time(sh.wiring, kind, total * (1 - expert_share), dp_group, rates);
    add(t, collective_time(sh.wiring, kind, total * expert_share, edp_group, rates));
    return t;
  };
  if (dp > 1) {
    if (cfg.zero == 0) {
      StepPart ar = dp_collective(comm::Collective::all_reduce, grad_bytes);
      out.dp_comm = ar;
      // The last bucket (25 MB, PyTorch DDP's default) cannot overlap anything.
      const double buckets = std::max(1.0, std::ceil(grad_bytes / 25e6));
      StepPart hidden_after = exposed(ar, out.backward);
      StepPart last = scaled(ar, 1 / buckets);
      out.exposed_dp_comm = {std::max(hidden_after.lower_s, last.lower_s), std::max(hidden_after.upper_s, last.upper_s),
                             std::max(hidden_after.realistic_s, last.realistic_s)};
    } else {
      StepPart rs = dp_collective(comm::Collective::reduce_scatter, grad_bytes);
      StepPart ag = dp_collective(comm::Collective::all_gather, param_bytes);
      if (cfg.zero <= 2) {
        out.dp_comm = rs;
        add(out.dp_comm, ag);
        out.exposed_dp_comm = exposed(rs, out.backward);
        add(out.exposed_dp_comm, exposed(ag, out.forward));
      } else {
        // Per micro-batch: gather for forward, gather again for backward, scatter gradients.
        StepPart rs16 = dp_collective(comm::Collective::reduce_scatter, param_bytes);
        StepPart fwd_ag = ag, bwd = ag;
        add(bwd, rs16);
        out.dp_comm = scaled(ag, 2 * mbs);
        add(out.dp_comm, scaled(rs16, mbs));
        out.exposed_dp_comm = scaled(exposed(fwd_ag, out.forward), mbs);
        add(out.exposed_dp_comm, scaled(exposed(bwd, out.backward), mbs));
      }
    }
    // --dp-overlap off: after the last backward and before the next forward, nothing to hide behind.
    if (!cfg.dp_overlap) out.exposed_dp_comm = out.dp_comm;
  }

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

  StepPart step = out.pipeline;
  add(step, out.exposed_dp_comm);
  add(step, out.compression);
  add(step, out.optimizer);
  out.step_time_s = step.realistic_s;
  out.step_time_lower_s = step.lower_s;
  out.step_time_upper_s = step.upper_s;
  out.tp_comm_s = (sh.tp_comm_layers_s * stage_share + sh.tp_comm_other_s + (choice ? choice->comm_s * stage_layers : 0)) * mbs;
  out.exposed_comm_s = out.tp_comm_s + (out.p2p.realistic_s * (mbs + (pp - 1) / vpp)) + out.exposed_dp_comm.realistic_s;

  // FLOPs: per micro-batch this GPU does 1/tp of every layer's matrix work (the graph
  // counts every layer); the step runs gb / micro_batch micro-batches across all replicas.
  const double micro_batches_total = static_cast<double>(gb) / static_cast<double>(cfg.micro_batch);
  // With context parallelism cp GPUs share each micro-batch as well.
  const double cpd = static_cast<double>(cfg.cp);
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
  const double subtotal = mem.params_bytes + mem.grads_bytes + mem.optimizer_bytes + mem.activations_bytes;
  mem.margin_bytes = subtotal * cfg.memory_margin;
  mem.total_bytes = subtotal + mem.margin_bytes;
  mem.fits = mem.total_bytes <= mem.capacity_bytes;
}

}  // namespace ridgeline::analysis
