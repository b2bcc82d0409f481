#pragma once
/// Captured kernels on a chip's roofline: per kernel (aggregated by name) time, intensity,
/// attained rates, bound, fraction of the applicable roof, and the time it would take at
/// the roof (docs/profiles.md).
#include <array>
#include <string>
#include <vector>

#include "ridgeline/hw/chip.hpp"
#include "ridgeline/ops/estimate.hpp"
#include "ridgeline/profile/kernel.hpp"

namespace ridgeline::profile {

struct KernelSummary {
  std::string name;
  double count = 0;
  double time_s = 0;         ///< total over the kernel's calls
  double flops = 0;
  double bytes = 0;          ///< DRAM
  double intensity_flops_per_byte = 0;
  double attained_flops_per_s = 0;
  double attained_Bps = 0;
  double roof_flops_per_s = 0;  ///< min(peak, bandwidth x intensity) for its unit and dtype
  double fraction_of_roof = 0;  ///< attained / roof (bandwidth fraction for kernels without FLOPs)
  double t_at_roof_s = 0;       ///< calls x the kernel boundary (efficiency.overhead) + max(flops / peak, bytes / bandwidth)
  double t_floor_s = 0;         ///< calls x the kernel boundary: what no kernel avoids
  double t_math_s = 0;          ///< FLOPs over the peaks of the units and dtypes they ran in (total over calls)
  double t_memory_s = 0;        ///< DRAM bytes over the main-memory bandwidth (total over calls)
  double gap_s = 0;             ///< time_s - t_at_roof_s: what reaching the roof would save
  ops::Bound bound = ops::Bound::memory;
  hw::Unit unit = hw::Unit::vector;
  DType dtype = DType::fp32;
  bool above_roof = false;      ///< faster than the roofline allows: the byte or FLOP counts (or the chip) are wrong
  bool has_flops = false, has_bytes = false;
  /// No byte count (or nothing counted): no intensity, so no place on the roofline, no bound,
  /// no gap; a kernel with FLOPs still has its attained FLOP/s.
  bool unknown = false;
  bool estimated = false;  ///< FLOPs and bytes from the launching aten op's shapes, not from counters
  std::string op;          ///< the CPU op that launched it (traces)
};

struct ProfileAnalysis {
  std::vector<KernelSummary> kernels;  ///< largest gap first
  double total_kernel_time_s = 0;
  double total_launches = 0;
  std::array<double, 4> time_by_bound_s{};  ///< of the kernels with a bound (unknown ones left out)
  double unknown_time_s = 0;                ///< kernels without byte counts
  /// Kernel time (and a trace's copies and fills) by category, largest first: gemm,
  /// attention, elementwise/norm, reduction, communication, memcpy/memset, other.
  std::vector<TimeShare> by_category;
  std::string chip;
  /// Kernels faster than the chip's roof allows (above_roof): their counts or the chip are
  /// wrong, and every figure drawn from them with it (docs/profiles.md#above-the-roof).
  int above_roof = 0;
  /// One line about them (the worst named), empty when none: reports print it as a warning.
  std::string above_roof_warning;
};

/// A kernel's category from its name (and the CPU op that launched it, when known):
/// "gemm", "attention", "elementwise/norm", "reduction", "communication", "memcpy/memset"
/// or "other" (docs/profiles.md#breakdowns).
std::string_view kernel_category(std::string_view name, std::string_view op) noexcept;

/// Places every kernel of `p` on `chip`'s roofline; `tensor_dtype` names the matrix-unit
/// dtype for tensor-core FLOPs (and for generic CSV FLOPs).
ProfileAnalysis analyze(const Profile& p, const hw::ChipSpec& chip, DType tensor_dtype);

}  // namespace ridgeline::profile
