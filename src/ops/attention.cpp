#include "ridgeline/ops/attention.hpp"

namespace ridgeline::ops {

double attention_pairs(const AttentionShape& s) noexcept {
  if (!s.causal || s.impl == AttentionImpl::naive) return s.q_len * s.kv_len;
  // Query i (0-based among the last q_len positions) sees kv_len - q_len + i + 1 keys.
  return s.q_len * (s.kv_len - s.q_len) + s.q_len * (s.q_len + 1) / 2;
}

Cost attention_cost(const AttentionShape& s) noexcept {
  Cost c;
  const double pairs = attention_pairs(s);
  const double bh = s.batch * s.heads;
  // QK^T and PV: 2·d FLOPs per pair each.
  c.add_flops(hw::Unit::matrix, s.compute, 4 * bh * pairs * s.head_dim);
  // Softmax per score: scale, max, subtract, exp, sum (5); normalise each output (1).
  c.add_flops(hw::Unit::vector, s.vector, bh * (5 * pairs + s.q_len * s.head_dim));

  const double q_bytes = bh * s.q_len * s.head_dim * bytes(s.dtype);
  const double o_bytes = q_bytes;
  const double kv_bytes = 2 * s.batch * s.kv_heads * s.kv_len * s.head_dim * bytes(s.kv_dtype);
  if (s.impl == AttentionImpl::flash) {
    c.add_main_bytes(q_bytes + kv_bytes + o_bytes);
    c.launches = 1;
    return c;
  }
  // Naive (eager): K/V expanded to all heads when grouped (repeat_kv), the score matrix
  // written by QK^T, read and rewritten by softmax (scale and mask fused), read by PV.
  double kv_read = kv_bytes;
  double launches = 3;
  if (s.kv_heads < s.heads) {
    double expanded = 2 * s.batch * s.heads * s.kv_len * s.head_dim * bytes(s.kv_dtype);
    c.add_main_bytes(kv_bytes + expanded);  // the copy: read grouped, write expanded
    kv_read = expanded;
    launches += 2;
  }
  const double scores = bh * s.q_len * s.kv_len * bytes(s.dtype);
  c.add_main_bytes(q_bytes + kv_read + o_bytes + 4 * scores);
  c.launches = launches;
  return c;
}

}  // namespace ridgeline::ops
