#include "ridgeline/analysis/inference.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ridgeline/analysis/threshold.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/ops/matmul.hpp"

namespace ridgeline::analysis {

namespace {

using model::Graph;


// Sum over j = 0..n-1 of max_i(a_i + b_i·j) for lines given at j = 0 (a) and j = n-1 (z):
// exact, by splitting [0, n-1] where the upper envelope changes line.
double sum_max_affine(const double* a, const double* z, int count, double n) {
  if (n <= 0) return 0;
  if (n == 1) return *std::max_element(a, a + count);
  // The max of affine functions is convex: a line that is the maximum at both ends is the
  // maximum in between (the usual case: one resource binds over the whole range).
  const int i0 = static_cast<int>(std::max_element(a, a + count) - a);
  const int i1 = static_cast<int>(std::max_element(z, z + count) - z);
  if (i0 == i1) return n * (a[i0] + z[i0]) / 2;
  double slope[5];
  for (int i = 0; i < count; ++i) slope[i] = (z[i] - a[i]) / (n - 1);
  // Breakpoints: pairwise crossings inside (0, n-1).
  double cuts[12];
  int nc = 0;
  for (int i = 0; i < count; ++i) {
    for (int k = i + 1; k < count; ++k) {
      const double ds = slope[i] - slope[k];
      if (ds == 0) continue;
      const double x = (a[k] - a[i]) / ds;
      if (x > 0 && x < n - 1) cuts[nc++] = x;
    }
  }
  for (int i = 1; i < nc; ++i) {  // insertion sort: at most 10 cuts
    for (int k = i; k > 0 && cuts[k - 1] > cuts[k]; --k) std::swap(cuts[k - 1], cuts[k]);
  }
  double total = 0, start = 0;  // integer j from `start` on
  for (int c = 0; c <= nc; ++c) {
    const double end = c < nc ? std::floor(cuts[c]) : n - 1;  // last integer of this piece
    if (end < start) continue;
    const double mid = (start + end) / 2;
    int best = 0;
    for (int i = 1; i < count; ++i) {
      if (a[i] + slope[i] * mid > a[best] + slope[best] * mid) best = i;
    }
    const double cnt = end - start + 1;
    total += cnt * a[best] + slope[best] * (start + end) * cnt / 2;
    start = end + 1;
  }
  return total;
}

double main_bytes(const ops::Cost& c) { return c.bytes[0]; }
double main_bytes(const ops::OpCost& c) { return c.main_bytes; }

template <class C>
[[gnu::always_inline]] inline OpTimes op_times(const C& c, const ops::Rates& rates, bool graphs) noexcept {
  OpTimes o;
  o.parts = ops::time_parts(c, rates);
  if (graphs) o.parts.launch = 0;
  o.flops = c.total_flops();
  o.bytes = main_bytes(c);
  o.link_bytes = c.total_link_bytes();
  o.launches = graphs ? 0 : c.launches;
  return o;
}

[[gnu::always_inline]] inline void accumulate(PhaseTimes& t, const OpTimes& o, double r, const ops::Rates& rates, model::OpClass cls) noexcept {
  const double lower = o.parts.lower();
  t.t_lower_s += r * lower;
  t.t_upper_s += r * o.parts.upper(rates);
  t.t_realistic_s += r * o.parts.realistic(rates);
  t.flops += r * o.flops;
  t.bytes += r * o.bytes;
  t.comm_bytes += r * o.link_bytes;
  t.launches += r * o.launches;
  const int b = static_cast<int>(o.parts.bound()), k = static_cast<int>(cls);
  t.lower_by_bound_s[b] += r * lower;
  t.lower_by_class_s[k] += r * lower;
}

// A pass replayed as a CUDA graph costs one launch, which the host issues while the GPU
// runs the previous pass: the pass takes at least the launch, otherwise its kernels' time.
void graph_launches(PhaseTimes& t, const ops::Rates& rates, bool graphs, double passes) noexcept {
  if (!graphs) return;
  const double l = passes * rates.launch_s;
  if (l > t.t_lower_s) t.lower_by_bound_s[static_cast<int>(ops::Bound::launch)] += l - t.t_lower_s;
  t.t_lower_s = std::max(t.t_lower_s, l);
  t.t_upper_s = std::max(t.t_upper_s, l);
  t.t_realistic_s = std::max(t.t_realistic_s, l);
  t.launches += passes;
}

void finish(PhaseTimes& t) noexcept {
  int best = 0;
  for (int b = 1; b < 4; ++b) {
    if (t.lower_by_bound_s[b] > t.lower_by_bound_s[best]) best = b;
  }
  t.bound = static_cast<ops::Bound>(best);
}

// Evaluates every op of `g` on the chip (sums kept in a local: the loop does not go
// through the result's memory).
void evaluate(const Graph& g, const ops::Rates& rates, bool graphs, PhaseTimes& t) noexcept {
  PhaseTimes acc;
  for (int i = 0; i < g.op_count; ++i) accumulate(acc, op_times(g.ops[i].cost, rates, graphs), g.repeat(i), rates, g.ops[i].cls);
  graph_launches(acc, rates, graphs, 1);
  finish(acc);
  t = acc;
}

// Attention op i of `g` re-costed at context `kv`.
OpTimes attention_at(const Graph& g, int i, double kv, const ops::Rates& rates, bool graphs) noexcept {
  ops::AttentionShape a = g.attention[g.ops[i].attention];
  a.kv_len = kv;
  return op_times(ops::attention_cost(a), rates, graphs);
}

// Exact sum of n decode steps of op i whose first and last are `a` and `z`: every part is
// affine in the context between them.
void sum_steps(const Graph& g, int i, const OpTimes& a, const OpTimes& z, const ops::Rates& rates, double n,
               PhaseTimes& t) noexcept {
  const ops::TimeParts& p0 = a.parts;
  const ops::TimeParts& p1 = z.parts;
  const double r = g.repeat(i);
  const double l0[5] = {p0.matrix, p0.vector, p0.memory, p0.comm, p0.launch};
  const double l1[5] = {p1.matrix, p1.vector, p1.memory, p1.comm, p1.launch};
  const double lower = sum_max_affine(l0, l1, 5, n);
  const double s0[5] = {p0.matrix * rates.inv_eff_matrix, p0.vector * rates.inv_eff_vector,
                        p0.memory * rates.inv_eff_memory, p0.comm * rates.inv_eff_link, p0.launch};
  const double s1[5] = {p1.matrix * rates.inv_eff_matrix, p1.vector * rates.inv_eff_vector,
                        p1.memory * rates.inv_eff_memory, p1.comm * rates.inv_eff_link, p1.launch};
  t.t_lower_s += r * lower;
  t.t_realistic_s += r * sum_max_affine(s0, s1, 5, n);
  t.t_upper_s += r * n * (p0.upper(rates) + p1.upper(rates)) / 2;
  t.flops += r * n * (a.flops + z.flops) / 2;
  t.bytes += r * n * (a.bytes + z.bytes) / 2;
  t.comm_bytes += r * n * (a.link_bytes + z.link_bytes) / 2;
  t.launches += r * n * a.launches;
  // Attribute the op's summed time to its bound at the longer end of the range.
  t.lower_by_bound_s[static_cast<int>((p1.lower() >= p0.lower() ? p1 : p0).bound())] += r * lower;
  t.lower_by_class_s[static_cast<int>(g.ops[i].cls)] += r * lower;
}

void add_phase(PhaseTimes& into, const PhaseTimes& t, double k = 1) noexcept {
  into.t_lower_s += k * t.t_lower_s;
  into.t_upper_s += k * t.t_upper_s;
  into.t_realistic_s += k * t.t_realistic_s;
  into.flops += k * t.flops;
  into.bytes += k * t.bytes;
  into.comm_bytes += k * t.comm_bytes;
  into.launches += k * t.launches;
  for (int b = 0; b < 4; ++b) into.lower_by_bound_s[b] += k * t.lower_by_bound_s[b];
  for (int b = 0; b < 6; ++b) into.lower_by_class_s[b] += k * t.lower_by_class_s[b];
}

// Every decode step of `g` (built at the last step's context P + steps): the first and
// last steps, and all `steps` summed exactly. Only attention depends on the context: the
// other ops cost the same at every step, so they are evaluated once and multiplied.
void decode_phase(const Graph& g, const ops::Rates& rates, bool graphs, double P, double steps, double window,
                  InferenceResult& out) noexcept {
  PhaseTimes fixed, last_att, first_att, total_att;
  for (int i = 0; i < g.op_count; ++i) {
    const OpTimes last = op_times(g.ops[i].cost, rates, graphs);
    if (g.ops[i].attention < 0) {
      accumulate(fixed, last, g.repeat(i), rates, g.ops[i].cls);
      continue;
    }
    accumulate(last_att, last, g.repeat(i), rates, g.ops[i].cls);
    const OpTimes first = attention_at(g, i, P + 1, rates, graphs);
    accumulate(first_att, first, g.repeat(i), rates, g.ops[i].cls);
    // A sliding window puts a kink at context = window: sum the two straight pieces apart.
    if (window > P + 1 && window < P + steps) {
      const double n1 = window - P;  // steps with context P+1 .. window
      const OpTimes at_w = attention_at(g, i, window, rates, graphs);
      const OpTimes after_w = attention_at(g, i, window + 1, rates, graphs);
      sum_steps(g, i, first, at_w, rates, n1, total_att);
      sum_steps(g, i, after_w, last, rates, steps - n1, total_att);
    } else {
      sum_steps(g, i, first, last, rates, steps, total_att);
    }
  }
  out.decode_last = fixed;
  add_phase(out.decode_last, last_att);
  out.decode_first = fixed;
  add_phase(out.decode_first, first_att);
  out.decode_total = total_att;
  add_phase(out.decode_total, fixed, steps);
  graph_launches(out.decode_last, rates, graphs, 1);
  graph_launches(out.decode_first, rates, graphs, 1);
  graph_launches(out.decode_total, rates, graphs, steps);
  finish(out.decode_last);
  finish(out.decode_first);
  finish(out.decode_total);
}

// Full estimates of every op, for the report's tables.
void fill_rows(const Graph& g, const hw::ChipSpec& chip, bool graphs, std::array<OpRow, Graph::kMaxOps>& rows) {
  for (int i = 0; i < g.op_count; ++i) {
    ops::Cost c = g.ops[i].cost.expand();
    if (graphs) c.launches = 0;
    rows[i].op = i;
    rows[i].e = ops::estimate(c, chip);
  }
}

double weight_bytes(const Graph& g) {
  double w = 0;
  for (int i = 0; i < g.op_count; ++i) w += g.ops[i].weight_bytes * g.repeat(i);
  return w;
}

// Peak live activations during one prefill layer on one chip, per sequence of `tokens`.
double activation_bytes(const model::ModelConfig& m, const model::ForwardConfig& f, double seqs, double tokens) {
  const double s = bytes(f.precision.activation);
  const double tp = static_cast<double>(f.tp);
  const double h = static_cast<double>(m.hidden);
  const double heads = static_cast<double>(m.heads) / tp;
  const double kvh = std::max(1.0, static_cast<double>(m.kv_heads) / tp);
  const double attn = m.is_mla() ? heads * static_cast<double>(m.head_dim + m.mla.qk_nope_head_dim + m.mla.v_head_dim)
                                 : (heads + 2 * kvh) * static_cast<double>(m.head_dim);
  double mlp = 2 * static_cast<double>(m.intermediate) / tp;
  if (m.is_moe()) {
    mlp = std::max(mlp, 2 * static_cast<double>(m.moe.experts_per_token * m.moe.intermediate) / tp);
  }
  // Residual stream and normalised input, plus the widest intermediate.
  double act = tokens * (2 * h + std::max(attn, mlp)) * s;
  if (f.attention == ops::AttentionImpl::naive) act += seqs * heads * (tokens / seqs) * (tokens / seqs) * s;
  // fp32 logits of the last position of each sequence.
  act += seqs * static_cast<double>(m.vocab) / tp * 4;
  return act;
}

}  // namespace

void validate(const model::ModelConfig& m, const hw::System& sys, const InferenceConfig& cfg) {
  model::validate(m, cfg.forward);
  auto positive = [](std::int64_t v, const char* flag, std::int64_t max) {
    if (v < 1 || v > max) throw InputError(fmt::format("{}: {} is out of range: expected 1 to {}", flag, v, max));
  };
  positive(cfg.batch, "--batch", std::int64_t{1} << 24);
  positive(cfg.prompt, "--prompt", std::int64_t{1} << 26);
  positive(cfg.gen, "--gen", std::int64_t{1} << 26);
  if (cfg.batch % cfg.forward.ep != 0) {
    throw InputError(fmt::format("--batch: {} sequences do not split over --ep {} (attention is data-parallel across EP groups)",
                                 cfg.batch, cfg.forward.ep));
  }
  if (sys.chip.main_bandwidth_Bps() <= 0) throw InputError(fmt::format("--hw {}: no main memory", sys.chip.name));
  if ((cfg.forward.tp > 1 || cfg.forward.ep > 1) && sys.chip.links.empty()) {
    throw InputError(fmt::format("--tp/--ep: {} has no link between chips: pass --link-bw", sys.chip.name));
  }
}

void infer(const model::ModelConfig& m, const hw::System& sys_in, const InferenceConfig& cfg, InferenceResult& out) {
  validate(m, sys_in, cfg);
  infer_core(m, sys_in, cfg, out);
  infer_details(m, sys_in, cfg, out);
}

void infer_core(const model::ModelConfig& m, const hw::System& sys, const InferenceConfig& cfg, InferenceResult& out) noexcept {
  const hw::ChipSpec& chip = sys.chip;
  const auto& f = cfg.forward;
  const double B = static_cast<double>(cfg.batch), P = static_cast<double>(cfg.prompt);
  const double G = static_cast<double>(cfg.gen);
  out.chips = static_cast<double>(f.tp * f.ep);

  const ops::Rates rates(chip);
  // Prefill: every prompt token, causal over the prompt.
  model::build_forward(m, f, sys, {B, P, P}, out.prefill_graph);
  evaluate(out.prefill_graph, rates, false, out.prefill);

  // Decode: gen - 1 steps; step i (1-based) attends to prompt + i positions. The graph is
  // built once, at the last step; other contexts re-cost only the attention ops.
  const double steps = G - 1;
  if (steps >= 1) {
    model::build_forward(m, f, sys, {B, 1, P + steps}, out.decode_graph);
    decode_phase(out.decode_graph, rates, cfg.cuda_graphs, P, steps, static_cast<double>(m.sliding_window), out);
  } else {
    out.decode_first = out.decode_last = out.decode_total = {};
    out.decode_graph.clear();
  }

  out.ttft_s = out.prefill.t_realistic_s;
  out.e2e_s = out.prefill.t_realistic_s + out.decode_total.t_realistic_s;
  out.e2e_lower_s = out.prefill.t_lower_s + out.decode_total.t_lower_s;
  out.e2e_upper_s = out.prefill.t_upper_s + out.decode_total.t_upper_s;
  out.tpot_s = steps >= 1 ? out.decode_total.t_realistic_s / steps : 0;
  out.throughput_tokens_per_s = out.e2e_s > 0 ? B * (P + G) / out.e2e_s : 0;
  out.output_tokens_per_s = out.e2e_s > 0 ? B * G / out.e2e_s : 0;

  // Memory on one chip.
  auto& mem = out.memory;
  mem.weights_bytes = weight_bytes(out.prefill_graph);
  mem.kv_bytes_per_token = model::kv_bytes_per_token(m, f);
  mem.kv_cache_bytes = model::kv_cache_bytes(m, f, B, P + G);
  const double seqs = B / static_cast<double>(f.ep);
  mem.activations_bytes = activation_bytes(m, f, seqs, seqs * P);
  mem.total_bytes = mem.weights_bytes + mem.kv_cache_bytes + mem.activations_bytes;
  mem.capacity_bytes = chip.main_capacity_bytes();
  mem.fits = mem.total_bytes <= mem.capacity_bytes;
  // Largest batch: weights fixed, KV cache and activations grow with the batch (per EP group of sequences).
  const double per_seq = model::kv_cache_bytes(m, f, static_cast<double>(f.ep), P + G) +
                         activation_bytes(m, f, 1, P);
  const double room = mem.capacity_bytes - mem.weights_bytes;
  out.max_batch = room > 0 ? static_cast<std::int64_t>(std::floor(room / per_seq)) * f.ep : 0;

}

void infer_details(const model::ModelConfig& m, const hw::System& sys, const InferenceConfig& cfg, InferenceResult& out) {
  const hw::ChipSpec& chip = sys.chip;
  const auto& f = cfg.forward;
  const double B = static_cast<double>(cfg.batch);
  const double steps = static_cast<double>(cfg.gen - 1);
  const auto& mem = out.memory;
  fill_rows(out.prefill_graph, chip, false, out.prefill_ops);
  fill_rows(out.decode_graph, chip, cfg.cuda_graphs, out.decode_ops);
  model::ParamCount pc = model::count_params(m);
  out.params = pc.total;
  out.active_params = pc.active;

  // Critical batch: a decode GEMM X[batch, hidden]·W[hidden, width/tp] in these dtypes turns
  // compute-bound (seed 003). A MoE expert sees batch·k/E of the tokens.
  {
    OpConfig op;
    op.kind = OpKind::matmul;
    op.k = m.hidden;
    const std::int64_t width = m.is_moe() ? m.moe.intermediate : m.intermediate;
    op.n = std::max<std::int64_t>(1, width / f.tp);
    op.a_dtype = f.precision.activation;
    DType w = f.precision.weight.value_or(m.quantized ? m.quant.dtype : m.weight_dtype);
    op.b_dtype = w;
    op.out_dtype = f.precision.activation;
    if (f.precision.compute) op.compute_dtype = f.precision.compute;
    hw::System one = sys;
    one.chip.launch_overhead_s = 0;  // the roofline crossing, not the launch floor
    ThresholdResult r = solve_threshold(op, one, SolveVar::m);
    double crit = r.found ? r.critical : 0;
    if (m.is_moe() && crit > 0) crit *= static_cast<double>(m.moe.experts) / static_cast<double>(m.moe.experts_per_token);
    out.critical_batch = crit;
  }

  // Launch overhead of one decode step, and what CUDA graphs save.
  out.launch_overhead_s = chip.launch_overhead_s;
  if (steps >= 1) {
    out.decode_launch_s = out.decode_last.launches * chip.launch_overhead_s;
    PhaseTimes with, without;
    const ops::Rates rates(chip);
    evaluate(out.decode_graph, rates, true, with);
    evaluate(out.decode_graph, rates, false, without);
    out.cuda_graphs_gain_s = without.t_realistic_s - with.t_realistic_s;
  }

  // Seed 001's closed form for one decode step.
  {
    auto& q = out.quick;
    const double N = out.chips;
    q.t_memory_s = mem.total_bytes / chip.main_bandwidth_Bps();
    DType cd = f.precision.compute.value_or(
        ops::default_compute_dtype(f.precision.activation, f.precision.weight.value_or(m.weight_dtype)));
    const double peak = chip.peak(hw::Unit::matrix, cd) * N;
    q.t_compute_s = peak > 0 ? 2 * B * pc.active / peak : 0;
    // 4 all-gathers per layer of the (B, D) activation; per chip of the N.
    const int link = std::max(0, sys.comm_link(static_cast<int>(N)));
    const double bw = chip.links.empty() ? 0 : chip.links[link].chip_bandwidth_Bps();
    q.t_network_s = (N > 1 && bw > 0) ? 4 * (N - 1) * B * static_cast<double>(m.hidden) * bytes(f.precision.activation) *
                                            static_cast<double>(m.layers) / bw
                                      : 0;
    q.t_lower_s = std::max({q.t_memory_s, q.t_compute_s, q.t_network_s});
    q.t_upper_s = q.t_memory_s + q.t_compute_s + q.t_network_s;
  }
}

}  // namespace ridgeline::analysis
