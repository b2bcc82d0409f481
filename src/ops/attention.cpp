#include "ridgeline/ops/attention.hpp"

#include <algorithm>

namespace ridgeline::ops {

namespace {
// Sum of min(x, w) for x = a..b (a <= b).
double sum_min(double a, double b, double w) noexcept {
  if (b <= w) return (a + b) * (b - a + 1) / 2;
  if (a >= w) return w * (b - a + 1);
  return (a + w) * (w - a + 1) / 2 + w * (b - w);
}
}  // namespace

double attention_pairs(const AttentionShape& s) noexcept {
  if (s.impl == AttentionImpl::naive) return s.q_len * s.kv_len;
  if (s.window > 0) {
    // Query at 0-based position p sees min(p + 1, W) keys; the queries are the last q_len.
    return sum_min(s.kv_len - s.q_len + 1, s.kv_len, s.window);
  }
  if (!s.causal) return s.q_len * s.kv_len;
  // Query i (0-based among the last q_len positions) sees kv_len - q_len + i + 1 keys.
  return s.q_len * (s.kv_len - s.q_len) + s.q_len * (s.q_len + 1) / 2;
}

double attention_keys_read(const AttentionShape& s) noexcept {
  if (s.window > 0 && s.impl == AttentionImpl::flash) {
    // The earliest query needs keys from (kv_len - q_len + 1 - W) on.
    return std::min(s.kv_len, s.window + s.q_len - 1);
  }
  return s.kv_len;
}

AttentionCounts attention_counts(const AttentionShape& s) noexcept {
  AttentionCounts n;
  n.seqs = s.batch;
  n.queries = s.batch * s.q_len;
  n.pairs = s.batch * attention_pairs(s);
  n.keys = s.batch * attention_keys_read(s);
  n.scores = s.batch * s.q_len * s.kv_len;
  n.positions = s.batch * s.kv_len;
  return n;
}

Cost attention_cost(const AttentionShape& s, const AttentionCounts& n) noexcept {
  Cost c;
  const double dv = s.v_head_dim > 0 ? s.v_head_dim : s.head_dim;
  // QK^T: 2·d_qk FLOPs per pair; PV: 2·d_v.
  c.add_flops(hw::Unit::matrix, s.compute, 2 * s.heads * n.pairs * (s.head_dim + dv));
  // Softmax per score: scale, max, subtract, exp, sum (5); normalise each output (1).
  c.add_flops(hw::Unit::vector, s.vector, s.heads * (5 * n.pairs + n.queries * dv));
  c.special_ops = s.heads * n.pairs;  // the exp of each score, on the special-function units

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

}  // namespace ridgeline::ops
