#pragma once
/// The value of one dimension at which an op becomes compute-bound (docs/cost-model.md#thresholds).
#include <cstdint>
#include <optional>
#include <string_view>

#include "ridgeline/analysis/single_op.hpp"
#include "ridgeline/ops/estimate.hpp"

namespace ridgeline::analysis {

/// A dimension that can be solved for; names are the op flags without dashes
/// (`seq` sets q_len and kv_len together).
enum class SolveVar : std::uint8_t { m, k, n, batch, tokens, hidden, q_len, kv_len, seq, heads, head_dim };
std::string_view name(SolveVar v) noexcept;
/// Parses "m", "batch", "kv-len", "kv_len", "seq" ...
std::optional<SolveVar> parse_solve_var(std::string_view s) noexcept;
/// Sets the dimension `v` of `op` to `value`.
void set_dim(OpConfig& op, SolveVar v, std::int64_t value) noexcept;
/// Whether `v` is a dimension of `op.kind`.
bool applies(SolveVar v, OpKind kind) noexcept;

struct ThresholdResult {
  bool found = false;      ///< false: never compute-bound up to `searched_max`
  bool always = false;     ///< compute-bound already at the smallest valid value
  double critical = 0;     ///< where t_math meets the largest other term (linear interpolation between integers)
  std::int64_t critical_int = 0;  ///< smallest integer value that is compute-bound
  std::int64_t searched_max = 0;  ///< largest value examined
  ops::Bound bound_below = ops::Bound::memory;  ///< what binds below the threshold
  double asymptotic_intensity = 0;  ///< intensity at `searched_max` (FLOPs/byte), to show why it never crosses
  ops::Bound bound_at_max = ops::Bound::memory;  ///< what binds at `searched_max` when it never crosses
  double ridge_flops_per_byte = 0;  ///< the ridge of the op's compute unit and dtype
};

/// Smallest value of `v` at which `op` on `sys` is compute-bound (t_math >= memory,
/// comm and launch times), by doubling then bisection over integers; assumes that once
/// compute-bound, larger values stay so. Throws InputError when `v` does not apply.
ThresholdResult solve_threshold(const OpConfig& op, const hw::System& sys, SolveVar v);

}  // namespace ridgeline::analysis
