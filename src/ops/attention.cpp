#include "ridgeline/ops/attention.hpp"

#include <algorithm>

namespace ridgeline::ops {

Cost attention_cost(const AttentionShape& s, const AttentionCounts& n) noexcept {
  Cost c;
  const double dv = s.v_head_dim > 0 ? s.v_head_dim : s.head_dim;
  // QK^T: 2·d_qk FLOPs per pair; PV: 2·d_v.
  c.add_flops(hw::Unit::matrix, s.compute, 2 * s.heads * n.pairs * (s.head_dim + dv));
  // Softmax per score: scale, max, subtract, exp, sum (5); normalise each output (1).
  c.add_flops(hw::Unit::vector, s.vector, s.heads * (5 * n.pairs + n.queries * dv));
  c.special_ops = s.heads * n.pairs;  // the exp of each score, on the special-function units
  // A flash prefill's tiles: the pairs they compute past the useful ones, and each tile's own
  // work as tile_keys more keys (docs/cost-model.md#attention-tiles). Time, not FLOPs.
  // (Linear in the counts, as the step model needs.)
  const double extra = n.tile_waste + n.q_tiles * kQueryTile * s.tile_keys;
  if (extra > 0) c.matrix_pad_flops += 2 * s.heads * extra * (s.head_dim + dv);

  const double q_bytes = s.heads * n.queries * s.head_dim * bytes(s.dtype);
  const double o_bytes = s.heads * n.queries * dv * bytes(s.dtype);
  const double kv_bytes = s.latent_kv ? n.keys * s.head_dim * bytes(s.kv_dtype)
                                      : s.kv_heads * n.keys * (s.head_dim + dv) * bytes(s.kv_dtype);
  if (s.impl == AttentionImpl::flash) {
    c.add_main_bytes(q_bytes + kv_bytes);
    c.add_main_stores(o_bytes);
    c.launches = 1;
    return c;
  }
  // Naive (eager): K/V expanded to all heads when grouped (repeat_kv), the score matrix
  // written by QK^T, read and rewritten in place by softmax (scale and mask fused), read by
  // PV: four passes, of which the first stores to lines not read.
  double kv_read = kv_bytes;
  double launches = 3;
  if (s.kv_heads < s.heads) {
    const double expanded = s.heads * n.positions * (s.head_dim + dv) * bytes(s.kv_dtype);
    c.add_main_bytes(kv_bytes);  // the copy: read grouped, write expanded
    c.add_main_stores(expanded);
    kv_read = expanded;
    launches += 2;
  }
  const double scores = s.heads * n.scores * bytes(s.dtype);
  c.add_main_bytes(q_bytes + kv_read + 3 * scores);
  c.add_main_stores(scores + o_bytes);
  c.launches = launches;
  return c;
}

Cost attention_cost(const AttentionShape& s) noexcept { return attention_cost(s, attention_counts(s)); }

Cost attention_combine_cost(double partials, double rows, double heads, double v_dim, DType out) noexcept {
  Cost c;
  const double f32 = bytes(DType::fp32);
  c.add_main_bytes(partials * heads * (v_dim + 1) * f32);
  c.add_main_stores(rows * heads * v_dim * bytes(out));
  c.add_flops(hw::Unit::vector, DType::fp32, partials * heads * (2 * v_dim + 2) + rows * heads * v_dim);
  c.launches = 1;
  return c;
}

}  // namespace ridgeline::ops
