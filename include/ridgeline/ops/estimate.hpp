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
  double t_vector_s = 0;  ///< vector-unit FLOPs over their peaks
  double t_math_s = 0;    ///< max(t_matrix, t_vector): the two units can run concurrently
  std::array<double, hw::kMaxMemoryLevels> t_memory_level_s{};  ///< bytes / bandwidth, per level
  double t_memory_s = 0;  ///< the slowest level
  int memory_level = 0;   ///< index of that level
  std::array<double, hw::kMaxLinks> t_link_s{};  ///< bytes / bandwidth + steps * latency, per link
  double t_comm_s = 0;    ///< the slowest link
  int link = -1;          ///< index of that link (-1 without communication)
  double t_launch_s = 0;  ///< launches * launch overhead
  double t_lower_s = 0;   ///< max of math, memory, comm, launch: perfect overlap
  double t_upper_s = 0;   ///< no overlap at the achievable rates: each part over its efficiency, summed
  double t_sum_at_peak_s = 0;  ///< t_matrix + t_vector + t_memory + t_comm + t_launch (seed 003's upper bound, at peak)
  double t_realistic_s = 0;  ///< overlap at the achievable rates: max of each part over its efficiency
  Bound bound = Bound::compute;
  hw::Unit compute_unit = hw::Unit::matrix;  ///< unit with most FLOPs
  DType compute_dtype = DType::bf16;         ///< dtype with most FLOPs on that unit
  double flops = 0;                          ///< all FLOPs
  double main_bytes = 0;                     ///< main-memory bytes
  double intensity_flops_per_byte = 0;       ///< flops / main_bytes (0 without bytes)
  double ridge_flops_per_byte = 0;           ///< peak(compute unit, dtype) / main bandwidth
  double peak_flops_per_s = 0;               ///< peak of compute unit and dtype
  double attained_flops_per_s = 0;           ///< FLOPs of the compute unit and dtype / t_lower (what that roof bounds)
  double attained_total_flops_per_s = 0;     ///< all FLOPs / t_lower (matrix and vector units together)
  double fraction_of_peak = 0;               ///< FLOPs of the compute unit and dtype / t_lower / their peak
  bool supported = true;                     ///< false when a dtype has FLOPs but no peak
};

/// The five times whose max, sum and efficiency-scaled max make an op's lower, upper and
/// realistic time, in seconds: the lean core of `estimate` for hot loops.
struct TimeParts {
  double matrix = 0;  ///< t_matrix
  double vector = 0;  ///< t_vector
  double memory = 0;  ///< slowest memory level
  double comm = 0;    ///< slowest link
  double launch = 0;  ///< launches x overhead
  double lower() const noexcept;
  /// No overlap at the achievable rates: each part over its efficiency, summed. Always at
  /// least realistic(), which overlaps the same parts.
  double upper(const hw::EfficiencySpec& eff) const noexcept {
    return matrix / eff.matrix + vector / eff.vector + memory / eff.memory + comm / eff.link + launch;
  }
  /// Seed 003's upper bound: the parts at their peaks, summed.
  double sum_at_peak() const noexcept { return matrix + vector + memory + comm + launch; }
  double realistic(const hw::EfficiencySpec& eff) const noexcept;
  Bound bound() const noexcept;
};

/// The time parts of `c` on `chip` (infinite for a dtype or link the chip lacks).
TimeParts time_parts(const Cost& c, const hw::ChipSpec& chip) noexcept;

/// Evaluates `c` on `chip`. Never allocates, never throws; FLOPs in a dtype the chip
/// lacks give infinite time and `supported = false` (check_supported names them).
Estimate estimate(const Cost& c, const hw::ChipSpec& chip) noexcept;

/// Whether every dtype and link `c` uses exists on `chip` (check_supported without the message).
bool supported(const Cost& c, const hw::ChipSpec& chip) noexcept;
/// Throws InputError naming the first (unit, dtype) with FLOPs but no peak on `chip`,
/// or a link index the chip lacks.
void check_supported(const Cost& c, const hw::ChipSpec& chip);

}  // namespace ridgeline::ops
