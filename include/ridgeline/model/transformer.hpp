#pragma once
/// The op graph of one forward pass of a transformer (docs/models.md), its parameter
/// counts, and its memory on one chip.
#include <cstdint>
#include <optional>
#include <vector>

#include "ridgeline/comm/collective.hpp"
#include "ridgeline/hw/chip.hpp"
#include "ridgeline/model/graph.hpp"
#include "ridgeline/model/model_config.hpp"
#include "ridgeline/ops/attention.hpp"

namespace ridgeline::model {

/// Dtypes of a run; unset fields take the defaults documented per field.
struct Precision {
  std::optional<DType> weight;    ///< default: the checkpoint's (quantised modules keep their format)
  DType activation = DType::bf16;
  std::optional<DType> kv_cache;  ///< default: activation
  std::optional<DType> compute;   ///< default: from the weight and activation dtypes
};

/// How one forward pass is run.
struct ForwardConfig {
  Precision precision;
  std::int64_t tp = 1;  ///< tensor parallelism: heads, MLP width and vocab split over tp chips
  std::int64_t ep = 1;  ///< expert parallelism: experts split over ep groups of tp chips, attention data-parallel across them
  /// How each group of tp chips splits its experts (docs/serving.md#moe-layouts): each
  /// expert's width over the tp chips (tensor, the default), or whole experts spread over them
  /// (expert: vLLM's --enable-expert-parallel, SGLang's and TensorRT-LLM's MoE EP), so that
  /// experts are expert-parallel over tp x ep chips while attention stays tensor-parallel tp.
  enum class Experts : std::uint8_t { tensor, expert } experts = Experts::tensor;
  /// Chips the experts are spread over whole: ep, or tp x ep with Experts::expert.
  std::int64_t ep_size() const noexcept { return experts == Experts::expert ? tp * ep : ep; }
  ops::AttentionImpl attention = ops::AttentionImpl::flash;
  comm::Algo algo = comm::Algo::automatic;  // collectives: the fastest for the size (comm::price)
  /// A serving engine's own all-reduce (`algo` direct) has a size limit: an all-reduce of this
  /// many bytes or more runs in NCCL instead, the fastest of its algorithms for the size (vLLM's
  /// CustomAllreduce up to 8 MiB; docs/serving.md#all-reduce). 0: no limit.
  double custom_allreduce_max_bytes = 0;
  /// Each tensor-parallel all-reduce of a layer and the residual add + RMSNorm after it run as one
  /// kernel (FlashInfer's trtllm_allreduce_fusion and TensorRT-LLM's AllReduce with
  /// RESIDUAL_RMS_NORM: the peers' partial sums read, summed, added to the residual and
  /// normalised in registers; serving::EngineConfig::allreduce_norm, docs/serving.md#allreduce-norm).
  /// It holds where the all-reduce is the engine's own kernel (custom_allreduce_max_bytes), with
  /// merged kernels, RMSNorm, neither sequence nor attention data parallelism (nor MLA's attention
  /// op holding o_proj's all-reduce, MlaOp::projections): the norm is no
  /// kernel of its own, its bytes and FLOPs are the all-reduce's, now of class allreduce_norm.
  /// The first layer's input norm follows the embedding's all-reduce unfused and the last layer's
  /// all-reduce fuses the final norm in the engines; the graph, whose layers are one layer
  /// repeated, fuses each layer's input norm into its attention's all-reduce and its
  /// post-attention norm into its MLP's (the same kernels and bytes) and leaves the final norm
  /// apart. Where an all-reduce runs NCCL's kernels (past the limit), the norm runs apart.
  bool allreduce_norm = false;
  /// Where allreduce_norm holds, the tokens of a pass up to which the fused kernel runs, in place
  /// of the engine's own all-reduce limit: SGLang's FUSE_ALLREDUCE_MAX_BATCH_SIZE, 2048 (its
  /// FlashInfer workspace; past it, NCCL's all-reduce and the norm's own kernel: its custom
  /// all-reduce stops at 8 MiB, which 2048 tokens of its fused models' widths, 2048 or more,
  /// reach). 0: the engine's all-reduce limit (TensorRT-LLM).
  double allreduce_norm_max_tokens = 0;
  /// Past the fused kernel's limit, the norm's work kept in the all-reduce's op (its kernel
  /// counted, its time inside the op's) rather than an op of its own: the graphs a step model
  /// fits its lines to, whose ops keep their places at any size (serving::StepModel, whose
  /// lines add the norm's own kernel to NCCL's: analysis::fit_switch).
  bool allreduce_norm_in_place = false;
  /// The engine launches its own kernels with programmatic dependent launch (PDL): each
  /// kernel of those classes (hw::pdl_class) is dispatched while the one before it drains,
  /// hiding the chip's pdl_overlap_s of its boundary (ops::Rates with pdl; TensorRT-LLM 1.2+ and
  /// SGLang 0.4+ by default: serving::EngineConfig::pdl, docs/cost-model.md#pdl).
  /// Priced where a serving step is (serving::StepModel); `infer`'s static engine has none.
  bool pdl = false;
  /// NCCL may reduce in the switches (NVLS). Off where the engine turns it off: SGLang sets
  /// NCCL_NVLS_ENABLE=0 (vLLM's NCCL_CUMEM_ENABLE=0 of 0.5-0.10 does not: NCCL's NVLS asks for
  /// NCCL_NVLS_ENABLE, more than two GPUs and multicast support; docs/serving.md#all-reduce).
  bool nccl_nvls = true;
  /// Sequence parallelism: norms and residuals on T/tp tokens; each all-reduce becomes an
  /// all-gather before the column-parallel GEMMs and a reduce-scatter after the row-parallel ones.
  bool sequence_parallel = false;
  /// Context parallelism: each of cp chips holds 1/cp of every sequence. Ulysses exchanges
  /// Q, K, V and the output by all-to-all so that attention runs on heads/cp over the whole
  /// sequence; ring attention passes K and V blocks around the ring.
  std::int64_t cp = 1;
  bool cp_ring = false;
  /// Training: logits for every token and the cross-entropy loss (vocab-parallel, fp32),
  /// instead of logits for the last position of each sequence.
  bool training = false;
  /// Training with dropout (GPT-3-era runs): each residual add also writes its 1-byte mask
  /// (Megatron's fused bias-dropout-add), and naive attention drops its probabilities in a
  /// kernel of its own that reads them and writes them and a mask (FlashAttention drops them
  /// inside its kernel).
  bool dropout = false;
  /// The kernels serving engines run (vLLM, SGLang, TensorRT-LLM): q, k and v as one GEMM,
  /// gate and up as one, and each residual add inside the norm that follows it (fused
  /// add + RMSNorm; the final norm over every token). Same weights, fewer kernels and bytes
  /// (docs/models.md#engine-kernels).
  bool merged_kernels = false;
  /// The kernels of a checkpoint's fp8 block-scaled GEMMs (DeepSeek's 128x128 weight blocks,
  /// 1x128 activation groups) outside the experts: vLLM's Triton w8a8 block-fp8 kernel
  /// (hw::KernelClass::gemm_scaled), or DeepGEMM's (gemm_scaled_deepgemm), which TensorRT-LLM,
  /// SGLang and recent vLLM call (serving::EngineConfig::scaled_gemm, docs/serving.md#engines).
  /// Other block-scaled weights (fp4) keep gemm_scaled.
  enum class ScaledGemm : std::uint8_t { triton, deepgemm } scaled_gemm = ScaledGemm::triton;
  /// From this tensor-parallel size (0: never), fp8 block-scaled experts split by width
  /// (Experts::tensor, and no expert parallelism: ep 1) run in Triton's fused MoE whatever
  /// scaled_gemm says: vLLM 0.12+ turns DeepGEMM's MoE off by default when the MoE's
  /// tensor-parallel size is 8 or more (PR #29346); SGLang runs DeepGEMM's only under expert
  /// parallelism, Triton's fused MoE for experts split by width (1)
  /// (serving::EngineConfig::triton_moe_from_tp). The experts' class: gemm_expert_scaled.
  int triton_moe_from_tp = 0;
  /// The MoE layers' one shared expert run as one more expert of the routed experts' fused
  /// kernel, picked by every token beside its k (SGLang 0.4+ for DeepSeek-V3's architecture:
  /// serving::EngineConfig::fuse_shared_experts): where the experts are split by width with no
  /// expert parallelism (Experts::tensor, ep 1), the shared expert has the routed experts' width
  /// and weights' dtype, and the experts run outside DeepGEMM. The kernel's pairs are T·(k + 1),
  /// one more expert held and touched; no GEMMs of the shared expert's own and no add (the
  /// combine sums k + 1 outputs; docs/serving.md#fused-shared-expert).
  bool fuse_shared_experts = false;
  /// DeepGEMM's grouped experts (gemm_expert_deepgemm) take their rows from a kernel that copies
  /// each token's row once per routed expert, in the activations' dtype and in expert order, as
  /// TensorRT-LLM's CutlassFusedMoE does (expandInputRowsKernel into permuted_data_, which its
  /// fp8 block-scale FC1 then quantises: `experts_permute`); not under DeepEP, whose dispatch
  /// lays the rows out. The engines whose experts' curves time the whole fused MoE have that
  /// copy inside them.
  bool moe_expand_rows = false;
  /// The experts' grouped GEMMs carry their neighbours' work in their epilogues, as AITER's CK
  /// two-stage fused MoE does (the ROCm engines under their AITER switch,
  /// serving::EngineConfig::rocm_aiter): stage 1 writes the gate-up product through SiLU-and-mul
  /// (no `experts_act`: half the stores, the activation's FLOPs in its epilogue), stage 2 scales
  /// each pair's output by its routed weight and adds it into its token's row (no `moe_combine`:
  /// the tokens' rows stored once; on the rows' own path, not behind a gather or DeepEP).
  bool moe_fused_epilogues = false;
  /// Experts in fp8 128x128 blocks split by width over the tensor-parallel group (not expert-
  /// parallel) run AITER's one-stage fused MoE (hw::KernelClass::gemm_expert_onestage): one
  /// kernel, gate-up, SiLU-and-mul and down, whose workgroups each take a tile of this many of an
  /// expert's rows through the whole expert (this chip's share of it), reading its weights again
  /// for every such tile: ⌈m/tile⌉ times for an expert's m rows (expert_weight_reads). AITER's
  /// fused_moe runs it where its tuned tables hold no row for the shape (aiter/fused_moe.py
  /// get_2stage_cfgs: for fp8 in 1x128 groups, `run_1stage = token > 32 and inter_dim % 128 ==
  /// 0`, BLOCK_SIZE_M 32: the ..._1tg_ps_32x256 instance), as DeepSeek-V3's experts at TP 8 on
  /// gfx942 (docs/serving.md#engines). 0: another kernel, each touched expert's weights read once.
  double expert_reread_tile = 0;
  /// MLA's decode over its latent cache runs AITER's asm kernel (the ROCm engines under their
  /// AITER switch, serving::EngineConfig::rocm_aiter: aiter.mla.mla_decode_fwd), a kernel class of
  /// its own (hw::KernelClass::attention_decode_mla); else the decode attention class.
  bool aiter_mla = false;
  /// Where aiter_mla holds, whether the engine runs AITER's persistent MLA decode (work metadata
  /// from get_mla_metadata_v1: the step's keys split over the CUs), whose reduce kernel
  /// (mla_reduce_v1) merges each output row's splits after it: an op `attention_combine` of
  /// that class (ops::attention_combine_cost, docs/serving.md#engines). `fp8_cache_or_other_heads`:
  /// SGLang's aiter backend as its releases since 0.5.10 run it (SGLANG_AITER_MLA_PERSIST, on by
  /// default since PR #13147, December 2025, over any cache; off over a 16-bit cache from PR
  /// #17327, v0.5.8, at 16 heads only from PR #18607, v0.5.9, at 16 or 128 from PR #19247,
  /// v0.5.10): over an fp8 (e4m3) cache, and over a 16-bit one at heads other than 16 and 128 a
  /// GPU (the heads padded to 16); `from_16_heads`: vLLM's ROCM_AITER_MLA from 0.19 (PR
  /// #36574, March 2026), every decode of 16 heads a GPU or more.
  enum class MlaPersistent : std::uint8_t { off, fp8_cache_or_other_heads, from_16_heads } mla_persistent = MlaPersistent::off;
  /// How the engine's grouped GEMMs over block-fp8 experts in DeepGEMM's kernels tile each
  /// expert's rows (expert_row_tiles, docs/cost-model.md#row-tiles); all 0: in whole tiles of
  /// kDeepGemmRowTile at any size (DeepGEMM's contiguous layout).
  struct ExpertTiles {
    /// Tokens of a step (all groups) below which the engine runs another kernel, whose rows are
    /// priced as routed: vLLM's DeepGEMM MoE takes at least 128 (`_valid_deep_gemm_shape`,
    /// `align <= M`) and Triton's fused MoE runs below.
    double from_tokens = 0;
    /// Tokens of a step below which TensorRT-LLM's port of DeepGEMM's grouped GEMM swaps its
    /// operands, the tokens on the tile's columns, whose padding is not priced: 32 on H100 and
    /// H200, 64 on the H20's 78 SMs (m_per_expert_threshold in fp8_blockscale_gemm.cu's
    /// grouped_gemm_dispatch, against its expected_m: the MoE call's rows, num_rows, set by
    /// getWorkspaceSize at every call from moe_kernels.cu's configureWsPtrs).
    double swap_below = 0;
    /// Tokens of a step up to which the port's tiles are 64 rows, not 128: its
    /// get_best_gemm_config takes block_m 64 for a problem not flagged contiguous with
    /// expected_m <= 64 (deep_gemm/jit_utils.cuh), and grouped_gemm_dispatch does not flag it.
    double small_upto = 0;
  } expert_tiles;
  /// DeepSeek-V3's group-limited, biased router (ModelConfig::MoeSpec::grouped_biased) as the
  /// engine runs it after the router's GEMM (docs/serving.md#routing-kernels): `generic` one
  /// top-k kernel over the scores as for any router (`infer`, the static engine); `fused` one
  /// CUDA kernel of the routing class (SGLang's moe_fused_gate from PR #5371, vLLM 0.15+'s
  /// fused grouped top-k); `pair` the two kernels vLLM ported from TensorRT-LLM's noaux_tc
  /// (topk_with_k2 over each group, a pointwise kernel's figures; group_idx_and_topk_idx, the
  /// routing class), as vLLM 0.12-0.14 runs them; `scored_pair` those after a kernel that takes
  /// the sigmoid and adds the bias (TensorRT-LLM's DeepseekV3Gate to 1.0); `compiled` the torch
  /// ops torch.compile makes of it, as one op of the routing_compiled class (vLLM to 0.10.1,
  /// SGLang before PR #5371).
  enum class Routing : std::uint8_t { generic, fused, pair, scored_pair, compiled } routing = Routing::generic;
  /// MLA's absorbed up-projections (q_absorb, v_absorb) on weights dequantised to the
  /// activation dtype when the model loads, as batched 16-bit GEMMs (the gemm class): vLLM's
  /// MLA backends (get_and_maybe_dequant_weights of kv_b_proj, then torch.bmm), SGLang 0.4+'s on
  /// 128x128 fp8 blocks (block_quant_dequant). Otherwise they keep the checkpoint's dtype and
  /// block-scaled kernels (TensorRT-LLM's fp8 bmm).
  bool absorb_dequantised = false;
  /// MLA: what the engine's attention op holds besides the attention kernels, launched from
  /// its Python in every step but a whole graph (GraphOp::attention_op): `attention` nothing
  /// more (SGLang, TensorRT-LLM, vLLM on TPUs, `infer`); `absorbed` vLLM V1 from 0.9 (MLACommonImpl.forward):
  /// the cache write, a prompt's kv_b_proj and a decode's two absorptions, and its copies (a
  /// decode's query concatenation, reshape and output copy; a prompt's output copy);
  /// `projections` vLLM 0.8: also q_proj, RoPE (as PyTorch ops, 16 kernels a path), o_proj and
  /// o_proj's all-reduce, until PRs #17484 and #17668 moved them into the graphs.
  enum class MlaOp : std::uint8_t { attention, absorbed, projections } mla_op = MlaOp::attention;
  /// MLA's prefill attention with V padded to the query-key head dim (128 to 192 columns on
  /// DeepSeek-V3) and its output sliced back: vLLM V1 to 0.8.4 called FlashAttention with equal
  /// head dims (MLACommonImpl._forward_prefill: torch.nn.functional.pad of v, then
  /// output[..., :v_head_dim].reshape, a copy), until PR #13111 (2025-04-17) let FA3 on Hopper
  /// take V's own (serving::EngineConfig::mla_pad_v). The pad's copy, the attention's PV work
  /// and output at 192 columns, and the slice's copy are priced (docs/serving.md#mla-under-vllm-08).
  bool mla_pad_v = false;
  /// MXFP4 experts (an 8-bit scale a 32: gpt-oss) padded, their hidden width and each chip's
  /// share of their intermediate width, up to a multiple of this (0: none): FlashInfer's
  /// trtllm-gen MXFP4 MoE takes them so, and vLLM and SGLang allocate them so where they call it
  /// (serving::EngineConfig::mxfp4_expert_align). The padded GEMMs' work and weights are priced
  /// (and held in memory); the rows' pad and the output's slice are not.
  int mxfp4_expert_align = 0;
  /// The host's time per kernel of that op's own (its attention, cache write, absorptions,
  /// copies and, with `projections`, RoPE: GraphOp::InAttentionOp::own), the slope of the op's
  /// measured CPU time in its kernels (serving::EngineConfig::mla_op_host_s); 0: eager_host_s.
  /// Its projections cost eager_host_s.
  double mla_op_host_s = 0;
  /// The host's time a call of that op (one a layer a step outside a whole graph) beyond its
  /// kernels' (serving::EngineConfig::mla_op_call_host_s); 0 where it is not measured.
  double mla_op_call_host_s = 0;
  /// Expert parallelism's load imbalance: the routed tokens of the busiest chip over the
  /// mean (1: balanced; 1 to ep_size(); 0: the routing model of a balanced router,
  /// model::routing_imbalance, a function of the tokens routed in the pass). The busiest chip
  /// bounds every MoE layer: its expert GEMMs process, and its all-to-alls receive and return,
  /// this factor more token-expert pairs.
  double expert_imbalance = 1;
  /// How expert parallelism between attention data-parallel groups moves the tokens
  /// (docs/serving.md#deepep): `pairs`, every token-expert pair in the activations' dtype each
  /// way (an all-to-all of the pairs); `gather`, every group's tokens all-gathered to every chip
  /// before the router's experts and the outputs reduce-scattered back (the engines' default
  /// without an all-to-all backend: vLLM's allgather_reducescatter, SGLang's gathered MoE,
  /// TensorRT-LLM's attention-DP allgather); or `deepep`, DeepEP's kernels: tokens dispatched in
  /// fp8 with a 4-byte scale per 128 values and combined in bf16; its low-latency kernels (every
  /// pair, over RDMA) while a chip sends at most deepep_ll_tokens tokens, its normal kernels
  /// above, which send each token once to every node holding one of its experts (within one
  /// node, every chip) and forward it there.
  enum class MoeA2A : std::uint8_t { pairs, gather, deepep } moe_a2a = MoeA2A::pairs;
  /// Under attention data parallelism (ep > 1), whether the engine runs what lies outside the
  /// routed experts' GEMMs on every group's rows gathered, its weights split over all tp·ep
  /// chips, rather than on each group's own rows with the group's weights
  /// (docs/serving.md#gathered-dense-layers): a MoE model's dense layers' MLPs (the rows
  /// all-gathered, then the outputs reduce-scattered back) and, where the tokens are gathered for
  /// the experts (MoeA2A::gather), the router and the shared experts on the gathered rows before
  /// the reduce-scatter; and the LM head on every group's last tokens, its logits all-gathered.
  /// SGLang's default (LayerScatterModes: ScatterMode.FULL for a dense MLP unless
  /// --moe-dense-tp-size 1, and for a MoE block without an all-to-all backend; its shared experts
  /// over the whole TP group unless such a backend runs them at TP 1; LogitsProcessor's gathered
  /// head unless --enable-dp-lm-head); vLLM's ranks and TensorRT-LLM's attention-DP ranks run them
  /// on their own rows.
  bool gathered_dense = false;
  /// MLA with a query LoRA (q_lora_rank > 0): q_a_proj and kv_a_proj, which read the same
  /// hidden states, run as one GEMM "qkv_a_proj" of n = q_lora_rank + kv_lora_rank +
  /// qk_rope_head_dim, its input quantised once (serving::EngineConfig::fused_qkv_a).
  bool fused_qkv_a = false;
  /// DeepEP's low-latency buffer: tokens a chip dispatches per call (SGLang's
  /// SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK, 128).
  double deepep_ll_tokens = 128;
  /// The busiest chip's F at that many tokens a chip, where the step model fits the expert
  /// part balanced and applies F after (serving::StepModel); 0: the pass's routing model's.
  double deepep_ll_imbalance = 0;
  /// Greedy sampling's kernels over each sequence's logits (serving engines;
  /// docs/models.md#sampling): `argmax`, the logits cast to fp32 and their argmax (vLLM V1,
  /// SGLang, TensorRT-LLM), or `probs`, vLLM V0's Sampler, which also divides them by the
  /// temperature and takes their softmax and log-softmax before the argmax of a gathered copy.
  enum class Sampler : std::uint8_t { argmax, probs } sampler = Sampler::argmax;
  /// What the clients ask of sampling (serve --sampling; docs/serving.md#sampling): `greedy`,
  /// temperature 0 (the kernels of `sampler` above), or `random`, a temperature and nothing
  /// cut: the logits divided by it in place and their softmax, then the engine's `draw`.
  /// Top-p and top-k are not modelled.
  enum class Sampling : std::uint8_t { greedy, random } sampling = Sampling::greedy;
  /// How the engine draws a token from the probabilities when `random`: `exponential`, vLLM's
  /// random_sample (exponential noise written, the probabilities divided by it in place, their
  /// argmax; V0's _multinomial alike); `flashinfer`, SGLang's (the softmax written back over the
  /// logits, then FlashInfer's top_k_top_p_sampling_from_probs, one kernel that reads each row
  /// and draws); `multinomial`, TensorRT-LLM's TorchSampler (torch.multinomial of one sample: its
  /// checks of the probabilities' max, min and row sums, then the same exponential race).
  enum class Draw : std::uint8_t { exponential, flashinfer, multinomial } draw = Draw::exponential;
  /// Host time to issue one eagerly launched kernel from the engine's model code, seconds:
  /// the Python of its module (the op's dispatch, views, metadata, the launch itself). A step
  /// run eagerly lasts at least its kernels times this: the host issues them no faster, and
  /// the device waits once it has caught up (serving::StepModel; docs/serving.md#eager-host).
  /// 0: only the chip's launch overhead, kernel by kernel (a C++ runtime).
  double eager_host_s = 0;
  /// Host time per kernel of a compiled model run outside a graph, seconds: torch.compile's
  /// generated code launching its kernels (vLLM V1), every kernel but attention's, which the
  /// engine's Python calls between the compiled pieces at eager_host_s. 0: eager_host_s for
  /// every kernel.
  double compiled_host_s = 0;
  /// A serving engine's captured decode batch sizes, ascending, where a batch pads to the next
  /// (TensorRT-LLM's cuda_graph_batch_sizes with padding on): a decode-only step run as one
  /// graph computes its non-attention kernels on the padded rows (serving::StepModel). The
  /// engine's list (serving::EngineConfig::graph_sizes), read while a step model is fitted;
  /// null: each step at its own rows.
  const std::vector<std::int64_t>* graph_pad_sizes = nullptr;
  /// The sizes count a step's tokens (vLLM: pad_for_cudagraph on its scheduled tokens), not its
  /// sequences (TensorRT-LLM, SGLang): the same but for speculative decoding's several a sequence.
  bool graph_pad_tokens = false;
  /// The padding rows are one row repeated (TensorRT-LLM's CUDA-graph dummy request,
  /// `[cuda_graph_dummy_request] * padding_size`; vLLM V0's token 0 at position 0): they route to
  /// one token's experts, not each to its own (vLLM V1's and SGLang's leftover input rows route
  /// like real tokens).
  bool graph_pad_repeats = false;
  /// The padding rows are masked before the experts (SGLang's DeepEP path: the router runs on
  /// them, their top-k ids are set to -1 and no expert computes them; StepMix::masked_rows).
  bool graph_pad_masked = false;
  /// Attention data-parallel ranks (ep > 1) pad their forwards to the busiest rank's rows
  /// (docs/serving.md#rank-padding): none; in a step launched as graphs, every rank to the
  /// captured size (graph_pad_sizes) at or above the busiest rank's rows (vLLM 0.17+, SGLang,
  /// TensorRT-LLM); as graphs, and besides, in a decode-only step launched eagerly (drafts'
  /// verification too) whose ranks are balanced (their rows sum to at least half the busiest's times the ranks),
  /// every rank to the busiest rank's sequences (SGLang's DpPaddingMode.MAX_LEN: max_len); or as
  /// graphs, and besides, in any step launched eagerly, every rank to the busiest rank's tokens
  /// (vLLM 0.9.1-0.16, which padded whenever graphs were configured, whatever the step: always).
  enum class RankPad : std::uint8_t { none, graphs, max_len, always };
  RankPad rank_pad = RankPad::none;
};

/// One engine step of continuous batching: decode sequences (one token each, attending to
/// their whole context) and prefill chunks (q new tokens after the context already cached),
/// as the sums over the whole batch (all EP groups) that its graph needs
/// (docs/serving.md#step-model). Attention is flash.
struct StepMix {
  double decode_seqs = 0;    ///< sequences computing decode tokens (one each, or k + 1 when verifying k drafts)
  double decode_tokens = 0;  ///< Σ their query tokens
  double prefill_seqs = 0;   ///< sequences computing a prefill chunk
  double prefill_tokens = 0; ///< Σ chunk tokens
  double prefill_positions = 0;  ///< Σ context after the chunk (MLA decompresses K and V of every position)
  /// Of the tokens, rows repeating another row exactly (a CUDA graph's padding by one row
  /// repeated, ForwardConfig::graph_pad_repeats): computed as any row, routed as the row they
  /// repeat, so the experts they touch are the others' (model::touched_experts).
  double repeated_rows = 0;
  /// Of the tokens, padding rows masked before the experts (ForwardConfig::graph_pad_masked):
  /// computed by every kernel up to the router's, routed to no expert (no pair, no expert touched).
  double masked_rows = 0;
  /// Attention counts of the decode sequences and of the prefill chunks, on full-attention
  /// layers and on sliding-window layers.
  ops::AttentionCounts decode_full, decode_window, prefill_full, prefill_window;
  /// One attention kernel for both kinds (a varlen kernel, as vLLM's FlashAttention backend
  /// runs) rather than one for the prefill chunks and one for the decode tokens. MLA always
  /// runs two (decode absorbs the up-projections, prefill decompresses K and V).
  bool fused_attention = false;

  /// Adds a decode sequence computing `q` tokens (1; k + 1 when it verifies k draft tokens)
  /// whose context, with the tokens computed now, is `kv`.
  void add_decode(double kv, double window, double q = 1) noexcept;
  /// Adds a prefill chunk of `q` tokens ending at context `kv` (kv - q already cached).
  void add_prefill(double q, double kv, double window) noexcept;
  /// n times these sequences (every count is a sum over them).
  void scale(double n) noexcept;
  /// Adds `o`'s decode sequences (its prefill chunks left out).
  void add_decodes(const StepMix& o) noexcept {
    decode_seqs += o.decode_seqs, decode_tokens += o.decode_tokens;
    decode_full += o.decode_full, decode_window += o.decode_window;
  }
  /// Without its decode sequences (the prefill chunks kept).
  void clear_decodes() noexcept {
    decode_seqs = decode_tokens = 0;
    decode_full = decode_window = ops::AttentionCounts{};
  }
  double tokens() const noexcept { return decode_tokens + prefill_tokens; }
  double seqs() const noexcept { return decode_seqs + prefill_seqs; }
  /// Rows of the LM head: every decode token (each verified draft needs its logits) and the
  /// last token of each prefill chunk.
  double head_rows() const noexcept { return decode_tokens + prefill_seqs; }
};

/// One forward pass: `batch` sequences, each `q_len` new tokens attending to `kv_len`
/// positions (prefill: q_len = kv_len = prompt; decode: q_len = 1); or, with `mix`, one
/// engine step mixing prefill chunks and decode tokens (batch, q_len and kv_len unused).
struct PassShape {
  double batch = 1;
  double q_len = 1;
  double kv_len = 1;
  const StepMix* mix = nullptr;
};

/// What stops a parallel layout from fitting a model.
enum class LayoutFault : std::uint8_t {
  none, tp_range, ep_range, tp_heads, tp_kv_heads, tp_width, ep_dense, cp_mla, cp_ulysses, ep_experts, ep_imbalance, experts_dense
};
/// The first LayoutFault of `f` on `m` (validate without the message). Never throws.
LayoutFault check(const ModelConfig& m, const ForwardConfig& f) noexcept;

/// Throws InputError naming the flag when the plan does not fit the model (tp not
/// dividing the heads, ep not dividing the experts, ...).
void validate(const ModelConfig& m, const ForwardConfig& f);

/// The system's links as a forward pass's collectives see them: comm::wiring, without NVLS
/// where the engine turns NCCL's off (ForwardConfig::nccl_nvls).
comm::Wiring collective_wiring(const hw::System& sys, const ForwardConfig& f) noexcept;

/// Builds the graph of one forward pass on one chip of `sys`: embedding group, one group
/// per distinct layer kind (dense/MoE x full/sliding attention) with its layer count, head.
void build_forward(const ModelConfig& m, const ForwardConfig& f, const hw::System& sys, const PassShape& shape,
                   Graph& g) noexcept;

/// The weights' dtypes of a forward pass (checkpoint, or --weight-dtype), their block scales'
/// bits per weight, and the dtypes their GEMMs run in: NVFP4 weights run W4A4 where the chip
/// multiplies fp4, everything else as ops::default_compute_dtype, unless --compute-dtype says.
/// `dense` covers attention and dense MLPs, `expert` the routed experts.
struct GemmDtypes {
  DType dense_weight = DType::bf16, expert_weight = DType::bf16;
  double dense_scale_bits = 0, expert_scale_bits = 0;
  DType dense = DType::bf16, expert = DType::bf16;
};
GemmDtypes gemm_dtypes(const ModelConfig& m, const ForwardConfig& f, const hw::ChipSpec& chip) noexcept;
/// Whether a dense MLP of `width` (whole model: a dense layer's, or the shared experts') runs on
/// every attention data-parallel group's rows gathered, split over all tp·ep chips
/// (ForwardConfig::gathered_dense, ep > 1): where each chip's share holds whole blocks of the
/// weights' scales, 128 columns of block-fp8 weights (DeepSeek's), which SGLang's fp8 layers
/// require; else on each group's own rows (docs/serving.md#gathered-dense-layers).
bool gathers_dense_mlp(const ModelConfig& m, const ForwardConfig& f, double width) noexcept;
/// Whether `m`'s routed experts are MXFP4 under `f` (4-bit values, an 8-bit scale a 32: gpt-oss's
/// checkpoints), the experts ForwardConfig::mxfp4_expert_align pads.
bool mxfp4_experts(const ModelConfig& m, const ForwardConfig& f, const hw::ChipSpec& chip) noexcept;

/// Experts of one chip's E/ep (`ep`: the chips the experts are spread over, ep_size()) whose
/// weights a MoE layer reads when the `group_tokens` tokens routed over them each pick k of
/// the E experts, routing balanced and independent: each expert touched with probability
/// p = 1 - (1 - k/E)^group_tokens, E/ep·p on average; for ep > 1 the busiest chip's
/// (returned), the expected maximum of ep counts Bin(E/ep, p) (busiest_of_binomials), and at
/// least one whole expert once a token is routed: max(that, min(1, E·p)).
double touched_experts(const ModelConfig& m, double ep, double group_tokens) noexcept;

/// How a MoE layer's expert GEMMs read their experts' weights (GraphOp::reread_tile): `tile` 0,
/// each touched expert's once (touched_experts); else once per tile of `tile` of an expert's
/// rows (ForwardConfig::expert_reread_tile), and with `fixed` the expert inside the kernel every
/// routed token takes besides its k (ForwardConfig::fuse_shared_experts) among them.
struct ExpertReads {
  double tile = 0;
  bool fixed = false;
};
/// The experts' weight reads of one pass over `group_tokens` routed tokens: touched_experts(m,
/// ep, group_tokens) for r.tile 0; else, the experts unspread (ep 1), E·E[⌈x/tile⌉] for an
/// expert's rows x ~ Bin(group_tokens, k/E) under a balanced router, which is group_tokens·k·
/// expert_row_tiles(m, group_tokens, tile)/tile, plus ⌈group_tokens/tile⌉ for r.fixed's expert.
/// 0 for no tokens.
double expert_weight_reads(const ModelConfig& m, double ep, double group_tokens, const ExpertReads& r) noexcept;
/// How graph `g`'s expert GEMMs read their weights (GraphOp::reread_tile and reread_fixed of the
/// op that has them), for the evaluators of its lines; tile 0 where none reads per row tile.
ExpertReads expert_reads(const Graph& g) noexcept;

/// The rows of each expert's tile DeepGEMM's grouped GEMMs compute whole: its contiguous layout
/// pads every expert's rows to a multiple of 128 (get_mk_alignment_for_contiguous_layout,
/// deepseek-ai/DeepGEMM csrc/utils/layout.hpp; vLLM rounds each expert's count up to it,
/// deep_gemm_utils.py; DeepEP aligns SGLang's, expert_alignment=128), and TensorRT-LLM's port
/// (GroupedWithOffset) runs ⌈m_e/128⌉ tiles of 128 rows an expert, storing the rows it has,
/// for a call of more than 64 tokens (ForwardConfig::ExpertTiles::small_upto: 64 below).
inline constexpr double kDeepGemmRowTile = 128;
/// The rows a grouped GEMM's tiles compute over the rows routed to the experts, when each
/// expert's rows run in whole tiles of `tile` (docs/cost-model.md#row-tiles): an expert's rows m
/// are Bin(group_tokens, k/E) under a balanced router (as touched_experts), its tiles'
/// rows tile·⌈m/tile⌉, and the ratio E[tile·⌈m/tile⌉] / E[m]. Summed over the binomial's
/// terms within 10^-16 of its mode while its deviation σ is under a tile; past that the
/// rows' remainder in a tile is uniform (to about e^(-2π²σ²/tile²)) and the ratio
/// 1 + (tile − 1)/(2·E[m]). 1 for tile <= 1 or no tokens; `tile` for fewer than one token.
double expert_row_tiles(const ModelConfig& m, double group_tokens, double tile) noexcept;
/// The same for the engine's kernel at a step of `tokens` (of every group: the MoE layer's
/// rows), its experts' rows those of the busiest chip, `share` (F) times the mean, under `t`: 1
/// below t.from_tokens or t.swap_below tokens; tiles of 64 rows up to t.small_upto tokens,
/// else of kDeepGemmRowTile; r at tokens·share.
double expert_row_tiles(const ModelConfig& m, double tokens, double share, const ForwardConfig::ExpertTiles& t) noexcept;

/// DeepEP's normal kernels send a token once to every unit holding one of its experts: every
/// node (scale-up domain) when the expert-parallel group spans several, else every chip. Their
/// bytes over the pairs': D/(k/te), D the expected units among a token's k distinct experts
/// chosen uniformly of E, each unit holding E/(units·te) of them (te: the chips of a
/// tensor-parallel group holding whole experts, --experts ep; 1 otherwise), D = units·(1 −
/// C(E − E/(units·te), k)/C(E, k)), and k/te the pairs a token sends into the group
/// (docs/serving.md#deepep). 1 for a group of one chip.
double deepep_normal_share(const ModelConfig& m, const comm::Placement& ep_group, double te = 1) noexcept;
/// "pairs", "gather" or "deepep" (ForwardConfig::moe_a2a; the CLI's --moe-a2a, JSON `moe_a2a`).
constexpr const char* name(ForwardConfig::MoeA2A a) noexcept {
  return a == ForwardConfig::MoeA2A::deepep ? "deepep" : a == ForwardConfig::MoeA2A::gather ? "gather" : "pairs";
}

/// DeepEP's low-latency buffer on each chip (its LowLatencyLayout, csrc/config.hpp): odd and
/// even send, receive and signaling buffers for deepep_ll_tokens tokens a chip, hidden h and E
/// experts: 2·(max(T·d, E·T·c) + max(E·T·d, E·T·c) + 4E) bytes, a dispatch message d = 16 +
/// max(2h, h + 4·⌊h/128⌋), a combine message c = 2h. 0 unless moe_a2a is deepep over ep > 1
/// groups of a MoE model.
double deepep_buffer_bytes(const ModelConfig& m, const ForwardConfig& f) noexcept;

/// The expected maximum of `chips` independent Binomial(n, p) counts (n whole: its floor is
/// taken, up to 10^7).
double busiest_of_binomials(double n, double p, double chips) noexcept;

/// Parameter counts from the graph (tp = 1). `active` counts the weights one token
/// multiplies (routed experts: top-k only), without the input embedding table;
/// `active_with_embedding` adds it.
struct ParamCount {
  double total = 0;
  double active = 0;
  double active_with_embedding = 0;
  double embedding = 0;
};
ParamCount count_params(const ModelConfig& m) noexcept;

/// Bytes of KV cache per token of context on one chip, summed over layers (sliding
/// layers counted at full rate; see kv_cache_bytes).
double kv_bytes_per_token(const ModelConfig& m, const ForwardConfig& f) noexcept;
/// KV cache on one chip for `batch` sequences of `context` tokens (sliding layers keep
/// at most their window).
double kv_cache_bytes(const ModelConfig& m, const ForwardConfig& f, double batch, double context) noexcept;

}  // namespace ridgeline::model
