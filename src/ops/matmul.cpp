#include "ridgeline/ops/matmul.hpp"

#include <algorithm>
#include <cmath>

namespace ridgeline::ops {

Cost dot_cost(const DotShape& s) noexcept {
  Cost c;
  c.add_flops(hw::Unit::vector, s.compute, 2 * s.n - 1);
  c.add_main_bytes(2 * s.n * bytes(s.dtype));
  c.add_main_stores(bytes(s.dtype));
  c.launches = 1;
  return c;
}

GemmTiling gemm_tiling(double m, double n, double k, double batch, int sms) noexcept {
  GemmTiling best;
  const bool finite = std::isfinite(m) && std::isfinite(n) && std::isfinite(k) && std::isfinite(batch);
  if (sms <= 0 || !finite || m <= 0 || n <= 0 || k <= 0 || batch <= 0) return best;
  const double s = sms;
  const auto up16 = [](double x) { return 16 * std::ceil(x / 16); };
  best.useful = -1;
  for (const auto& tile : kGemmTiles) {
    GemmTiling t;
    t.tile_m = std::min(tile[0], up16(m));
    t.tile_n = std::min(tile[1], up16(n));
    t.tiles = batch * std::ceil(m / t.tile_m) * std::ceil(n / t.tile_n);
    t.split_k = std::max(1.0, std::min(std::floor(s / t.tiles), std::floor(k / kMinSplitDepth)));
    t.waves = std::ceil(t.tiles * t.split_k / s);
    t.useful = batch * m * n * t.split_k / (t.waves * s * t.tile_m * t.tile_n);
    if (t.useful > best.useful) best = t;
  }
  return best;
}

DType default_compute_dtype(DType a, DType b) noexcept {
  if (a == b) return a;
  // Mixed operands are dequantised to the wider format before the multiply.
  return bits(a) >= bits(b) ? (is_integer(a) && !is_integer(b) ? b : a) : (is_integer(b) && !is_integer(a) ? a : b);
}

DType default_compute_dtype(DType act, DType weight, const hw::ChipSpec& chip) noexcept {
  if (is_fp8(weight) && bits(act) > 8 && chip.peak(hw::Unit::matrix, weight) > 0) return weight;
  return default_compute_dtype(act, weight);
}

}  // namespace ridgeline::ops
