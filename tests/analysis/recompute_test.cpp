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
  EXPECT_EQ(r.combinations, 19683);  // 3^9: every combination, exact
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
    // (The two norms' outputs cost the same to keep, rebuild and move: which of them is
    // recomputed and which offloaded is a tie.)
    int memory_bound_recomputed = 0;
    for (const char* n : {"attn_norm_out", "mlp_norm_out", "act_out"}) {
      memory_bound_recomputed += r.best.action[find(r, n)] == TensorAction::recompute;
    }
    EXPECT_GE(memory_bound_recomputed, 1) << mb;
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

// Seed 000: "all-to-all selectively". DeepSeek-V3 (MLA; 3 dense and 58 MoE layers) on H200,
// 400 MB per layer: the tokens an expert-parallel all-to-all brought (`dispatched`) are
// rebuilt by repeating it. Across nodes (tp 8 x ep 4 = 32 GPUs, 400 Gb/s per GPU) that is
// the dearest byte of the layer, and the plan moves it to host memory, mostly behind the
// layer's compute; inside a node (tp 2 x ep 4 = 8 GPUs on NVLink) it is cheaper per byte than the
// GEMM outputs and FlashAttention's output, and the plan recomputes it.
TEST(Recompute, AllToAllRecomputedSelectively) {
  const auto m = io::bundled_model("deepseek-v3");
  TrainConfig c = plan();
  c.gpus = 256;
  c.seq = 4096;
  c.ep = 4;
  auto per_byte = [](const RecomputeResult& r, int i) { return r.tensors[i].recompute_s / r.tensors[i].bytes; };
  auto moe = [](const RecomputeResult& r, const std::string& name) {
    for (int i = r.kinds[1].first; i < r.kinds[1].first + r.kinds[1].count; ++i) {
      if (r.tensors[i].name == name) return i;
    }
    return -1;
  };
  c.tp = 8;
  c.global_batch = 32;
  auto across = plan_recompute(m, h200(), c, 400e6);
  ASSERT_EQ(across.kind_count, 2);
  EXPECT_EQ(across.kinds[0].layers, 3);
  EXPECT_EQ(across.kinds[1].layers, 58);
  const int d = moe(across, "dispatched");
  ASSERT_GE(d, 0);
  EXPECT_TRUE(across.tensors[d].has_comm);
  // The two all-to-all outputs are the dearest per byte, the combine's then the dispatch's.
  // kv_a_proj's output (a 576-column GEMM over 4096 tokens: 16 x 5 = 80 tiles of 256x128,
  // fewer than the H200's 132 SMs, which share their K loops, useful 4096·576/(80·256·128)
  // = 0.9) is not dearer: it was while a lone partial wave left 52 SMs idle (useful 0.545).
  const int rank = across.count - 1;
  EXPECT_STREQ(across.tensors[across.by_cost_per_byte[rank]].producers, "experts_down, ep_combine");
  EXPECT_EQ(across.by_cost_per_byte[rank - 1], d);
  EXPECT_EQ(across.best.action[d], TensorAction::offload);
  EXPECT_TRUE(across.best.feasible);
  // The host transfer hides mostly behind the layer's compute: what shows is less than
  // repeating the all-to-all would cost (the network now runs at its measured 0.9 of peak,
  // so the layer is shorter and a little of the transfer shows).
  EXPECT_LT(across.best.offload_exposed_s, across.tensors[d].recompute_s);
  EXPECT_LE(across.best.added_s, across.full.added_s);

  c.tp = 2;
  c.global_batch = 128;
  auto inside = plan_recompute(m, h200(), c, 400e6);
  const int di = moe(inside, "dispatched");
  ASSERT_GE(di, 0);
  for (const char* dearer : {"attn_out", "experts_gate_up_out", "q_a_out", "shared_gate_out"}) {
    EXPECT_LT(per_byte(inside, di), per_byte(inside, moe(inside, dearer))) << dearer;
  }
  EXPECT_EQ(inside.best.action[di], TensorAction::recompute);
  EXPECT_TRUE(inside.best.feasible);
  EXPECT_LE(inside.best.added_s, inside.full.added_s);
}

}  // namespace
}  // namespace ridgeline::analysis
