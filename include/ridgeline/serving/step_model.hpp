#pragma once
/// The engine step model: the time of one iteration of a continuous-batching engine whose
/// batch mixes decode sequences (each with its own context) and prefill chunks (each with
/// the context already cached), from the same op graph, costs and efficiencies as `infer`
/// (docs/serving.md#step-model). Prepared once per (model, chip, plan); an evaluation is a
/// few binary searches and multiply-adds over the batch's sums (model::StepMix), exact
/// against building the step's graph op by op, and never allocates.
#include <array>
#include <cstdint>
#include <vector>

#include "ridgeline/analysis/op_lines.hpp"
#include "ridgeline/hw/chip.hpp"
#include "ridgeline/model/graph.hpp"
#include "ridgeline/model/model_config.hpp"
#include "ridgeline/model/routing.hpp"
#include "ridgeline/model/transformer.hpp"

namespace ridgeline::serving {

/// How a step's kernels are launched.
enum class GraphMode : std::uint8_t {
  eager,     ///< every kernel launched by the host: each takes at least the launch overhead
  graph,     ///< the step replayed as one captured graph: one launch for the step
  piecewise  ///< captured pieces between eagerly launched attention kernels (vLLM's piecewise CUDA graphs)
};
std::string_view name(GraphMode g) noexcept;

/// Kernels a step launches outside a graph (docs/serving.md#eager-host): attention's, launched
/// by the engine's Python (between a compiled model's pieces), with the projections MLA's
/// attention op holds; the op's own kernels where it has a time of its own
/// (model::ForwardConfig::mla_op_host_s: the attention kernels of MLA's op among them); and the others.
struct HostLaunches {
  double attention = 0, other = 0, mla_op = 0;
  double mla_op_calls = 0;  ///< calls of MLA's attention op (one a layer), each at f.mla_op_call_host_s
};
/// Their time on the host, the step's least time: attention's kernels at `f.eager_host_s`, MLA's
/// op's own at `f.mla_op_host_s` (else eager_host_s) and its calls at `f.mla_op_call_host_s`, the
/// others at `f.compiled_host_s` where it is set (else eager_host_s).
double host_launch_s(const HostLaunches& n, const model::ForwardConfig& f) noexcept;
/// The rows a decode step of `mix` launched as `mode` computes its kernels but attention on: its
/// sequences, or the captured size its graph pads them to (ForwardConfig::graph_pad_sizes; one
/// group of decode sequences only; docs/serving.md#graph-padding).
double padded_sequences(const model::ForwardConfig& f, const model::StepMix& mix, GraphMode mode) noexcept;

/// Most captured batch sizes --graph-sizes takes.
inline constexpr int kMaxGraphSizes = 512;

/// How an engine's padding rows are counted and routed (from a model::ForwardConfig): the sizes
/// count a step's tokens, not its sequences (graph_pad_tokens); the padding repeats one request
/// (graph_pad_repeats); the padding reaches no expert (graph_pad_masked).
struct PadRule {
  bool tokens = false, repeats = false, masked = false;
};

class StepModel {
 public:
  /// Fits the model for `m` on `sys` run as `f` (tp, ep, dtypes). Assumes a validated plan
  /// (model::validate, cp = 1, flash attention); never allocates.
  void prepare(const model::ModelConfig& m, const hw::System& sys, const model::ForwardConfig& f) noexcept;

  /// Realistic time of one step, seconds: every kernel at its efficiency-scaled max, one
  /// after another (docs/cost-model.md#estimate). `mix` must hold at least one sequence.
  /// Under attention data parallelism (ep > 1 groups) the groups are taken as equally loaded:
  /// each holds 1/ep of the mix.
  double time(const model::StepMix& mix, GraphMode mode) const noexcept {
    return with_attention(base(mix, mode), mix, mode);
  }

  /// The step of attention data-parallel groups (ForwardConfig::ep > 1) that each schedule
  /// their own requests (docs/serving.md#moe-layouts): `group` is one group's own
  /// sequences, `mix` all groups' together. Every op but the expert part of the
  /// MoE layers runs on the group's own tokens, sequences and attention; the expert part
  /// (dispatch, expert GEMMs, combine) on the tokens of all groups, 1/ep of them per group.
  /// time(group_share(mix), mix, mode) is time(mix, mode). Where the ranks pad to their
  /// busiest (ForwardConfig::rank_pad, docs/serving.md#rank-padding), `group` is taken for the
  /// busiest: every rank padded to its target, the expert part over all of them.
  double time(const model::StepMix& group, const model::StepMix& mix, GraphMode mode) const noexcept {
    return with_group_attention(base(group, mix, mode), group, mode);
  }
  /// The slowest of the groups `groups[0..n)` (each its own sequences; `mix` all of them
  /// together): the groups step together, each its own part and the expert part over all
  /// groups' tokens, the same for each (priced once). Groups without a sequence (running a
  /// dummy pass) are skipped; max over the groups of time(groups[i], mix, mode), each group's
  /// own part, where the ranks pad, on its rows padded to the busiest group's target.
  /// `memo` (optional, the caller's): own parts of groups of decode sequences only, by their
  /// decode tokens (its vectors sized by the caller, filled with -1), eager [0], graph [1] or
  /// piecewise [2] (the graph's where no op runs in the engine's attention op).
  struct RankMemo {
    std::array<std::vector<double>, 3> own;
  };
  double slowest(const model::StepMix* groups, std::size_t n, const model::StepMix& mix, GraphMode mode,
                 RankMemo* memo = nullptr) const noexcept;
  /// 1/ep of `mix`: one group's share when the groups are equally loaded.
  model::StepMix group_share(const model::StepMix& mix) const noexcept;

  /// time() in two parts, for callers that price many steps with the same tokens and
  /// sequences (a run of decode steps whose contexts grow): `base` is the sum over the
  /// non-attention kernels, which reads only the mix's token, sequence and position totals
  /// (not its attention counts); `with_attention` adds the attention kernels to it.
  /// with_attention(base(mix, mode), mix, mode) is time(mix, mode), bit for bit.
  double base(const model::StepMix& mix, GraphMode mode) const noexcept {
    return ep_ == 1 ? base(mix, mix, mode) : base(group_share(mix), mix, mode);
  }
  double with_attention(double base, const model::StepMix& mix, GraphMode mode) const noexcept {
    // (Not `ep_ == 1 ? mix : group_share(mix)`: that copies the mix on every call.)
    if (ep_ == 1) return with_group_attention(base, mix, mode);
    return with_group_attention(base, group_share(mix), mode);
  }

  /// The expert-parallel load imbalance the steps are priced with (model::routing_imbalance).
  const model::RoutingImbalance& routing() const noexcept { return routing_; }

  /// Host launch overhead of one kernel on the chip, seconds.
  double launch_s() const noexcept { return launch_s_; }
  /// Kernels the host launches itself in a step of `mix` run as `mode`: every kernel of an
  /// eager step, the attention kernels (with whatever the engine's attention op holds:
  /// model::GraphOp::attention_op) between a piecewise step's captured pieces, none of a graph
  /// (whose replay is one launch). Times the host's time per kernel, the step's least time
  /// (eager_host_s; docs/serving.md#eager-host).
  double eager_kernels(const model::StepMix& mix, GraphMode mode) const noexcept;
  /// Those kernels' time on the host: attention's and the projections MLA's op holds at
  /// model::ForwardConfig::eager_host_s, MLA's op's own at mla_op_host_s and its calls at
  /// mla_op_call_host_s, the others at compiled_host_s where the model is compiled (else
  /// eager_host_s too).
  double eager_host_s(const model::StepMix& mix, GraphMode mode) const noexcept;

 private:
  static constexpr int kMaxAttention = model::Graph::kMaxAttention;
  static constexpr int kPadRows = 128;  // tabulated tile work up to 130·128 = 16640 rows
  // Quantities the non-attention ops are linear in: model::Scale's tokens, seqs,
  // prefill_positions, decode_tokens and prefill_tokens of one group, the tokens of all groups at
  // the busiest chip's share (kAllGroups), and every group's rows (kGathered) and sequences
  // (kGatheredSeqs) gathered (model::GraphOp::gathered).
  static constexpr int kQuantities = 8, kAllGroups = 5, kGathered = 6, kGatheredSeqs = 7;
  // The fields of ops::AttentionCounts.
  static constexpr int kAttentionCounts = 8;
  // Attention kernel `slot`: realistic parts (matrix, vector, memory, comm over their
  // efficiencies) per unit of each count of one group's sequences (AttentionCounts order), and
  // the kernel's fixed parts, run as a kernel of the attention class ([0]: a prefill's, or a
  // fused kernel holding one) and of the decode-attention class ([1]: a decode's counts only).
  struct AttentionLine {
    /// As an attention-class kernel: per part (matrix, vector, memory, comm and the overlap
    /// share), per count, the part less the fixed time.
    std::array<std::array<double, kAttentionCounts>, 5> per_count{};
    /// As a decode-attention kernel: per count of a decode (seqs to positions: a decode has no
    /// tiles), per part, the same, the parts padded to 6 with zeros (summed two at a time).
    std::array<std::array<double, 6>, 6> decode_w{};
    bool naive = false;     // scores and positions count (flash kernels cost neither)
    std::array<double, 2> overhead_s{};  // the class's fixed time times the kernels
    double launch_s = 0;    // launched eagerly
    double kernels = 1;     // launches of one (naive attention's several)
    double rep = 1;
    bool decode = false;    // decode tokens' kernel (else prefill chunks')
    bool window = false;    // on sliding-window layers
    bool own_op = false;    // MLA's attention op's own kernel (model::GraphOp::InAttentionOp::own)
  };
  struct Variant {  // the non-attention ops, launched eagerly or inside a graph
    analysis::Envelope tokens, seqs, prefill_positions, decode_tokens, prefill_tokens, all_tokens, gathered_tokens, gathered_seqs;
    // Ops kept out of the envelopes (OpLine::apart): MoE expert GEMMs (tokens, touched
    // experts) and quantised GEMMs, each with its quantity (tokens, seqs, prefill_positions,
    // decode_tokens, prefill_tokens, all groups' tokens at the busiest chip's share, all
    // groups' rows gathered, all groups' sequences gathered: kQuantities).
    std::array<analysis::OpLine, model::Graph::kMaxOps> apart{};
    std::array<std::uint8_t, model::Graph::kMaxOps> apart_quantity{};
    int apart_count = 0;
    // The quantised GEMMs' tile work (ops::GemmPadding::work) above 256 rows, by ⌈rows/128⌉
    // from 3 to kPadRows + 2: kPadRows per apart line.
    std::vector<double> pad_work;

  };
  // `as_decode`: priced as a decode-attention kernel (the decode tokens' kernel, or a fused
  // kernel holding no prefill chunk).
  static double attention_time(const AttentionLine& l, const ops::AttentionCounts& n, bool eager) noexcept;
  // The same kernel run as a decode-attention kernel over a decode's counts (no tiles): the
  // decode tokens' kernel, or a fused kernel holding no prefill chunk.
  static double decode_attention_time(const AttentionLine& l, const ops::AttentionCounts& n, bool eager) noexcept;
  // base and with_attention of one group's sequences (`group`) among all groups' (`mix`).
  double base(const model::StepMix& group, const model::StepMix& mix, GraphMode mode) const noexcept;
  // The expert part of base (the ops on all groups' tokens: kAllGroups), its quantity and the
  // experts the step touches; the rest of base, one group's own part, given it.
  struct Expert {
    double s = 0, all = 0, touched = 0;
    double row_tiles = 1;  // model::expert_row_tiles at the step's tokens (1: no line has row tiles)
  };
  Expert expert(const model::StepMix& mix, GraphMode mode) const noexcept;
  double own_part(const model::StepMix& group, double all, double touched, GraphMode mode) const noexcept;
  // Apart line i of v at quantity x, its experts' rows in whole tiles computing `row_tiles` rows a routed row.
  double apart_at(const Variant& v, int i, double x, double touched, double row_tiles = 1) const noexcept;
  double with_group_attention(double base, const model::StepMix& group, GraphMode mode) const noexcept;

  Variant eager_, graph_, piecewise_;  // piecewise_: only where has_op_ (else graph_'s)
  bool has_op_ = false;                // some op inside the engine's attention op (GraphOp::attention_op)
  // The variant that prices a step launched as `mode` (0 eager, 1 graph, 2 piecewise where an op
  // runs in the engine's attention op, else the graph's): also its RankMemo slot.
  std::size_t variant_slot(GraphMode mode) const noexcept {
    return mode == GraphMode::eager ? 0 : mode == GraphMode::piecewise && has_op_ ? 2 : 1;
  }
  const Variant& variant(GraphMode mode) const noexcept {
    const std::size_t slot = variant_slot(mode);
    return slot == 0 ? eager_ : slot == 2 ? piecewise_ : graph_;
  }
  std::array<AttentionLine, kMaxAttention> attention_{};
  int attention_count_ = 0;
  const model::ModelConfig* model_ = nullptr;
  double ep_ = 1;       // attention data-parallel groups (ForwardConfig::ep)
  double ep_size_ = 1;  // chips the experts are spread over (ForwardConfig::ep_size)
  // The busiest chip's routed pairs over the mean: given (the fits hold it, as a constant), or
  // the routing model, a function of the step's tokens applied to all groups' tokens in base.
  model::RoutingImbalance routing_;
  double launch_s_ = 0;
  // The captured decode batch sizes a graph step pads to (ForwardConfig::graph_pad_sizes),
  // ascending (filled by prepare, off the step path); empty: none.
  std::vector<double> pad_sizes_;
  PadRule pad_;  // how the padding rows count and route
  model::ForwardConfig::RankPad rank_pad_ = model::ForwardConfig::RankPad::none;  // ForwardConfig::rank_pad
  // The mix a graph step computes its non-attention kernels on: its sequences (vLLM V1: its
  // tokens) padded to the next captured size, its attention counts its own; false where nothing
  // pads (pad_rows in step_model.cpp).
  bool padded(const model::StepMix& mix, GraphMode mode, model::StepMix& out) const noexcept;
  // The rows every attention data-parallel rank of a step `mix` pads to when its busiest holds
  // `busiest` (ForwardConfig::rank_pad, docs/serving.md#rank-padding); 0: none.
  double rank_target(double busiest, const model::StepMix& mix, GraphMode mode) const noexcept;
  // The eager variant's kernel launches by quantity (kQuantities: present in every step, with
  // prefill positions, with decode tokens, with prefill tokens, the expert part), attention kernels not counted.
  std::array<double, kQuantities> launches_{};
  /// Launches the eager variant adds past an x of an op's scale: an engine's all-reduce with the
  /// norm in its kernel below its limit (model::CollectiveOp::fused_norm) runs the norm as a
  /// kernel of its own after NCCL's past it (analysis::fit_norm_switch).
  struct LaunchStep {
    model::Scale scale = model::Scale::tokens;
    bool prefill = false;  // its quantity is present only with prefill tokens (as launches_'s)
    double at = 0, rep = 0;
  };
  static constexpr int kMaxLaunchSteps = 16;
  std::array<LaunchStep, kMaxLaunchSteps> launch_steps_{};
  int launch_step_count_ = 0;
  /// The kernels of the ops inside MLA's attention op (model::GraphOp::attention_op: [0] its own,
  /// [1] the projections it holds), by quantity, launched from Python in every step but a whole
  /// graph; not in launches_.
  std::array<std::array<double, kQuantities>, 2> op_launches_{};
  /// Calls of that op a step outside a whole graph: its layers (op_calls).
  double op_calls_ = 0;
  model::ForwardConfig host_;  // the plan's eager_host_s and compiled_host_s (host_launch_s)
  bool host_priced_ = false;   // a launch of some kind costs host time: the step's host floor applies
  HostLaunches eager_launches(const model::StepMix& mix, GraphMode mode) const noexcept;
  bool moe_ = false;
  bool mla_ = false;
  bool own_touched_ = false;  // an op of a group's own part reads the touched experts (no RankMemo)
  bool row_tiles_ = false;    // an expert line runs its rows in whole tiles (model::expert_row_tiles)
  model::ForwardConfig::ExpertTiles expert_tiles_;  // model::ForwardConfig::expert_tiles
  model::ExpertReads reads_;  // the experts' weight reads a step (GraphOp::reread_tile: once per row tile)
  // model::touched_experts at 0, 1, 2 ... tokens for experts spread over chips (ep_size > 1),
  // to the first count at which the busiest chip reads all of its experts (then every larger
  // count does: touched_all_) or kTouchedTable: the busiest chip's expectation is a sum over
  // its experts, priced once here instead of at every step.
  static constexpr int kTouchedTable = 4096;
  std::vector<double> touched_;
  bool touched_all_ = false;
  double touched_at(double tokens) const noexcept;
  model::Graph g1_, g2_;  // scratch for prepare
};

/// StepModel::time remembering non-attention parts already priced: the last step's, and
/// each decode-only step's by its token count (a decode-only step's non-attention kernels
/// read nothing else), so that a step whose tokens and sequences were seen before prices
/// only its attention. Bit for bit time()'s result. One per step model and kind of step
/// priced; `decode_tokens_max`: the largest decode-only step kept by token count (the
/// table is allocated once, here).
class StepTimeMemo {
 public:
  StepTimeMemo() = default;  // the last step only (never allocates)
  explicit StepTimeMemo(std::size_t decode_tokens_max) : decode_(decode_tokens_max + 1) {}
  double time(const StepModel& s, const model::StepMix& mix, GraphMode mode) { return s.with_attention(base(s, mix, mode), mix, mode); }
  /// StepModel::base of the mix, memoised: the same for steps that differ only in their
  /// attention counts (a leap's steps price it once).
  double base(const StepModel& s, const model::StepMix& mix, GraphMode mode) {
    if (mix.prefill_seqs == 0 && mix.prefill_tokens == 0 && mix.prefill_positions == 0 && mix.decode_seqs > 0 &&
        mix.decode_tokens < static_cast<double>(decode_.size())) {
      const auto n = static_cast<std::size_t>(mix.decode_tokens);
      if (static_cast<double>(n) == mix.decode_tokens) {
        Entry& e = decode_[n];
        if (!e.set || e.mode != mode) e = {s.base(mix, mode), mode, true};
        return e.base;
      }
    }
    if (mode != mode_ || mix.decode_tokens != decode_tokens_ || mix.prefill_tokens != prefill_tokens_ ||
        mix.prefill_seqs != prefill_seqs_ || mix.prefill_positions != prefill_positions_ || (mix.decode_seqs > 0) != decoding_) {
      mode_ = mode;
      decode_tokens_ = mix.decode_tokens, prefill_tokens_ = mix.prefill_tokens, prefill_seqs_ = mix.prefill_seqs;
      prefill_positions_ = mix.prefill_positions, decoding_ = mix.decode_seqs > 0;
      base_ = s.base(mix, mode);
    }
    return base_;
  }

 private:
  struct Entry {
    double base = 0;
    GraphMode mode = GraphMode::eager;
    bool set = false;
  };
  std::vector<Entry> decode_;
  GraphMode mode_ = GraphMode::eager;
  double decode_tokens_ = -1, prefill_tokens_ = -1, prefill_seqs_ = -1, prefill_positions_ = -1;
  bool decoding_ = false;
  double base_ = 0;
};

/// The same step built op by op (model::build_forward with the mix) and evaluated kernel by
/// kernel: the reference the step model is tested against, with the bounds and the split by
/// bound and op class for reports. `g` receives the step's graph.
/// The host's launches of an eager step bound its realistic time (and its upper bound) from
/// below (docs/serving.md#eager-host). `busiest`: with attention data-parallel ranks that pad to
/// their busiest (ForwardConfig::rank_pad), the busiest rank's rows (0: the mix spread evenly).
/// `by_class`, when given, receives the kernels' realistic times by the kernel class each runs
/// as (hw::KernelClass order; their sum is out.t_realistic_s unless a launch or host floor binds).
void step_reference(const model::ModelConfig& m, const hw::System& sys, const model::ForwardConfig& f,
                    const model::StepMix& mix, GraphMode mode, model::Graph& g, analysis::PhaseTimes& out, double busiest = 0,
                    std::array<double, hw::kKernelClassCount>* by_class = nullptr) noexcept;

/// Kernels of the step graph `g` that the host launches itself when the step runs as `mode`:
/// every kernel eagerly, the attention kernels (and what the engine's attention op holds)
/// between piecewise graphs' pieces, none of one graph.
HostLaunches host_launch_counts(const model::Graph& g, GraphMode mode) noexcept;
/// Calls of the engine's attention op (MLA's under vLLM) in `g` run as `mode`: one a layer whose
/// op the host launches (every mode but one graph).
double op_calls(const model::Graph& g, GraphMode mode) noexcept;

}  // namespace ridgeline::serving
