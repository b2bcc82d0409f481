#pragma once
/// Scaled dot-product attention, flash (fused) or naive (scores materialised); causal
/// masking, GQA/MQA through kv_heads (docs/cost-model.md#attention).
#include "ridgeline/core/dtype.hpp"
#include "ridgeline/ops/cost.hpp"

namespace ridgeline::ops {

enum class AttentionImpl : std::uint8_t { flash, naive };

struct AttentionShape {
  double batch = 1;
  double q_len = 1;    ///< queries per sequence
  double kv_len = 1;   ///< keys per sequence (the queries are its last q_len positions)
  double heads = 1;    ///< query heads
  double kv_heads = 1; ///< key/value heads (heads for MHA, 1 for MQA)
  double head_dim = 128;
  bool causal = false;
  AttentionImpl impl = AttentionImpl::flash;
  DType dtype = DType::bf16;     ///< Q, O and the materialised scores
  DType kv_dtype = DType::bf16;  ///< K and V
  DType compute = DType::bf16;   ///< matrix-unit dtype
  DType vector = DType::fp32;    ///< softmax math
};

/// Query-key pairs that are computed: q_len·kv_len, or with a causal mask (flash only)
/// q_len·(kv_len - q_len) + q_len·(q_len + 1)/2.
double attention_pairs(const AttentionShape& s) noexcept;

Cost attention_cost(const AttentionShape& s) noexcept;

}  // namespace ridgeline::ops
