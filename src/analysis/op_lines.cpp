// The evaluation path's shared pieces (ridgeline/analysis/op_lines.hpp).
#include "ridgeline/analysis/op_lines.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ridgeline::analysis {

// Sum over j = 0..n-1 of max_i(a_i + b_i·j) for lines given at j = 0 (a) and j = n-1 (z):
// exact, by splitting [0, n-1] where the upper envelope changes line.
double sum_max_affine(const double* a, const double* z, int count, double n) noexcept {
  if (n <= 0) return 0;
  if (n == 1) return *std::max_element(a, a + count);
  // The max of affine functions is convex: a line that is the maximum at both ends is the
  // maximum in between (the usual case: one resource binds over the whole range).
  const int i0 = static_cast<int>(std::max_element(a, a + count) - a);
  const int i1 = static_cast<int>(std::max_element(z, z + count) - z);
  if (i0 == i1) return n * (a[i0] + z[i0]) / 2;
  double slope[kRealisticParts];
  for (int i = 0; i < count; ++i) slope[i] = (z[i] - a[i]) / (n - 1);
  // Breakpoints: pairwise crossings inside (0, n-1).
  double cuts[kRealisticParts * (kRealisticParts - 1) / 2];
  int nc = 0;
  for (int i = 0; i < count; ++i) {
    for (int k = i + 1; k < count; ++k) {
      const double ds = slope[i] - slope[k];
      if (ds == 0) continue;
      const double x = (a[k] - a[i]) / ds;
      if (x > 0 && x < n - 1) cuts[nc++] = x;
    }
  }
  for (int i = 1; i < nc; ++i) {  // insertion sort: at most 15 cuts
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
void evaluate(const model::Graph& g, const ops::Rates& rates, bool graphs, PhaseTimes& t) noexcept {
  PhaseTimes acc;
  for (int i = 0; i < g.op_count; ++i) accumulate(acc, op_times(g.ops[i].cost, rates, graphs), g.repeat(i), rates, g.ops[i].cls, g.ops[i].kernel);
  graph_launches(acc, rates, graphs, 1);
  finish(acc);
  t = acc;
}

// The line through an op's realistic parts at batches B1 and B2 (x1, x2); for a MoE expert
// GEMM the touched experts' weight reads are taken out first (they are not affine in B).
OpLine fit_line(const RealisticParts& x1, const RealisticParts& x2, double B1, double B2,
                const model::GraphOp& op1, const model::GraphOp& op2, const ops::Rates& r, double rep) noexcept {
  OpLine l;
  l.rep = rep;
  const ops::Rates::Achievable& a = r.achievable[static_cast<int>(op1.kernel)];
  l.mem_per_expert = op1.expert_bytes * r.s_per_byte[0] * a.inv_memory;
  // (Touched experts and GEMM padding, which the share adds to the memory and matrix parts,
  // are GEMMs': a class whose share adds its vector part, attention's, has neither.)
  l.overlap = a.overlap > 0.5 ? a.overlap : 0;
  RealisticParts y1 = x1, y2 = x2;
  // The experts touched as the tokens route them come out, to be added back at each point
  // (model::touched_experts); those every pass touches (GraphOp::touched_fixed) stay, a constant.
  const double t1 = op1.touched - op1.touched_fixed, t2 = op2.touched - op2.touched_fixed;
  y1[2] -= t1 * l.mem_per_expert;
  y2[2] -= t2 * l.mem_per_expert;
  y1[5] -= l.overlap * t1 * l.mem_per_expert;
  y2[5] -= l.overlap * t2 * l.mem_per_expert;
  for (int i = 0; i < kRealisticParts; ++i) {
    l.b[i] = (y2[i] - y1[i]) / (B2 - B1);
    l.a[i] = y1[i] - B1 * l.b[i];
  }
  return l;
}

OpLine fit_costs(const ops::OpCost& c1, const ops::OpCost& c2, double x1, double x2, const model::GraphOp& op1,
                 const model::GraphOp& op2, const ops::Rates& r, bool graphs, double rep) noexcept {
  const hw::KernelClass k = op1.kernel;
  // Row tiles: the line through the routed rows' work (the padded rows' is added at each x).
  const bool row_tiles = op1.row_tile_flops > 0 && x1 > 0;
  ops::OpCost d1 = c1, d2 = c2;
  if (row_tiles) d1.matrix_pad_flops -= op1.row_tile_pad, d2.matrix_pad_flops -= op2.row_tile_pad;
  ops::TimeParts p1 = op_times(d1, r, graphs).parts, p2 = op_times(d2, r, graphs).parts;
  const bool quantised = op1.quantised && r.sms > 0 && x1 > 0 && op1.gemm_m > 0;
  if (quantised) p1.matrix_pad = p2.matrix_pad = 0;  // the line holds the GEMM's own work; the tiling's is added at each x
  OpLine l = fit_line(realistic_parts(p1, r, k), realistic_parts(p2, r, k), x1, x2, op1, op2, r, rep);
  if (quantised) {
    l.gemm_rows_per_x = op1.gemm_m / x1;
    l.padding = ops::GemmPadding(op1.gemm_n, op1.gemm_k, r.sms, hw::gemm_split_for(r.gemm_split, k), r.achievable[static_cast<int>(k)].fill_k);
  }
  if (row_tiles) {
    l.row_tile_flops_per_x = op1.row_tile_flops * op1.gemm_m / x1;
    l.row_tile_min_x = op1.row_tile_min_rows * x1 / op1.gemm_m;
  }
  if (quantised || row_tiles) {
    l.pad_s_per_flop = r.s_per_flop[0][index(c1.matrix_dtype)] * r.achievable[static_cast<int>(k)].inv_matrix[index(c1.matrix_dtype)];
  }
  return l;
}

namespace {

struct Event {
  double x, da, ds;
};

// The part of `l` that is the highest at x (ties: the steeper).
int top_part(const OpLine& l, double x) noexcept {
  int cur = 0;
  for (int i = 1; i < kRealisticParts; ++i) {
    const double vi = l.a[i] + l.b[i] * x, vc = l.a[cur] + l.b[cur] * x;
    if (vi > vc || (vi == vc && l.b[i] > l.b[cur])) cur = i;
  }
  return cur;
}

// From part `cur` at x, the max of l's parts moves at each crossing to the steeper part
// crossed first; each move before `to` is an event. Returns the part at `to`.
int walk(const OpLine& l, int cur, double x, double to, Event* events, int& ne) noexcept {
  for (int moves = 0; moves < kRealisticParts - 1; ++moves) {
    int next = -1;
    double best = 0;
    for (int j = 0; j < kRealisticParts; ++j) {
      if (!(l.b[j] > l.b[cur])) continue;
      const double xj = std::max(x, (l.a[cur] - l.a[j]) / (l.b[j] - l.b[cur]));
      if (next < 0 || xj < best || (xj == best && l.b[j] > l.b[next])) next = j, best = xj;
    }
    if (next < 0 || !(best < to)) break;
    events[ne++] = {best, l.rep * (l.a[next] - l.a[cur]), l.rep * (l.b[next] - l.b[cur])};
    cur = next;
    x = best;
  }
  return cur;
}

}  // namespace

// Builds the envelope of Σ rep·max_i(a_i + b_i·B) for B >= lo over `lines` (none kept apart).
// Each op's max starts on its highest line at lo (ties: the steeper) and moves, at each
// crossing, to the steeper line crossed first; every move is an event that changes the
// sum's intercept and slope. A switch line's chosen option changes where the smallest of
// its options' times t0 + t1·B hands over to one of smaller slope (their minimum is concave:
// each hand-over goes to a flatter line): an event from the old option's current part to
// the new option's highest part. Events are sorted and accumulated into pieces.
void build_envelope(const OpLine* lines, int n, double lo, Envelope& env, const SwitchLine* switches, int ns) noexcept {
  std::array<Event, Envelope::kMaxPieces> events;
  int ne = 0;
  double A = 0, S = 0;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (int k = 0; k < n; ++k) {
    const OpLine& l = lines[k];
    const int cur = top_part(l, lo);
    A += l.rep * l.a[cur];
    S += l.rep * l.b[cur];
    walk(l, cur, lo, kInf, events.data(), ne);
  }
  ns = std::min(ns, Envelope::kMaxSwitches);
  for (int k = 0; k < ns; ++k) {
    const SwitchLine& w = switches[k];
    int opt = chosen_option(w, lo);
    int cur = top_part(w.lines[opt], lo);
    A += w.lines[opt].rep * w.lines[opt].a[cur];
    S += w.lines[opt].rep * w.lines[opt].b[cur];
    double x = lo;
    for (int hand = 0; hand < comm::kMaxOptions; ++hand) {
      // Where a flatter option's time first drops below the chosen one's.
      int next = -1;
      double at = kInf;
      for (int j = 0; j < w.count; ++j) {
        if (!(w.t1[j] < w.t1[opt])) continue;
        const double xj = std::max(x, (w.t0[j] - w.t0[opt]) / (w.t1[opt] - w.t1[j]));
        if (xj < at || (xj == at && next >= 0 && w.t1[j] < w.t1[next])) next = j, at = xj;
      }
      cur = walk(w.lines[opt], cur, x, at, events.data(), ne);
      if (next < 0 || at == kInf) break;
      const OpLine& from = w.lines[opt];
      const OpLine& to = w.lines[next];
      const int part = top_part(to, at);
      events[ne++] = {at, to.rep * to.a[part] - from.rep * from.a[cur], to.rep * to.b[part] - from.rep * from.b[cur]};
      opt = next, cur = part, x = at;
    }
  }
  std::sort(events.begin(), events.begin() + ne, [](const Event& p, const Event& q) { return p.x < q.x; });
  env.count = 0;
  env.x[0] = lo;
  env.a[0] = A;
  env.s[0] = S;
  env.count = 1;
  for (int e = 0; e < ne; ++e) {
    A += events[e].da;
    S += events[e].ds;
    if (events[e].x > env.x[env.count - 1]) ++env.count;  // a new piece (events at one x share it)
    env.x[env.count - 1] = events[e].x;
    env.a[env.count - 1] = A;
    env.s[env.count - 1] = S;
  }
}

double Envelope::at(double B) const noexcept {
  if (count == 0) return 0;
  // The last piece starting at or before B (the first for B below the range).
  const int k = std::max(0, static_cast<int>(std::upper_bound(x.begin(), x.begin() + count, B) - x.begin()) - 1);
  return a[k] + s[k] * B;
}

namespace {

// Where a collective's bytes, c1's at x1 and c2's at x2, reach `limit`.
double limit_x(const model::CollectiveOp& c1, const model::CollectiveOp& c2, double x1, double x2, double limit) noexcept {
  return x1 + (limit - c1.bytes) * (x2 - x1) / (c2.bytes - c1.bytes);
}

// An engine's all-reduce rule (CollectiveOp::custom_max): its own kernel, then NCCL's options (a
// finite limit), the bytes growing with x as every graph's do.
bool engine_rule(const model::CollectiveOp& c1, const model::CollectiveOp& c2, double x1, double x2) noexcept {
  const bool grows = (c2.bytes - c1.bytes) * (x2 - x1) > 0;
  return c1.custom_max > 0 && std::isfinite(c1.custom_max) && c2.custom_max == c1.custom_max && grows;
}

}  // namespace

bool fit_norm_switch(const model::Graph& g1, const model::Graph& g2, int i, double x1, double x2, const ops::Rates& r, bool graphs,
                     SwitchLine& out, double& at) noexcept {
  const model::GraphOp& op1 = g1.ops[i];
  const model::GraphOp& op2 = g2.ops[i];
  if (op1.collective < 0 || op2.collective < 0 || x2 == x1) return false;
  const model::CollectiveOp& c1 = g1.collectives[op1.collective];
  const model::CollectiveOp& c2 = g2.collectives[op2.collective];
  if (!c1.fused_norm || !c2.fused_norm || !engine_rule(c1, c2, x1, x2)) return false;
  out.count = 2;
  out.rep = g1.repeat(i);
  out.lines[0] = OpLine{};
  out.lines[0].rep = out.rep;
  model::GraphOp n1 = op1, n2 = op2;
  n1.kernel = n2.kernel = hw::KernelClass::norm;
  out.lines[1] = fit_costs(c1.norm, c2.norm, x1, x2, n1, n2, r, graphs, out.rep);
  // Nothing below x*, the norm's kernel from it: a choice line of slope 1 through 0 a billionth
  // of x* early (the all-reduce's own hand-over, fit_switch), against 0.
  at = limit_x(c1, c2, x1, x2, c1.custom_max) * (1 - 1e-9);
  out.t1[0] = 1;
  out.t0[0] = -at;
  out.t1[1] = out.t0[1] = 0;
  return true;
}

bool fit_switch(const model::Graph& g1, const model::Graph& g2, int i, double x1, double x2, const comm::Wiring& wr,
                const ops::Rates& r, bool graphs, SwitchLine& out) noexcept {
  const model::GraphOp& op1 = g1.ops[i];
  const model::GraphOp& op2 = g2.ops[i];
  if (op1.collective < 0 || op2.collective < 0 || x2 == x1) return false;
  const model::CollectiveOp& c1 = g1.collectives[op1.collective];
  const model::CollectiveOp& c2 = g2.collectives[op2.collective];
  // The bytes growing with x, as every graph's do.
  const bool grows = (c2.bytes - c1.bytes) * (x2 - x1) > 0;
  const bool engine = engine_rule(c1, c2, x1, x2);
  // DeepEP's (CollectiveOp::deepep_ll_max): its low-latency kernel on the pairs' bytes, then its
  // normal kernel on normal_share of them, each its all-to-all (direct).
  const bool deepep = c1.deepep_ll_max > 0 && std::isfinite(c1.deepep_ll_max) && c2.deepep_ll_max == c1.deepep_ll_max &&
                      c2.normal_share == c1.normal_share && grows;
  comm::Option opts[comm::kMaxOptions + 1];
  int n = 0;
  if (deepep) {
    opts[n++] = {c1.algo};
    opts[n++] = {c1.algo};
  } else {
    if (engine) opts[n++] = {comm::Algo::direct};
    n += comm::options(wr, c1.group, c1.kind, engine ? comm::Algo::automatic : c1.algo, opts + n);
  }
  if (n < 2 || n > comm::kMaxOptions) return false;
  out.count = n;
  out.rep = g1.repeat(i);
  model::GraphOp o1 = op1, o2 = op2;
  // An all-reduce with the norm after it in its kernel (CollectiveOp::fused_norm): the norm's
  // work in the engine's fused kernel; past its limit, NCCL's all-reduce alone, the norm a kernel
  // of its own (fit_norm_switch).
  const bool fused = c1.fused_norm && c2.fused_norm;
  for (int o = 0; o < n; ++o) {
    const double share = deepep && o == 1 ? c1.normal_share : 1;
    const comm::Priced p1 = comm::price(wr, c1.group, c1.kind, c1.bytes * share, c1.dtype, opts[o]);
    const comm::Priced p2 = comm::price(wr, c2.group, c2.kind, c2.bytes * share, c2.dtype, opts[o]);
    // As the graph holds it: in compact form.
    ops::OpCost k1, k2;
    if (!ops::OpCost::compact(p1.cost, k1) || !ops::OpCost::compact(p2.cost, k2)) return false;
    if (fused && !(engine && o > 0)) k1.add_work(c1.norm), k2.add_work(c2.norm);
    if (engine) o1.kernel = o2.kernel = o > 0 ? hw::KernelClass::collective : fused ? hw::KernelClass::allreduce_norm : hw::KernelClass::allreduce_custom;
    if (deepep) o1.kernel = o2.kernel = model::deepep_kernel(op1.kernel, c1.group, o == 1);
    out.lines[o] = fit_costs(k1, k2, x1, x2, o1, o2, r, graphs, out.rep);
    out.t1[o] = (p2.time_s - p1.time_s) / (x2 - x1);
    out.t0[o] = p1.time_s - out.t1[o] * x1;
  }
  if (engine || deepep) {
    // The choice is the engine's, not the fastest: its own kernel below the limit, at x* where
    // the bytes reach it, NCCL's fastest from there (DeepEP: its low-latency kernel, then its
    // normal one). Its choice line is made to cross NCCL's fastest at x* more steeply than any
    // of NCCL's lines (K > their slopes: below them all before x*, above after); its priced
    // line stays its own.
    const double xs = limit_x(c1, c2, x1, x2, engine ? c1.custom_max : c1.deepep_ll_max);
    double at = std::numeric_limits<double>::infinity(), steepest = 0;
    for (int o = 1; o < n; ++o) at = std::min(at, out.t0[o] + out.t1[o] * xs), steepest = std::max(steepest, std::abs(out.t1[o]));
    // A hair above at x* itself: from the limit on, NCCL (as the graph decides, bytes >= limit);
    // the hair hands over a billionth of the limit early, less than a byte at engines' limits.
    // DeepEP's low-latency kernel takes the limit itself (CollectiveOp::moved): a hair below.
    out.t1[0] = 4 * steepest + 1e-12;
    out.t0[0] = at * (deepep ? 1 - 1e-9 : 1 + 1e-9) - out.t1[0] * xs;
  }
  return true;
}

}  // namespace ridgeline::analysis
