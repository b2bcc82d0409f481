#pragma once
/// Ordered op instances with tags and repeat counts; identical layers are built once and
/// multiplied (docs/models.md#graph). Fixed capacity: building never allocates.
#include <algorithm>
#include <array>
#include <cstdint>

#include "ridgeline/comm/collective.hpp"
#include "ridgeline/ops/attention.hpp"
#include "ridgeline/ops/cost.hpp"

namespace ridgeline::model {

/// What an op is, for grouping results.
enum class OpClass : std::uint8_t { gemm, attention, norm, elementwise, embedding, comm };
std::string_view name(OpClass c) noexcept;
/// The kernel class whose efficiencies an op class uses: norms their own class (which
/// falls back to pointwise's figures), elementwise ops and embedding lookups pointwise,
/// communication a collective. The graph refines some ops further (GraphOp::kernel).
constexpr hw::KernelClass kernel_class(OpClass c) noexcept {
  switch (c) {
    case OpClass::gemm: return hw::KernelClass::gemm;
    case OpClass::attention: return hw::KernelClass::attention;
    case OpClass::norm: return hw::KernelClass::norm;
    case OpClass::elementwise:
    case OpClass::embedding: return hw::KernelClass::pointwise;
    case OpClass::comm: return hw::KernelClass::collective;
  }
  return hw::KernelClass::other;
}

/// The kernel class of a backward kernel whose forward runs in class `k`: attention's own
/// backward class, else the forward's.
constexpr hw::KernelClass backward_kernel_class(hw::KernelClass k) noexcept {
  return hw::parent(k) == hw::KernelClass::attention ? hw::KernelClass::attention_backward : k;
}

/// Which part of the model an op belongs to.
enum class Block : std::uint8_t { embedding, attention, mlp, moe, head };
std::string_view name(Block b) noexcept;

/// The quantity an op's cost is affine in, within one pass (docs/serving.md#step-model):
/// the tokens of the pass, its sequences (the head's last positions), the context positions
/// of its prefill chunks (MLA's decompression), its decode tokens (MLA's absorbed
/// projections), its prefill chunks' tokens (MLA's prefill attention output under vLLM 0.8), or
/// attention counts (prefill chunks, decode tokens, or both in one kernel).
enum class Scale : std::uint8_t {
  tokens,
  seqs,
  prefill_positions,
  decode_tokens,
  prefill_tokens,
  prefill_attention,
  decode_attention,
  fused_attention
};

struct GraphOp {
  const char* name = "";   ///< e.g. "q_proj" (static storage)
  OpClass cls = OpClass::gemm;
  /// The kernel class whose efficiencies and fixed time the op runs at: kernel_class(cls), or
  /// a class refining it (decode attention, MoE expert GEMMs, the engines' own all-reduce)
  /// where the graph knows the kernel (docs/cost-model.md#kernel-curves).
  hw::KernelClass kernel = hw::KernelClass::gemm;
  Block block = Block::attention;
  int group = 0;           ///< index into Graph::groups
  ops::OpCost cost;        ///< one instance on one chip
  double params = 0;       ///< parameters stored by this op, whole model (not per chip)
  double active_params = 0;  ///< parameters one token's forward pass uses
  double weight_bytes = 0;   ///< bytes of weights this op stores on one chip
  double gemm_m = 0, gemm_k = 0, gemm_n = 0;  ///< a GEMM's shape on this chip (tokens x k -> n)
  /// A GEMM priced with its tile and wave quantisation on the chip (ops::gemm_tiling of
  /// gemm_m, gemm_n, gemm_k; its cost's matrix_pad_flops), which is not affine in its rows:
  /// the dense GEMMs on a chip with ChipSpec::gemm_sms (not MoE experts, whose rows per expert
  /// the graph does not keep). Lines in the tokens keep these apart (analysis::OpLine::apart).
  bool quantised = false;
  double expert_bytes = 0;   ///< grouped expert GEMMs: weight bytes read per touched expert (cost.main_bytes holds touched of them), with its tiles' fill where that costs the loads (cost.main_pad_bytes: hw::fill_reads)
  double touched = 0;        ///< those experts touched in this pass (model::touched_experts, plus touched_fixed)
  /// Of them, the experts every pass with a token touches whatever its tokens (SGLang's shared
  /// expert inside the routed experts' kernel: ForwardConfig::fuse_shared_experts): their read a
  /// constant of the pass, which lines in the tokens keep in their affine part, adding the routed
  /// experts' model::touched_experts where they are evaluated (analysis::OpLine).
  double touched_fixed = 0;
  /// Grouped expert GEMMs whose kernel reads an expert's weights once per tile of this many of
  /// its rows (ForwardConfig::expert_reread_tile; 0: once per touched expert): `touched` then
  /// counts the reads (model::expert_weight_reads), the fixed expert's among them
  /// (`reread_fixed`; touched_fixed 0), all evaluated at each point by the lines.
  double reread_tile = 0;
  bool reread_fixed = false;
  /// Grouped expert GEMMs whose experts' rows run in whole tiles (model::expert_row_tiles):
  /// the matrix work of one row in the class's tiles, 2·gemm_n·(gemm_k + fill_k); the rows
  /// (gemm_m) at or below which the kernel runs another layout whose tiles are not priced
  /// (DeepGEMM's masked one behind DeepEP's low-latency kernels; 0: none); and the work the
  /// tiles' padded rows add at this pass's tokens (held in cost.matrix_pad_flops, which lines in
  /// the tokens take out and add back at each step's: analysis::OpLine).
  double row_tile_flops = 0, row_tile_min_rows = 0, row_tile_pad = 0;
  /// Works on the tokens of every attention data-parallel group (ForwardConfig::ep): the
  /// all-to-alls and expert GEMMs of a MoE layer. Every other op works on its group's own.
  bool all_groups = false;
  /// Of those, one on every group's rows whatever their experts (ForwardConfig::MoeA2A::gather:
  /// the gather, the reduce-scatter and the rows' sum), which the busiest chip's share of the
  /// pairs does not load more.
  bool gathered = false;
  /// Inside the engine's attention op (ForwardConfig::mla_op), launched from its Python in every
  /// step but a whole graph: as one of the op's own kernels (priced at
  /// ForwardConfig::mla_op_host_s on the host) or as a projection it holds (at eager_host_s).
  /// The attention kernels of such an op are its own too.
  enum class InAttentionOp : std::uint8_t { no, own, projection } attention_op = InAttentionOp::no;
  std::int8_t attention = -1;  ///< for an attention op, its shape's index in Graph::attention (to re-cost it at another context)
  std::int8_t collective = -1;  ///< for a collective, its terms' index in Graph::collectives (to re-price it at another size)
  Scale scale = Scale::tokens;  ///< what its cost is affine in
  /// Training: the backward's cost over the forward's, in every count (0: its class's,
  /// docs/training.md#one-micro-batch-on-one-gpu).
  double backward = 0;
};

/// Whether DeepEP moves `pair_bytes` of token-expert pairs with its normal kernels: above its
/// low-latency kernels' limit `ll_max` (CollectiveOp::deepep_ll_max; 0: not DeepEP).
constexpr bool deepep_normal(double pair_bytes, double ll_max) noexcept { return ll_max > 0 && pair_bytes > ll_max; }

/// A collective's terms: what comm::price priced, to price it again at another size (its
/// algorithm and protocol change with the bytes).
struct CollectiveOp {
  comm::Collective kind = comm::Collective::all_reduce;
  comm::Algo algo = comm::Algo::automatic;
  DType dtype = DType::bf16;
  comm::Placement group;
  double bytes = 0;
  /// An engine's all-reduce rule (ForwardConfig::custom_allreduce_max_bytes): its own kernel
  /// (direct) below this many bytes, NCCL (automatic) from it; 0: `algo` at every size.
  double custom_max = 0;
  /// DeepEP's expert all-to-alls (ForwardConfig::MoeA2A::deepep): its low-latency kernels,
  /// which send every token-expert pair, up to this many bytes (`bytes` counts the pairs); its
  /// normal kernels from it, which send each token once to every node (or, within one, every
  /// chip) holding one of its experts: `normal_share` of the pairs' bytes. 0: not DeepEP.
  double deepep_ll_max = 0;
  double normal_share = 1;
  /// An all-reduce that adds the residual and RMS-normalises in the same kernel
  /// (ForwardConfig::allreduce_norm): the norm's work, which every option of the collective
  /// does too (NCCL's, past custom_max, in a kernel of its own after it).
  bool fused_norm = false;
  ops::OpCost norm{};
  /// The bytes this collective moves at `pair_bytes` of pairs (DeepEP's kernel for the size).
  double moved(double pair_bytes) const noexcept {
    return deepep_normal(pair_bytes, deepep_ll_max) ? pair_bytes * normal_share : pair_bytes;
  }
};

/// The most GPUs DeepEP's normal kernels reach over NVLink alone (NUM_MAX_NVL_PEERS,
/// csrc/kernels/configs.cuh): a larger group runs its internode kernels, over RDMA between
/// groups of this many, whatever the scale-up domain.
inline constexpr double kDeepEpNvlPeers = 8;

/// The GPUs DeepEP's normal kernels treat as one NVLink group of `group`: its scale-up domain's,
/// at most kDeepEpNvlPeers.
inline double deepep_nvl_group(const comm::Placement& group) noexcept {
  return std::min(kDeepEpNvlPeers, std::max(1.0, group.per_domain));
}

/// The kernel class of DeepEP's all-to-all of direction `k` (hw::deepep_class) over `group`:
/// its normal kernels (`normal`) within one NVLink group (deepep_nvl_group) are intranode.cu's,
/// a class of their own; across groups, and its low-latency kernels anywhere, the low-latency
/// figures.
inline hw::KernelClass deepep_kernel(hw::KernelClass k, const comm::Placement& group, bool normal) noexcept {
  return hw::deepep_class(k, normal && group.size <= deepep_nvl_group(group));
}

/// A run of identical layers (or the model's head/tail, repeat 1).
struct LayerGroup {
  const char* name = "";
  double repeat = 1;
};

struct Graph {
  static constexpr int kMaxOps = 112;
  static constexpr int kMaxGroups = 8;
  std::array<GraphOp, kMaxOps> ops{};
  std::array<LayerGroup, kMaxGroups> groups{};
  static constexpr int kMaxAttention = 8;
  std::array<ops::AttentionShape, kMaxAttention> attention{};  ///< shapes of the attention ops
  int attention_count = 0;
  static constexpr int kMaxCollectives = 32;
  std::array<CollectiveOp, kMaxCollectives> collectives{};  ///< terms of the collective ops (more: not re-priced)
  int collective_count = 0;
  int op_count = 0;
  int group_count = 0;
  bool overflow = false;  ///< set if an add did not fit, or its cost was not an OpCost (a bug: sized for every model)
  GraphOp spare;          ///< what add returns on overflow

  void clear() noexcept { op_count = group_count = attention_count = collective_count = 0, overflow = false; }
  /// Starts a group; later ops belong to it.
  int begin_group(const char* name, double repeat) noexcept;
  /// Appends an op to the current group; returns it (a scratch op on overflow).
  GraphOp& add(const char* name, OpClass cls, Block block, const ops::Cost& cost) noexcept;
  /// Repeats of op i (its group's repeat).
  double repeat(int i) const noexcept { return groups[ops[i].group].repeat; }
  /// Kernels of a pass, each paying its class's fixed time: every op's launches, at least one
  /// (ops::TimeParts::kernels_of), over its repeats.
  double kernels() const noexcept;
};

// Inline: called for every op of every graph built.
inline GraphOp& Graph::add(const char* op_name, OpClass cls, Block block, const ops::Cost& cost) noexcept {
  if (op_count >= kMaxOps || group_count == 0 || !ops::OpCost::compact(cost, ops[op_count].cost)) {
    overflow = true;
    return spare;
  }
  GraphOp& op = ops[op_count++];
  op.name = op_name;
  op.cls = cls;
  op.kernel = kernel_class(cls);
  op.block = block;
  op.group = group_count - 1;
  op.params = 0;
  op.active_params = 0;
  op.weight_bytes = 0;
  op.attention = -1;
  op.collective = -1;
  op.scale = Scale::tokens;
  op.gemm_m = op.gemm_k = op.gemm_n = 0;
  op.quantised = false;
  op.expert_bytes = op.touched = op.touched_fixed = op.reread_tile = 0;
  op.reread_fixed = false;
  op.row_tile_flops = op.row_tile_min_rows = op.row_tile_pad = 0;
  op.all_groups = false;
  op.gathered = false;
  op.attention_op = GraphOp::InAttentionOp::no;
  op.backward = 0;
  return op;
}

}  // namespace ridgeline::model
