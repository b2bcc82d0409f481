#include "ridgeline/ops/matmul.hpp"

#include <cmath>

namespace ridgeline::ops {

Cost dot_cost(const DotShape& s) noexcept {
  Cost c;
  c.add_flops(hw::Unit::vector, s.compute, 2 * s.n - 1);
  c.add_main_bytes(2 * s.n * bytes(s.dtype) + bytes(s.dtype));
  c.launches = 1;
  return c;
}

DType default_compute_dtype(DType a, DType b) noexcept {
  if (a == b) return a;
  // Mixed operands are dequantised to the wider format before the multiply.
  return bits(a) >= bits(b) ? (is_integer(a) && !is_integer(b) ? b : a) : (is_integer(b) && !is_integer(a) ? a : b);
}

Cost matmul_cost(const MatmulShape& s) noexcept {
  Cost c;
  c.add_flops(hw::Unit::matrix, s.compute, 2 * s.batch * s.m * s.k * s.n);
  double x_reads = s.tile_n > 0 ? std::ceil(s.n / s.tile_n) : 1;
  double w_reads = s.tile_m > 0 ? std::ceil(s.m / s.tile_m) : 1;
  double x = s.batch * s.m * s.k * bytes(s.a);
  double w = (s.per_sample_weights ? s.batch : 1) * s.k * s.n * bytes(s.b);
  // Shared weights tiled across a batch are re-read for every sample's row tiles.
  if (!s.per_sample_weights && s.tile_m > 0) w *= s.batch;
  double y = s.batch * s.m * s.n * bytes(s.out);
  c.add_main_bytes(x * x_reads + w * w_reads + y);
  c.launches = 1;
  return c;
}

}  // namespace ridgeline::ops
