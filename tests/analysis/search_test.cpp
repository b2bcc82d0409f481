// Plan search: the space counted by hand, every returned plan re-evaluated by train/infer,
// the best and the Pareto front checked against an independent brute force.
#include "ridgeline/analysis/search.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "ridgeline/core/error.hpp"
#include "ridgeline/io/model_file.hpp"
#include "toy_chip.hpp"

namespace ridgeline::analysis {
namespace {

using testing::chip;

// Llama 2 7B: 32 heads, 32 KV heads, 32 layers, MLP width 11008.
TrainSearchSpace small_space() {
  TrainSearchSpace s;
  s.base.gpus = 4;
  s.base.gpus_per_node = 4;
  s.base.seq = 2048;
  s.base.global_batch = 4;
  s.recompute = Recompute::none;
  s.cp = 1;
  s.micro_batch = 1;
  s.zero = 0;
  s.top = 3;
  return s;
}

TEST(Search, SmallTrainingSpaceCountedByHand) {
  // Layouts tp x pp dividing 4 GPUs: (1,1) (1,2) (1,4) (2,1) (2,2) (4,1). Sequence
  // parallelism doubles the tp > 1 layouts; pp > 1 tries vpp in the divisors of 32 layers
  // {1, 2, 4, 8, 16, 32}. Plans: 1 + 6 + 6 + 2 + 2·6 + 2 = 29.
  // Stages: pp·vpp above 32 layers: pp 2 with vpp 32 (64), pp 4 with vpp 16 and 32
  // (64, 128): 1 + 2 + 2 (the (2,2) layout, twice for SP) = 5 rejected.
  // Micro-batches 4/dp = tp·pp are a multiple of pp: no interleave rejection; 32 heads,
  // 32 KV heads and 11008 split over tp 1, 2, 4; seq 2048 over tp: no other rule applies.
  const auto m = io::bundled_model("llama-2-7b");
  const TrainSearchResult r = search_train(m, chip("h100-sxm"), small_space());
  EXPECT_EQ(r.stats.evaluated, 29u);
  EXPECT_EQ(r.stats.rejected[static_cast<int>(Reject::stages)], 5u);
  EXPECT_EQ(r.stats.feasible + r.stats.rejected[static_cast<int>(Reject::memory)], 24u);
  std::uint64_t sum = r.stats.feasible;
  for (auto n : r.stats.rejected) sum += n;
  EXPECT_EQ(sum, r.stats.evaluated);
  // tp 1 pp 1 holds all 6.74e9 parameters with ZeRO 0: 2 + 4 + 12 = 18 bytes each, 121 GB
  // before activations: more than 80 GB.
  EXPECT_GE(r.stats.rejected[static_cast<int>(Reject::memory)], 1u);
}

// The brute force: every plan of the space through `train`, independently enumerated.
struct Brute {
  std::vector<TrainPlan> feasible;
  std::uint64_t plans = 0, valid = 0;
};

Brute brute_force(const model::ModelConfig& m, const hw::System& sys, const TrainSearchSpace& s) {
  Brute b;
  auto tr = std::make_unique<TrainResult>();
  const std::int64_t g = s.base.gpus;
  std::vector<std::int64_t> divs;
  for (std::int64_t d = 1; d <= g; ++d) {
    if (g % d == 0) divs.push_back(d);
  }
  std::vector<std::int64_t> vpps;
  for (std::int64_t d = 1; d <= m.layers; ++d) {
    if (m.layers % d == 0) vpps.push_back(d);
  }
  std::vector<std::int64_t> mbs;
  for (std::int64_t d = 1; d <= s.base.global_batch; ++d) {
    if (s.base.global_batch % d == 0) mbs.push_back(d);
  }
  for (std::int64_t tp : divs) {
    for (std::int64_t cp : divs) {
      for (std::int64_t pp : divs) {
        if (g % (tp * cp * pp) != 0) continue;
        const std::int64_t dp = g / (tp * cp * pp);
        for (int ring = 0; ring <= (cp > 1 ? 1 : 0); ++ring) {
          for (int sp = 0; sp <= (tp > 1 ? 1 : 0); ++sp) {
            for (std::int64_t mb : mbs) {
              for (int rc = 0; rc < 4; ++rc) {  // none, selective, full, auto
                for (std::int64_t vpp : pp > 1 ? vpps : std::vector<std::int64_t>{1}) {
                  for (int zero = 0; zero <= (dp * cp > 1 ? 3 : 0); ++zero) {
                    TrainPlan p;
                    p.tp = tp, p.cp = cp, p.pp = pp, p.dp = dp, p.cp_ring = ring != 0, p.sequence_parallel = sp != 0;
                    p.micro_batch = mb, p.recompute = static_cast<Recompute>(rc), p.vpp = vpp, p.zero = zero;
                    ++b.plans;
                    try {
                      train(m, sys, train_config(s.base, p), *tr);
                    } catch (const InputError&) {
                      continue;
                    }
                    ++b.valid;
                    if (!tr->memory.fits) continue;
                    p.step_time_s = tr->step_time_s;
                    p.tokens_per_s = tr->tokens_per_s;
                    p.mfu = tr->mfu;
                    p.memory_bytes = tr->memory.total_bytes;
                    b.feasible.push_back(p);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return b;
}

bool same_settings(const TrainPlan& a, const TrainPlan& b) {
  return a.tp == b.tp && a.pp == b.pp && a.cp == b.cp && a.ep == b.ep && a.vpp == b.vpp && a.micro_batch == b.micro_batch &&
         a.zero == b.zero && a.recompute == b.recompute && a.sequence_parallel == b.sequence_parallel && a.cp_ring == b.cp_ring;
}

TEST(Search, TrainingMatchesBruteForce) {
  // Every dimension free on 8 GPUs of 4 per node (tp across nodes allowed, so every rule
  // but memory is `train`'s own validation), global batch 8. The brute force runs `train`
  // on each plan; the search must agree on the plan count, the feasible set, the best plan
  // and the Pareto front, to the last bit.
  const auto m = io::bundled_model("llama-2-7b");
  const hw::System sys = chip("h100-sxm");
  TrainSearchSpace s;
  s.base.gpus = 8;
  s.base.gpus_per_node = 4;
  s.base.seq = 1024;
  s.base.global_batch = 8;
  s.tp_across_nodes = true;
  s.top = 4;
  const TrainSearchResult r = search_train(m, sys, s);
  const Brute b = brute_force(m, sys, s);
  EXPECT_EQ(r.stats.evaluated, b.plans);
  EXPECT_GT(b.plans, 1000u);  // a space worth the name
  EXPECT_EQ(r.stats.feasible, b.feasible.size());
  EXPECT_EQ(r.stats.feasible + r.stats.rejected[static_cast<int>(Reject::memory)], b.valid);
  ASSERT_FALSE(b.feasible.empty());
  ASSERT_EQ(r.best.size(), 4u);
  const auto fastest = std::min_element(b.feasible.begin(), b.feasible.end(),
                                        [](const TrainPlan& x, const TrainPlan& y) { return x.step_time_s < y.step_time_s; });
  EXPECT_EQ(r.best[0].step_time_s, fastest->step_time_s);
  for (size_t i = 1; i < r.best.size(); ++i) EXPECT_LE(r.best[i - 1].step_time_s, r.best[i].step_time_s);
  // The front: no feasible plan beats a front plan on both axes, and every feasible plan is
  // matched or beaten by one on the front.
  ASSERT_FALSE(r.pareto.empty());
  for (const auto& f : r.pareto) {
    for (const auto& p : b.feasible) {
      EXPECT_FALSE(p.tokens_per_s > f.tokens_per_s && p.memory_bytes < f.memory_bytes);
    }
  }
  for (const auto& p : b.feasible) {
    bool covered = false;
    for (const auto& f : r.pareto) covered = covered || (f.tokens_per_s >= p.tokens_per_s && f.memory_bytes <= p.memory_bytes);
    EXPECT_TRUE(covered);
  }
  // Each returned plan is one of the brute force's, with identical numbers.
  for (const auto* list : {&r.best, &r.pareto}) {
    for (const auto& p : *list) {
      auto it = std::find_if(b.feasible.begin(), b.feasible.end(), [&](const TrainPlan& q) { return same_settings(p, q); });
      ASSERT_NE(it, b.feasible.end());
      EXPECT_EQ(p.step_time_s, it->step_time_s);
      EXPECT_EQ(p.tokens_per_s, it->tokens_per_s);
      EXPECT_EQ(p.mfu, it->mfu);
      EXPECT_EQ(p.memory_bytes, it->memory_bytes);
      EXPECT_EQ(p.dp, it->dp);
    }
  }
}

TEST(Search, ResultsDoNotDependOnThreads) {
  const auto m = io::bundled_model("llama-3.1-8b");
  const hw::System sys = chip("h100-sxm");
  TrainSearchSpace s;
  s.base.gpus = 32;
  s.base.global_batch = 64;
  s.top = 10;
  SearchControl one, two;
  one.threads = 1;
  two.threads = 2;
  const auto a = search_train(m, sys, s, one), b = search_train(m, sys, s, two);
  EXPECT_EQ(a.stats.evaluated, b.stats.evaluated);
  ASSERT_EQ(a.best.size(), b.best.size());
  ASSERT_EQ(a.pareto.size(), b.pareto.size());
  for (size_t i = 0; i < a.best.size(); ++i) EXPECT_EQ(a.best[i].order, b.best[i].order);
  for (size_t i = 0; i < a.pareto.size(); ++i) EXPECT_EQ(a.pareto[i].order, b.pareto[i].order);
}

TEST(Search, Gpt3OnSixtyFourA100BeatsOrMatchesMegatron) {
  // Korthikanti et al. 2022 train GPT-3 175B on 64 A100 at s = 2048, batch 64 with TP 8,
  // PP 8, selective recomputation and sequence parallelism. That plan is in the space, so
  // the best plan the search finds is at least as fast, evaluated by the same model.
  const auto m = io::bundled_model("gpt3-175b");
  const hw::System sys = chip("a100-80gb");
  TrainSearchSpace s;
  s.base.gpus = 64;
  s.base.seq = 2048;
  s.base.global_batch = 64;
  const auto r = search_train(m, sys, s);
  ASSERT_FALSE(r.best.empty());
  TrainConfig megatron = s.base;
  megatron.tp = 8;
  megatron.pp = 8;
  megatron.recompute = Recompute::selective;
  megatron.sequence_parallel = true;
  auto tr = std::make_unique<TrainResult>();
  train(m, sys, megatron, *tr);
  ASSERT_TRUE(tr->memory.fits);
  EXPECT_LE(r.best[0].step_time_s, tr->step_time_s);
}

TEST(Search, NoFeasiblePlanIsReportedWithReasons) {
  // Llama 3.1 405B on 8 A100 40GB: 405e9 parameters x 2 bytes alone are 810 GB, more than
  // 8 x 40 GB even fully sharded: every plan runs out of memory.
  const auto m = io::bundled_model("llama-3.1-405b");
  TrainSearchSpace s;
  s.base.gpus = 8;
  s.base.global_batch = 8;
  const auto r = search_train(m, chip("a100-40gb"), s);
  EXPECT_EQ(r.stats.feasible, 0u);
  EXPECT_TRUE(r.best.empty());
  EXPECT_TRUE(r.pareto.empty());
  EXPECT_GT(r.stats.rejected[static_cast<int>(Reject::memory)], 0u);
}

TEST(Search, StopFlagEndsTheSearchEarly) {
  const auto m = io::bundled_model("llama-3.1-8b");
  TrainSearchSpace s;
  s.base.gpus = 16;
  s.base.global_batch = 32;
  std::atomic<bool> stop{true};
  SearchControl c;
  c.stop = &stop;
  const auto r = search_train(m, chip("h100-sxm"), s, c);
  EXPECT_TRUE(r.stats.interrupted);
  EXPECT_EQ(r.stats.evaluated, 0u);
}

TEST(Search, AbsurdRequestsAreInputErrors) {
  const auto m = io::bundled_model("llama-3.1-8b");
  const hw::System sys = chip("h100-sxm");
  TrainSearchSpace s;
  s.base.global_batch = 8;
  s.base.gpus = (std::int64_t{1} << 31) + 1;
  EXPECT_THROW(search_train(m, sys, s), InputError);
  s.base.gpus = 8;
  s.base.global_batch = 0;
  EXPECT_THROW(search_train(m, sys, s), InputError);
  s.base.global_batch = 8;
  s.memory_headroom = 1;
  EXPECT_THROW(search_train(m, sys, s), InputError);
}

TEST(Search, ServingSpaceCountedByHandAndReplayedByInfer) {
  // Llama 3.1 8B on up to 2 chips: tp 1 or 2 (32 heads, 8 KV heads, width 14336), no
  // experts; weights bf16 or fp8, KV cache bf16 or fp8: 2 x 2 x 2 = 8 groups, batches 1..4
  // each: 32 plans, all fitting on an 80 GB H100.
  const auto m = io::bundled_model("llama-3.1-8b");
  const hw::System sys = chip("h100-sxm");
  InferSearchSpace s;
  s.chips_max = 2;
  s.batch_max = 4;
  s.base.prompt = 512;
  s.base.gen = 64;
  s.weight_dtypes = {DType::bf16, DType::fp8_e4m3};
  s.kv_dtypes = {DType::bf16, DType::fp8_e4m3};
  s.top = 32;
  const auto r = search_infer(m, sys, s);
  EXPECT_EQ(r.stats.evaluated, 32u);
  EXPECT_EQ(r.stats.feasible, 32u);
  ASSERT_EQ(r.best.size(), 32u);
  auto ir = std::make_unique<InferenceResult>();
  double best_rate = 0;
  for (const auto& p : r.best) {
    infer(m, sys, infer_config(s.base, p), *ir);
    EXPECT_EQ(p.ttft_s, ir->ttft_s);
    EXPECT_EQ(p.tpot_s, ir->tpot_s);
    EXPECT_EQ(p.tokens_per_s_per_chip, ir->output_tokens_per_s / ir->chips);
    best_rate = std::max(best_rate, p.tokens_per_s_per_chip);
  }
  EXPECT_EQ(r.best[0].tokens_per_s_per_chip, best_rate);
  // A TPOT target rejects exactly the plans above it.
  const double target = r.best[0].tpot_s;
  std::uint64_t slower = 0;
  for (const auto& p : r.best) slower += p.tpot_s > target ? 1 : 0;
  s.tpot_max_s = target;
  const auto c = search_infer(m, sys, s);
  EXPECT_EQ(c.stats.rejected[static_cast<int>(Reject::tpot)], slower);
  for (const auto& p : c.best) EXPECT_LE(p.tpot_s, target);
}

}  // namespace
}  // namespace ridgeline::analysis
