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
  double head_dim = 128;    ///< query/key head dimension
  double v_head_dim = 0;    ///< value head dimension (0: head_dim); MLA uses 128 against 192
  double window = 0;        ///< sliding window in keys (0: none); implies a causal mask
  bool latent_kv = false;   ///< K and V are one shared latent tensor of head_dim (absorbed MLA)
  bool causal = false;
  AttentionImpl impl = AttentionImpl::flash;
  DType dtype = DType::bf16;     ///< Q, O and the materialised scores
  DType kv_dtype = DType::bf16;  ///< K and V
  DType compute = DType::bf16;   ///< matrix-unit dtype
  DType vector = DType::fp32;    ///< softmax math
};

/// Query-key pairs that are computed: q_len·kv_len, or with a causal mask (flash only)
/// q_len·(kv_len - q_len) + q_len·(q_len + 1)/2; with a window W each query sees at most W keys.
double attention_pairs(const AttentionShape& s) noexcept;

/// Keys each sequence reads from memory: kv_len, or at most the window for a single query.
double attention_keys_read(const AttentionShape& s) noexcept;

Cost attention_cost(const AttentionShape& s) noexcept;

}  // namespace ridgeline::ops
