#pragma once
/// A transformer as described by its Hugging Face config.json (docs/models.md).
#include <cstdint>
#include <string>

#include "ridgeline/core/dtype.hpp"

namespace ridgeline::model {

/// The MLP of a dense layer or an expert.
enum class MlpKind : std::uint8_t {
  gated_silu,  ///< SwiGLU: down(silu(gate(x)) * up(x)) — llama, mistral, qwen, deepseek, gpt-oss
  gated_gelu,  ///< GeGLU: down(gelu(gate(x)) * up(x)) — gemma
  gelu,        ///< fc -> gelu -> proj, no gate — GPT-2 / GPT-3
};
enum class NormKind : std::uint8_t { rmsnorm, layernorm };
enum class PositionKind : std::uint8_t { rope, learned };

/// A published measurement of a router's expert-parallel load (a model file's `_routing`,
/// docs/serving.md#moe-layouts): over `gpus` GPUs holding the experts contiguously and steps of
/// `tokens_per_step` tokens, with no load balancer, the busiest GPU's token-expert pairs over the
/// mean, averaged over the MoE layers and steps. gpus 0: none (a balanced router is assumed).
struct RoutingMeasurement {
  std::int64_t gpus = 0;
  double tokens_per_step = 0;
  double imbalance = 0;
  std::string source;  ///< where it was published, short (reports print it)
};

/// Mixture of experts (zero experts: dense).
struct MoeSpec {
  std::int64_t experts = 0;            ///< routed experts per MoE layer
  std::int64_t experts_per_token = 0;  ///< top-k
  std::int64_t shared_experts = 0;     ///< always-on experts
  std::int64_t shared_intermediate = 0;  ///< width of the shared experts together (default shared_experts x intermediate)
  std::int64_t intermediate = 0;       ///< width of one expert's MLP
  std::int64_t first_dense_layers = 0; ///< leading layers with a dense MLP (deepseek first_k_dense_replace)
  std::int64_t layer_freq = 1;         ///< every layer_freq-th layer after those is MoE
  /// Qwen's and ERNIE's rule for layer_freq (decoder_sparse_step, moe_layer_interval): layer i
  /// is MoE when (i + 1) % freq == 0 (Qwen2MoeDecoderLayer, Qwen3MoeDecoderLayer,
  /// Ernie4_5_MoeDecoderLayer), the freq-th, 2·freq-th, ... layer; else DeepSeek's
  /// (moe_layer_freq: DeepseekV3DecoderLayer, i % freq == 0), both from first_dense_layers on.
  bool freq_from_one = false;
  bool router_bias = false;            ///< router has a bias (gpt-oss) or a correction bias (deepseek v3)
  bool expert_bias = false;            ///< expert projections have biases (gpt-oss)
  std::int64_t groups = 1;             ///< expert groups of a group-limited router (DeepSeek's n_group; 1: none)
  std::int64_t group_topk = 1;         ///< groups a token's experts come from (topk_group)
  /// DeepSeek-V3's router: sigmoid scores with a correction bias, the top k taken from the
  /// best group_topk of `groups` groups (topk_method noaux_tc), which engines run in kernels of
  /// their own (ForwardConfig::routing).
  bool grouped_biased() const noexcept { return groups > 1 && router_bias; }
  RoutingMeasurement routing;          ///< a measured routing skew, when published
};

/// Multi-head latent attention (deepseek v2/v3); kv_lora_rank 0: standard attention.
struct MlaSpec {
  std::int64_t q_lora_rank = 0;  ///< 0: q projected directly
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t v_head_dim = 0;
};

/// Weights stored in a block-scaled low-precision format by the checkpoint.
struct QuantSpec {
  bool experts_only = false;   ///< only the routed experts are quantised (gpt-oss mxfp4)
  DType dtype = DType::bf16;   ///< element format
  double scale_bits_per_weight = 0;  ///< e.g. mxfp4: an 8-bit scale per 32 weights = 0.25
};

struct ModelConfig {
  std::string name;        ///< bundled name or the file path
  std::string model_type;  ///< as in config.json
  /// The Hugging Face repository the config comes from ("meta-llama/Llama-3.1-8B"): a bundled
  /// file's `_source` ("ORG/NAME config.json"), else config.json's `_name_or_path` when it
  /// names one; empty when unknown. Engine launch files name the model by it.
  std::string hf_repo;
  std::int64_t hidden = 0;
  std::int64_t layers = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t intermediate = 0;  ///< dense MLP width
  std::int64_t vocab = 0;
  std::int64_t max_positions = 0;
  bool tie_embeddings = false;
  bool qkv_bias = false;
  bool o_bias = false;
  bool mlp_bias = false;
  bool qk_norm = false;          ///< per-head RMSNorm on q and k (qwen3, gemma3)
  /// The q and k norms' weights are each head's own (Cohere's use_qk_norm: a [heads, head_dim]
  /// weight), not one head_dim vector shared by every head.
  bool qk_norm_per_head = false;
  /// One norm over the whole q projection and one over the whole k (OLMo 2/3, OLMoE: heads·head_dim
  /// and kv_heads·head_dim weights), which tensor parallelism runs after gathering q and k.
  bool qk_norm_whole = false;
  /// An RMSNorm on each sublayer's output before its residual add, four norms a layer (gemma2,
  /// gemma3: Transformers' post_attention_layernorm and post_feedforward_layernorm).
  bool sandwich_norms = false;
  /// The embedding's output multiplied by √hidden in a kernel of its own (Gemma's normalizer).
  bool embed_scale = false;
  /// Attention and MLP side by side on one norm's output, summed into the residual (phi-1/1.5/2:
  /// one LayerNorm a layer).
  bool parallel_block = false;
  bool head_bias = false;  ///< a bias on the LM head (phi)
  bool norm_bias = true;   ///< a LayerNorm's beta (Cohere's LayerNorm has none); RMSNorm has none
  bool attention_sinks = false;  ///< one learned logit per head (gpt-oss)
  MlpKind mlp = MlpKind::gated_silu;
  NormKind norm = NormKind::rmsnorm;
  PositionKind positions = PositionKind::rope;
  std::int64_t sliding_window = 0;  ///< 0: every layer attends to the whole context
  std::int64_t sliding_layers = 0;  ///< layers that use the window
  MoeSpec moe;
  MlaSpec mla;
  DType weight_dtype = DType::bf16;  ///< the checkpoint's torch_dtype
  bool quantized = false;
  QuantSpec quant;
  std::int64_t mtp_layers = 0;  ///< multi-token-prediction layers (deepseek v3), not run in inference

  bool is_moe() const noexcept { return moe.experts > 0; }
  bool is_mla() const noexcept { return mla.kv_lora_rank > 0; }
  /// The dtype the checkpoint stores its weights in: the quantised modules' format where there
  /// are some (their experts' alone, quant.experts_only), else weight_dtype.
  DType checkpoint_dtype() const noexcept { return quantized ? quant.dtype : weight_dtype; }
  /// Whether layer `i` (0-based) has a MoE MLP.
  bool moe_layer(std::int64_t i) const noexcept {
    if (moe.freq_from_one) return is_moe() && i >= moe.first_dense_layers && (i + 1) % moe.layer_freq == 0;
    return is_moe() && i >= moe.first_dense_layers && i % moe.layer_freq == 0;
  }
  std::int64_t moe_layer_count() const noexcept {
    std::int64_t n = 0;
    for (std::int64_t i = 0; i < layers; ++i) n += moe_layer(i) ? 1 : 0;
    return n;
  }
};

}  // namespace ridgeline::model
