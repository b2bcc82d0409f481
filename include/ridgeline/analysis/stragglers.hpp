#pragma once
/// The slowest GPU of a synchronous step (docs/training.md#the-slowest-gpu). GPUs of one model
/// differ in the rate they sustain on GEMMs (silicon, power management, cooling), and a
/// synchronous training step waits for the slowest of its GPUs at every tensor-parallel
/// collective, pipeline send and data-parallel reduction. A kernel rate measured on one GPU is a
/// typical GPU's; the step runs at its slowest's.
#include <cstdint>

namespace ridgeline::analysis {

/// The spread of per-GPU GEMM rates as a standard deviation, relative to the mean: a 5% range
/// between the fastest and the slowest of the 8 GPUs of one node (stas00/ml-engineering
/// compute/accelerator/README.md, "Not all accelerators are created equal": "I have seen 5% and
/// higher differences on an 8-gpu node", "5%+ MAMF spread between GPUs") over the expected range
/// of 8 normal draws, 2.847 standard deviations (d2(8), the range constant of quality-control
/// tables): 0.05 / 2.847 = 1.756%.
inline constexpr double kGpuRateSpread = 0.05 / 2.847;

/// How much longer the slowest of `gpus` GPUs takes over the typical one on compute-bound
/// kernels: 1/(1 − σ·e(n)) − 1 with σ = `spread` and e(n) = model::expected_max_normal(n), the
/// expected largest of n standard normal draws (1.4236 for 8); 0 for one GPU.
double straggler_slowdown(std::int64_t gpus, double spread = kGpuRateSpread) noexcept;

}  // namespace ridgeline::analysis
