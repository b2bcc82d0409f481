#include "ridgeline/model/transformer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ridgeline/core/error.hpp"
#include "ridgeline/model/routing.hpp"
#include "ridgeline/ops/matmul.hpp"
#include "ridgeline/ops/pointwise.hpp"

namespace ridgeline::model {

namespace {

using ops::Cost;

// Everything one forward pass on one chip needs, resolved once.
struct Ctx {  // NOLINT: aggregate, initialised positionally in build_forward
  const ModelConfig& m;
  const ForwardConfig& f;
  const hw::System& sys;
  Graph& g;
  double batch;   // sequences on this chip
  double q_len;
  double kv_len;
  double tokens;  // batch * q_len
  double tp, ep;
  double heads, kv_heads;  // per chip
  DType act, kv, dense_w, expert_w, compute_dense, compute_expert;
  double dense_scale_bits, expert_scale_bits;  // block-scale overhead per weight
  comm::Wiring wiring{};     // the system's links as collectives see them (only with a parallel group)
  comm::Placement tp_group{};  // where each parallel group's members sit (comm::place)
  comm::Placement ep_group{};
  comm::Placement cp_group{};
  comm::Placement dp_group{};  // every chip of the tp·ep (SGLang's whole TP group under attention DP)
  const StepMix* mix = nullptr;  // an engine step's mix of prefill chunks and decode tokens
  // The last collective priced: a pass repeats the same one (every layer's two tensor-parallel
  // all-reduces and the embedding's move the same bytes over the same group).
  struct {
    comm::Collective kind = comm::Collective::all_reduce;
    comm::Algo algo = comm::Algo::automatic;
    double bytes = -1;
    const comm::Placement* group = nullptr;
    ops::Cost cost;
    int index = -1;  // its terms in Graph::collectives
    double ll_max = 0, share = 1;  // DeepEP's (CollectiveOp)
    bool fused = false;            // with a norm in its kernel (CollectiveOp::fused_norm)
  } last{};
  // The expert GEMM being built reads its activations in its weights' fp8 (DeepGEMM's grouped
  // kernels: quantised before it, or delivered so by DeepEP's dispatch).
  bool expert_a_fp8 = false;
  // A layer's norm whose kernel the next tensor-parallel all-reduce runs
  // (ForwardConfig::allreduce_norm): its cost, weights and name, held until that all-reduce.
  struct {
    bool held = false;
    ops::Cost cost;
    double params = 0, weight_bytes = 0;
    const char* name = "";      // the norm's, where it runs apart
    const char* op_name = "";   // the fused all-reduce's
    Block block = Block::attention;
  } norm_held{};
};

double wbytes(DType t, double scale_bits) { return bytes(t) + scale_bits / 8; }

// NVFP4's block scales: an fp8 e4m3 scale per 16 values, 0.5 bits a weight (NVIDIA's NVFP4
// format; its one fp32 scale per tensor aside). MXFP4's are 8 bits per 32 (0.25).
constexpr double kNvfp4ScaleBits = 0.5;
constexpr double kMxfp4ScaleBits = 0.25;
// MXFP4 weights: 4-bit values with an 8-bit scale a 32 (gpt-oss's checkpoints).
constexpr bool is_mxfp4(DType w, double scale_bits) noexcept { return w == DType::fp4 && scale_bits == kMxfp4ScaleBits; }

// The dtype a GEMM runs in unless --compute-dtype says: NVFP4 weights run W4A4 where the chip
// multiplies fp4 (the engines quantise the activations to NVFP4 too: TensorRT-LLM's and vLLM's
// CUTLASS NVFP4 GEMMs, FlashInfer's mm_fp4); MXFP4 experts (gpt-oss) keep 16-bit activations,
// as vLLM and TensorRT-LLM run them by default; everything else as ops::default_compute_dtype.
DType gemm_dtype(const ForwardConfig& f, DType act, DType w, double scale_bits, const hw::ChipSpec& chip) {
  if (f.precision.compute) return *f.precision.compute;
  if (w == DType::fp4 && scale_bits == kNvfp4ScaleBits && bits(act) > 4 && chip.peak(hw::Unit::matrix, DType::fp4) > 0) {
    return DType::fp4;
  }
  return ops::default_compute_dtype(act, w, chip);
}

// Whether `width` split over `split` chips leaves each whole blocks of the weights' scales: 128
// columns of block-fp8 weights (DeepSeek's 128 x 128 blocks), one column otherwise.
bool whole_blocks(DType w, double scale_bits, double width, double split) {
  const double block = scale_bits > 0 && is_fp8(w) ? 128 : 1;
  const double blocks = width / (split * block);
  return blocks == std::floor(blocks);
}

}  // namespace

bool gathers_dense_mlp(const ModelConfig& m, const ForwardConfig& f, double width) noexcept {
  if (!f.gathered_dense || f.ep < 2) return false;
  // The weights' dtypes and scales do not depend on the chip (the GEMMs' compute dtypes do).
  const GemmDtypes d = gemm_dtypes(m, f, hw::ChipSpec{});
  return whole_blocks(d.dense_weight, d.dense_scale_bits, width, static_cast<double>(f.tp * f.ep));
}

GemmDtypes gemm_dtypes(const ModelConfig& m, const ForwardConfig& f, const hw::ChipSpec& chip) noexcept {
  GemmDtypes d;
  d.dense_weight = d.expert_weight = m.weight_dtype;
  if (m.quantized) {
    d.expert_weight = m.quant.dtype;
    d.expert_scale_bits = m.quant.scale_bits_per_weight;
    if (!m.quant.experts_only) {
      d.dense_weight = m.quant.dtype;
      d.dense_scale_bits = m.quant.scale_bits_per_weight;
    }
  }
  if (f.precision.weight) {
    d.dense_weight = d.expert_weight = *f.precision.weight;
    // fp4 by flag is NVFP4 (ModelOpt's checkpoints, which TensorRT-LLM and vLLM serve): fp4
    // has no range without its block scales.
    d.dense_scale_bits = d.expert_scale_bits = d.dense_weight == DType::fp4 ? kNvfp4ScaleBits : 0;
  }
  const DType act = f.precision.activation;
  d.dense = gemm_dtype(f, act, d.dense_weight, d.dense_scale_bits, chip);
  d.expert = gemm_dtype(f, act, d.expert_weight, d.expert_scale_bits, chip);
  return d;
}

bool mxfp4_experts(const ModelConfig& m, const ForwardConfig& f, const hw::ChipSpec& chip) noexcept {
  const GemmDtypes d = gemm_dtypes(m, f, chip);
  return m.moe.experts > 0 && is_mxfp4(d.expert_weight, d.expert_scale_bits);
}

namespace {

// Activation groups of fp8 block-scaled GEMMs: 1 x 128 values a scale (DeepSeek-V3's
// quantization_config, and every engine's kernels for it).
constexpr double kActGroup = 128;

// A kernel quantising `rows` rows of `cols` activations to `to` in 1x128 groups with fp32
// scales, before a block-fp8 GEMM that reads them so: a row kernel (each group's amax, then
// scale and convert), priced in a class of its own, quant, where the chip's file measures it
// (else the norms' figures, whose kernels have its shape; docs/models.md#engine-kernels).
GraphOp& group_quant(Ctx& c, const char* name, Block block, double rows, double cols, DType to) {
  GraphOp& q = c.g.add(name, OpClass::elementwise, block, ops::group_quant_cost({rows, cols, c.act, DType::fp32}, to, kActGroup));
  q.kernel = hw::KernelClass::quant;
  return q;
}

// A GEMM tokens x [k, n] on this chip; `params` is the whole model's count of this weight
// (for totals), `active` the per-token count, `bias` the output width that has a bias;
// `rows` what m_rows counts (the op's Scale).
GraphOp& gemm(Ctx& c, const char* name, Block block, double m_rows, double k, double n, double params, double active,
              bool bias, bool expert = false, Scale rows = Scale::tokens) {
  const DType w = expert ? c.expert_w : c.dense_w;
  const double scale = expert ? c.expert_scale_bits : c.dense_scale_bits;
  ops::MatmulShape s;
  s.m = m_rows;
  s.k = k;
  s.n = n;
  s.a = expert && c.expert_a_fp8 ? w : c.act;
  s.b = w;
  s.out = c.act;
  s.compute = expert ? c.compute_expert : c.compute_dense;
  // An fp8 block-scaled GEMM run in fp8 (W8A8) reads its activations quantised in 1x128
  // groups, by a kernel of its own before it (group_quant): vLLM's per_token_group_quant_fp8
  // (apply_w8a8_block_fp8_linear), SGLang's sglang_per_token_group_quant_fp8, TensorRT-LLM's
  // fp8_quantize_1x128. The experts' own quantisation is moe_mlp's.
  if (!expert && scale > 0 && is_fp8(w) && is_fp8(s.compute)) {
    group_quant(c, "act_quant", block, m_rows, k, w).scale = rows;
    s.a = w;
  }
  Cost cost = ops::matmul_cost(s);
  cost.add_main_bytes(k * n * scale / 8);
  // A checkpoint's block-scaled weights (DeepSeek's fp8 blocks) run their own kernels: fp8
  // blocks the engine's (vLLM's Triton kernel or DeepGEMM's), fp4 blocks gemm_scaled's.
  // fp8 weights with per-tensor or per-row scales run in fp8 (W8A8) take the chip's fp8 GEMM
  // class: its own where its file measures its fp8 libraries apart (hw::fp8_gemm_class).
  hw::KernelClass kernel = hw::KernelClass::gemm;
  if (!expert && scale > 0) {
    const bool deepgemm = c.f.scaled_gemm == ForwardConfig::ScaledGemm::deepgemm && is_fp8(w);
    kernel = deepgemm ? hw::KernelClass::gemm_scaled_deepgemm : hw::KernelClass::gemm_scaled;
  } else if (!expert && is_fp8(w) && is_fp8(s.compute)) {
    kernel = hw::fp8_gemm_class(c.sys.chip.efficiency);
  }
  const int sms = c.sys.chip.gemm_sms();
  const bool quantised = !expert && sms > 0;
  // With the tiles' fill where the kernel's class has one (docs/cost-model.md#short-k); without
  // multiprocessors, untiled: the fill alone, over the rows.
  if (!expert) {
    cost.matrix_pad_flops = ops::gemm_pad_flops(m_rows, n, k, 1, sms, hw::gemm_split_for(c.sys.chip.gemm_split, kernel), hw::fill_k(c.sys.chip.efficiency, kernel));
    cost.loop_k = k;  // one kernel's K loop (its class's K-loop time, where it has one: docs/cost-model.md#k-loops)
  }
  double bias_params = 0;
  if (bias) {
    // Added in the GEMM's epilogue: read n bias values, one add per output.
    cost.add_main_bytes(n * bytes(c.act));
    cost.add_flops(hw::Unit::vector, DType::fp32, m_rows * n);
    bias_params = params / k;
  }
  GraphOp& op = c.g.add(name, OpClass::gemm, block, cost);
  op.scale = rows;
  op.kernel = kernel;
  op.gemm_m = m_rows;
  op.gemm_k = k;
  op.gemm_n = n;
  op.quantised = quantised;
  op.params = params + bias_params;
  op.active_params = active + (bias ? active / k : 0);
  op.weight_bytes = k * n * wbytes(w, scale) + (bias ? n * bytes(c.act) : 0);
  return op;
}

// A GEMM on weights in the activation dtype whatever the checkpoint's (its dense weights
// restored after): a MoE router, which no engine quantises (vLLM's ReplicatedLinear with
// quant_config=None, SGLang's MoEGate, TensorRT-LLM's DeepseekV3Gate), and MLA's absorbed
// projections where the engine dequantises them (ForwardConfig::absorb_dequantised).
GraphOp& gemm_16bit(Ctx& c, const char* name, Block block, double m_rows, double k, double n, double params, double active,
                    Scale rows = Scale::tokens) {
  const DType w = c.dense_w, compute = c.compute_dense;
  const double scale = c.dense_scale_bits;
  c.dense_w = c.act;
  c.dense_scale_bits = 0;
  c.compute_dense = ops::default_compute_dtype(c.act, c.act, c.sys.chip);
  GraphOp& op = gemm(c, name, block, m_rows, k, n, params, active, false, false, rows);
  c.dense_w = w, c.dense_scale_bits = scale, c.compute_dense = compute;
  return op;
}

// A norm's work; `residual`: the residual add fused in front of it (ops::add_residual).
Cost norm_cost(const Ctx& c, double rows, double cols, bool residual) {
  ops::RowsShape s{rows, cols, c.act, DType::fp32};
  Cost cost = c.m.norm == NormKind::rmsnorm ? ops::rmsnorm_cost(s) : ops::layernorm_cost(s);
  if (residual) ops::add_residual(cost, s);
  return cost;
}

// Its weights: gamma (and beta) of `params` values, `cols` of them on each chip.
double norm_params(const Ctx& c, double params) { return (c.m.norm == NormKind::rmsnorm || !c.m.norm_bias ? 1 : 2) * params; }

GraphOp& norm(Ctx& c, const char* name, Block block, double rows, double cols, double params, bool residual = false) {
  GraphOp& op = c.g.add(name, OpClass::norm, block, norm_cost(c, rows, cols, residual));
  op.params = op.active_params = norm_params(c, params);
  op.weight_bytes = norm_params(c, cols) * bytes(c.act);
  return op;
}

// A norm that first adds the residual it follows (merged kernels): it also reads the
// residual and writes the sum back, one add per element.
GraphOp& residual_norm(Ctx& c, const char* name, const char* fused_name, Block block, double rows, double cols, double params) {
  if (!c.f.merged_kernels) return norm(c, name, block, rows, cols, params);
  return norm(c, fused_name, block, rows, cols, params, true);
}

GraphOp& elementwise(Ctx& c, const char* name, Block block, double rows, double cols, double in, double out, double flops) {
  return c.g.add(name, OpClass::elementwise, block, ops::elementwise_cost({rows, cols, c.act, DType::fp32}, in, out, flops));
}

// Kernels that only move data: `read` bytes in and `written` bytes out (the KV cache's write,
// MLA's copies of a prefill's keys, V and output), no arithmetic, in `kernels` launches.
GraphOp& copy_kernel(Ctx& c, const char* name, Block block, double read, double written, double kernels = 1) {
  Cost cost;
  cost.add_main_bytes(read);
  cost.add_main_stores(written);
  cost.launches = kernels;
  return c.g.add(name, OpClass::elementwise, block, cost);
}

// A residual add; in training with dropout, Megatron's fused bias-dropout-add: it also draws
// and writes the 1-byte mask (half an element of a 16-bit activation) and scales (2 FLOPs).
void residual_add(Ctx& c, const char* name, Block block, double rows, double cols) {
  const bool drop = c.f.training && c.f.dropout;
  elementwise(c, name, block, rows, cols, 2, drop ? 1 + 1.0 / bytes(c.act) : 1, drop ? 3 : 1);
}

// Whether this pass's layers run each tensor-parallel all-reduce and the residual add + RMSNorm
// after it as one kernel (ForwardConfig::allreduce_norm): the engine fuses them, the layer has
// them so (merged kernels, an RMSNorm after each all-reduce with nothing between), and the
// all-reduce is the engine's, the tensor-parallel group's over every token (no sequence, context
// or attention data parallelism). Whatever the pass's size: past the fused kernel's limit the
// norm is its own op after NCCL's all-reduce (tp_allreduce), or the all-reduce's op holds both
// where the graph keeps its ops in place (ForwardConfig::allreduce_norm_in_place).
bool fuses_norm(const Ctx& c) {
  const ForwardConfig& f = c.f;
  if (!f.allreduce_norm || !f.merged_kernels || f.sequence_parallel || f.training || f.cp > 1 || c.ep > 1 || c.tp_group.size <= 1) return false;
  // (Not where MLA's attention op holds o_proj's all-reduce, vLLM 0.8's: the norm would be the op's.)
  if (c.m.is_mla() && f.mla_op == ForwardConfig::MlaOp::projections) return false;
  return c.m.norm == NormKind::rmsnorm && !c.m.sandwich_norms && !c.m.parallel_block && f.algo == comm::Algo::direct;
}

// The bytes below which the engine's own kernel runs a layer's all-reduce: its fused kernel's
// tokens where it has its own limit (ForwardConfig::allreduce_norm_max_tokens), else its
// all-reduce's (ForwardConfig::custom_allreduce_max_bytes).
double fused_max_bytes(const Ctx& c) {
  const double token_bytes = static_cast<double>(c.m.hidden) * bytes(c.act);
  return c.f.allreduce_norm_max_tokens > 0 ? c.f.allreduce_norm_max_tokens * token_bytes + 1 : c.f.custom_allreduce_max_bytes;
}

// Returns the op made (null for a group of one chip).
// `ll_max` > 0: DeepEP's all-to-all of `bytes_` of token-expert pairs (CollectiveOp::deepep_ll_max,
// normal_share `share`), else the collective of `bytes_`. `norm`: an all-reduce that also adds
// the residual and RMS-normalises (ForwardConfig::allreduce_norm), the norm's work: in the
// engine's own kernel (allreduce_norm) below its fused limit, which replaces its all-reduce
// limit; past it the norm is its own kernel after NCCL's, which the caller adds (or, where the
// graph keeps its ops in place, ForwardConfig::allreduce_norm_in_place, the op holds).
GraphOp* collective(Ctx& c, const char* name, Block block, comm::Collective kind, double bytes_, const comm::Placement& group,
                comm::Algo algo, double ll_max = 0, double share = 1, const ops::OpCost* norm = nullptr) {
  if (group.size <= 1) return nullptr;
  // An engine's own all-reduce up to its size limit, NCCL from it.
  const bool engine = kind == comm::Collective::all_reduce && algo == comm::Algo::direct;
  const double custom_max = !engine ? 0 : norm != nullptr ? fused_max_bytes(c) : c.f.custom_allreduce_max_bytes;
  if (custom_max > 0 && bytes_ >= custom_max) algo = comm::Algo::automatic;
  const bool fused = norm != nullptr;
  auto& l = c.last;
  if (l.group != &group || l.kind != kind || l.algo != algo || l.bytes != bytes_ || l.ll_max != ll_max || l.share != share ||
      l.fused != fused) {
    CollectiveOp op{kind, algo, c.act, group, bytes_, custom_max, ll_max, share, fused, fused ? *norm : ops::OpCost{}};
    l = {kind, algo, bytes_, &group, comm::price(c.wiring, group, kind, op.moved(bytes_), c.act, algo).cost, -1, ll_max, share, fused};
    if (c.g.collective_count < Graph::kMaxCollectives) {
      l.index = c.g.collective_count++;
      c.g.collectives[l.index] = op;
    }
  }
  GraphOp& op = c.g.add(name, OpClass::comm, block, l.cost);
  op.collective = static_cast<std::int8_t>(l.index);
  // A serving engine's own all-reduce (peers' buffers read over NVLink in one or two shots),
  // with the norm's work in its kernel where it fuses it.
  if (engine && algo == comm::Algo::direct) op.kernel = fused ? hw::KernelClass::allreduce_norm : hw::KernelClass::allreduce_custom;
  if (fused && (algo == comm::Algo::direct || c.f.allreduce_norm_in_place)) {
    op.cost.add_work(*norm);
    if (algo != comm::Algo::direct) op.cost.launches += 1;
  }
  return &op;
}

void tp_allreduce(Ctx& c, const char* name, Block block) {
  auto& held = c.norm_held;
  const double bytes_ = c.tokens * static_cast<double>(c.m.hidden) * bytes(c.act);
  ops::OpCost fused;
  const bool fusing = held.held && ops::OpCost::compact(held.cost, fused);
  GraphOp* op = collective(c, name, block, comm::Collective::all_reduce, bytes_, c.tp_group, c.f.algo, 0, 1, fusing ? &fused : nullptr);
  if (!held.held) return;
  held.held = false;
  // Past the fused kernel's limit the norm is a kernel of its own after NCCL's (and where no
  // compact cost holds it).
  const bool inside = op != nullptr && fusing && (op->kernel == hw::KernelClass::allreduce_norm || c.f.allreduce_norm_in_place);
  if (!inside) {
    GraphOp& n = c.g.add(held.name, OpClass::norm, held.block, held.cost);
    n.params = n.active_params = held.params;
    n.weight_bytes = held.weight_bytes;
    return;
  }
  op->name = held.op_name;
  op->params = op->active_params = held.params;
  op->weight_bytes = held.weight_bytes;
}

// A layer's norm after a tensor-parallel all-reduce (its residual add inside with merged
// kernels): held for the next all-reduce's kernel, `op_name`, where the pass fuses them
// (fuses_norm), else a kernel of its own.
void layer_norm(Ctx& c, const char* name, const char* fused_name, const char* op_name, Block block, double rows, double cols, double params) {
  if (!fuses_norm(c)) {
    residual_norm(c, name, fused_name, block, rows, cols, params);
    return;
  }
  c.norm_held = {true, norm_cost(c, rows, cols, true), norm_params(c, params), norm_params(c, cols) * bytes(c.act), fused_name, op_name, block};
}

// Tokens of the ops outside the tensor-parallel region (norms, residuals).
double outer_tokens(const Ctx& c) { return c.f.sequence_parallel ? c.tokens / c.tp : c.tokens; }

// Entering the tensor-parallel region: with sequence parallelism, gather the sequence.
void tp_enter(Ctx& c, const char* name, Block block) {
  if (!c.f.sequence_parallel) return;
  const int before = c.g.op_count;
  collective(c, name, block, comm::Collective::all_gather, c.tokens * static_cast<double>(c.m.hidden) * bytes(c.act), c.tp_group, c.f.algo);
  // In training its backward reduce-scatters the input's gradient and gathers the input again:
  // only the sequence shard was saved, and the GEMMs' weight gradients need all of it
  // (Megatron's sequence-parallel linear layers; Transformer Engine's qkv_dgrad and fc1_dgrad
  // gathers).
  if (c.f.training && c.g.op_count > before) c.g.ops[c.g.op_count - 1].backward = 2;
}

// Leaving it: all-reduce the partial sums, or reduce-scatter them over the sequence.
void tp_exit(Ctx& c, const char* allreduce_name, const char* reducescatter_name, Block block) {
  if (!c.f.sequence_parallel) {
    tp_allreduce(c, allreduce_name, block);
    return;
  }
  collective(c, reducescatter_name, block, comm::Collective::reduce_scatter,
             c.tokens * static_cast<double>(c.m.hidden) * bytes(c.act), c.tp_group, c.f.algo);
}

// Whether MLA's decode runs AITER's persistent kernel, its splits merged by a reduce after it
// (ForwardConfig::mla_persistent): the engines pad the query heads to 16.
bool persistent_mla(const Ctx& c) {
  using P = ForwardConfig::MlaPersistent;
  if (!c.f.aiter_mla) return false;
  const double heads = std::max(16.0, c.heads);
  switch (c.f.mla_persistent) {
    // SGLang tests its cache against its fp8 dtype (e4m3; fnuz on gfx942), not any fp8.
    case P::fp8_cache_or_other_heads: return c.kv == DType::fp8_e4m3 || (heads != 16 && heads != 128);
    case P::from_16_heads: return c.heads >= 16;
    case P::off: break;
  }
  return false;
}

// The decode kernel of attention shape `a`: MLA's over its latent cache (heads absorbed) in
// AITER's asm kernel a class of its own (ForwardConfig::aiter_mla,
// hw::KernelClass::attention_decode_mla), others the decode attention class.
hw::KernelClass decode_class(const Ctx& c, const ops::AttentionShape& a) {
  return a.latent_kv && c.f.aiter_mla ? hw::KernelClass::attention_decode_mla : hw::KernelClass::attention_decode;
}

GraphOp& attention_op(Ctx& c, const ops::AttentionShape& a, const ops::AttentionCounts& n, Scale scale) {
  GraphOp& op = c.g.add("attention", OpClass::attention, Block::attention, ops::attention_cost(a, n));
  op.scale = scale;
  // Decode tokens over the cache run a decode kernel (attention_ops refines a fused one).
  if (scale == Scale::decode_attention) op.kernel = decode_class(c, a);
  if (c.g.attention_count < model::Graph::kMaxAttention) {
    op.attention = static_cast<std::int8_t>(c.g.attention_count);
    c.g.attention[c.g.attention_count++] = a;
  } else {
    c.g.overflow = true;
  }
  return op;
}

// One chip's share (1/ep: attention is data-parallel across EP groups) of a step's counts.
ops::AttentionCounts per_chip(ops::AttentionCounts n, double ep) { return n *= 1 / ep; }

// The attention kernels of a pass: the shape's own counts, or a step's prefill chunks and
// decode tokens (one kernel or two, StepMix::fused_attention). `prefill` / `decode` select
// the kinds to emit (MLA runs them on different paths). Returns the first op made, or null.
GraphOp* attention_ops(Ctx& c, const ops::AttentionShape& a, bool prefill, bool decode) {
  if (c.mix == nullptr) {
    return &attention_op(c, a, ops::attention_counts(a), c.q_len > 1 ? Scale::prefill_attention : Scale::decode_attention);
  }
  const bool win = a.window > 0;
  const ops::AttentionCounts p = per_chip(win ? c.mix->prefill_window : c.mix->prefill_full, c.ep);
  const ops::AttentionCounts d = per_chip(win ? c.mix->decode_window : c.mix->decode_full, c.ep);
  const bool has_p = prefill && c.mix->prefill_seqs > 0, has_d = decode && c.mix->decode_seqs > 0;
  if (c.mix->fused_attention && prefill && decode) {
    if (!has_p && !has_d) return nullptr;
    ops::AttentionCounts both = p;
    both += d;
    GraphOp& op = attention_op(c, a, both, Scale::fused_attention);
    // One varlen kernel: with no prefill chunk in it, it runs as a decode kernel.
    if (!has_p) op.kernel = decode_class(c, a);
    return &op;
  }
  GraphOp* first = nullptr;
  if (has_p) first = &attention_op(c, a, p, Scale::prefill_attention);
  if (has_d) {
    GraphOp* op = &attention_op(c, a, d, Scale::decode_attention);
    if (first == nullptr) first = op;
  }
  return first;
}

void attention_block(Ctx& c, double window) {
  const ModelConfig& m = c.m;
  const double h = static_cast<double>(m.hidden), H = static_cast<double>(m.heads), T = c.tokens;
  const double hd = static_cast<double>(m.head_dim);
  layer_norm(c, "input_norm", "add_input_norm", "attn_allreduce_norm", Block::attention, outer_tokens(c), h, h);
  tp_enter(c, "attn_allgather", Block::attention);
  ops::AttentionShape a;
  a.batch = c.batch;
  a.q_len = c.q_len;
  a.kv_len = c.kv_len;
  a.causal = true;
  a.window = window;
  a.tile_keys = hw::class_efficiency(c.sys.chip.efficiency, hw::KernelClass::attention).tile_keys;
  a.impl = c.f.attention;
  a.dtype = c.act;
  a.kv_dtype = c.kv;
  // Attention's matrix math runs at the activations' rate whatever the GEMMs do (fp8 GEMMs of
  // W8A8 serving, Transformer Engine's fp8 training), and whatever the KV cache holds: an fp8
  // cache halves the keys' and values' bytes, not the math's time. vLLM's FlashAttention-3
  // runs QK and PV in fp8 with a cache of fp8, but with the two-level fp32 accumulation that
  // keeps it accurate at long context its prefill is no faster than bf16's: "similar TTFT",
  // "slight TTFT speedups ... for long contexts" at head_dim 128, slower at 256 (vLLM blog
  // "The State of FP8 KV-Cache and Attention Quantization in vLLM", 2026-04-22, single-request
  // H100 sweep; vllm-project/flash-attention PRs #104, #125).
  a.compute = c.act;
  double o_in = 0;
  // vLLM's MLA attention op (ForwardConfig::mla_op): the ops from `first` to the last built
  // marked as its own kernels or as the projections it holds. vLLM 0.8's runs from q_b_proj to o_proj's
  // all-reduce (not kv_a_proj and its norm, which the model runs before it), later ones from
  // the cache write to the op's copies after attention.
  using InOp = GraphOp::InAttentionOp;
  const bool in_op = m.is_mla() && c.f.mla_op != ForwardConfig::MlaOp::attention;
  const bool projections = in_op && c.f.mla_op == ForwardConfig::MlaOp::projections;
  const auto mark = [&](int first, InOp how) {
    for (int i = first; i < c.g.op_count; ++i) c.g.ops[i].attention_op = how;
  };
  int o_first = -1;  // o_proj's first op (with its activations' quantisation)
  if (m.is_mla()) {
    // The pass's prefill and decode paths (MLA runs them apart), and their tokens: the step's
    // prefill chunks' and its decodes' (this group's: attention is data-parallel over ep).
    const bool prefill = c.mix != nullptr ? c.mix->prefill_seqs > 0 : c.q_len > 1;
    const bool decode = c.mix != nullptr ? c.mix->decode_seqs > 0 : c.q_len <= 1;
    const double prefill_T = c.mix != nullptr ? c.mix->prefill_tokens / c.ep : T;
    const double dt = c.mix != nullptr ? c.mix->decode_tokens / c.ep : T;
    const auto& la = m.mla;
    const double qk = static_cast<double>(la.qk_nope_head_dim + la.qk_rope_head_dim);
    const double rope = static_cast<double>(la.qk_rope_head_dim), nope = static_cast<double>(la.qk_nope_head_dim);
    const double lora = static_cast<double>(la.kv_lora_rank), v = static_cast<double>(la.v_head_dim);
    // The engines' one GEMM of both down-projections (ForwardConfig::fused_qkv_a), or two.
    const bool fused_a = c.f.fused_qkv_a && la.q_lora_rank > 0;
    if (fused_a) {
      const double n = static_cast<double>(la.q_lora_rank) + lora + rope;
      gemm(c, "qkv_a_proj", Block::attention, T, h, n, h * n, h * n, false);
    }
    if (la.q_lora_rank > 0) {
      const double ql = static_cast<double>(la.q_lora_rank);
      if (!fused_a) gemm(c, "q_a_proj", Block::attention, T, h, ql, h * ql, h * ql, false);
      norm(c, "q_a_norm", Block::attention, T, ql, ql);
      const int q_b = c.g.op_count;
      gemm(c, "q_b_proj", Block::attention, T, ql, c.heads * qk, ql * H * qk, ql * H * qk, false);
      if (projections) mark(q_b, InOp::projection);  // with its activations' quantisation
    } else {
      const int q = c.g.op_count;
      gemm(c, "q_proj", Block::attention, T, h, c.heads * qk, h * H * qk, h * H * qk, false);
      if (projections) mark(q, InOp::projection);
    }
    if (!fused_a) gemm(c, "kv_a_proj", Block::attention, T, h, lora + rope, h * (lora + rope), h * (lora + rope), false);
    norm(c, "kv_a_norm", Block::attention, T, lora, lora);
    const int rope_op = c.g.op_count;
    const double ab = bytes(c.act);
    if (projections) {
      // vLLM 0.8's op runs RoPE itself, outside the compiled graph: DeepseekScalingRotaryEmbedding
      // .forward's PyTorch ops (vllm/model_executor/layers/rotary_embedding.py at v0.8.4), eagerly,
      // once for each path (MLACommonImpl.forward: the decode tokens', then the prefill's), after
      // making the queries' RoPE part contiguous and writing both results back
      // (`decode_q_pe[...], decode_k_pe[...] = self.rotary_emb(...)`): 16 kernels a path
      // (ops::rope_torch_cost). vllm-project/vllm PR #19771 counts the same decomposition from
      // the other side: its fused kernel took "approximately from 37 to 25" launches a layer.
      const auto torch_rope = [&](const char* name, double rows, Scale scale) {
        c.g.add(name, OpClass::elementwise, Block::attention, ops::rope_torch_cost({rows, 1, c.act, DType::fp32}, c.heads, rope)).scale =
            scale;
      };
      if (decode) torch_rope("rope_decode", dt, Scale::decode_tokens);
      if (prefill) torch_rope("rope_prefill", prefill_T, Scale::prefill_tokens);
    } else {
      c.g.add("rope", OpClass::elementwise, Block::attention, ops::rope_cost({T, (c.heads + 1) * rope, c.act, DType::fp32}, rope));
    }
    if (!c.f.training) {
      // The latent and the shared RoPE key of the new tokens, written into the cache in the KV dtype.
      copy_kernel(c, "kv_cache_write", Block::attention, T * (lora + rope) * ab, T * (lora + rope) * bytes(c.kv));
    }
    // A copy kernel of a path's `rows`: `read` and `written` bytes a row.
    const auto copy = [&](const char* name, double rows, double read, double written, Scale scale) {
      copy_kernel(c, name, Block::attention, rows * read, rows * written).scale = scale;
    };
    // vLLM's op writes each path's output into the step's output tensor (MLACommonImpl.forward:
    // `output[num_decode_tokens:] = self._forward_prefill(...)`, `output[:num_decode_tokens] =
    // self._forward_decode(...)`), a copy of the heads' attention output, or under 0.8 of o_proj's
    // reduced output (o_proj inside the op): `out` values a row. (Graph order is not run order:
    // the copies' times add where they stand.)
    const double out = projections ? h : c.heads * v;
    if (prefill) {
      // Prefill: decompress K and V of every position for all local heads, then MHA.
      const double positions = c.mix != nullptr ? c.mix->prefill_positions / c.ep : c.batch * c.kv_len;
      gemm(c, "kv_b_proj", Block::attention, positions, lora, c.heads * (nope + v), lora * H * (nope + v),
           lora * H * (nope + v), false, false, Scale::prefill_positions);
      // The keys attention reads, assembled into one tensor of qk columns a head: each
      // position's nope columns of every head beside its one RoPE key, which the heads share
      // (vLLM's torch.cat((k_nope, k_pe.expand(...)), dim=-1) in MLACommonImpl._forward_prefill;
      // SGLang's copies into torch.empty_like(q) in DeepseekV2AttentionMLA.forward_normal, later
      // its concat_mla_k kernel): one kernel reading both, writing the keys.
      copy("k_concat", positions, (c.heads * nope + rope) * ab, c.heads * qk * ab, Scale::prefill_positions);
      // vLLM to 0.8.4 (ForwardConfig::mla_pad_v): V padded with zeros to qk columns for
      // FlashAttention (torch.nn.functional.pad: reads V, writes the padded copy), attention
      // run with V and its output that wide, and the output's first v columns of each head
      // copied out ([..., :v].reshape of a strided view) for o_proj. On a later chunk of a
      // prompt, each chunk of its cached context is decompressed, assembled and padded so too
      // (the positions); merging those partial outputs (merge_attn_states) is not priced.
      if (c.f.mla_pad_v) copy("v_pad", positions, c.heads * v * ab, c.heads * qk * ab, Scale::prefill_positions);
      ops::AttentionShape mha = a;
      mha.heads = mha.kv_heads = c.heads;
      mha.head_dim = qk;
      mha.v_head_dim = c.f.mla_pad_v ? qk : v;
      attention_ops(c, mha, true, false);
      if (c.f.mla_pad_v) copy("attn_out_slice", prefill_T, c.heads * v * ab, c.heads * v * ab, Scale::prefill_tokens);
      if (in_op) copy("attn_out_prefill", prefill_T, out * ab, out * ab, Scale::prefill_tokens);
    }
    if (decode) {
      // Decode with the up-projections absorbed: queries move into the latent space,
      // attention runs MQA-like over the cached latent, outputs move back.
      // Each head's k x n matrix (one batched GEMM), on 16-bit weights where the engine
      // dequantises them.
      const bool dq = c.f.absorb_dequantised;
      const double wb = dq ? bytes(c.act) : wbytes(c.dense_w, c.dense_scale_bits);
      const auto absorb = [&](const char* name, double k, double n) {
        GraphOp& op = dq ? gemm_16bit(c, name, Block::attention, dt * c.heads, k, n, H * k * n, H * k * n, Scale::decode_tokens)
                         : gemm(c, name, Block::attention, dt * c.heads, k, n, H * k * n, H * k * n, false, false, Scale::decode_tokens);
        op.cost.main_bytes += (c.heads - 1) * k * n * wb;  // one matrix per head
        op.weight_bytes *= c.heads;
      };
      absorb("q_absorb", nope, lora);
      ops::AttentionShape lat = a;
      lat.heads = c.heads;
      lat.kv_heads = 1;
      lat.head_dim = lora + rope;
      lat.v_head_dim = lora;
      lat.latent_kv = true;
      attention_ops(c, lat, false, true);
      if (persistent_mla(c)) {
        // AITER's persistent decode splits the step's keys over the CUs (get_mla_metadata_v1,
        // csrc/kernels/mla/metadata/v1_2_device.cuh: num_splits = min(CUs, max_split_per_batch x
        // sequences), vLLM passing no budget, SGLang 64 in all a sequence (32 with drafts), so
        // from 5 sequences all 304 of an MI300X) and its reduce merges each output row's splits
        // (mla_reduce_v1), each a partial output of `lora` fp32 values a head and its
        // log-sum-exp. The heads are padded to 16; a count gfx942's kernel does not run natively
        // (16, and 64 or 128 over an fp8 cache) is folded into groups of 16, each group a
        // sequence of the metadata's, the splits shared by them all: 16 heads a partial. Priced
        // at the CUs' splits whatever the step's sequences and at one row a sequence (a graph of
        // engine steps is fitted so, model::StepMix): fewer sequences carry longer chains of
        // splits, and a verification's k + 1 rows k + 1 times the partials, neither priced
        // (docs/serving.md#engines).
        const double heads = std::max(16.0, c.heads);
        const bool native = heads == 16 || (c.kv == DType::fp8_e4m3 && (heads == 64 || heads == 128));
        const double partial_heads = native ? heads : 16;
        const double cus = std::max(1, c.sys.chip.sms);
        GraphOp& op = c.g.add("attention_combine", OpClass::elementwise, Block::attention,
                              ops::attention_combine_cost(cus * partial_heads / heads, dt, heads, lora, c.act));
        op.scale = Scale::decode_tokens;
        op.kernel = hw::KernelClass::attention_combine;
      }
      absorb("v_absorb", lora, v);
      if (in_op) {
        // vLLM's op copies three times around FlashMLA, one op of three kernels: the query
        // concatenated into one tensor (`torch.cat([q_nope, q_pe], dim=-1)` in FlashMLA's and
        // Triton MLA's _forward_decode: lora + rope values a head), the absorbed output back to
        // token-major (_v_up_proj's `.transpose(0, 1).reshape(...)`: v a head), and the result
        // written into the step's output (`out`). Each read and written.
        const double row = (c.heads * (lora + rope) + c.heads * v + out) * ab;
        copy_kernel(c, "mla_op_copies", Block::attention, dt * row, dt * row, 3).scale = Scale::decode_tokens;
      }
    }
    // The op's own kernels: from the cache write (RoPE's too under 0.8) to its copies.
    if (in_op) mark(projections ? rope_op : rope_op + 1, InOp::own);
    o_in = c.heads * v;
    o_first = c.g.op_count;
    gemm(c, "o_proj", Block::attention, T, o_in, h, H * v * h, H * v * h, m.o_bias);
  } else {
    const double KV = static_cast<double>(m.kv_heads);
    if (c.f.merged_kernels) {
      const double qkv = (H + 2 * KV) * hd;
      gemm(c, "qkv_proj", Block::attention, T, h, (c.heads + 2 * c.kv_heads) * hd, h * qkv, h * qkv, m.qkv_bias);
    } else {
      gemm(c, "q_proj", Block::attention, T, h, c.heads * hd, h * H * hd, h * H * hd, m.qkv_bias);
      gemm(c, "k_proj", Block::attention, T, h, c.kv_heads * hd, h * KV * hd, h * KV * hd, m.qkv_bias);
      gemm(c, "v_proj", Block::attention, T, h, c.kv_heads * hd, h * KV * hd, h * KV * hd, m.qkv_bias);
    }
    if (m.qk_norm && m.qk_norm_whole) {
      // OLMo 2/3, OLMoE: one RMSNorm over all of q and one over all of k, so each chip gathers
      // the whole projections, normalises them with all the weights and keeps its heads (vLLM's
      // and SGLang's Olmo2Attention._apply_qk_norm: all-gather over tp, norm, split).
      if (c.tp > 1) {
        collective(c, "q_norm_allgather", Block::attention, comm::Collective::all_gather, T * H * hd * bytes(c.act), c.tp_group, c.f.algo);
        collective(c, "k_norm_allgather", Block::attention, comm::Collective::all_gather, T * KV * hd * bytes(c.act), c.tp_group, c.f.algo);
      }
      norm(c, "q_norm", Block::attention, T, H * hd, H * hd);
      norm(c, "k_norm", Block::attention, T, KV * hd, KV * hd);
    } else if (m.qk_norm) {
      // One head_dim weight for every head, or (Cohere) each head's own: H·hd and KV·hd of them,
      // the chip's heads' read.
      const bool own = m.qk_norm_per_head;
      GraphOp& qn = norm(c, "q_norm", Block::attention, T * c.heads, hd, own ? H * hd : hd);
      GraphOp& kn = norm(c, "k_norm", Block::attention, T * c.kv_heads, hd, own ? KV * hd : hd);
      if (own) qn.weight_bytes *= c.heads, kn.weight_bytes *= c.kv_heads;
    }
    if (m.positions == PositionKind::rope) {
      c.g.add("rope", OpClass::elementwise, Block::attention,
              ops::rope_cost({T, (c.heads + c.kv_heads) * hd, c.act, DType::fp32}, hd));
    }
    // K and V of the new tokens are written into the cache (in the KV dtype).
    if (!c.f.training) {  // no cache in training
      copy_kernel(c, "kv_cache_write", Block::attention, T * 2 * c.kv_heads * hd * bytes(c.act), T * 2 * c.kv_heads * hd * bytes(c.kv));
    }
    a.heads = c.heads;
    a.kv_heads = c.kv_heads;
    a.head_dim = hd;
    const double cp = static_cast<double>(c.f.cp);
    if (cp > 1) {
      // Balanced causal work: every chip computes 1/cp of the sequence's query-key pairs,
      // expressed as heads/cp over the whole sequence.
      a.q_len = c.q_len;
      a.heads = c.heads / cp;
      if (c.f.cp_ring) {
        collective(c, "cp_ring_kv", Block::attention, comm::Collective::all_gather, cp * T * 2 * c.kv_heads * hd * bytes(c.act),
                   c.cp_group, comm::Algo::ring);
      } else {
        a.kv_heads = std::max(1.0, c.kv_heads / cp);
        collective(c, "cp_alltoall_qkv", Block::attention, comm::Collective::all_to_all,
                   T * (c.heads + 2 * c.kv_heads) * hd * bytes(c.act), c.cp_group, comm::Algo::direct);
      }
    }
    GraphOp* att = attention_ops(c, a, true, true);
    if (att != nullptr) {
      if (m.attention_sinks) att->params = att->active_params = H;  // one logit per head
      att->weight_bytes = m.attention_sinks ? c.heads * bytes(c.act) : 0;
    }
    if (c.f.training && c.f.dropout && a.impl == ops::AttentionImpl::naive) {
      // Dropout on the materialised probabilities: read them, write them dropped and a 1-byte
      // mask (2 FLOPs each: compare, scale). Its backward reads the gradient and the mask and
      // writes the gradient: as many bytes as the forward.
      GraphOp& drop = elementwise(c, "attn_dropout", Block::attention, c.batch * a.heads * a.q_len, a.kv_len, 1,
                                  1 + 1.0 / bytes(c.act), 2);
      drop.backward = 1;
    }
    if (c.f.cp > 1 && !c.f.cp_ring) {
      collective(c, "cp_alltoall_out", Block::attention, comm::Collective::all_to_all, T * c.heads * hd * bytes(c.act),
                 c.cp_group, comm::Algo::direct);
    }
    o_in = c.heads * hd;
    gemm(c, "o_proj", Block::attention, T, o_in, h, H * hd * h, H * hd * h, m.o_bias);
  }
  tp_exit(c, "attn_allreduce", "attn_reducescatter", Block::attention);
  if (projections) mark(o_first, InOp::projection);  // o_proj and its all-reduce
  // Gemma 2/3: the attention's output is normalised before its residual add (a norm of its own:
  // the add stays with the next norm).
  if (m.sandwich_norms) norm(c, "attn_out_norm", Block::attention, outer_tokens(c), h, h);
  if (!c.f.merged_kernels) residual_add(c, "attn_residual", Block::attention, outer_tokens(c), h);
}

// Whether this pass runs a dense MLP of `width` (a dense layer's, or the shared experts') on every
// attention data-parallel group's rows gathered, split over all tp·ep chips
// (ForwardConfig::gathered_dense): where the split leaves each chip whole blocks of the
// checkpoint's scales (128 columns of DeepSeek's fp8 blocks; one column otherwise). SGLang's
// block-fp8 layers refuse a split that cuts a block (its --moe-dense-tp-size 1, PR #4836, came
// for DeepSeek-V3 on 32 GPUs, where 18432 columns over 32 are 4.5 blocks each); ridgeline keeps
// such an MLP on each group's own rows.
bool dense_gathered(const Ctx& c, double width) {
  return c.f.gathered_dense && c.ep_group.size > 1 && whole_blocks(c.dense_w, c.dense_scale_bits, width, c.tp * c.ep);
}

// An op on every group's rows gathered (GraphOp::gathered); none for a collective not made.
void mark_gathered(GraphOp* op) {
  if (op != nullptr) op->all_groups = op->gathered = true;
}

// The ops from `first` on.
void mark_gathered(Ctx& c, int first) {
  for (int i = first; i < c.g.op_count; ++i) mark_gathered(&c.g.ops[i]);
}

// Every group's T rows, padding and all, gathered to every chip of the expert-parallel group in
// the activations' dtype, or the chips' partial outputs of them reduce-scattered back to their
// groups: NCCL's (each engine calls its all_gather and reduce_scatter), its tuner's algorithm.
void gather_rows(Ctx& c, const char* name, Block block, comm::Collective kind) {
  const double bytes_ = c.tokens * c.ep * static_cast<double>(c.m.hidden) * bytes(c.act);
  mark_gathered(collective(c, name, block, kind, bytes_, c.ep_group, comm::Algo::automatic));
}

// A dense MLP of width `width` (whole model) split over `split` chips (default tp) on `rows`
// rows (default the group's tokens).
void dense_mlp(Ctx& c, Block block, double width, const char* gate, const char* up, const char* act, const char* down,
               double rows = -1, double split = -1) {
  const ModelConfig& m = c.m;
  const double h = static_cast<double>(m.hidden), T = rows >= 0 ? rows : c.tokens, w = width / (split > 0 ? split : c.tp);
  if (m.mlp == MlpKind::gelu) {
    gemm(c, up, block, T, h, w, h * width, h * width, m.mlp_bias);
    // tanh-approximated GELU: x^3 (2), scale and add (2), scale (1), tanh (1), add (1), two products (2) ~ 8.
    elementwise(c, act, block, T, w, 1, 1, 8);
    gemm(c, down, block, T, w, h, width * h, width * h, m.mlp_bias);
    return;
  }
  if (c.f.merged_kernels) {
    gemm(c, "gate_up_proj", block, T, h, 2 * w, 2 * h * width, 2 * h * width, m.mlp_bias);
  } else {
    gemm(c, gate, block, T, h, w, h * width, h * width, m.mlp_bias);
    gemm(c, up, block, T, h, w, h * width, h * width, m.mlp_bias);
  }
  c.g.add(act, OpClass::elementwise, block, ops::swiglu_cost({T, w, c.act, DType::fp32}));
  gemm(c, down, block, T, w, h, width * h, width * h, m.mlp_bias);
}

// A MoE layer's shared experts on `rows` rows, split over `split` chips, and their output added
// to the routed experts': one kernel reading both, writing the sum (vLLM's DeepseekV2MoE.forward,
// `experts(...) * routed_scaling_factor + shared_output`, one kernel under torch.compile; SGLang's
// `final_hidden_states + shared_output`; Megatron's MoE layer adds them too). `gathered`: on
// every group's rows (ForwardConfig::gathered_dense).
void shared_experts(Ctx& c, double rows, double split, bool gathered) {
  const auto& moe = c.m.moe;
  if (moe.shared_experts <= 0) return;
  const int first = c.g.op_count;
  dense_mlp(c, Block::moe, static_cast<double>(moe.shared_intermediate), "shared_gate", "shared_up", "shared_act",
            "shared_down", rows, split);
  elementwise(c, "shared_add", Block::moe, rows, static_cast<double>(c.m.hidden), 2, 1, 1);
  if (gathered) mark_gathered(c, first);
}

void moe_mlp(Ctx& c) {
  const ModelConfig& m = c.m;
  const auto& moe = m.moe;
  const double h = static_cast<double>(m.hidden), T = c.tokens;
  const double E = static_cast<double>(moe.experts), k = static_cast<double>(moe.experts_per_token);
  // Experts expert-parallel inside the tensor-parallel group (ForwardConfig::Experts::expert):
  // each of its te = tp chips holds whole experts, and its share of the tokens' pairs.
  const double te = c.f.experts == ForwardConfig::Experts::expert ? c.tp : 1;
  const double I = static_cast<double>(moe.intermediate), Il = te > 1 ? I : I / c.tp;
  // The tokens gathered for the experts (ForwardConfig::MoeA2A::gather), and the engine running
  // the whole block on the gathered rows (ForwardConfig::gathered_dense): the rows gathered
  // first, the router over all of them, and the shared experts beside the routed ones.
  const bool gather = c.f.moe_a2a == ForwardConfig::MoeA2A::gather && c.ep_group.size > 1;
  const bool front = gather && c.f.gathered_dense;
  const bool shared_front = front && dense_gathered(c, static_cast<double>(moe.shared_intermediate));
  if (front) gather_rows(c, "ep_allgather", Block::moe, comm::Collective::all_gather);
  const int router_first = c.g.op_count;
  const double router_rows = front ? T * c.ep : T;
  GraphOp& router = gemm_16bit(c, "router", Block::moe, router_rows, h, E, h * E, h * E);
  if (moe.router_bias) {
    router.params += E;
    router.active_params += E;
  }
  // The top k of the router's scores: one kernel over each token's E logits, read and written
  // (softmax_cost), or DeepSeek's group-limited router in the engine's own kernels, each over
  // the same bytes (ForwardConfig::routing, docs/serving.md#routing-kernels).
  const ops::Cost scores = ops::softmax_cost({router_rows, E, c.act, DType::fp32});
  const auto routing_op = [&](const char* name, hw::KernelClass kernel) {
    c.g.add(name, OpClass::elementwise, Block::moe, scores).kernel = kernel;
  };
  using Routing = ForwardConfig::Routing;
  const Routing routing_kind = moe.grouped_biased() ? c.f.routing : Routing::generic;
  switch (routing_kind) {
    case Routing::generic: routing_op("router_topk", hw::KernelClass::pointwise); break;
    case Routing::fused: routing_op("router_topk", hw::KernelClass::routing); break;
    case Routing::scored_pair: routing_op("router_scores", hw::KernelClass::pointwise); [[fallthrough]];
    case Routing::pair:
      routing_op("router_group_top2", hw::KernelClass::pointwise);
      routing_op("router_topk", hw::KernelClass::routing);
      break;
    case Routing::compiled: routing_op("router_topk", hw::KernelClass::routing_compiled); break;
  }
  if (front) mark_gathered(c, router_first);
  // Tokens leave for the chips holding their experts (expert parallelism) and come back.
  // Token-expert pairs of this chip: its tokens' T·k, or with whole experts inside the
  // tensor-parallel group (which holds the same T tokens on every chip), the 1/te of them
  // whose experts sit in this chip's column (docs/serving.md#moe-layouts). Under expert
  // parallelism the busiest chip receives (and returns) f.expert_imbalance times the mean,
  // and bounds the layer. Inside the tensor-parallel group no token moves: each chip picks
  // its own experts' pairs, and the group's all-reduce after the layer sums the outputs.
  // Padding rows masked before the experts (StepMix::masked_rows) are no token's pairs.
  const double masked = c.mix != nullptr ? c.mix->masked_rows / c.ep : 0;
  const double Tr = T - masked;  // the routed tokens
  const double routed = Tr * k / te;
  const double ep_size = c.ep * te;
  // Given, or the routing model's expectation over the Tr·ep tokens routed this pass (model/routing.hpp).
  const RoutingImbalance routing = routing_imbalance(m, c.f);
  const double imbalance = routing.at(Tr * c.ep);
  // The bytes of a pair each way: the activations', or DeepEP's (docs/serving.md#deepep): out
  // in fp8 where the experts compute in fp8 (a 4-byte scale per 128 values and 16 bytes of the
  // token's source), else in bf16, and back in bf16.
  const bool deepep = c.f.moe_a2a == ForwardConfig::MoeA2A::deepep && c.ep_group.size > 1;
  const double out_bytes = !deepep ? h * bytes(c.act) : is_fp8(c.compute_expert) ? h * (1 + 4.0 / 128) + 16 : h * 2;
  const double back_bytes = deepep ? h * 2 : h * bytes(c.act);
  // DeepEP's kernel for the size: the low-latency one while this chip sends at most
  // deepep_ll_tokens tokens, their pairs' bytes at the busiest chip's F for that many (or the
  // F the step model fits the limit at: deepep_ll_imbalance).
  const double ll_pairs = c.f.deepep_ll_tokens * k / te *
                          (c.f.deepep_ll_imbalance > 0 ? c.f.deepep_ll_imbalance : routing.at(c.f.deepep_ll_tokens * c.ep));
  const double share = deepep ? deepep_normal_share(m, c.ep_group, te) : 1;
  // One direction's all-to-all: the busiest chip's pairs, DeepEP's kernel for their bytes.
  const auto all_to_all = [&](const char* name, hw::KernelClass ll_class, double bytes_per_pair) {
    const double pair_bytes = routed * imbalance * bytes_per_pair, ll_max = deepep ? ll_pairs * bytes_per_pair : 0;
    if (GraphOp* op = collective(c, name, Block::moe, comm::Collective::all_to_all, pair_bytes, c.ep_group, comm::Algo::direct, ll_max, share)) {
      op->all_groups = true;
      if (deepep) op->kernel = deepep_kernel(ll_class, c.ep_group, deepep_normal(pair_bytes, ll_max));
    }
  };
  // Gathered instead (ForwardConfig::MoeA2A::gather): every group's T rows, padding and all, to
  // every chip of the expert-parallel group in the activations' dtype, whatever their experts
  // (vLLM's allgather_reducescatter, all_gatherv; SGLang's dp_gather into its MAX_LEN buffer;
  // TensorRT-LLM's allgather under attention DP), and each chip's partial outputs of every row
  // reduce-scattered back to the rows' groups. The busiest chip's routed pairs do not change what
  // moves: every chip receives every row.
  if (gather) {
    if (!front) gather_rows(c, "ep_allgather", Block::moe, comm::Collective::all_gather);
  } else {
    all_to_all("ep_dispatch", hw::KernelClass::deepep_dispatch, out_bytes);
  }
  // Balanced routing: this chip's E/(ep·te) experts receive routed pairs in expectation; an
  // expert's weights are read if at least one of the T·ep tokens routed over them picks it:
  // E/(ep·te)·(1 - (1 - k/E)^(Tr·ep)) of them are touched; rows repeating another
  // (StepMix::repeated_rows) pick the same experts and touch none more, masked rows none.
  const double local_experts = E / ep_size;
  const double repeated = c.mix != nullptr ? c.mix->repeated_rows / c.ep : 0;
  const double routed_touched = touched_experts(m, ep_size, (Tr - repeated) * c.ep);
  const double routed_pairs = routed * imbalance;  // pairs processed on this chip (balanced: T·ep·k/(ep·te))
  // MXFP4 experts as the engine's kernel pads them (ForwardConfig::mxfp4_expert_align): the
  // hidden width and this chip's intermediate share rounded up, hp and Ip, in their GEMMs'
  // shapes and weights (the parameters counted stay the checkpoint's).
  const double align = c.f.mxfp4_expert_align > 0 && is_mxfp4(c.expert_w, c.expert_scale_bits)
                           ? static_cast<double>(c.f.mxfp4_expert_align)
                           : 1;
  const double hp = std::ceil(h / align) * align, Ip = std::ceil(Il / align) * align;
  const double per_expert_gate_up = hp * 2 * Ip, per_expert_down = Ip * hp;
  // fp8 block-scaled experts run in fp8 by the engine's Triton fused-MoE kernel scale each
  // 128-wide K block's product in its loop, as the dense Triton kernel does (gemm_scaled): their
  // own class (gemm_expert_scaled). vLLM 0.12+ runs Triton's for experts split over 8 or more,
  // SGLang for experts split over any (its DeepGEMM MoE runner is expert parallelism's):
  // ForwardConfig::triton_moe_from_tp, for experts not expert-parallel (te = 1, one ep group).
  // Elsewhere the engines that call DeepGEMM run them in its grouped kernels (TensorRT-LLM in its
  // port of them, fp8_blockscale_gemm's GroupedWithOffset): gemm_expert_deepgemm, whose
  // activations are fp8 in 1x128 groups, quantised by a kernel before each GEMM (TensorRT-LLM's
  // scale_1x128 over the expanded rows) but where DeepEP's dispatch delivers them so. Every
  // other MoE kernel is gemm_expert's (docs/cost-model.md#grouped-gemms).
  const bool triton_moe = c.f.scaled_gemm == ForwardConfig::ScaledGemm::triton ||
                          (c.f.triton_moe_from_tp > 0 && te == 1 && c.ep == 1 && c.tp >= c.f.triton_moe_from_tp);
  const bool block_fp8 = c.expert_scale_bits > 0 && is_fp8(c.expert_w) && is_fp8(c.compute_expert);
  const bool deepgemm_moe = block_fp8 && !triton_moe;
  // The shared expert as one more expert of the fused kernel (ForwardConfig::fuse_shared_experts):
  // each routed token's pair with it beside its k, the expert touched once a token is routed, held
  // beside this chip's E experts; its own GEMMs and add not made (below).
  const bool fuse_shared = c.f.fuse_shared_experts && te == 1 && c.ep == 1 && !deepgemm_moe && moe.shared_experts == 1 &&
                           moe.shared_intermediate == moe.intermediate && !moe.expert_bias && !m.mlp_bias &&
                           c.expert_w == c.dense_w && c.expert_scale_bits == c.dense_scale_bits;
  const double fused = fuse_shared ? 1 : 0;
  // AITER's one-stage fused MoE (ForwardConfig::expert_reread_tile), for experts split by width
  // only: each expert's weights read once per tile of its rows, the fixed expert's with them
  // (GraphOp::reread_tile), one kernel.
  const bool onestage = c.f.expert_reread_tile > 0 && block_fp8 && !deepgemm_moe && te == 1 && c.ep == 1;
  const ExpertReads reads{onestage ? c.f.expert_reread_tile : 0, onestage && fuse_shared};
  const double touched_fixed = !onestage && fuse_shared && Tr > 0 ? 1 : 0;
  // (A row repeating another adds rows to its experts' tiles, though it touches none more.)
  const double touched = onestage ? expert_weight_reads(m, ep_size, Tr, reads) : routed_touched + touched_fixed;
  const double pairs = routed_pairs + fused * Tr;
  // Each expert's rows in whole tiles (below), at the busiest chip's rows: its share F of the pairs.
  const double row_tiles = deepgemm_moe ? expert_row_tiles(m, Tr * c.ep, imbalance, c.f.expert_tiles) : 1;
  // fp4 experts multiplied in 16 bits (MXFP4's, gpt-oss's, under gemm_dtype's rule): a kernel
  // that widens each weight tile in its loop before bf16 products, its own class where the chip's
  // file measures it (vLLM's default on a B200, FlashInfer's trtllm-gen MXFP4 x BF16), else
  // gemm_expert's figures.
  const bool w4a16 = c.expert_w == DType::fp4 && bits(c.compute_expert) == 16;
  // nn_params: the checkpoint's width of this chip's output (nn before the padding), whose bias
  // the parameters count.
  auto experts_gemm = [&](const char* name, double kk, double nn, double nn_params, double per_expert_local,
                          double per_expert_params, bool bias, bool quantise) -> GraphOp& {
    if (deepgemm_moe && quantise) group_quant(c, "experts_quant", Block::moe, pairs, kk, c.expert_w).all_groups = true;
    c.expert_a_fp8 = deepgemm_moe;
    GraphOp& op = gemm(c, name, Block::moe, pairs, kk, nn, (E + fused) * per_expert_params, (k + fused) * per_expert_params,
                       bias, true);
    c.expert_a_fp8 = false;
    op.kernel = onestage       ? hw::KernelClass::gemm_expert_onestage
                : block_fp8    ? (deepgemm_moe ? hw::KernelClass::gemm_expert_deepgemm : hw::KernelClass::gemm_expert_scaled)
                : w4a16        ? hw::KernelClass::gemm_expert_w4a16
                               : hw::KernelClass::gemm_expert;
    op.all_groups = true;
    // Each tile's fill where the class has one, over the pairs' rows, on its work, or on its
    // loads (hw::fill_reads).
    const double fill = hw::fill_k(c.sys.chip.efficiency, op.kernel);
    const bool fill_reads = hw::fill_reads(op.kernel);
    op.cost.matrix_pad_flops += ops::gemm_pad_flops(pairs, nn, kk, 1, ops::GemmTiling{}, fill_reads ? 0 : fill);
    // DeepGEMM's contiguous layouts run each expert's rows in whole tiles of 128
    // (model::expert_row_tiles), each padded row a row of the tiles' work with their fill; its
    // masked layout, behind DeepEP's low-latency kernels (while this chip's pairs are at most
    // ll_pairs), runs blocks of the height its heuristic picks, not priced. The other kernels'
    // row tiles are not priced either: Triton's fused MoE pads each expert to its configuration's
    // BLOCK_SIZE_M (docs/cost-model.md#row-tiles says why not), FlashInfer's and CUTLASS's tile
    // sizes are their autotuners' (docs/cost-model.md#row-tiles).
    if (deepgemm_moe) {
      op.row_tile_flops = 2 * nn * (kk + fill);
      op.row_tile_min_rows = !deepep ? 0 : ll_pairs > 0 ? ll_pairs : std::numeric_limits<double>::infinity();
      op.row_tile_pad = pairs > op.row_tile_min_rows ? op.row_tile_flops * pairs * (row_tiles - 1) : 0;
      op.cost.matrix_pad_flops += op.row_tile_pad;
    }
    // Weights: the touched experts only, each its own matrix (grouped GEMM). Where the class's
    // tile fill costs its loads, each expert's nn columns are read as if K were K + fill_k:
    // main-memory time beyond its bytes (Cost::main_pad_bytes), in the realistic time, not the
    // lower bound; expert_bytes, the realistic read of one touched expert, holds both.
    const double wb = wbytes(c.expert_w, c.expert_scale_bits);
    const double read_fill = fill_reads ? nn * fill * wb : 0;
    op.cost.main_bytes += (touched - 1) * per_expert_local * wb;
    op.cost.main_pad_bytes += touched * read_fill;
    op.expert_bytes = per_expert_local * wb + read_fill;
    op.touched = touched;
    op.touched_fixed = touched_fixed;
    op.reread_tile = reads.tile;
    op.reread_fixed = reads.fixed;
    op.weight_bytes = (local_experts + fused) * per_expert_local * wb + (bias ? local_experts * nn * bytes(c.act) : 0);
    if (bias) {
      // The bias of an expert's whole output, once per expert (split by tp: each chip holds nn of it).
      const double bias_split = te > 1 ? 1 : c.tp;
      op.params = E * per_expert_params + E * nn_params * bias_split;
      op.active_params = k * per_expert_params + k * nn_params * bias_split;
    }
    return op;
  };
  // An epilogue's work folded into a grouped GEMM (ForwardConfig::moe_fused_epilogues): fewer
  // bytes stored, fp32 vector FLOPs beside its products.
  auto fold_epilogue = [](GraphOp& op, double stores_saved, double fp32_flops) {
    op.cost.main_bytes -= stores_saved;
    op.cost.main_store_bytes -= stores_saved;
    if (op.cost.vector_flops == 0) op.cost.vector_dtype = DType::fp32;
    if (op.cost.vector_dtype == DType::fp32) op.cost.vector_flops += fp32_flops;
  };
  // The gate-up GEMM's rows, each token's copied once per routed expert first where the engine
  // does so (ForwardConfig::moe_expand_rows: TensorRT-LLM): read and written in the activations'
  // dtype, a gather as the kernel runs it (each copy reads its token's row).
  if (deepgemm_moe && !deepep && c.f.moe_expand_rows) {
    elementwise(c, "experts_permute", Block::moe, pairs, h, 1, 1, 0).all_groups = true;
  }
  GraphOp& gate_up = experts_gemm("experts_gate_up", hp, 2 * Ip, 2 * Il, per_expert_gate_up, h * 2 * I, moe.expert_bias, !deepep);
  const ops::Cost act = ops::swiglu_cost({pairs, Ip, c.act, DType::fp32});
  if (c.f.moe_fused_epilogues || onestage) {
    // SiLU-and-mul in stage 1's epilogue, or inside the one-stage kernel: of the product's
    // pairs x 2Ip only the activated pairs x Ip stored; the activation's FLOPs the GEMM's.
    fold_epilogue(gate_up, pairs * Ip * bytes(c.act), act.flops(hw::Unit::vector, DType::fp32));
  } else {
    c.g.add("experts_act", OpClass::elementwise, Block::moe, act).all_groups = true;
  }
  GraphOp& down = experts_gemm("experts_down", Ip, hp, h, per_expert_down, I * h, moe.expert_bias, true);
  // The weighted sum over k in stage 2's epilogue (or the one-stage kernel's), where this chip's
  // pairs are its own tokens' (no expert-parallel groups: behind pairs moved, a gather or DeepEP
  // the sum is priced as a kernel of its own): each pair's output scaled by its weight and added
  // into its token's row (a multiply and an add an element), the rows it adds into stored once
  // instead of the pairs' (the adds' traffic in the cache); with whole experts over the TP group
  // (te > 1) a chip may hold fewer pairs than tokens, and stores no more rows than pairs.
  const bool fused_sum = (c.f.moe_fused_epilogues || onestage) && !deepep && !gather && c.ep_group.size <= 1;
  if (fused_sum) fold_epilogue(down, std::max(0.0, pairs * hp - std::min(T, pairs) * h) * bytes(c.act), 2 * pairs * h);
  // AITER's one-stage kernel (ForwardConfig::expert_reread_tile) is both GEMMs in one launch,
  // `experts`: the activated rows stay on chip (neither stored by the gate-up nor read by the
  // down), each expert's weights whole read per tile.
  if (onestage && !c.g.overflow && c.g.op_count >= 2 && &down == &c.g.ops[c.g.op_count - 1] && &gate_up == &c.g.ops[c.g.op_count - 2]) {
    const double kept = pairs * Ip * bytes(c.act);
    ops::OpCost& a = gate_up.cost;
    a.add_work(down.cost);
    a.main_bytes -= 2 * kept;
    a.main_store_bytes -= kept;
    gate_up.name = "experts";
    gate_up.expert_bytes += down.expert_bytes;
    gate_up.weight_bytes += down.weight_bytes;
    gate_up.params += down.params;
    gate_up.active_params += down.active_params;
    --c.g.op_count;
  }
  // The busiest chip returns the outputs of its F times the mean pairs.
  if (gather) {
    // Each gathered row's weighted sum of the k/(ep·te) expert outputs this chip computed for it
    // (its pairs read once, every row written), then the rows reduce-scattered to their groups.
    // The mean chip's pairs: one kernel over the rows, priced without the busiest's share
    // (GraphOp::gathered), which its expert GEMMs carry.
    const double rows = T * c.ep;
    GraphOp& sum = elementwise(c, "moe_combine", Block::moe, rows, h, k / ep_size, 1, 2 * k / ep_size);
    sum.all_groups = sum.gathered = true;
    // The shared experts beside them where the engine runs them on the gathered rows (split over
    // all tp·ep chips), and the two outputs' sum, before the rows go back.
    if (shared_front) shared_experts(c, T * c.ep, c.tp * c.ep, true);
    gather_rows(c, "ep_reducescatter", Block::moe, comm::Collective::reduce_scatter);
  } else {
    all_to_all("ep_combine", hw::KernelClass::deepep_combine, back_bytes);
  }
  // Weighted sum of each token's k expert outputs, k + 1 with the shared expert inside the fused
  // kernel (DeepEP's combine sums them itself).
  if (!deepep && !gather && !fused_sum) elementwise(c, "moe_combine", Block::moe, T, h, k + fused, 1, 2 * (k + fused));
  if (!shared_front && !fuse_shared) shared_experts(c, T, c.tp, false);
}

void layer(Ctx& c, bool moe, double window) {
  attention_block(c, window);
  const double h = static_cast<double>(c.m.hidden);
  if (c.m.parallel_block) {
    // Phi, Cohere, StableLM's parallel residual: the MLP reads the input norm's output too (with
    // sequence parallelism, the sequence the attention gathered); the attention's output joins
    // the residual by an add of its own (the MLP's then by the next norm's, or its own add).
    if (c.f.merged_kernels) residual_add(c, "attn_residual", Block::attention, outer_tokens(c), h);
  } else {
    layer_norm(c, "post_attention_norm", "add_post_attention_norm", "mlp_allreduce_norm", Block::mlp, outer_tokens(c), h, h);
    tp_enter(c, "mlp_allgather", moe ? Block::moe : Block::mlp);
  }
  const char* act = c.m.mlp == MlpKind::gated_gelu ? "gelu_mul" : (c.m.mlp == MlpKind::gelu ? "gelu" : "silu_mul");
  if (moe) {
    moe_mlp(c);
  } else if (dense_gathered(c, static_cast<double>(c.m.intermediate))) {
    // A MoE model's dense layer on every group's rows gathered, its weights split over all
    // tp·ep chips, the outputs reduce-scattered back (ForwardConfig::gathered_dense).
    gather_rows(c, "dense_allgather", Block::mlp, comm::Collective::all_gather);
    const int first = c.g.op_count;
    dense_mlp(c, Block::mlp, static_cast<double>(c.m.intermediate), "gate_proj", "up_proj", act, "down_proj",
              c.tokens * c.ep, c.tp * c.ep);
    mark_gathered(c, first);
    gather_rows(c, "dense_reducescatter", Block::mlp, comm::Collective::reduce_scatter);
  } else {
    dense_mlp(c, Block::mlp, static_cast<double>(c.m.intermediate), "gate_proj", "up_proj", act, "down_proj");
  }
  tp_exit(c, "mlp_allreduce", "mlp_reducescatter", moe ? Block::moe : Block::mlp);
  if (c.m.sandwich_norms) norm(c, "mlp_out_norm", moe ? Block::moe : Block::mlp, outer_tokens(c), h, h);
  if (!c.f.merged_kernels) residual_add(c, "mlp_residual", moe ? Block::moe : Block::mlp, outer_tokens(c), h);
}

}  // namespace

void StepMix::add_decode(double kv, double window, double q) noexcept {
  ops::AttentionShape a;
  a.q_len = q;
  a.kv_len = kv;
  a.causal = true;
  decode_seqs += 1;
  decode_tokens += q;
  decode_full += ops::decode_attention_counts(a);
  a.window = window;
  decode_window += ops::decode_attention_counts(a);
}

void StepMix::scale(double n) noexcept {
  decode_seqs *= n, decode_tokens *= n, prefill_seqs *= n, prefill_tokens *= n, prefill_positions *= n, repeated_rows *= n, masked_rows *= n;
  for (ops::AttentionCounts* c : {&decode_full, &decode_window, &prefill_full, &prefill_window}) *c *= n;
}

void StepMix::add_prefill(double q, double kv, double window) noexcept {
  ops::AttentionShape a;
  a.q_len = q;
  a.kv_len = kv;
  a.causal = true;
  prefill_seqs += 1;
  prefill_tokens += q;
  prefill_positions += kv;
  const ops::AttentionCounts full = ops::attention_counts(a);
  prefill_full += full;
  // (Without a window, or one the chunk's context does not reach, the same counts.)
  if (!(window > 0) || window >= kv) {
    prefill_window += full;
    return;
  }
  a.window = window;
  prefill_window += ops::attention_counts(a);
}

namespace {

// x^n for a whole n ≥ 1 by squaring (the chips of a layout: 2, 4, 8 ... four squarings for 8).
double whole_power(double x, std::int64_t n) noexcept {
  double out = 1;
  for (; n > 0; n >>= 1, x *= x) {
    if (n & 1) out *= x;
  }
  return out;
}

}  // namespace

double busiest_of_binomials(double n, double p, double chips) noexcept {
  if (!(n >= 1) || !(p > 0) || !(chips > 1)) return n * std::clamp(p, 0.0, 1.0);
  const double count = std::floor(std::min(n, 1e7));  // a whole count (a chip's experts); 10^7 bounds the loop
  if (p >= 1) return count;
  const bool whole = chips == std::floor(chips) && chips <= 4096;
  const auto power = [&](double x) { return whole ? whole_power(x, static_cast<std::int64_t>(chips)) : std::pow(x, chips); };
  // E[max] = Σ_{x=1..n} P(max ≥ x) = Σ (1 − F(x−1)^chips), F the binomial CDF. Past one half
  // the complement counts instead: untouched ~ Bin(n, 1 − p), E[max touched] = n − E[min
  // untouched] = n − Σ (1 − G(x−1))^chips.
  const bool low = p <= 0.5;
  const double s = low ? p : 1 - p;  // the counted variable's probability, at most one half
  // The sum starts 12 standard deviations below the counted variable's mean, where the mass
  // below is under 1e-30 (every term before is 1 to the last bit): its first probability from
  // log-gamma there, or (1 − s)^n at 0, which cannot underflow when the start is 0 (then
  // n·s ≤ 144(1 − s), so n·ln(1/(1 − s)) stays far above −745).
  const double mu = count * s, sd = std::sqrt(count * s * (1 - s));
  const double x0 = std::max(0.0, std::floor(mu - 12 * sd));
  double pmf = x0 > 0 ? std::exp(std::lgamma(count + 1) - std::lgamma(x0 + 1) - std::lgamma(count - x0 + 1) + x0 * std::log(s) +
                                 (count - x0) * std::log1p(-s))
                      : std::pow(1 - s, count);
  double cdf = 0, sum = x0;
  const double ratio = s / (1 - s);
  for (double x = x0 + 1; x <= count; ++x) {
    cdf += pmf;  // F(x − 1)
    // Below 1e-17 of probability mass the power is 1 to the last bit (max) or 1 − chips·cdf
    // within 1e-30 (min): no power taken for the many x far below the maximum's range.
    const double term = low ? (cdf < 1e-17 ? 1 : 1 - power(cdf))
                            : (cdf < 1e-17 ? std::max(0.0, 1 - chips * cdf) : power(std::max(0.0, 1 - cdf)));
    sum += term;
    // Once the terms vanish (F near 1 for the max, 1 − G near 0 for the min) the rest do too.
    if (term < 1e-15) break;
    pmf *= (count - x + 1) / x * ratio;  // the pmf at x from the pmf at x − 1
  }
  return low ? sum : count - sum;
}

double touched_experts(const ModelConfig& m, double ep, double group_tokens) noexcept {
  const double E = static_cast<double>(m.moe.experts), k = static_cast<double>(m.moe.experts_per_token);
  const double p = 1 - std::pow(1 - k / E, group_tokens);
  const double mean = E / ep * p;
  if (!(ep > 1)) return mean;
  // The busiest chip, which the layer waits for. Each expert is touched with probability p,
  // independently (a balanced router), so a chip's count is Bin(E/ep, p) and the busiest of
  // ep chips reads the expected maximum of ep of them: DeepSeek-V3 decoding one token on 8
  // GPUs (32 experts each, p = 1/32) reads 2.54 experts on its busiest GPU where the mean is 1.
  // At least one whole expert once a token is routed (independence lets every chip draw none:
  // a lone decode token of Mixtral on 8 chips of one expert each makes two chips read one).
  return std::max(busiest_of_binomials(E / ep, p, ep), std::min(1.0, ep * mean));
}

double expert_weight_reads(const ModelConfig& m, double ep, double group_tokens, const ExpertReads& r) noexcept {
  if (!(r.tile > 0)) return touched_experts(m, ep, group_tokens);
  if (!(group_tokens > 0)) return 0;
  const double k = static_cast<double>(m.moe.experts_per_token);
  const double routed = group_tokens * k * expert_row_tiles(m, group_tokens, r.tile) / r.tile;
  return routed + (r.fixed ? std::ceil(group_tokens / r.tile) : 0);
}

ExpertReads expert_reads(const Graph& g) noexcept {
  for (int i = 0; i < g.op_count; ++i) {
    if (g.ops[i].reread_tile > 0) return {g.ops[i].reread_tile, g.ops[i].reread_fixed};
  }
  return {};
}

double expert_row_tiles(const ModelConfig& m, double group_tokens, double tile) noexcept {
  const double E = static_cast<double>(m.moe.experts), k = static_cast<double>(m.moe.experts_per_token);
  const double n = group_tokens, q = E > 0 ? k / E : 0, mean = n * q;
  if (!(tile > 1) || !std::isfinite(tile) || !(n > 0) || !(q > 0) || !std::isfinite(n)) return 1;
  if (n < 1) return tile;  // (the limit of tile·P(m ≥ 1)/E[m] as the tokens vanish)
  if (!(q < 1)) return tile * std::ceil(n / tile) / n;  // every expert takes every token
  const double sd = std::sqrt(mean * (1 - q));
  if (sd >= tile || mean > 0x1p52) return 1 + (tile - 1) / (2 * mean);
  // The pmf relative to its mode's, walked out both ways (σ < tile bounds the terms: each way
  // stops within about 9σ of the mode, where a term falls under 1e-16 of it; and at 64 tiles'
  // worth of rows whatever the rounding).
  const double top = std::floor(n), odds = q / (1 - q), most = 64 * tile;
  const double mode = std::min(top, std::floor((n + 1) * q));
  double rows = 0, tiled = 0;
  const auto add = [&](double x, double p) {
    rows += p * x;
    tiled += p * tile * std::ceil(x / tile);
  };
  add(mode, 1);
  for (double x = mode, p = 1, i = 0; x < top && i < most; ++i) {
    p *= (n - x) / (x + 1) * odds;
    ++x;
    if (p < 1e-16) break;
    add(x, p);
  }
  for (double x = mode, p = 1, i = 0; x > 0 && i < most; ++i) {
    p *= x / (n - x + 1) / odds;
    --x;
    if (p < 1e-16) break;
    add(x, p);
  }
  return rows > 0 ? tiled / rows : 1;
}

double expert_row_tiles(const ModelConfig& m, double tokens, double share, const ForwardConfig::ExpertTiles& t) noexcept {
  if (!(tokens >= t.from_tokens) || !(tokens >= t.swap_below)) return 1;
  return expert_row_tiles(m, tokens * share, t.small_upto > 0 && tokens <= t.small_upto ? 64 : kDeepGemmRowTile);
}

double deepep_normal_share(const ModelConfig& m, const comm::Placement& ep_group, double te) noexcept {
  const double E = static_cast<double>(m.moe.experts), k = static_cast<double>(m.moe.experts_per_token);
  const double P = ep_group.size, g = deepep_nvl_group(ep_group);
  if (!(P > 1) || !(k > 0) || !(E >= k) || !(te >= 1)) return 1;
  // NVLink groups (nodes, or DeepEP's groups of 8 in a larger domain: deepep_nvl_group) when the
  // group spans several, else its chips; with whole experts
  // inside each tensor-parallel group (te > 1) a chip's group holds the E/te experts of its
  // column, E/(units·te) a unit, and a token sends k/te pairs into it.
  const double units = P > g ? P / g : P, held = E / (units * te);
  // A unit is missed when all k experts come from the E - held it does not hold:
  // C(E - held, k) / C(E, k) = Π_{i<k} (E - held - i) / (E - i).
  double miss = 1;
  for (double i = 0; i < k; ++i) miss *= std::max(0.0, (E - held - i) / (E - i));
  return units * (1 - miss) * te / k;
}

double deepep_buffer_bytes(const ModelConfig& m, const ForwardConfig& f) noexcept {
  if (f.moe_a2a != ForwardConfig::MoeA2A::deepep || f.ep < 2 || !m.is_moe()) return 0;
  const double h = static_cast<double>(m.hidden), E = static_cast<double>(m.moe.experts), T = f.deepep_ll_tokens;
  const double d = 16 + std::max(2 * h, h + 4 * std::floor(h / 128)), c = 2 * h;
  return 2 * (std::max(T * d, E * T * c) + std::max(E * T * d, E * T * c) + 4 * E);
}

LayoutFault check(const ModelConfig& m, const ForwardConfig& f) noexcept {
  if (f.tp < 1 || f.tp > 4096) return LayoutFault::tp_range;
  if (f.ep < 1 || f.ep > 4096) return LayoutFault::ep_range;
  if (m.heads % f.tp != 0) return LayoutFault::tp_heads;
  if (!m.is_mla() && m.kv_heads % f.tp != 0 && f.tp % m.kv_heads != 0) return LayoutFault::tp_kv_heads;
  const std::int64_t width = m.is_moe() ? m.moe.intermediate : m.intermediate;
  if (width % f.tp != 0) return LayoutFault::tp_width;
  if (f.ep > 1 && !m.is_moe()) return LayoutFault::ep_dense;
  if (f.experts == ForwardConfig::Experts::expert && !m.is_moe()) return LayoutFault::experts_dense;
  if (f.cp > 1 && m.is_mla()) return LayoutFault::cp_mla;
  if (f.cp > 1 && !f.cp_ring && m.heads % (f.tp * f.cp) != 0) return LayoutFault::cp_ulysses;
  if (m.is_moe() && m.moe.experts % f.ep_size() != 0) return LayoutFault::ep_experts;
  // 0: the routing model (model/routing.hpp), within these bounds by construction.
  if (f.expert_imbalance != 0 && !(f.expert_imbalance >= 1 && f.expert_imbalance <= static_cast<double>(f.ep_size()))) {
    return LayoutFault::ep_imbalance;
  }
  return LayoutFault::none;
}

void validate(const ModelConfig& m, const ForwardConfig& f) {
  switch (check(m, f)) {
    case LayoutFault::none: return;
    case LayoutFault::tp_range: throw InputError(fmt::format("--tp: {} is out of range: expected 1 to 4096", f.tp));
    case LayoutFault::ep_range: throw InputError(fmt::format("--ep: {} is out of range: expected 1 to 4096", f.ep));
    case LayoutFault::tp_heads:
      throw InputError(fmt::format("--tp: {} does not divide the {} attention heads of {}", f.tp, m.heads, m.name));
    case LayoutFault::tp_kv_heads:
      throw InputError(fmt::format("--tp: {} and the {} KV heads of {} do not divide one another", f.tp, m.kv_heads, m.name));
    case LayoutFault::tp_width:
      throw InputError(fmt::format("--tp: {} does not divide the MLP width {} of {}", f.tp,
                                   m.is_moe() ? m.moe.intermediate : m.intermediate, m.name));
    case LayoutFault::ep_dense: throw InputError(fmt::format("--ep: {} is not a mixture of experts", m.name));
    case LayoutFault::cp_mla: throw InputError(fmt::format("--cp: context parallelism is not modelled for MLA ({})", m.name));
    case LayoutFault::cp_ulysses:
      throw InputError(fmt::format("--cp: Ulysses needs tp {} x cp {} to divide the {} heads (or --cp-algo ring)", f.tp, f.cp, m.heads));
    case LayoutFault::experts_dense: throw InputError(fmt::format("--experts: ep: {} is not a mixture of experts", m.name));
    case LayoutFault::ep_experts:
      if (f.experts == ForwardConfig::Experts::expert) {
        throw InputError(fmt::format("--experts: ep over --tp {} x --ep {} = {} chips does not divide the {} experts of {}", f.tp, f.ep,
                                     f.ep_size(), m.moe.experts, m.name));
      }
      throw InputError(fmt::format("--ep: {} does not divide the {} experts of {}", f.ep, m.moe.experts, m.name));
    case LayoutFault::ep_imbalance:
      throw InputError(fmt::format("--expert-imbalance: {} is out of range: expected auto, or 1 (balanced) to {} (every token on one chip: the "
                                   "expert-parallel size)",
                                   f.expert_imbalance, f.ep_size()));
  }
}

comm::Wiring collective_wiring(const hw::System& sys, const ForwardConfig& f) noexcept {
  comm::Wiring w = comm::wiring(sys);
  // In-switch reduction gates NVLS alone (comm::options).
  if (!f.nccl_nvls) w.topology.in_switch_reduction = false;
  return w;
}

void build_forward(const ModelConfig& m, const ForwardConfig& f, const hw::System& sys, const PassShape& shape,
                   Graph& g) noexcept {
  g.clear();
  const DType act = f.precision.activation;
  const GemmDtypes gd = gemm_dtypes(m, f, sys.chip);
  const DType dense_w = gd.dense_weight, expert_w = gd.expert_weight;
  const double dense_scale = gd.dense_scale_bits, expert_scale = gd.expert_scale_bits;
  // Activations keep the run's dtype even when the checkpoint stores fp16.
  const double tp = static_cast<double>(f.tp), ep = static_cast<double>(f.ep);
  // A step mix: the head's rows are its decode tokens and one per prefill chunk, its tokens
  // those of every other op.
  const double seqs = shape.mix != nullptr ? shape.mix->head_rows() : shape.batch;
  const double pass_tokens = shape.mix != nullptr ? shape.mix->tokens() : shape.batch * shape.q_len;
  Ctx c{m, f, sys, g, seqs / ep, shape.q_len, shape.kv_len,
        pass_tokens / ep / static_cast<double>(std::max<std::int64_t>(1, f.cp)), tp, ep,
        static_cast<double>(m.heads) / tp, std::max(1.0, static_cast<double>(m.kv_heads) / tp), act,
        f.precision.kv_cache.value_or(act), dense_w, expert_w,
        gd.dense, gd.expert,
        dense_scale, expert_scale};
  c.mix = shape.mix;
  if (f.tp > 1 || f.ep > 1 || f.cp > 1) {
    // Ranks as Megatron orders them: tensor parallel innermost, then context, then expert.
    c.wiring = collective_wiring(sys, f);
    if (f.tp > 1) c.tp_group = comm::place(c.wiring, tp);
    if (f.cp > 1) c.cp_group = comm::place(c.wiring, static_cast<double>(f.cp), tp);
    if (f.ep > 1) c.ep_group = comm::place(c.wiring, ep, tp * static_cast<double>(std::max<std::int64_t>(1, f.cp)));
    if (f.ep > 1 && f.gathered_dense) c.dp_group = comm::place(c.wiring, tp * ep);
  }
  const double h = static_cast<double>(m.hidden), V = static_cast<double>(m.vocab);
  // Embedding and LM head stay in the checkpoint's dtype: quantised checkpoints (deepseek
  // fp8, gpt-oss mxfp4) leave them unconverted, and so does a quantising --weight-dtype (fewer
  // than 16 bits: fp8, fp4, int8, int4), as every quantiser and engine quantises the linear
  // layers only (docs/models.md#quantised-weights); a float32 checkpoint's are loaded in the
  // activations' dtype then. A 16- or 32-bit --weight-dtype converts them too.
  DType table_w = m.weight_dtype;
  if (f.precision.weight) {
    table_w = bits(*f.precision.weight) >= 16 ? *f.precision.weight : bits(m.weight_dtype) > 16 ? act : m.weight_dtype;
  }

  g.begin_group("embedding", 1);
  {
    GraphOp& e = g.add("embedding", OpClass::embedding, Block::embedding,
                       ops::embedding_cost({c.tokens, h, act, DType::fp32}));
    e.params = V * h;
    e.weight_bytes = V / tp * h * bytes(table_w);
    // Vocab-parallel embedding: each chip holds V/tp rows and the partial rows are all-reduced;
    // training with sequence parallelism reduce-scatters them over the sequence (Megatron).
    // (Inference keeps the all-reduce: it stands for the reduce-scatter and the gather of the
    // last positions before the head, the same bytes.)
    if (f.training) {
      tp_exit(c, "embedding_allreduce", "embedding_reducescatter", Block::embedding);
    } else {
      tp_allreduce(c, "embedding_allreduce", Block::embedding);
    }
    // Gemma: the looked-up rows times √h (vLLM's and SGLang's Gemma models multiply after the
    // lookup: one pass over the step's T·h activations).
    if (m.embed_scale) g.add("embed_scale", OpClass::elementwise, Block::embedding, ops::elementwise_cost({c.tokens, h, act, DType::fp32}, 1, 1, 1));
    if (m.positions == PositionKind::learned) {
      GraphOp& p = g.add("position_embedding", OpClass::embedding, Block::embedding,
                         ops::elementwise_cost({c.tokens, h, act, DType::fp32}, 2, 1, 1));
      p.params = static_cast<double>(m.max_positions) * h;
      p.active_params = 0;
      p.weight_bytes = p.params * bytes(table_w);
    }
  }

  // Layer kinds: dense or MoE MLP x full or sliding-window attention.
  const double L = static_cast<double>(m.layers);
  const double moe_layers = static_cast<double>(m.moe_layer_count());
  const double dense_layers = L - moe_layers;
  const double sliding = static_cast<double>(m.sliding_layers);
  const double window = static_cast<double>(m.sliding_window);
  // Sliding layers are spread over dense and MoE layers in proportion (exact when all
  // layers share an MLP kind, as in every bundled model).
  const double dense_sliding = L > 0 ? std::round(sliding * dense_layers / L) : 0;
  const double moe_sliding = sliding - dense_sliding;
  struct Kind {
    const char* name;
    double count;
    bool moe;
    double window;
  };
  const Kind kinds[] = {{"dense layers", dense_layers - dense_sliding, false, 0},
                        {"dense layers (sliding window)", dense_sliding, false, window},
                        {"moe layers", moe_layers - moe_sliding, true, 0},
                        {"moe layers (sliding window)", moe_sliding, true, window}};
  for (const Kind& k : kinds) {
    if (k.count <= 0) continue;
    g.begin_group(k.name, k.count);
    layer(c, k.moe, k.window);
  }

  g.begin_group("head", 1);
  const int head_start = g.op_count;
  // Logits only for the last position of each sequence.
  // Inference needs logits for the last position of each sequence; training for every token.
  const double rows = f.training ? c.tokens : c.batch;
  // Merged kernels: the last residual add is inside the final norm, over every token.
  GraphOp& final_norm = f.merged_kernels ? residual_norm(c, "final_norm", "add_final_norm", Block::head, outer_tokens(c), h, h)
                                         : norm(c, "final_norm", Block::head, f.training && f.sequence_parallel ? rows / tp : rows, h, h);
  if (f.training) tp_enter(c, "head_allgather", Block::head);
  c.dense_w = table_w;
  c.dense_scale_bits = 0;
  // Training keeps the LM head in the activations' dtype (Transformer Engine's fp8 recipe
  // leaves the output layer in bf16). Serving multiplies it at its weights' dtype: a
  // --compute-dtype narrower than them is the quantised layers', not the head's, which no
  // engine quantises (docs/models.md#quantised-weights).
  const bool narrower = f.precision.compute && bits(*f.precision.compute) < bits(table_w);
  c.compute_dense = f.training ? act
                    : f.precision.compute && !narrower ? *f.precision.compute
                                                       : ops::default_compute_dtype(act, table_w, sys.chip);
  // SGLang under attention data parallelism (ForwardConfig::gathered_dense), unless
  // --enable-dp-lm-head (python/sglang/srt/layers/logits_processor.py, dp_attention.py): every
  // group's last tokens gathered as LogitsMetadata gathers them, by SUM_LEN's all-reduce
  // (dp_gather_replicate, _dp_gather_via_all_reduce: the buffer zeroed, the group's rows copied
  // in, an all-reduce over the whole TP group); the head vocab-parallel over all tp·ep chips on
  // them (ParallelLMHead over the whole TP group); their logits all-gathered to every chip
  // (tensor_model_parallel_all_gather along the vocabulary: all_gather_into_tensor, then the
  // chips' slices moved into rows, a copy of every logit); and the group's own rows copied out
  // for its sampling (dp_scatter: its rows zeroed, then copied).
  // (dp_group is placed only under gathered_dense with ep > 1.)
  const bool head_gathered = !f.training && c.dp_group.size > 1;
  const double head_rows = head_gathered ? rows * c.ep : rows, head_split = head_gathered ? tp * c.ep : tp;
  if (head_gathered) {
    mark_gathered(&copy_kernel(c, "head_zero", Block::head, 0, head_rows * h * bytes(act)));
    copy_kernel(c, "head_copy_in", Block::head, rows * h * bytes(act), rows * h * bytes(act));
    mark_gathered(collective(c, "head_gather", Block::head, comm::Collective::all_reduce, head_rows * h * bytes(act), c.dp_group, f.algo));
  }
  GraphOp& head = gemm(c, "lm_head", Block::head, head_rows, h, V / head_split, m.tie_embeddings ? 0 : h * V, h * V, m.head_bias);
  if (m.tie_embeddings) head.weight_bytes = 0;  // the embedding table, counted once
  if (head_gathered) mark_gathered(&head);
  if (f.training) {
    // Vocab-parallel cross-entropy as Megatron-Core runs it, fused or not (the same passes:
    // tensor_parallel/cross_entropy.py), with the max and the sum all-reduced over tp (two
    // scalars per token, fp32). Per logit of the V/tp slice: the bf16 logits cast to fp32 (read
    // 2, write 4) and their max (read 4); the max subtracted and the exponential taken in place
    // (read 4, write 4 each); their sum (read 4); the division into the softmax kept for the
    // backward (read 4, write 4): 38 bytes in 5 kernels. The backward scales the softmax by the
    // incoming gradient in place (8) and casts it to bf16 (read 4, write 2): 14 bytes in 2.
    // Checked on Liger-Kernel's H100 timings of Megatron's kernels (docs/training.md#small-kernels).
    const double logits = rows * V / tp;
    Cost ce;
    ce.add_main_bytes(34 * logits);
    ce.add_main_stores(4 * logits);
    ce.add_flops(hw::Unit::vector, DType::fp32, 5 * logits);
    ce.launches = 5;
    c.g.add("cross_entropy", OpClass::elementwise, Block::head, ce).backward = 14.0 / 38.0;
    collective(c, "loss_allreduce", Block::head, comm::Collective::all_reduce, rows * 2 * 4, c.tp_group, f.algo);
  } else if (head_gathered) {
    const double logits = head_rows * V * bytes(act);
    mark_gathered(collective(c, "logits_allgather", Block::head, comm::Collective::all_gather, logits, c.dp_group, f.algo));
    mark_gathered(&copy_kernel(c, "logits_rearrange", Block::head, logits, logits));
    copy_kernel(c, "logits_zero", Block::head, 0, rows * V * bytes(act));
    copy_kernel(c, "logits_scatter", Block::head, rows * V * bytes(act), rows * V * bytes(act));
  } else {
    collective(c, "logits_allgather", Block::head, comm::Collective::all_gather, rows * V * bytes(act), c.tp_group, f.algo);
  }
  if (!f.training) {
    // Greedy sampling, as vLLM's benchmark_serving runs it (temperature 0): the logits cast to fp32
    // (read 2 bytes, write 4 a logit) and their argmax (read 4, one compare), two kernels over
    // each sequence's whole vocabulary (vLLM V1's Sampler: logits.to(torch.float32), then
    // argmax when every request is greedy; vllm/v1/sample/sampler.py).
    const double logits = rows * V;
    // A kernel over every logit: `read` bytes (in-place stores among them) and `write` bytes of new output, `flops` fp32 vector FLOPs and `exps`
    // exponentials (on the special-function units) a logit.
    const auto pass = [&](const char* name, double read, double write, double flops, double exps) {
      Cost k;
      k.add_main_bytes(read * logits);
      if (write > 0) k.add_main_stores(write * logits);
      k.add_flops(hw::Unit::vector, DType::fp32, flops * logits);
      k.special_ops = exps * logits;
      k.launches = 1;
      c.g.add(name, OpClass::elementwise, Block::head, k);
    };
    if (act != DType::fp32) pass("sample_cast", bytes(act), 4, 1, 0);  // (on fp32 logits .to(float32) runs no kernel)
    const bool v0 = f.sampler == ForwardConfig::Sampler::probs, draws = f.sampling == ForwardConfig::Sampling::random;
    // vLLM V0's Sampler.forward (vllm/model_executor/layers/sampler.py) at any temperature, and
    // every engine at one (docs/serving.md#sampling: vLLM V1's apply_temperature, SGLang's and
    // TensorRT-LLM's alike): logits.div_(temperatures) in place (read 4, write 4; a greedy
    // request's temperature is 1 in V0), then torch.softmax in fp32. A row of the vocabulary in
    // fp32 (128256 x 4 = 513 kB) is past a multiprocessor's shared memory, so PyTorch's softmax
    // kernel (cunn_SoftMaxForward) reads it three times: its max, its sum of exponentials, and
    // the output it writes (read 12, write 4; an exp in the sum and one in the output).
    if (v0 || draws) {
      pass("sample_temperature", 8, 0, 1, 0);  // in place: its stores go back to the lines it read
      pass("sample_softmax", 12, 4, 6, 2);
    }
    if (v0) {
      // V0 also takes torch.log_softmax in fp32, alike, its output x - max - log(sum) with one
      // exp a logit, then torch.argmax over logprobs[sample_indices], a gathered copy (read 4,
      // write 4) read once more (4). For a greedy batch 48 bytes a logit more than V1's greedy
      // path, in four kernels.
      pass("sample_log_softmax", 12, 4, 5, 1);
      pass("sample_gather", 4, 4, 0, 0);
    }
    if (draws && f.draw == ForwardConfig::Draw::flashinfer) {
      // SGLang (python/sglang/srt/layers/sampler.py): `logits[:] = torch.softmax(logits, dim=-1)`,
      // the softmax above into a new tensor and a copy back over the logits (read 4, write 4);
      // then FlashInfer's top_k_top_p_sampling_from_probs, one kernel over each row: a uniform
      // against the running sum, then its check of the drawn token, at least one read of the
      // row (4; a second read of a row the L2 no longer holds is not counted).
      pass("sample_copy", 4, 4, 0, 0);
      pass("sample_draw", 4, 0, 2, 0);
    } else {
      if (draws && f.draw == ForwardConfig::Draw::multinomial) {
        // torch.multinomial of one sample (aten/src/ATen/native/Distributions.cpp): the
        // probabilities checked first, their max, min and row sums (a read each), then the
        // exponential race below (q = empty_like(p).exponential_(), div_out(q, p, q), argmax).
        pass("sample_max", 4, 0, 1, 0);
        pass("sample_min", 4, 0, 1, 0);
        pass("sample_sum", 4, 0, 1, 0);
      }
      if (draws) {
        // vLLM's random_sample (V0's _multinomial on the gathered copy): q.exponential_()
        // writes a draw a logit (a uniform and its log), probs.div_(q) in place (read 8 and
        // the store), then the argmax below: 16 bytes a logit more than greedy's argmax.
        pass("sample_noise", 0, 4, 2, 1);
        pass("sample_divide", 12, 0, 1, 0);
      }
      pass("sample_argmax", 4, 0, 1, 0);
    }
    // Logits of the last positions: the head scales with the sequences, not the tokens.
    for (int i = head_start; i < g.op_count; ++i) g.ops[i].scale = Scale::seqs;
    if (f.merged_kernels) final_norm.scale = Scale::tokens;
  }
}

ParamCount count_params(const ModelConfig& m) noexcept {
  Graph g;
  ForwardConfig f;
  hw::System sys;
  build_forward(m, f, sys, {1, 1, 1}, g);
  ParamCount p;
  for (int i = 0; i < g.op_count; ++i) {
    const GraphOp& op = g.ops[i];
    const double r = g.repeat(i);
    p.total += op.params * r;
    p.active += op.active_params * r;
    if (op.cls == OpClass::embedding) p.embedding += op.params * r;
  }
  p.active_with_embedding = p.active + static_cast<double>(m.vocab) * static_cast<double>(m.hidden);
  return p;
}

double kv_bytes_per_token(const ModelConfig& m, const ForwardConfig& f) noexcept {
  const DType kv = f.precision.kv_cache.value_or(f.precision.activation);
  const double L = static_cast<double>(m.layers);
  if (m.is_mla()) {
    // The latent is shared by all heads, so every tensor-parallel chip holds all of it.
    return L * static_cast<double>(m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) * bytes(kv);
  }
  const double kvh = std::max(1.0, static_cast<double>(m.kv_heads) / static_cast<double>(f.tp));
  return L * 2 * kvh * static_cast<double>(m.head_dim) * bytes(kv);
}

double kv_cache_bytes(const ModelConfig& m, const ForwardConfig& f, double batch, double context) noexcept {
  const double per_layer = kv_bytes_per_token(m, f) / static_cast<double>(m.layers);
  const double sliding = static_cast<double>(m.sliding_layers);
  const double full = static_cast<double>(m.layers) - sliding;
  const double window_ctx = m.sliding_window > 0 ? std::min(context, static_cast<double>(m.sliding_window)) : context;
  return batch / static_cast<double>(f.ep) * per_layer * (full * context + sliding * window_ctx);
}

}  // namespace ridgeline::model
