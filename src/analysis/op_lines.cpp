// The evaluation path's shared pieces (ridgeline/analysis/op_lines.hpp).
#include "ridgeline/analysis/op_lines.hpp"

#include <algorithm>
#include <cmath>

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
  for (int i = 0; i < g.op_count; ++i) accumulate(acc, op_times(g.ops[i].cost, rates, graphs), g.repeat(i), rates, g.ops[i].cls);
  graph_launches(acc, rates, graphs, 1);
  finish(acc);
  t = acc;
}

// The line through an op's realistic parts at batches B1 and B2 (x1, x2); for a MoE expert
// GEMM the touched experts' weight reads are taken out first (they are not affine in B).
OpLine fit_line(const std::array<double, 5>& x1, const std::array<double, 5>& x2, double B1, double B2,
                const model::GraphOp& op1, const model::GraphOp& op2, const ops::Rates& r, double rep) noexcept {
  OpLine l;
  l.rep = rep;
  l.mem_per_expert =
      op1.expert_bytes * r.s_per_byte[0] * r.achievable[static_cast<int>(model::kernel_class(op1.cls))].inv_memory;
  std::array<double, 5> y1 = x1, y2 = x2;
  y1[2] -= op1.touched * l.mem_per_expert;
  y2[2] -= op2.touched * l.mem_per_expert;
  for (int i = 0; i < 5; ++i) {
    l.b[i] = (y2[i] - y1[i]) / (B2 - B1);
    l.a[i] = y1[i] - B1 * l.b[i];
  }
  return l;
}

// Builds the envelope of Σ rep·max_i(a_i + b_i·B) for B >= lo over `lines` (none kept apart).
// Each op's max starts on its highest line at lo (ties: the steeper) and moves, at each
// crossing, to the steeper line crossed first; every move is an event that changes the
// sum's intercept and slope. Events are sorted and accumulated into pieces.
void build_envelope(const OpLine* lines, int n, double lo, Envelope& env) noexcept {
  struct Event {
    double x, da, ds;
  };
  std::array<Event, Envelope::kMaxPieces> events;
  int ne = 0;
  double A = 0, S = 0;
  for (int k = 0; k < n; ++k) {
    const OpLine& l = lines[k];
    int cur = 0;
    for (int i = 1; i < 5; ++i) {
      const double vi = l.a[i] + l.b[i] * lo, vc = l.a[cur] + l.b[cur] * lo;
      if (vi > vc || (vi == vc && l.b[i] > l.b[cur])) cur = i;
    }
    A += l.rep * l.a[cur];
    S += l.rep * l.b[cur];
    double x = lo;
    for (int moves = 0; moves < 4; ++moves) {
      int next = -1;
      double best = 0;
      for (int j = 0; j < 5; ++j) {
        if (!(l.b[j] > l.b[cur])) continue;
        const double xj = std::max(x, (l.a[cur] - l.a[j]) / (l.b[j] - l.b[cur]));
        if (next < 0 || xj < best || (xj == best && l.b[j] > l.b[next])) next = j, best = xj;
      }
      if (next < 0) break;
      events[ne++] = {best, l.rep * (l.a[next] - l.a[cur]), l.rep * (l.b[next] - l.b[cur])};
      cur = next;
      x = best;
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

}  // namespace ridgeline::analysis
