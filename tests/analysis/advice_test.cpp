#include "ridgeline/analysis/advice.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>

#include <memory>
#include <string>

#include "ridgeline/io/hardware_file.hpp"
#include "toy_chip.hpp"
#include "ridgeline/io/model_file.hpp"
#include "ridgeline/io/profile_file.hpp"

namespace ridgeline::analysis {
namespace {

using testing::chip;

bool fired(const std::vector<Advice>& v, const std::string& rule) {
  for (const auto& a : v) {
    if (a.rule == rule) return true;
  }
  return false;
}

TEST(Advice, InferenceRulesAndTheirGains) {
  const auto m = io::bundled_model("llama-3.1-8b");
  InferenceConfig c;
  c.batch = 4;
  c.prompt = 1024;
  c.gen = 256;
  auto r = std::make_unique<InferenceResult>();
  infer(m, chip("h100-sxm"), c, *r);
  auto advice = advise_inference(m, chip("h100-sxm"), c, *r);
  EXPECT_TRUE(fired(advice, "cuda-graphs"));
  EXPECT_TRUE(fired(advice, "batch-below-critical"));
  EXPECT_TRUE(fired(advice, "quantize-weights"));
  for (size_t i = 1; i < advice.size(); ++i) EXPECT_GE(advice[i - 1].gain_s, advice[i].gain_s);  // ranked
  // The CUDA-graph gain is the per-step saving over the 255 decode steps.
  for (const auto& a : advice) {
    if (a.rule == "cuda-graphs") {
      EXPECT_DOUBLE_EQ(a.gain_s, r->cuda_graphs_gain_s * 255);
    }
  }
  // With CUDA graphs on, that rule no longer fires.
  c.cuda_graphs = true;
  infer(m, chip("h100-sxm"), c, *r);
  EXPECT_FALSE(fired(advise_inference(m, chip("h100-sxm"), c, *r), "cuda-graphs"));
}

TEST(Advice, KernelsFixedTimesAreSizedByMergingTheEnginesWay) {
  // Llama 3.1 8B decoding 4 sequences on an H100, its kernels unfused: their fixed times are
  // over 10% of a step, and merging as the engines do removes 5 kernels a layer (K's and V's
  // GEMMs into Q's, up's into gate's, the two residual adds into the norms after them):
  // 32 x 5 = 160 fewer. The gain is the plan priced merged against as it is, both in CUDA
  // graphs (the launches the cuda-graphs rule's): the same whether the plan asks for graphs.
  const auto m = io::bundled_model("llama-3.1-8b");
  InferenceConfig c;
  c.batch = 4;
  c.prompt = 1024;
  c.gen = 256;
  c.cuda_graphs = true;
  auto r = std::make_unique<InferenceResult>();
  infer(m, chip("h100-sxm"), c, *r);
  ASSERT_GT(r->decode_total.kernel_fixed_s, 0.1 * r->decode_total.t_realistic_s);
  // (Its kernels as an eager step launches them: 485, docs/inference.md.)
  InferenceConfig eager = c;
  eager.cuda_graphs = false;
  auto re = std::make_unique<InferenceResult>();
  infer(m, chip("h100-sxm"), eager, *re);
  const double unfused_e2e = r->e2e_s, kernels = re->decode_last.launches;
  ASSERT_EQ(kernels, 485);
  const auto advice = advise_inference(m, chip("h100-sxm"), c, *r);
  InferenceConfig merged = c;
  merged.forward.merged_kernels = true;
  auto rm = std::make_unique<InferenceResult>();
  infer(m, chip("h100-sxm"), merged, *rm);
  merged.cuda_graphs = false;
  infer(m, chip("h100-sxm"), merged, *re);
  EXPECT_EQ(re->decode_last.launches, kernels - 160);
  merged.cuda_graphs = true;
  int found = 0;
  for (const auto& a : advice) {
    if (a.rule != "kernel-boundaries") continue;
    ++found;
    EXPECT_DOUBLE_EQ(a.gain_s, unfused_e2e - rm->e2e_s);
    EXPECT_NE(a.fix.find(fmt::format("{:.0f} kernels a decode step instead of {:.0f}", kernels - 160, kernels)), std::string::npos) << a.fix;
    EXPECT_NE(a.trigger.find(fmt::format("its {:.0f} kernels' fixed times", kernels)), std::string::npos) << a.trigger;
  }
  EXPECT_EQ(found, 1);
  // Eager, the same gain.
  infer(m, chip("h100-sxm"), eager, *re);
  found = 0;
  for (const auto& a : advise_inference(m, chip("h100-sxm"), eager, *re)) {
    if (a.rule != "kernel-boundaries") continue;
    ++found;
    EXPECT_DOUBLE_EQ(a.gain_s, unfused_e2e - rm->e2e_s);
  }
  EXPECT_EQ(found, 1);
  // Merged already: nothing left to merge, the rule is silent.
  infer(m, chip("h100-sxm"), merged, *rm);
  EXPECT_FALSE(fired(advise_inference(m, chip("h100-sxm"), merged, *rm), "kernel-boundaries"));
}

TEST(Advice, TrainingDataParallelCommunication) {
  // Llama-2-7B on 64 A100s, one sequence per replica: the fp32 gradient all-reduce over
  // 200 Gb/s HDR dominates the step (seed 004: all-reduce > 30% of the step).
  const auto m = io::bundled_model("llama-2-7b");
  TrainConfig c;
  c.gpus = 64;
  c.seq = 4096;
  c.global_batch = 64;
  auto r = std::make_unique<TrainResult>();
  train(m, chip("a100-80gb"), c, *r);
  auto advice = advise_training(m, chip("a100-80gb"), c, *r);
  const auto dp = std::find_if(advice.begin(), advice.end(), [](const Advice& a) { return a.rule == "dp-comm"; });
  ASSERT_NE(dp, advice.end());
  EXPECT_DOUBLE_EQ(dp->gain_s, r->exposed_dp_comm.realistic_s);
  // Largest gain first: the search's faster plans (better-plan) rank by what they save too.
  for (std::size_t i = 1; i < advice.size(); ++i) EXPECT_GE(advice[i - 1].gain_s, advice[i].gain_s);
}

TEST(Advice, ProfileIdleAndTinyKernels) {
  profile::Profile p;
  p.span_s = 1;
  p.idle_s = 0.5;
  for (int i = 0; i < 20; ++i) {
    profile::KernelLaunch k;
    k.name = "tiny";
    k.duration_s = 1e-6;
    k.dram_bytes = 1e3;
    k.has_bytes = true;
    p.launches.push_back(k);
  }
  const auto h100 = io::catalog_chip("h100-sxm");
  auto a = profile::analyze(p, h100, DType::bf16);
  auto advice = advise_profile(p, a, h100);
  EXPECT_TRUE(fired(advice, "gpu-idle"));
  EXPECT_TRUE(fired(advice, "tiny-kernels"));
  for (const auto& x : advice) {
    // 20 launches of 5 us against 20 us of kernels: 80 us a CUDA graph could save.
    if (x.rule == "tiny-kernels") {
      EXPECT_NEAR(x.gain_s, 20 * 5e-6 - 20e-6, 1e-15);
    }
    if (x.rule == "gpu-idle") {
      EXPECT_DOUBLE_EQ(x.gain_s, 0.5);
    }
  }
}

}  // namespace
}  // namespace ridgeline::analysis
