// The KV connector's descriptors (docs/serving.md#kv-connector).
#include "ridgeline/serving/kv_connector.hpp"

namespace ridgeline::serving {

std::int64_t kv_regions(const model::ModelConfig& m) noexcept { return (m.is_mla() ? 1 : 2) * m.layers; }

}  // namespace ridgeline::serving
