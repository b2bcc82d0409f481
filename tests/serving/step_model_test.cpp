// The engine step model: exact against the step's graph built op by op, equal to `infer`
// for uniform batches, and hand-derived compositions.
#include "ridgeline/serving/step_model.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "ridgeline/analysis/inference.hpp"
#include "ridgeline/io/model_file.hpp"
#include "toy_chip.hpp"

namespace ridgeline::serving {
namespace {

using testing::kExact;  // the same sums in another order, lines fitted once

struct Plan {
  const char* model;
  const char* hw;
  int tp, ep;
  bool fuse_shared = false;  // ForwardConfig::fuse_shared_experts (SGLang's DeepSeek-V3)
};

// Dense GQA, TP across a node, MoE with EP, MLA + MoE, sliding windows + sinks + mxfp4
// experts, a sliding window on every layer, MLA + MoE with the shared expert inside the routed
// experts' kernel (its weights read by every pass: GraphOp::touched_fixed).
const Plan kPlans[] = {{"llama-3.1-8b", "h100-sxm", 1, 1},   {"llama-3.1-70b", "h100-sxm", 4, 1},
                       {"mixtral-8x7b", "h100-sxm", 2, 2},   {"deepseek-v3", "h200", 8, 1},
                       {"gpt-oss-120b", "h100-sxm", 2, 1},   {"mistral-7b", "a100-80gb", 1, 1},
                       {"deepseek-v3", "h200", 8, 1, true}};

struct Fixture {
  model::ModelConfig m;
  hw::System sys;
  model::ForwardConfig f;
  std::unique_ptr<StepModel> step = std::make_unique<StepModel>();
  std::unique_ptr<model::Graph> g = std::make_unique<model::Graph>();
  std::vector<std::int64_t> pad_sizes;  // ForwardConfig::graph_pad_sizes, when the step pads
};

// `sms`: the chip's multiprocessors, whose GEMM tiling the step model adds at each count
// (0: GEMMs unquantised).
// `imbalance`: ForwardConfig::expert_imbalance (0: the routing model, model/routing.hpp).
// `naive`: attention materialises its scores (its lines read the scores and positions counts).
// `allreduce`: 0 the fastest collective at each size; 1 an engine's own all-reduce under 8 MiB
// and NCCL from there (vLLM's); 2 under 500 kB, then NCCL without NVLS (ForwardConfig::nccl_nvls);
// 3 the engine's own at every size (no limit); 4 as 2, each all-reduce with the norm after it in
// its kernel (ForwardConfig::allreduce_norm: TensorRT-LLM's); 5 as 1, the norm in the kernel of
// an all-reduce of up to 2048 tokens, the engine's own up to there (SGLang's).
// `eager_host`: ForwardConfig::eager_host_s, the host's time per kernel it launches itself.
// `mla_op`: ForwardConfig::mla_op (0 attention alone, 1 absorbed, 2 projections: what MLA's
// attention op holds, launched from the engine's Python outside whole graphs), its kernels at
// `mla_op_host` on the host and its calls (one a layer) at `mla_op_call`.
// `deepgemm`: block-fp8 GEMMs in DeepGEMM's kernels, whose tiles cost their fill (fill_k).
// `pad_v`: ForwardConfig::mla_pad_v (MLA's prefill over V padded to the keys' width, its output
// sliced back: copies over the prefill positions and over the prefill tokens).
// `pad`: a CUDA graph's padding to its captured sizes (docs/serving.md#graph-padding), 0 none;
// 1 by sequences, the padding one row repeated (TensorRT-LLM's list with padding on); 2 by
// sequences, leftover rows (SGLang's list under speculative decoding); 3 by tokens, leftover
// rows (vLLM V1); 4 by tokens, one row repeated (vLLM V0).
// `pdl`: the engine's own kernels launched with programmatic dependent launch (ForwardConfig::
// pdl), hiding 0.5 us of each of their boundaries (the chip's pdl_overlap_s set so here).
std::unique_ptr<Fixture> fixture(const Plan& p, bool merged = false, int sms = 0, double imbalance = 1, bool naive = false,
                                 int allreduce = 0, double eager_host = 0, double compiled_host = 0, int mla_op = 0,
                                 double mla_op_host = 0, bool deepgemm = false, bool pad_v = false, double mla_op_call = 0,
                                 int pad = 0, bool pdl = false) {
  auto fx = std::make_unique<Fixture>();
  fx->m = io::bundled_model(p.model);
  fx->sys = testing::catalog_system(p.hw);
  fx->sys.chip.sms = sms;
  if (pdl) fx->sys.chip.efficiency.pdl_overlap_s = 0.5e-6;
  fx->f.pdl = pdl;
  fx->f.tp = p.tp;
  fx->f.ep = p.ep;
  fx->f.fuse_shared_experts = p.fuse_shared;
  fx->f.merged_kernels = merged;
  fx->f.expert_imbalance = imbalance;
  fx->f.eager_host_s = eager_host;
  fx->f.compiled_host_s = compiled_host;
  fx->f.mla_op = static_cast<model::ForwardConfig::MlaOp>(mla_op);
  fx->f.mla_op_host_s = mla_op_host;
  fx->f.mla_op_call_host_s = mla_op_call;
  if (deepgemm) fx->f.scaled_gemm = model::ForwardConfig::ScaledGemm::deepgemm;
  fx->f.mla_pad_v = pad_v;
  if (naive) fx->f.attention = ops::AttentionImpl::naive;
  if (allreduce > 0) {
    fx->f.algo = comm::Algo::direct;
    fx->f.custom_allreduce_max_bytes = allreduce == 1 || allreduce == 5 ? 8 * 1024 * 1024 : allreduce == 2 || allreduce == 4 ? 500e3 : 0;
    fx->f.nccl_nvls = allreduce != 2 && allreduce != 4;
    fx->f.allreduce_norm = allreduce >= 4;
    fx->f.allreduce_norm_max_tokens = allreduce == 5 ? 2048 : 0;
  }
  if (pad > 0) {
    // TensorRT-LLM's 1, 2, 4, steps of 8 to 128, 256, 512; SGLang's 1-8, steps of 2 to 32, of 4
    // to 64, of 8 to 256; vLLM's 1, 2, 4, then steps of 8 to 512.
    if (pad == 1) {
      fx->pad_sizes = {1, 2, 4};
      for (std::int64_t n = 8; n <= 128; n += 8) fx->pad_sizes.push_back(n);
      fx->pad_sizes.insert(fx->pad_sizes.end(), {256, 512});
    } else if (pad == 2) {
      for (std::int64_t n = 1; n <= 8; ++n) fx->pad_sizes.push_back(n);
      for (std::int64_t n = 10; n <= 32; n += 2) fx->pad_sizes.push_back(n);
      for (std::int64_t n = 40; n <= 64; n += 4) fx->pad_sizes.push_back(n);
      for (std::int64_t n = 72; n <= 256; n += 8) fx->pad_sizes.push_back(n);
    } else {
      fx->pad_sizes = {1, 2, 4};
      for (std::int64_t n = 8; n <= 512; n += 8) fx->pad_sizes.push_back(n);
    }
    fx->f.graph_pad_sizes = &fx->pad_sizes;
    fx->f.graph_pad_tokens = pad >= 3;
    fx->f.graph_pad_repeats = pad == 1 || pad == 4;
  }
  fx->step->prepare(fx->m, fx->sys, fx->f);
  return fx;
}

double reference(Fixture& fx, const model::StepMix& mix, GraphMode mode) {
  analysis::PhaseTimes t;
  step_reference(fx.m, fx.sys, fx.f, mix, mode, *fx.g, t);
  return t.t_realistic_s;
}

// A MoE plan whose expert parallelism moves its tokens as `a2a`, merged kernels on a 132-SM
// chip, routing balanced (`imbalance` 1) or under the routing model (0), the parts outside the
// routed experts on the gathered rows or not (`gathered_dense`), prepared.
std::unique_ptr<Fixture> moving(const Plan& p, model::ForwardConfig::MoeA2A a2a, double imbalance, bool gathered_dense = false) {
  auto fx = fixture(p, true, 132, imbalance);
  fx->f.moe_a2a = a2a;
  fx->f.gathered_dense = gathered_dense;
  fx->step->prepare(fx->m, fx->sys, fx->f);
  return fx;
}

// The step model prices `mix` eagerly and as one graph as the step's graph does: exactly with
// routing balanced, to 1e-7 under the routing model (whose F it fits at the step's tokens).
void expect_as_graph(Fixture& fx, const model::StepMix& mix, double imbalance, double label) {
  for (const GraphMode mode : {GraphMode::eager, GraphMode::graph}) {
    EXPECT_NEAR(fx.step->time(mix, mode) / reference(fx, mix, mode), 1, imbalance == 1 ? kExact : 1e-7) << label << " " << name(mode);
  }
}

// A step drawn at random (decodes of 1-4 tokens, prompt chunks after cached context) priced by
// `fx`'s step model and by its graph built op by op, in every launch mode.
void check_random_step(Fixture* fx) {
  const double window = static_cast<double>(fx->m.sliding_window);
  model::StepMix mix;
  mix.fused_attention = *rc::gen::arbitrary<bool>();
  // Small batches half the time, where a graph's captured sizes are dense and most steps pad.
  const int decodes = *rc::gen::arbitrary<bool>() ? *rc::gen::inRange(0, 40) : *rc::gen::inRange(0, 300);
  const double q = *rc::gen::element(1.0, 2.0, 4.0);  // a decode's tokens: 1 + its drafts
  for (int i = 0; i < decodes; ++i) mix.add_decode(*rc::gen::inRange(1, 20000), window, q);
  const int chunks = decodes == 0 ? *rc::gen::inRange(1, 4) : *rc::gen::element(0, 0, 1, 2, 3);
  for (int i = 0; i < chunks; ++i) {
    const double chunk = *rc::gen::inRange(1, 4096);
    mix.add_prefill(chunk, chunk + *rc::gen::inRange(0, 8000), window);
  }
  // How often a graph pads (rapidcheck's classes, printed with its report).
  RC_CLASSIFY(padded_sequences(fx->f, mix, GraphMode::graph) != mix.decode_seqs, "decodes padded");
  for (const GraphMode mode : {GraphMode::eager, GraphMode::graph, GraphMode::piecewise}) {
    const double ref = reference(*fx, mix, mode);
    RC_ASSERT(fx->g->overflow == false);
    RC_ASSERT(std::abs(fx->step->time(mix, mode) / ref - 1) < kExact);
  }
}

RC_GTEST_PROP(StepModel, EqualsTheStepGraphBuiltOpByOp, ()) {
  const Plan& p = kPlans[*rc::gen::inRange<std::size_t>(0, std::size(kPlans))];
  auto fx = fixture(p, *rc::gen::arbitrary<bool>(), *rc::gen::element(0, 108, 132), *rc::gen::element(1.0, 0.0),
                    *rc::gen::arbitrary<bool>(), *rc::gen::inRange(0, 6), *rc::gen::element(0.0, 25e-6, 1e-3),
                    *rc::gen::element(0.0, 9.1e-6, 0.3e-3), *rc::gen::inRange(0, 3), *rc::gen::element(0.0, 43.2e-6, 1e-3),
                    *rc::gen::arbitrary<bool>(), *rc::gen::arbitrary<bool>(), *rc::gen::element(0.0, 117.7e-6, 2e-3),
                    *rc::gen::inRange(0, 5), *rc::gen::arbitrary<bool>());
  check_random_step(fx.get());
}

RC_GTEST_PROP(StepModel, FusedAllReducesEqualTheStepGraphBuiltOpByOp, ()) {
  // The same on the plans with a tensor-parallel group (no attention data parallelism), merged
  // kernels and each all-reduce with its norm inside below the engine's limit (allreduce 4 and
  // 5: TensorRT-LLM's and SGLang's rules), vLLM 0.8's MLA op among the draws (mla_op 2, where
  // the norm stays apart).
  const Plan& p = kPlans[*rc::gen::element<std::size_t>(1, 3, 4, 6)];
  auto fx = fixture(p, true, *rc::gen::element(0, 132), 1, false, *rc::gen::inRange(4, 6), *rc::gen::element(0.0, 25e-6, 1e-3),
                    *rc::gen::element(0.0, 9.1e-6), *rc::gen::inRange(0, 3), *rc::gen::element(0.0, 43.2e-6), *rc::gen::arbitrary<bool>(),
                    false, *rc::gen::element(0.0, 117.7e-6), *rc::gen::element(0, 1, 2));
  RC_ASSERT(fx->f.allreduce_norm);
  check_random_step(fx.get());
}

TEST(StepModel, AnEnginesAllReduceChangesKernelAtItsLimitAsTheStepGraphDoes) {
  // Llama-3.1-70B at TP 4 on H100s, vLLM's rule: its own all-reduce under 8 MiB, NCCL from
  // there. A step of one prefill chunk moves 16384 B a token in each all-reduce: 511 tokens
  // (8372224 B) run in the custom kernel, 512 (exactly 8 MiB) and 513 in NCCL; the step model
  // prices each as the step's graph, and the two sides of the limit as the two kernels do.
  auto fx = fixture(kPlans[1], true, 132, 1, false, 1);
  for (const double q : {511.0, 512.0, 513.0}) {
    model::StepMix mix;
    mix.add_prefill(q, q, 0);
    for (const GraphMode mode : {GraphMode::eager, GraphMode::piecewise}) {
      EXPECT_NEAR(fx->step->time(mix, mode) / reference(*fx, mix, mode), 1, kExact) << q;
    }
  }
  // The same steps with no limit (the custom kernel at every size) differ only from 512 on.
  auto plain = fixture(kPlans[1], true, 132, 1, false, 3);
  model::StepMix at511, at512;
  at511.add_prefill(511, 511, 0);
  at512.add_prefill(512, 512, 0);
  EXPECT_NEAR(fx->step->time(at511, GraphMode::eager) / plain->step->time(at511, GraphMode::eager), 1, kExact);
  EXPECT_GT(std::abs(fx->step->time(at512, GraphMode::eager) / plain->step->time(at512, GraphMode::eager) - 1), 1e-3);
}

TEST(StepModel, AnAllReduceThatNormalisesHandsTheNormBackAtItsLimit) {
  // Llama-3.1-70B at TP 4 on H100s, merged kernels. TensorRT-LLM's rule (allreduce 4): its own
  // all-reduce with the norm inside under 500 kB, 16384 B a token: 30 tokens (491520 B) fused, 31
  // (507904 B) in NCCL with the norm a kernel of its own after it. SGLang's (5): the fused kernel
  // up to 2048 tokens, past it its custom all-reduce (8 MiB: 512 tokens) gives way to NCCL too.
  // The step model prices each step as the step's graph built op by op, the host's launches with
  // it: eagerly at 25 us a kernel the 160 norms launch at 31 tokens and not at 30.
  for (const int rule : {4, 5}) {
    auto fx = fixture(kPlans[1], true, 132, 1, false, rule, 25e-6);
    const double limit = rule == 4 ? 30 : 2048;
    for (const double q : {limit - 1, limit, limit + 1, 4 * limit}) {
      model::StepMix mix;
      mix.add_prefill(q, q, 0);
      for (const GraphMode mode : {GraphMode::eager, GraphMode::piecewise}) {
        EXPECT_NEAR(fx->step->time(mix, mode) / reference(*fx, mix, mode), 1, kExact) << rule << " " << q;
      }
    }
    model::StepMix at, past;
    at.add_prefill(limit, limit, 0);
    past.add_prefill(limit + 1, limit + 1, 0);
    EXPECT_EQ(fx->step->eager_kernels(past, GraphMode::eager) - fx->step->eager_kernels(at, GraphMode::eager), 160) << rule;
  }
}

TEST(StepModel, GatheredTokensArePricedAsTheStepGraphWhateverTheBusiestChipsShare) {
  // The engines' gather (--moe-a2a gather) at Mixtral-8x7B --tp 1 --ep 8: every group's rows to
  // every GPU and back, whatever their experts. Under the routing model the busiest chip's F
  // (1.93, 1.33, 1.12 at 8, 64 and 512 tokens) loads its expert GEMMs, not the gather, the
  // reduce-scatter or the rows' sum: the step model prices each step as the step's graph does,
  // routing balanced and under the routing model, decode steps and a step with a prompt chunk.
  // So too DeepSeek-V3's dense layers, router and shared expert on the gathered rows (SGLang's
  // way, ForwardConfig::gathered_dense), whose GEMMs' tiles are over all groups' rows.
  for (const bool dense : {false, true}) {
    const Plan p = dense ? Plan{"deepseek-v3", "h200", 1, 8} : Plan{"mixtral-8x7b", "h100-sxm", 1, 8};
    for (const double imbalance : {1.0, 0.0}) {
      auto fx = moving(p, model::ForwardConfig::MoeA2A::gather, imbalance, dense);
      for (const int tokens : {8, 64, 512}) {
        model::StepMix mix;
        for (int i = 0; i < tokens; ++i) mix.add_decode(1000, 0);
        if (tokens == 64) mix.add_prefill(300, 300, 0);
        expect_as_graph(*fx, mix, imbalance, dense ? -tokens : tokens);  // DeepSeek's steps labelled negative
      }
    }
  }
}

TEST(StepModel, DeepEpChangesKernelAtItsLowLatencyLimitAsTheStepGraphDoes) {
  // DeepSeek-V3 at --tp 1 --ep 16 (two nodes of H100s) with DeepEP: decode steps of 127, 128
  // and 129 tokens a chip (x 16 chips). Up to 128 its low-latency kernels move every pair, from
  // 129 its normal ones each token once per node (docs/serving.md#deepep). The step model
  // prices each step as the step's graph, routing balanced and under the routing model (which
  // F it fits the limit at: the busiest chip's at 128 tokens a chip); the kernels' bytes
  // differ: 128 tokens cost more than 129.
  const Plan p{"deepseek-v3", "h100-sxm", 1, 16};
  for (const double imbalance : {1.0, 0.0}) {
    auto fx = moving(p, model::ForwardConfig::MoeA2A::deepep, imbalance);
    double at128 = 0, at129 = 0;
    for (const double per_chip : {127.0, 128.0, 129.0}) {
      model::StepMix mix;
      for (int i = 0; i < 16 * static_cast<int>(per_chip); ++i) mix.add_decode(1000, 0);
      expect_as_graph(*fx, mix, imbalance, per_chip);
      (per_chip == 128 ? at128 : at129) = fx->step->time(mix, GraphMode::graph);
      // Across nodes the normal kernels keep the low-latency classes' figures.
      for (int i = 0; i < fx->g->op_count; ++i) {
        const std::string_view name = fx->g->ops[i].name;
        if (name == "ep_dispatch" || name == "ep_combine") {
          EXPECT_EQ(fx->g->ops[i].kernel, name == "ep_dispatch" ? hw::KernelClass::deepep_dispatch : hw::KernelClass::deepep_combine);
        }
      }
    }
    EXPECT_GT(at128, at129) << imbalance;
  }
}

TEST(StepModel, DeepEpsNormalKernelsInsideANodeAreAClassOfTheirOwnAsTheStepGraphHasThem) {
  // DeepSeek-V3 at --tp 1 --ep 8, one node of H100s, DeepEP: up to 128 tokens a chip its
  // low-latency kernels (deepep_dispatch, deepep_combine), from 129 its normal ones, which
  // inside one node are intranode.cu's, priced at their own class (deepep_intranode_dispatch,
  // deepep_intranode_combine: docs/serving.md#deepep). The step model switches class where the
  // step graph does and prices every step as that graph, at 127-129 tokens a chip and at 1000.
  const Plan p{"deepseek-v3", "h100-sxm", 1, 8};
  for (const double imbalance : {1.0, 0.0}) {
    auto fx = moving(p, model::ForwardConfig::MoeA2A::deepep, imbalance);
    for (const double per_chip : {127.0, 128.0, 129.0, 1000.0}) {
      model::StepMix mix;
      for (int i = 0; i < 8 * static_cast<int>(per_chip); ++i) mix.add_decode(1000, 0);
      expect_as_graph(*fx, mix, imbalance, per_chip);
      const bool normal = per_chip > 128;
      int seen = 0;
      for (int i = 0; i < fx->g->op_count; ++i) {
        const std::string_view name = fx->g->ops[i].name;
        if (name == "ep_dispatch" || name == "ep_combine") {
          ++seen;
          const bool dispatch = name == "ep_dispatch";
          const hw::KernelClass want = normal ? (dispatch ? hw::KernelClass::deepep_intranode_dispatch : hw::KernelClass::deepep_intranode_combine)
                                              : (dispatch ? hw::KernelClass::deepep_dispatch : hw::KernelClass::deepep_combine);
          EXPECT_EQ(fx->g->ops[i].kernel, want) << per_chip << " " << name;
        }
      }
      EXPECT_EQ(seen, 2) << per_chip;
    }
  }
}

TEST(StepModel, UniformStepsEqualInfer) {
  // A step of B prompts of P tokens is infer's prefill (eager); a step of B decode tokens at
  // context P + 1 is its first decode step and at P + G - 1 its last (graphs as --cuda-graphs),
  // with the engines' merged kernels or without.
  for (const Plan& p : kPlans) {
    for (const bool merged : {false, true}) {
    auto fx = fixture(p, merged, merged ? 132 : 0);
    for (const bool graphs : {false, true}) {
      analysis::InferenceConfig cfg;
      cfg.forward = fx->f;
      cfg.batch = 8 * p.ep;
      cfg.prompt = 1000;
      cfg.gen = 300;
      cfg.cuda_graphs = graphs;
      auto r = std::make_unique<analysis::InferenceResult>();
      analysis::infer_core(fx->m, fx->sys, cfg, *r);
      const double window = static_cast<double>(fx->m.sliding_window);
      model::StepMix prefill, first, last;
      for (int i = 0; i < cfg.batch; ++i) {
        prefill.add_prefill(1000, 1000, window);
        first.add_decode(1001, window);
        last.add_decode(1299, window);
      }
      const GraphMode decode_mode = graphs ? GraphMode::graph : GraphMode::eager;
      EXPECT_NEAR(fx->step->time(prefill, GraphMode::eager) / r->prefill.t_realistic_s, 1, kExact) << p.model;
      EXPECT_NEAR(fx->step->time(first, decode_mode) / r->decode_first.t_realistic_s, 1, kExact) << p.model;
      EXPECT_NEAR(fx->step->time(last, decode_mode) / r->decode_last.t_realistic_s, 1, kExact) << p.model;
    }
    }
  }
}

TEST(StepModel, TouchedExpertsKeptByTokensPriceAsTheStepGraph) {
  // DeepSeek-V3 at --tp 1 --ep 8: the busiest GPU's touched experts, kept at 0, 1, 2 ...
  // tokens from preparation up to the first count at which the expectation rounds to all 32
  // of its experts (the chance that some chip misses one falls below the last bit), then 32
  // for every count above, where it rounds to 32 too. Steps inside the table, at its end,
  // past it and at a count between two whole ones (priced directly) cost what the step
  // graph built op by op with model::touched_experts costs.
  const model::ModelConfig m = io::bundled_model("deepseek-v3");
  int end = 1;
  while (model::touched_experts(m, 8, end) < 32) ++end;
  ASSERT_GT(end, 50);
  EXPECT_EQ(model::touched_experts(m, 8, 5000), 32);
  const Plan p{"deepseek-v3", "h200", 1, 8};
  auto fx = fixture(p, false, 0, 1);
  for (const double n : {1.0, 8.0, 50.0, end - 1.0, end + 0.0, end + 1.0, 1500.0, 5000.0, 50.5}) {
    model::StepMix mix;
    mix.add_prefill(n, n, 0);
    EXPECT_NEAR(fx->step->time(mix, GraphMode::eager) / reference(*fx, mix, GraphMode::eager), 1, kExact) << n;
  }
}

TEST(StepModel, ExpertsRowTilesPriceAtEachStepsTokensAsTheStepGraph) {
  // DeepSeek-V3's fp8 experts in DeepGEMM's grouped kernels, each expert's rows in whole tiles
  // (model::expert_row_tiles at the busiest GPU's rows), over 8 GPUs by width (--tp 8), by
  // expert (--ep 8, with and without DeepEP, routing balanced and under the routing model) and
  // whole in each tensor-parallel group (--experts ep); under DeepGEMM's contiguous layout
  // (128-row tiles at any size), TensorRT-LLM's port (swapped below 32 tokens, 64-row tiles to
  // 64) and vLLM's (from 128 tokens). Each step costs what its graph costs.
  struct Case {
    Plan plan;
    bool deepep, by_expert;
  };
  const model::ForwardConfig::ExpertTiles rules[] = {{}, {0, 32, 64}, {128, 0, 0}};
  for (const Case& c : {Case{{"deepseek-v3", "h200", 8, 1}, false, false}, Case{{"deepseek-v3", "h200", 1, 8}, false, false},
                        Case{{"deepseek-v3", "h200", 1, 8}, true, false}, Case{{"deepseek-v3", "h200", 8, 1}, false, true}}) {
    for (const double imbalance : {1.0, 0.0}) {
      for (const model::ForwardConfig::ExpertTiles& rule : rules) {
        // The chip's own multiprocessors (its GEMMs tiled), DeepGEMM's kernels.
        auto fx = fixture(c.plan, false, testing::catalog_system(c.plan.hw).chip.sms, imbalance, false, 0, 0, 0, 0, 0, true);
        if (c.deepep) fx->f.moe_a2a = model::ForwardConfig::MoeA2A::deepep;
        if (c.by_expert) fx->f.experts = model::ForwardConfig::Experts::expert;
        fx->f.expert_tiles = rule;
        fx->step->prepare(fx->m, fx->sys, fx->f);
        for (const double n : {1.0, 7.0, 31.0, 32.0, 64.0, 65.0, 127.0, 128.0, 1024.0, 1032.0, 1600.0, 4096.0, 8192.0}) {
          model::StepMix mix;
          mix.add_prefill(n, n, 0);
          EXPECT_NEAR(fx->step->time(mix, GraphMode::eager) / reference(*fx, mix, GraphMode::eager), 1, imbalance == 1 ? kExact : 1e-7)
              << n << " " << c.plan.ep << c.deepep << c.by_expert << " " << rule.from_tokens << rule.swap_below;
        }
        if (imbalance != 1) continue;
        // The gate-up GEMM's padded rows in the step graph: none behind DeepEP's low-latency
        // kernels (to 128 tokens a GPU, 1024 here), below the port's swap (32 tokens) or below
        // vLLM's 128 tokens.
        const auto padded = [&](double n) {
          model::StepMix mix;
          mix.add_prefill(n, n, 0);
          analysis::PhaseTimes t;
          step_reference(fx->m, fx->sys, fx->f, mix, GraphMode::eager, *fx->g, t);
          for (int i = 0; i < fx->g->op_count; ++i) {
            if (std::string_view(fx->g->ops[i].name) == "experts_gate_up") return fx->g->ops[i].row_tile_pad;
          }
          return -1.0;
        };
        EXPECT_GT(padded(1032), 0);
        EXPECT_EQ(padded(1024) > 0, !c.deepep);
        EXPECT_EQ(padded(31) > 0, !c.deepep && rule.swap_below == 0 && rule.from_tokens == 0);
        EXPECT_EQ(padded(32) > 0, !c.deepep && rule.from_tokens == 0);
        EXPECT_EQ(padded(128) > 0, !c.deepep);
      }
    }
  }
}

TEST(StepModel, OneStageExpertsPriceTheirRowTilesAtEachStepsTokensAsTheStepGraph) {
  // DeepSeek-V3's fp8 experts split by width over 8 MI325Xs in AITER's one-stage kernel of 32-row
  // tiles (ForwardConfig::expert_reread_tile: each expert's weights read once per tile of its
  // rows, model::expert_weight_reads), with and without the shared expert inside it (read once
  // per tile of every token's rows). Steps from one token to past the tiles' second row of an
  // expert and a count between two whole ones: each costs what its graph costs.
  for (const bool fuse : {false, true}) {
    auto fx = fixture({"deepseek-v3", "mi325x", 8, 1, fuse});
    fx->f.expert_reread_tile = 32;
    fx->step->prepare(fx->m, fx->sys, fx->f);
    for (const double n : {1.0, 7.0, 32.0, 33.0, 64.0, 100.0, 1024.0, 7373.0, 16384.0, 50.5}) {
      model::StepMix mix;
      mix.add_prefill(n, n, 0);
      EXPECT_NEAR(fx->step->time(mix, GraphMode::eager) / reference(*fx, mix, GraphMode::eager), 1, kExact) << n << " " << fuse;
    }
    // (the step graph's MoE layers hold the one-stage op, and no two-stage GEMM)
    int onestage = 0, down = 0;
    for (int i = 0; i < fx->g->op_count; ++i) {
      onestage += fx->g->ops[i].kernel == hw::KernelClass::gemm_expert_onestage ? 1 : 0;
      down += std::string_view(fx->g->ops[i].name) == "experts_down" ? 1 : 0;
    }
    EXPECT_GT(onestage, 0);
    EXPECT_EQ(down, 0);
  }
}

TEST(StepModel, RoutingModelPricesEachStepAtItsTokens) {
  // Mixtral-8x7B at --tp 1 --ep 4 (experts over G 4 GPUs, 2 each). A decode step of 48
  // sequences routes 48 tokens: the routing model's busiest GPU has F = 1 + e_4·√(4·6/(7·2·48))
  // = 1 + 1.0293753730·0.1889822 = 1.1945337 times the mean pairs (tests/model/routing_test.cpp),
  // so the step costs what the step's graph costs with --expert-imbalance 1.1945337; a step of
  // 192 tokens has F − 1 half of that: 1.0972668.
  const Plan p{"mixtral-8x7b", "h100-sxm", 1, 4};
  auto model = fixture(p, false, 0, 0);
  for (const auto& [n, F] : {std::pair{48, 1.1945337}, std::pair{192, 1.0972668}}) {
    auto given = fixture(p, false, 0, F);
    model::StepMix mix;
    for (int i = 0; i < n; ++i) mix.add_decode(1000, 0);
    for (const GraphMode mode : {GraphMode::eager, GraphMode::graph}) {
      EXPECT_NEAR(model->step->time(mix, mode) / reference(*given, mix, mode), 1, 1e-7) << n;
      EXPECT_NEAR(given->step->time(mix, mode) / reference(*given, mix, mode), 1, kExact) << n;
    }
    // Busier than balanced.
    auto even = fixture(p, false, 0, 1);
    EXPECT_GT(model->step->time(mix, GraphMode::graph), even->step->time(mix, GraphMode::graph));
  }
}

TEST(StepModel, AnEagerStepLastsAtLeastItsKernelsTimesTheHostsTime) {
  // Llama-3.1-8B with an engine's merged kernels, its host 1 ms a kernel it launches (far past
  // any kernel here). A layer launches 10 kernels: add + input norm, qkv_proj, rope,
  // kv_cache_write, attention, o_proj, add + post-attention norm, gate_up_proj, silu_mul,
  // down_proj; the pass 5 more: embedding, final add + norm, lm_head, the logits' cast to fp32
  // and their argmax. 32 x 10 + 5 = 325 kernels: an eager step of two decodes lasts 325 ms. A
  // prefill chunk beside them adds its own attention kernel on each layer (357 ms), or none
  // when one fused kernel takes both (325 ms). Piecewise graphs leave the host the 32 attention
  // kernels (32 ms); one graph, none: the step is its device time, as without the host's cost.
  auto fx = fixture(kPlans[0], true, 0, 1, false, 0, 1e-3);
  auto plain = fixture(kPlans[0], true);
  model::StepMix decodes, mixed;
  decodes.add_decode(1000, 0);
  decodes.add_decode(1000, 0);
  mixed = decodes;
  mixed.add_prefill(100, 100, 0);
  EXPECT_NEAR(fx->step->time(decodes, GraphMode::eager), 0.325, 1e-12);
  EXPECT_NEAR(fx->step->time(mixed, GraphMode::eager), 0.357, 1e-12);
  EXPECT_NEAR(fx->step->time(decodes, GraphMode::piecewise), 0.032, 1e-12);
  EXPECT_NEAR(fx->step->time(mixed, GraphMode::piecewise), 0.064, 1e-12);
  mixed.fused_attention = true;
  EXPECT_NEAR(fx->step->time(mixed, GraphMode::eager), 0.325, 1e-12);
  EXPECT_NEAR(fx->step->time(mixed, GraphMode::piecewise), 0.032, 1e-12);
  EXPECT_EQ(fx->step->time(decodes, GraphMode::graph), plain->step->time(decodes, GraphMode::graph));
  // The device's time stays the floor's when it is longer: 10 us a kernel is 3.25 ms, under the
  // device's time for these decodes, which stays as without the host's cost.
  auto light = fixture(kPlans[0], true, 0, 1, false, 0, 10e-6);
  EXPECT_GT(plain->step->time(decodes, GraphMode::eager), 325 * 10e-6);
  EXPECT_EQ(light->step->time(decodes, GraphMode::eager), plain->step->time(decodes, GraphMode::eager));
  EXPECT_DOUBLE_EQ(fx->step->eager_kernels(mixed, GraphMode::eager), 325);
}

TEST(StepModel, ACompiledModelsKernelsCostTheHostTheirOwnTime) {
  // The same 8B with its attention launched by the engine's Python at 1 ms a kernel and every
  // other kernel by the compiled model's code at 0.1 ms (vLLM V1 past its largest graph): an
  // eager step of two decodes holds 32 attention kernels and 325 - 32 = 293 others, 32 x 1 +
  // 293 x 0.1 = 61.3 ms. Piecewise graphs leave the host attention alone: 32 ms, as before.
  auto fx = fixture(kPlans[0], true, 0, 1, false, 0, 1e-3, 0.1e-3);
  model::StepMix decodes;
  decodes.add_decode(1000, 0);
  decodes.add_decode(1000, 0);
  EXPECT_NEAR(fx->step->time(decodes, GraphMode::eager), 0.0613, 1e-12);
  EXPECT_NEAR(fx->step->eager_host_s(decodes, GraphMode::eager), 0.0613, 1e-12);
  EXPECT_NEAR(fx->step->time(decodes, GraphMode::piecewise), 0.032, 1e-12);
  EXPECT_NEAR(reference(*fx, decodes, GraphMode::eager), 0.0613, 1e-12);
  // Without a compiled figure every kernel costs the Python's: 325 ms.
  auto plain = fixture(kPlans[0], true, 0, 1, false, 0, 1e-3);
  EXPECT_NEAR(plain->step->eager_host_s(decodes, GraphMode::eager), 0.325, 1e-12);
}

TEST(StepModel, DecodeAttentionByHand) {
  // Llama-3.1-8B on the toy chip (1 TB/s, 100 TFLOP/s bf16, fp32 vector 10 TFLOP/s): a
  // decode token at context L reads 8 KV heads x 128 x (K + V) x 2 bytes = 4096 bytes per
  // position per layer, reads Q (32 heads x 128 x 2 bytes = 8192) and writes O (8192). Its
  // math: QK^T and PV, 2·32·L·(128 + 128) FLOPs; softmax 32·(5L + 128) on the vector unit.
  // Decode attention is linear in the context, so two tokens at 500 and 1500 cost what two
  // at 1000 do, and the kernel of two tokens at 1000 moves 2·(1000·4096 + 16384) bytes.
  hw::System sys = testing::toy_system();
  model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  model::ForwardConfig f;
  StepModel step;
  step.prepare(m, sys, f);
  model::StepMix a, b;
  a.add_decode(500, 0);
  a.add_decode(1500, 0);
  b.add_decode(1000, 0);
  b.add_decode(1000, 0);
  EXPECT_NEAR(step.time(a, GraphMode::graph) / step.time(b, GraphMode::graph), 1, kExact);

  // The attention kernel alone, from the reference graph: one kernel at 2 tokens x 1000.
  auto g = std::make_unique<model::Graph>();
  analysis::PhaseTimes t;
  step_reference(m, sys, f, b, GraphMode::graph, *g, t);
  int found = 0;
  for (int i = 0; i < g->op_count; ++i) {
    if (g->ops[i].cls != model::OpClass::attention) continue;
    ++found;
    const ops::TimeParts parts = ops::time_parts(g->ops[i].cost, ops::Rates(sys.chip));
    const double bytes = 2 * (1000.0 * 4096 + 2 * 32 * 128 * 2);
    EXPECT_NEAR(parts.memory, bytes / 1e12, 1e-15);
    EXPECT_NEAR(parts.matrix, 2 * 4 * 32 * 128 * 1000.0 / 100e12, 1e-18);
    EXPECT_NEAR(parts.vector, 2 * 32 * (5 * 1000.0 + 128) / 10e12, 1e-18);
  }
  EXPECT_EQ(found, 1);  // one kernel for the step's decode tokens, on the one kind of layer
}

TEST(StepModel, MixedStepIsOneGraphWithBothKindsOfAttention) {
  // A mixed step runs the GEMMs once over decode and prefill tokens together: 100 decode
  // tokens + a 400-token chunk cost less than a 100-token decode step plus a 400-token
  // prefill step (the weights are read once), and more than either. Split attention runs two
  // kernels on every layer, fused one.
  auto fx = fixture(kPlans[1]);  // llama-3.1-70b, tp 4
  model::StepMix mixed, decode, prefill;
  for (int i = 0; i < 100; ++i) {
    mixed.add_decode(2000, 0);
    decode.add_decode(2000, 0);
  }
  mixed.add_prefill(400, 1400, 0);
  prefill.add_prefill(400, 1400, 0);
  const double tm = fx->step->time(mixed, GraphMode::eager);
  const double td = fx->step->time(decode, GraphMode::eager), tp = fx->step->time(prefill, GraphMode::eager);
  EXPECT_LT(tm, td + tp);
  EXPECT_GT(tm, std::max(td, tp));
  int split = 0, fused = 0;
  analysis::PhaseTimes t;
  step_reference(fx->m, fx->sys, fx->f, mixed, GraphMode::eager, *fx->g, t);
  for (int i = 0; i < fx->g->op_count; ++i) split += fx->g->ops[i].cls == model::OpClass::attention;
  mixed.fused_attention = true;
  step_reference(fx->m, fx->sys, fx->f, mixed, GraphMode::eager, *fx->g, t);
  for (int i = 0; i < fx->g->op_count; ++i) fused += fx->g->ops[i].cls == model::OpClass::attention;
  EXPECT_EQ(split, 2);
  EXPECT_EQ(fused, 1);
}

TEST(StepModel, CountsOfAChunkAfterCachedContext) {
  // A chunk of 3 tokens at positions 5, 6, 7 (5 cached): causal pairs 6 + 7 + 8 = 21; keys 8.
  // With a window of 4 each query sees 4 keys (12 pairs), and the keys read start at the
  // first query's window: positions 2..7, min(kv, W + q - 1) = 6.
  model::StepMix mix;
  mix.add_prefill(3, 8, 4);
  EXPECT_EQ(mix.prefill_full.pairs, 21);
  EXPECT_EQ(mix.prefill_full.keys, 8);
  EXPECT_EQ(mix.prefill_window.pairs, 12);
  EXPECT_EQ(mix.prefill_window.keys, 6);
  EXPECT_EQ(mix.prefill_tokens, 3);
  EXPECT_EQ(mix.prefill_positions, 8);
  // A decode token at context 10 with a window of 4: 4 pairs, 4 keys; without: 10 and 10.
  mix.add_decode(10, 4);
  EXPECT_EQ(mix.decode_full.pairs, 10);
  EXPECT_EQ(mix.decode_window.keys, 4);
  EXPECT_EQ(mix.tokens(), 4);
  EXPECT_EQ(mix.seqs(), 2);
}


TEST(StepModel, AttentionDataParallelGroupsPriceTheBusiestGroup) {
  // Mixtral-8x7B at TP 1, EP 8 (8 attention data-parallel groups). (1) The groups equally
  // loaded, each 1/8 of the mix: time(group_share(mix), mix) is time(mix), the balanced step.
  // (2) Every sequence of the mix on one group (a lone prompt): its attention and dense ops
  // run on all of them, so the step is longer than the balanced one, while its expert part is
  // the same (it reads all groups' tokens either way). (3) At EP 1 the group is the mix.
  auto fx = fixture({"mixtral-8x7b", "h100-sxm", 1, 8});
  model::StepMix mix;
  for (int i = 0; i < 8; ++i) mix.add_prefill(1000, 1000, 0);
  const model::StepMix share = fx->step->group_share(mix);
  EXPECT_DOUBLE_EQ(share.prefill_tokens, 1000);  // 8000 / 8
  for (const GraphMode mode : {GraphMode::eager, GraphMode::graph}) {
    EXPECT_NEAR(fx->step->time(share, mix, mode) / fx->step->time(mix, mode), 1, kExact);
    EXPECT_GT(fx->step->time(mix, mix, mode), fx->step->time(mix, mode));
  }
  auto one = fixture({"mixtral-8x7b", "h100-sxm", 1, 1});
  EXPECT_EQ(one->step->time(mix, mix, GraphMode::eager), one->step->time(mix, GraphMode::eager));
}

TEST(StepModel, TheSlowestGroupPricesTheExpertPartOnceAndEachGroupsOwnPart) {
  // Mixtral-8x7B at TP 1, EP 8: groups stepping together last as long as the slowest one's
  // step, time(group, mix) with mix all groups' sequences (its expert part common to all).
  // Group 0: 3 decode sequences at context 2000; group 1: 5 at 100; group 2: a 512-token chunk
  // after 512 cached; the other 5 groups idle (dummy passes, skipped). slowest() is the max of
  // the three, with or without the memo of decode-only groups' own parts (asked twice: the
  // second time from the memo), and no idle group counts.
  // Mixtral, and DeepSeek-V3 with vLLM's MLA attention op (its piecewise steps priced apart
  // from its graphs: the memo keeps each mode's own parts in a slot of its own).
  auto mixtral = fixture({"mixtral-8x7b", "h100-sxm", 1, 8});
  auto deepseek = fixture({"deepseek-v3", "h200", 1, 8}, true, 0, 1, false, 0, 25e-6, 9.1e-6, 1, 37.25e-6);
  std::vector<model::StepMix> groups(8);
  for (int i = 0; i < 3; ++i) groups[0].add_decode(2000, 0);
  for (int i = 0; i < 5; ++i) groups[1].add_decode(100, 0);
  groups[2].add_prefill(512, 1024, 0);
  model::StepMix mix;
  for (int i = 0; i < 3; ++i) mix.add_decode(2000, 0);
  for (int i = 0; i < 5; ++i) mix.add_decode(100, 0);
  mix.add_prefill(512, 1024, 0);
  for (Fixture* fx : {mixtral.get(), deepseek.get()}) {
    StepModel::RankMemo memo;
    for (auto& own : memo.own) own.assign(64, -1.0);
    const bool mla = fx == deepseek.get();
    for (const GraphMode mode : {GraphMode::eager, GraphMode::graph, GraphMode::piecewise}) {
      const double want = std::max({fx->step->time(groups[0], mix, mode), fx->step->time(groups[1], mix, mode),
                                    fx->step->time(groups[2], mix, mode)});
      EXPECT_NEAR(fx->step->slowest(groups.data(), groups.size(), mix, mode) / want, 1, kExact);
      for (int twice = 0; twice < 2; ++twice) {
        EXPECT_NEAR(fx->step->slowest(groups.data(), groups.size(), mix, mode, &memo) / want, 1, kExact);
      }
      // Group 0's 3 decode tokens and group 1's 5 remembered: eager [0], graph [1], piecewise [2]
      // where an op runs in the attention op (else the graph's slot).
      const std::size_t slot = mode == GraphMode::eager ? 0 : mode == GraphMode::piecewise && mla ? 2 : 1;
      EXPECT_GE(memo.own[slot][3], 0);
      EXPECT_GE(memo.own[slot][5], 0);
    }
    // With the op, a piecewise step's decode-only group is not its graph's: the op's kernels run
    // outside the pieces at their launch floors.
    if (mla) {
      EXPECT_GT(memo.own[2][3], memo.own[1][3]);
    }
  }
}

}  // namespace
}  // namespace ridgeline::serving

namespace ridgeline::serving {
namespace {

// A CUDA graph's padding (docs/serving.md#graph-padding): TensorRT-LLM rounds a decode batch up
// to the next captured size and runs the graph on dummy requests of a token or two for the
// rest. A decode step of 261 sequences with graphs of 256 and 384 computes every kernel but
// attention on 384 rows: its non-attention part (base) is 384 sequences' unpadded, and its
// attention 261's. A step at a captured size, past the largest one, launched eagerly or with a
// prompt chunk is its own.
TEST(StepModel, AGraphStepPaddedToItsCapturedSizeComputesEveryKernelButAttentionOnThePaddingRows) {
  const Plan p{"llama-3.1-70b", "h100-sxm", 4, 1};
  auto plain = fixture(p, true, 132);
  auto padded = fixture(p, true, 132);
  const std::vector<std::int64_t> sizes = {256, 384};
  padded->f.graph_pad_sizes = &sizes;
  padded->step->prepare(padded->m, padded->sys, padded->f);
  auto decodes = [](int n) {
    model::StepMix mix;
    for (int i = 0; i < n; ++i) mix.add_decode(1000, 0);
    return mix;
  };
  const model::StepMix m261 = decodes(261), m384 = decodes(384);
  const StepModel& a = *plain->step;
  const StepModel& b = *padded->step;
  EXPECT_DOUBLE_EQ(b.base(m261, GraphMode::graph), a.base(m384, GraphMode::graph));
  EXPECT_DOUBLE_EQ(b.time(m261, GraphMode::graph), a.with_attention(a.base(m384, GraphMode::graph), m261, GraphMode::graph));
  EXPECT_GT(b.time(m261, GraphMode::graph), a.time(m261, GraphMode::graph));
  // The step built op by op on the padded rows (what serve's step breakdown composes) agrees.
  EXPECT_LT(std::abs(b.time(m261, GraphMode::graph) / reference(*padded, m261, GraphMode::graph) - 1), kExact);
  for (const int n : {256, 384, 385}) {
    EXPECT_DOUBLE_EQ(b.time(decodes(n), GraphMode::graph), a.time(decodes(n), GraphMode::graph)) << n;
  }
  EXPECT_DOUBLE_EQ(b.time(m261, GraphMode::eager), a.time(m261, GraphMode::eager));
  model::StepMix mixed = m261;
  mixed.add_prefill(128, 128, 0);
  EXPECT_DOUBLE_EQ(b.time(mixed, GraphMode::graph), a.time(mixed, GraphMode::graph));
}

// What a padded step holds, counted by hand (the property test above shares pad_rows between
// its two sides, so these pin the rule itself). SGLang's speculative list (..., 8, 10, 12, ...)
// counts sequences: 9 verifying 2 drafts each (27 tokens) pad to 10 sequences, 30 tokens.
// vLLM V0 counts rows, a sequence's k + 1 of them: 5 verifying 1 draft are 10 rows, padded to
// 16 (1, 2, 4, 8, 16, ...): 8 sequences' worth, 16 - 10 - 1 = 5 rows repeating the first padding
// row. vLLM V1 pads a step with a prompt chunk by chunk tokens: 3 decodes and a 70-token chunk
// (73 tokens) to 80, the 3 sequences kept, dearer than unpadded as graphs, the same eagerly.
TEST(StepModel, APaddedStepHoldsTheRowsItsEngineCounts) {
  auto sglang = fixture(kPlans[0], true, 132, 1, false, 0, 0, 0, 0, 0, false, false, 0, 2);
  model::StepMix nine;
  for (int i = 0; i < 9; ++i) nine.add_decode(1000, 0, 3);
  EXPECT_DOUBLE_EQ(padded_sequences(sglang->f, nine, GraphMode::graph), 10);
  EXPECT_DOUBLE_EQ(padded_sequences(sglang->f, nine, GraphMode::eager), 9);
  auto v0 = fixture(kPlans[3], true, 132, 1, false, 0, 0, 0, 0, 0, false, false, 0, 4);
  model::StepMix five;
  for (int i = 0; i < 5; ++i) five.add_decode(1000, 0, 2);
  EXPECT_DOUBLE_EQ(padded_sequences(v0->f, five, GraphMode::graph), 8);
  // The repeated rows reach the experts: 11 distinct rows' (10 real, 1 padding), not 16.
  auto v1 = fixture(kPlans[3], true, 132, 1, false, 0, 0, 0, 0, 0, false, false, 0, 3);
  EXPECT_LT(v0->step->time(five, GraphMode::graph), v1->step->time(five, GraphMode::graph));
  model::StepMix mixed;
  for (int i = 0; i < 3; ++i) mixed.add_decode(1000, 0);
  mixed.add_prefill(70, 70, 0);
  EXPECT_DOUBLE_EQ(padded_sequences(v1->f, mixed, GraphMode::piecewise), 3);
  auto plain = fixture(kPlans[3], true, 132);
  EXPECT_GT(v1->step->time(mixed, GraphMode::piecewise), plain->step->time(mixed, GraphMode::piecewise));
  EXPECT_DOUBLE_EQ(v1->step->time(mixed, GraphMode::eager), plain->step->time(mixed, GraphMode::eager));
}

// Attention data-parallel ranks padded to their busiest (docs/serving.md#rank-padding),
// Mixtral-8x7B at TP 1, EP 4: rank 0 holds 3 decodes at context 1000, rank 1 7 at 500, ranks 2
// and 3 are idle; captured sizes 1, 2, 4, 8, 16. Each padded step is priced as the unpadded
// model prices the mixes padded by hand: each rank's own part on its rows padded, its attention
// on its own sequences, the expert part over all four ranks' rows.
// - By tokens, in graphs (vLLM 0.17+): the busiest's 7 tokens pad to 8, every rank to 8 (rank
//   0's 3 sequences become 8 rows), the expert part over 4 x 8 = 32 tokens. The same step
//   launched eagerly pads nothing.
// - By tokens, always (vLLM 0.9.1-0.16): eagerly every rank to the busiest's own 7 (4 x 7 = 28).
// - By sequences with one request repeated (TensorRT-LLM), verifying 1 draft (2 tokens a
//   sequence): the busiest's 7 sequences pad to 8, each rank to 8 sequences of 2 tokens (16),
//   the expert part over 4 x 16 = 64 tokens of which the padding's 32 - 10 = 22 sequences but the
//   first repeat it: 2 x 21 = 42 rows. A step with a prompt chunk pads nothing by sequences.
// - By tokens, a step with a prompt chunk (rank 2: 100 tokens, launched as piecewise graphs):
//   every rank to 128, the next size, the decode ranks' padding as chunk tokens (no logits:
//   rank 0's 3 decodes and 125 tokens, rank 1's 7 and 121, rank 2's 100 and 28), 4 x 128 = 512
//   tokens in the expert part. Priced again through the memo of decode ranks' own parts, then a
//   decode-only step whose rank 0 holds as many decode tokens (4, its busiest): the padded
//   mixed rank's own part is not the decode rank's.
TEST(StepModel, AttentionDataParallelRanksPadToTheirBusiest) {
  const Plan p{"mixtral-8x7b", "h100-sxm", 1, 4};
  const std::vector<std::int64_t> sizes = {1, 2, 4, 8, 16, 128};
  using RankPad = model::ForwardConfig::RankPad;
  auto padded = [&](RankPad rule, bool tokens, bool repeats) {
    auto fx = fixture(p, true);
    fx->f.graph_pad_sizes = &sizes;
    fx->f.graph_pad_tokens = tokens;
    fx->f.graph_pad_repeats = repeats;
    fx->f.rank_pad = rule;
    fx->step->prepare(fx->m, fx->sys, fx->f);
    return fx;
  };
  auto bare = fixture(p, true);
  const StepModel& b = *bare->step;
  auto ranks = [](double q) {
    std::vector<model::StepMix> g(4);
    for (int i = 0; i < 3; ++i) g[0].add_decode(1000, 0, q);
    for (int i = 0; i < 7; ++i) g[1].add_decode(500, 0, q);
    return g;
  };
  // The four ranks' sequences together (with a 100-token prompt besides: `chunk`).
  auto all = [](double q, bool chunk = false) {
    model::StepMix mix;
    for (int i = 0; i < 3; ++i) mix.add_decode(1000, 0, q);
    for (int i = 0; i < 7; ++i) mix.add_decode(500, 0, q);
    if (chunk) mix.add_prefill(100, 100, 0);
    return mix;
  };
  // Rank r's own rows padded by hand: `seqs` sequences of `tokens` tokens in all.
  auto rows = [](model::StepMix x, double seqs, double tokens) {
    x.decode_seqs = seqs;
    x.decode_tokens = tokens;
    return x;
  };
  {
    auto fx = padded(RankPad::graphs, true, false);
    const std::vector<model::StepMix> g = ranks(1);
    const model::StepMix mix = all(1);
    model::StepMix whole = mix;
    whole.decode_tokens = 32;
    const double want = std::max(b.time(rows(g[0], 8, 8), whole, GraphMode::graph), b.time(rows(g[1], 8, 8), whole, GraphMode::graph));
    EXPECT_NEAR(fx->step->slowest(g.data(), g.size(), mix, GraphMode::graph) / want, 1, kExact);
    EXPECT_GT(want, b.slowest(g.data(), g.size(), mix, GraphMode::graph));
    EXPECT_NEAR(fx->step->slowest(g.data(), g.size(), mix, GraphMode::eager) / b.slowest(g.data(), g.size(), mix, GraphMode::eager), 1,
                kExact);
    // time(group, mix) takes the group for the busiest: rank 1's 7 pad to 8, so the same step.
    EXPECT_NEAR(fx->step->time(g[1], mix, GraphMode::graph) / b.time(rows(g[1], 8, 8), whole, GraphMode::graph), 1, kExact);
  }
  {
    auto fx = padded(RankPad::always, true, false);
    const std::vector<model::StepMix> g = ranks(1);
    const model::StepMix mix = all(1);
    model::StepMix whole = mix;
    whole.decode_tokens = 28;
    const double want = std::max(b.time(rows(g[0], 7, 7), whole, GraphMode::eager), b.time(g[1], whole, GraphMode::eager));
    EXPECT_NEAR(fx->step->slowest(g.data(), g.size(), mix, GraphMode::eager) / want, 1, kExact);
  }
  {
    auto fx = padded(RankPad::graphs, false, true);
    const std::vector<model::StepMix> g = ranks(2);
    const model::StepMix mix = all(2);
    model::StepMix whole = mix;
    whole.decode_tokens = 64;
    whole.repeated_rows = 42;
    const double want = std::max(b.time(rows(g[0], 8, 16), whole, GraphMode::graph), b.time(rows(g[1], 8, 16), whole, GraphMode::graph));
    EXPECT_NEAR(fx->step->slowest(g.data(), g.size(), mix, GraphMode::graph) / want, 1, kExact);
    std::vector<model::StepMix> chunked = g;
    chunked[2].add_prefill(100, 100, 0);
    const model::StepMix with_chunk = all(2, true);
    EXPECT_NEAR(fx->step->slowest(chunked.data(), chunked.size(), with_chunk, GraphMode::piecewise) /
                    b.slowest(chunked.data(), chunked.size(), with_chunk, GraphMode::piecewise),
                1, kExact);
  }
  {
    auto fx = padded(RankPad::graphs, true, false);
    std::vector<model::StepMix> g = ranks(1);
    g[2].add_prefill(100, 100, 0);
    const model::StepMix mix = all(1, true);
    std::vector<model::StepMix> own = g;
    own[0].prefill_tokens += 125;
    own[1].prefill_tokens += 121;
    own[2].prefill_tokens += 28;
    model::StepMix whole = mix;
    whole.decode_tokens += 512 - 110;
    // Each rank's own part on its padded rows, its attention on its own (time(own, whole) would
    // count the padding's chunk tokens nowhere else): the ranks' times apart.
    double want = 0;
    for (int r = 0; r < 3; ++r) want = std::max(want, b.time(own[static_cast<std::size_t>(r)], whole, GraphMode::piecewise));
    EXPECT_NEAR(fx->step->slowest(g.data(), g.size(), mix, GraphMode::piecewise) / want, 1, kExact);
    // Rank 0's 3 decodes padded with chunk tokens keep their 3 rows of logits: fewer than the
    // decode rows the same 128 tokens would be.
    model::StepMix as_decodes = g[0];
    as_decodes.decode_seqs = as_decodes.decode_tokens = 128;
    EXPECT_LT(b.time(own[0], whole, GraphMode::piecewise), b.time(as_decodes, whole, GraphMode::piecewise));
    StepModel::RankMemo memo;
    for (auto& slot : memo.own) slot.assign(64, -1.0);
    std::vector<model::StepMix> four(4);
    for (int i = 0; i < 4; ++i) four[0].add_decode(1000, 0);
    four[1].add_decode(500, 0);
    model::StepMix four_all;
    for (int i = 0; i < 4; ++i) four_all.add_decode(1000, 0);
    four_all.add_decode(500, 0);
    std::vector<model::StepMix> four_mixed = four;
    four_mixed[2].add_prefill(100, 100, 0);
    model::StepMix four_mixed_all = four_all;
    four_mixed_all.add_prefill(100, 100, 0);
    fx->step->slowest(four_mixed.data(), four_mixed.size(), four_mixed_all, GraphMode::graph, &memo);
    EXPECT_EQ(fx->step->slowest(four.data(), four.size(), four_all, GraphMode::graph, &memo),
              fx->step->slowest(four.data(), four.size(), four_all, GraphMode::graph));
  }  {
    // SGLang's MAX_LEN (RankPad::max_len), by sequences: an eager decode-only step pads every rank
    // to the busiest's sequences where twice their sum reaches the busiest's times the ranks.
    // Ranks of 3, 7, 5 and 6 sequences: 2 x 21 = 42 >= 7 x 4 = 28, so each runs 7 and the expert
    // part 28 (the padding's 7 sequences route as tokens: repeats off). Ranks of 7, 7 and two idle:
    // 2 x 14 = 28 >= 28, the same 7 each. Ranks of 3 and 7 and two idle: 2 x 10 = 20 < 28,
    // gathered SUM_LEN, nothing pads. A step with a prompt chunk is an extend (SUM_LEN): nothing
    // pads eagerly; a speculative round's verification (2 tokens a sequence) is a decode batch to
    // the scheduler and pads: 7 sequences of 2 tokens a rank, 28 and 56 in the expert part. As
    // graphs every rank pads to 8, the captured size at or above 7, as under RankPad::graphs. The
    // report's mean step, 21 sequences spread evenly: the busiest's ⌈21 / 4⌉ = 6, 2 x 21 >= 24,
    // so 4 x 6 = 24 eagerly, 4 x 8 = 32 as graphs.
    auto fx = padded(RankPad::max_len, false, false);
    auto balanced = [&](double q, bool chunk = false) {
      std::vector<model::StepMix> g = ranks(q);
      model::StepMix mix = all(q, chunk);
      for (int i = 0; i < 5; ++i) g[2].add_decode(800, 0, q), mix.add_decode(800, 0, q);
      for (int i = 0; i < 6; ++i) g[3].add_decode(800, 0, q), mix.add_decode(800, 0, q);
      if (chunk) g[2].add_prefill(100, 100, 0);
      return std::pair{g, mix};
    };
    // (Not structured bindings: a lambda below captures them, which clang 14 refuses.)
    const auto balanced_ranks = balanced(1);
    const std::vector<model::StepMix>& g = balanced_ranks.first;
    const model::StepMix& mix = balanced_ranks.second;
    auto padded_to = [&](double n) {
      model::StepMix whole = mix;
      whole.decode_seqs = whole.decode_tokens = 4 * n;
      double t = 0;
      for (const model::StepMix& r : g) t = std::max(t, b.time(rows(r, n, n), whole, GraphMode::eager));
      return std::pair{t, whole};
    };
    const auto [eager, whole7] = padded_to(7);
    EXPECT_NEAR(fx->step->slowest(g.data(), g.size(), mix, GraphMode::eager) / eager, 1, kExact);
    EXPECT_GT(eager, b.slowest(g.data(), g.size(), mix, GraphMode::eager));
    EXPECT_NEAR(fx->step->time(g[1], mix, GraphMode::eager) / b.time(g[1], whole7, GraphMode::eager), 1, kExact);
    model::StepMix whole8 = mix;
    whole8.decode_seqs = whole8.decode_tokens = 32;
    double graph = 0;
    for (const model::StepMix& r : g) graph = std::max(graph, b.time(rows(r, 8, 8), whole8, GraphMode::graph));
    EXPECT_NEAR(fx->step->slowest(g.data(), g.size(), mix, GraphMode::graph) / graph, 1, kExact);
    const std::vector<model::StepMix> apart = ranks(1);
    const model::StepMix apart_all = all(1);
    EXPECT_NEAR(fx->step->slowest(apart.data(), apart.size(), apart_all, GraphMode::eager) /
                    b.slowest(apart.data(), apart.size(), apart_all, GraphMode::eager),
                1, kExact);
    std::vector<model::StepMix> pair(4);
    model::StepMix pair_all;
    for (int r = 0; r < 2; ++r) {
      for (int i = 0; i < 7; ++i) pair[static_cast<std::size_t>(r)].add_decode(900, 0), pair_all.add_decode(900, 0);
    }
    model::StepMix pair_whole = pair_all;
    pair_whole.decode_seqs = pair_whole.decode_tokens = 28;
    EXPECT_NEAR(fx->step->slowest(pair.data(), pair.size(), pair_all, GraphMode::eager) /
                    std::max(b.time(pair[0], pair_whole, GraphMode::eager), b.time(rows(pair[2], 7, 7), pair_whole, GraphMode::eager)),
                1, kExact);
    const auto [chunked, chunked_all] = balanced(1, true);
    EXPECT_NEAR(fx->step->slowest(chunked.data(), chunked.size(), chunked_all, GraphMode::eager) /
                    b.slowest(chunked.data(), chunked.size(), chunked_all, GraphMode::eager),
                1, kExact);
    const auto [verify, verify_all] = balanced(2);
    model::StepMix verify_whole = verify_all;
    verify_whole.decode_seqs = 28;
    verify_whole.decode_tokens = 56;
    double verified = 0;
    for (const model::StepMix& r : verify) verified = std::max(verified, b.time(rows(r, 7, 14), verify_whole, GraphMode::eager));
    EXPECT_NEAR(fx->step->slowest(verify.data(), verify.size(), verify_all, GraphMode::eager) / verified, 1, kExact);
    EXPECT_EQ(padded_sequences(fx->f, mix, GraphMode::eager), 24);
    EXPECT_EQ(padded_sequences(fx->f, mix, GraphMode::graph), 32);
  }
}

// TensorRT-LLM pads a batch with its one dummy request repeated
// (`[cuda_graph_dummy_request] * padding_size`): the padding rows are one token's, and route to
// its experts alone. DeepSeek-V3 at TP 8 (256 experts on every GPU, top 8): 9 sequences padded
// to 16 compute 16 rows, but touch the experts of 10 distinct tokens, 256 x (1 - (248/256)^10)
// = 69.64, where 16 tokens routed each to its own touch 256 x (1 - (248/256)^16) = 101.96. The
// padded mix carries 16 - 9 - 1 = 6 repeated rows, so the step is priced as 16 decodes of which
// 6 repeat, below the random padding's 16 decodes; the op-by-op reference agrees with each, and
// its gate-up GEMM reads (101.96 - 69.64) experts' weights fewer. A mean batch of 15.5 pads to 16
// with half a row of padding: no row repeats (16 - 15.5 - 1 < 0), and it prices as the random
// padding does.
TEST(StepModel, TensorRtLlmsDummyRequestRoutesItsPaddingRowsAsOneToken) {
  const Plan p{"deepseek-v3", "h200", 8, 1};
  auto plain = fixture(p, true);
  auto random = fixture(p, true);
  auto repeats = fixture(p, true);
  const std::vector<std::int64_t> sizes = {8, 16, 24};
  random->f.graph_pad_sizes = repeats->f.graph_pad_sizes = &sizes;
  repeats->f.graph_pad_repeats = true;
  random->step->prepare(random->m, random->sys, random->f);
  repeats->step->prepare(repeats->m, repeats->sys, repeats->f);
  auto decodes = [](int n, double repeated = 0) {
    model::StepMix mix;
    for (int i = 0; i < n; ++i) mix.add_decode(1000, 0);
    mix.repeated_rows = repeated;
    return mix;
  };
  EXPECT_NEAR(model::touched_experts(repeats->m, 1, 10), 256 * (1 - std::pow(248.0 / 256, 10)), 1e-9);
  EXPECT_NEAR(model::touched_experts(repeats->m, 1, 16), 256 * (1 - std::pow(248.0 / 256, 16)), 1e-9);
  const StepModel& a = *plain->step;
  const model::StepMix m9 = decodes(9);
  EXPECT_DOUBLE_EQ(random->step->base(m9, GraphMode::graph), a.base(decodes(16), GraphMode::graph));
  EXPECT_DOUBLE_EQ(repeats->step->base(m9, GraphMode::graph), a.base(decodes(16, 6), GraphMode::graph));
  EXPECT_LT(repeats->step->time(m9, GraphMode::graph), random->step->time(m9, GraphMode::graph));
  EXPECT_GT(repeats->step->time(m9, GraphMode::graph), a.time(m9, GraphMode::graph));
  // The reference, op by op, on each padding; the gate-up GEMM's bytes differ by the weights of
  // the experts the repeated rows do not touch: (touched(16) - touched(10)) x each expert's
  // gate-up share at TP 8, 2 x 2048 / 8 = 512 rows of 7168 fp8 bytes and one fp32 scale a 128 x
  // 128 block (4 x 56 of them): 3670016 + 896 bytes.
  auto gate_up_bytes = [](Fixture& fx, const model::StepMix& mix) {
    EXPECT_LT(std::abs(fx.step->time(mix, GraphMode::graph) / reference(fx, mix, GraphMode::graph) - 1), kExact);
    for (int i = 0; i < fx.g->op_count; ++i) {
      if (std::string_view(fx.g->ops[i].name) == "experts_gate_up") return fx.g->ops[i].cost.main_bytes;
    }
    ADD_FAILURE() << "no experts_gate_up";
    return 0.0;
  };
  const double fewer = model::touched_experts(repeats->m, 1, 16) - model::touched_experts(repeats->m, 1, 10);
  EXPECT_NEAR(gate_up_bytes(*random, m9) - gate_up_bytes(*repeats, m9), fewer * (3670016 + 896), 1);
  // vLLM V0 counts rows (tokens) and pads with zeros: one token a sequence here, the same price.
  auto v0 = fixture(p, true);
  v0->f.graph_pad_sizes = &sizes;
  v0->f.graph_pad_tokens = v0->f.graph_pad_repeats = true;
  v0->step->prepare(v0->m, v0->sys, v0->f);
  EXPECT_DOUBLE_EQ(v0->step->base(m9, GraphMode::graph), a.base(decodes(16, 6), GraphMode::graph));
  model::StepMix half;
  half.add_decode(1000, 0);
  half.scale(15.5);
  EXPECT_DOUBLE_EQ(repeats->step->time(half, GraphMode::graph), random->step->time(half, GraphMode::graph));
  // At a captured size nothing pads: the two agree.
  EXPECT_DOUBLE_EQ(repeats->step->time(decodes(16), GraphMode::graph), random->step->time(decodes(16), GraphMode::graph));
}

// SGLang's DeepEP path masks its padding rows after the router (_mask_topk_ids_padded_region:
// their top-k ids -1, PR #6175): they run every kernel up to the router's but reach no expert.
// A step model told so (ForwardConfig::graph_pad_masked), DeepSeek-V3 at TP 8 (256 experts, top
// 8): 9 sequences padded to 16 route only their own 9 tokens: 9 x 8 = 72 pairs, each a row of the
// gate-up GEMM's 2 x 72 x 7168 x 512 = 528482304 FLOPs (not 16 x 8 = 128 rows' 939524096), and
// they touch 256 x (1 - (248/256)^9) = 63.62 experts (not 101.96). The expert part is the
// unpadded step's; every other kernel runs 16 rows: the step prices between the unpadded and the
// routed padding. Verifying 2 drafts, 3 tokens a sequence: 9 x 3 = 27 tokens routed, 216 pairs,
// 2 x 216 x 7168 x 512 = 1585446912 FLOPs (the padding's 7 x 3 = 21 tokens masked, not 7).
// Attention data-parallel ranks padded to the busiest (3 and 7 sequences of four Mixtral ranks to
// 8): each rank's own part on 8 rows, the expert part on the 10 real ones.
TEST(StepModel, SglangMasksItsPaddingRowsBeforeTheExperts) {
  const Plan p{"deepseek-v3", "h200", 8, 1};
  auto plain = fixture(p, true);
  auto routed = fixture(p, true);
  auto masked = fixture(p, true);
  const std::vector<std::int64_t> sizes = {8, 16, 24};
  routed->f.graph_pad_sizes = masked->f.graph_pad_sizes = &sizes;
  masked->f.graph_pad_masked = true;
  routed->step->prepare(routed->m, routed->sys, routed->f);
  masked->step->prepare(masked->m, masked->sys, masked->f);
  auto decodes = [](int n, double q = 1) {
    model::StepMix mix;
    for (int i = 0; i < n; ++i) mix.add_decode(1000, 0, q);
    return mix;
  };
  const model::StepMix m9 = decodes(9);
  // The op-by-op reference on the padded rows: the gate-up GEMM's FLOPs and touched experts.
  auto gate_up = [](Fixture& fx, const model::StepMix& mix) {
    EXPECT_LT(std::abs(fx.step->time(mix, GraphMode::graph) / reference(fx, mix, GraphMode::graph) - 1), kExact);
    for (int i = 0; i < fx.g->op_count; ++i) {
      if (std::string_view(fx.g->ops[i].name) == "experts_gate_up") return std::pair{fx.g->ops[i].cost.matrix_flops, fx.g->ops[i].touched};
    }
    ADD_FAILURE() << "no experts_gate_up";
    return std::pair{0.0, 0.0};
  };
  const auto [masked_flops, masked_touched] = gate_up(*masked, m9);
  const auto [routed_flops, routed_touched] = gate_up(*routed, m9);
  EXPECT_DOUBLE_EQ(masked_flops, 528482304.0);
  EXPECT_DOUBLE_EQ(routed_flops, 939524096.0);
  EXPECT_DOUBLE_EQ(gate_up(*masked, decodes(9, 3)).first, 1585446912.0);
  EXPECT_NEAR(masked_touched, 256 * (1 - std::pow(248.0 / 256, 9)), 1e-9);
  EXPECT_NEAR(routed_touched, 256 * (1 - std::pow(248.0 / 256, 16)), 1e-9);
  const StepModel& a = *plain->step;
  EXPECT_LT(masked->step->time(m9, GraphMode::graph), routed->step->time(m9, GraphMode::graph));
  EXPECT_GT(masked->step->time(m9, GraphMode::graph), a.time(m9, GraphMode::graph));
  // At a captured size nothing pads: the two agree.
  EXPECT_DOUBLE_EQ(masked->step->time(decodes(16), GraphMode::graph), routed->step->time(decodes(16), GraphMode::graph));

  // Ranks: each rank's own part padded by hand (time(group, mix) on the unpadded mix takes the
  // expert part of the real rows).
  const Plan q{"mixtral-8x7b", "h100-sxm", 1, 4};
  const std::vector<std::int64_t> rank_sizes = {1, 2, 4, 8, 16, 128};
  auto bare = fixture(q, true);
  auto ranks_masked = fixture(q, true);
  ranks_masked->f.graph_pad_sizes = &rank_sizes;
  ranks_masked->f.graph_pad_masked = true;
  ranks_masked->f.rank_pad = model::ForwardConfig::RankPad::graphs;
  ranks_masked->step->prepare(ranks_masked->m, ranks_masked->sys, ranks_masked->f);
  std::vector<model::StepMix> g(4);
  model::StepMix all;
  for (int i = 0; i < 3; ++i) g[0].add_decode(1000, 0), all.add_decode(1000, 0);
  for (int i = 0; i < 7; ++i) g[1].add_decode(500, 0), all.add_decode(500, 0);
  auto eight = [](model::StepMix x) {
    x.decode_tokens *= 8 / x.decode_seqs;
    x.decode_seqs = 8;
    return x;
  };
  const StepModel& b = *bare->step;
  const double want = std::max(b.time(eight(g[0]), all, GraphMode::graph), b.time(eight(g[1]), all, GraphMode::graph));
  EXPECT_NEAR(ranks_masked->step->slowest(g.data(), g.size(), all, GraphMode::graph) / want, 1, kExact);
}

// vLLM's graphs count a step's tokens (pad_for_cudagraph on its scheduled tokens): 100 sequences
// verifying 2 drafts each are 300 tokens, padded to 384 in a list of 256 and 384 — 84 padding
// tokens, 28 sequences' worth at 3 a sequence: the step computes its kernels but attention as
// 128 sequences of 3 tokens. Counted by sequences (TensorRT-LLM, SGLang), 100 pads to 256.
TEST(StepModel, VllmPadsATokenCountToItsCapturedSize) {
  const Plan p{"llama-3.1-70b", "h100-sxm", 4, 1};
  auto plain = fixture(p, true, 132);
  auto by_tokens = fixture(p, true, 132);
  auto by_seqs = fixture(p, true, 132);
  const std::vector<std::int64_t> sizes = {256, 384};
  by_tokens->f.graph_pad_sizes = by_seqs->f.graph_pad_sizes = &sizes;
  by_tokens->f.graph_pad_tokens = true;
  by_tokens->step->prepare(by_tokens->m, by_tokens->sys, by_tokens->f);
  by_seqs->step->prepare(by_seqs->m, by_seqs->sys, by_seqs->f);
  auto verifying = [](int n) {
    model::StepMix mix;
    for (int i = 0; i < n; ++i) mix.add_decode(1000, 0, 3);
    return mix;
  };
  const StepModel& a = *plain->step;
  EXPECT_DOUBLE_EQ(by_tokens->step->base(verifying(100), GraphMode::graph), a.base(verifying(128), GraphMode::graph));
  EXPECT_DOUBLE_EQ(by_seqs->step->base(verifying(100), GraphMode::graph), a.base(verifying(256), GraphMode::graph));
  EXPECT_DOUBLE_EQ(padded_sequences(by_tokens->f, verifying(100), GraphMode::graph), 128);
  // 128 sequences are 384 tokens, a captured size: no padding.
  EXPECT_DOUBLE_EQ(by_tokens->step->base(verifying(128), GraphMode::graph), a.base(verifying(128), GraphMode::graph));
  // A step with a prompt chunk, launched as piecewise graphs: 5 decodes and a chunk of 290
  // tokens are 295 tokens, padded to 384 — 89 more chunk tokens, no more sequences (the chunk's
  // own attention, positions and logits unchanged). Eager, or counted by sequences, it is not.
  model::StepMix mixed;
  for (int i = 0; i < 5; ++i) mixed.add_decode(1000, 0);
  mixed.add_prefill(290, 290, 0);
  model::StepMix wide = mixed;
  wide.prefill_tokens = 290 + 89;
  EXPECT_DOUBLE_EQ(by_tokens->step->base(mixed, GraphMode::piecewise), a.base(wide, GraphMode::piecewise));
  EXPECT_GT(by_tokens->step->base(mixed, GraphMode::piecewise), a.base(mixed, GraphMode::piecewise));
  EXPECT_DOUBLE_EQ(by_tokens->step->base(mixed, GraphMode::eager), a.base(mixed, GraphMode::eager));
  EXPECT_DOUBLE_EQ(by_seqs->step->base(mixed, GraphMode::piecewise), a.base(mixed, GraphMode::piecewise));
  // The step built op by op on the padded rows agrees.
  EXPECT_LT(std::abs(by_tokens->step->time(mixed, GraphMode::piecewise) / reference(*by_tokens, mixed, GraphMode::piecewise) - 1), kExact);
  // 5 decodes and a chunk of 380 are 385 tokens, past the largest size: not padded.
  model::StepMix past;
  for (int i = 0; i < 5; ++i) past.add_decode(1000, 0);
  past.add_prefill(380, 380, 0);
  EXPECT_DOUBLE_EQ(by_tokens->step->base(past, GraphMode::piecewise), a.base(past, GraphMode::piecewise));
}

}  // namespace
}  // namespace ridgeline::serving
