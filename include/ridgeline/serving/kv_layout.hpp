#pragma once
/// How an engine lays a model's KV cache out in blocks (docs/serving.md#sliding-window-layers):
/// one block of the pool spans `layers_per_block` layers and the engine's block of tokens; a
/// request holds a block table per group of layers. Full-attention groups hold every token's
/// blocks; sliding-window groups, when the engine frees what falls out of the window (vLLM's
/// hybrid KV cache manager), at most `window_blocks` of them.
#include <cstdint>

#include "ridgeline/model/model_config.hpp"
#include "ridgeline/serving/engine.hpp"

namespace ridgeline::serving {

struct KvLayout {
  std::int64_t layers_per_block = 1;  ///< layers one block spans (vLLM's KV cache group size)
  std::int64_t full_groups = 1;       ///< block tables per request that grow with its context
  std::int64_t window_groups = 0;     ///< block tables of sliding-window layers, capped at window_blocks
  std::int64_t window_blocks = 0;     ///< blocks a sliding-window table holds at most
  std::int64_t block_tokens = 16;     ///< tokens per block
  bool hybrid() const noexcept { return window_groups > 0; }
  /// Blocks a request holds for `tokens` tokens of context.
  std::int64_t blocks_for(std::int64_t tokens) const noexcept {
    const std::int64_t b = (tokens + block_tokens - 1) / block_tokens;
    return full_groups * b + window_groups * (b < window_blocks ? b : window_blocks);
  }
  /// Tokens of context `blocks` blocks hold per request when each group has as many (vLLM's
  /// "GPU KV cache size" in tokens: blocks over the groups, times the block).
  std::int64_t tokens_in(std::int64_t blocks) const noexcept {
    return blocks / (full_groups + window_groups) * block_tokens;
  }
};

/// The layout `e` gives model `m`. Without sliding-window layers, or when the engine keeps
/// them whole (e.free_window_blocks off), or with a draft model beside the target (its layers
/// share the blocks): one group of all layers, as a full-attention model. Otherwise vLLM's
/// grouping: a group is as many layers as the fewer of the two kinds; each kind splits into
/// groups of that size (the last padded).
KvLayout kv_layout(const model::ModelConfig& m, const EngineConfig& e, bool with_draft) noexcept;

}  // namespace ridgeline::serving
