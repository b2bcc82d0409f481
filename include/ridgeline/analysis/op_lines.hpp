#pragma once
/// The evaluation path's building blocks, shared by inference, the plan search and the
/// serving step model (docs/search.md#serving-speed, docs/serving.md#step-model): an op's
/// time parts on a chip, sums of them over a graph, and an op's realistic parts as lines in
/// one quantity (tokens, sequences, batch) with the convex envelope of their sum.
#include <array>
#include <cmath>

#include "ridgeline/model/graph.hpp"
#include "ridgeline/ops/estimate.hpp"
#include "ridgeline/ops/matmul.hpp"

namespace ridgeline::analysis {

/// One op's time parts and totals (one instance): the lean record of the evaluation path.
struct OpTimes {
  ops::TimeParts parts;
  double flops = 0;
  double bytes = 0;       ///< main memory
  double link_bytes = 0;  ///< all links
  double launches = 0;
};

/// Times of one forward pass (or their sum over decode steps), seconds.
struct PhaseTimes {
  double t_lower_s = 0;      ///< each kernel at max(math, memory, comm, launch), kernels in sequence
  double t_upper_s = 0;      ///< each kernel at the sum of its parts
  double t_realistic_s = 0;  ///< each kernel at its efficiency-scaled max
  double flops = 0;
  double bytes = 0;          ///< main memory
  double comm_bytes = 0;     ///< per chip, all links
  double launches = 0;
  /// Of t_realistic_s: what kernels cost beyond their roofline parts (each kernel's fixed
  /// time, hw::EfficiencySpec::overhead_s, and a K-looping class's K loops: ops::Rates::
  /// Achievable::fixed_s), and the latency steps of collectives (over the
  /// link efficiency): the step's floor and latency rather than its bandwidth or compute.
  double kernel_fixed_s = 0, link_latency_s = 0;
  std::array<double, 4> lower_by_bound_s;  ///< t_lower split by each kernel's bound (compute, memory, comm, launch)
  std::array<double, 6> lower_by_class_s;  ///< t_lower split by op class (model::OpClass order)
  ops::Bound bound = ops::Bound::compute;    ///< the bound holding the most time

  // Zeroed element by element: compilers turn a whole-object memset of this size into
  // `rep stos`, whose start-up cost showed in every evaluation.
  PhaseTimes() noexcept {
    for (double& t : lower_by_bound_s) t = 0;
    for (double& t : lower_by_class_s) t = 0;
  }
};

/// The time parts and totals of `c` (an ops::Cost or ops::OpCost); `graphs`: launched inside
/// a captured graph, so the kernel pays no launch of its own.
template <class C>
[[gnu::always_inline]] inline OpTimes op_times(const C& c, const ops::Rates& rates, bool graphs) noexcept {
  OpTimes o;
  o.parts = ops::time_parts(c, rates);
  if (graphs) o.parts.launch = 0;
  o.flops = c.total_flops();
  o.bytes = ops::main_traffic(c, rates);
  o.link_bytes = c.total_link_bytes();
  o.launches = graphs ? 0 : c.launches;
  return o;
}

/// Adds `r` instances of an op of class `cls` run as a kernel of class `k` to `t`.
[[gnu::always_inline]] inline void accumulate(PhaseTimes& t, const OpTimes& o, double r, const ops::Rates& rates,
                                              model::OpClass cls, hw::KernelClass k) noexcept {
  const double lower = o.parts.lower();
  t.t_lower_s += r * lower;
  t.t_upper_s += r * o.parts.upper(rates, k);
  const double realistic = o.parts.realistic(rates, k);
  t.t_realistic_s += r * realistic;
  // A kernel the host's launch holds up (eager, shorter than its launch) has no floor of its own.
  if (o.parts.launch < realistic) {
    const ops::Rates::Achievable& a = rates.achievable[static_cast<int>(k)];
    t.kernel_fixed_s += r * a.fixed_s(o.parts.kernels, o.parts.loop_k);
    t.link_latency_s += r * o.parts.comm_latency;
  }
  t.flops += r * o.flops;
  t.bytes += r * o.bytes;
  t.comm_bytes += r * o.link_bytes;
  t.launches += r * o.launches;
  t.lower_by_bound_s[static_cast<int>(o.parts.bound())] += r * lower;
  t.lower_by_class_s[static_cast<int>(cls)] += r * lower;
}

/// `passes` passes replayed as captured graphs cost one launch each, which the host issues
/// while the device runs the previous pass: the passes take at least those launches.
void graph_launches(PhaseTimes& t, const ops::Rates& rates, bool graphs, double passes) noexcept;
/// Sets t.bound to the bound holding the most time.
void finish(PhaseTimes& t) noexcept;
/// Every op of `g` on the chip, kernels one after another (`graphs`: one launch for the pass).
void evaluate(const model::Graph& g, const ops::Rates& rates, bool graphs, PhaseTimes& t) noexcept;

/// The parts whose max is the realistic time (ops::TimeParts::realistic): the class's fixed time
/// plus each of ops::TimeParts::at_efficiency's parts (matrix, vector, memory, comm), the
/// launch, and the fixed time plus the overlap part (the matrix part where the overlap never
/// binds: an envelope never moves to it, the same line).
inline constexpr int kRealisticParts = 6;
using RealisticParts = std::array<double, kRealisticParts>;
inline RealisticParts realistic_parts(const ops::TimeParts& p, const ops::Rates& r, hw::KernelClass k) noexcept {
  const ops::Rates::Achievable& a = r.achievable[static_cast<int>(k)];
  const ops::TimeParts::AtEfficiency s = p.at_efficiency(a);
  const double fixed = a.fixed_s(p.kernels, p.loop_k);
  return {fixed + s.matrix, fixed + s.vector, fixed + s.memory, fixed + s.comm, p.launch, fixed + s.overlap};
}

/// One op's realistic parts as a + b·x in a quantity x it is affine in, plus the memory
/// time per touched expert for MoE expert GEMMs (whose weight reads are not affine).
struct OpLine {
  RealisticParts a{}, b{};
  double mem_per_expert = 0;
  /// The class's overlap share where it binds (above 0.5), else 0 (the last part repeats the
  /// matrix part): what touched experts and padding add to the last part (GEMMs', whose
  /// partner is memory).
  double overlap = 0;
  double rep = 1;  ///< repeat count (layers)
  /// A quantised GEMM (model::GraphOp::quantised): its rows per unit of x (0: none), its
  /// tiling on the chip's multiprocessors, and the realistic seconds per FLOP of matrix work;
  /// its matrix part adds the tiling's padded work at each x (the lines hold the GEMM's own).
  double gemm_rows_per_x = 0, pad_s_per_flop = 0;
  ops::GemmPadding padding;
  /// Grouped expert GEMMs in whole row tiles (model::GraphOp::row_tile_flops): the matrix work
  /// a padded row costs times the rows per unit of x (0: none), and the x at or below which
  /// the kernel's layout has none (GraphOp::row_tile_min_rows). The lines hold the routed rows'
  /// work; the tiles' padded rows, x times this times (model::expert_row_tiles − 1) at the
  /// step's tokens, are added at each (row_tile_pad_flops), at pad_s_per_flop.
  double row_tile_flops_per_x = 0, row_tile_min_x = 0;
  /// Whether the line is kept out of envelopes (touched experts, a quantised GEMM or row tiles).
  bool apart() const noexcept { return mem_per_expert != 0 || gemm_rows_per_x > 0 || row_tile_flops_per_x > 0; }
};

/// A collective whose algorithm and protocol change with its size (comm::options): one line
/// per option, and the time each is chosen by, t0 + t1·x; the option with the smallest is the
/// one priced (the first of equal ones). The time is comm::price's, but for an engine's own
/// all-reduce (CollectiveOp::custom_max), whose line hands over to NCCL's at the engine's limit.
struct SwitchLine {
  std::array<OpLine, comm::kMaxOptions> lines{};
  std::array<double, comm::kMaxOptions> t0{}, t1{};
  int count = 0;
  double rep = 1;
};
/// Op i of g1 and g2 (at quantities x1 and x2) as a SwitchLine when it is a collective whose
/// terms the graph kept and that has more than one option; false otherwise (its fit_line
/// line is exact). `graphs`: launched inside a CUDA graph.
bool fit_switch(const model::Graph& g1, const model::Graph& g2, int i, double x1, double x2, const comm::Wiring& wr,
                const ops::Rates& r, bool graphs, SwitchLine& out) noexcept;

/// Op i of g1 and g2 (at x1 and x2) when it is an engine's all-reduce with the norm after it in
/// its kernel below the engine's limit (model::CollectiveOp::fused_norm): the norm's own kernel
/// after NCCL's past the limit, as a SwitchLine of two options, nothing below `at` and the
/// norm's line from it, `at` the x where the switch hands over (a billionth of the limit's x
/// early, as fit_switch's all-reduce does); false otherwise. fit_switch prices the all-reduce,
/// the norm's work in the fused kernel's line.
bool fit_norm_switch(const model::Graph& g1, const model::Graph& g2, int i, double x1, double x2, const ops::Rates& r, bool graphs,
                     SwitchLine& out, double& at) noexcept;

/// Σ rep·max(lines) over a set of ops, as pieces a + s·x starting at x (ascending).
struct Envelope {
  /// Switch lines kept in an envelope (each op of a graph has at most one).
  static constexpr int kMaxSwitches = 16;
  /// A max of 6 lines bends at most 5 times; a switch line changes option at most
  /// kMaxOptions - 1 times and bends at most 5 times on each option's line.
  static constexpr int kMaxPieces =
      (kRealisticParts - 1) * model::Graph::kMaxOps + 1 + kMaxSwitches * (comm::kMaxOptions * kRealisticParts - kRealisticParts);
  std::array<double, kMaxPieces> x{}, a{}, s{};
  int count = 0;
  double at(double v) const noexcept;
};

/// The line through an op's realistic parts p1 at x1 and p2 at x2 (op1, op2: the op in the two
/// graphs, for its touched experts), repeated `rep` times.
OpLine fit_line(const RealisticParts& p1, const RealisticParts& p2, double x1, double x2,
                const model::GraphOp& op1, const model::GraphOp& op2, const ops::Rates& r, double rep) noexcept;
/// The line through the realistic parts of an op of class op1.cls costing c1 at x1 and c2
/// at x2 (`graphs`: launched inside a CUDA graph), repeated `rep` times: fit_line of them.
OpLine fit_costs(const ops::OpCost& c1, const ops::OpCost& c2, double x1, double x2, const model::GraphOp& op1,
                 const model::GraphOp& op2, const ops::Rates& r, bool graphs, double rep) noexcept;
/// The envelope of Σ rep·max_i(a_i + b_i·x) for x >= lo over `lines` (none with touched
/// experts) and `switches` (at most Envelope::kMaxSwitches; each at the option it chooses at x).
void build_envelope(const OpLine* lines, int n, double lo, Envelope& env, const SwitchLine* switches = nullptr,
                    int ns = 0) noexcept;

/// A line's parts at x with `touched` experts, its GEMM's padded FLOPs given (0: none).
inline RealisticParts parts_at(const OpLine& l, double x, double touched, double pad_flops) noexcept {
  RealisticParts p;
  for (int i = 0; i < kRealisticParts; ++i) p[i] = l.a[i] + x * l.b[i];
  const double mem = touched * l.mem_per_expert, pad = l.pad_s_per_flop * pad_flops;
  p[2] += mem;
  p[0] += pad;
  p[5] = l.overlap > 0 ? p[5] + l.overlap * (mem + pad) : p[0];
  return p;
}
/// A line's padded row-tile FLOPs at x when the tiles compute `row_tiles` rows a routed row
/// (model::expert_row_tiles at the step's tokens; 0 without row tiles).
inline double row_tile_pad_flops(const OpLine& l, double x, double row_tiles) noexcept {
  return l.row_tile_flops_per_x > 0 && row_tiles > 1 && x > l.row_tile_min_x ? l.row_tile_flops_per_x * x * (row_tiles - 1) : 0;
}
/// A quantised GEMM's tile work (ops::GemmPadding::work) at `rows`, from `table` where it has
/// it: above 256 rows the work depends on the rows only through r = ⌈rows/128⌉, and
/// table[r − 3] holds it for r from 3 to count + 2 (fill_work_table); elsewhere p.work(rows).
inline double tabulated_work(const ops::GemmPadding& p, double rows, const double* table, int count) noexcept {
  if (rows > 256) {
    const double r = std::ceil(rows * (1.0 / 128));  // exact: a power of two
    if (r <= count + 2) return table[static_cast<int>(r) - 3];
  }
  return p.work(rows);
}
/// Fills `count` entries of `table` for tabulated_work.
inline void fill_work_table(const ops::GemmPadding& p, double* table, int count) noexcept {
  for (int r = 0; r < count; ++r) table[r] = p.work(128.0 * (r + 3));
}

/// The padded FLOPs of a line's quantised GEMM at x (0 for other lines).
inline double pad_flops_at(const OpLine& l, double x) noexcept {
  return l.gemm_rows_per_x > 0 ? l.padding.flops(x * l.gemm_rows_per_x) : 0;
}
/// A line's parts at x with `touched` experts.
inline RealisticParts parts_at(const OpLine& l, double x, double touched) noexcept {
  return parts_at(l, x, touched, pad_flops_at(l, x));
}
/// A line's realistic time (one instance) at x with `touched` experts, its GEMM's padded
/// FLOPs given.
inline double realistic_at(const OpLine& l, double x, double touched, double pad_flops) noexcept {
  const RealisticParts p = parts_at(l, x, touched, pad_flops);
  double m = p[0];
  for (int i = 1; i < kRealisticParts; ++i) m = p[i] > m ? p[i] : m;
  return m;
}
/// A line's realistic time (one instance) at x with `touched` experts.
inline double realistic_at(const OpLine& l, double x, double touched) noexcept {
  return realistic_at(l, x, touched, pad_flops_at(l, x));
}

/// The option a switch line chooses at x: the smallest t0 + t1·x, the first of equal ones.
inline int chosen_option(const SwitchLine& s, double x) noexcept {
  int best = 0;
  double t = s.t0[0] + s.t1[0] * x;
  for (int k = 1; k < s.count; ++k) {
    const double tk = s.t0[k] + s.t1[k] * x;
    if (tk < t) t = tk, best = k;
  }
  return best;
}
/// The realistic time (one instance) of the option chosen at x.
inline double realistic_at(const SwitchLine& s, double x) noexcept { return realistic_at(s.lines[chosen_option(s, x)], x, 0); }

/// Sum over j = 0..n-1 of max_i(a_i + b_i·j) for `count` (at most kRealisticParts) lines given at j = 0 (a)
/// and j = n-1 (z): exact, split where the maximum changes line.
double sum_max_affine(const double* a, const double* z, int count, double n) noexcept;

}  // namespace ridgeline::analysis
