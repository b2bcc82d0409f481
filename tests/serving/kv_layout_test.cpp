// KV cache groups of models with sliding-window layers (vLLM's hybrid KV cache manager),
// each expected value derived by hand from the model's config.json.
#include "ridgeline/serving/kv_layout.hpp"

#include <gtest/gtest.h>

#include "ridgeline/io/model_file.hpp"
#include "toy_chip.hpp"

namespace ridgeline::serving {
namespace {

EngineConfig vllm() { return engine_preset(EngineKind::vllm, testing::catalog_system("h100-sxm").chip); }

TEST(KvLayout, GptOssHalvesSlidingAndFullLayersIntoTwoGroups) {
  // gpt-oss-120b: 36 layers, layer_types alternate sliding (window 128) and full: 18 and 18.
  // Group size min(18, 18) = 18: one full group, one sliding group, a block spans 18 layers.
  // A sliding table holds at most ceil((128 - 1)/16) + 1 = 8 + 1 = 9 blocks of 16 tokens.
  const KvLayout k = kv_layout(io::bundled_model("gpt-oss-120b"), vllm(), false);
  EXPECT_EQ(k.layers_per_block, 18);
  EXPECT_EQ(k.full_groups, 1);
  EXPECT_EQ(k.window_groups, 1);
  EXPECT_EQ(k.window_blocks, 9);
  // 1000 tokens: ceil(1000/16) = 63 blocks in the full table, min(63, 9) = 9 in the sliding one.
  EXPECT_EQ(k.blocks_for(1000), 63 + 9);
  // 100 tokens: ceil(100/16) = 7 in each (the window not reached).
  EXPECT_EQ(k.blocks_for(100), 7 + 7);
  // 144 tokens = 9 blocks: both tables 9; 145 tokens: the full table 10, the sliding one stays at 9.
  EXPECT_EQ(k.blocks_for(144), 18);
  EXPECT_EQ(k.blocks_for(145), 19);
  // vLLM's "GPU KV cache size" in tokens: blocks over the 2 groups, times 16.
  EXPECT_EQ(k.tokens_in(1000), 500 * 16);
}

TEST(KvLayout, EveryLayerSlidingIsOneCappedGroup) {
  // mistral-7b: sliding_window 4096 on all 32 layers: one group of 32 layers (uniform type),
  // capped at ceil(4095/16) + 1 = 256 + 1 = 257 blocks.
  const KvLayout k = kv_layout(io::bundled_model("mistral-7b"), vllm(), false);
  EXPECT_EQ(k.layers_per_block, 32);
  EXPECT_EQ(k.full_groups, 0);
  EXPECT_EQ(k.window_groups, 1);
  EXPECT_EQ(k.window_blocks, 257);
  EXPECT_EQ(k.blocks_for(1000), 63);
  EXPECT_EQ(k.blocks_for(8000), 257);  // ceil(8000/16) = 500, capped
}

TEST(KvLayout, FullAttentionOrKeptWindowsIsOneGroupOfAllLayers) {
  // llama-3.1-8b: 32 full-attention layers: one group, 1000 tokens in ceil(1000/16) = 63 blocks.
  const KvLayout llama = kv_layout(io::bundled_model("llama-3.1-8b"), vllm(), false);
  EXPECT_EQ(llama.layers_per_block, 32);
  EXPECT_EQ(llama.full_groups, 1);
  EXPECT_EQ(llama.window_groups, 0);
  EXPECT_EQ(llama.blocks_for(1000), 63);
  // An engine that keeps sliding layers whole (--disable-hybrid-kv-cache-manager, SGLang's and
  // TensorRT-LLM's presets here), or a draft model sharing the blocks: gpt-oss as 36 full layers.
  EngineConfig keep = vllm();
  keep.free_window_blocks = false;
  for (const KvLayout& k : {kv_layout(io::bundled_model("gpt-oss-120b"), keep, false),
                            kv_layout(io::bundled_model("gpt-oss-120b"), vllm(), true)}) {
    EXPECT_EQ(k.layers_per_block, 36);
    EXPECT_EQ(k.window_groups, 0);
    EXPECT_EQ(k.blocks_for(1000), 63);
  }
}

}  // namespace
}  // namespace ridgeline::serving
