#include "ridgeline/ops/pointwise.hpp"

namespace ridgeline::ops {

namespace {
// `loaded` bytes read, `stored` bytes written to a new output.
Cost vector_op(const RowsShape& s, double flops, double loaded, double stored) noexcept {
  Cost c;
  c.add_flops(hw::Unit::vector, s.compute, flops);
  c.add_main_bytes(loaded);
  c.add_main_stores(stored);
  c.launches = 1;
  return c;
}
}  // namespace

Cost elementwise_cost(const RowsShape& s, double inputs, double outputs, double flops_per_element) noexcept {
  double e = s.rows * s.cols;
  return vector_op(s, flops_per_element * e, inputs * e * bytes(s.dtype), outputs * e * bytes(s.dtype));
}

Cost reduction_cost(const RowsShape& s) noexcept {
  return vector_op(s, s.rows * (s.cols - 1), s.rows * s.cols * bytes(s.dtype), s.rows * bytes(s.dtype));
}

Cost rmsnorm_cost(const RowsShape& s) noexcept { return rmsnorm_cost(s, s.dtype); }

Cost rmsnorm_cost(const RowsShape& s, DType out) noexcept {
  // Per row: h squares, h-1 adds, 1 divide, 1 add (eps), 1 rsqrt, h scales, h gamma products.
  double flops = s.rows * (4 * s.cols + 2);
  const double in = s.rows * s.cols * bytes(s.dtype);
  return vector_op(s, flops, in + s.cols * bytes(s.dtype), s.rows * s.cols * bytes(out));
}

Cost group_quant_cost(const RowsShape& s, DType out, double group) noexcept {
  // Per value: an absolute value and a max (the group's amax), a scale and a conversion;
  // per group: the scale (amax / the format's largest value), written in fp32.
  const double e = s.rows * s.cols, groups = group > 0 ? e / group : s.rows;
  return vector_op(s, 3 * e + groups, e * bytes(s.dtype), e * bytes(out) + groups * bytes(DType::fp32));
}

void add_residual(Cost& c, const RowsShape& s) noexcept {
  const double residual = s.rows * s.cols * bytes(s.dtype);
  c.add_main_bytes(residual);   // read it
  c.add_main_stores(residual);  // and store the sum
  c.add_flops(hw::Unit::vector, s.compute, s.rows * s.cols);
}

Cost layernorm_cost(const RowsShape& s) noexcept {
  // Per row: mean (h-1 adds, 1 div), variance (h subs, h squares, h-1 adds, 1 div),
  // eps + rsqrt (2), normalise (h subs, h muls), affine (h muls, h adds) = 7h + 2.
  double flops = s.rows * (7 * s.cols + 2);
  const double out = s.rows * s.cols * bytes(s.dtype);
  return vector_op(s, flops, out + 2 * s.cols * bytes(s.dtype), out);
}

Cost rope_cost(const RowsShape& s, double head_dim) noexcept {
  // Each pair (x1, x2) -> (x1 c - x2 s, x2 c + x1 s): 4 muls + 2 adds per 2 elements.
  double flops = 3 * s.rows * s.cols;
  const double out = s.rows * s.cols * bytes(s.dtype);
  return vector_op(s, flops, out + 2 * s.rows * (head_dim / 2) * bytes(s.dtype), out);
}

Cost rope_torch_cost(const RowsShape& s, double heads, double rope) noexcept {
  const double a = bytes(s.dtype), T = s.rows;
  const double eq = T * heads * rope, ek = T * rope, table = T * rope;  // elements
  // Reads: the queries 7.5 times (contiguous 1, ·cos 1, -x₂ 0.5, stack 1, ·sin 1, + 2,
  // write-back 1), the key 6.5 (no contiguous copy), the table's rows 6 (gathered 1, the two
  // halves repeated 1, broadcast into the four products 4), the positions once (int64).
  // Writes: the queries 6.5 times, the key 5.5, the table 3 (gathered, two repeated halves).
  Cost c = vector_op(s, 3.5 * (eq + ek), (7.5 * eq + 6.5 * ek + 6 * table) * a + 8 * T, (6.5 * eq + 5.5 * ek + 3 * table) * a);
  c.launches = 16;
  return c;
}

Cost softmax_cost(const RowsShape& s) noexcept {
  // Per row: max (h-1), subtract (h), exp (h), sum (h-1), divide (h).
  double flops = s.rows * (5 * s.cols - 2);
  const double out = s.rows * s.cols * bytes(s.dtype);
  return vector_op(s, flops, out, out);
}

Cost swiglu_cost(const RowsShape& s) noexcept {
  // sigmoid(g) = 1 / (1 + exp(-g)): negate, exp, add, divide (4); silu = g·sigmoid (1); · up (1).
  double flops = 6 * s.rows * s.cols;
  const double out = s.rows * s.cols * bytes(s.dtype);
  return vector_op(s, flops, 2 * out, out);
}

Cost embedding_cost(const RowsShape& s) noexcept {
  constexpr double kIdBytes = 8;  // torch.long token ids
  const double out = s.rows * s.cols * bytes(s.dtype);
  return vector_op(s, 0, s.rows * kIdBytes + out, out);
}

}  // namespace ridgeline::ops
