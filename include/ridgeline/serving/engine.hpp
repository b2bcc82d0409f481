#pragma once
/// A serving engine's scheduler as documented knobs (docs/serving.md#engines): presets for
/// vLLM (V1), SGLang and TensorRT-LLM whose defaults come from each engine's own code and
/// documentation, and `static`, which serves batches the way `infer` models them. Every knob
/// can be overridden.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/comm/collective.hpp"
#include "ridgeline/hw/chip.hpp"
#include "ridgeline/serving/step_model.hpp"

namespace ridgeline::serving {

enum class EngineKind : std::uint8_t { vllm, sglang, trtllm, static_batch };
std::string_view name(EngineKind k) noexcept;

/// An engine and the release whose defaults its preset follows: `version` 0 is the newest the
/// project models, else major·1000 + minor of the first release of a preset whose defaults
/// differ (vLLM 0.8, MLA's projections inside its eager attention op: 8; 0.9-0.10, piecewise
/// decode graphs: 10; 0.11-0.13, before async scheduling became the default: 13; vLLM 0.6, the
/// V0 engine: 6; TensorRT-LLM's PyTorch backend to 1.1, before programmatic dependent launch
/// by default: 1001, the last release of the bucket, as it is named).
struct EngineRef {
  EngineKind kind = EngineKind::vllm;
  int version = 0;
  constexpr EngineRef() = default;
  constexpr EngineRef(EngineKind k, int v = 0) noexcept : kind(k), version(v) {}  // NOLINT: an engine is its newest preset
  bool operator==(const EngineRef&) const = default;
};
/// The two presets that are another engine, not another release's defaults: vLLM 0.6's V0 (its
/// own scheduler, batch expansion for drafts, graphs sized by the sequence limit) and
/// TensorRT-LLM's TensorRT engine flow of 0.9-0.15 (trtllm-build engines, no Python runtime).
inline constexpr int kVllmV0Version = 6;
inline constexpr int kTrtllmEnginesVersion = 15;
/// TensorRT-LLM's PyTorch backend before programmatic dependent launch ran by default
/// (`trtllm@1.1`: 0.19-1.1, TRTLLM_ENABLE_PDL opt-in; docs/cost-model.md#pdl): the `trtllm`
/// preset otherwise.
inline constexpr int kTrtllmOptInPdlVersion = 1001;
constexpr bool is_vllm_v0(EngineRef e) noexcept { return e.kind == EngineKind::vllm && e.version == kVllmV0Version; }
constexpr bool is_trtllm_engines(EngineRef e) noexcept {
  return e.kind == EngineKind::trtllm && e.version == kTrtllmEnginesVersion;
}
/// SGLang 0.3's preset: another release's defaults (no overlap scheduler, its own capture list,
/// memory rule and flags), named once as the two above are.
inline constexpr int kSglang03Version = 3;
constexpr bool is_sglang_03(EngineRef e) noexcept { return e.kind == EngineKind::sglang && e.version == kSglang03Version; }
/// "vllm", "vllm@0.13", "sglang", "trtllm", "static".
std::string name(EngineRef e);
/// "vllm", "sglang", "trtllm" or "static", each optionally "@MAJOR.MINOR" (the release whose
/// defaults to follow; any release maps to the preset covering it); nullopt otherwise. A
/// release before what the presets cover throws InputError naming it and what they cover.
std::optional<EngineRef> parse_engine(std::string_view s);
/// The releases each family's presets cover, as --engine's help says them: "vllm@0.6 (V0),
/// @0.8, ..." (the refusals of a release outside them name the same).
std::string engine_releases();

/// What a step holds and in which order the scheduler fills it.
enum class StepPolicy : std::uint8_t {
  running_first,     ///< vLLM: running requests (decodes, then an unfinished chunk), then waiting ones, in one mixed step
  prefill_first,     ///< SGLang: a prefill step whenever new requests can be admitted, else a decode step
  generation_first,  ///< TensorRT-LLM: generation tokens, then context requests, in one mixed step
  static_batch       ///< a batch prefilled together, decoded until its last request ends, then the next
};

/// What must be free to admit a request.
enum class Admission : std::uint8_t {
  step_blocks,    ///< vLLM: the blocks of this step's chunk (nothing kept for the output)
  ratio_reserve,  ///< SGLang: the prompt and the whole output, with running requests charged a decaying share of theirs
  completion      ///< TensorRT-LLM (GUARANTEED_NO_EVICT), static: the blocks to completion, for every admitted request
};

/// What happens when a running request needs a block and none is free.
enum class Preemption : std::uint8_t {
  recompute,  ///< its blocks are freed; later it prefills its prompt and outputs again
  swap        ///< its blocks are copied to host memory over the host link, and back when resumed
};

/// How the KV cache is sized from the chip's memory C, the weights W, the activations A of
/// one step at the token budget, and what the engine reserves R (docs/serving.md#memory).
enum class MemoryRule : std::uint8_t {
  profiled,  ///< vLLM gpu_memory_utilization f: f·C - W - A - R (a profiling step measures A)
  static_fraction,  ///< SGLang mem_fraction_static f: f·C - W - R (A lives in the 1 - f left over)
  of_free    ///< TensorRT-LLM free_gpu_memory_fraction f: f·(C - W - A - R)
};

/// SGLang's FUSE_ALLREDUCE_MAX_BATCH_SIZE (python/sglang/srt/layers/communicator.py): the tokens
/// of a pass up to which it runs each all-reduce with the norm after it in FlashInfer's fused
/// kernel (EngineConfig::allreduce_norm_max_tokens).
inline constexpr std::int64_t kSglangFusedAllreduceMaxTokens = 2048;

struct EngineConfig {
  EngineKind kind = EngineKind::vllm;
  int version = 0;                         ///< EngineRef::version of the preset
  constexpr EngineRef ref() const noexcept { return {kind, version}; }
  std::string releases;                    ///< the releases the preset follows, e.g. "0.14+"
  StepPolicy policy = StepPolicy::running_first;
  Admission admission = Admission::step_blocks;
  Preemption preemption = Preemption::recompute;
  MemoryRule memory_rule = MemoryRule::profiled;
  std::int64_t max_batched_tokens = 8192;  ///< token budget of one step (vLLM max_num_batched_tokens, SGLang chunked_prefill_size, TRT max_num_tokens)
  std::int64_t max_num_seqs = 1024;        ///< running requests at most (0: SGLang's rule from the cache size)
  std::int64_t max_prefill_tokens = 0;     ///< SGLang: tokens of new requests in one prefill step (0: the step budget)
  bool chunked_prefill = true;             ///< a prompt longer than the budget left is split over steps
  bool mixed_chunk = false;                ///< SGLang --enable-mixed-chunk: decodes ride in the prefill step
  std::int64_t kv_block = 16;              ///< tokens per KV block (page)
  double kv_memory_fraction = 0.9;         ///< see MemoryRule
  bool seqs_by_draft = false;              ///< max_num_seqs is SGLang's default under drafts (settle_draft_limits), not given
  double reserved_bytes = 0;               ///< memory neither weights, activations nor cache (CUDA context, NCCL, graph pool), per chip
  std::int64_t kv_blocks_override = 0;     ///< cache blocks per replica instead of the memory's (vLLM num_gpu_blocks_override; 0: computed)
  bool prefix_caching = true;
  bool partial_reuse = false;              ///< a partly filled last prefix block is reused too (TensorRT-LLM)
  /// Sliding-window layers keep only the blocks their window still reads (vLLM's hybrid KV
  /// cache manager, 0.10+; off: --disable-hybrid-kv-cache-manager, every layer's blocks kept
  /// for the whole context). serving::KvLayout.
  bool free_window_blocks = false;
  bool fused_attention = false;            ///< one attention kernel for prefill and decode tokens (vLLM FlashAttention varlen)
  /// The tensor-parallel all-reduce: engines run their own (vLLM's and SGLang's custom
  /// all-reduce, TensorRT-LLM's AUTO strategy): peers' buffers read directly over NVLink in one
  /// or two shots, `direct`: 2 latency steps for 2(P-1)/P of the bytes, not a ring's 2(P-1).
  comm::Algo collective_algo = comm::Algo::direct;
  /// The engine's own all-reduce takes messages under this many bytes, NCCL the rest (the
  /// fastest of its algorithms: model::ForwardConfig::custom_allreduce_max_bytes), by
  /// tensor-parallel size: 2 or fewer, 3-4, more. vLLM and SGLang: 8 MiB (CustomAllreduce
  /// max_size); TensorRT-LLM's AUTO strategy: 16 MB (inclusive), 1 MB, 500 kB. 0: no limit
  /// (docs/serving.md#all-reduce).
  std::array<double, 3> custom_allreduce_max_bytes{0, 0, 0};
  /// NCCL may reduce in the switches (NVLS): SGLang sets NCCL_NVLS_ENABLE=0 (model::ForwardConfig::nccl_nvls).
  bool nccl_nvls = true;
  /// The engine's kernels: QKV and gate-up GEMMs merged, residual adds fused into the norms
  /// (vLLM QKVParallelLinear, MergedColumnParallelLinear, fused_add_rms_norm; SGLang and
  /// TensorRT-LLM alike). model::ForwardConfig::merged_kernels.
  bool merged_kernels = true;
  /// The kernels of fp8 block-scaled GEMMs outside the experts (model::ForwardConfig::scaled_gemm):
  /// DeepGEMM where the release calls it by default (TensorRT-LLM, PR #3341; SGLang 0.4.6+,
  /// PR #5628; vLLM from v0.11, PR #24462) on a chip it runs on (hw::runs_deepgemm), else the
  /// gemm_scaled class: vLLM's Triton w8a8 block-fp8 kernel, or on ROCm AITER's.
  model::ForwardConfig::ScaledGemm scaled_gemm = model::ForwardConfig::ScaledGemm::triton;
  /// On ROCm (a gfx9 chip AITER runs on, hw::runs_aiter), the engine's AITER kernels switched on
  /// (vLLM's VLLM_ROCM_USE_AITER=1 from the 0.9-0.10 preset, SGLang's SGLANG_USE_AITER=1 from
  /// 0.4; both off by default): what SGLang's ROCm image sets (docker/rocm.Dockerfile) and the
  /// ROCm fork's vLLM guide enables (ROCm/vllm docs/dev-docker/README.md). Its MoE runs AITER's two fused
  /// kernels (model::ForwardConfig::moe_fused_epilogues); its block-fp8 GEMMs AITER's CK kernel
  /// under vLLM, the MI300X's gemm_scaled curve, and AITER's Triton one under SGLang, priced
  /// by that curve. The launch files export it (planning::LaunchWorker::env).
  bool rocm_aiter = false;
  /// Under rocm_aiter on gfx942 (the MI300X's and MI325X's die), the rows a tile of AITER's default
  /// one-stage fused MoE, which it runs for block-fp8 experts split by width, shapes its tables do
  /// not tune there (model::ForwardConfig::expert_reread_tile: 32); 0 elsewhere (gfx950's and
  /// gfx90a's tables and rules differ).
  double aiter_moe_tile = 0;
  /// From this tensor-parallel size the experts' fp8 block-scaled GEMMs run in Triton's fused
  /// MoE even where scaled_gemm is DeepGEMM, unless the experts are expert-parallel
  /// (model::ForwardConfig::triton_moe_from_tp; vLLM 0.12+: 8, PR #29346; SGLang 0.4+: 1). 0: never.
  int triton_moe_from_tp = 0;
  /// How expert parallelism moves the tokens (model::ForwardConfig::moe_a2a): every serving
  /// engine's default gathers the ranks' tokens (engine_preset); DeepEP is an option of each
  /// (SGLang's --moe-a2a-backend deepep, vLLM's --all2all-backend deepep_*, TensorRT-LLM's wide
  /// EP); the static engine moves the pairs.
  model::ForwardConfig::MoeA2A moe_a2a = model::ForwardConfig::MoeA2A::pairs;
  /// Under attention data parallelism, the dense layers, router, shared experts and LM head on
  /// every rank's rows gathered, split over all GPUs (model::ForwardConfig::gathered_dense):
  /// SGLang 0.4+'s default (engine_preset).
  bool gathered_dense = false;
  /// MLA's two down-projections of the hidden states, the query's (q_lora_rank wide) and the
  /// latent's with its RoPE key (kv_lora_rank + qk_rope_head_dim), as one GEMM of their widths
  /// summed (model::ForwardConfig::fused_qkv_a): SGLang 0.4.6+, vLLM 0.10+, TensorRT-LLM's
  /// PyTorch backend.
  bool fused_qkv_a = false;
  /// What MLA's attention op holds, launched from the engine's Python outside whole graphs
  /// (model::ForwardConfig::mla_op): vLLM 0.8 its projections and RoPE too (`projections`, until
  /// PRs #17484 and #17668), vLLM from 0.9 the cache write, absorptions and copies (`absorbed`),
  /// others attention alone.
  model::ForwardConfig::MlaOp mla_op = model::ForwardConfig::MlaOp::attention;
  /// The host's time per kernel of that op's own (model::ForwardConfig::mla_op_host_s) and per
  /// call (model::ForwardConfig::mla_op_call_host_s), with their source.
  double mla_op_host_s = 0;
  double mla_op_call_host_s = 0;
  std::string mla_op_host_source;
  /// MLA's prefill attention over V padded to the query-key head dim and sliced back
  /// (model::ForwardConfig::mla_pad_v): vLLM 0.8 to 0.8.4 on GPUs.
  bool mla_pad_v = false;
  /// The model's code masks the padding rows before the experts under an all-to-all (SGLang's
  /// DeepEP path: ForwardConfig::graph_pad_masked with --moe-a2a deepep); set by the model's preset.
  bool mask_moe_padding = false;
  /// DeepSeek-V3's shared expert as a 257th expert of the fused MoE (model::ForwardConfig::
  /// fuse_shared_experts): SGLang 0.4+ on CUDA of compute capability 8.0+ but datacenter
  /// Blackwell (10.x, whose FlashInfer TRTLLM MoE runner turns it off) and on HIP of 9.4+ (the
  /// chip's `arch`; without one, an nvidia GPU with bf16 matrix units that does not multiply
  /// fp4); set by the model's preset, the graph fusing where its layout allows
  /// (docs/serving.md#fused-shared-expert).
  bool fuse_shared_experts = false;
  /// TensorRT-LLM's MoE backend (its LLM-API `moe_config.backend`) where its default does not
  /// run the checkpoint's experts: fp8 experts in 128 x 128 blocks (DeepSeek's, any checkpoint of
  /// such blocks: DeepGEMM's) on datacenter Blackwell (hw::is_sm100_family), whose CUTLASS grouped
  /// GEMMs over fp8 blocks are SM90's: DEEPGEMM, as the PyTorch backend's DeepSeek-R1 deployment
  /// guide runs them up to an expert-parallel size of 8; empty elsewhere. The preset sets it from
  /// the checkpoint; a run resolves it for its own layout (moe_backend()), which the launch file
  /// writes and the JSON reports (docs/deploy.md#moe-backend).
  std::string_view moe_backend;
  /// Each layer's tensor-parallel all-reduce runs the residual add and RMSNorm after it in its
  /// kernel (model::ForwardConfig::allreduce_norm, docs/serving.md#allreduce-norm), as the
  /// engine's model code calls it by default; set by the model's preset: TensorRT-LLM's PyTorch
  /// backend for DeepSeek-V3's architecture and for Llama of hidden width over 4096; SGLang
  /// 0.4+ for DeepseekV3ForCausalLM, GptOssForCausalLM, Glm4MoeForCausalLM and
  /// Qwen3MoeForCausalLM on compute capability 9.0 and 10.x, within one node. The graph fuses
  /// where the layer allows (no attention data parallelism among them).
  bool allreduce_norm = false;
  /// Where allreduce_norm holds, the tokens of a pass up to which it runs (model::ForwardConfig::
  /// allreduce_norm_max_tokens): SGLang's kSglangFusedAllreduceMaxTokens; 0, TensorRT-LLM's,
  /// wherever its own all-reduce runs.
  std::int64_t allreduce_norm_max_tokens = 0;
  /// What the engine's model code does unasked for this model and chip (the rule's allreduce_norm,
  /// before --allreduce-fusion): where a run differs, --emit asks the engine for the run's.
  bool allreduce_norm_default = false;
  /// Where allreduce_norm comes from: the engine's rule (its code) or "--allreduce-fusion".
  std::string allreduce_norm_source;
  /// The engine launches its own kernels with programmatic dependent launch (model::
  /// ForwardConfig::pdl, docs/cost-model.md#pdl): TensorRT-LLM's PyTorch backend (TRTLLM_ENABLE_PDL
  /// on in 1.2.0) and SGLang 0.4+ (its launcher sets it for FlashInfer's kernels), on a chip that
  /// runs it (hw::supports_pdl); it hides part of each of those kernels' boundaries where the
  /// chip's file measures how much (hw::EfficiencySpec::pdl_overlap_s).
  bool pdl = false;
  /// Where pdl comes from: the engine's default (its code) or "--pdl".
  std::string pdl_source;
  /// What the engine does unasked on this chip (pdl before --pdl): where a run differs, --emit
  /// asks the engine for the run's.
  bool pdl_default = false;
  /// MXFP4 experts padded to a multiple of this (model::ForwardConfig::mxfp4_expert_align): 256
  /// under vLLM (0.10.1+) and SGLang (0.4+) on chips that multiply fp4 (Blackwell), where both
  /// run them in FlashInfer's trtllm-gen MoE; 0 elsewhere.
  int mxfp4_expert_align = 0;
  /// How its grouped GEMMs in DeepGEMM's kernels tile each expert's rows
  /// (model::ForwardConfig::ExpertTiles): vLLM from 128 tokens (Triton's below); TensorRT-LLM's
  /// port swapped below 32 tokens a step (64 on the H20), in tiles of 64 rows up to 64 tokens; 0
  /// elsewhere (DeepGEMM's contiguous layout: every expert in 128-row tiles).
  model::ForwardConfig::ExpertTiles expert_tiles;
  /// Greedy sampling's kernels (model::ForwardConfig::sampler): vLLM V0's Sampler computes
  /// probabilities and log-probabilities over the vocabulary every step (`probs`).
  model::ForwardConfig::Sampler sampler = model::ForwardConfig::Sampler::argmax;
  /// How a batch sampled at a temperature draws its tokens (model::ForwardConfig::draw;
  /// docs/serving.md#sampling), and where that comes from.
  model::ForwardConfig::Draw draw = model::ForwardConfig::Draw::exponential;
  std::string draw_source;
  GraphMode decode_graphs = GraphMode::graph;  ///< steps of decode tokens only, up to graph_max_batch
  GraphMode mixed_graphs = GraphMode::eager;   ///< steps with prefill tokens
  std::int64_t graph_max_batch = 512;      ///< largest captured decode batch
  /// Graphs captured by a step's tokens, whatever their kind (vLLM V1: cudagraph_capture_sizes up
  /// to max_cudagraph_capture_size, 512 by default): a step of more tokens than this runs without
  /// graphs, every kernel launched by the host, a mixed step too (mixed_step_graphs). 0: no cap.
  std::int64_t graph_max_tokens = 0;
  /// vLLM under speculative decoding: the largest graph it is configured with
  /// (max_cudagraph_capture_size), before it rounds its sizes to multiples of 1 + k
  /// (pad_graphs); what a launch file writes. 0 where nothing was rounded.
  std::int64_t graph_capture_max = 0;
  /// vLLM V1 0.11+ and V0: with no capture size given, the largest graph is sized from the
  /// sequence limit (capture_from_seqs); false once --graph-max-batch gives one.
  bool capture_follows_seqs = false;
  /// Decode batches captured only at exact sizes, no padding (TensorRT-LLM's default
  /// cuda_graph_config: 1-32, 64 and 128): any other batch runs as mixed_graphs.
  bool graph_exact_sizes = false;
  /// The sizes captured as graphs, ascending, when a step pads to the next (pad_graphs: the
  /// engine's own list, or --graph-sizes): sequences of a decode-only step, or (vLLM V1) tokens
  /// of any step launched as graphs; a padded step computes its kernels but attention on the
  /// padded rows (docs/serving.md#graph-padding). Empty: each step priced at its own rows.
  std::vector<std::int64_t> graph_sizes;
  /// Host time per eagerly launched kernel of the model's forward (model::ForwardConfig::eager_host_s):
  /// an eager step lasts at least its kernels times this (docs/serving.md#eager-host).
  double eager_host_s = 0;
  /// Host time per kernel of the compiled model outside a graph (model::ForwardConfig::
  /// compiled_host_s: vLLM V1's torch.compile'd code past its largest graph). 0: eager_host_s.
  double compiled_host_s = 0;
  double step_overhead_s = 0;              ///< host time per step (schedule, prepare inputs, sample, detokenize)
  double per_request_overhead_s = 0;       ///< host time per request in the step
  /// The server's own time for each request, outside the scheduler's steps: the HTTP request
  /// parsed, the prompt templated and tokenised and handed to the engine (vLLM's API server to
  /// its engine core over ZMQ), the first token detokenised and streamed back. It delays the
  /// request's arrival at the scheduler and adds to its TTFT and E2E; the device never sees
  /// it (docs/serving.md#front-end).
  double front_end_s = 0;
  /// The host prepares step n+1 while the device runs step n (vLLM's async scheduling, SGLang's
  /// overlap scheduler, TensorRT-LLM's overlap scheduler): its time hides behind the device, and
  /// step n+1's batch is fixed when step n starts, so a request arriving during step n first
  /// runs in step n+2 (docs/serving.md#host-time).
  bool overlap_scheduling = false;
  /// Host time per step that shows as device idle even when overlapped (TensorRT-LLM's
  /// single-threaded loop: issue #13957).
  double exposed_step_s = 0;
  /// Host time per step (and per request in it) that runs while the device runs the next step:
  /// vLLM V0's asynchronous output processing (outputs detokenised and checked for stops on the
  /// CPU during the next forward pass). A step lasts at least this long, and its outputs reach
  /// the client only then: once the next step has been scheduled and launched, and they have
  /// been processed (engine_outputs_next_step; docs/serving.md#output-lag).
  double async_step_s = 0, async_per_request_s = 0;
  /// That processing done after each step's device work instead, on the critical path, its
  /// outputs sent at the step's end: vLLM V0 turns its asynchronous output processor off under
  /// --enforce-eager and speculative decoding (vllm/config.py ModelConfig.verify_async_output_proc,
  /// v0.6.0); set by instance_plan for a run without graphs or with a draft.
  bool outputs_in_step = false;
  /// vLLM V0 without chunked prefill: a step holds prefills or decodes, never both; waiting
  /// requests' prompts go first ("Don't schedule decodes if prefills are scheduled",
  /// vllm/core/scheduler.py _schedule_default).
  bool prefills_apart = false;
  /// vLLM V0 --num-scheduler-steps n: the scheduler runs once per window of n decode steps, whose
  /// batch is fixed; a request arriving in a window waits for its end, a sequence that ends in it
  /// keeps its place to the window's end (its end sent to the client during the window's next
  /// step), the other sequences' tokens come out at the window's end, and the scheduler's host
  /// time (step_overhead_s, per_request_overhead_s) is paid once per window (docs/serving.md#multi-step).
  std::int64_t scheduler_steps = 1;
  /// SGLang --scheduler-recv-interval n: the scheduler reads the requests sent to it only once
  /// the steps since it last did weigh n, a decode step 1 and a step with prompt tokens 1000
  /// (SchedulerRecvSkipper, python/sglang/srt/managers/scheduler_recv_skipper.py): a request
  /// arriving among decode steps waits up to n of them; an idle engine reads at once
  /// (docs/serving.md#recv-interval). 1: every step.
  std::int64_t recv_interval = 1;
  // SGLang admission (Admission::ratio_reserve).
  double new_token_ratio_init = 0.7, new_token_ratio_min = 0.098;
  double new_token_ratio_decay_steps = 600;
  std::int64_t reserve_clip_tokens = 4096;  ///< output tokens reserved at most per request
  std::int64_t retract_steps = 20;          ///< decode steps of room kept after a retraction
  std::string sources;                      ///< where the preset's figures come from
  /// Where the host path's two components come from, short enough for a line of output:
  /// the step's host time (step_overhead_s, per_request_overhead_s, exposed_step_s) and the
  /// front end per request (front_end_s). A flag that sets one says so instead.
  std::string host_source, front_end_source;
  /// Where eager_host_s comes from (a flag that sets it says so instead).
  std::string eager_host_source;
  /// Where compiled_host_s comes from.
  std::string compiled_host_source;
};

/// The engine's name in the validation table's classes (docs/serving.md#errors-by-class): its
/// family ("vllm", "sglang", ...), except the presets that are other engines than their family's
/// newest: vLLM's V0 engine ("vllm@0.6") and TensorRT-LLM's TensorRT engine flow ("trtllm@0.15").
std::string band_name(EngineRef e);

/// Whether `engine` runs on `chip` at all: TensorRT-LLM on NVIDIA GPUs only; the others, and
/// the static engine, anywhere (their kernels chosen by the chip's `arch`, hw::runs_deepgemm).
bool runs_on(EngineRef engine, const hw::ChipSpec& chip) noexcept;
/// Throws InputError, one line naming the engine and the chip, where `engine` does not run on it.
void check_runs_on(EngineRef engine, const hw::ChipSpec& chip);

/// The preset of `engine` for a chip at tensor parallelism `tp` (some defaults depend on them),
/// for any model: the figures its engine measured on every architecture. Throws InputError
/// where the engine does not run on the chip (runs_on).
EngineConfig engine_preset(EngineRef engine, const hw::ChipSpec& chip, std::int64_t tp = 1);
/// The same for model `m`, with the figures its engine measured on `m`'s architecture in place
/// of those: SGLang's (0.4+) host time per eager kernel of an MLA model, DeepSeek-V3's forward
/// (docs/serving.md#eager-host). What serves or plans a model takes this one.
EngineConfig engine_preset(EngineRef engine, const hw::ChipSpec& chip, std::int64_t tp, const model::ModelConfig& m);

/// Throws InputError naming the flag for knobs no engine could run with.
void validate(const EngineConfig& e);

/// Whether `e` runs prompts whole, each in one step of its token budget: prompts not chunked
/// under a mixed-step scheduler (TensorRT-LLM's preset; vLLM without chunked prefill).
/// SGLang's prefill-first steps hold a whole prompt of any length.
constexpr bool whole_prompts(const EngineConfig& e) noexcept {
  return !e.chunked_prefill && (e.policy == StepPolicy::running_first || e.policy == StepPolicy::generation_first);
}
/// Whether a request of `input` prompt and `output` generated tokens fits one step's budget
/// of `e` as it must when prompts run whole (TensorRT-LLM: the prompt; vLLM, which may preempt
/// it and then recomputes prompt and outputs in one step: both); always when they do not.
constexpr bool fits_budget(const EngineConfig& e, double input, double output) noexcept {
  const double whole = e.policy == StepPolicy::running_first ? input + output : input;
  return !whole_prompts(e) || whole <= static_cast<double>(e.max_batched_tokens);
}

/// How `e`'s attention data-parallel ranks pad their forwards to the busiest rank's
/// (docs/serving.md#rank-padding; ForwardConfig::rank_pad).
model::ForwardConfig::RankPad rank_padding(const EngineConfig& e) noexcept;
/// Whether `e` runs `ep` attention data-parallel ranks without CUDA graphs whatever it
/// captures: vLLM 0.8 (from PR #13931, March 2025, to PR #18724, May 2025: "Data Parallel:
/// Forcing enforce eager to be True since DP is currently not supported with CUDA Graphs",
/// vllm/platforms/cuda.py check_and_update_config).
bool ranks_run_eagerly(const EngineConfig& e, std::int64_t ep) noexcept;
/// Whether `e` replays a decode graph of attention data-parallel ranks only when every rank
/// holds the same batch, else runs every rank eagerly: TensorRT-LLM's PyTorch backend with
/// padding off, its default (maybe_get_cuda_graph: is_all_gen_only and all_batch_size_equal;
/// docs/serving.md#rank-padding).
bool graphs_need_equal_ranks(const EngineConfig& e) noexcept;
/// The forward pass `f` as the engine runs it: its own all-reduce and merged kernels.
model::ForwardConfig engine_forward(model::ForwardConfig f, const EngineConfig& e) noexcept;
/// TensorRT-LLM's MoE backend for a run's layout `f` of model `m` (EngineConfig::moe_backend):
/// the preset's, WIDEEP past an expert-parallel size of 8 (the deployment guide names it, without
/// EPLB, on the GB200 NVL72; taken for any such Blackwell fleet), and none where the weights are
/// asked in another dtype than the checkpoint's (another checkpoint, whose experts are not fp8
/// blocks). Empty: the engine's default.
std::string_view moe_backend(const EngineConfig& e, const model::ModelConfig& m, const model::ForwardConfig& f) noexcept;
/// The forward pass of a draft model's proposals: `f` (the target's, through engine_forward)
/// sampled greedily, whatever the clients ask: vLLM V1's drafters take the argmax of their
/// logits (vllm/v1/spec_decode/eagle.py). A target's verification at a temperature (vLLM's
/// RejectionSampler) is not modelled (docs/serving.md#sampling). A draft model (not `mtp`, the
/// target's own MTP layers) runs each all-reduce apart from its norm (docs/serving.md#allreduce-norm).
model::ForwardConfig draft_forward(model::ForwardConfig f, bool mtp) noexcept;
/// The capture list a batch pads to (docs/serving.md#graph-padding): with no list given, the
/// engine's own up to graph_max_batch where it pads (TensorRT-LLM's PyTorch backend with padding
/// on, vLLM V0 and V1 on GPUs, SGLang; none for eager decode, exact sizes or the TensorRT engine
/// flow); a list is cut to the engine's limits as the engine cuts it (TensorRT-LLM: its sequence
/// limit and token budget; vLLM: its token budget; SGLang 0.4+: its request pool, captured
/// itself; SGLang 0.3: none), graph_max_batch its largest. vLLM 0.11+ with `spec_tokens` draft
/// tokens a step rounds each size up to a multiple of 1 + spec_tokens within the largest (an
/// InputError where none is left, as vLLM refuses to start).
void pad_graphs(EngineConfig& e, int spec_tokens);
/// Whether the engine's graphs are captured and chosen by a step's tokens (vLLM: V1's
/// pad_for_cudagraph; V0's rows, a sequence's drafts expanded into rows of their own) rather
/// than by its sequences (SGLang, TensorRT-LLM: a batch size, each sequence's drafts inside its
/// graph under speculative decoding).
bool graphs_count_tokens(const EngineConfig& e) noexcept;
/// How a step of decode tokens only, `tokens` of `seqs` sequences, is launched: one graph up to
/// the captured size (in the count graphs_count_tokens names), else as a mixed step of its tokens.
GraphMode decode_step_graphs(const EngineConfig& e, double seqs, double tokens) noexcept;
/// How a step with prefill tokens, `tokens` of all kinds, is launched: as mixed_graphs, or
/// eagerly past graph_max_tokens.
GraphMode mixed_step_graphs(const EngineConfig& e, double tokens) noexcept;
/// vLLM V1's largest graph at its presets' limits, in tokens (max_cudagraph_capture_size's 512).
inline constexpr std::int64_t kVllmLargestGraph = 512;
/// vLLM V0's (0.6) last capture size, in sequences (_BATCH_SIZES_TO_CAPTURE's 8 x 1024).
inline constexpr std::int64_t kVllmV0LargestGraph = 8192;
/// The tokens of the busiest of `ranks` attention data-parallel ranks when a step's `tokens`
/// are spread evenly over them: each rank's forward, whose size chooses its launch.
inline double rank_tokens(double tokens, std::int64_t ranks) noexcept {
  return std::ceil(tokens / static_cast<double>(std::max<std::int64_t>(1, ranks)));
}
/// vLLM V1's default largest graph from its sequence limit, where the engine sizes it so
/// (capture_follows_seqs): min(2 x max_num_seqs x (1 + k), 512) tokens with k speculative tokens
/// a sequence (0.10-0.12: k left out), rounded down to vLLM's capture list and within the token
/// budget (docs/serving.md#step-model). Sets graph_max_batch and graph_max_tokens; at the
/// presets' limits (256 sequences or more) it stays 512. vLLM V0 (0.6): the sequence limit
/// padded to its capture list (1, 2, 4, then multiples of 8), at most 8192 sequences.
void capture_from_seqs(EngineConfig& e, int spec_tokens) noexcept;
/// SGLang's running-request limit under speculative decoding when none is given.
inline constexpr std::int64_t kSglangDraftRequests = 48;
/// Whether `engine` under `spec_tokens` drafts follows SGLang's speculative rules (0.4+: a
/// limit of kSglangDraftRequests unless given, no mixed chunks; settle_draft_limits).
constexpr bool sglang_draft_rules(EngineRef engine, int spec_tokens) noexcept {
  return engine.kind == EngineKind::sglang && !is_sglang_03(engine) && spec_tokens > 0;
}
/// The running-request limit `engine` runs with under `spec_tokens` drafts when `given` (0:
/// none given, the engine's own rule): SGLang's 48 under drafts, else `given`.
constexpr std::int64_t draft_request_limit(EngineRef engine, std::int64_t given, int spec_tokens) noexcept {
  return sglang_draft_rules(engine, spec_tokens) && given <= 0 ? kSglangDraftRequests : given;
}
/// SGLang (0.4+) under speculative decoding runs no mixed chunks, and with no running-request
/// limit given at most kSglangDraftRequests ("Max running requests is reset to 48 for
/// speculative decoding"; every algorithm's handler in
/// python/sglang/srt/arg_groups/speculative_hook.py; in server_args.py from PR #4908, March
/// 2025). `e` so, said in its sources (seqs_by_draft: the 48 is the rule's, not given); any
/// other engine or no drafts: unchanged. As often as called, the same.
void settle_draft_limits(EngineConfig& e, int spec_tokens);
/// The engine's graphs once every limit is set: the limits drafts impose (settle_draft_limits),
/// its largest graph from the sequence limit (capture_from_seqs), then the list a step pads to
/// within the limits (pad_graphs), in that order (the list is generated up to the largest graph).
void settle_graphs(EngineConfig& e, int spec_tokens);
/// One engine iteration from its device time: the host's time per step and per sequence
/// hidden behind the device (overlapped scheduling) or added to it, and the host time every
/// step shows. `after_idle`: the step starts an engine that was idle, whose host could not
/// plan it ahead: its host time adds to it even when overlapped. `scheduled`: the share of the
/// scheduler's host time this step pays (1; 0 inside a multi-step window; 1/n on average over
/// a window of n decode steps). Asynchronous output processing runs beside the device: the step
/// lasts at least that long. (Inline: a leap prices each of its steps with it.)
/// vLLM V0's processing of a step's outputs, `seqs` sequences of them (async_step_s +
/// async_per_request_s · seqs; 0 for an engine without it).
constexpr double output_processing_s(const EngineConfig& e, double seqs) noexcept {
  return e.async_step_s + e.async_per_request_s * seqs;
}
inline double step_period(const EngineConfig& e, double device_s, double seqs, bool after_idle = false, double scheduled = 1,
                          double launch_s = 0, double beside_s = -1) noexcept {
  const double host = (e.step_overhead_s + e.per_request_overhead_s * seqs) * scheduled;
  // Output processing beside the device (vLLM V0's async output processor): the host runs it
  // once it has launched the step's forward (`launch_s`: an eager step's kernels at the host's
  // pace, none for a graph), and the step lasts as long as the longer of that and the device.
  // It processes the last step's outputs: `beside_s` where the caller knows it (none after an
  // idle engine), else as many sequences' as this step's. With the processor off
  // (outputs_in_step) it processes the step's own after its device work, on the critical path.
  const double own = output_processing_s(e, seqs);
  const double beside = beside_s >= 0 && !e.outputs_in_step ? beside_s : own;
  const double device = e.outputs_in_step ? device_s + own : std::max(device_s, beside > 0 ? launch_s + beside : 0.0);
  return (e.overlap_scheduling && !after_idle ? std::max(device, host) : device + host) + e.exposed_step_s;
}
/// Whether each of `ranks` attention data-parallel ranks runs the configured sequence limit and
/// token budget as its own: vLLM V1 (each DP rank's EngineCore its own Scheduler) and
/// TensorRT-LLM (each rank's executor). SGLang's are the server's, divided over its ranks;
/// vLLM V0 has no attention data parallelism of its own (docs/serving.md#moe-layouts).
constexpr bool limits_per_rank(const EngineConfig& e, std::int64_t ranks) noexcept {
  return ranks > 1 && ((e.kind == EngineKind::vllm && !e.prefills_apart) || e.kind == EngineKind::trtllm);
}
/// SGLang divides the server's request limit and chunk budget over its `ranks` attention
/// data-parallel ranks (max_running_requests // dp_size, chunked_prefill_size // dp_size): a
/// limit below the ranks leaves a rank none, and it would never run a request. Throws
/// InputError naming the flag.
void validate_ranks(const EngineConfig& e, std::int64_t ranks);
/// Whether a step's outputs reach the client only during the next step (vLLM V0's asynchronous
/// output processor: LLMEngine._process_model_outputs passed to the model runner as its
/// async_callback, called once the next forward has been launched; vllm-project/vllm PR #7049):
/// an engine that processes outputs beside the device (async_step_s, async_per_request_s).
constexpr bool engine_outputs_next_step(const EngineConfig& e) noexcept {
  return (e.async_step_s > 0 || e.async_per_request_s > 0) && !e.outputs_in_step;
}
/// vLLM V0 turns its asynchronous output processor off under --enforce-eager ("async output
/// processor cannot be used") and speculative decoding (vllm/config.py
/// ModelConfig.verify_async_output_proc, v0.6.0): `e` as it runs without graphs or with a draft,
/// its outputs processed after each step (outputs_in_step, said in its host_source).
void settle_output_processing(EngineConfig& e, bool speculative);
/// Where that comes from, for a line of output.
inline constexpr const char* kOutputLagSource =
    "vLLM V0's asynchronous output processor: a step's outputs processed and sent once the next step is scheduled and launched "
    "(vllm/engine/async_llm_engine.py step_async, worker/model_runner.py async_callback, PR #7049; multi-step: a sequence's "
    "end during the window's next step, the others' tokens after the window, worker/multi_step_model_runner.py, v0.6.0)";
/// Where a request's time unread by the scheduler comes from (EngineConfig::recv_interval).
inline constexpr const char* kUnreadSource =
    "SGLang's --scheduler-recv-interval: the loop reads new requests once its last batches weigh the interval, a decode step 1, a "
    "step with prompt tokens 1000 (python/sglang/srt/managers/scheduler_recv_skipper.py, SchedulerRecvSkipper)";
/// The share of the scheduler's host time a decode step pays on average: 1 / scheduler_steps.
constexpr double decode_schedule_share(const EngineConfig& e) noexcept {
  return e.scheduler_steps > 1 ? 1.0 / static_cast<double>(e.scheduler_steps) : 1.0;
}

}  // namespace ridgeline::serving
