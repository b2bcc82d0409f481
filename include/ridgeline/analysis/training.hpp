#pragma once
/// One training step: data, tensor, pipeline and expert parallelism, ZeRO/FSDP,
/// recomputation, memory per GPU, step time, MFU and HFU (docs/training.md).
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ridgeline/analysis/inference.hpp"
#include "ridgeline/analysis/overlap.hpp"
#include "ridgeline/comm/collective.hpp"
#include "ridgeline/hw/chip.hpp"
#include "ridgeline/model/graph.hpp"
#include "ridgeline/model/model_config.hpp"

namespace ridgeline::analysis {

/// What backward recomputes: nothing, the attention core and memory-bound ops (Megatron's
/// selective), every layer from its input (full), or the planner's choice per saved
/// activation under the plan's memory budget (auto; docs/training.md#recomputation).
enum class Recompute : std::uint8_t { none, selective, full, automatic };
std::string_view name(Recompute r) noexcept;

/// Whose defaults a step follows (docs/training.md#framework-presets): megatron —
/// Megatron-Core (NeMo): its DistributedDataParallel and distributed optimizer (gradient
/// buckets of max(40M, 1M x dp·cp) parameters, the fp32 gradient buffer zeroed every step) and
/// its fused SwiGLU (bias_swiglu_impl, whose backward takes 4.2 times its forward); fsdp2 —
/// PyTorch (DDP's 25 MB buckets, FSDP2's fully_shard per transformer block, gradients set to
/// None). Both run ZeRO-3 / FSDP a layer at a time with one layer gathered ahead. megatron_lm —
/// Megatron-LM before Megatron-Core: megatron's, with pipeline sends split over the TP ranks
/// without sequence parallelism (Narayanan et al. 2021, section 4.1).
enum class Framework : std::uint8_t {
  megatron,     ///< Megatron-Core (NeMo, Megatron-LM since 2023)
  fsdp2,        ///< PyTorch DDP / FSDP2
  megatron_lm,  ///< Megatron-LM before Megatron-Core (2021-2022): Megatron-Core's defaults, and pipeline sends split over TP
};
std::string_view name(Framework p) noexcept;

struct TrainConfig {
  std::int64_t gpus = 8;
  std::int64_t gpus_per_node = 0;  ///< 0: the chip file's chips_per_node
  std::int64_t tp = 1, pp = 1, cp = 1, ep = 1;
  double expert_imbalance = 1;  ///< model::ForwardConfig::expert_imbalance
  bool cp_ring = false;            ///< ring attention instead of Ulysses all-to-all
  std::int64_t dp = 0;             ///< 0: gpus / (tp·pp·cp)
  std::int64_t vpp = 1;            ///< virtual pipeline stages per GPU (interleaved 1F1B)
  bool uneven_stages = false;      ///< allow layers not divisible by pp·vpp: the slowest stage holds the ceiling (Llama 3 405B's 126 layers on 16 stages)
  int zero = 0;                    ///< ZeRO stage 0-3 (FSDP = 3)
  bool sequence_parallel = false;
  /// Data-parallel gradients reduced in buckets during the backward pass and parameters
  /// gathered during the forward (PyTorch DDP, Megatron's --overlap-grad-reduce and
  /// --overlap-param-gather, FSDP prefetching); false: after the backward, exposed whole
  /// (Megatron before them).
  bool dp_overlap = true;
  /// Tensor-parallel all-gathers and reduce-scatters pipelined with the GEMMs beside them
  /// (Transformer Engine's userbuffers, Megatron's --tp-comm-overlap; needs sequence
  /// parallelism): each layer hides as much of its TP communication as its GEMMs take.
  bool tp_overlap = false;
  Framework framework = Framework::megatron;
  /// ZeRO-3 / FSDP: layers whose parameters are gathered ahead of the one computing (FSDP2's
  /// implicit forward and explicit backward prefetch: 1); each holds its gathered bf16
  /// parameters, as does the one computing.
  int prefetch = 1;
  /// Of the communication a plan can hide behind compute (data-parallel reductions and
  /// gathers, tensor-parallel overlap), the fraction that does hide (1: all the compute and
  /// its link leave room for; 0: none). Prices plans more conservatively than the model's
  /// schedule (docs/training.md#interference).
  double overlap_efficiency = 1;
  std::int64_t seq = 2048;
  std::int64_t micro_batch = 1;    ///< sequences per micro-batch per replica
  std::int64_t global_batch = 0;   ///< sequences per step; 0: dp x micro_batch
  Recompute recompute = Recompute::none;
  DType dtype = DType::bf16;       ///< GEMM dtype (fp8: GEMMs at the fp8 peak)
  ops::AttentionImpl attention = ops::AttentionImpl::flash;
  DType grad_reduce_dtype = DType::fp32;  ///< gradients are accumulated and reduced in fp32 (Megatron's main_grad)
  bool dropout = false;            ///< dropout masks kept for backward (GPT-3-era runs)
  bool offload = false;            ///< with --recompute auto: activations may also go to host memory and back
  double memory_margin = 0.05;     ///< allocator fragmentation, as a fraction of the total
  double memory_headroom = 0;      ///< a fraction of the GPU's memory --recompute auto leaves free (the search's --memory-headroom)
  std::int64_t powersgd_rank = 0;  ///< PowerSGD gradient compression rank (0: off)
  std::optional<double> network_bandwidth_Bps;  ///< per GPU per direction between nodes (default: the chip file's network link)
};

struct TrainMemory {
  double params_bytes = 0;
  double grads_bytes = 0;
  double optimizer_bytes = 0;
  double activations_bytes = 0;
  /// ZeRO-3 / FSDP: the gathered bf16 parameters of the layer computing and the ones prefetched,
  /// and one layer's unsharded gradients waiting for their reduce-scatter.
  double buffers_bytes = 0;
  double margin_bytes = 0;
  double total_bytes = 0;
  double capacity_bytes = 0;
  bool fits = false;
  double activation_bytes_per_layer = 0;  ///< one micro-batch, one layer, this GPU
  double in_flight_micro_batches = 0;     ///< activations of how many micro-batches the first stage holds
};

/// Per-step times of one part of the step, seconds.
struct StepPart {
  double lower_s = 0, upper_s = 0, realistic_s = 0;
};
/// An op's time parts as (lower, upper, realistic) seconds.
inline StepPart part_of(const ops::TimeParts& p, const ops::Rates& r, hw::KernelClass k) noexcept {
  return {p.lower(), p.upper(r, k), p.realistic(r, k)};
}
/// a += k·b, each bound.
inline void add(StepPart& a, const StepPart& b, double k = 1) noexcept {
  a.lower_s += k * b.lower_s;
  a.upper_s += k * b.upper_s;
  a.realistic_s += k * b.realistic_s;
}

/// What becomes of one saved activation.
enum class TensorAction : std::uint8_t { keep, recompute, offload };
std::string_view name(TensorAction a) noexcept;

/// One activation a layer keeps for its backward, per micro-batch on one GPU, and what
/// rebuilding or moving it costs.
struct SavedTensor {
  const char* name = "";
  const char* producers = "";  ///< the forward ops that rebuild it
  int kind = 0;                ///< the kind of layer it belongs to (LayerTensors::kinds)
  double bytes = 0;
  StepPart recompute;          ///< forward time of its producers (lower, upper, realistic)
  double recompute_s = 0;      ///< = recompute.realistic_s
  double matrix_flops = 0;     ///< of its producers
  std::array<double, 6> kind_s{};  ///< lower-bound time of its producers by op class
  std::array<double, hw::kKernelClassCount> class_s{};  ///< realistic time of its producers by kernel class
  double comm_s = 0;           ///< lower-bound time of the collectives among them
  double offload_s = 0;        ///< bytes over the host link at its achievable rate, one way
  double offload_peak_s = 0;   ///< the same at the link's peak
  bool memory_bound = false;   ///< produced by memory-bound ops only
  bool has_comm = false;       ///< rebuilding it repeats a collective
};

/// One kind of layer: a run of identical layers of the graph (dense or MoE, full or
/// sliding-window attention).
struct LayerKind {
  const char* name = "";   ///< the graph group's name ("dense layers", "moe layers", ...)
  int group = -1;          ///< its group in the forward graph
  double layers = 0;       ///< layers of this kind in the model
  double share = 0;        ///< layers / all layers: its weight in per-layer averages
  int first = 0, count = 0;  ///< its tensors: LayerTensors::tensors[first, first + count)
  double saved_bytes = 0;  ///< all its tensors (nothing recomputed)
  double core_bytes = 0;   ///< the attention core inside attn_out (what selective recomputation drops)
  StepPart layer_forward, layer_backward;  ///< one layer, one micro-batch: the windows its offloads hide in
};

/// The activations each kind of layer keeps for backward (docs/training.md#activations): the
/// Korthikanti et al. accounting tensor by tensor, extended to MLA and MoE layers, with their
/// producers' times from the forward graph. Per-layer figures are averages over the kinds,
/// weighted by their layer counts.
struct LayerTensors {
  static constexpr int kMaxKinds = 4;    ///< dense or MoE, full or sliding-window attention
  static constexpr int kMaxPerKind = 20; ///< an MLA + MoE layer with shared experts saves 18
  static constexpr int kMax = kMaxKinds * kMaxPerKind;
  std::array<SavedTensor, kMax> tensors{};
  int count = 0;
  std::array<LayerKind, kMaxKinds> kinds{};
  int kind_count = 0;
  double layer_input_bytes = 0;  ///< always kept: the checkpoint every recomputation starts from
  double fixed_bytes = 0;        ///< kept whatever the plan (dropout masks)
  double saved_bytes = 0;        ///< every tensor kept, averaged over the kinds
  double core_bytes = 0;         ///< the attention cores among them, averaged
  StepPart layer_forward, layer_backward;  ///< averaged over the kinds
  double host_link_Bps = 0, host_link_peak_Bps = 0;
};

/// One choice for every saved activation of every kind of layer, and what it costs per layer
/// per micro-batch (averaged over the kinds).
struct RecomputeChoice {
  std::array<TensorAction, LayerTensors::kMax> action{};
  double kept_bytes = 0;       ///< the tensors kept (beyond the layer input and fixed bytes)
  StepPart added;              ///< backward time added: recomputed forwards + offload not hidden
  double recompute_s = 0;      ///< realistic
  double offload_exposed_s = 0;  ///< realistic
  double matrix_flops = 0;     ///< recomputed
  std::array<double, 6> kind_s{};  ///< recomputed, lower bound, by op class
  double comm_s = 0;           ///< recomputed collectives, lower bound
  int changes = 0;             ///< tensors not kept
};

/// The choices no other beats in both kept bytes and added time: kept bytes ascending,
/// added (realistic) time strictly descending.
struct RecomputeFrontier {
  std::vector<RecomputeChoice> plans;  ///< capacity kept across builds: no allocation once warm
  int count = 0;
  double combinations = 0;     ///< choices covered exactly: the product over kinds of 2^n (3^n with offload)
  std::int64_t priced = 0;     ///< partial choices the dynamic programme priced to cover them
  /// The fastest choice whose kept bytes fit `budget`; the smallest if none does.
  const RecomputeChoice& best_within(double budget) const noexcept;
};

using OpTimesArray = std::array<OpTimes, model::Graph::kMaxOps>;
/// The saved activations of every kind of layer of `g` (the forward graph train_shape
/// builds); with `timed`, the forward and backward times of their producers too. Never throws.
void layer_tensors(const model::ModelConfig& m, const TrainConfig& cfg, const model::Graph& g, const OpTimesArray& fwd,
                   const OpTimesArray& bwd, const ops::Rates& rates, const hw::ChipSpec& chip, bool timed,
                   LayerTensors& out) noexcept;
/// The cost of one choice.
RecomputeChoice evaluate_choice(const LayerTensors& t, const std::array<TensorAction, LayerTensors::kMax>& action) noexcept;
/// The exact front of every keep/recompute choice (with `offload`, keep/recompute/offload)
/// of every tensor: a dynamic programme over each kind's tensors that drops only dominated
/// partial choices, then the kinds' fronts combined by their layer counts
/// (docs/training.md#recomputation-planner). Allocates only to grow its per-thread scratch.
void build_frontier(const LayerTensors& t, bool offload, RecomputeFrontier& f) noexcept;

/// Sums over the forward graph of one micro-batch on one GPU (every layer, whole model:
/// not yet scaled to a pipeline stage). They depend only on the plan's *shape*: tp, cp and
/// its algorithm, ep, sequence parallelism, micro-batch, sequence, recomputation, dtype,
/// attention, dropout and PowerSGD rank; not on pp, vpp, dp, ZeRO or the global batch.
/// `train_core` is train_shape followed by train_step, and the plan search computes each
/// shape once and combines it with every pipeline/data-parallel split
/// (docs/search.md#speed).
struct TrainShape {
  ops::Rates rates;  ///< the system's chip, as train_step's collectives and optimizer need it
  comm::Wiring wiring;  ///< the system's links, as train_step's collectives are priced on them
  const LayerTensors* tensors = nullptr;       ///< with --recompute auto (in the scratch TrainResult)
  const RecomputeFrontier* frontier = nullptr; ///< with --recompute auto
  StepPart f_layers, b_layers, f_embed, b_embed, f_head, b_head;  ///< one micro-batch
  StepPart f_layers_tp, b_layers_tp, f_layers_gemm, b_layers_gemm;  ///< of the layers: TP gathers/scatters, GEMMs
  double fwd_matrix_flops = 0, hw_matrix_flops = 0;
  /// Forward attention FLOPs were every (query, key) pair computed (no causal mask, no
  /// window) less those computed: what PaLM's and Megatron-LM's FLOP formulas add.
  double fwd_masked_attention_flops = 0;
  double fp8_cast_bytes = 0;                                  ///< per micro-batch, every layer
  double matrix_weights_layers = 0, matrix_weights_other = 0;  ///< GEMM weight elements on this GPU
  double compressed_layers = 0, compressed_other = 0;          ///< PowerSGD factor elements
  double powersgd_flops_layers = 0, powersgd_flops_other = 0;
  /// Lower-bound forward + backward by op class, per micro-batch: of the layers, of the
  /// embedding (first stage) and of the head (last stage), as f_embed/b_embed and f_head/b_head
  /// split them.
  std::array<double, 6> kind_layers_s{}, kind_embed_s{}, kind_head_s{};
  std::array<double, 6> fwd_kind_layers_s{}, fwd_kind_embed_s{}, fwd_kind_head_s{};  ///< the forward part of those
  /// Realistic forward + backward (a recomputed forward included) by the kernel class each
  /// kernel runs as, per micro-batch, before any overlap with communication (train's split),
  /// split the same way.
  std::array<double, hw::kKernelClassCount> class_layers_s{}, class_embed_s{}, class_head_s{};
  double tp_comm_layers_s = 0, tp_comm_other_s = 0;            ///< lower bound, per micro-batch
  /// What a collective beside one micro-batch's forward and backward sees of it (realistic; the
  /// layers' all layers, not yet scaled to a stage; the rest the embedding and head).
  ComputeWindow f_window_layers, b_window_layers, f_window_other, b_window_other;
  /// --tp-overlap: the layers' TP communication hidden behind their GEMMs and what that cost
  /// them, per micro-batch (realistic, every layer).
  OverlapCost tp_overlap;
  /// The gradient norm's all-reduce of one fp32 over every GPU, once per step (the same for every plan).
  StepPart grad_norm_allreduce;
  /// How much longer the slowest of the plan's GPUs takes on compute-bound kernels than the
  /// typical one (straggler_slowdown of all the GPUs: the same for every plan).
  double straggler_slowdown = 0;
  /// train_step's data-parallel collectives already priced for plans of this shape: the same
  /// collective of the same bytes over a group placed alike prices the same, and the plans
  /// under a shape (their ZeRO stages and interleavings) repeat them.
  struct PricedCollective {
    int kind = -1;
    double bytes = 0, size = 0, per_domain = 0;
    std::array<int, 3> extent{};
    std::array<bool, 3> wrap{};
    StepPart t;
    OverlapComm beside;
  };
  mutable std::array<PricedCollective, 8> priced{};
  mutable int priced_next = 0;
  double params_layers = 0, params_embed = 0, params_head = 0;  ///< on this GPU (tp-split), all layers
  /// Of params_layers, the experts' (ep-split): replicated over dp/ep ranks only, so ZeRO
  /// shards them and their gradients are reduced over the expert-data-parallel group.
  double expert_params_layers = 0;
};

/// The step's numbers: everything `train --json` reports (TrainResult adds the graph).
struct TrainStep {
  double step_time_s = 0;        ///< realistic
  double step_time_lower_s = 0;
  double step_time_upper_s = 0;
  double tokens_per_s = 0;
  double tokens_per_step = 0;          ///< global batch x sequence
  double model_flops_per_step = 0;     ///< 3 x forward FLOPs of the matrix unit, no recomputation
  /// The same with attention over all s² pairs (PaLM's 6N + 12LHQT, Megatron-LM's formula).
  double model_flops_full_attention_per_step = 0;
  double mfu_full_attention = 0;       ///< model_flops_full_attention_per_step / (step time x GPUs x peak)
  double hardware_flops_per_step = 0;  ///< what runs, recomputation and flash backward included
  double mfu = 0;                      ///< model FLOPs / (step time x GPUs x dense peak)
  double hfu = 0;
  std::int64_t dp = 1;
  std::int64_t micro_batches = 1;      ///< per replica per step
  StepPart forward;                    ///< one micro-batch, slowest stage (TP communication included)
  bool slowest_holds_head = false;     ///< the slowest stage is the last (its head outlasts the embedding), pp > 1
  StepPart backward;                   ///< one micro-batch, with recomputation
  StepPart pipeline;                   ///< all micro-batches through the pipeline, bubble included
  StepPart bubble;
  StepPart p2p;                        ///< pipeline sends per micro-batch (exposed)
  StepPart dp_comm;                    ///< gradient reduction (+ parameter gathers) per step, whole
  StepPart exposed_dp_comm;            ///< the part not hidden behind backward / forward
  StepPart optimizer;
  double tp_comm_s = 0;                ///< tensor-parallel communication per step (lower bound; on the critical path)
  double grad_bytes = 0;               ///< gradient bytes this GPU reduces per step (after compression)
  double grad_bytes_uncompressed = 0;
  StepPart compression;                ///< PowerSGD's extra GEMMs and error feedback per step
  double fp8_cast_bytes = 0;           ///< per micro-batch: bf16 -> fp8 casts of GEMM inputs and weights
  double exposed_comm_s = 0;           ///< realistic: TP + PP + exposed DP communication
  /// Realistic, per step: communication hidden behind compute (data-parallel, tensor-parallel
  /// overlap), and what hiding it costs the compute (in the step time; docs/training.md#interference).
  double hidden_comm_s = 0;
  double interference_s = 0;
  /// Realistic, per step: what waiting for the slowest of the GPUs adds to the slowest stage's
  /// compute-bound kernels, bubble included (docs/training.md#the-slowest-gpu; in the step time).
  double straggler_s = 0;
  double overlap_efficiency = 1;       ///< the fraction of hideable communication assumed hidden (TrainConfig)
  /// Optimizer-step kernels besides Adam: the gradient norm (read every gradient this GPU
  /// updates) and its all-reduce, and zeroing the gradient buffer (Megatron), per step.
  StepPart grad_norm;
  std::array<double, 6> time_by_kind_s{};  ///< compute kernels per step by op class (lower)
  std::array<double, 6> forward_time_by_kind_s{};   ///< the forward part of time_by_kind_s
  std::array<double, 6> backward_time_by_kind_s{};  ///< the backward part (recomputed forwards included)
  double params_per_gpu = 0;           ///< parameters the first stage's GPU holds (sharded under ZeRO-3), as memory.params_bytes counts them
  double params_computed_per_gpu = 0;  ///< parameters the slowest stage's GPU computes with (gathered under ZeRO-3)
  TrainMemory memory;
  RecomputeChoice recompute_choice;    ///< --recompute auto: the planner's choice for this plan's budget
  double activation_budget_bytes = 0;  ///< --recompute auto: what a layer's kept tensors may take, per micro-batch
};

struct TrainResult : TrainStep {
  model::Graph graph;                  ///< forward of one micro-batch on one GPU, every layer
  /// Realistic compute per step on the slowest stage by the kernel class each kernel runs as:
  /// every op's forward and backward kernels, recomputed forwards (--recompute auto's choice's
  /// too) and fp8 casts (pointwise), before any overlap with communication; filled by `train`
  /// (train_core's `split`, kernel_class_split), not by the plan search.
  std::array<double, hw::kKernelClassCount> time_by_kernel_class_s{};
  std::array<OpTimes, model::Graph::kMaxOps> fwd{}, bwd{};
  LayerTensors tensors;                ///< --recompute auto
  RecomputeFrontier frontier;          ///< --recompute auto
};

/// Why a plan was not feasible. Order is the order the rules are checked in.
enum class Reject : std::uint8_t {
  tp_across_nodes,  ///< tensor parallelism wider than a node (--tp-across-nodes allows it)
  tp_model,         ///< tp does not divide the heads, KV heads or MLP width
  cp_model,         ///< --seq not divisible by cp, Ulysses heads, MLA
  ep_model,         ///< ep does not divide the experts or the data-parallel degree
  stages,           ///< layers do not split into pp x vpp stages
  global_batch,     ///< global batch not a multiple of dp x micro-batch
  interleave,       ///< interleaving needs the micro-batches to be a multiple of pp
  sequence_parallel,  ///< --seq not divisible by tp
  dtype,            ///< the chip has no matrix rate (or no memory) for the plan's dtype
  too_long,         ///< serving: a prompt longer than the token budget of an engine that does not chunk prefills
  memory,           ///< does not fit (with the headroom)
  ttft,             ///< serving: time to first token above --ttft-max
  tpot,             ///< serving: time per output token above --tpot-max
  count
};
std::string_view name(Reject r) noexcept;
constexpr int kRejectCount = static_cast<int>(Reject::count);

/// The first rule a plan breaks, Reject::count if none: the layout (model::check), the
/// sequence, ep within dp, stages, global batch, interleaving, sequence parallelism.
/// validate without ranges, chip checks or messages; never throws.
Reject plan_fault(const model::ModelConfig& m, const TrainConfig& cfg) noexcept;

/// Throws InputError naming the flag and the numbers for a plan that cannot run.
void validate(const model::ModelConfig& m, const hw::System& sys, const TrainConfig& cfg);

/// Validates and evaluates one training step, its compute split by kernel class too
/// (TrainResult::time_by_kernel_class_s).
void train(const model::ModelConfig& m, const hw::System& sys, const TrainConfig& cfg, TrainResult& out);

/// The system a plan runs on: --gpus-per-node and the network bandwidth override applied.
hw::System training_system(const hw::System& sys, const TrainConfig& cfg);

/// The evaluation path on a prepared system (training_system) and a validated plan:
/// never allocates, never throws.
/// With `split`, TrainResult::time_by_kernel_class_s too (kernel_class_split: `train` asks for it, the
/// benchmarks and the plan search do not).
void train_core(const model::ModelConfig& m, const hw::System& sys, const TrainConfig& cfg, TrainResult& out,
                bool split = false) noexcept;

/// The shape part of train_core: builds the forward graph into `out.graph` (scratch) and
/// sums it. Never allocates, never throws.
void train_shape(const model::ModelConfig& m, const hw::System& sys, const TrainConfig& cfg, TrainResult& scratch,
                 TrainShape& shape) noexcept;

/// TrainResult::time_by_kernel_class_s of a plan train_step evaluated from `shape`: the
/// shape's split scaled to the slowest stage's layers and the micro-batches, with the
/// recomputation --recompute auto chose. Never allocates, never throws.
void kernel_class_split(const model::ModelConfig& m, const TrainConfig& cfg, const TrainShape& shape, TrainResult& out) noexcept;

/// The plan part of train_core: pipeline, data parallelism, optimizer, memory, MFU from a
/// shape computed for the same shape fields of `cfg`. Never allocates, never throws.
void train_step(const model::ModelConfig& m, const hw::System& sys, const TrainConfig& cfg, const TrainShape& shape,
                TrainStep& out) noexcept;

/// Activation bytes one layer keeps for backward, per micro-batch on one GPU (the
/// Korthikanti et al. accounting generalised to GQA and gated MLPs).
double layer_activation_bytes(const model::ModelConfig& m, const TrainConfig& cfg) noexcept;

}  // namespace ridgeline::analysis
