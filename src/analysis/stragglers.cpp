// The slowest GPU of a synchronous step: the expected slowest of n GPUs whose GEMM rates spread
// normally around the measured one (docs/training.md#the-slowest-gpu).
#include "ridgeline/analysis/stragglers.hpp"

#include "ridgeline/model/routing.hpp"

#include <algorithm>
#include <cmath>

namespace ridgeline::analysis {

double straggler_slowdown(std::int64_t gpus, double spread) noexcept {
  const double behind = spread * model::expected_max_normal(static_cast<double>(gpus));
  // The slowest GPU's rate is (1 − σ·e) of the typical one's; bounded so that an absurd spread
  // cannot stop the GPU altogether.
  return 1 / std::max(0.5, 1 - behind) - 1;
}

}  // namespace ridgeline::analysis
