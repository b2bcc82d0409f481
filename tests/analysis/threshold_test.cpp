#include "ridgeline/analysis/threshold.hpp"

#include <gtest/gtest.h>

#include "ridgeline/core/error.hpp"
#include "toy_chip.hpp"

namespace ridgeline::analysis {
namespace {

hw::System no_launch_toy() {
  hw::System s = testing::toy_system();
  s.chip.launch_overhead_s = 0;
  return s;
}

TEST(Threshold, MatmulBatchClosedForm) {
  // bf16 X[m,4096]·W[4096,4096] on 100 TFLOP/s and 1 TB/s (ridge R = 100):
  // 2·m·h²/(2mh + 2h² + 2mh) = R  <=>  m = R·h/(h - 2R) = 409600/3896 = 105.13.
  OpConfig op{.kind = OpKind::matmul, .m = 1, .k = 4096, .n = 4096};
  ThresholdResult r = solve_threshold(op, no_launch_toy(), SolveVar::m);
  ASSERT_TRUE(r.found);
  EXPECT_NEAR(r.critical, 409600.0 / 3896, 1e-6);  // affine in m: interpolation is exact
  EXPECT_EQ(r.critical_int, 106);
  EXPECT_EQ(r.bound_below, ops::Bound::memory);
}

TEST(Threshold, NeverWhenIntensityIsBounded) {
  // Per-sample weights: intensity 2DF/(D + DF + F) < 2 for int8, whatever the batch.
  OpConfig op{.kind = OpKind::matmul, .m = 1, .k = 4096, .n = 4096, .per_sample_weights = true, .dtype = DType::int8};
  ThresholdResult r = solve_threshold(op, no_launch_toy(), SolveVar::batch);
  EXPECT_FALSE(r.found);
  EXPECT_LT(r.asymptotic_intensity, 2.0);
  // Softmax is never compute-bound either.
  OpConfig sm{.kind = OpKind::softmax, .rows = 1, .cols = 4096};
  EXPECT_FALSE(solve_threshold(sm, no_launch_toy(), SolveVar::tokens).found);
}

TEST(Threshold, AlwaysWhenAlreadyComputeBound) {
  OpConfig op{.kind = OpKind::matmul, .m = 4096, .k = 4096, .n = 4096};
  ThresholdResult r = solve_threshold(op, no_launch_toy(), SolveVar::batch);
  EXPECT_TRUE(r.found);
  EXPECT_TRUE(r.always);
  EXPECT_EQ(r.critical_int, 1);
}

TEST(Threshold, ShardedContractionNeedsAValidStart) {
  // Sharded on k over 4 chips: k below 4 is invalid, the solver starts at 4.
  // Per chip 2·m·(k/4)·n FLOPs against a ring all-reduce of 2·m·n bytes:
  // 2(P-1)/P · 2mn = 3mn bytes over 2 x 50 GB/s, 6 steps x 1 us. With m = n = 4096:
  // t_comm = 3·4096²/1e11 + 6e-6 = 509.3 us; t_math = 2·4096²·(k/4)/1e14 -> k = 6072.6.
  OpConfig op{.kind = OpKind::matmul, .m = 4096, .k = 4, .n = 4096, .chips = 4, .shard = Shard::k};
  hw::System sys = no_launch_toy();
  sys.chips = 4;
  ThresholdResult r = solve_threshold(op, sys, SolveVar::k);
  ASSERT_TRUE(r.found);
  const double t_comm = 3.0 * 4096 * 4096 / 1e11 + 6e-6;
  const double k_star = t_comm * 1e14 * 4 / (2.0 * 4096 * 4096);
  EXPECT_NEAR(r.critical, k_star, 4.0);  // per-chip k is ceil(k/4): steps of 4
  EXPECT_EQ(r.bound_below, ops::Bound::comm);
}

TEST(Threshold, RejectsADimensionTheOpLacks) {
  OpConfig op{.kind = OpKind::softmax, .rows = 1, .cols = 1};
  EXPECT_THROW(solve_threshold(op, no_launch_toy(), SolveVar::kv_len), InputError);
  EXPECT_EQ(parse_solve_var("kv_len"), SolveVar::kv_len);
  EXPECT_EQ(parse_solve_var("kv-len"), SolveVar::kv_len);
  EXPECT_FALSE(parse_solve_var("zz"));
}

}  // namespace
}  // namespace ridgeline::analysis
