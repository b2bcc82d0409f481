#pragma once
/// A Cost on a chip: the time of each resource, the bounds, what binds.
#include <array>
#include <string>
#include <string_view>

#include "ridgeline/hw/chip.hpp"
#include "ridgeline/ops/cost.hpp"

namespace ridgeline::ops {

/// The resource whose time is largest.
enum class Bound : std::uint8_t { compute, memory, comm, launch };
std::string_view name(Bound b) noexcept;

/// Times in seconds; see docs/cost-model.md#estimate for every formula.
struct Estimate {
  double t_matrix_s = 0;  ///< matrix-unit FLOPs over their dense peaks
  double t_matrix_pad_s = 0;  ///< a GEMM's quantisation (Cost::matrix_pad_flops) at the peak: in realistic and upper, not lower
  double t_vector_s = 0;  ///< vector-unit FLOPs over their peaks
  double t_math_s = 0;    ///< max(t_matrix, t_vector): the two units can run concurrently
  std::array<double, hw::kMaxMemoryLevels> t_memory_level_s{};  ///< bytes / bandwidth, per level
  double t_memory_s = 0;  ///< the slowest level
  int memory_level = 0;   ///< index of that level
  std::array<double, hw::kMaxLinks> t_link_s{};  ///< bytes / bandwidth + steps * latency, per link
  double t_comm_s = 0;    ///< the slowest link
  int link = -1;          ///< index of that link (-1 without communication)
  double t_launch_s = 0;  ///< launches * launch overhead
  double t_host_s = 0;    ///< the host's time per call that the device waits for (add_host_time): in every bound
  bool host_longer = false;  ///< add_host_time: the host's time per call exceeds the device's perfect-overlap time
  double t_lower_s = 0;   ///< max of math, memory, comm, launch: perfect overlap
  double t_upper_s = 0;   ///< no overlap at the achievable rates: each part over its efficiency, summed
  double t_sum_at_peak_s = 0;  ///< t_matrix + t_vector + t_memory + t_comm + t_launch (seed 003's upper bound, at peak)
  double t_realistic_s = 0;  ///< overlap at the achievable rates: max of each part over its efficiency
  Bound bound = Bound::compute;
  hw::Unit compute_unit = hw::Unit::matrix;  ///< unit with most FLOPs
  DType compute_dtype = DType::bf16;         ///< dtype with most FLOPs on that unit
  double flops = 0;                          ///< all FLOPs
  double main_bytes = 0;                     ///< main-memory bytes moved (with write_allocate_bytes)
  double write_allocate_bytes = 0;           ///< of main_bytes, lines read for ownership before stores (chips whose stores allocate)
  double intensity_flops_per_byte = 0;       ///< flops / main_bytes (0 without bytes)
  double ridge_flops_per_byte = 0;           ///< peak(compute unit, dtype) / main bandwidth
  double peak_flops_per_s = 0;               ///< peak of compute unit and dtype
  double attained_flops_per_s = 0;           ///< FLOPs of the compute unit and dtype / t_lower (what that roof bounds)
  double attained_total_flops_per_s = 0;     ///< all FLOPs / t_lower (matrix and vector units together)
  double fraction_of_peak = 0;               ///< FLOPs of the compute unit and dtype / t_lower / their peak
  bool supported = true;                     ///< false when a dtype has FLOPs but no peak
  /// The achievable fractions the realistic and upper times applied (the kernel class's, and
  /// for comm its link's own where the chip file gives one) and the fixed time of its kernels
  /// (the class's per kernel, times the op's kernels, and its K-loop time a column times the
  /// columns its GEMMs loop over: Rates::Achievable::fixed_s; k_loop_s that time a column).
  struct Applied {
    double matrix = 1, vector = 1, memory = 1, link = 1, overhead_s = 0;
    double overlap = 0.5;  ///< the share of matrix + its partner the kernel takes at least (0.5: never binds)
    bool overlap_vector = false;  ///< the partner is the vector part, not memory (hw::overlaps_vector)
    double k_loop_s = 0;  ///< the class's K-loop time a column of K (0: none), in overhead_s
  } applied;
};

/// A chip's rates as reciprocals, computed once per evaluation so that hot loops multiply
/// instead of divide (a division costs several times a multiplication; an inference
/// evaluation would otherwise do a thousand of them).
struct Rates {
  /// Seconds per FLOP of each unit and dtype; infinite where the unit lacks the dtype.
  std::array<std::array<double, kDTypeCount>, hw::kUnitCount> s_per_flop{};
  /// Seconds per byte at each Cost memory level; a level the chip does not describe is
  /// charged to its innermost level; 0 when the chip has no memory at all.
  std::array<double, hw::kMaxMemoryLevels> s_per_byte{};
  /// Seconds per byte over each link (all its physical links), and per message step.
  std::array<double, hw::kMaxLinks> s_per_link_byte{}, link_latency_s{};
  /// 1 / the fraction of each link collectives reach (LinkSpec::efficiency), 0 where the link
  /// has none (the kernel class's figure applies); the same for in-switch reductions.
  std::array<double, hw::kMaxLinks> inv_link_efficiency{};
  double inv_reduction_efficiency = 0;
  /// 1 where a store to a line not read first reads the line (ChipSpec::write_allocate), else 0:
  /// main-memory traffic is bytes + store_reads x stored bytes.
  double store_reads = 0;
  int links = 0;          ///< links the chip has; traffic on any other is infinitely slow
  /// What a special function (exp) costs beyond the vector FLOP it is counted as: 1 /
  /// special_function_rate less the fp32 vector unit's time per FLOP (0 without a rate).
  double special_extra_s = 0;
  double launch_s = 0;    ///< per kernel launch
  int sms = 0;            ///< the chip's multiprocessors (hw::ChipSpec::sms): GEMM tiling
  hw::GemmSplit gemm_split = hw::GemmSplit::split_k;  ///< how few tiles are spread over them (hw::ChipSpec::gemm_split)
  /// A kernel class's achievable rates for the realistic time: 1 / fraction of each peak
  /// (hw::EfficiencySpec, the class's figure where the chip file gives one) and its fixed
  /// time per kernel.
  struct Achievable {
    /// Per dtype of the matrix part: the gemm class's from the chip's measured matmul rates
    /// (ChipSpec::matmul_achievable_flops_per_s) where it has them.
    std::array<double, kDTypeCount> inv_matrix{};
    double inv_vector = 1, inv_memory = 1, inv_link = 1;
    double overhead_s = 0;
    /// The class has a link fraction of its own (a kernel curve's fit, e.g. the engines'
    /// all-reduce): it replaces the link's own efficiency, which is NCCL's.
    bool own_link = false;
    /// The share of the matrix part and its partner's added that a kernel takes at least
    /// (hw::ClassEfficiency::overlap); 0.5 never binds. The partner is the vector part for
    /// attention, memory for the others (hw::overlaps_vector).
    double overlap = 0.5;
    bool overlap_vector = false;
    /// The columns of K each tile of the class's GEMMs costs beyond its own (hw::
    /// ClassEfficiency::fill_k, the class's own; 0: none).
    double fill_k = 0;
    /// Seconds a column of K of a tile's K loop takes at least (hw::ClassEfficiency::k_loop_s,
    /// the class's own; 0: none): times TimeParts::loop_k, a fixed time.
    double k_loop_s = 0;
    /// The class's fixed time for an op of `kernels` kernels looping over `loop_k` columns of K.
    double fixed_s(double kernels, double loop_k) const noexcept { return overhead_s * kernels + k_loop_s * loop_k; }
  };
  std::array<Achievable, hw::kKernelClassCount> achievable{};

  Rates() = default;  ///< all zero: assign a chip's before use
  /// The chip's rates; with `pdl`, the classes an engine launches with programmatic dependent
  /// launch (hw::pdl_class) lose the part of each kernel's fixed time it hides: the chip's
  /// pdl_overlap_s, at most its kernel boundary (docs/cost-model.md#pdl).
  explicit Rates(const hw::ChipSpec& chip, bool pdl = false) noexcept;
};

/// The five times whose max, sum and efficiency-scaled max make an op's lower, upper and
/// realistic time, in seconds: the lean core of `estimate` for hot loops.
struct TimeParts {
  double matrix = 0;  ///< t_matrix
  double vector = 0;  ///< t_vector
  double memory = 0;  ///< slowest memory level
  double comm = 0;    ///< slowest link
  double launch = 0;  ///< launches x overhead
  /// The kernels the op runs (Cost::launches, at least 1): each pays its class's fixed time on
  /// the device (docs/cost-model.md#kernel-boundaries), as a torch-native op of several
  /// kernels does (vLLM 0.8's RoPE of MLA, 16).
  double kernels = 1;
  /// The kernels of an op of `launches` (0 or 1: one, its fixed time paid once).
  static constexpr double kernels_of(double launches) noexcept { return launches > 1 ? launches : 1; }
  double comm_latency = 0;  ///< of comm: the fixed costs (latency steps, a protocol's per-call cost)
  /// A GEMM's tile and wave quantisation (Cost::matrix_pad_flops) at the matrix peak: matrix
  /// work the realistic and upper times add to `matrix`; the lower bound leaves it out.
  double matrix_pad = 0;
  /// Main-memory time beyond the bytes (Cost::main_pad_bytes) at the bandwidth: time the
  /// realistic and upper times add to `memory`; the lower bound leaves it out.
  double memory_pad = 0;
  /// Columns of K the op's GEMM kernels loop over (Cost::loop_k): the class's K-loop time a
  /// column is a fixed time of the realistic and upper times.
  double loop_k = 0;
  /// The dtype of the matrix part (of most of its time where it mixes dtypes): which
  /// achievable matrix rate applies (Rates::Achievable::inv_matrix).
  std::uint8_t matrix_dtype = 0;
  /// 1 / the achievable fraction of the comm part's own link (Rates::inv_link_efficiency);
  /// 0: the kernel class's.
  double comm_inv = 0;
  /// 1 / the comm part's achievable fraction: its link's own, else the class's.
  double inv_comm(const Rates::Achievable& a) const noexcept { return comm_inv > 0 && !a.own_link ? comm_inv : a.inv_link; }
  /// The comm part at the achievable rate: an efficiency is a fraction of the bandwidth, so
  /// it scales the bytes' time, not the fixed costs.
  double comm_realistic(const Rates::Achievable& a) const noexcept {
    return comm_latency + (comm - comm_latency) * inv_comm(a);
  }
  double lower() const noexcept {
    double m = matrix > vector ? matrix : vector;
    if (memory > m) m = memory;
    if (comm > m) m = comm;
    if (launch > m) m = launch;
    return m;
  }
  /// No overlap at the achievable rates: the class's fixed time and each part over its
  /// efficiency, summed. Always at least realistic(), which overlaps the same parts.
  double upper(const Rates& r, hw::KernelClass k = hw::KernelClass::other) const noexcept {
    const Rates::Achievable& a = r.achievable[static_cast<int>(k)];
    return a.fixed_s(kernels, loop_k) + (matrix + matrix_pad) * a.inv_matrix[matrix_dtype] + vector * a.inv_vector +
           (memory + memory_pad) * a.inv_memory + comm_realistic(a) + launch;
  }
  /// Seed 003's upper bound: the parts at their peaks, summed.
  double sum_at_peak() const noexcept { return matrix + vector + memory + comm + launch; }
  /// The realistic time's parts before the class's fixed time: each part over its efficiency
  /// (matrix, vector, memory; comm as comm_realistic, its fixed costs unscaled) and the class's
  /// overlap share of the matrix part and its partner's added (memory, or vector where the class
  /// overlaps it, hw::overlaps_vector). Where the overlap never binds (a share of 0.5 or less: it
  /// is then under the larger of the two) the last is the matrix part, so a line fitted through
  /// the parts (analysis::OpLine) never moves to it.
  struct AtEfficiency {
    double matrix, vector, memory, comm, overlap;
  };
  AtEfficiency at_efficiency(const Rates::Achievable& a) const noexcept {
    const double m = (matrix + matrix_pad) * a.inv_matrix[matrix_dtype], v = vector * a.inv_vector,
                 b = (memory + memory_pad) * a.inv_memory;
    return {m, v, b, comm_realistic(a), a.overlap > 0.5 ? a.overlap * (m + (a.overlap_vector ? v : b)) : m};
  }
  /// Overlap at the achievable rates: the class's fixed time plus the largest of
  /// at_efficiency(), or the launch when the host is slower.
  double realistic(const Rates& r, hw::KernelClass k = hw::KernelClass::other) const noexcept {
    const Rates::Achievable& a = r.achievable[static_cast<int>(k)];
    const AtEfficiency p = at_efficiency(a);
    double m = p.matrix;
    if (p.overlap > m) m = p.overlap;
    if (p.vector > m) m = p.vector;
    if (p.memory > m) m = p.memory;
    if (p.comm > m) m = p.comm;
    m += a.fixed_s(kernels, loop_k);
    return launch > m ? launch : m;
  }
  /// The largest part; ties go to compute, then memory, then comm.
  Bound bound() const noexcept {
    double best = matrix > vector ? matrix : vector;
    Bound b = Bound::compute;
    if (memory > best) best = memory, b = Bound::memory;
    if (comm > best) best = comm, b = Bound::comm;
    if (launch > best) b = Bound::launch;
    return b;
  }
  TimeParts& operator*=(double k) noexcept {
    matrix *= k, vector *= k, memory *= k, comm *= k, launch *= k, matrix_pad *= k, memory_pad *= k;
    return *this;
  }
};

/// Bytes moved at main memory: the op's bytes and, where stores allocate, the lines its
/// stores read first.
inline double main_traffic(const Cost& c, const Rates& r) noexcept { return c.bytes[0] + r.store_reads * c.main_store_bytes; }
inline double main_traffic(const OpCost& c, const Rates& r) noexcept { return c.main_bytes + r.store_reads * c.main_store_bytes; }

/// Bytes `c` moves at memory level `l`, as its estimate `e` counts them: main memory's with
/// the lines its stores read first (e.main_bytes), the other levels' as the cost has them.
inline double level_bytes(const Cost& c, const Estimate& e, int l) noexcept { return l == 0 ? e.main_bytes : c.bytes[l]; }


/// The time parts of `c` at `rates` (infinite for a dtype or link the chip lacks).
TimeParts time_parts(const Cost& c, const Rates& rates) noexcept;
/// The time parts of an op graph's compact cost: the same as time_parts(c.expand(), rates).
/// Inline: returned through memory, the parts would be reloaded by wider loads than they
/// were stored with, a store-forwarding stall per op that cost a third of an evaluation.
inline TimeParts time_parts(const OpCost& c, const Rates& r) noexcept {
  const auto u = [](double f, double s_per) { return f > 0 ? f * s_per : 0; };
  TimeParts p;
  p.matrix = u(c.matrix_flops, r.s_per_flop[0][index(c.matrix_dtype)]);
  p.matrix_dtype = static_cast<std::uint8_t>(index(c.matrix_dtype));
  p.matrix_pad = u(c.matrix_pad_flops, r.s_per_flop[0][index(c.matrix_dtype)]);
  p.memory_pad = u(c.main_pad_bytes, r.s_per_byte[0]);
  p.vector = u(c.vector_flops, r.s_per_flop[1][index(c.vector_dtype)]);
  const double main = main_traffic(c, r);
  p.memory = main > 0 ? main * r.s_per_byte[0] : 0;
  if (c.link >= 0 && c.link < hw::kMaxLinks) {
    p.comm_latency = u(c.link_steps, r.link_latency_s[c.link]);
    p.comm = u(c.link_bytes, r.s_per_link_byte[c.link]) + p.comm_latency;
    p.comm_inv = c.in_switch && r.inv_reduction_efficiency > 0 ? r.inv_reduction_efficiency : r.inv_link_efficiency[c.link];
  }
  p.launch = c.launches * r.launch_s;
  p.kernels = TimeParts::kernels_of(c.launches);
  p.loop_k = c.loop_k;
  p.vector += c.special_ops * r.special_extra_s;
  return p;
}
/// The same on `chip` (computes its Rates: for one-off use, not hot loops).
TimeParts time_parts(const Cost& c, const hw::ChipSpec& chip) noexcept;

/// Evaluates `c` on `chip` as a kernel of class `k` (its realistic and upper times use the
/// class's efficiencies). Never allocates, never throws; FLOPs in a dtype the chip lacks
/// give infinite time and `supported = false` (check_supported names them).
/// `graphs`: replayed inside a CUDA graph, no launch of its own (its kernels keep their fixed times).
Estimate estimate(const Cost& c, const hw::ChipSpec& chip, hw::KernelClass k = hw::KernelClass::other, bool graphs = false) noexcept;

/// A call that the program waits on, one at a time (a benchmark that synchronises after each
/// call): the host's own time per call (framework dispatch, the library's enqueue, the launch
/// and the wait) comes before the device's and overlaps nothing. Adds `host_s` to every bound
/// and rates the attained FLOP/s over the longer time.
void add_host_time(Estimate& e, double host_s) noexcept;

/// Whether every dtype and link `c` uses exists on `chip` (check_supported without the message).
bool supported(const Cost& c, const hw::ChipSpec& chip) noexcept;
/// Throws InputError naming the first (unit, dtype) with FLOPs but no peak on `chip`,
/// or a link index the chip lacks.
void check_supported(const Cost& c, const hw::ChipSpec& chip);

}  // namespace ridgeline::ops
