#pragma once
/// Memory-bound operators on (rows, cols) tensors: elementwise, reductions, norms, RoPE,
/// softmax, SwiGLU, embedding lookup. FLOP counts per element are in docs/cost-model.md.
/// Each output is a new tensor: its bytes are stores (Cost::main_store_bytes).
#include "ridgeline/core/dtype.hpp"
#include "ridgeline/ops/cost.hpp"

namespace ridgeline::ops {

/// A (rows, cols) activation in `dtype`, with vector math in `compute`.
struct RowsShape {
  double rows = 1;  ///< tokens
  double cols = 1;  ///< hidden width
  DType dtype = DType::bf16;
  DType compute = DType::fp32;
};

/// `inputs` tensors in, `outputs` out, `flops_per_element` each.
Cost elementwise_cost(const RowsShape& s, double inputs, double outputs, double flops_per_element) noexcept;
/// Sum over cols: (rows, cols) -> (rows).
Cost reduction_cost(const RowsShape& s) noexcept;
/// y = x / rms(x) · gamma, gamma[cols] in `dtype`.
Cost rmsnorm_cost(const RowsShape& s) noexcept;
/// rmsnorm_cost with y written in `out` (a norm fused with its quantisation to fp8).
Cost rmsnorm_cost(const RowsShape& s, DType out) noexcept;
/// Dynamic quantisation of an activation to `out` in groups of `group` values along cols
/// (1x128 for DeepSeek's block-fp8 GEMMs): each group's absolute maximum, its fp32 scale,
/// every value scaled and converted. Reads x, writes the quantised values and the scales.
Cost group_quant_cost(const RowsShape& s, DType out, double group) noexcept;
/// Adds to a norm's cost the residual add fused in front of it (the engines' fused add +
/// RMSNorm): it also reads the residual and stores the sum back, one add per element.
void add_residual(Cost& c, const RowsShape& s) noexcept;
/// y = (x - mean) / std · gamma + beta.
Cost layernorm_cost(const RowsShape& s) noexcept;
/// Rotary embedding of x[rows, cols] with cos/sin tables [rows, head_dim / 2].
Cost rope_cost(const RowsShape& s, double head_dim) noexcept;
/// RoPE of `heads` query heads and one shared key head of `rope` dims a token, `rows` tokens, as
/// PyTorch's own ops run it eagerly, GPT-J style (interleaved pairs: vLLM's
/// DeepseekScalingRotaryEmbedding.forward to 0.8.x, inside its MLA op): the query part made
/// contiguous, the cos-sin table gathered by position (int64) and each half repeated
/// (repeat_interleave), then for the queries and the key x·cos, -x₂, stack, ·sin, + (five
/// kernels each), and both written back into their tensors: 16 kernels, each reading and writing
/// its operands in s.dtype. docs/serving.md#mla-under-vllm-08.
Cost rope_torch_cost(const RowsShape& s, double heads, double rope) noexcept;
/// Softmax over cols.
Cost softmax_cost(const RowsShape& s) noexcept;
/// silu(gate) · up on the intermediate width `cols`: two inputs, one output.
Cost swiglu_cost(const RowsShape& s) noexcept;
/// Gather of `rows` token rows of width `cols` from a table; ids are int64.
Cost embedding_cost(const RowsShape& s) noexcept;

}  // namespace ridgeline::ops
