#include "ridgeline/ops/estimate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ridgeline/core/error.hpp"

namespace ridgeline::ops {

std::string_view name(Bound b) noexcept {
  switch (b) {
    case Bound::compute: return "compute";
    case Bound::memory: return "memory";
    case Bound::comm: return "comm";
    case Bound::launch: return "launch";
  }
  return "compute";
}

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

// FLOPs of each unit, and which (unit, dtype) carries the most: what names the roof.
struct FlopScan {
  double f[hw::kUnitCount] = {0, 0};
  double most = 0;
  int unit = 0;
  int dtype = index(DType::bf16);
};

FlopScan scan_flops(const Cost& c) noexcept {
  FlopScan s;
  for (std::uint32_t mask = c.flop_mask; mask != 0; mask &= mask - 1) {
    const int bit = __builtin_ctz(mask);
    const int u = bit / kDTypeCount, d = bit % kDTypeCount;
    const double f = c.flops(static_cast<hw::Unit>(u), static_cast<DType>(d));
    if (f <= 0) continue;
    s.f[u] += f;
    if (f > s.most) {
      s.most = f;
      s.unit = u;
      s.dtype = d;
    }
  }
  return s;
}

// Each memory level's time; returns the Cost level of the slowest.
int memory_levels(const Cost& c, const Rates& r, double* per_level) noexcept {
  int level = 0;
  for (int l = 0; l < hw::kMaxMemoryLevels; ++l) {
    const double b = l == 0 ? main_traffic(c, r) : c.bytes[l];
    per_level[l] = b > 0 ? b * r.s_per_byte[l] : 0;
    if (per_level[l] > per_level[level]) level = l;
  }
  return level;
}

// Each link's time; returns the slowest link with traffic, or -1.
int link_times(const Cost& c, const Rates& r, double* per_link) noexcept {
  int link = -1;
  for (int l = 0; l < hw::kMaxLinks; ++l) {
    if (c.link_bytes[l] <= 0 && c.link_steps[l] <= 0) continue;
    per_link[l] = c.link_bytes[l] * r.s_per_link_byte[l] + c.link_steps[l] * r.link_latency_s[l];
    if (link < 0 || per_link[l] > per_link[link]) link = l;
  }
  return link;
}

}  // namespace

Rates::Rates(const hw::ChipSpec& chip, bool pdl) noexcept {
  for (int d = 0; d < kDTypeCount; ++d) {
    s_per_flop[0][d] = chip.matrix_flops_per_s[d] > 0 ? 1 / chip.matrix_flops_per_s[d] : kInf;
    s_per_flop[1][d] = chip.vector_flops_per_s[d] > 0 ? 1 / chip.vector_flops_per_s[d] : kInf;
  }
  const int levels = static_cast<int>(chip.memory.size());
  for (int l = 0; l < hw::kMaxMemoryLevels; ++l) {
    s_per_byte[l] = levels == 0 ? 0 : 1 / chip.memory[l < levels ? l : levels - 1].bandwidth_Bps;
  }
  links = static_cast<int>(std::min<std::size_t>(chip.links.size(), hw::kMaxLinks));
  for (int l = 0; l < hw::kMaxLinks; ++l) {
    s_per_link_byte[l] = l < links ? 1 / chip.links[l].chip_bandwidth_Bps() : kInf;
    link_latency_s[l] = l < links ? chip.links[l].latency_s : kInf;
    inv_link_efficiency[l] = l < links && chip.links[l].efficiency > 0 ? 1 / chip.links[l].efficiency : 0;
  }
  inv_reduction_efficiency = chip.topology.reduction_efficiency > 0 ? 1 / chip.topology.reduction_efficiency : 0;
  store_reads = chip.write_allocate ? 1 : 0;
  launch_s = chip.launch_overhead_s;
  sms = chip.gemm_sms();
  gemm_split = chip.gemm_split;
  {
    const double v = chip.vector_flops_per_s[index(DType::fp32)];
    special_extra_s = chip.special_function_rate > 0 && v > 0 ? std::max(0.0, 1 / chip.special_function_rate - 1 / v) : 0;
  }
  const hw::EfficiencySpec& e = chip.efficiency;
  for (int k = 0; k < hw::kKernelClassCount; ++k) {
    const hw::ClassEfficiency c = hw::class_efficiency(e, static_cast<hw::KernelClass>(k));
    const bool own = k != static_cast<int>(hw::KernelClass::other);
    // The gemm class: its own figure, else the measured matmul rate in each dtype (times the
    // class's share of it), else the chip's.
    const double share = own && c.matmul > 0 ? c.matmul : 1;
    for (int d = 0; d < kDTypeCount; ++d) {
      const double measured = chip.matmul_achievable_flops_per_s[d], peak = chip.matrix_flops_per_s[d];
      const bool gemm = hw::parent(static_cast<hw::KernelClass>(k)) == hw::KernelClass::gemm;
      achievable[k].inv_matrix[d] = own && c.matrix > 0 ? 1 / c.matrix
                                    : gemm && measured > 0 && peak > 0 ? peak / (measured * share)
                                                                       : 1 / e.matrix;
    }
    achievable[k].inv_vector = 1 / (own && c.vector > 0 ? c.vector : e.vector);
    achievable[k].inv_memory = 1 / (own && c.memory > 0 ? c.memory : e.memory);
    achievable[k].inv_link = 1 / (own && c.link > 0 ? c.link : e.link);
    achievable[k].own_link = own && c.link > 0;
    achievable[k].overhead_s = own && c.overhead_s > 0 ? c.overhead_s : e.overhead_s;
    achievable[k].overlap = own && c.overlap > 0 ? c.overlap : 0.5;
    achievable[k].overlap_vector = hw::overlaps_vector(static_cast<hw::KernelClass>(k));
    achievable[k].fill_k = own ? hw::fill_k(e, static_cast<hw::KernelClass>(k)) : 0;
    achievable[k].k_loop_s = own ? e.kernel[k].k_loop_s : 0;
    // Programmatic dependent launch hides part of each boundary, never more than the boundary.
    if (pdl && hw::pdl_class(static_cast<hw::KernelClass>(k))) {
      achievable[k].overhead_s -= std::min(e.pdl_hidden_s(), achievable[k].overhead_s);
    }
  }
}


// Branch-lean: this runs for every op of every evaluation. A part with no traffic is 0
// even where its rate is infinite (a dtype or link the chip lacks).
TimeParts time_parts(const Cost& c, const Rates& r) noexcept {
  double t[hw::kUnitCount] = {0, 0};
  double most = -1;
  int matrix_dtype = 0;
  for (std::uint32_t mask = c.flop_mask; mask != 0; mask &= mask - 1) {
    const int bit = __builtin_ctz(mask);
    const int u = bit / kDTypeCount, d = bit % kDTypeCount;
    const double f = c.flops(static_cast<hw::Unit>(u), static_cast<DType>(d));
    const double td = f > 0 ? f * r.s_per_flop[u][d] : 0;
    t[u] += td;
    // (An entry of no FLOPs still names the dtype: the tile work of an attention kernel's
    // count alone, the step model's unit, runs at it.)
    if (u == 0 && td > most) most = td, matrix_dtype = d;
  }
  double memory = main_traffic(c, r) * r.s_per_byte[0], comm = 0, latency = 0;
  int slowest = -1;
  for (int l = 1; l < hw::kMaxMemoryLevels; ++l) memory = std::max(memory, c.bytes[l] * r.s_per_byte[l]);
  for (int l = 0; l < hw::kMaxLinks; ++l) {
    const double b = c.link_bytes[l], steps = c.link_steps[l];
    const double lat = steps > 0 ? steps * r.link_latency_s[l] : 0;
    const double t_l = (b > 0 ? b * r.s_per_link_byte[l] : 0) + lat;
    if (t_l > comm) comm = t_l, slowest = l, latency = lat;
  }
  TimeParts p{t[0], t[1] + c.special_ops * r.special_extra_s, memory, comm, c.launches * r.launch_s};
  p.comm_latency = latency;
  p.kernels = TimeParts::kernels_of(c.launches);
  p.matrix_dtype = static_cast<std::uint8_t>(matrix_dtype);
  p.matrix_pad = c.matrix_pad_flops > 0 ? c.matrix_pad_flops * r.s_per_flop[0][matrix_dtype] : 0;
  p.memory_pad = c.main_pad_bytes > 0 ? c.main_pad_bytes * r.s_per_byte[0] : 0;
  p.loop_k = c.loop_k;
  if (slowest >= 0) {
    p.comm_inv = c.in_switch && r.inv_reduction_efficiency > 0 ? r.inv_reduction_efficiency : r.inv_link_efficiency[slowest];
  }
  return p;
}

TimeParts time_parts(const Cost& c, const hw::ChipSpec& chip) noexcept { return time_parts(c, Rates(chip)); }

Estimate estimate(const Cost& c, const hw::ChipSpec& chip, hw::KernelClass k, bool graphs) noexcept {
  Estimate e;
  const Rates r(chip);
  TimeParts p = time_parts(c, r);
  if (graphs) p.launch = 0;
  const FlopScan f = scan_flops(c);
  e.t_matrix_s = p.matrix;
  e.t_matrix_pad_s = p.matrix_pad;
  e.t_vector_s = p.vector;
  e.t_math_s = std::max(p.matrix, p.vector);
  e.t_memory_s = p.memory;
  e.memory_level = std::min(memory_levels(c, r, e.t_memory_level_s.data()),
                            std::max(0, static_cast<int>(chip.memory.size()) - 1));
  e.t_comm_s = p.comm;
  e.link = link_times(c, r, e.t_link_s.data());
  e.t_launch_s = p.launch;
  e.t_lower_s = p.lower();
  e.t_upper_s = p.upper(r, k);
  e.t_sum_at_peak_s = p.sum_at_peak();
  e.t_realistic_s = p.realistic(r, k);
  e.bound = p.bound();
  const Rates::Achievable& a = r.achievable[static_cast<int>(k)];
  e.applied = {1 / a.inv_matrix[p.matrix_dtype], 1 / a.inv_vector, 1 / a.inv_memory, 1 / p.inv_comm(a), a.fixed_s(p.kernels, p.loop_k), a.overlap, a.overlap_vector, a.k_loop_s};

  // The unit and dtype that carry the most FLOPs name the compute roof.
  e.compute_unit = static_cast<hw::Unit>(f.unit);
  e.compute_dtype = static_cast<DType>(f.dtype);
  e.flops = f.f[0] + f.f[1];
  e.main_bytes = main_traffic(c, r);
  e.write_allocate_bytes = r.store_reads * c.main_store_bytes;
  e.intensity_flops_per_byte = e.main_bytes > 0 ? e.flops / e.main_bytes : 0;
  e.peak_flops_per_s = chip.peak(e.compute_unit, e.compute_dtype);
  const double bw = chip.main_bandwidth_Bps();
  e.ridge_flops_per_byte = bw > 0 ? e.peak_flops_per_s / bw : 0;
  // Attained rate and fraction of peak compare like with like: the FLOPs of the compute
  // unit's dtype against that unit's peak (softmax FLOPs on the vector unit, running beside
  // the tensor cores, do not count against them).
  e.attained_flops_per_s = e.t_lower_s > 0 ? f.most / e.t_lower_s : 0;
  e.attained_total_flops_per_s = e.t_lower_s > 0 ? e.flops / e.t_lower_s : 0;
  e.fraction_of_peak = e.peak_flops_per_s > 0 ? e.attained_flops_per_s / e.peak_flops_per_s : 0;
  if (e.fraction_of_peak > 1 && e.fraction_of_peak < 1 + 1e-9) e.fraction_of_peak = 1;  // rounding
  e.supported = std::isfinite(e.t_math_s) && std::isfinite(e.t_comm_s);
  return e;
}

void add_host_time(Estimate& e, double host_s) noexcept {
  if (!(host_s > 0)) return;
  const double device = e.t_lower_s - e.t_host_s;  // the device's own perfect-overlap time
  e.t_host_s += host_s;
  e.host_longer = e.t_host_s > device;
  e.t_lower_s += host_s;
  e.t_upper_s += host_s;
  e.t_sum_at_peak_s += host_s;
  e.t_realistic_s += host_s;
  // The attained rates over the longer time: the FLOPs are the same.
  const double most = e.attained_flops_per_s * (e.t_lower_s - host_s);
  e.attained_flops_per_s = most / e.t_lower_s;
  e.attained_total_flops_per_s = e.flops / e.t_lower_s;
  e.fraction_of_peak = e.peak_flops_per_s > 0 ? e.attained_flops_per_s / e.peak_flops_per_s : 0;
}

bool supported(const Cost& c, const hw::ChipSpec& chip) noexcept {
  for (int u = 0; u < hw::kUnitCount; ++u) {
    for (int d = 0; d < kDTypeCount; ++d) {
      if (c.flops(static_cast<hw::Unit>(u), static_cast<DType>(d)) > 0 && chip.peak(static_cast<hw::Unit>(u), static_cast<DType>(d)) <= 0) return false;
    }
  }
  for (int l = static_cast<int>(chip.links.size()); l < hw::kMaxLinks; ++l) {
    if (c.link_bytes[l] > 0 || c.link_steps[l] > 0) return false;
  }
  return true;
}

void check_supported(const Cost& c, const hw::ChipSpec& chip) {
  if (supported(c, chip)) return;
  for (int u = 0; u < hw::kUnitCount; ++u) {
    for (int d = 0; d < kDTypeCount; ++d) {
      if (c.flops(static_cast<hw::Unit>(u), static_cast<DType>(d)) > 0 && chip.peak(static_cast<hw::Unit>(u), static_cast<DType>(d)) <= 0) {
        throw InputError(fmt::format("--hw {}: the {} unit has no {} rate: choose another dtype or add '{}: RATE' under {}_peak",
                                     chip.name, name(static_cast<hw::Unit>(u)), name(static_cast<DType>(d)),
                                     name(static_cast<DType>(d)), name(static_cast<hw::Unit>(u))));
      }
    }
  }
  for (int l = 0; l < hw::kMaxLinks; ++l) {
    if ((c.link_bytes[l] > 0 || c.link_steps[l] > 0) && l >= static_cast<int>(chip.links.size())) {
      throw InputError(fmt::format("--hw {}: the chip has no link to communicate over: add a 'links:' entry or pass --link-bw", chip.name));
    }
  }
}

}  // namespace ridgeline::ops
