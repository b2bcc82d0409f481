#include "ridgeline/analysis/inference.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ridgeline/analysis/threshold.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/model/routing.hpp"
#include "ridgeline/ops/matmul.hpp"

namespace ridgeline::analysis {

namespace {

using model::Graph;


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
  const hw::KernelClass k = g.ops[i].kernel;
  const RealisticParts s0 = realistic_parts(p0, rates, k), s1 = realistic_parts(p1, rates, k);
  t.t_lower_s += r * lower;
  t.t_realistic_s += r * sum_max_affine(s0.data(), s1.data(), kRealisticParts, n);
  t.t_upper_s += r * n * (p0.upper(rates, k) + p1.upper(rates, k)) / 2;
  t.flops += r * n * (a.flops + z.flops) / 2;
  t.bytes += r * n * (a.bytes + z.bytes) / 2;
  t.comm_bytes += r * n * (a.link_bytes + z.link_bytes) / 2;
  t.launches += r * n * a.launches;
  if (p1.launch < p1.realistic(rates, k)) {  // not held up by its launch (attention's only changing parts are its bytes and FLOPs)
    const ops::Rates::Achievable& ach = rates.achievable[static_cast<int>(k)];
    t.kernel_fixed_s += r * n * ach.fixed_s(p1.kernels, p1.loop_k);
    t.link_latency_s += r * n * (a.parts.comm_latency + z.parts.comm_latency) / 2;
  }
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
  into.kernel_fixed_s += k * t.kernel_fixed_s;
  into.link_latency_s += k * t.link_latency_s;
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
      accumulate(fixed, last, g.repeat(i), rates, g.ops[i].cls, g.ops[i].kernel);
      continue;
    }
    accumulate(last_att, last, g.repeat(i), rates, g.ops[i].cls, g.ops[i].kernel);
    const OpTimes first = attention_at(g, i, P + 1, rates, graphs);
    accumulate(first_att, first, g.repeat(i), rates, g.ops[i].cls, g.ops[i].kernel);
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
    rows[i].op = i;
    rows[i].e = ops::estimate(g.ops[i].cost.expand(), chip, g.ops[i].kernel, graphs);
  }
}

// Memory on one chip at batch B into `mem`; returns the largest batch that fits.
std::int64_t serving_memory(const model::ModelConfig& m, const model::ForwardConfig& f, const hw::ChipSpec& chip,
                            double utilization, double weights, double B, double P, double G, InferenceMemory& mem) noexcept {
  mem.weights_bytes = weights;
  mem.kv_bytes_per_token = model::kv_bytes_per_token(m, f);
  mem.kv_cache_bytes = model::kv_cache_bytes(m, f, B, P + G);
  const double seqs = B / static_cast<double>(f.ep);
  mem.activations_bytes = activation_bytes(m, f, seqs, seqs * P);
  mem.total_bytes = mem.weights_bytes + mem.kv_cache_bytes + mem.activations_bytes;
  mem.capacity_bytes = chip.main_capacity_bytes() * utilization;
  mem.fits = mem.total_bytes <= mem.capacity_bytes;
  // Largest batch: weights fixed, KV cache and activations grow with the batch (per EP group of sequences).
  const double per_seq = model::kv_cache_bytes(m, f, static_cast<double>(f.ep), P + G) + activation_bytes(m, f, 1, P);
  const double room = mem.capacity_bytes - mem.weights_bytes;
  return room > 0 ? static_cast<std::int64_t>(std::floor(room / per_seq)) * f.ep : 0;
}

// --- The serving curve -------------------------------------------------------------------

ServingCurve::Line fit_op(const Graph& g1, const Graph& g2, int i, double B1, double B2, const ops::Rates& r,
                          bool graphs) noexcept {
  return fit_costs(g1.ops[i].cost, g2.ops[i].cost, B1, B2, g1.ops[i], g2.ops[i], r, graphs, g1.repeat(i));
}

ServingCurve::Line fit_attention(const Graph& g1, const Graph& g2, int i, double kv, double B1, double B2,
                                 const ops::Rates& r, bool graphs) noexcept {
  const OpTimes o1 = attention_at(g1, i, kv, r, graphs), o2 = attention_at(g2, i, kv, r, graphs);
  const hw::KernelClass k = g1.ops[i].kernel;
  return fit_line(realistic_parts(o1.parts, r, k), realistic_parts(o2.parts, r, k), B1, B2, g1.ops[i], g2.ops[i], r,
                  g1.repeat(i));
}

}  // namespace

double weight_bytes(const Graph& g) noexcept {
  double w = 0;
  for (int i = 0; i < g.op_count; ++i) w += g.ops[i].weight_bytes * g.repeat(i);
  return w;
}

double draft_weight_bytes(const model::Speculation& s, const hw::System& sys, const model::ForwardConfig& f, model::Graph& g) noexcept {
  model::build_forward(*s.draft, f, sys, {static_cast<double>(f.ep), 1, 1}, g);
  double w = 0;
  for (int i = 0; i < g.op_count; ++i) {
    const model::Block b = g.ops[i].block;
    if (s.mtp && (b == model::Block::embedding || b == model::Block::head)) continue;
    w += g.repeat(i) * g.ops[i].weight_bytes;
  }
  return w;
}

double activation_bytes(const model::ModelConfig& m, const model::ForwardConfig& f, double seqs, double tokens) noexcept {
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

void prepare_serving_curve(const model::ModelConfig& m, const hw::System& sys, const InferenceConfig& cfg,
                           ServingCurve& c) noexcept {
  // Lines in B need every op affine in B: under the routing model (model::routing_imbalance)
  // the busiest chip's pairs are not, so the curve is fitted balanced (F = 1): a lower bound
  // of the exact latencies, which the plan search takes from infer_core for the plans it keeps.
  model::ForwardConfig f = cfg.forward;
  if (f.expert_imbalance == 0) f.expert_imbalance = 1;
  const ops::Rates rates(sys.chip);
  const double ep = static_cast<double>(f.ep), P = static_cast<double>(cfg.prompt), G = static_cast<double>(cfg.gen);
  const double B1 = ep, B2 = 2 * ep;
  c.prompt = P;
  c.gen = G;
  c.steps = G - 1;
  c.ep = ep;
  c.ep_size = static_cast<double>(f.ep_size());
  c.moe = m.is_moe();
  c.expert_tiles = f.expert_tiles;
  c.expert_imbalance = model::routing_imbalance(m, f).at(1);
  c.model = &m;
  c.cuda_graphs = cfg.cuda_graphs;
  c.launch_s = rates.launch_s;
  c.chips = static_cast<double>(f.tp * f.ep);
  c.capacity_bytes = sys.chip.main_capacity_bytes() * cfg.memory_utilization;

  Graph& p1 = c.prefill_graph;
  Graph& p2 = c.scratch_prefill;
  model::build_forward(m, f, sys, {B1, P, P}, p1);
  c.expert_reads = model::expert_reads(p1);
  model::build_forward(m, f, sys, {B2, P, P}, p2);
  // Ops with lines go into the envelope; MoE expert GEMMs (not affine in B) are kept apart.
  std::array<ServingCurve::Line, Graph::kMaxOps> lines;
  int nl = 0;
  c.prefill_count = c.prefill_switch_count = c.fixed_switch_count = 0;
  const comm::Wiring wr = model::collective_wiring(sys, f);
  std::array<SwitchLine, Envelope::kMaxSwitches> switches;  // scratch: the prefill's, then the decode's
  for (int i = 0; i < p1.op_count; ++i) {
    if (c.prefill_switch_count < Envelope::kMaxSwitches &&
        fit_switch(p1, p2, i, B1, B2, wr, rates, false, switches[c.prefill_switch_count])) {
      ++c.prefill_switch_count;
      continue;
    }
    const ServingCurve::Line l = fit_op(p1, p2, i, B1, B2, rates, false);
    (l.apart() ? c.prefill[c.prefill_count++] : lines[nl++]) = l;
  }
  build_envelope(lines.data(), nl, B1, c.prefill_sum, switches.data(), c.prefill_switch_count);

  InferenceMemory mem1, mem2;
  const double w = weight_bytes(p1);
  c.max_batch = serving_memory(m, f, sys.chip, cfg.memory_utilization, w, B1, P, G, mem1);
  serving_memory(m, f, sys.chip, cfg.memory_utilization, w, B2, P, G, mem2);
  c.memory1 = (mem2.total_bytes - mem1.total_bytes) / (B2 - B1);
  c.memory0 = mem1.total_bytes - B1 * c.memory1;

  c.fixed_count = c.attention_count = 0;
  c.fixed_sum.count = 0;
  if (c.steps < 1) return;
  Graph& d1 = c.decode_graph;
  Graph& d2 = c.scratch_decode;
  model::build_forward(m, f, sys, {B1, 1, P + c.steps}, d1);
  model::build_forward(m, f, sys, {B2, 1, P + c.steps}, d2);
  const double window = static_cast<double>(m.sliding_window);
  nl = 0;
  for (int i = 0; i < d1.op_count; ++i) {
    if (d1.ops[i].attention < 0) {
      if (c.fixed_switch_count < Envelope::kMaxSwitches &&
          fit_switch(d1, d2, i, B1, B2, wr, rates, cfg.cuda_graphs, switches[c.fixed_switch_count])) {
        ++c.fixed_switch_count;
        continue;
      }
      const ServingCurve::Line l = fit_op(d1, d2, i, B1, B2, rates, cfg.cuda_graphs);
      (l.apart() ? c.fixed[c.fixed_count++] : lines[nl++]) = l;
      continue;
    }
    // The pieces decode_phase sums (split at a sliding window inside the range).
    auto piece = [&](double from, double to, double n) {
      ServingCurve::Piece& pc = c.attention[c.attention_count++];
      pc.first = fit_attention(d1, d2, i, from, B1, B2, rates, cfg.cuda_graphs);
      pc.last = fit_attention(d1, d2, i, to, B1, B2, rates, cfg.cuda_graphs);
      pc.steps = n;
    };
    if (window > P + 1 && window < P + c.steps) {
      piece(P + 1, window, window - P);
      piece(window + 1, P + c.steps, c.steps - (window - P));
    } else {
      piece(P + 1, P + c.steps, c.steps);
    }
  }
  build_envelope(lines.data(), nl, B1, c.fixed_sum, switches.data(), c.fixed_switch_count);
  // The decode's GEMMs are priced at every batch up to the largest that fits, a few batches
  // to each ⌈rows/128⌉: their tile work is tabulated once.
  int used = 0;
  for (int i = 0; i < c.fixed_count; ++i) {
    const ServingCurve::Line& l = c.fixed[i];
    const double rows = static_cast<double>(c.max_batch) * l.gemm_rows_per_x;
    const double want = l.gemm_rows_per_x > 0 && rows > 256 ? std::ceil(rows * (1.0 / 128)) - 2 : 0;
    const int n = static_cast<int>(std::min(want, static_cast<double>(ServingCurve::kPadTable - used)));
    c.fixed_pad_first[i] = used;
    c.fixed_pad_count[i] = n;
    fill_work_table(l.padding, c.fixed_pad.data() + used, n);
    used += n;
  }
}

ServingPoint serving_at(const ServingCurve& c, double B) noexcept {
  ServingPoint out;
  // Each line's time is worked out on its own, then they are added in order: a running sum
  // through the loop made every line wait for the one before.
  std::array<double, model::Graph::kMaxOps> t;
  const double touched_prefill = c.moe ? model::expert_weight_reads(*c.model, c.ep_size, B * c.prompt, c.expert_reads) : 0;
  // Experts' rows in whole tiles (the lines that have them: OpLine::row_tile_flops_per_x).
  const auto row_tiles = [&](double tokens) {
    return c.moe ? model::expert_row_tiles(*c.model, tokens, c.expert_imbalance, c.expert_tiles) : 1;
  };
  const double tiles_prefill = row_tiles(B * c.prompt);
  for (int i = 0; i < c.prefill_count; ++i) {
    const ServingCurve::Line& l = c.prefill[i];
    t[i] = l.rep * realistic_at(l, B, touched_prefill, pad_flops_at(l, B) + row_tile_pad_flops(l, B, tiles_prefill));
  }
  double ttft = c.prefill_sum.at(B);
  for (int i = 0; i < c.prefill_count; ++i) ttft += t[i];
  double decode = 0;
  if (c.steps >= 1) {
    const double touched_decode = c.moe ? model::expert_weight_reads(*c.model, c.ep_size, B, c.expert_reads) : 0;
    const double tiles_decode = row_tiles(B);
    for (int i = 0; i < c.fixed_count; ++i) {
      const ServingCurve::Line& l = c.fixed[i];
      const double rows = B * l.gemm_rows_per_x;
      const double pad = l.gemm_rows_per_x > 0
                             ? l.padding.from_work(rows, tabulated_work(l.padding, rows, c.fixed_pad.data() + c.fixed_pad_first[i], c.fixed_pad_count[i]))
                             : 0;
      t[i] = l.rep * realistic_at(l, B, touched_decode, pad + row_tile_pad_flops(l, B, tiles_decode));
    }
    double step = c.fixed_sum.at(B);
    for (int i = 0; i < c.fixed_count; ++i) step += t[i];
    for (int i = 0; i < c.attention_count; ++i) {
      const ServingCurve::Piece& pc = c.attention[i];
      const RealisticParts a = parts_at(pc.first, B, 0), z = parts_at(pc.last, B, 0);
      decode += pc.first.rep * sum_max_affine(a.data(), z.data(), kRealisticParts, pc.steps);
    }
    decode += c.steps * step;
    if (c.cuda_graphs) decode = std::max(decode, c.steps * c.launch_s);
  }
  out.ttft_s = ttft;
  out.e2e_s = ttft + decode;
  out.tpot_s = c.steps >= 1 ? decode / c.steps : 0;
  out.output_tokens_per_s = out.e2e_s > 0 ? B * c.gen / out.e2e_s : 0;
  out.memory_bytes = c.memory0 + B * c.memory1;
  out.fits = out.memory_bytes <= c.capacity_bytes;
  return out;
}

void validate(const model::ModelConfig& m, const hw::System& sys, const InferenceConfig& cfg) {
  model::validate(m, cfg.forward);
  auto positive = [](std::int64_t v, const char* flag, std::int64_t max) {
    if (v < 1 || v > max) throw InputError(fmt::format("{}: {} is out of range: expected 1 to {}", flag, v, max));
  };
  positive(cfg.batch, "--batch", std::int64_t{1} << 24);
  if (!(cfg.memory_utilization > 0 && cfg.memory_utilization <= 1)) {
    throw InputError(fmt::format("--memory-utilization: {} is out of range: expected more than 0 and at most 1", cfg.memory_utilization));
  }
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
  comm::check_algo(sys.chip, cfg.forward.algo);
  model::validate(m, cfg.spec);
  if (cfg.spec.on()) {
    try {
      model::validate(*cfg.spec.draft, cfg.forward);
    } catch (const InputError& e) {
      throw InputError(fmt::format("--draft {}: {}", cfg.spec.draft->name, e.what()));
    }
  }
}

namespace {

// A decode step of `batch` sequences, `q` tokens each at context `kv` (with them), of `m`.
double decode_step_s(const model::ModelConfig& m, const hw::System& sys, const InferenceConfig& cfg, double q, double kv,
                     model::Graph& g) {
  model::StepMix mix;
  mix.add_decode(kv, static_cast<double>(m.sliding_window), q);
  mix.scale(static_cast<double>(cfg.batch));
  model::build_forward(m, cfg.forward, sys, {1, 1, 1, &mix}, g);
  PhaseTimes t;
  evaluate(g, ops::Rates(sys.chip), cfg.cuda_graphs, t);
  return t.t_realistic_s;
}

void speculative_decode(const model::ModelConfig& m, const hw::System& sys, const InferenceConfig& cfg, InferenceResult& out) {
  SpeculativeDecode& s = out.spec;
  const model::Speculation& sp = cfg.spec;
  const model::ModelConfig& dm = *sp.draft;
  const double P = static_cast<double>(cfg.prompt), G = static_cast<double>(cfg.gen), k = static_cast<double>(sp.k);
  s.tokens_per_step = model::tokens_per_step(sp);
  s.steps = (G - 1) / s.tokens_per_step;
  auto g = std::make_unique<model::Graph>();
  // The draft's k passes after c cached: the first at c + 1, the other k - 1 at their mean c + 1 + k/2.
  auto draft = [&](double c) { return decode_step_s(dm, sys, cfg, 1, c + 1, *g) + (k - 1) * decode_step_s(dm, sys, cfg, 1, c + 1 + k / 2, *g); };
  // The first step verifies after the prompt; the last after the prompt and the tokens
  // emitted in all the steps before it, (steps - 1)·tokens_per_step after the first.
  const double c_first = P, c_last = P + std::max(0.0, s.steps - 1) * s.tokens_per_step;
  s.verify_first_s = decode_step_s(m, sys, cfg, k + 1, c_first + k + 1, *g);
  s.verify_last_s = decode_step_s(m, sys, cfg, k + 1, c_last + k + 1, *g);
  s.draft_first_s = draft(c_first);
  s.draft_last_s = draft(c_last);
  model::build_forward(dm, cfg.forward, sys, {static_cast<double>(cfg.batch), P, P}, *g);
  PhaseTimes pre;
  evaluate(*g, ops::Rates(sys.chip), false, pre);
  s.draft_prefill_s = pre.t_realistic_s;
  // Each op's time is linear in the context between two straight pieces: the mean of the
  // first and last steps (exact while no op changes bound over the generation).
  const double decode = s.steps * (s.verify_first_s + s.verify_last_s + s.draft_first_s + s.draft_last_s) / 2;
  s.ttft_s = out.ttft_s + s.draft_prefill_s;
  s.e2e_s = s.ttft_s + decode;
  s.tpot_s = G > 1 ? decode / (G - 1) : 0;
  s.output_tokens_per_s = s.e2e_s > 0 ? static_cast<double>(cfg.batch) * G / s.e2e_s : 0;
  s.speedup = s.tpot_s > 0 ? out.tpot_s / s.tpot_s : 0;
  // Break-even: tokens per step equal to a step's cost in plain steps.
  const double step = (s.verify_first_s + s.verify_last_s + s.draft_first_s + s.draft_last_s) / 2;
  const auto even = out.tpot_s > 0 ? model::break_even_accept(sp.k, step / out.tpot_s) : std::nullopt;
  s.break_even = even.has_value();
  s.break_even_accept = even.value_or(1);
  // Memory: the draft's weights (an MTP layer shares the embedding and head) and its cache.
  s.draft_weights_bytes = draft_weight_bytes(sp, sys, cfg.forward, *g);
  s.draft_kv_cache_bytes = model::kv_cache_bytes(dm, cfg.forward, static_cast<double>(cfg.batch), P + G);
  s.fits = out.memory.total_bytes + s.draft_weights_bytes + s.draft_kv_cache_bytes <= cfg.memory_utilization * out.memory.capacity_bytes;
}

}  // namespace

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
  // The tokens routed over the expert-parallel chips: every group's (B in all).
  const model::RoutingImbalance routing = model::routing_imbalance(m, f);
  const bool ep_moe = m.is_moe() && f.ep_size() > 1;
  out.expert_imbalance_prefill = ep_moe ? routing.at(B * P) : 0;
  out.expert_imbalance_decode = ep_moe ? routing.at(B) : 0;
  out.routing_model = ep_moe && routing.model();
  out.routing_measured = out.routing_model && routing.measured;

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

  out.max_batch = serving_memory(m, f, chip, cfg.memory_utilization, weight_bytes(out.prefill_graph), B, P, G, out.memory);

}

std::array<double, hw::kKernelClassCount> realistic_by_class(const Graph& g, const std::array<OpRow, Graph::kMaxOps>& rows) noexcept {
  std::array<double, hw::kKernelClassCount> by{};
  for (int i = 0; i < g.op_count; ++i) by[static_cast<std::size_t>(g.ops[i].kernel)] += g.repeat(i) * rows[static_cast<std::size_t>(i)].e.t_realistic_s;
  return by;
}

void infer_details(const model::ModelConfig& m, const hw::System& sys, const InferenceConfig& cfg, InferenceResult& out) {
  const hw::ChipSpec& chip = sys.chip;
  const auto& f = cfg.forward;
  const double B = static_cast<double>(cfg.batch);
  const double steps = static_cast<double>(cfg.gen - 1);
  const auto& mem = out.memory;
  fill_rows(out.prefill_graph, chip, false, out.prefill_ops);
  fill_rows(out.decode_graph, chip, cfg.cuda_graphs, out.decode_ops);
  out.prefill_by_class_s = realistic_by_class(out.prefill_graph, out.prefill_ops);
  out.decode_last_by_class_s = realistic_by_class(out.decode_graph, out.decode_ops);
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
    DType w = f.precision.weight.value_or(m.checkpoint_dtype());
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
    const DType cd = model::gemm_dtypes(m, f, chip).dense;
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
  out.spec = {};
  if (cfg.spec.on() && cfg.gen > 1) speculative_decode(m, sys, cfg, out);
}

}  // namespace ridgeline::analysis
