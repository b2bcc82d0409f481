// The engine step model (docs/serving.md#step-model).
#include "ridgeline/serving/step_model.hpp"

#include <algorithm>
#include <cmath>

#include "ridgeline/ops/attention.hpp"

namespace ridgeline::serving {

namespace {

using model::Graph;
using model::Scale;

// A mix whose every quantity doubles from `k` = 1 to 2: per chip 8k decode tokens at context
// 200 and 8k prefill chunks of 64 tokens after 64 cached, so that each op's own quantity
// (tokens, sequences, prefill positions, decode tokens, prefill tokens) differs between the two fits and is
// large enough that the fitted slopes carry no visible rounding.
model::StepMix fit_mix(double ep, double k, double window) {
  model::StepMix mix;
  for (int i = 0; i < 8; ++i) {
    mix.add_decode(200, window);
    mix.add_prefill(64, 128, window);
  }
  mix.scale(ep * k);
  return mix;
}

// The quantity per chip that op scale `s` is affine in.
double quantity(Scale s, const model::StepMix& mix, double ep) {
  switch (s) {
    case Scale::tokens: return mix.tokens() / ep;
    case Scale::seqs: return mix.head_rows() / ep;
    case Scale::prefill_positions: return mix.prefill_positions / ep;
    case Scale::decode_tokens: return mix.decode_tokens / ep;
    case Scale::prefill_tokens: return mix.prefill_tokens / ep;
    default: return 0;
  }
}

bool is_attention(Scale s) {
  return s == Scale::prefill_attention || s == Scale::decode_attention || s == Scale::fused_attention;
}

bool in_attention_op(const model::GraphOp& op) { return op.attention_op != model::GraphOp::InAttentionOp::no; }

// The rows of `mix` padding counts: its tokens (vLLM) or its decode sequences.
double pad_count(const model::StepMix& mix, bool tokens) noexcept { return tokens ? mix.tokens() : mix.decode_seqs; }

bool decodes(const model::StepMix& mix, bool tokens) noexcept { return mix.decode_seqs > 0 && (!tokens || mix.decode_tokens > 0); }

// The rows a forward pads to when its graph pads (docs/serving.md#graph-padding) or attention
// data-parallel ranks pad to their busiest (docs/serving.md#rank-padding): `busiest`, the rows
// of the step's one group or of its busiest rank, up to the next of the captured sizes [first,
// last) (ascending); in a step launched eagerly or past the list, ranks under RankPad::always
// to `busiest` itself, and under RankPad::max_len too where `mix` (every rank's rows) is
// decodes alone and its ranks balanced: 2 x rows >= busiest x ep (SGLang's
// DpPaddingMode.get_dp_padding_mode, `sum_len * 2 >= max_len * dp_size`; a step with prompts
// gathers SUM_LEN: the scheduler's is_extend_in_batch, which a speculative round's batch, DECODE
// to it, does not set: its verification pads as a decode step); 0 where nothing pads. By sequences (`tokens`
// false: TensorRT-LLM, SGLang): a decode-only step launched as one graph. By tokens (vLLM: V1's
// pad_for_cudagraph, V0's rows; V0 launches no step with prompts as graphs): any step launched
// as graphs, whole or piecewise.
template <class It>
double pad_target(double busiest, const model::StepMix& mix, GraphMode mode, double ep, model::ForwardConfig::RankPad rank_pad,
                  bool tokens, It first, It last) noexcept {
  using RankPad = model::ForwardConfig::RankPad;
  if (!(busiest > 0) || (ep != 1 && rank_pad == RankPad::none)) return 0;
  const bool prompts = mix.prefill_seqs > 0, decoding = decodes(mix, tokens);
  const bool max_len = rank_pad == RankPad::max_len && !prompts && decoding && 2 * pad_count(mix, tokens) >= busiest * ep;
  const double own = ep != 1 && ((rank_pad == RankPad::always && tokens) || max_len) ? busiest : 0;
  if (first == last || mode == GraphMode::eager) return own;
  if (!tokens && (mode != GraphMode::graph || prompts || !decoding)) return 0;
  if (tokens && !prompts && !decoding) return 0;
  const It size = std::lower_bound(first, last, busiest, [](auto s, double v) { return static_cast<double>(s) < v; });
  return size == last ? own : static_cast<double>(*size);
}

PadRule pad_rule(const model::ForwardConfig& f) noexcept { return {f.graph_pad_tokens, f.graph_pad_repeats, f.graph_pad_masked}; }

// `out` (a copy of a mix of `rows` rows: one group's or rank's, or ep ranks' together) with
// padding rows up to `n`: in a decode-only step the sequences grow in proportion, in a step with
// prompt chunks (`prompts`: the step's, on any rank) the padding is chunk tokens (no sequence, no
// position, no logits: vLLM takes logits of the real rows only), its attention counts its own.
// By `rule`: rows counted as tokens or sequences; `repeats` (TensorRT-LLM: one dummy request repeated; vLLM V0: token 0 at position 0 in every
// padding row): the padding's rows past its first (sequence's) repeat it
// (StepMix::repeated_rows); less than one row of padding (a fractional mean batch) repeats none.
// `masked` (SGLang's DeepEP path): the padding's tokens reach no expert (StepMix::masked_rows)
// and repeat none.
void add_padding(model::StepMix& out, double rows, double n, PadRule rule, bool prompts) noexcept {
  if (!(n > rows)) return;
  const double before = out.tokens();
  const bool tokens = rule.tokens, repeats = rule.repeats && !rule.masked;
  const double repeated = std::max(0.0, n - rows - 1);
  if (tokens && prompts) {
    out.prefill_tokens += n - rows;  // (vLLM V1: its padding rows are leftovers, none repeats)
  } else if (tokens) {
    out.decode_seqs = out.decode_seqs / out.decode_tokens * n;
    out.decode_tokens = n;
    if (repeats) out.repeated_rows += repeated;
  } else {
    const double q = out.decode_tokens / out.decode_seqs;
    out.decode_tokens = q * n;
    out.decode_seqs = n;
    if (repeats) out.repeated_rows += q * repeated;
  }
  if (rule.masked) out.masked_rows += out.tokens() - before;  // (a sequence's several tokens under speculation)
}

// All attention data-parallel ranks' `mix` with `padding` rows more, the dummy rows of ranks
// padded to the busiest's (the expert part reads its tokens and repeats): add_padding's, as one
// mix's padding. The repeating engine's dummy (TensorRT-LLM's) is one request on every rank: its
// rows route as one.
model::StepMix with_rank_padding(const model::StepMix& mix, double padding, PadRule rule) noexcept {
  model::StepMix whole = mix;
  const double rows = pad_count(mix, rule.tokens);
  add_padding(whole, rows, rows + padding, rule, mix.prefill_seqs > 0);
  return whole;
}

// The mix a step computes its kernels but attention on when it pads: `mix` of one group, or of
// ep attention data-parallel ranks, the busiest holding `busiest` rows (0: evenly loaded, ⌈rows
// / ep⌉, serving::rank_tokens), each padded to pad_target's rows; false where nothing pads.
template <class It>
bool pad_rows(const model::StepMix& mix, GraphMode mode, double ep, model::ForwardConfig::RankPad rank_pad, PadRule rule,
              It first, It last, model::StepMix& out, double busiest = 0) noexcept {
  const double rows = pad_count(mix, rule.tokens);
  const double most = ep == 1 ? rows : busiest > 0 ? std::max(busiest, std::ceil(rows / ep)) : std::ceil(rows / ep);
  const double n = pad_target(most, mix, mode, ep, rank_pad, rule.tokens, first, last);
  if (!(n * ep > rows)) return false;
  out = mix;
  add_padding(out, rows, n * ep, rule, mix.prefill_seqs > 0);
  return true;
}

// pad_rows over the engine's list a forward pass carries (ForwardConfig::graph_pad_sizes).
bool pad_rows(const model::ForwardConfig& f, const model::StepMix& mix, GraphMode mode, model::StepMix& out, double busiest = 0) noexcept {
  static const std::vector<std::int64_t> none;
  const std::vector<std::int64_t>& sizes = f.graph_pad_sizes != nullptr ? *f.graph_pad_sizes : none;
  return pad_rows(mix, mode, static_cast<double>(f.ep), f.rank_pad, pad_rule(f), sizes.begin(), sizes.end(), out, busiest);
}

// Whether `op` runs inside a captured graph when its step runs as `mode`: a piecewise step
// launches attention, and whatever the engine's attention op holds besides, between its graphs.
bool in_graph(const model::GraphOp& op, GraphMode mode) {
  return mode == GraphMode::graph || (mode == GraphMode::piecewise && !is_attention(op.scale) && !in_attention_op(op));
}

}  // namespace

std::string_view name(GraphMode g) noexcept {
  switch (g) {
    case GraphMode::eager: return "eager";
    case GraphMode::graph: return "graph";
    case GraphMode::piecewise: return "piecewise";
  }
  return "?";
}

void StepModel::prepare(const model::ModelConfig& m, const hw::System& sys, const model::ForwardConfig& f) noexcept {
  const ops::Rates rates(sys.chip, f.pdl);
  model_ = &m;
  ep_ = static_cast<double>(f.ep);
  ep_size_ = static_cast<double>(f.ep_size());
  launch_s_ = rates.launch_s;
  moe_ = m.is_moe();
  own_touched_ = false;
  row_tiles_ = false;
  expert_tiles_ = f.expert_tiles;
  pad_sizes_.clear();
  pad_ = pad_rule(f);
  rank_pad_ = f.rank_pad;
  if (f.graph_pad_sizes != nullptr) {
    for (const std::int64_t n : *f.graph_pad_sizes) pad_sizes_.push_back(static_cast<double>(n));
  }
  touched_.clear();
  touched_all_ = false;
  if (moe_ && ep_size_ > 1) {
    const double all = static_cast<double>(m.moe.experts) / ep_size_;
    touched_.reserve(256);
    for (int t = 0; t <= kTouchedTable && !touched_all_; ++t) {
      touched_.push_back(model::touched_experts(m, ep_size_, t));
      touched_all_ = touched_.back() == all;
    }
  }
  mla_ = m.is_mla();
  host_ = {};
  host_.eager_host_s = f.eager_host_s;
  host_.compiled_host_s = f.compiled_host_s;
  host_.mla_op_host_s = f.mla_op_host_s;
  host_.mla_op_call_host_s = f.mla_op_call_host_s;
  // The host floor holds where one launch of any kind costs host time: host_launch_s's own rule.
  host_priced_ = host_launch_s(HostLaunches{1, 1, 1, 1}, host_) > 0;
  launches_ = {};
  op_launches_ = {};
  launch_step_count_ = 0;
  const double window = static_cast<double>(m.sliding_window);
  const model::StepMix m1 = fit_mix(ep_, 1, window), m2 = fit_mix(ep_, 2, window);
  // Under the routing model the imbalance changes with the step's tokens: the expert part is
  // fitted balanced (every one of its ops is affine in the busiest chip's pairs) and priced
  // at F(tokens) times the tokens (base).
  routing_ = model::routing_imbalance(m, f);
  model::ForwardConfig fit = f;
  fit.allreduce_norm_in_place = true;  // the ops in their places at both sizes (analysis::fit_switch, fit_norm_switch price each side)
  if (routing_.model()) {
    fit.expert_imbalance = 1;
    // DeepEP's kernel switches where a chip's own tokens reach its low-latency limit: in the
    // busiest chip's pairs, the fitted quantity, at F for that many tokens.
    fit.deepep_ll_imbalance = routing_.at(f.deepep_ll_tokens * ep_);
  }
  model::build_forward(m, fit, sys, {1, 1, 1, &m1}, g1_);
  model::build_forward(m, fit, sys, {1, 1, 1, &m2}, g2_);
  // Experts whose kernel reads their weights once per row tile (GraphOp::reread_tile): the reads
  // at each step's tokens (touched_at).
  reads_ = model::expert_reads(g1_);

  const comm::Wiring wiring = model::collective_wiring(sys, f);
  // Non-attention ops: a line per op in its own quantity, summed into one envelope per quantity,
  // for a step launched eagerly, as one graph and as piecewise graphs. The last differs from the
  // graph only where ops run inside the engine's attention op (GraphOp::attention_op: MLA's
  // under vLLM), launched eagerly between the pieces; otherwise it is the graph's.
  has_op_ = false;
  for (int i = 0; i < g1_.op_count; ++i) has_op_ = has_op_ || in_attention_op(g1_.ops[i]);
  op_calls_ = op_calls(g1_, GraphMode::eager);
  for (const GraphMode kind : {GraphMode::eager, GraphMode::graph, GraphMode::piecewise}) {
    if (kind == GraphMode::piecewise && !has_op_) break;
    const bool graphs = kind != GraphMode::eager;
    Variant& v = kind == GraphMode::eager ? eager_ : kind == GraphMode::graph ? graph_ : piecewise_;
    // By quantity: a group's tokens, sequences, prefill positions, decode tokens, prefill tokens,
    // and (kAllGroups) the tokens of every group (the expert part of a MoE layer under attention
    // data parallelism).
    std::array<analysis::OpLine, Graph::kMaxOps> lines[kQuantities];
    int counts[kQuantities] = {};
    // Collectives whose algorithm or protocol changes with the size, by quantity.
    std::array<analysis::SwitchLine, analysis::Envelope::kMaxSwitches> switches[kQuantities];
    int switch_counts[kQuantities] = {};
    v.apart_count = 0;
    for (int i = 0; i < g1_.op_count; ++i) {
      const model::GraphOp& op1 = g1_.ops[i];
      if (is_attention(op1.scale)) continue;
      const model::GraphOp& op2 = g2_.ops[i];
      // tokens, seqs, prefill_positions, decode_tokens, prefill_tokens; kAllGroups (tokens) for the
      // expert part, kGathered for its ops on every group's rows (GraphOp::gathered), kGatheredSeqs
      // for those on every group's sequences (the head's under ForwardConfig::gathered_dense)
      const int q = op1.gathered ? (op1.scale == Scale::seqs ? kGatheredSeqs : kGathered)
                    : op1.all_groups ? kAllGroups
                                     : static_cast<int>(op1.scale);
      const bool in_op = in_attention_op(op1);
      const bool in_graphs = graphs && !(kind == GraphMode::piecewise && in_op);
      const double x1 = quantity(op1.scale, m1, ep_), x2 = quantity(op1.scale, m2, ep_);
      // A collective whose kernel changes with its size; an all-reduce with the norm in its kernel
      // below the engine's limit runs the norm as a kernel of its own past it (the graphs hold
      // both in the op, ForwardConfig::allreduce_norm_in_place): one switch line more, and in the
      // eager variant a launch more from that x.
      // (A fused all-reduce takes two slots or none: its op line, the norm's work in it, otherwise.)
      const bool fused = op1.collective >= 0 && g1_.collectives[op1.collective].fused_norm;
      const bool switched = switch_counts[q] + (fused ? 1 : 0) < analysis::Envelope::kMaxSwitches &&
                            analysis::fit_switch(g1_, g2_, i, x1, x2, wiring, rates, in_graphs, switches[q][switch_counts[q]]);
      double norm_at = 0;
      if (switched) ++switch_counts[q];
      const bool norm_apart = switched && switch_counts[q] < analysis::Envelope::kMaxSwitches &&
                              (graphs || launch_step_count_ < kMaxLaunchSteps) &&
                              analysis::fit_norm_switch(g1_, g2_, i, x1, x2, rates, in_graphs, switches[q][switch_counts[q]], norm_at);
      if (norm_apart) ++switch_counts[q];
      if (!graphs) {
        const int own = op1.attention_op == model::GraphOp::InAttentionOp::own ? 0 : 1;
        (in_op ? op_launches_[static_cast<std::size_t>(own)] : launches_)[static_cast<std::size_t>(q)] +=
            (norm_apart ? 1 : op1.cost.launches) * g1_.repeat(i);
        // (From where the switch line hands over.)
        if (norm_apart) launch_steps_[static_cast<std::size_t>(launch_step_count_++)] = {op1.scale, q == 2 || q == 4, norm_at, g1_.repeat(i)};
      }
      if (switched) continue;
      const analysis::OpLine l = analysis::fit_costs(op1.cost, op2.cost, x1, x2, op1, op2, rates, in_graphs, g1_.repeat(i));
      if (l.apart()) {
        v.apart_quantity[v.apart_count] = static_cast<std::uint8_t>(q);
        v.apart[v.apart_count++] = l;
        continue;
      }
      lines[q][counts[q]++] = l;
    }
    for (int i = 0; i < v.apart_count; ++i) {
      if (v.apart_quantity[i] < kAllGroups && v.apart[i].mem_per_expert != 0) own_touched_ = true;
      if (v.apart[i].row_tile_flops_per_x > 0) row_tiles_ = true;
    }
    v.pad_work.assign(static_cast<std::size_t>(v.apart_count) * kPadRows, 0);
    for (int i = 0; i < v.apart_count; ++i) {
      if (v.apart[i].gemm_rows_per_x <= 0) continue;
      analysis::fill_work_table(v.apart[i].padding, &v.pad_work[static_cast<std::size_t>(i) * kPadRows], kPadRows);
    }
    analysis::Envelope* env[kQuantities] = {&v.tokens,         &v.seqs,       &v.prefill_positions, &v.decode_tokens,
                                            &v.prefill_tokens, &v.all_tokens, &v.gathered_tokens, &v.gathered_seqs};
    for (int q = 0; q < kQuantities; ++q) {
      analysis::build_envelope(lines[q].data(), counts[q], 0, *env[q], switches[q].data(), switch_counts[q]);
    }
  }

  // Attention kernels: linear in their counts (ops::attention_cost), so the realistic parts
  // per unit of each count are the parts of a kernel with that count alone, less the fixed
  // time; each as a kernel of the attention class and of the decode-attention class.
  attention_count_ = 0;
  for (int i = 0; i < g1_.op_count && attention_count_ < kMaxAttention; ++i) {
    const model::GraphOp& op = g1_.ops[i];
    if (!is_attention(op.scale) || op.attention < 0) continue;
    const ops::AttentionShape& shape = g1_.attention[op.attention];
    // (the decode class the graph gave the op: AITER's MLA decode is a class of its own)
    const hw::KernelClass classes[2] = {hw::KernelClass::attention, op.kernel == hw::KernelClass::attention_decode_mla
                                                                         ? hw::KernelClass::attention_decode_mla
                                                                         : hw::KernelClass::attention_decode};
    AttentionLine& l = attention_[attention_count_++];
    l.rep = g1_.repeat(i);
    l.kernels = op.cost.launches;
    l.decode = op.scale == Scale::decode_attention;
    l.window = shape.window > 0;
    l.naive = shape.impl == ops::AttentionImpl::naive;
    l.own_op = op.attention_op == model::GraphOp::InAttentionOp::own;
    for (int v = 0; v < 2; ++v) {
      // Every kernel's fixed time (a naive attention runs several: ops::TimeParts::kernels).
      const double overhead = rates.achievable[static_cast<int>(classes[v])].overhead_s * ops::TimeParts::kernels_of(op.cost.launches);
      l.overhead_s[v] = overhead;
      for (int c = 0; c < (v == 0 ? kAttentionCounts : 6); ++c) {
        ops::AttentionCounts unit;
        double* field[kAttentionCounts] = {&unit.seqs,   &unit.queries,   &unit.pairs,   &unit.keys,
                                           &unit.scores, &unit.positions, &unit.q_tiles, &unit.tile_waste};
        *field[c] = 1;
        const ops::Cost cost = ops::attention_cost(shape, unit);
        const auto p = analysis::realistic_parts(ops::time_parts(cost, rates), rates, classes[v]);
        const double parts[5] = {p[0] - overhead, p[1] - overhead, p[2] - overhead, p[3] - overhead, p[5] - overhead};
        for (int part = 0; part < 5; ++part) (v == 0 ? l.per_count[part][c] : l.decode_w[c][part]) = parts[part];
        l.launch_s = p[4];
      }
    }
  }
}

double StepModel::attention_time(const AttentionLine& l, const ops::AttentionCounts& n, bool eager) noexcept {
  const bool tiled = n.q_tiles > 0;
  double best = 0;
  for (int part = 0; part < 5; ++part) {
    const auto& w = l.per_count[part];
    double x = w[0] * n.seqs + w[1] * n.queries + w[2] * n.pairs + w[3] * n.keys;
    if (tiled) x += w[6] * n.q_tiles + w[7] * n.tile_waste;
    if (l.naive) x += w[4] * n.scores + w[5] * n.positions;
    best = x > best ? x : best;
  }
  best += l.overhead_s[0];
  const double launch = eager ? l.launch_s : 0;
  return launch > best ? launch : best;
}

double StepModel::decode_attention_time(const AttentionLine& l, const ops::AttentionCounts& n, bool eager) noexcept {
  // Each count times its weights for all parts at once (two parts an instruction).
  std::array<double, 6> x{};
  const auto add = [&](int c, double count) {
    for (int part = 0; part < 6; ++part) x[part] += l.decode_w[c][part] * count;
  };
  add(0, n.seqs);
  add(1, n.queries);
  add(2, n.pairs);
  add(3, n.keys);
  if (l.naive) {  // (the two terms summed first, as attention_time sums them)
    for (int part = 0; part < 6; ++part) x[part] += l.decode_w[4][part] * n.scores + l.decode_w[5][part] * n.positions;
  }
  // (The 6th part is zero: the max with none.)
  double best = std::max(std::max(std::max(x[0], x[1]), std::max(x[2], x[3])), std::max(x[4], x[5]));
  best += l.overhead_s[1];
  const double launch = eager ? l.launch_s : 0;
  return std::max(launch, best);
}

model::StepMix StepModel::group_share(const model::StepMix& mix) const noexcept {
  model::StepMix g = mix;
  if (ep_ != 1) g.scale(1 / ep_);
  return g;
}

StepModel::Expert StepModel::expert(const model::StepMix& mix, GraphMode mode) const noexcept {
  const Variant& v = variant(mode);
  Expert e;
  // all: the expert part's quantity, the tokens of all groups over ep, times the busiest
  // chip's share over the mean under the routing model.
  // Padding masked before the experts routes nothing (StepMix::masked_rows).
  const double routed = mix.tokens() - mix.masked_rows;
  e.all = routed / ep_ * (routing_.model() ? routing_.at(routed) : 1);
  if (v.all_tokens.count > 0) e.s += v.all_tokens.at(e.all);
  // Every group's rows, padding and all, whatever their experts: no share of the busiest.
  const double gathered = mix.tokens() / ep_;
  if (v.gathered_tokens.count > 0) e.s += v.gathered_tokens.at(gathered);
  const double gathered_seqs = mix.head_rows() / ep_;
  if (v.gathered_seqs.count > 0) e.s += v.gathered_seqs.at(gathered_seqs);
  if (v.apart_count == 0) return e;
  // The experts are spread over ep_size_ chips and see the tokens of all ep_ groups.
  // (Under a kernel reading each expert once per row tile, every row counts: GraphOp::reread_tile.)
  e.touched = moe_ ? touched_at(reads_.tile > 0 ? routed : routed - mix.repeated_rows) : 0;
  // Each expert's rows in whole tiles: the ratio at the busiest chip's rows, the tokens of all
  // groups times its share F (given, or the routing model's), as the graph's.
  if (row_tiles_) e.row_tiles = model::expert_row_tiles(*model_, routed, routing_.at(routed), expert_tiles_);
  for (int i = 0; i < v.apart_count; ++i) {
    if (v.apart_quantity[i] == kAllGroups) e.s += apart_at(v, i, e.all, e.touched, e.row_tiles);
    if (v.apart_quantity[i] == kGathered) e.s += apart_at(v, i, gathered, e.touched, e.row_tiles);
    if (v.apart_quantity[i] == kGatheredSeqs) e.s += apart_at(v, i, gathered_seqs, e.touched, e.row_tiles);
  }
  return e;
}

double StepModel::touched_at(double tokens) const noexcept {
  if (!touched_.empty() && tokens >= 0 && tokens == std::floor(tokens)) {
    if (tokens < static_cast<double>(touched_.size())) return touched_[static_cast<std::size_t>(tokens)];
    if (touched_all_) return touched_.back();
  }
  return model::expert_weight_reads(*model_, ep_size_, tokens, reads_);
}

double StepModel::apart_at(const Variant& v, int i, double x, double touched, double row_tiles) const noexcept {
  const analysis::OpLine& l = v.apart[i];
  double pad = analysis::row_tile_pad_flops(l, x, row_tiles);
  if (l.gemm_rows_per_x > 0) {  // the tile work from the table where it has it
    const double rows = x * l.gemm_rows_per_x;
    pad += l.padding.from_work(rows, analysis::tabulated_work(l.padding, rows, &v.pad_work[static_cast<std::size_t>(i) * kPadRows], kPadRows));
  }
  return l.rep * analysis::realistic_at(l, x, l.mem_per_expert != 0 ? touched : 0, pad);
}

double StepModel::own_part(const model::StepMix& group, double all, double touched, GraphMode mode) const noexcept {
  const Variant& v = variant(mode);
  const double T = group.tokens();
  double t = v.tokens.at(T) + v.seqs.at(group.head_rows());
  const bool prefill = group.prefill_seqs > 0, decode = group.decode_seqs > 0;
  if (v.apart_count > 0) {
    const double x[kQuantities] = {T, group.head_rows(), group.prefill_positions, group.decode_tokens, group.prefill_tokens, all, 0, 0};
    const bool present[kQuantities] = {true, true, prefill, decode, prefill, false, false, false};  // (the expert part: StepModel::expert)
    for (int i = 0; i < v.apart_count; ++i) {
      const int q = v.apart_quantity[i];
      if (present[q]) t += apart_at(v, i, x[q], touched);
    }
  }
  if (prefill && v.prefill_positions.count > 0) t += v.prefill_positions.at(group.prefill_positions);
  if (prefill && v.prefill_tokens.count > 0) t += v.prefill_tokens.at(group.prefill_tokens);
  if (decode && v.decode_tokens.count > 0) t += v.decode_tokens.at(group.decode_tokens);
  return t;
}

bool StepModel::padded(const model::StepMix& mix, GraphMode mode, model::StepMix& out) const noexcept {
  return pad_rows(mix, mode, ep_, rank_pad_, pad_, pad_sizes_.begin(), pad_sizes_.end(), out);
}

double StepModel::base(const model::StepMix& group, const model::StepMix& mix, GraphMode mode) const noexcept {
  // A graph padded to its captured size: the padding rows run every kernel but attention,
  // whose dummy sequences hold a token or two (TensorRT-LLM's CUDA-graph dummy requests).
  if (ep_ == 1 && !pad_sizes_.empty()) {
    model::StepMix pad;
    if (padded(mix, mode, pad)) {
      const Expert e = expert(pad, mode);
      return own_part(pad, e.all, e.touched, mode) + e.s;
    }
  }
  // Attention data-parallel ranks padded to the busiest, `group` (or, fractional, their even
  // share: its rows rounded up, as the busiest of evenly loaded ranks holds).
  if (ep_ != 1 && rank_pad_ != model::ForwardConfig::RankPad::none) {
    const double rows = pad_count(group, pad_.tokens);
    const double target = rank_target(std::ceil(rows), mix, mode);
    const double padding = target * ep_ - pad_count(mix, pad_.tokens);
    if (target > 0 && padding > 0) {
      const Expert e = expert(with_rank_padding(mix, padding, pad_), mode);
      model::StepMix own = group;
      add_padding(own, rows, target, pad_, mix.prefill_seqs > 0);
      return own_part(own, e.all, e.touched, mode) + e.s;
    }
  }
  const Expert e = expert(mix, mode);
  return own_part(group, e.all, e.touched, mode) + e.s;
}

double StepModel::rank_target(double busiest, const model::StepMix& mix, GraphMode mode) const noexcept {
  return pad_target(busiest, mix, mode, ep_, rank_pad_, pad_.tokens, pad_sizes_.begin(), pad_sizes_.end());
}

double StepModel::slowest(const model::StepMix* groups, std::size_t n, const model::StepMix& mix, GraphMode mode,
                          RankMemo* memo) const noexcept {
  // Ranks that pad (docs/serving.md#rank-padding): each to `target` rows, the busiest rank's
  // padded, an idle one's dummy pass too; the expert part over all ranks' rows, padding and all.
  double target = 0;
  model::StepMix whole;
  const model::StepMix* all = &mix;
  if (rank_pad_ != model::ForwardConfig::RankPad::none) {
    double busiest = 0;
    for (std::size_t i = 0; i < n; ++i) busiest = std::max(busiest, pad_count(groups[i], pad_.tokens));
    target = rank_target(busiest, mix, mode);
    const double padding = target * static_cast<double>(n) - pad_count(mix, pad_.tokens);
    if (padding > 0) {
      whole = with_rank_padding(mix, padding, pad_);
      all = &whole;
    }
  }
  // The expert part is the same for every group: priced once.
  const Expert e = expert(*all, mode);
  std::vector<double>* known = memo != nullptr && !own_touched_ ? &memo->own[variant_slot(mode)] : nullptr;
  double t = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const model::StepMix& g = groups[i];
    if (g.seqs() <= 0) continue;
    model::StepMix padded_g;
    const model::StepMix* own_mix = &g;
    if (target > pad_count(g, pad_.tokens)) {
      padded_g = g;
      add_padding(padded_g, pad_count(g, pad_.tokens), target, pad_, mix.prefill_seqs > 0);
      own_mix = &padded_g;
    }
    double own = 0;
    // A group of decode sequences only: its own part reads its decode tokens alone.
    const double dt = own_mix->decode_tokens;
    const auto d = static_cast<std::size_t>(dt);
    if (known != nullptr && own_mix->prefill_seqs == 0 && own_mix->prefill_tokens == 0 && d < known->size() && static_cast<double>(d) == dt) {
      double& k = (*known)[d];
      if (!(k >= 0)) k = own_part(*own_mix, e.all, e.touched, mode);
      own = k;
    } else {
      own = own_part(*own_mix, e.all, e.touched, mode);
    }
    t = std::max(t, with_group_attention(own + e.s, g, mode));
  }
  return t;
}

double StepModel::with_group_attention(double t, const model::StepMix& mix, GraphMode mode) const noexcept {
  const bool prefill = mix.prefill_seqs > 0, decode = mix.decode_seqs > 0;
  // Attention: each kind's counts on the kernels of the step (the lines take the chip's share).
  const bool eager_attention = mode != GraphMode::graph;
  const bool fused = mix.fused_attention && !mla_;
  for (int i = 0; i < attention_count_ && (prefill || decode); ++i) {
    const AttentionLine& l = attention_[i];
    const ops::AttentionCounts& d = l.window ? mix.decode_window : mix.decode_full;
    if (fused) {
      // One kernel over both kinds, the prefill kernel's line (the same shape): with a prefill
      // chunk an attention-class kernel over all counts, else a decode kernel over the decodes'.
      if (l.decode) continue;
      if (!prefill) {
        t += l.rep * decode_attention_time(l, d, eager_attention);
        continue;
      }
      ops::AttentionCounts n = l.window ? mix.prefill_window : mix.prefill_full;
      n += d;
      t += l.rep * attention_time(l, n, eager_attention);
    } else if (l.decode) {
      if (decode) t += l.rep * decode_attention_time(l, d, eager_attention);
    } else if (prefill) {
      t += l.rep * attention_time(l, l.window ? mix.prefill_window : mix.prefill_full, eager_attention);
    }
  }
  if (mode != GraphMode::eager) t = std::max(t, launch_s_);
  // The host issues an eager step's kernels no faster than the engine's code runs: the step
  // lasts at least their count times its time per kernel (docs/serving.md#eager-host).
  if (host_priced_ && mode != GraphMode::graph) {
    t = std::max(t, eager_host_s(mix, mode));
  }
  return t;
}

HostLaunches StepModel::eager_launches(const model::StepMix& mix, GraphMode mode) const noexcept {
  HostLaunches n;
  if (mode == GraphMode::graph) return n;
  const bool prefill = mix.prefill_seqs > 0, decode = mix.decode_seqs > 0;
  const auto present = [&](const std::array<double, kQuantities>& l) {
    return l[0] + l[1] + l[kAllGroups] + l[kGathered] + l[kGatheredSeqs] + (prefill ? l[2] + l[4] : 0) + (decode ? l[3] : 0);
  };
  if (mode == GraphMode::eager) {
    n.other = present(launches_);
    for (int i = 0; i < launch_step_count_; ++i) {
      const LaunchStep& l = launch_steps_[static_cast<std::size_t>(i)];
      if ((!l.prefill || prefill) && quantity(l.scale, mix, ep_) >= l.at) n.other += l.rep;
    }
  }
  // The rest of the engine's attention op (MLA's under vLLM), launched from its Python in both
  // modes: its own kernels and the projections it holds.
  n.mla_op = present(op_launches_[0]);
  n.attention = present(op_launches_[1]);
  n.mla_op_calls = op_calls_;
  // Attention kernels run eagerly in both other modes: each kind the step holds, or one fused
  // kernel over both (as with_group_attention prices them).
  const bool fused = mix.fused_attention && !mla_;
  for (int i = 0; i < attention_count_; ++i) {
    const AttentionLine& l = attention_[i];
    if (fused ? !l.decode && (prefill || decode) : (l.decode ? decode : prefill)) (l.own_op ? n.mla_op : n.attention) += l.rep * l.kernels;
  }
  return n;
}

double StepModel::eager_kernels(const model::StepMix& mix, GraphMode mode) const noexcept {
  const HostLaunches n = eager_launches(mix, mode);
  return n.attention + n.mla_op + n.other;
}

double StepModel::eager_host_s(const model::StepMix& mix, GraphMode mode) const noexcept {
  return host_launch_s(eager_launches(mix, mode), host_);
}

void step_reference(const model::ModelConfig& m, const hw::System& sys, const model::ForwardConfig& f,
                    const model::StepMix& mix, GraphMode mode, model::Graph& g, analysis::PhaseTimes& out, double busiest,
                    std::array<double, hw::kKernelClassCount>* by_class) noexcept {
  const ops::Rates rates(sys.chip, f.pdl);
  // A graph padded to its captured size: built on the padded rows, as StepModel::base prices it.
  model::StepMix pad;
  const bool pads = pad_rows(f, mix, mode, pad, busiest);
  model::build_forward(m, f, sys, {1, 1, 1, pads ? &pad : &mix}, g);
  analysis::PhaseTimes t;
  if (by_class) by_class->fill(0);
  for (int i = 0; i < g.op_count; ++i) {
    const analysis::OpTimes o = analysis::op_times(g.ops[i].cost, rates, in_graph(g.ops[i], mode));
    analysis::accumulate(t, o, g.repeat(i), rates, g.ops[i].cls, g.ops[i].kernel);
    if (by_class) (*by_class)[static_cast<std::size_t>(g.ops[i].kernel)] += g.repeat(i) * o.parts.realistic(rates, g.ops[i].kernel);
  }
  analysis::graph_launches(t, rates, mode != GraphMode::eager, 1);
  const double host = host_launch_s(host_launch_counts(g, mode), f);
  t.t_realistic_s = std::max(t.t_realistic_s, host);
  t.t_upper_s = std::max(t.t_upper_s, host);
  analysis::finish(t);
  out = t;
}

double padded_sequences(const model::ForwardConfig& f, const model::StepMix& mix, GraphMode mode) noexcept {
  model::StepMix pad;
  return pad_rows(f, mix, mode, pad) ? pad.decode_seqs : mix.decode_seqs;
}

double op_calls(const model::Graph& g, GraphMode mode) noexcept {
  // One call a layer: the repeats of the layer groups holding an op launched from the op.
  std::array<bool, model::Graph::kMaxGroups> holds{};
  for (int i = 0; i < g.op_count; ++i) {
    if (in_attention_op(g.ops[i]) && !in_graph(g.ops[i], mode)) holds[static_cast<std::size_t>(g.ops[i].group)] = true;
  }
  double calls = 0;
  for (int k = 0; k < g.group_count; ++k) calls += holds[static_cast<std::size_t>(k)] ? g.groups[static_cast<std::size_t>(k)].repeat : 0;
  return calls;
}

HostLaunches host_launch_counts(const model::Graph& g, GraphMode mode) noexcept {
  HostLaunches n;
  n.mla_op_calls = op_calls(g, mode);
  for (int i = 0; i < g.op_count; ++i) {
    const model::GraphOp& op = g.ops[i];
    if (in_graph(op, mode)) continue;
    // MLA's attention op's own kernels, the projections it holds with attention's, the rest.
    double& count = op.attention_op == model::GraphOp::InAttentionOp::own                    ? n.mla_op
                    : is_attention(op.scale) || op.attention_op == model::GraphOp::InAttentionOp::projection ? n.attention
                                                                                                             : n.other;
    count += op.cost.launches * g.repeat(i);
  }
  return n;
}

double host_launch_s(const HostLaunches& n, const model::ForwardConfig& f) noexcept {
  return f.eager_host_s * n.attention + (f.mla_op_host_s > 0 ? f.mla_op_host_s : f.eager_host_s) * n.mla_op +
         f.mla_op_call_host_s * n.mla_op_calls + (f.compiled_host_s > 0 ? f.compiled_host_s : f.eager_host_s) * n.other;
}

}  // namespace ridgeline::serving
