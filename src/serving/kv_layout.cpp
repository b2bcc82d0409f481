// KV cache groups as vLLM's hybrid KV cache manager forms them (docs/serving.md#sliding-window-layers).
#include "ridgeline/serving/kv_layout.hpp"

#include <algorithm>

namespace ridgeline::serving {

KvLayout kv_layout(const model::ModelConfig& m, const EngineConfig& e, bool with_draft) noexcept {
  KvLayout k;
  k.block_tokens = std::max<std::int64_t>(1, e.kv_block);
  k.layers_per_block = std::max<std::int64_t>(1, m.layers);
  const std::int64_t sliding = std::clamp<std::int64_t>(m.sliding_layers, 0, m.layers);
  if (!e.free_window_blocks || with_draft || sliding == 0 || m.sliding_window <= 0) return k;
  const std::int64_t full = m.layers - sliding;
  // vllm/v1/core/kv_cache_utils.py, _get_kv_cache_config_uniform_page_size: layers of one
  // kind form groups of min(layers of each kind) layers (the last of a kind padded); the pool
  // has available_memory / page_size / group_size blocks, each a page of group_size layers.
  // One kind only (every layer slides): _get_kv_cache_config_uniform_type, one group of all.
  const std::int64_t size = full > 0 ? std::min(full, sliding) : sliding;
  k.layers_per_block = size;
  k.full_groups = (full + size - 1) / size;
  k.window_groups = (sliding + size - 1) / size;
  // vllm/v1/core/single_type_kv_cache_manager.py, SlidingWindowManager: at n computed tokens
  // the blocks wholly before token n - W + 1 are freed (get_num_skipped_tokens), and a step
  // computing token n holds the blocks up to it: ceil((n + 1)/b) - floor((n - W + 1)/b), at
  // most ceil((W - 1)/b) + 1 (its sliding_window_contiguous_blocks, and the block being filled).
  k.window_blocks = (m.sliding_window - 1 + k.block_tokens - 1) / k.block_tokens + 1;
  return k;
}

}  // namespace ridgeline::serving
