#pragma once
/// The KV connector of disaggregated serving (docs/serving.md#kv-connector): a request's KV
/// pulled by its decode instance from its prefill instance as a list of descriptors, one per
/// block of each memory region, each posted by the connector before the link moves the
/// bytes. What it costs beyond the link: the descriptors' posting, on the decode side.
#include <cstdint>

#include "ridgeline/model/model_config.hpp"

namespace ridgeline::serving {

/// Posting one transfer descriptor (NIXL postXfer), seconds: 46 ms for 18,880 descriptors
/// less 0.46 ms for 118, Llama-70B TP 8 (80 layers x K and V x 118 blocks): (46 - 0.46) ms /
/// 18,762 = 2.4 us (vllm-project/vllm PR #35264, 2026-04-10; ai-dynamo/nixl issue #1514,
/// LIBFABRIC backend). vLLM issue #50913 (3P1D, block 64): 6.7 ms for 1,785 descriptors, 3.8 us.
inline constexpr double kNixlDescriptorS = 2.4e-6;

/// Regions of one chip's KV cache a NIXL pull reads a block from: K and V of each layer, or
/// one latent per layer (MLA) (vLLM nixl_connector.py _get_block_descs_ids: a descriptor per
/// block of each region).
std::int64_t kv_regions(const model::ModelConfig& m) noexcept;

/// One transfer: `latency_s` + `descriptors`·`descriptor_s` posted + `bytes` / `link_Bps`.
constexpr double kv_transfer_s(double bytes, double descriptors, double link_Bps, double latency_s, double descriptor_s) noexcept {
  return latency_s + descriptors * descriptor_s + bytes / link_Bps;
}

}  // namespace ridgeline::serving
