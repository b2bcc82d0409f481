#include "ridgeline/ops/cost.hpp"

namespace ridgeline::ops {

Cost& Cost::operator+=(const Cost& o) noexcept {
  for (int u = 0; u < hw::kUnitCount; ++u) {
    for (int t = 0; t < kDTypeCount; ++t) flops[u][t] += o.flops[u][t];
  }
  for (int l = 0; l < hw::kMaxMemoryLevels; ++l) bytes[l] += o.bytes[l];
  for (int l = 0; l < hw::kMaxLinks; ++l) {
    link_bytes[l] += o.link_bytes[l];
    link_steps[l] += o.link_steps[l];
  }
  launches += o.launches;
  flop_mask |= o.flop_mask;
  return *this;
}

Cost& Cost::operator*=(double k) noexcept {
  for (auto& row : flops) {
    for (double& f : row) f *= k;
  }
  for (double& b : bytes) b *= k;
  for (double& b : link_bytes) b *= k;
  for (double& s : link_steps) s *= k;
  launches *= k;
  return *this;
}

}  // namespace ridgeline::ops
