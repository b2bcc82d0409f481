#include "ridgeline/ops/matmul.hpp"

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
