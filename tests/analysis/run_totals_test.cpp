// A whole training run from one step: whole steps, days, GPU-hours and dollars, by hand.
#include <gtest/gtest.h>

#include "ridgeline/analysis/run_totals.hpp"

namespace ridgeline::analysis {
namespace {

// A step of 10 s trains 10^6 tokens on 8 GPUs at $2 per GPU-hour.
TEST(RunTotals, TokensDaysAndCostByHand) {
  // 2.5 M tokens: ceil(2.5) = 3 whole steps, 3 M tokens, 30 s; 8 x 30 / 3600 = 1/15
  // GPU-hours, $2/15; the allocation costs 8 x 2 = $16 an hour; (2/15) / 3 M x 10^6 = $2/45.
  RunTotals r = run_totals(10, 1e6, 8, {2.5e6, 0, 2});
  EXPECT_EQ(r.steps, 3);
  EXPECT_EQ(r.tokens, 3e6);
  EXPECT_DOUBLE_EQ(r.seconds, 30);
  EXPECT_DOUBLE_EQ(r.days, 30.0 / 86400);
  EXPECT_DOUBLE_EQ(r.gpu_hours, 1.0 / 15);
  EXPECT_DOUBLE_EQ(r.usd, 2.0 / 15);
  EXPECT_DOUBLE_EQ(r.usd_per_hour, 16);
  EXPECT_DOUBLE_EQ(r.usd_per_million_tokens, 2.0 / 45);
  EXPECT_TRUE(r.within_days);
  // One day: floor(86400 / 10) = 8640 steps, 8.64 G tokens, 8 x 24 = 192 GPU-hours.
  r = run_totals(10, 1e6, 8, {0, 1, 0});
  EXPECT_EQ(r.steps, 8640);
  EXPECT_EQ(r.tokens, 8.64e9);
  EXPECT_DOUBLE_EQ(r.gpu_hours, 192);
  EXPECT_EQ(r.usd, 0);  // no price
  // 10^12 tokens: 10^6 steps, 10^7 s = 115.74 days: not within 100 days, within 116.
  EXPECT_FALSE(run_totals(10, 1e6, 8, {1e12, 100, 0}).within_days);
  EXPECT_TRUE(run_totals(10, 1e6, 8, {1e12, 116, 0}).within_days);
  EXPECT_DOUBLE_EQ(run_totals(10, 1e6, 8, {1e12, 100, 0}).days, 1e7 / 86400);
  // No goal: nothing.
  EXPECT_EQ(run_totals(10, 1e6, 8, {}).steps, 0);
  EXPECT_FALSE(wanted(RunGoal{}));
}

}  // namespace
}  // namespace ridgeline::analysis
