#include "ridgeline/ops/estimate.hpp"

#include <fmt/format.h>

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

// Time of each unit's FLOPs, and optionally which (unit, dtype) carries the most.
struct FlopScan {
  double t[hw::kUnitCount] = {0, 0};
  double f[hw::kUnitCount] = {0, 0};
  double most = 0;
  int unit = 0;
  int dtype = index(DType::bf16);
};

FlopScan scan_flops(const Cost& c, const hw::ChipSpec& chip) noexcept {
  FlopScan s;
  for (std::uint32_t mask = c.flop_mask; mask != 0; mask &= mask - 1) {
    const int bit = __builtin_ctz(mask);
    const int u = bit / kDTypeCount, d = bit % kDTypeCount;
    const double f = c.flops[u][d];
    if (f <= 0) continue;
    const double peak = u == 0 ? chip.matrix_flops_per_s[d] : chip.vector_flops_per_s[d];
    s.f[u] += f;
    s.t[u] = peak > 0 ? s.t[u] + f / peak : kInf;
    if (f > s.most) {
      s.most = f;
      s.unit = u;
      s.dtype = d;
    }
  }
  return s;
}

// Slowest memory level: its time and index. Traffic at a level the chip does not describe
// is charged to its innermost level.
double memory_time(const Cost& c, const hw::ChipSpec& chip, double* per_level, int* level) noexcept {
  const int levels = static_cast<int>(chip.memory.size());
  double worst = 0;
  for (int l = 0; l < hw::kMaxMemoryLevels; ++l) {
    if (c.bytes[l] <= 0 || levels == 0) continue;
    const int li = l < levels ? l : levels - 1;
    const double t = c.bytes[l] / chip.memory[li].bandwidth_Bps;
    if (per_level) per_level[l] = t;
    if (t > worst) {
      worst = t;
      if (level) *level = li;
    }
  }
  return worst;
}

// Slowest link: bytes over all its physical links plus latency steps.
double comm_time(const Cost& c, const hw::ChipSpec& chip, double* per_link, int* link) noexcept {
  const int nlinks = static_cast<int>(chip.links.size());
  double worst = 0;
  bool any = false;
  for (int l = 0; l < hw::kMaxLinks; ++l) {
    if (c.link_bytes[l] <= 0 && c.link_steps[l] <= 0) continue;
    double t = kInf;
    if (l < nlinks) {
      const auto& k = chip.links[l];
      t = c.link_bytes[l] / k.chip_bandwidth_Bps() + c.link_steps[l] * k.latency_s;
    }
    if (per_link) per_link[l] = t;
    if (!any || t > worst) {
      worst = t;
      any = true;
      if (link) *link = l;
    }
  }
  return worst;
}

}  // namespace

double TimeParts::lower() const noexcept {
  double m = matrix > vector ? matrix : vector;
  if (memory > m) m = memory;
  if (comm > m) m = comm;
  if (launch > m) m = launch;
  return m;
}

double TimeParts::realistic(const hw::EfficiencySpec& eff) const noexcept {
  double r = matrix / eff.matrix;
  if (vector / eff.vector > r) r = vector / eff.vector;
  if (memory / eff.memory > r) r = memory / eff.memory;
  if (comm / eff.link > r) r = comm / eff.link;
  if (launch > r) r = launch;
  return r;
}

Bound TimeParts::bound() const noexcept {
  // The largest part; ties go to compute, then memory, then comm.
  double best = matrix > vector ? matrix : vector;
  Bound b = Bound::compute;
  if (memory > best) {
    best = memory;
    b = Bound::memory;
  }
  if (comm > best) {
    best = comm;
    b = Bound::comm;
  }
  if (launch > best) b = Bound::launch;
  return b;
}

TimeParts time_parts(const Cost& c, const hw::ChipSpec& chip) noexcept {
  const FlopScan f = scan_flops(c, chip);
  TimeParts p;
  p.matrix = f.t[0];
  p.vector = f.t[1];
  p.memory = memory_time(c, chip, nullptr, nullptr);
  p.comm = comm_time(c, chip, nullptr, nullptr);
  p.launch = c.launches * chip.launch_overhead_s;
  return p;
}

Estimate estimate(const Cost& c, const hw::ChipSpec& chip) noexcept {
  Estimate e;
  const FlopScan f = scan_flops(c, chip);
  e.t_matrix_s = f.t[0];
  e.t_vector_s = f.t[1];
  e.t_math_s = e.t_matrix_s > e.t_vector_s ? e.t_matrix_s : e.t_vector_s;
  e.t_memory_s = memory_time(c, chip, e.t_memory_level_s.data(), &e.memory_level);
  e.t_comm_s = comm_time(c, chip, e.t_link_s.data(), &e.link);
  e.t_launch_s = c.launches * chip.launch_overhead_s;
  const TimeParts p{e.t_matrix_s, e.t_vector_s, e.t_memory_s, e.t_comm_s, e.t_launch_s};
  e.t_lower_s = p.lower();
  e.t_upper_s = p.upper(chip.efficiency);
  e.t_sum_at_peak_s = p.sum_at_peak();
  e.t_realistic_s = p.realistic(chip.efficiency);
  e.bound = p.bound();

  // The unit and dtype that carry the most FLOPs name the compute roof.
  e.compute_unit = static_cast<hw::Unit>(f.unit);
  e.compute_dtype = static_cast<DType>(f.dtype);
  e.flops = f.f[0] + f.f[1];
  e.main_bytes = c.bytes[0];
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

bool supported(const Cost& c, const hw::ChipSpec& chip) noexcept {
  for (int u = 0; u < hw::kUnitCount; ++u) {
    for (int d = 0; d < kDTypeCount; ++d) {
      if (c.flops[u][d] > 0 && chip.peak(static_cast<hw::Unit>(u), static_cast<DType>(d)) <= 0) return false;
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
