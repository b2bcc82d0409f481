#pragma once
/// One accelerator or CPU, as read from a hardware file: peaks, memory hierarchy, links.
#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/core/dtype.hpp"

namespace ridgeline::hw {

/// Which unit executes FLOPs: the matrix unit (tensor cores, MXU, AMX/FMA for CPUs) or
/// the vector unit (CUDA cores, TPU VPU) that runs elementwise work, reductions, softmax.
enum class Unit : std::uint8_t { matrix, vector };
inline constexpr int kUnitCount = 2;

/// One level of the memory hierarchy. Level 0 is main memory (HBM, DRAM); higher
/// indices are closer to the compute units (L2, SMEM / L3, L2, L1).
struct MemoryLevelSpec {
  std::string name;
  double bandwidth_Bps = 0;  ///< sustained peak bandwidth of the level, bytes/s
  double capacity_bytes = 0; ///< bytes
};

/// Where a link reaches.
enum class LinkScope : std::uint8_t { node, network, host };

/// One kind of link leaving the chip (NVLink, ICI, PCIe, InfiniBand ...).
struct LinkSpec {
  std::string name;
  LinkScope scope = LinkScope::node;
  double bandwidth_Bps = 0;  ///< per direction, per physical link, bytes/s
  int count = 1;             ///< physical links of this kind per chip
  double latency_s = 0;      ///< per message hop, seconds
  /// Fraction of the bandwidth collectives reach over this link (nccl-tests bus bandwidth over
  /// the peak); 0: the chip's figure (efficiency.collective.link, else efficiency.link).
  double efficiency = 0;
  /// Per-direction bandwidth of all `count` links together: what a collective can use.
  double chip_bandwidth_Bps() const noexcept { return bandwidth_Bps * count; }
};

/// What kind of kernel an op is, for per-class efficiencies (docs/cost-model.md#efficiency).
/// The classes after `attention_backward` refine a parent class (hw::parent) and take its
/// figures, field by field, where they give none: `attention_backward` (FlashAttention's
/// bwd) and `attention_decode` (one query per sequence over a paged KV cache: memory-bound,
/// few thread blocks) and `attention_decode_mla` (MLA's decode over its latent cache, heads
/// absorbed, in AITER's asm kernel on ROCm: model::ForwardConfig::aiter_mla; taking
/// attention_decode's figures where it has none) refine attention; `gemm_expert` (MoE grouped GEMMs) and `gemm_scaled`
/// (GEMMs of a checkpoint's block-scaled weights: DeepSeek's fp8 128x128 blocks, as vLLM's
/// Triton kernel runs them) and `gemm_scaled_deepgemm` (the same fp8 block-scaled GEMMs as
/// DeepGEMM runs them, in the engines that call it: ForwardConfig::scaled_gemm) and
/// `gemm_expert_scaled` (MoE grouped GEMMs of fp8 block-scaled experts in a fused-MoE kernel that
/// scales each 128-wide K block's product in its loop, as vLLM's Triton fused_moe_kernel does,
/// taking gemm_expert's figures where it has none) and `gemm_expert_deepgemm` (MoE grouped GEMMs
/// of fp8 block-scaled experts as DeepGEMM's grouped kernels run them, and TensorRT-LLM's port of
/// them: fp8 activations quantised before, taking gemm_expert's figures where it has none) and
/// `gemm_expert_w4a16` (MoE grouped GEMMs of 4-bit experts, MXFP4's, with 16-bit activations: the
/// weights widened inside the kernel, the products in bf16, as vLLM runs gpt-oss by default;
/// taking gemm_expert's figures where it has none) and `gemm_expert_onestage` (AITER's one-stage
/// fused MoE over fp8 block-scaled experts: gate-up, activation and down in one kernel whose
/// workgroups each take a tile of an expert's rows through the whole expert, reading its weights
/// again for every tile: ForwardConfig::expert_reread_tile; taking gemm_expert_scaled's figures
/// where it has none) and `gemm_fp8` (dense GEMMs of fp8 weights and
/// activations with per-tensor or per-row scales, an fp8 checkpoint's linear layers out of
/// blocks, on a chip whose file measures their kernels apart from its 16-bit GEMMs: hw::fp8_gemm_class)
/// refine gemm;
/// `norm` (RMSNorm/LayerNorm, with a fused residual add) and `sampling` (top-k/top-p over
/// the vocabulary) and `attention_combine` (the merge of a split-KV decode's partial outputs,
/// AITER's reduce after its persistent MLA decode: model::ForwardConfig::mla_persistent) refine
/// pointwise; `allreduce_custom` (the serving engines' own one- and
/// two-shot all-reduce over NVLink), `allreduce_norm` (the engines' all-reduce that adds the
/// residual and RMS-normalises the sum in the same kernel, FlashInfer's and TensorRT-LLM's
/// kARResidualRMSNorm: model::ForwardConfig::allreduce_norm; taking allreduce_custom's figures
/// where it has none), `deepep_dispatch` and `deepep_combine` (DeepEP's
/// expert-parallel all-to-alls, ForwardConfig::MoeA2A::deepep: its low-latency kernels, and its
/// normal ones across scale-up domains) and `deepep_intranode_dispatch` and
/// `deepep_intranode_combine` (DeepEP's normal kernels inside one scale-up domain, intranode.cu's,
/// taking the low-latency classes' figures where they have none) refine collective. Kernel
/// curves measured on a chip give a class its own figures (docs/cost-model.md#kernel-curves).
enum class KernelClass : std::uint8_t {
  other, gemm, attention, pointwise, collective, attention_backward,
  attention_decode, gemm_expert, norm, sampling, allreduce_custom, gemm_scaled, gemm_scaled_deepgemm,
  gemm_expert_scaled, deepep_dispatch, deepep_combine, gemm_expert_deepgemm, deepep_intranode_dispatch,
  deepep_intranode_combine, quant, routing, routing_compiled, gemm_expert_w4a16, gemm_fp8, attention_decode_mla,
  attention_combine, gemm_expert_onestage, allreduce_norm
};
inline constexpr int kKernelClassCount = 28;
/// "other", "gemm", "attention", "pointwise", "collective", "attention_backward",
/// "attention_decode", "gemm_expert", "norm", "sampling", "allreduce_custom", "gemm_scaled",
/// "gemm_scaled_deepgemm", "gemm_expert_scaled", "deepep_dispatch", "deepep_combine",
/// "gemm_expert_deepgemm", "deepep_intranode_dispatch", "deepep_intranode_combine", "quant",
/// "routing", "routing_compiled", "gemm_expert_w4a16", "gemm_fp8", "attention_decode_mla",
/// "attention_combine", "gemm_expert_onestage", "allreduce_norm".
std::string_view name(KernelClass k) noexcept;
/// The class whose figures `k` takes where it has none of its own (`k` itself for the
/// classes gemm, attention, pointwise, collective and other).
constexpr KernelClass parent(KernelClass k) noexcept {
  switch (k) {
    case KernelClass::attention_backward:
    case KernelClass::attention_decode:
    case KernelClass::attention_decode_mla: return KernelClass::attention;
    case KernelClass::gemm_expert:
    case KernelClass::gemm_scaled:
    case KernelClass::gemm_scaled_deepgemm:
    case KernelClass::gemm_expert_scaled:
    case KernelClass::gemm_expert_deepgemm:
    case KernelClass::gemm_expert_w4a16:
    case KernelClass::gemm_expert_onestage:
    case KernelClass::gemm_fp8: return KernelClass::gemm;
    case KernelClass::norm:
    case KernelClass::sampling:
    case KernelClass::quant:
    case KernelClass::routing:
    case KernelClass::routing_compiled:
    case KernelClass::attention_combine: return KernelClass::pointwise;
    case KernelClass::allreduce_custom:
    case KernelClass::allreduce_norm:
    case KernelClass::deepep_dispatch:
    case KernelClass::deepep_combine:
    case KernelClass::deepep_intranode_dispatch:
    case KernelClass::deepep_intranode_combine: return KernelClass::collective;
    default: return k;
  }
}

/// The class whose figures a refining class `k` falls back to, figure by figure, before the
/// chip-wide ones: its parent's, but for the kernels that are a sibling's first. The fused-MoE
/// GEMMs of block-scaled or 4-bit experts (Triton's, DeepGEMM's, W4A16's) take gemm_expert's (the same gather,
/// grid and launch) where a chip's file measures none of their own, and through it gemm's;
/// DeepEP's normal kernels inside a domain take its low-latency kernels' of their direction;
/// the 1x128 fp8 quantisation kernels before block-scaled GEMMs take the norms' (a row kernel
/// that reduces, then scales and writes); MLA's decode kernel takes the decode kernels'; AITER's
/// one-stage fused MoE takes its two-stage one's (gemm_expert_scaled: the same experts and block
/// scales), and through it gemm_expert's; the all-reduce fused with the norm after it takes the
/// engines' all-reduce's (the same one- and two-shot exchange over NVLink).
constexpr KernelClass fallback(KernelClass k) noexcept {
  switch (k) {
    case KernelClass::allreduce_norm: return KernelClass::allreduce_custom;
    case KernelClass::quant: return KernelClass::norm;
    case KernelClass::gemm_expert_onestage: return KernelClass::gemm_expert_scaled;
    case KernelClass::attention_decode_mla: return KernelClass::attention_decode;
    case KernelClass::gemm_expert_scaled:
    case KernelClass::gemm_expert_deepgemm:
    case KernelClass::gemm_expert_w4a16: return KernelClass::gemm_expert;
    case KernelClass::deepep_intranode_dispatch: return KernelClass::deepep_dispatch;
    case KernelClass::deepep_intranode_combine: return KernelClass::deepep_combine;
    default: return parent(k);
  }
}

/// The classes whose kernels an engine that launches with programmatic dependent launch runs
/// with it (model::ForwardConfig::pdl, docs/cost-model.md#pdl): TensorRT-LLM's own CUDA kernels
/// (norms, quantisation, attention, its block-scaled and grouped GEMMs, its all-reduces), taken
/// for SGLang's too (FlashInfer's under its launcher's TRTLLM_ENABLE_PDL=1, its own norms); not
/// cuBLAS's GEMMs (`gemm`, `gemm_fp8`), PyTorch's elementwise ops (`pointwise`, `sampling`),
/// Triton's fused MoE (`gemm_expert_scaled`), NCCL's or DeepEP's collectives, AITER's ROCm
/// kernels, nor the routing kernels (TensorRT-LLM turned PDL off by default in its Renormalize
/// routing, NVIDIA/TensorRT-LLM PR #11994; its DeepSeek routing's not found).
constexpr bool pdl_class(KernelClass k) noexcept {
  switch (k) {
    case KernelClass::attention:
    case KernelClass::attention_decode:
    case KernelClass::norm:
    case KernelClass::quant:
    case KernelClass::gemm_scaled:
    case KernelClass::gemm_scaled_deepgemm:
    case KernelClass::gemm_expert:
    case KernelClass::gemm_expert_deepgemm:
    case KernelClass::gemm_expert_w4a16:
    case KernelClass::allreduce_custom:
    case KernelClass::allreduce_norm: return true;
    default: return false;
  }
}

/// DeepEP's kernel class for an all-to-all of its direction (`k`, any of its four classes):
/// the normal kernels' inside one scale-up domain (`normal_in_domain`), else the low-latency
/// kernels', whose figures the normal kernels across domains take (docs/serving.md#deepep).
constexpr KernelClass deepep_class(KernelClass k, bool normal_in_domain) noexcept {
  const bool combine = k == KernelClass::deepep_combine || k == KernelClass::deepep_intranode_combine;
  if (normal_in_domain) return combine ? KernelClass::deepep_intranode_combine : KernelClass::deepep_intranode_dispatch;
  return combine ? KernelClass::deepep_combine : KernelClass::deepep_dispatch;
}

/// What one class of kernels achieves: a fraction of each peak (0: the chip-wide figure)
/// and a fixed time per kernel on the chip (ramp-up, tail wave, synchronisation). A kernel
/// of the class takes overhead + max(part / fraction): with the fixed time, achieved
/// efficiency grows with the kernel's size, as measured kernels do.
struct ClassEfficiency {
  double matrix = 0, vector = 0, memory = 0, link = 0;
  double overhead_s = 0;
  /// A kernel takes at least this share of its matrix time and its partner's added (each over
  /// its fraction; the partner: hw::overlaps_vector): 0.5 (unset: 0) never binds, their max
  /// being at least that; 1, no overlap at all. Where both are near equal a GEMM hides neither
  /// behind the other, nor FlashAttention its softmax behind its matmuls
  /// (docs/cost-model.md#overlap). A kernel's own: a refining class does not take its parent's.
  double overlap = 0;
  /// A GEMM class without a matrix fraction of its own: the fraction of the chip's measured
  /// matmul rate (ChipSpec::matmul_achievable_flops_per_s, the best shape's) its GEMMs reach
  /// over their tiles' work, in every dtype measured (0: all of it). Fitted from the class's
  /// curves through the tiling, which it leaves on (docs/cost-model.md#past-one-wave). The
  /// gemm class's own: a refining class does not take it.
  double matmul = 0;
  /// The attention class's: the keys' worth of work each tile of 128 queries of a head costs
  /// in a flash prefill beyond its keys (ops::AttentionShape::tile_keys; 0: none). Fitted from
  /// the class's curves (docs/cost-model.md#attention-tiles). Not taken by a refining class.
  double tile_keys = 0;
  /// A GEMM class's: the columns of K each output tile's K loop costs beyond its own (the
  /// pipeline's fill before the first product and the epilogue after the last), so that a
  /// GEMM of depth K runs its tiles' work as if K were K + fill_k (0: none). Fitted from the
  /// class's curves where their K varies (docs/cost-model.md#short-k). Not taken by a
  /// refining class.
  double fill_k = 0;
  /// A GEMM class's: the seconds each column of K of a tile's K loop takes at least, where
  /// the class's kernel never splits a tile's K loop over multiprocessors and waits on each
  /// step's loads in turn (0: none). A fixed time of K·k_loop_s a kernel (ops::Cost::loop_k):
  /// at few rows a narrow, deep GEMM's time whatever its width (AITER's CK block-scaled GEMM
  /// on the MI300X). Fitted from the class's curves where the file gives it one
  /// (docs/cost-model.md#k-loops). Not taken by a refining class.
  double k_loop_s = 0;
  bool operator==(const ClassEfficiency&) const = default;
};

/// Whether a class's overlap share (ClassEfficiency::overlap) adds its vector part to its
/// matrix part rather than its memory part: a flash attention's, forward or backward, whose
/// softmax (an exp a score on the special-function units, and the max, scale and sum on the
/// vector units) runs on the warps that issue its matmuls, while its loads are asynchronous
/// (FlashAttention-3's TMA producer warps); a GEMM's tiles, and a decode attention kernel's
/// (memory-bound), wait on their loads. docs/cost-model.md#overlap.
constexpr bool overlaps_vector(KernelClass k) noexcept {
  return k == KernelClass::attention || k == KernelClass::attention_backward;
}
/// The part a share adds to the matrix part, by name: "vector" (overlaps_vector) or "memory".
constexpr const char* overlap_partner(bool vector) noexcept { return vector ? "vector" : "memory"; }
constexpr const char* overlap_partner(KernelClass k) noexcept { return overlap_partner(overlaps_vector(k)); }

/// Achievable fraction of each peak in ordinary use; kept apart from the peaks and only
/// applied to the "realistic" figure, never to the bounds.
struct EfficiencySpec {
  double matrix = 1;
  double vector = 1;
  double memory = 1;
  double link = 1;
  /// Device time every kernel costs beyond its roofline parts, seconds: the boundary between
  /// two kernels (one grid drains, the next is dispatched and ramps up), paid inside a CUDA
  /// graph too. Distinct from launch_overhead_s, the host's cost of issuing a kernel, which
  /// graphs remove. A class's own `overhead_s` replaces it (docs/cost-model.md#efficiency).
  double overhead_s = 0;
  /// Of each kernel boundary, seconds that programmatic dependent launch (PDL, SM90+) hides:
  /// a kernel launched with it is dispatched and runs its prologue while the one before it
  /// drains, up to that kernel's `griddepcontrol.wait` (0: not measured on the chip, nothing
  /// hidden). Only kernels an engine launches so (pdl_class, model::ForwardConfig::pdl);
  /// docs/cost-model.md#pdl.
  double pdl_overlap_s = 0;
  /// What programmatic dependent launch hides of a boundary: pdl_overlap_s, at most the
  /// boundary itself (overhead_s).
  double pdl_hidden_s() const noexcept { return pdl_overlap_s < overhead_s ? pdl_overlap_s : overhead_s; }
  /// Per kernel class (index KernelClass; `other` is unused): measured or published figures
  /// that refine the chip-wide ones.
  std::array<ClassEfficiency, kKernelClassCount> kernel{};
};

/// A class's own figures where it gives them; a refining class falls back, figure by
/// figure, to its parent class's (hw::parent) before the chip-wide ones.
inline ClassEfficiency class_efficiency(const EfficiencySpec& e, KernelClass k) noexcept {
  ClassEfficiency c = e.kernel[static_cast<int>(k)];
  const KernelClass p = parent(k);
  if (p != k) {
    // A sibling's first where the class has one (hw::fallback): gemm_expert_scaled's matrix
    // fraction of the block-scaled loop, where a chip file measures that loop, and the rest
    // gemm_expert's (docs/cost-model.md#kernel-curves); gemm_expert_deepgemm's on a chip whose
    // file has no figure of DeepGEMM's grouped kernels (the H100's and H200's have).
    const KernelClass via = fallback(k);
    const ClassEfficiency a = via != p ? class_efficiency(e, via) : e.kernel[static_cast<int>(p)];
    if (c.matrix <= 0) c.matrix = a.matrix;
    if (c.vector <= 0) c.vector = a.vector;
    if (c.memory <= 0) c.memory = a.memory;
    if (c.link <= 0) c.link = a.link;
    if (c.overhead_s <= 0) c.overhead_s = a.overhead_s;
    // Not `matmul`: the share is the BLAS library's, fitted through its tiling (stream-K past
    // one wave), which the refining classes' kernels do not share. Nor `tile_keys`: the
    // forward's tiles, not the backward's or a decode kernel's. Nor `fill_k` or `k_loop_s`: a
    // kernel's own pipeline.
  }
  return c;
}

/// The class of a dense GEMM of fp8 weights and activations with per-tensor or per-row scales:
/// gemm_fp8 on a chip whose file gives that class figures of its own (its fp8 kernels measured
/// apart from its 16-bit GEMMs: the MI300X's, whose fp8 libraries stream their weights well below
/// its 16-bit decode kernels), else the gemm class, whose figures the 16-bit and fp8 GEMMs share
/// (docs/cost-model.md#fp8-gemms).
/// Any figure of its own selects the class; those it lacks fall back as a refining class's do
/// (hw::class_efficiency): not to gemm's overlap share or its share of the measured matmul rate,
/// so a file gives gemm_fp8 the whole fit of its curves.
inline KernelClass fp8_gemm_class(const EfficiencySpec& e) noexcept {
  const bool own = !(e.kernel[static_cast<int>(KernelClass::gemm_fp8)] == ClassEfficiency{});
  return own ? KernelClass::gemm_fp8 : KernelClass::gemm;
}

/// The columns of K each tile of class `k`'s GEMMs costs beyond its own: the class's own
/// figure (ClassEfficiency::fill_k), never a parent's or a sibling's.
inline double fill_k(const EfficiencySpec& e, KernelClass k) noexcept { return e.kernel[static_cast<int>(k)].fill_k; }
/// The GEMM classes that take a K-loop time (ClassEfficiency::k_loop_s): the dense ones whose
/// fit holds no tile fill (gemm, gemm_scaled, gemm_fp8). The experts' grouped GEMMs price no K
/// loop of their own, and DeepGEMM's dense class fits a tile fill instead (docs/cost-model.md#k-loops).
constexpr bool takes_k_loop(KernelClass k) noexcept {
  return k == KernelClass::gemm || k == KernelClass::gemm_scaled || k == KernelClass::gemm_fp8;
}

/// Whether class `k`'s tile fill (ClassEfficiency::fill_k) costs its weights' read rather than
/// its work: Triton's fused MoE (gemm_expert_scaled), one program a tile of 16-64 rows and 128
/// columns, several resident on a multiprocessor. At decode sizes a few such tiles of a short K
/// loop stream each expert's weights and wait out their pipeline's fill and epilogue between
/// loads: each touched expert's weights are read as if K were K + fill_k. At prefill sizes the
/// other resident programs' products hide one program's fill, where DeepGEMM's persistent
/// kernels, one program a multiprocessor taking tile after tile, pay it on their work
/// (docs/cost-model.md#short-k).
constexpr bool fill_reads(KernelClass k) noexcept { return k == KernelClass::gemm_expert_scaled; }

/// The figures a sibling class lends `k` (hw::fallback's class, where it is not `k`'s parent),
/// as the chip's file gives that sibling; none (all 0) where `k` falls back to its parent.
inline ClassEfficiency lent_figures(const EfficiencySpec& e, KernelClass k) noexcept {
  const KernelClass via = fallback(k);
  return via != parent(k) ? e.kernel[static_cast<int>(via)] : ClassEfficiency{};
}

/// How the chips of one scale-up domain are wired (docs/collectives.md#topology).
enum class Fabric : std::uint8_t {
  switched,  ///< every chip reaches every other through switches at its full link rate (NVSwitch, PCIe switch)
  mesh,      ///< a direct link (or `links_per_peer`) between each pair (MI300X Infinity Fabric)
  torus,     ///< neighbours on a 2- or 3-D torus (TPU ICI); the domain is the slice
};
std::string_view name(Fabric f) noexcept;

/// The collective library whose protocol costs apply (docs/collectives.md#protocols):
/// nccl — NCCL's tuner prices ring and tree in three protocols (LL, LL128, Simple), each
/// with a fixed cost per call and per step and a share of the link's bandwidth, and NVLS
/// with its own latency; none — one protocol, each step at the link's latency.
enum class CollectiveLibrary : std::uint8_t { none, nccl };

/// How the chip's GEMM library fills the multiprocessors when a GEMM has fewer output tiles
/// than them (docs/cost-model.md#gemm-shape): each tile's K loop split a whole number of ways
/// (split-K), or the tiles' K iterations shared out over every multiprocessor (stream-K).
/// stream_k also shares a last wave less than half full, with the full wave before it, over
/// every multiprocessor when a tile's K loop is deeper than 512 (CUTLASS's SM90 stream-K
/// heuristic, docs/cost-model.md#past-one-wave). stream_k_one_wave is no chip file's: the
/// chip's stream-K for the kernels whose curves were fitted with waves whole past one wave
/// (hw::gemm_split_for).
enum class GemmSplit : std::uint8_t { split_k, stream_k, stream_k_one_wave };
/// How a GEMM of kernel class `k` spreads its tiles on a chip whose library does `chip`:
/// stream-K past one wave is the BLAS library's (the gemm class); the other GEMM classes (the
/// block-scaled GEMMs of Triton and DeepGEMM, whose curves were fitted with waves whole, and
/// gemm_fp8) keep stream-K's one wave.
constexpr GemmSplit gemm_split_for(GemmSplit chip, KernelClass k) noexcept {
  return chip == GemmSplit::stream_k && k != KernelClass::gemm ? GemmSplit::stream_k_one_wave : chip;
}
std::string_view name(CollectiveLibrary l) noexcept;

/// The machine as it is wired: the scale-up domain (the chips the `node` link joins) and
/// the scale-out network between domains (the `network` link, one share per chip).
struct TopologySpec {
  Fabric fabric = Fabric::switched;
  int domain = 0;  ///< chips in one scale-up domain; 0: chips_per_node (a torus: the whole slice)
  /// The switches reduce (NVLink SHARP, "NVLS"): an all-reduce sends each byte once in each
  /// direction instead of 2(P-1)/P times.
  bool in_switch_reduction = false;
  /// Fraction of the link rate in-switch reductions reach (nccl-tests); 0: the link's.
  double reduction_efficiency = 0;
  int links_per_peer = 0;  ///< mesh: links between each pair; 0: the node links over domain - 1
  int torus_dims = 0;      ///< torus: 2 or 3 axes
  int max_slice = 0;       ///< torus: chips in the largest slice (a pod); more go over the network
  /// torus: an axis wraps around when its length is a multiple of this (TPU v4/v5p: 4, the
  /// optical switches close cubes; v5e/v6e: 16, only a full pod axis); 0: never.
  int wrap_multiple = 0;
  CollectiveLibrary library = CollectiveLibrary::none;
  /// Multiprocessors a collective's kernel holds while it runs (one thread block per channel,
  /// which shares its SM with no compute kernel): what communication hidden behind compute
  /// takes from it (docs/training.md#interference); 0: none counted.
  int collective_sms = 0;
  bool operator==(const TopologySpec&) const = default;
};

/// What a kernel curve's point measured (docs/cost-model.md#kernel-curves): one GEMM; one
/// decode-attention kernel (a query per sequence over the cache; MLA's absorbed form with
/// `latent`); an RMSNorm (with the residual added first); an elementwise kernel reading and
/// writing `bytes` in all; an all-reduce of `bytes` over `chips`; an all-to-all of `bytes`
/// a chip over `chips`, direct (DeepEP's kernels, priced as the graph prices them); a MoE
/// layer's experts as an engine runs them (top-k, the two grouped GEMMs, the activation, the
/// weighted sum); a
/// flash attention forward over whole sequences (`batch` of `kv_len` queries over their own
/// `kv_len` keys, `causal` or not); a quantisation of `tokens` rows of `hidden` values to fp8
/// in 1x128 groups with fp32 scales (the kernel before a block-scaled fp8 GEMM).
enum class CurveOp : std::uint8_t {
  matmul, decode_attention, rmsnorm, elementwise, allreduce, moe, attention, alltoall, group_quant, attention_combine
};
/// "matmul", "decode_attention", "rmsnorm", "elementwise", "allreduce", "moe", "attention", "alltoall",
/// "group_quant", "attention_combine".
std::string_view name(CurveOp o) noexcept;

/// How a curve's times were taken: `graph` — per call of a CUDA graph replayed back to back
/// (each kernel with its boundary, as the model's fixed time holds it); `kernel` — each
/// kernel's own duration from a profiler (CUPTI, kineto, nsys), the boundary left out.
enum class CurveTiming : std::uint8_t { graph, kernel };
std::string_view name(CurveTiming t) noexcept;

/// One measured point of a kernel curve: the shape (the fields of its op; the others 0) and
/// the time per call.
struct CurvePoint {
  CurveOp op = CurveOp::matmul;
  double m = 0, n = 0, k = 0;                   ///< matmul: X[m,k]·W[k,n]
  /// matmul: a grouped GEMM of `groups` such products, each of its own weights W[k,n] and m
  /// rows (MoE's experts, as DeepGEMM's grouped kernels take them); 0: a dense GEMM
  double groups = 0;
  double batch = 0, kv_len = 0;                 ///< attention: sequences, context of each (the forward's: its length)
  double heads = 0, kv_heads = 0, head_dim = 0, v_head_dim = 0;  ///< attention (v_head_dim 0: head_dim)
  bool latent = false;                          ///< decode attention: MLA's latent cache (one KV head, K and V shared)
  bool causal = false;                          ///< attention (the forward): under a causal mask
  double tokens = 0, hidden = 0;                ///< rmsnorm, moe, group_quant: rows and width
  bool residual = false;                        ///< rmsnorm: the residual added first (read, and the sum written)
  /// group_quant: each timed call copies its input first (a benchmark's x.clone()), an
  /// elementwise kernel of the pointwise class
  bool copy = false;
  double bytes = 0;                             ///< elementwise: bytes read and written; allreduce: the message
  int chips = 0;                                ///< allreduce: the group
  double experts = 0, topk = 0, intermediate = 0;  ///< moe: experts, experts per token, each expert's width
  /// moe, of class gemm_expert_onestage: the rows of an expert each of its workgroups takes, its
  /// weights read once per such tile (model::ForwardConfig::expert_reread_tile); 0 elsewhere
  double tile = 0;
  /// attention_combine: the partial outputs each of `batch` sequences' heads merges (its keys'
  /// splits), each `v_head_dim` fp32 values and a log-sum-exp, into one `dtype` row
  double splits = 0;
  DType dtype = DType::bf16;     ///< weights (matmul, moe), the cache (decode attention), or the data
  DType out_dtype = DType::bf16; ///< rmsnorm: its output (fp8 when fused with a quantisation); group_quant: its output, fp8_e4m3 unless given
  double time_s = 0;             ///< measured, per call
};

/// Measured times of one kernel on the chip at several sizes: the evidence a class's fixed
/// time and achievable fractions are fitted from (analysis::fit_curves), with its source.
struct KernelCurve {
  KernelClass cls = KernelClass::gemm;
  std::string kernel;  ///< the library and kernel that ran
  std::string source;  ///< where the times come from (repository, PR or file, commit, date)
  CurveTiming timing = CurveTiming::graph;
  std::vector<CurvePoint> points;
};

/// The instruction set the engines test before choosing a kernel (`arch` in the chip file):
/// NVIDIA's compute capability (`sm_90` is 9.0, `sm_100` 10.0) or AMD's gfx target, whose
/// major and minor are what torch reports as its capability (`gfx942` is 9.4, stepping 2).
struct Arch {
  enum class Isa : std::uint8_t { none, cuda, hip } isa = Isa::none;
  int major = 0;
  int minor = 0;
  int stepping = 0;  ///< a gfx target's last hex digit (gfx90a: 10; gfx908: 8); 0 for CUDA
  bool at_least(int maj, int min) const noexcept { return major > maj || (major == maj && minor >= min); }
};

/// `sm_` and two or three digits (the last the minor; nvcc's `a` or `f` after them taken), or
/// `gfx` and a major of one or two digits, the minor a digit and the stepping a hex digit (a
/// colon and target features after them taken: torch's gcnArchName); no leading zero; nothing
/// otherwise.
std::optional<Arch> parse_arch(std::string_view text) noexcept;

inline constexpr int kMaxMemoryLevels = 4;
inline constexpr int kMaxLinks = 4;

/// A chip as specified by its hardware file. Peaks are dense; 0 means the unit does not
/// support that dtype.
struct ChipSpec {
  std::string name;          ///< catalog key, e.g. "h100-sxm"
  std::string display_name;  ///< e.g. "NVIDIA H100 SXM5 80GB"
  std::string vendor;        ///< e.g. "nvidia"
  std::string kind;          ///< "gpu", "tpu" or "cpu"
  /// `arch`: the instruction set (parse_arch), e.g. "sm_90" or "gfx942"; empty: not given.
  std::string arch;
  std::array<double, kDTypeCount> matrix_flops_per_s{};  ///< dense peak per dtype, FLOP/s
  std::array<double, kDTypeCount> vector_flops_per_s{};  ///< vector-unit peak per dtype, FLOP/s
  /// The largest matmul rate measured on the chip per dtype (maximum achievable matmul FLOPS,
  /// FLOP/s; 0: not measured): the `gemm` class's matrix efficiency in that dtype is this over
  /// the peak, unless the chip file gives the class its own (docs/cost-model.md#efficiency).
  std::array<double, kDTypeCount> matmul_achievable_flops_per_s{};
  double sparse_factor = 1;  ///< speed-up of 2:4 structured sparsity on the matrix unit (labelled, never applied silently)
  /// Exponentials (and other special functions) per second of the special-function units;
  /// 0: an exp costs one FLOP at the fp32 vector rate.
  double special_function_rate = 0;
  /// A plain store whose line is not in L1 first reads the line (read for ownership): a
  /// store of N bytes to data resident in a level past L1 moves 2N there. True for x86
  /// write-back memory; GPUs write whole sectors without reading them.
  bool write_allocate = false;
  std::vector<MemoryLevelSpec> memory;  ///< [0] is main memory
  std::vector<LinkSpec> links;
  double launch_overhead_s = 0;  ///< host cost of one kernel launch, seconds
  EfficiencySpec efficiency;
  int chips_per_node = 1;        ///< chips joined by the `node` links
  /// Streaming multiprocessors (compute units) a GEMM's output tiles are spread over; 0: not
  /// given, and GEMMs run at their best-shape rate whatever their shape (no tile or wave
  /// quantisation, docs/cost-model.md#gemm-shape).
  int sms = 0;
  /// `gemm_split`: how a GEMM of fewer tiles than `sms` is spread over them (split-K unless
  /// the chip file says stream-K, with its source).
  GemmSplit gemm_split = GemmSplit::split_k;
  TopologySpec topology;         ///< how the node links and the network are wired
  double usd_per_hour = 0;       ///< a price per chip-hour (`price_per_hour`, its source and date in `sources`); 0: none
  std::vector<std::string> sources;
  /// Kernel curves (`kernel_curves`): measured times by size whose fit gives classes their
  /// figures in `efficiency` (docs/cost-model.md#kernel-curves).
  std::vector<KernelCurve> curves;
  std::string provenance;  ///< "catalog", a file path, or a measurement note
  /// Threads the ceilings were measured with (`measured.threads` of a chip file written by
  /// `ridgeline measure`); 0 when not recorded (catalog figures are whole-chip rates).
  int measured_threads = 0;

  /// Peak of `unit` for `t`, FLOP/s (0 when unsupported).
  double peak(Unit unit, DType t) const noexcept {
    return unit == Unit::matrix ? matrix_flops_per_s[index(t)] : vector_flops_per_s[index(t)];
  }
  /// The multiprocessors GEMM tiling is priced over: `sms`, or 0 where the gemm class has a
  /// matrix figure of its own (fitted by calibrate on measured kernels, whose times already
  /// hold their tiling and waves: adding them again would count them twice).
  int gemm_sms() const noexcept { return efficiency.kernel[static_cast<int>(KernelClass::gemm)].matrix > 0 ? 0 : sms; }
  /// Main-memory bandwidth, bytes/s.
  double main_bandwidth_Bps() const noexcept { return memory.empty() ? 0 : memory[0].bandwidth_Bps; }
  /// Main-memory capacity, bytes.
  double main_capacity_bytes() const noexcept { return memory.empty() ? 0 : memory[0].capacity_bytes; }
  /// Dense matrix peak over main-memory bandwidth, FLOPs/byte (0 when unsupported).
  double ridge_flops_per_byte(DType t) const noexcept {
    double bw = main_bandwidth_Bps();
    return bw > 0 ? matrix_flops_per_s[index(t)] / bw : 0;
  }
  /// Index of the first link with `scope`, or -1.
  int link_index(LinkScope scope) const noexcept {
    for (size_t i = 0; i < links.size(); ++i) {
      if (links[i].scope == scope) return static_cast<int>(i);
    }
    return -1;
  }
};

/// The chip's instruction set, as parse_arch reads its `arch` (Isa::none where it has none).
Arch arch_of(const ChipSpec& c) noexcept;

/// Whether the chip's `vendor` is `vendor` (given in lower case), whatever its case.
bool vendor_is(const ChipSpec& c, std::string_view vendor) noexcept;
/// The chip as its vendor and kind, with its article, for messages: "an amd gpu", "a google tpu".
std::string vendor_and_kind(const ChipSpec& c);

/// Whether the chip may be an NVIDIA GPU: a GPU not known to be another vendor's (no HIP `arch`,
/// not vendor amd; a file of its own or an ERT roofline is let through). What CUDA-only engines
/// and kernels (TensorRT-LLM, DeepEP) ask of a chip.
bool may_be_nvidia_gpu(const ChipSpec& c) noexcept;

/// Whether the chip is a GPU the engines run on ROCm: a HIP `arch`, or vendor amd without one.
/// The engines' kernels and host paths there are their ROCm builds', a platform of its own in
/// the validation table's classes (io::answer_class).
bool is_rocm_gpu(const ChipSpec& c) noexcept;

/// Whether kernels on the chip may be launched with programmatic dependent launch: a CUDA GPU
/// of compute capability 9.0 or later, or a GPU that may be NVIDIA's whose file names no
/// instruction set (`arch`), taken at its word; never a TPU, a CPU or an AMD GPU
/// (docs/cost-model.md#pdl).
bool supports_pdl(const ChipSpec& c) noexcept;
/// Whether DeepGEMM's kernels run on the chip (the engines' block-fp8 GEMMs and grouped
/// experts, hw::KernelClass::gemm_scaled_deepgemm, gemm_expert_deepgemm): CUDA of compute
/// capability 9.x and 10.x alone, the architectures its kernels are built for
/// (deepseek-ai/DeepGEMM csrc/apis/gemm.hpp: arch_major 9 or 10, else "Unsupported
/// architecture"), as vLLM's is_deep_gemm_supported asks (vllm/utils/deep_gemm.py, 0.13+: 9.0
/// and the 10.x family). A chip file that names no `arch` is taken for such a GPU when its
/// vendor is nvidia and its matrix units multiply fp8 (docs/hardware.md#arch).
bool runs_deepgemm(const ChipSpec& c) noexcept;

/// Whether the chip is datacenter Blackwell, CUDA of compute capability 10.x (B200, B300, GB200):
/// the engines' is_sm100_supported and TensorRT-LLM's kernels built for SM100, which choose
/// their kernels there apart from Hopper's. A chip file that names no `arch` is taken for one
/// when its vendor is nvidia, it is a GPU and its matrix units multiply fp4, as an RTX Blackwell
/// card (12.x) without `arch` would be too (docs/hardware.md#arch).
bool is_sm100_family(const ChipSpec& c) noexcept;

/// Whether the ROCm engines' AITER kernels run on the chip: the gfx9 targets vLLM lists
/// (vllm/_aiter_ops.py is_aiter_found_and_supported, vllm/platforms/rocm.py on_gfx9: gfx90a,
/// gfx942, gfx950), taken as HIP 9.0 of stepping a and 9.4 up.
bool runs_aiter(const ChipSpec& c) noexcept;

/// Name of a unit ("matrix" / "vector").
std::string_view name(Unit u) noexcept;
/// Name of a link scope ("node" / "network" / "host").
std::string_view name(LinkScope s) noexcept;

/// Chips working together: `chips` copies of one chip, `chips_per_node` to a node.
struct System {
  ChipSpec chip;
  int chips = 1;
  int chips_per_node = 1;
  /// A torus slice's shape, axis lengths x, y, z (1 for an axis not used); all 0: chosen
  /// from `chips` (torus_slice()).
  std::array<int, 3> slice{};
  /// Chips in one scale-up domain: the switched or mesh domain, or the torus slice.
  int domain() const noexcept;
  /// The torus slice the chips form: `slice` when set, else the most cubic shape of
  /// min(chips, max_slice) over the chip's axes.
  std::array<int, 3> torus_slice() const noexcept;
  /// Link a collective over `group` chips crosses: the node link when the group fits in
  /// a node, else the network link (falling back to the node link when there is none).
  int comm_link(int group) const noexcept {
    int node = chip.link_index(LinkScope::node);
    int net = chip.link_index(LinkScope::network);
    if (group <= domain() || net < 0) return node >= 0 ? node : net;
    return net;
  }
};

}  // namespace ridgeline::hw
