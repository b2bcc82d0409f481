// The slowest GPU of a synchronous step: values derived by hand (docs/training.md#the-slowest-gpu).
#include "ridgeline/analysis/stragglers.hpp"

#include <gtest/gtest.h>

namespace ridgeline::analysis {
namespace {

constexpr double kQuantileTol = 1e-8;  // Acklam's approximation: relative error below 1.2e-9

TEST(Stragglers, NormalQuantilesOfTheTables) {
  // Standard normal tables: Φ(0) = 0.5, Φ(1.959964) = 0.975, Φ(-2.326348) = 0.01,
  // Φ(-3.090232) = 0.001 (the lower tail's own branch), and the upper tail by symmetry.
  EXPECT_NEAR(normal_quantile(0.5), 0, kQuantileTol);
  EXPECT_NEAR(normal_quantile(0.975), 1.959964, 1e-6);
  EXPECT_NEAR(normal_quantile(0.01), -2.326348, 1e-6);
  EXPECT_NEAR(normal_quantile(0.001), -3.090232, 1e-6);
  EXPECT_NEAR(normal_quantile(0.999), 3.090232, 1e-6);
}

TEST(Stragglers, SlowestOfNGpus) {
  // One GPU waits for no other.
  EXPECT_EQ(expected_max_normal(1), 0);
  EXPECT_EQ(straggler_slowdown(1), 0);
  // 8 GPUs: Blom's position (8 - 0.375)/(8 + 0.25) = 0.924242, Φ⁻¹ = 1.434200 (the exact
  // expected largest of 8 normal draws is 1.4236, Harter's tables).
  EXPECT_NEAR(expected_max_normal(8), 1.434200, 1e-6);
  EXPECT_NEAR(expected_max_normal(8), 1.4236, 0.011);
  // The spread: a 5% range over 8 GPUs is 0.05 / 2.847 = 0.0175624 standard deviations.
  EXPECT_NEAR(kGpuRateSpread, 0.0175624, 1e-7);
  // The slowest of 8 runs 0.0175624 x 1.434200 = 0.0251879 below the typical rate, so takes
  // 1/(1 - 0.0251879) - 1 = 0.0258387 longer.
  EXPECT_NEAR(straggler_slowdown(8), 0.0258387, 1e-6);
  // 64 GPUs: Φ⁻¹(63.625/64.25 = 0.990272) = 2.336691; 0.0175624 x 2.336691 = 0.0410378;
  // 1/(1 - 0.0410378) - 1 = 0.0427939.
  EXPECT_NEAR(straggler_slowdown(64), 0.0427939, 1e-6);
  // No spread, no straggler; an absurd one is bounded at half the rate (twice the time).
  EXPECT_EQ(straggler_slowdown(1024, 0), 0);
  EXPECT_NEAR(straggler_slowdown(1024, 10), 1, 1e-12);
}

}  // namespace
}  // namespace ridgeline::analysis
