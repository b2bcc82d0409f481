#pragma once
/// Serving a model: prefill (TTFT), decode (TPOT at the start and end of generation),
/// end-to-end latency, throughput, memory and fit, the largest batch, the critical
/// batch, launch overhead and CUDA graphs, and seed 001's closed-form estimate
/// (docs/inference.md). Evaluation does not allocate.
#include <array>
#include <cstdint>

#include "ridgeline/analysis/op_lines.hpp"
#include "ridgeline/hw/chip.hpp"
#include "ridgeline/model/graph.hpp"
#include "ridgeline/model/model_config.hpp"
#include "ridgeline/model/speculation.hpp"
#include "ridgeline/model/transformer.hpp"
#include "ridgeline/ops/estimate.hpp"

namespace ridgeline::analysis {

struct InferenceConfig {
  model::ForwardConfig forward;
  std::int64_t batch = 1;    ///< sequences served together (static batching)
  std::int64_t prompt = 128; ///< prompt tokens per sequence
  std::int64_t gen = 128;    ///< generated tokens per sequence (the first comes from prefill)
  bool cuda_graphs = false;  ///< decode steps replayed as one graph: one launch per step
  /// Of the chip's memory, what the engine may use for weights, activations and the KV
  /// cache: vLLM's gpu_memory_utilization, 0.9 by default; the rest holds the CUDA context,
  /// NCCL's buffers and the allocator's slack.
  double memory_utilization = 0.9;
  /// Speculative decoding (k = 0: off): reported beside the plain decode (InferenceResult::spec).
  model::Speculation spec;
};

/// Decoding with speculation, beside the plain figures (docs/inference.md#speculative-decoding):
/// (gen - 1) / tokens_per_step verification steps of k + 1 tokens per sequence, each with the
/// draft's k one-token passes; the draft's prefill added to TTFT.
struct SpeculativeDecode {
  double tokens_per_step = 1;
  double steps = 0;                      ///< expected verification steps, (gen - 1) / tokens_per_step
  double verify_first_s = 0, verify_last_s = 0;  ///< the target's step at the first and last context
  double draft_first_s = 0, draft_last_s = 0;    ///< the draft's k passes there
  double draft_prefill_s = 0;
  double ttft_s = 0, tpot_s = 0, e2e_s = 0, output_tokens_per_s = 0;
  double speedup = 0;                    ///< plain TPOT over this TPOT
  bool break_even = false;               ///< some acceptance rate pays for the drafts
  double break_even_accept = 0;          ///< the rate at which this TPOT equals the plain one
  double draft_weights_bytes = 0, draft_kv_cache_bytes = 0;  ///< per chip, at prompt + gen tokens
  bool fits = false;                     ///< with the draft's weights and cache
};

/// One op of a graph with its estimate (one instance) and repeat count.
struct OpRow {
  int op = 0;  ///< index into the graph
  ops::Estimate e;
};

struct InferenceMemory {
  double weights_bytes = 0;
  double kv_cache_bytes = 0;      ///< at prompt + gen tokens
  double kv_bytes_per_token = 0;  ///< per token of one sequence, all layers, this chip
  double activations_bytes = 0;   ///< peak live activations of a prefill layer
  double total_bytes = 0;
  double capacity_bytes = 0;
  bool fits = false;
};

/// Seed 001: t_mem = memory / bandwidth, t_compute = 2·B·P / peak,
/// T_network = 4(N-1)·B·D·S·L / link bandwidth, for one decode step.
struct QuickEstimate {
  double t_memory_s = 0;
  double t_compute_s = 0;
  double t_network_s = 0;
  double t_lower_s = 0;  ///< max of the three
  double t_upper_s = 0;  ///< their sum
};

struct InferenceResult {
  PhaseTimes prefill;
  PhaseTimes decode_first;  ///< the first decode step (context prompt + 1)
  PhaseTimes decode_last;   ///< the last (context prompt + gen - 1)
  PhaseTimes decode_total;  ///< all gen - 1 decode steps, summed exactly
  double ttft_s = 0;        ///< realistic prefill
  double tpot_s = 0;        ///< realistic decode time per token, averaged over the generation
  double e2e_s = 0;         ///< ttft + all decode steps (realistic)
  double e2e_lower_s = 0, e2e_upper_s = 0;
  double throughput_tokens_per_s = 0;  ///< (prompt + gen)·batch / e2e
  double output_tokens_per_s = 0;      ///< gen·batch / e2e
  double chips = 1;
  /// Expert parallelism (ep_size() > 1 on a MoE): the busiest chip's routed pairs over the mean
  /// in the prefill pass and in a decode step, given or from the routing model (`routing_model`,
  /// model::routing_imbalance; `routing_measured`: with the model's measured skew); 0 without
  /// expert parallelism.
  double expert_imbalance_prefill = 0, expert_imbalance_decode = 0;
  bool routing_model = false, routing_measured = false;
  InferenceMemory memory;
  std::int64_t max_batch = 0;  ///< largest batch whose weights, KV cache and activations fit
  double params = 0, active_params = 0;
  double critical_batch = 0;   ///< decode batch at which the dense GEMMs turn compute-bound (0: never)
  double launch_overhead_s = 0;       ///< per kernel
  double decode_launch_s = 0;         ///< launch time of one decode step without CUDA graphs
  double cuda_graphs_gain_s = 0;      ///< realistic decode step time saved by CUDA graphs
  QuickEstimate quick;
  SpeculativeDecode spec;      ///< filled by infer_details when InferenceConfig::spec is on
  model::Graph prefill_graph, decode_graph;  ///< decode_graph at the last step
  std::array<OpRow, model::Graph::kMaxOps> prefill_ops{}, decode_ops{};  ///< filled by infer_details
  /// The prefill's and the last decode step's realistic times by kernel class
  /// (realistic_by_class of the rows above; filled by infer_details).
  std::array<double, hw::kKernelClassCount> prefill_by_class_s{}, decode_last_by_class_s{};
};

/// A serving plan's latencies and memory as functions of the batch B, for the plan search
/// (docs/search.md#serving-speed). With the model, chips, dtypes, prompt and generation
/// fixed, every count of every op is affine in B (tokens, sequences, KV positions all scale
/// with it; weights, launches and latency steps do not), except the weights a MoE layer
/// reads, which follow the experts touched (model::touched_experts). So each op's realistic
/// time parts are lines in B, fitted from graphs built at two batches; an evaluation at any
/// B costs a few multiply-adds per op instead of two graph builds. Better still, a sum over
/// ops of the max of each op's lines is a convex piecewise-linear function of B: its pieces
/// are found once, and an evaluation is one binary search and one multiply-add (MoE expert
/// GEMMs and decode attention, not piecewise linear in B, stay per op). The values equal
/// infer_core's to rounding (tests check 1e-12); the search re-evaluates the plans it returns
/// with infer_core, so what it reports is exact.
struct ServingCurve {
  /// One op's five realistic time parts (matrix, vector, memory, comm, launch, each over its
  /// efficiency) as a + b·B, plus the memory time per touched expert for MoE expert GEMMs.
  using Line = OpLine;
  /// One straight piece of an attention op's decode steps: its first and last step, and how many.
  struct Piece {
    Line first, last;
    double steps = 0;
  };
  /// Σ rep·max(lines) over a set of ops, as pieces a + s·B starting at x (ascending).
  using Envelope = analysis::Envelope;
  Envelope prefill_sum, fixed_sum;  ///< the prefill ops, and the decode ops that cost the same at every step
  std::array<Line, model::Graph::kMaxOps> prefill{}, fixed{};  ///< of those, the ones kept apart (MoE expert GEMMs, quantised GEMMs)
  std::array<Piece, 2 * model::Graph::kMaxAttention> attention{};  ///< decode attention, one or two pieces per op
  /// Collectives whose algorithm or protocol changes with the batch, folded into the
  /// envelopes as switch lines: how many.
  int prefill_switch_count = 0, fixed_switch_count = 0;
  int prefill_count = 0, fixed_count = 0, attention_count = 0;
  /// The decode's quantised GEMMs' tile work above 256 rows, by ⌈rows/128⌉ up to the largest
  /// batch that fits, kPadTable entries in all, line by line while they last
  /// (analysis::tabulated_work): fixed line i's entries start at
  /// fixed_pad_first[i], fixed_pad_count[i] of them (0: none; the rest are worked out).
  static constexpr int kPadTable = 1024;
  std::array<double, kPadTable> fixed_pad{};
  std::array<int, model::Graph::kMaxOps> fixed_pad_first{}, fixed_pad_count{};
  double prompt = 0, gen = 0, steps = 0;  ///< P, G, G - 1
  double ep = 1;
  double ep_size = 1;  ///< chips the experts are spread over (model::ForwardConfig::ep_size)
  bool moe = false;
  model::ForwardConfig::ExpertTiles expert_tiles;  ///< model::ForwardConfig::expert_tiles (the lines' row tiles, model::expert_row_tiles)
  model::ExpertReads expert_reads;  ///< the experts' weight reads (model::GraphOp::reread_tile: once per row tile; model::expert_weight_reads)
  double expert_imbalance = 1;  ///< the busiest chip's share F the lines are fitted at (the row tiles' tokens times it)
  bool cuda_graphs = false;
  double launch_s = 0;
  double memory0 = 0, memory1 = 0;  ///< bytes per chip: memory0 + memory1·B
  double capacity_bytes = 0;
  std::int64_t max_batch = 0;
  double chips = 1;
  const model::ModelConfig* model = nullptr;
  model::Graph prefill_graph, decode_graph;  ///< at the first of the two batches (for checks: dtypes the chip lacks)
  model::Graph scratch_prefill, scratch_decode;  ///< at the second
};

/// What the search needs at one batch (the InferenceResult fields of the same names).
struct ServingPoint {
  double ttft_s = 0, tpot_s = 0, e2e_s = 0, output_tokens_per_s = 0, memory_bytes = 0;
  bool fits = false;
};

/// Fits `curve` for `cfg` (its batch is ignored) from graphs at batches ep and 2·ep, built
/// into the curve. Assumes a validated plan; never allocates.
void prepare_serving_curve(const model::ModelConfig& m, const hw::System& sys, const InferenceConfig& cfg,
                           ServingCurve& curve) noexcept;
/// The plan of `curve` at `batch` sequences (a multiple of ep).
ServingPoint serving_at(const ServingCurve& curve, double batch) noexcept;

/// Bytes of weights the ops of `g` store on one chip.
double weight_bytes(const model::Graph& g) noexcept;
/// Bytes of weights the draft of `s` stores on one chip run as `f` (an MTP layer without the
/// embedding and head it shares with the target); `g` receives its graph.
double draft_weight_bytes(const model::Speculation& s, const hw::System& sys, const model::ForwardConfig& f, model::Graph& g) noexcept;
/// Peak live activations on one chip during one prefill layer of `seqs` sequences holding
/// `tokens` tokens in all (docs/inference.md#memory-and-fit).
double activation_bytes(const model::ModelConfig& m, const model::ForwardConfig& f, double seqs, double tokens) noexcept;

/// Validates the plan (InputError naming the flag) and evaluates it into `out`.
void infer(const model::ModelConfig& m, const hw::System& sys, const InferenceConfig& cfg, InferenceResult& out);

/// The evaluation path: prefill, decode, latencies, throughput, memory, max batch.
/// Assumes a validated plan; never allocates, never throws.
void infer_core(const model::ModelConfig& m, const hw::System& sys, const InferenceConfig& cfg, InferenceResult& out) noexcept;
/// What `infer` adds for the report: parameter counts, critical batch, CUDA-graph gain,
/// seed 001's quick estimate. Needs infer_core's result.
void infer_details(const model::ModelConfig& m, const hw::System& sys, const InferenceConfig& cfg, InferenceResult& out);

/// The realistic times of `g`'s ops (`rows`, one instance each, as infer_details prices them)
/// times their repeats, summed by the kernel class each op runs as (hw::KernelClass order):
/// where a phase's realistic time goes.
std::array<double, hw::kKernelClassCount> realistic_by_class(const model::Graph& g,
                                                             const std::array<OpRow, model::Graph::kMaxOps>& rows) noexcept;

/// Throws InputError naming the flag for impossible inputs.
void validate(const model::ModelConfig& m, const hw::System& sys, const InferenceConfig& cfg);

}  // namespace ridgeline::analysis
