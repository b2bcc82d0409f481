#include "ridgeline/analysis/threshold.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "ridgeline/core/error.hpp"

namespace ridgeline::analysis {

namespace {
constexpr std::array<std::string_view, 11> kVarNames = {"m", "k", "n", "batch", "tokens", "hidden",
                                                        "q-len", "kv-len", "seq", "heads", "head-dim"};
constexpr std::int64_t kSearchLimit = std::int64_t{1} << 50;

struct Probe {
  bool valid = false;
  bool compute = false;
  double margin = 0;  // t_math - max(other terms), seconds
  ops::Estimate e;
};

Probe probe(OpConfig op, const hw::System& sys, SolveVar v, std::int64_t value) {
  set_dim(op, v, value);
  Probe p;
  try {
    validate(op);
  } catch (const InputError&) {
    return p;
  }
  p.valid = true;
  p.e = ops::estimate(op_cost(op, sys), sys.chip, op_kernel_class(op, sys.chip));
  double other = std::max({p.e.t_memory_s, p.e.t_comm_s, p.e.t_launch_s});
  p.margin = p.e.t_math_s - other;
  p.compute = p.e.bound == ops::Bound::compute;
  return p;
}
}  // namespace

std::string_view name(SolveVar v) noexcept { return kVarNames[static_cast<int>(v)]; }

std::optional<SolveVar> parse_solve_var(std::string_view s) noexcept {
  for (size_t i = 0; i < kVarNames.size(); ++i) {
    std::string_view n = kVarNames[i];
    if (n == s) return static_cast<SolveVar>(i);
    if (n.size() == s.size()) {
      bool same = true;
      for (size_t j = 0; j < n.size() && same; ++j) same = (n[j] == s[j]) || (n[j] == '-' && s[j] == '_');
      if (same) return static_cast<SolveVar>(i);
    }
  }
  return std::nullopt;
}

void set_dim(OpConfig& op, SolveVar v, std::int64_t value) noexcept {
  switch (v) {
    case SolveVar::m: op.m = value; break;
    case SolveVar::k: op.k = value; break;
    case SolveVar::n: op.n = value; break;
    case SolveVar::batch: op.batch = value; break;
    case SolveVar::tokens: op.rows = value; break;
    case SolveVar::hidden: op.cols = value; break;
    case SolveVar::q_len: op.q_len = value; break;
    case SolveVar::kv_len: op.kv_len = value; break;
    case SolveVar::seq: op.q_len = op.kv_len = value; break;
    case SolveVar::heads: op.heads = value; break;
    case SolveVar::head_dim: op.head_dim = value; break;
  }
}

bool applies(SolveVar v, OpKind kind) noexcept {
  switch (kind) {
    case OpKind::matmul: return v == SolveVar::m || v == SolveVar::k || v == SolveVar::n || v == SolveVar::batch;
    case OpKind::dot: return v == SolveVar::n;
    case OpKind::attention:
      return v == SolveVar::batch || v == SolveVar::q_len || v == SolveVar::kv_len || v == SolveVar::seq ||
             v == SolveVar::heads || v == SolveVar::head_dim;
    case OpKind::elementwise:
    case OpKind::reduction:
    case OpKind::rmsnorm:
    case OpKind::layernorm:
    case OpKind::rope:
    case OpKind::softmax:
    case OpKind::swiglu:
    case OpKind::embedding: return v == SolveVar::tokens || v == SolveVar::hidden;
    default: return false;
  }
}

ThresholdResult solve_threshold(const OpConfig& op, const hw::System& sys, SolveVar v) {
  if (!applies(v, op.kind)) {
    throw InputError(fmt::format("--solve: '{}' is not a dimension of {}", name(v), name(op.kind)));
  }
  ThresholdResult r;
  // The smallest valid value (a sharded dimension must be at least the chip count).
  std::int64_t lo = 1;
  Probe plo = probe(op, sys, v, lo);
  while (!plo.valid && lo < kSearchLimit) {
    lo *= 2;
    plo = probe(op, sys, v, lo);
  }
  if (!plo.valid) throw InputError(fmt::format("--solve {}: no valid value of {} for this op", name(v), name(v)));
  // Step back down to the exact smallest valid value.
  for (std::int64_t step = lo / 2; step >= 1 && lo > 1; step /= 2) {
    Probe p = probe(op, sys, v, lo - step);
    if (p.valid) {
      lo -= step;
      plo = p;
    }
  }
  r.ridge_flops_per_byte = plo.e.ridge_flops_per_byte;
  if (plo.compute) {
    r.found = r.always = true;
    r.critical = static_cast<double>(lo);
    r.critical_int = lo;
    r.searched_max = lo;
    r.bound_below = ops::Bound::compute;
    return r;
  }
  // Doubling until compute-bound, invalid (overflow) or the limit.
  std::int64_t hi = lo;
  Probe phi = plo;
  Probe last_valid = plo;
  while (true) {
    if (hi > kSearchLimit / 2) break;
    Probe p = probe(op, sys, v, hi * 2);
    if (!p.valid) break;
    hi *= 2;
    phi = p;
    last_valid = p;
    if (p.compute) break;
  }
  r.searched_max = hi;
  r.bound_below = plo.e.bound;
  r.ridge_flops_per_byte = plo.e.ridge_flops_per_byte;
  if (!phi.compute) {
    r.asymptotic_intensity = last_valid.e.intensity_flops_per_byte;
    r.bound_at_max = last_valid.e.bound;
    return r;
  }
  // Bisection: lo is not compute-bound, hi is.
  while (hi - lo > 1) {
    std::int64_t mid = lo + (hi - lo) / 2;
    Probe p = probe(op, sys, v, mid);
    if (p.valid && p.compute) {
      hi = mid;
      phi = p;
    } else {
      lo = mid;
      plo = p;
    }
  }
  r.found = true;
  r.critical_int = hi;
  r.bound_below = plo.e.bound;
  double denom = phi.margin - plo.margin;
  double frac = denom > 0 ? -plo.margin / denom : 1.0;
  r.critical = static_cast<double>(lo) + std::clamp(frac, 0.0, 1.0);
  return r;
}

}  // namespace ridgeline::analysis
