// The recomputation planner on a Llama block on H200: seed 000's hierarchy emerges from the costs.
#include "ridgeline/analysis/recompute.hpp"

#include <gtest/gtest.h>

#include <string>

#include "ridgeline/core/error.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "ridgeline/io/model_file.hpp"

namespace ridgeline::analysis {
namespace {

hw::System h200() {
  hw::System s;
  s.chip = io::catalog_chip("h200");
  s.chips_per_node = 8;
  return s;
}

TrainConfig plan() {
  TrainConfig c;
  c.gpus = 8;
  c.tp = 8;
  c.seq = 8192;
  c.global_batch = 64;
  return c;
}

int find(const RecomputeResult& r, const std::string& name) {
  for (int i = 0; i < r.count; ++i) {
    if (r.tensors[i].name == name) return i;
  }
  return -1;
}

TEST(Recompute, SeedHierarchyFromCostPerByte) {
  auto r = plan_recompute(io::bundled_model("llama-2-7b"), h200(), plan(), std::nullopt);
  ASSERT_EQ(r.count, 9);
  EXPECT_EQ(r.plans_evaluated, 19683);  // 3^9: every combination, exact
  // Cheapest to rebuild per byte: the memory-bound ops' outputs (norms, SiLU·mul).
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(r.tensors[r.by_cost_per_byte[k]].memory_bound) << r.tensors[r.by_cost_per_byte[k]].name;
  // Dearest: FlashAttention's output.
  EXPECT_STREQ(r.tensors[r.by_cost_per_byte[r.count - 1]].name, "attn_out");
}

TEST(Recompute, ChoicesUnderShrinkingBudgets) {
  const auto m = io::bundled_model("llama-2-7b");
  auto loose = plan_recompute(m, h200(), plan(), std::nullopt);
  // Room for everything: keep everything, nothing added.
  for (int i = 0; i < loose.count; ++i) EXPECT_EQ(loose.best.action[i], TensorAction::keep) << loose.tensors[i].name;
  EXPECT_EQ(loose.best.added_s, 0);
  for (double mb : {150.0, 100.0, 50.0}) {
    auto r = plan_recompute(m, h200(), plan(), mb * 1e6);
    EXPECT_TRUE(r.best.feasible) << mb;
    EXPECT_LE(r.best.memory_bytes, mb * 1e6);
    // Attention is never recomputed while anything cheaper can give way.
    EXPECT_NE(r.best.action[find(r, "attn_out")], TensorAction::recompute) << mb;
    // The memory-bound outputs give way first: at least one is recomputed.
    EXPECT_EQ(r.best.action[find(r, "attn_norm_out")], TensorAction::recompute) << mb;
    // The plan beats the fixed policies that fit.
    if (r.selective.feasible) {
      EXPECT_LE(r.best.added_s, r.selective.added_s) << mb;
    }
    EXPECT_LE(r.best.added_s, r.full.added_s) << mb;
  }
  // At 150 MB no GEMM output is recomputed (offloading hides behind the GEMMs instead).
  auto r150 = plan_recompute(m, h200(), plan(), 150e6);
  for (const char* gemm : {"q_k_rotated", "v", "gate_out", "up_out"}) {
    EXPECT_NE(r150.best.action[find(r150, gemm)], TensorAction::recompute) << gemm;
  }
}

TEST(Recompute, RefusesWhatItDoesNotCover) {
  TrainConfig c = plan();
  c.gpus = 64;
  c.ep = 8;
  EXPECT_THROW(plan_recompute(io::bundled_model("mixtral-8x7b"), h200(), c, std::nullopt), InputError);
}

}  // namespace
}  // namespace ridgeline::analysis
