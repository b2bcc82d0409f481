#include "ridgeline/ops/cost.hpp"

namespace ridgeline::ops {

Cost& Cost::operator+=(const Cost& o) noexcept {
  for (std::uint32_t mask = o.flop_mask; mask != 0; mask &= mask - 1) {
    const int bit = __builtin_ctz(mask);
    add_flops(static_cast<hw::Unit>(bit / kDTypeCount), static_cast<DType>(bit % kDTypeCount),
              o.flops_[bit / kDTypeCount][bit % kDTypeCount]);
  }
  for (int l = 0; l < hw::kMaxMemoryLevels; ++l) bytes[l] += o.bytes[l];
  main_store_bytes += o.main_store_bytes;
  for (int l = 0; l < hw::kMaxLinks; ++l) {
    link_bytes[l] += o.link_bytes[l];
    link_steps[l] += o.link_steps[l];
  }
  launches += o.launches;
  special_ops += o.special_ops;
  matrix_pad_flops += o.matrix_pad_flops;
  main_pad_bytes += o.main_pad_bytes;
  loop_k += o.loop_k;
  in_switch = in_switch || o.in_switch;
  return *this;
}

Cost& Cost::operator*=(double k) noexcept {
  for (std::uint32_t mask = flop_mask; mask != 0; mask &= mask - 1) {
    const int bit = __builtin_ctz(mask);
    flops_[bit / kDTypeCount][bit % kDTypeCount] *= k;
  }
  for (double& b : bytes) b *= k;
  main_store_bytes *= k;
  for (double& b : link_bytes) b *= k;
  for (double& s : link_steps) s *= k;
  launches *= k;
  special_ops *= k;
  matrix_pad_flops *= k;
  main_pad_bytes *= k;
  loop_k *= k;
  return *this;
}

Cost OpCost::expand() const noexcept {
  Cost c;
  if (matrix_flops != 0) c.add_flops(hw::Unit::matrix, matrix_dtype, matrix_flops);
  if (vector_flops != 0) c.add_flops(hw::Unit::vector, vector_dtype, vector_flops);
  c.bytes[0] = main_bytes;
  c.main_store_bytes = main_store_bytes;
  if (link >= 0) {
    c.link_bytes[link] = link_bytes;
    c.link_steps[link] = link_steps;
  }
  c.launches = launches;
  c.special_ops = special_ops;
  c.matrix_pad_flops = matrix_pad_flops;
  c.main_pad_bytes = main_pad_bytes;
  c.loop_k = loop_k;
  c.in_switch = in_switch;
  return c;
}

}  // namespace ridgeline::ops
