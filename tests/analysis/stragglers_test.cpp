// The slowest GPU of a synchronous step: values derived by hand (docs/training.md#the-slowest-gpu).
#include "ridgeline/analysis/stragglers.hpp"

#include <gtest/gtest.h>

namespace ridgeline::analysis {
namespace {

TEST(Stragglers, SlowestOfNGpus) {
  // One GPU waits for no other.
  EXPECT_EQ(straggler_slowdown(1), 0);
  // The spread: a 5% range over 8 GPUs is 0.05 / 2.847 = 0.0175624 standard deviations.
  EXPECT_NEAR(kGpuRateSpread, 0.0175624, 1e-7);
  // 8 GPUs: the expected largest of 8 normal draws is 1.42360 (Harter's tables; the routing
  // model's own test derives model::expected_max_normal in closed form up to 4): the slowest
  // runs 0.0175624 x 1.42360 = 0.0250018 below the typical rate, so takes
  // 1/(1 - 0.0250018) - 1 = 0.0256429 longer.
  EXPECT_NEAR(straggler_slowdown(8), 0.0256429, 1e-6);
  // 64 GPUs: the expected largest of 64 draws, ∫ x·64·φ(x)·Φ(x)^63 dx = 2.343733 (the
  // trapezoid rule in steps of 1/512 over ±12, apart from the code's own); 0.0175624 x 2.343733 =
  // 0.0411617; 1/(1 - 0.0411617) - 1 = 0.0429285.
  EXPECT_NEAR(straggler_slowdown(64), 0.0429285, 1e-6);
  // No spread, no straggler; an absurd one is bounded at half the rate (twice the time).
  EXPECT_EQ(straggler_slowdown(1024, 0), 0);
  EXPECT_NEAR(straggler_slowdown(1024, 10), 1, 1e-12);
}

}  // namespace
}  // namespace ridgeline::analysis
