#include "ridgeline/ops/estimate.hpp"

#include <fmt/format.h>

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
}  // namespace

Estimate estimate(const Cost& c, const hw::ChipSpec& chip) noexcept {
  Estimate e;
  bool ok = true;
  // One pass over the FLOP table: time per unit, and the (unit, dtype) with most FLOPs.
  double unit_t[hw::kUnitCount] = {0, 0};
  double unit_f[hw::kUnitCount] = {0, 0};
  int best_unit = 0, best_dtype = index(DType::bf16);
  double most = 0;
  for (std::uint32_t mask = c.flop_mask; mask != 0; mask &= mask - 1) {
    const int bit = __builtin_ctz(mask);
    const int u = bit / kDTypeCount, d = bit % kDTypeCount;
    const double f = c.flops[u][d];
    if (f <= 0) continue;
    const double peak = u == 0 ? chip.matrix_flops_per_s[d] : chip.vector_flops_per_s[d];
    unit_f[u] += f;
    if (peak > 0) {
      unit_t[u] += f / peak;
    } else {
      ok = false;
      unit_t[u] = kInf;
    }
    if (f > most) {
      most = f;
      best_unit = u;
      best_dtype = d;
    }
  }
  e.t_matrix_s = unit_t[0];
  e.t_vector_s = unit_t[1];
  e.t_math_s = e.t_matrix_s > e.t_vector_s ? e.t_matrix_s : e.t_vector_s;

  const int levels = static_cast<int>(chip.memory.size());
  for (int l = 0; l < hw::kMaxMemoryLevels; ++l) {
    if (c.bytes[l] <= 0 || levels == 0) continue;
    // Traffic at a level this chip does not describe is charged to its innermost level.
    const int li = l < levels ? l : levels - 1;
    e.t_memory_level_s[l] = c.bytes[l] / chip.memory[li].bandwidth_Bps;
    if (e.t_memory_level_s[l] > e.t_memory_s) {
      e.t_memory_s = e.t_memory_level_s[l];
      e.memory_level = li;
    }
  }

  const int nlinks = static_cast<int>(chip.links.size());
  for (int l = 0; l < hw::kMaxLinks; ++l) {
    if (c.link_bytes[l] <= 0 && c.link_steps[l] <= 0) continue;
    if (l >= nlinks) {
      ok = false;
      e.t_link_s[l] = kInf;
    } else {
      const auto& link = chip.links[l];
      e.t_link_s[l] = c.link_bytes[l] / link.chip_bandwidth_Bps() + c.link_steps[l] * link.latency_s;
    }
    if (e.link < 0 || e.t_link_s[l] > e.t_comm_s) {
      e.t_comm_s = e.t_link_s[l];
      e.link = l;
    }
  }
  e.t_launch_s = c.launches * chip.launch_overhead_s;

  // Bound: the largest part; ties go to compute, then memory, then comm.
  e.t_lower_s = e.t_math_s;
  e.bound = Bound::compute;
  if (e.t_memory_s > e.t_lower_s) {
    e.t_lower_s = e.t_memory_s;
    e.bound = Bound::memory;
  }
  if (e.t_comm_s > e.t_lower_s) {
    e.t_lower_s = e.t_comm_s;
    e.bound = Bound::comm;
  }
  if (e.t_launch_s > e.t_lower_s) {
    e.t_lower_s = e.t_launch_s;
    e.bound = Bound::launch;
  }
  e.t_upper_s = e.t_matrix_s + e.t_vector_s + e.t_memory_s + e.t_comm_s + e.t_launch_s;

  const auto& eff = chip.efficiency;
  double real = e.t_matrix_s / eff.matrix;
  if (e.t_vector_s / eff.vector > real) real = e.t_vector_s / eff.vector;
  if (e.t_memory_s / eff.memory > real) real = e.t_memory_s / eff.memory;
  if (e.t_comm_s / eff.link > real) real = e.t_comm_s / eff.link;
  if (e.t_launch_s > real) real = e.t_launch_s;
  e.t_realistic_s = real;

  // The unit and dtype that carry the most FLOPs name the compute roof.
  e.compute_unit = static_cast<hw::Unit>(best_unit);
  e.compute_dtype = static_cast<DType>(best_dtype);
  e.flops = unit_f[0] + unit_f[1];
  e.main_bytes = c.bytes[0];
  e.intensity_flops_per_byte = e.main_bytes > 0 ? e.flops / e.main_bytes : 0;
  e.peak_flops_per_s = chip.peak(e.compute_unit, e.compute_dtype);
  const double bw = chip.main_bandwidth_Bps();
  e.ridge_flops_per_byte = bw > 0 ? e.peak_flops_per_s / bw : 0;
  e.attained_flops_per_s = e.t_lower_s > 0 ? e.flops / e.t_lower_s : 0;
  // The fraction of peak compares like with like: the FLOPs of the compute unit's dtype
  // against that unit's peak (softmax FLOPs on the vector unit do not fill tensor cores).
  e.fraction_of_peak = (e.peak_flops_per_s > 0 && e.t_lower_s > 0) ? most / e.t_lower_s / e.peak_flops_per_s : 0;
  e.supported = ok;
  return e;
}

void check_supported(const Cost& c, const hw::ChipSpec& chip) {
  for (int u = 0; u < hw::kUnitCount; ++u) {
    for (int d = 0; d < kDTypeCount; ++d) {
      if (c.flops[u][d] > 0 && chip.peak(static_cast<hw::Unit>(u), static_cast<DType>(d)) <= 0) {
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
