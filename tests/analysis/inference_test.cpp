// Inference analysis: hand-derived expectations on bundled models and catalog chips.
#include "ridgeline/analysis/inference.hpp"

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <memory>
#include <string_view>

#include "ridgeline/analysis/block.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "toy_chip.hpp"
#include "ridgeline/io/model_file.hpp"
#include "ridgeline/model/speculation.hpp"

namespace ridgeline::analysis {
namespace {

using testing::chip;

std::unique_ptr<InferenceResult> run(const char* model, const char* hw, InferenceConfig cfg) {
  auto r = std::make_unique<InferenceResult>();
  infer(io::bundled_model(model), chip(hw), cfg, *r);
  return r;
}

TEST(Inference, SevenBDecodeAtBatchOneIsWeightBytesOverBandwidth) {
  // Llama-2-7B in fp16: 6738415616 x 2 bytes = 13.48 GB, of which a decode step reads all
  // but the embedding table (one row of 32000 x 4096): 13.21 GB, 3.945 ms at 3.35 TB/s.
  // With CUDA graphs the launch floor is gone; the KV cache (<= 255 tokens, 0.13 GB) and
  // activations add about 1%.
  InferenceConfig cfg;
  cfg.cuda_graphs = true;
  auto r = run("llama-2-7b", "h100-sxm", cfg);
  const double weights = 6738415616.0 * 2;
  EXPECT_DOUBLE_EQ(r->memory.weights_bytes, weights);
  EXPECT_EQ(r->decode_last.bound, ops::Bound::memory);
  const double streamed = weights - 32000.0 * 4096 * 2;
  EXPECT_NEAR(r->decode_last.t_lower_s / (streamed / 3.35e12), 1.0, 0.03);
  EXPECT_GE(r->decode_last.t_lower_s, streamed / 3.35e12);  // never faster than streaming the weights
}

TEST(Inference, EveryOpOfOneLlamaLayerByHand) {
  // Llama-2-7B prefill of one 128-token prompt: T = 128, h = 4096, 32 heads of 128 (MHA),
  // I = 11008, fp16 weights and bf16 activations (2 bytes each), flash attention.
  // `stored`: the bytes written to a new tensor (every op's output), which a chip whose
  // stores allocate reads first.
  InferenceConfig cfg;
  auto r = run("llama-2-7b", "h100-sxm", cfg);
  hw::System wa_sys = chip("h100-sxm");
  wa_sys.chip.write_allocate = true;  // as if its stores allocated, like a CPU's
  auto wa = std::make_unique<InferenceResult>();
  infer(io::bundled_model("llama-2-7b"), wa_sys, cfg, *wa);
  const auto& g = r->prefill_graph;
  struct Expect {
    const char* name;
    double flops, bytes, stored;
  };
  const double T = 128, h = 4096, I = 11008, pairs = 128.0 * 129 / 2;
  const Expect expect[] = {
      {"input_norm", T * (4 * h + 2), (2 * T * h + h) * 2, T * h * 2},
      {"q_proj", 2 * T * h * h, 2 * (T * h + h * h + T * h), T * h * 2},
      {"k_proj", 2 * T * h * h, 2 * (T * h + h * h + T * h), T * h * 2},
      {"v_proj", 2 * T * h * h, 2 * (T * h + h * h + T * h), T * h * 2},
      // q and k, 64 heads of 128: 3 FLOPs per element; x in and out, cos and sin (T, 64).
      {"rope", 3 * T * 8192, (2 * T * 8192 + 2 * T * 64) * 2, T * 8192 * 2},
      // New K and V read in bf16 and written to the bf16 cache.
      {"kv_cache_write", 0, T * 2 * h * (2 + 2), T * 2 * h * 2},
      // QK^T and PV over the causal pairs, softmax on the vector unit; Q, K, V, O once.
      {"attention", 4 * 32 * pairs * 128 + 32 * (5 * pairs + T * 128), 4 * T * h * 2, T * h * 2},
      {"o_proj", 2 * T * h * h, 2 * (T * h + h * h + T * h), T * h * 2},
      {"attn_residual", T * h, 3 * T * h * 2, T * h * 2},
      {"post_attention_norm", T * (4 * h + 2), (2 * T * h + h) * 2, T * h * 2},
      {"gate_proj", 2 * T * h * I, 2 * (T * h + h * I + T * I), T * I * 2},
      {"up_proj", 2 * T * h * I, 2 * (T * h + h * I + T * I), T * I * 2},
      {"silu_mul", 6 * T * I, 3 * T * I * 2, T * I * 2},
      {"down_proj", 2 * T * I * h, 2 * (T * I + I * h + T * h), T * h * 2},
      {"mlp_residual", T * h, 3 * T * h * 2, T * h * 2},
  };
  int found = 0;
  for (int i = 0; i < g.op_count; ++i) {
    if (std::string(g.groups[g.ops[i].group].name) != "dense layers") continue;
    ASSERT_LT(found, static_cast<int>(std::size(expect)));
    const Expect& x = expect[found++];
    EXPECT_STREQ(g.ops[i].name, x.name);
    EXPECT_DOUBLE_EQ(r->prefill_ops[i].e.flops, x.flops) << x.name;
    EXPECT_DOUBLE_EQ(r->prefill_ops[i].e.main_bytes, x.bytes) << x.name;
    EXPECT_EQ(r->prefill_ops[i].e.write_allocate_bytes, 0) << x.name;
    EXPECT_DOUBLE_EQ(g.ops[i].cost.main_store_bytes, x.stored) << x.name;
    // Where stores allocate, each stored line is read too: at 3.35 TB/s.
    EXPECT_DOUBLE_EQ(wa->prefill_ops[i].e.main_bytes, x.bytes + x.stored) << x.name;
    EXPECT_DOUBLE_EQ(wa->prefill_ops[i].e.write_allocate_bytes, x.stored) << x.name;
    EXPECT_DOUBLE_EQ(wa->prefill_ops[i].e.t_memory_s, (x.bytes + x.stored) / 3.35e12) << x.name;
    EXPECT_EQ(g.repeat(i), 32) << x.name;
  }
  EXPECT_EQ(found, static_cast<int>(std::size(expect)));
  // The phase totals carry the same bytes: more on the allocating chip, never less time.
  EXPECT_GT(wa->prefill.bytes, r->prefill.bytes);
  EXPECT_GT(wa->prefill.t_lower_s, r->prefill.t_lower_s);
}

TEST(Inference, PrefillAt2048TokensIsComputeBound) {
  // 2 FLOPs per weight per token: 2·2048·6.6e9 / 989.4e12 = 27.5 ms of GEMMs, plus attention.
  InferenceConfig cfg;
  cfg.prompt = 2048;
  auto r = run("llama-2-7b", "h100-sxm", cfg);
  EXPECT_EQ(r->prefill.bound, ops::Bound::compute);
  const double gemm = 2 * 2048 * (6738415616.0 - 2 * 131072000) / 989.4e12;
  EXPECT_GT(r->prefill.t_lower_s, gemm);
  EXPECT_LT(r->prefill.t_lower_s, 1.3 * gemm);
}

TEST(Inference, TensorParallelHalvesWeightsAndAddsAllReduces) {
  InferenceConfig one, two;
  two.forward.tp = 2;
  auto a = run("llama-3.1-8b", "h100-sxm", one);
  auto b = run("llama-3.1-8b", "h100-sxm", two);
  // Norm weights are replicated: (2 per layer x 32 + final) x 4096 x 2 bytes; everything else halves.
  const double norms = (2 * 32 + 1) * 4096.0 * 2;
  EXPECT_DOUBLE_EQ(b->memory.weights_bytes, (a->memory.weights_bytes - norms) / 2 + norms);
  // A decode step at batch 1: two all-reduces per layer plus the embedding's, of 4096 x 2
  // bytes (a two-chip ring sends N), and the all-gather of the 128256 bf16 logits (half).
  // So few bytes go in NCCL's LL protocol (6.6 + 2 x 0.6 us against NVLS's 21.4 fixed:
  // 9 + 1.5 x (32 x 24576 / 344.25e9 + 6) us, docs/collectives.md#nvls-chunks), whose
  // 8-byte words carry 4 bytes of data: the links carry twice the data.
  EXPECT_DOUBLE_EQ(a->decode_last.comm_bytes, 0.0);
  EXPECT_DOUBLE_EQ(b->decode_last.comm_bytes, 2 * (65 * 8192.0 + 128256.0));
}

TEST(Inference, SequenceParallelismMovesTheSameBytesAndSplitsTheNorms) {
  // An all-reduce sends 2(P-1)/P·N per chip; its all-gather + reduce-scatter replacement
  // sends (P-1)/P·N twice: the same. Norms and residuals then see T/tp tokens.
  InferenceConfig plain, sp;
  plain.forward.tp = sp.forward.tp = 4;
  plain.forward.algo = sp.forward.algo = comm::Algo::ring;  // the ring identity (auto would pick NVLS for the all-reduce)
  sp.forward.sequence_parallel = true;
  plain.prompt = sp.prompt = 1024;
  // Without a library's protocols (which pick LL128 for the 8 MiB all-reduce, Simple for
  // the gathers: different flag bytes).
  hw::System h = chip("h100-sxm");
  h.chip.topology.library = hw::CollectiveLibrary::none;
  auto a = std::make_unique<InferenceResult>(), b = std::make_unique<InferenceResult>();
  infer(io::bundled_model("llama-3.1-8b"), h, plain, *a);
  infer(io::bundled_model("llama-3.1-8b"), h, sp, *b);
  EXPECT_DOUBLE_EQ(a->prefill.comm_bytes, b->prefill.comm_bytes);
  double norm_a = 0, norm_b = 0;
  for (int i = 0; i < a->prefill_graph.op_count; ++i) {
    if (a->prefill_graph.ops[i].cls == model::OpClass::norm) norm_a += a->prefill_ops[i].e.main_bytes;
  }
  for (int i = 0; i < b->prefill_graph.op_count; ++i) {
    if (b->prefill_graph.ops[i].cls == model::OpClass::norm) norm_b += b->prefill_ops[i].e.main_bytes;
  }
  // The layer's two norms read and write 1024 x 4096 x 2 bytes and read their 4096 x 2-byte
  // weights; the final norm sees one row (the last position of the one sequence).
  EXPECT_DOUBLE_EQ(norm_a, 2 * (2 * 1024 * 4096 * 2.0 + 8192) + (2 * 4096 * 2.0 + 8192));
  EXPECT_DOUBLE_EQ(norm_b, 2 * (2 * 256 * 4096 * 2.0 + 8192) + (2 * 4096 * 2.0 + 8192));  // 1024/4 rows
}

TEST(Inference, QuickMethodOfSeed001) {
  InferenceConfig cfg;
  cfg.forward.tp = 2;
  cfg.batch = 4;
  auto r = run("llama-2-7b", "h100-sxm", cfg);
  // T_network = 4(N-1)·B·D·S·L / NetBW = 4·1·4·4096·2·32 / 450e9.
  EXPECT_DOUBLE_EQ(r->quick.t_network_s, 4.0 * 4 * 4096 * 2 * 32 / 450e9);
  // t_compute = 2·B·P / compute over both chips.
  EXPECT_DOUBLE_EQ(r->quick.t_compute_s, 2.0 * 4 * r->active_params / (2 * 989.4e12));
  EXPECT_DOUBLE_EQ(r->quick.t_memory_s, r->memory.total_bytes / 3.35e12);
}

TEST(Inference, QuickMethodMultipliesNvfp4WeightsInFp4) {
  // NVFP4 weights on a B200 run their GEMMs W4A4 (the graph's rule, model::gemm_dtypes): the
  // quick line's compute time is 2·B·P over the fp4 dense peak, 9 PFLOP/s, not bf16's 2.25.
  InferenceConfig cfg;
  cfg.batch = 8;
  cfg.forward.precision.weight = DType::fp4;
  auto r = run("llama-3.1-8b", "b200", cfg);
  EXPECT_DOUBLE_EQ(r->quick.t_compute_s, 2.0 * 8 * r->active_params / 9e15);
}

TEST(Inference, FitAndLargestBatch) {
  InferenceConfig cfg;
  auto one = run("llama-3.1-70b", "h100-sxm", cfg);
  EXPECT_FALSE(one->memory.fits);  // 141 GB of bf16 weights on 85.5 GB (81559 MiB)
  EXPECT_EQ(one->max_batch, 0);
  cfg.forward.tp = 4;
  auto four = run("llama-3.1-70b", "h100-sxm", cfg);
  EXPECT_TRUE(four->memory.fits);
  // The largest batch leaves no room for one more sequence.
  const double per_seq_kv = four->memory.kv_bytes_per_token * 256;  // prompt 128 + gen 128
  EXPECT_GT(four->max_batch, 0);
  // The engine may use 0.9 (vLLM's gpu_memory_utilization) of the 81559 MiB the driver
  // reports: 76.97 GB.
  const double usable = 0.9 * 81559.0 * 1048576;
  EXPECT_LT(four->memory.weights_bytes + static_cast<double>(four->max_batch) * per_seq_kv, usable);
  EXPECT_GT(four->memory.weights_bytes + static_cast<double>(four->max_batch + 1) * (per_seq_kv + 1e9), usable - 1e9);
  EXPECT_DOUBLE_EQ(four->memory.capacity_bytes, usable);
  cfg.memory_utilization = 1;
  auto all = run("llama-3.1-70b", "h100-sxm", cfg);
  EXPECT_DOUBLE_EQ(all->memory.capacity_bytes, 81559.0 * 1048576);
  EXPECT_GT(all->max_batch, four->max_batch);
  cfg.memory_utilization = 1.5;
  EXPECT_THROW(run("llama-3.1-70b", "h100-sxm", cfg), InputError);
}

TEST(Inference, KvCacheBytes) {
  // Llama-3.1-8B: 32 layers x 2 (K, V) x 8 heads x 128 x 2 bytes = 131072 bytes per token.
  InferenceConfig cfg;
  auto r = run("llama-3.1-8b", "h100-sxm", cfg);
  EXPECT_DOUBLE_EQ(r->memory.kv_bytes_per_token, 131072.0);
  EXPECT_DOUBLE_EQ(r->memory.kv_cache_bytes, 131072.0 * 256);
  // DeepSeek-V3's MLA caches the 512-wide latent and the 64-wide RoPE key: 61 x 576 x 2.
  auto ds = run("deepseek-v3", "h200", [] {
    InferenceConfig c;
    c.forward.tp = 8;
    return c;
  }());
  EXPECT_DOUBLE_EQ(ds->memory.kv_bytes_per_token, 61 * 576 * 2.0);
  // fp8 KV halves it.
  cfg.forward.precision.kv_cache = DType::fp8_e4m3;
  EXPECT_DOUBLE_EQ(run("llama-3.1-8b", "h100-sxm", cfg)->memory.kv_bytes_per_token, 65536.0);
}

TEST(Inference, DecodeSumIsExactAcrossTheSlidingWindow) {
  // Mistral-7B's 4096-token window: 100 steps from context 4050 cross it. The summed decode
  // equals the steps evaluated one by one (a one-step run at each context).
  InferenceConfig cfg;
  cfg.prompt = 4050;
  cfg.gen = 101;
  cfg.batch = 64;
  auto whole = run("mistral-7b", "h100-sxm", cfg);
  double lower = 0, realistic = 0, upper = 0;
  for (int i = 0; i < 100; ++i) {
    InferenceConfig step = cfg;
    step.prompt = 4050 + i;
    step.gen = 2;
    auto r = run("mistral-7b", "h100-sxm", step);
    lower += r->decode_total.t_lower_s;
    realistic += r->decode_total.t_realistic_s;
    upper += r->decode_total.t_upper_s;
  }
  EXPECT_NEAR(whole->decode_total.t_lower_s / lower, 1.0, 1e-9);
  EXPECT_NEAR(whole->decode_total.t_realistic_s / realistic, 1.0, 1e-9);
  EXPECT_NEAR(whole->decode_total.t_upper_s / upper, 1.0, 1e-9);
}

TEST(Inference, MoeDecodeReadsOnlyTheExpertsItTouches) {
  // Mixtral at batch 1: 2 of 8 experts per layer are read: 2 x 3 x 4096 x 14336 x 2 bytes.
  InferenceConfig cfg;
  cfg.cuda_graphs = true;
  auto r = run("mixtral-8x7b", "h100-sxm", cfg);
  double expert_bytes = 0;
  for (int i = 0; i < r->decode_graph.op_count; ++i) {
    const auto& op = r->decode_graph.ops[i];
    if (std::string(op.name).rfind("experts_", 0) == 0 && op.cls == model::OpClass::gemm) {
      expert_bytes += r->decode_ops[i].e.main_bytes;  // one layer
    }
  }
  const double weights = 2 * 3 * 4096.0 * 14336 * 2;
  EXPECT_NEAR(expert_bytes / weights, 1.0, 0.001);  // plus 2 routed tokens' activations
}

TEST(Inference, BadPlansAreClearErrors) {
  InferenceConfig cfg;
  cfg.forward.tp = 3;
  EXPECT_THROW(run("llama-3.1-8b", "h100-sxm", cfg), InputError);  // 32 heads
  cfg.forward.tp = 1;
  cfg.forward.ep = 2;
  EXPECT_THROW(run("llama-3.1-8b", "h100-sxm", cfg), InputError);  // not MoE
  cfg.forward.ep = 3;
  EXPECT_THROW(run("mixtral-8x7b", "h100-sxm", cfg), InputError);  // 8 experts
}

// The serving curve is infer_core with every op's time parts as lines in the batch: at
// any batch it must give infer_core's numbers to rounding. Covered: dense with TP, CUDA
// graphs, MoE with EP (touched experts are not affine), sliding windows (two decode
// pieces) with attention sinks, MLA, a single generated token (no decode), collectives
// whose protocol changes with the batch.
TEST(Inference, ServingCurveEqualsInferAtEveryBatch) {
  struct Case {
    const char* model;
    const char* hw;
    std::int64_t tp, ep, prompt, gen;
    bool graphs;
    bool classes = false;  // per-kernel-class efficiencies and fixed times on the chip
    bool allocate = false;  // the chip's stores allocate (write_allocate)
  };
  const Case cases[] = {{"llama-3.1-70b", "h100-sxm", 4, 1, 2048, 256, false},
                        {"llama-2-7b", "a100-80gb", 1, 1, 100, 300, true},
                        {"mixtral-8x7b", "h100-sxm", 2, 2, 512, 64, false},
                        {"gpt-oss-120b", "h100-sxm", 2, 1, 64, 400, false},
                        {"deepseek-v3", "h200", 8, 1, 1000, 50, false},
                        {"qwen2.5-7b", "h100-sxm", 1, 1, 700, 1, false},
                        {"llama-3.1-8b", "h100-sxm", 2, 1, 300, 200, false, true},
                        {"mixtral-8x7b", "h100-sxm", 1, 2, 128, 100, true, true},
                        {"llama-3.1-8b", "h100-sxm", 1, 1, 500, 100, false, false, true},
                        {"mixtral-8x7b", "h100-sxm", 2, 2, 256, 80, false, true, true}};
  for (const Case& k : cases) {
    const model::ModelConfig m = io::bundled_model(k.model);
    hw::System sys = chip(k.hw);
    sys.chip.write_allocate = k.allocate;
    sys.chip.sms = 132;  // GEMMs with their tiling (not with the gemm class's own figure: gemm_sms 0)
    if (k.classes) {
      auto& e = sys.chip.efficiency.kernel;
      e[static_cast<int>(hw::KernelClass::gemm)] = {0.7, 0, 0.85, 0, 4e-6};
      e[static_cast<int>(hw::KernelClass::attention)] = {0.5, 0.6, 0.8, 0, 6e-6};
      e[static_cast<int>(hw::KernelClass::pointwise)] = {0, 0, 0.75, 0, 2e-6};
      e[static_cast<int>(hw::KernelClass::collective)] = {0, 0, 0, 0.6, 15e-6};
    }
    InferenceConfig cfg;
    cfg.forward.tp = k.tp;
    cfg.forward.ep = k.ep;
    cfg.prompt = k.prompt;
    cfg.gen = k.gen;
    cfg.cuda_graphs = k.graphs;
    auto curve = std::make_unique<ServingCurve>();
    prepare_serving_curve(m, sys, cfg, *curve);
    // With TP on NCCL's chips the all-reduces change protocol with the batch: switch lines.
    if (k.tp > 1 && sys.chip.topology.library == hw::CollectiveLibrary::nccl) {
      EXPECT_GT(curve->fixed_switch_count, 0) << k.model;
      EXPECT_GT(curve->prefill_switch_count, 0) << k.model;
    }
    for (std::int64_t b : {1, 2, 3, 7, 16, 61, 256, 1000}) {
      cfg.batch = b * k.ep;
      auto r = std::make_unique<InferenceResult>();
      infer_core(m, sys, cfg, *r);
      const ServingPoint p = serving_at(*curve, static_cast<double>(cfg.batch));
      const auto near = [&](double got, double want, const char* what) {
        EXPECT_NEAR(got, want, 1e-12 * std::abs(want)) << k.model << " batch " << cfg.batch << " " << what;
      };
      near(p.ttft_s, r->ttft_s, "ttft");
      near(p.tpot_s, r->tpot_s, "tpot");
      near(p.e2e_s, r->e2e_s, "e2e");
      near(p.output_tokens_per_s, r->output_tokens_per_s, "output tokens/s");
      near(p.memory_bytes, r->memory.total_bytes, "memory");
      EXPECT_EQ(curve->max_batch, r->max_batch) << k.model;
    }
  }
}

TEST(Block, SeedShapesReproduceSeed000) {
  BlockConfig cfg;
  cfg.seed_shapes = true;
  BlockResult r = block(cfg, chip("h200"));
  const double R = 989.4 / 4.8, h = 4096;
  EXPECT_NEAR(r.units_by_part[0], 12.0, 1e-9);             // 4 + 3 x 8/3
  EXPECT_NEAR(r.units_by_part[1], 2 * 4096 / h, 1e-9);     // 2s/h
  EXPECT_NEAR(r.units_by_part[2], 19 * R / h, 1e-9);       // 9.5 (s,h) read+write passes: 19R/h = 0.956
  EXPECT_NEAR(r.units_by_part[3], 4 * 989.4e12 / (450e9 * h), 1e-9);  // 4 x 2sh/450e9 over 2sh²/989.4e12 = 2.147
}

}  // namespace
}  // namespace ridgeline::analysis

namespace ridgeline::analysis {
namespace {

TEST(Inference, AQuantisingWeightDtypeLeavesTheEmbeddingAndTheLmHeadInTheCheckpointsDtype) {
  // Llama-3.1-8B (bf16 checkpoint: hidden 4096, 32 layers, 32 / 8 heads of 128, MLP 14336,
  // vocab 128256, untied head) with --weight-dtype fp8: the linear layers in fp8, 1 byte a
  // weight: 32 x 4096 x (4096 + 1024 + 1024 + 4096 + 3 x 14336) = 6,979,321,856 bytes; the
  // embedding table and the LM head stay bf16 (as quantisers and engines leave them):
  // 2 x 128256 x 4096 x 2 = 2,101,346,304 bytes; the norms bf16: (2 x 32 + 1) x 4096 x 2 =
  // 532,480 bytes. 9,081,200,640 bytes in all. fp4 (NVFP4: 4 bits and an 8-bit scale a 16, 4.5 bits a weight) halves the
  // linear layers to 9/16 of their bytes, 3,925,868,544, and leaves the rest: 6,027,747,328.
  // A 16-bit flag converts the tables too: fp16 everywhere is the bf16 model's 16,060,522,496.
  InferenceConfig cfg;
  cfg.forward.precision.weight = DType::fp8_e4m3;
  EXPECT_DOUBLE_EQ(run("llama-3.1-8b", "h100-sxm", cfg)->memory.weights_bytes, 9081200640.0);
  cfg.forward.precision.weight = DType::fp4;
  EXPECT_DOUBLE_EQ(run("llama-3.1-8b", "b200", cfg)->memory.weights_bytes, 6027747328.0);
  cfg.forward.precision.weight = DType::fp16;
  EXPECT_DOUBLE_EQ(run("llama-3.1-8b", "h100-sxm", cfg)->memory.weights_bytes, 16060522496.0);
  // A float32 checkpoint's tables are loaded in the activations' bf16 under fp8: the same
  // 9,081,200,640 bytes as the bf16 checkpoint's.
  model::ModelConfig fp32 = io::bundled_model("llama-3.1-8b");
  fp32.weight_dtype = DType::fp32;
  cfg.forward.precision.weight = DType::fp8_e4m3;
  InferenceResult f32;
  infer(fp32, chip("h100-sxm"), cfg, f32);
  EXPECT_DOUBLE_EQ(f32.memory.weights_bytes, 9081200640.0);
  // The head at batch 1 streams its bf16 weights, 128256 x 4096 x 2 bytes, and multiplies in
  // bf16 even where --compute-dtype fp8 runs the linear layers in fp8.
  cfg.forward.precision.compute = DType::fp8_e4m3;
  auto r = run("llama-3.1-8b", "h100-sxm", cfg);
  int heads = 0;
  for (int i = 0; i < r->decode_graph.op_count; ++i) {
    const model::GraphOp& op = r->decode_graph.ops[i];
    if (std::string_view(op.name) == "lm_head") {
      ++heads;
      EXPECT_DOUBLE_EQ(op.weight_bytes, 128256.0 * 4096 * 2);
      EXPECT_EQ(op.cost.matrix_dtype, DType::bf16);
    } else if (std::string_view(op.name) == "down_proj") {
      EXPECT_EQ(op.cost.matrix_dtype, DType::fp8_e4m3);
    }
  }
  EXPECT_EQ(heads, 1);
}

TEST(Inference, Fp8WeightsComputeInFp8WhereTheChipCan) {
  // fp8 weights on an H100 (1979 TFLOP/s in fp8): the GEMMs run in fp8, the activations
  // quantised on the fly (W8A8, as vLLM and TensorRT-LLM run fp8 checkpoints); on an A100
  // (no fp8 unit) they are dequantised and run in bf16 (W8A16). --compute-dtype overrides.
  InferenceConfig cfg;
  cfg.forward.precision.weight = DType::fp8_e4m3;
  for (const char* hw : {"h100-sxm", "a100-80gb"}) {
    auto r = run("llama-3.1-8b", hw, cfg);
    const DType want = std::string_view(hw) == "h100-sxm" ? DType::fp8_e4m3 : DType::bf16;
    int gemms = 0;
    for (int i = 0; i < r->prefill_graph.op_count; ++i) {
      if (r->prefill_graph.ops[i].cls != model::OpClass::gemm) continue;
      ++gemms;
      // The LM head keeps the checkpoint's bf16 weights, and runs in bf16.
      const bool head = std::string_view(r->prefill_graph.ops[i].name) == "lm_head";
      EXPECT_EQ(r->prefill_graph.ops[i].cost.matrix_dtype, head ? DType::bf16 : want) << hw << " " << r->prefill_graph.ops[i].name;
    }
    EXPECT_EQ(gemms, 8);  // q, k, v, o, gate, up, down (one layer, repeated 32 times) and the LM head
  }
  // Attention runs in the activations' bf16 beside fp8 GEMMs, and at bf16's rate with an fp8
  // KV cache too (vLLM's FA3 fp8 with two-level accumulation: "similar TTFT"), whose bytes it halves.
  auto attention_dtype = [](const InferenceResult& r) {
    for (int i = 0; i < r.prefill_graph.op_count; ++i) {
      if (r.prefill_graph.ops[i].cls == model::OpClass::attention) return r.prefill_graph.ops[i].cost.matrix_dtype;
    }
    return DType::fp64;
  };
  EXPECT_EQ(attention_dtype(*run("llama-3.1-8b", "h100-sxm", cfg)), DType::bf16);
  cfg.forward.precision.kv_cache = DType::fp8_e4m3;
  EXPECT_EQ(attention_dtype(*run("llama-3.1-8b", "h100-sxm", cfg)), DType::bf16);
  EXPECT_EQ(attention_dtype(*run("llama-3.1-8b", "a100-80gb", cfg)), DType::bf16);
  cfg.forward.precision.kv_cache.reset();
  cfg.forward.precision.compute = DType::bf16;
  auto w8a16 = run("llama-3.1-8b", "h100-sxm", cfg);
  for (int i = 0; i < w8a16->prefill_graph.op_count; ++i) {
    if (w8a16->prefill_graph.ops[i].cls == model::OpClass::gemm) {
      EXPECT_EQ(w8a16->prefill_graph.ops[i].cost.matrix_dtype, DType::bf16);
    }
  }
}

TEST(Inference, ExpertImbalanceLoadsTheBusiestChip) {
  // Mixtral-8x7B at EP 8, prompt 128 x batch 64: each chip routes 8 x 128 x 2 = 2048
  // token-expert pairs; with the busiest chip receiving 1.5 times the mean it processes 3072
  // in its expert GEMMs (2·3072·4096·2·14336 FLOPs for gate and up) and its all-to-alls
  // move 1.5 times the bytes (3072 x 4096 x 2 B, 7/8 of it to other chips).
  InferenceConfig cfg;
  cfg.forward.tp = 1;
  cfg.forward.ep = 8;
  cfg.batch = 64;
  auto even = run("mixtral-8x7b", "h100-sxm", cfg);
  cfg.forward.expert_imbalance = 1.5;
  auto busy = run("mixtral-8x7b", "h100-sxm", cfg);
  for (int i = 0; i < busy->prefill_graph.op_count; ++i) {
    const std::string_view n = busy->prefill_graph.ops[i].name;
    const ops::OpCost& b = busy->prefill_graph.ops[i].cost;
    const ops::OpCost& e = even->prefill_graph.ops[i].cost;
    if (n == "experts_gate_up") {
      EXPECT_DOUBLE_EQ(b.matrix_flops, 2.0 * 3072 * 4096 * 2 * 14336);
      EXPECT_DOUBLE_EQ(e.matrix_flops, 2.0 * 2048 * 4096 * 2 * 14336);
    }
    if (n == "ep_dispatch") {
      EXPECT_DOUBLE_EQ(b.link_bytes, 3072.0 * 4096 * 2 * 7 / 8);
    }
  }
  EXPECT_GT(busy->ttft_s, even->ttft_s);
  cfg.forward.expert_imbalance = 9;  // more than every token on one of 8 chips
  EXPECT_THROW(run("mixtral-8x7b", "h100-sxm", cfg), InputError);
}

TEST(Inference, GatheredTokensReachEveryChipWhateverTheirExperts) {
  // The serving engines' way without an all-to-all backend (--moe-a2a gather): Mixtral-8x7B at
  // EP 8, prompt 128 x batch 64, 8 sequences a group: 1024 tokens a group all-gathered into a
  // buffer of 8 x 1024 x 4096 x 2 B = 67108864 B, 7/8 of which reaches each chip from the others
  // (58720256 B), and its outputs reduce-scattered back, 7/8 leaving each chip. The busiest chip's
  // 1.5 times the mean pairs change its expert GEMMs, not what moves. Each chip sums its pairs'
  // outputs for all 8192 gathered rows: its 2048 pairs read (8192 x 4096 x 2/8 x 2 B = 16777216 B),
  // every row written (67108864 B). As pairs the dispatch moves 2048 x 1.5 x 4096 x 2 x 7/8.
  InferenceConfig cfg;
  cfg.forward.tp = 1;
  cfg.forward.ep = 8;
  cfg.forward.expert_imbalance = 1.5;
  cfg.forward.moe_a2a = model::ForwardConfig::MoeA2A::gather;
  cfg.batch = 64;
  auto gathered = run("mixtral-8x7b", "h100-sxm", cfg);
  int seen = 0;
  for (int i = 0; i < gathered->prefill_graph.op_count; ++i) {
    const model::GraphOp& o = gathered->prefill_graph.ops[i];
    const std::string_view n = o.name;
    EXPECT_NE(n, "ep_dispatch");
    EXPECT_NE(n, "ep_combine");
    if (n == "ep_allgather" || n == "ep_reducescatter") {
      EXPECT_DOUBLE_EQ(o.cost.link_bytes, 67108864.0 * 7 / 8) << n;
      EXPECT_TRUE(o.all_groups) << n;
      ++seen;
    }
    if (n == "experts_gate_up") {
      EXPECT_DOUBLE_EQ(o.cost.matrix_flops, 2.0 * 3072 * 4096 * 2 * 14336);
    }
    if (n == "moe_combine") {
      EXPECT_DOUBLE_EQ(o.cost.main_bytes, 16777216.0 + 67108864.0);
      EXPECT_TRUE(o.all_groups);
      ++seen;
    }
  }
  EXPECT_EQ(seen, 3);
  cfg.forward.moe_a2a = model::ForwardConfig::MoeA2A::pairs;
  auto pairs = run("mixtral-8x7b", "h100-sxm", cfg);
  int dispatches = 0;
  for (int i = 0; i < pairs->prefill_graph.op_count; ++i) {
    if (std::string_view(pairs->prefill_graph.ops[i].name) == "ep_dispatch") {
      EXPECT_DOUBLE_EQ(pairs->prefill_graph.ops[i].cost.link_bytes, 3072.0 * 4096 * 2 * 7 / 8);
      ++dispatches;
    }
  }
  EXPECT_EQ(dispatches, 1);
}

TEST(Inference, GatheredDenseLayersRunOnEveryGroupsRowsSplitOverEveryChip) {
  // SGLang's default under attention data parallelism (ForwardConfig::gathered_dense):
  // DeepSeek-V3 (hidden 7168, dense width 18432 in its 3 dense layers, one shared expert of
  // width 2048, 256 routed experts) at --tp 1 --ep 8, prompt 128 x batch 8: 128 tokens a group,
  // 1024 gathered. A dense layer's rows are all-gathered (8 x 128 x 7168 x 2 B = 14680064 B), its gate and up GEMMs run 1024 rows x 7168 -> 18432/8
  // = 2304 columns and its down GEMM 2304 -> 7168 (2 x 1024 x 2304 x 7168 FLOPs each), an eighth
  // of each weight on a chip, and the outputs are reduce-scattered back (as much again). With
  // the tokens gathered for the experts, the router runs over the 1024 rows (7168 -> 256) and the
  // shared expert over them at 2048/8 = 256 columns, before the reduce-scatter. Without it each
  // group runs them on its own 128 rows with whole weights.
  InferenceConfig cfg;
  cfg.forward.tp = 1;
  cfg.forward.ep = 8;
  cfg.forward.experts = model::ForwardConfig::Experts::expert;
  cfg.forward.moe_a2a = model::ForwardConfig::MoeA2A::gather;
  cfg.batch = 8;
  auto own = run("deepseek-v3", "h200", cfg);
  cfg.forward.gathered_dense = true;
  auto gathered = run("deepseek-v3", "h200", cfg);
  const model::Graph& g = gathered->prefill_graph;
  const model::Graph& o = own->prefill_graph;
  const auto find = [](const model::Graph& graph, std::string_view name) -> const model::GraphOp* {
    for (int i = 0; i < graph.op_count; ++i) {
      if (std::string_view(graph.ops[i].name) == name) return &graph.ops[i];
    }
    return nullptr;
  };
  for (const char* n : {"dense_allgather", "dense_reducescatter"}) {
    const model::GraphOp* op = find(g, n);
    ASSERT_NE(op, nullptr) << n;
    ASSERT_GE(op->collective, 0) << n;
    EXPECT_DOUBLE_EQ(g.collectives[op->collective].bytes, 14680064.0) << n;
    EXPECT_TRUE(op->gathered) << n;
    EXPECT_EQ(find(o, n), nullptr) << n;
  }
  for (const char* n : {"gate_proj", "up_proj", "down_proj", "router", "shared_gate", "shared_up", "shared_down", "shared_add"}) {
    const model::GraphOp* on = find(g, n);
    const model::GraphOp* off = find(o, n);
    ASSERT_NE(on, nullptr) << n;
    ASSERT_NE(off, nullptr) << n;
    EXPECT_TRUE(on->gathered && on->all_groups) << n;
    EXPECT_FALSE(off->gathered || off->all_groups) << n;
    const bool down = std::string_view(n).find("down") != std::string_view::npos;
    if (on->cls == model::OpClass::gemm) {
      EXPECT_DOUBLE_EQ(on->gemm_m, 1024) << n;
      EXPECT_DOUBLE_EQ(off->gemm_m, 128) << n;
      const double split = std::string_view(n) == "router" ? 1 : 8;
      EXPECT_DOUBLE_EQ(on->weight_bytes * split, off->weight_bytes) << n;
      EXPECT_DOUBLE_EQ(down ? on->gemm_k : on->gemm_n, (down ? off->gemm_k : off->gemm_n) / split) << n;
    }
  }
  EXPECT_DOUBLE_EQ(find(g, "gate_proj")->cost.matrix_flops, 2.0 * 1024 * 2304 * 7168);
  EXPECT_DOUBLE_EQ(find(g, "down_proj")->cost.matrix_flops, 2.0 * 1024 * 2304 * 7168);
  EXPECT_DOUBLE_EQ(find(g, "shared_gate")->gemm_n, 256);
  EXPECT_DOUBLE_EQ(find(g, "router")->gemm_n, 256);
  // The sum of the two outputs over every gathered row: both read, one written (3 x 1024 x 7168 x 2 B).
  EXPECT_DOUBLE_EQ(find(g, "shared_add")->cost.main_bytes, 3.0 * 1024 * 7168 * 2);
  // The MoE block's one gather of the rows comes before its router here, after it otherwise.
  EXPECT_LT(find(g, "ep_allgather"), find(g, "router"));
  EXPECT_GT(find(o, "ep_allgather"), find(o, "router"));
  // The head (vocabulary 129280): each group's one last token gathered by an all-reduce over the
  // 8 GPUs of a buffer of 8 x 7168 x 2 B = 114688 B (zeroed first, then the group's row copied
  // in), the head over the 8 rows at 129280/8 = 16160 columns (an eighth of its bf16 weights on a
  // chip), the 8 x 129280 logits of 2 B all-gathered (2068480 B) and moved into rows (read and
  // written), and the group's own row zeroed and copied out (129280 x 2 B read and written).
  const auto kind = [&](const char* n) { return g.collectives[find(g, n)->collective].kind; };
  ASSERT_NE(find(g, "head_gather"), nullptr);
  EXPECT_EQ(kind("head_gather"), comm::Collective::all_reduce);
  EXPECT_DOUBLE_EQ(g.collectives[find(g, "head_gather")->collective].bytes, 114688.0);
  EXPECT_DOUBLE_EQ(g.collectives[find(g, "head_gather")->collective].group.size, 8);
  EXPECT_DOUBLE_EQ(find(g, "head_zero")->cost.main_bytes, 114688.0);
  EXPECT_DOUBLE_EQ(find(g, "head_copy_in")->cost.main_bytes, 2 * 7168.0 * 2);
  EXPECT_FALSE(find(g, "head_copy_in")->gathered);
  EXPECT_DOUBLE_EQ(find(g, "lm_head")->gemm_m, 8);
  EXPECT_DOUBLE_EQ(find(g, "lm_head")->gemm_n, 16160);
  EXPECT_DOUBLE_EQ(find(g, "lm_head")->weight_bytes * 8, find(o, "lm_head")->weight_bytes);
  EXPECT_TRUE(find(g, "lm_head")->gathered);
  EXPECT_EQ(kind("logits_allgather"), comm::Collective::all_gather);
  EXPECT_DOUBLE_EQ(g.collectives[find(g, "logits_allgather")->collective].bytes, 2068480.0);
  EXPECT_TRUE(find(g, "logits_allgather")->gathered);
  EXPECT_DOUBLE_EQ(find(g, "logits_rearrange")->cost.main_bytes, 2 * 2068480.0);
  EXPECT_DOUBLE_EQ(find(g, "logits_zero")->cost.main_bytes + find(g, "logits_scatter")->cost.main_bytes, 3 * 129280.0 * 2);
  EXPECT_FALSE(find(g, "logits_scatter")->gathered);
  for (const char* n : {"final_norm", "sample_cast", "sample_argmax"}) EXPECT_FALSE(find(g, n)->gathered) << n;
  for (const char* n : {"head_gather", "lm_head", "logits_rearrange", "logits_scatter", "sample_argmax"}) {
    EXPECT_EQ(find(g, n)->scale, model::Scale::seqs) << n;
  }
  EXPECT_EQ(find(o, "head_gather"), nullptr);
  EXPECT_DOUBLE_EQ(find(o, "lm_head")->gemm_m, 1);
  // At --ep 32 a split would cut DeepSeek's 128-wide fp8 blocks (18432 / 32 = 576 columns, 4.5
  // blocks; the shared expert's 2048 / 32 = 64, half a block), which SGLang's layers refuse: both
  // stay on each group's 128 rows with whole weights; the router still runs over the 4096
  // gathered rows, and the head (bf16, no blocks) over the 32 last tokens.
  cfg.forward.ep = 32;
  cfg.batch = 32;
  auto wide = run("deepseek-v3", "h200", cfg);
  const model::Graph& w = wide->prefill_graph;
  EXPECT_EQ(find(w, "dense_allgather"), nullptr);
  EXPECT_DOUBLE_EQ(find(w, "gate_proj")->gemm_m, 128);
  EXPECT_DOUBLE_EQ(find(w, "gate_proj")->gemm_n, 18432);
  EXPECT_DOUBLE_EQ(find(w, "shared_gate")->gemm_m, 128);
  EXPECT_FALSE(find(w, "shared_gate")->gathered);
  EXPECT_GT(find(w, "shared_gate"), find(w, "ep_reducescatter"));
  EXPECT_DOUBLE_EQ(find(w, "router")->gemm_m, 4096);
  EXPECT_DOUBLE_EQ(find(w, "lm_head")->gemm_m, 32);
  // At --tp 2 --ep 4 the head runs over the 4 groups' last tokens at 129280/8 columns, and the
  // gather and the logits span all 8 GPUs: 4 x 129280 x 2 B of logits.
  cfg.forward.tp = 2;
  cfg.forward.ep = 4;
  cfg.batch = 4;
  auto both = run("deepseek-v3", "h200", cfg);
  const model::Graph& b = both->prefill_graph;
  EXPECT_DOUBLE_EQ(find(b, "lm_head")->gemm_m, 4);
  EXPECT_DOUBLE_EQ(find(b, "lm_head")->gemm_n, 16160);
  EXPECT_DOUBLE_EQ(b.collectives[find(b, "logits_allgather")->collective].group.size, 8);
  EXPECT_DOUBLE_EQ(b.collectives[find(b, "logits_allgather")->collective].bytes, 4 * 129280.0 * 2);
}

TEST(Inference, WholeExpertsInsideTheTensorParallelGroup) {
  // Mixtral-8x7B (8 experts, top 2, hidden 4096, expert width 14336), prompt 128 x batch 64 =
  // 8192 tokens, attention TP 4. Experts TP (--experts tp): every GPU runs all 8192 x 2 = 16384
  // token-expert pairs on its 1/4 of each expert's width: gate and up 2·16384·4096·(2·3584)
  // FLOPs. Experts EP (--experts ep, vLLM's --enable-expert-parallel): each GPU holds 8/4 = 2
  // whole experts and runs the 16384/4 = 4096 pairs routed to them: 2·4096·4096·(2·14336), the
  // same FLOPs; its gate-up weights are 2 experts x 4096 x 28672 x 2 B. No token moves between
  // the GPUs (each holds all 8192 after attention's all-reduce): no all-to-all, the layer's
  // all-reduce sums the outputs as under TP. At --ep 2 on top (2 attention groups of TP 4,
  // experts over 8 GPUs, 1 each): a GPU's 4096 tokens give 4096 x 2 / 4 = 2048 pairs for its
  // column, dispatched over the 2 groups: 2048 x 4096 x 2 B, half of it to the other group.
  InferenceConfig cfg;
  cfg.forward.tp = 4;
  cfg.batch = 64;
  auto tp = run("mixtral-8x7b", "h100-sxm", cfg);
  cfg.forward.experts = model::ForwardConfig::Experts::expert;
  auto ep = run("mixtral-8x7b", "h100-sxm", cfg);
  bool seen = false;
  for (int i = 0; i < ep->prefill_graph.op_count; ++i) {
    const model::GraphOp& o = ep->prefill_graph.ops[i];
    const std::string_view n = o.name;
    EXPECT_NE(n, "ep_dispatch");
    if (n == "experts_gate_up") {
      seen = true;
      EXPECT_DOUBLE_EQ(o.gemm_m, 4096);
      EXPECT_DOUBLE_EQ(o.cost.matrix_flops, 2.0 * 4096 * 4096 * 2 * 14336);
      EXPECT_DOUBLE_EQ(tp->prefill_graph.ops[i].cost.matrix_flops, 2.0 * 16384 * 4096 * 2 * 3584);
      EXPECT_DOUBLE_EQ(o.weight_bytes, 2.0 * 4096 * 2 * 14336 * 2);
    }
  }
  EXPECT_TRUE(seen);
  cfg.forward.ep = 2;
  cfg.batch = 64;
  auto both = run("mixtral-8x7b", "h100-sxm", cfg);
  for (int i = 0; i < both->prefill_graph.op_count; ++i) {
    const model::GraphOp& o = both->prefill_graph.ops[i];
    if (std::string_view(o.name) == "ep_dispatch") {
      EXPECT_DOUBLE_EQ(o.cost.link_bytes, 2048.0 * 4096 * 2 / 2);
    }
    if (std::string_view(o.name) == "experts_gate_up") {
      EXPECT_DOUBLE_EQ(o.gemm_m, 2048);
    }
  }
  // Decoding one sequence at TP 8: its token picks 2 of the 8 experts. Experts TP: every GPU
  // reads its 1/8 slice of E(1 - (1 - 2/8)^1) = 2 experts. Experts EP (one whole expert per
  // GPU): on average a GPU reads 8/8 x (1 - 3/4) = 1/4 of an expert, but the two picked
  // experts sit on two GPUs, which each read one whole expert, and the layer waits for them:
  // touched 1 (docs/models.md), 4 times the bytes of a TP GPU's 2 slices of 1/8.
  cfg.forward.ep = 1;
  cfg.forward.tp = 8;
  cfg.batch = 1;
  auto whole1 = run("mixtral-8x7b", "h100-sxm", cfg);
  cfg.forward.experts = model::ForwardConfig::Experts::tensor;
  auto split1 = run("mixtral-8x7b", "h100-sxm", cfg);
  for (int i = 0; i < whole1->decode_graph.op_count; ++i) {
    if (std::string_view(whole1->decode_graph.ops[i].name) != "experts_gate_up") continue;
    EXPECT_DOUBLE_EQ(whole1->decode_graph.ops[i].touched, 1);
    EXPECT_DOUBLE_EQ(split1->decode_graph.ops[i].touched, 2);
    EXPECT_DOUBLE_EQ(whole1->decode_graph.ops[i].expert_bytes, 4096.0 * 2 * 14336 * 2);
    EXPECT_DOUBLE_EQ(split1->decode_graph.ops[i].expert_bytes, 4096.0 * 2 * 1792 * 2);
  }
  cfg.forward.experts = model::ForwardConfig::Experts::expert;
  cfg.forward.ep = 2;
  cfg.batch = 64;
  // 16 GPUs (TP 8 x EP 2) do not divide the 8 experts; a dense model has none.
  cfg.forward.tp = 8;
  EXPECT_THROW(run("mixtral-8x7b", "h100-sxm", cfg), InputError);
  cfg.forward.tp = 1;
  cfg.forward.ep = 1;
  EXPECT_THROW(run("llama-3.1-8b", "h100-sxm", cfg), InputError);
}

TEST(Inference, DeepEpMovesFp8OutBf16BackAndEachTokenOncePerNode) {
  // DeepSeek-V3 (hidden 7168, 256 experts, top 8) at --tp 1 --ep 16 on H100s: two nodes of 8,
  // routing balanced. DeepEP dispatches a token in fp8 with a 4-byte scale per 128 values and
  // 16 bytes of its source, 7168 + 56·4 + 16 = 7408 B, and combines it in bf16, 14336 B; the
  // all-to-all's network share is the other node's 8 of 16 chips.
  // Decode, 1024 sequences: 64 tokens a chip, under the low-latency limit of 128: every pair
  // moves, 64·8 = 512 pairs: 512·7408/2 = 1896448 B out and 512·14336/2 = 3670016 B back over
  // the network.
  // Prefill, 16 x 512 tokens: 512 a chip, over the limit: the normal kernels send a token once
  // to each node holding one of its experts. A node holds 128 of the 256 experts and misses a
  // token with probability C(128, 8)/C(256, 8) = 852841/244371090: D = 2·(1 − that) = 1.99302
  // nodes a token, 512·D·7408/2 = 3779659.0 B out, 512·D·14336/2 = 7314415.7 B back; the pairs
  // would be 512·8·7408/2 = 15171584 B (4.01 times, 8/D).
  InferenceConfig cfg;
  cfg.forward.tp = 1;
  cfg.forward.ep = 16;
  cfg.forward.expert_imbalance = 1;
  cfg.batch = 1024;
  cfg.prompt = 16;
  cfg.gen = 2;
  cfg.forward.moe_a2a = model::ForwardConfig::MoeA2A::deepep;
  auto decode = run("deepseek-v3", "h100-sxm", cfg);
  cfg.batch = 16;
  cfg.prompt = 512;
  auto prefill = run("deepseek-v3", "h100-sxm", cfg);
  cfg.forward.moe_a2a = model::ForwardConfig::MoeA2A::pairs;
  auto pairs = run("deepseek-v3", "h100-sxm", cfg);
  const double D = 2 * (1 - 852841.0 / 244371090.0);
  int seen = 0;
  for (int i = 0; i < decode->decode_graph.op_count; ++i) {
    const model::GraphOp& o = decode->decode_graph.ops[i];
    if (std::string_view(o.name) == "ep_dispatch") {
      ++seen;
      EXPECT_NEAR(o.cost.link_bytes, 1896448, 1e-6);
    }
    if (std::string_view(o.name) == "ep_combine") {
      ++seen;
      EXPECT_NEAR(o.cost.link_bytes, 3670016, 1e-6);
    }
  }
  for (int i = 0; i < prefill->prefill_graph.op_count; ++i) {
    const model::GraphOp& o = prefill->prefill_graph.ops[i];
    const double p = pairs->prefill_graph.ops[i].cost.link_bytes;
    if (std::string_view(o.name) == "ep_dispatch") {
      ++seen;
      EXPECT_NEAR(o.cost.link_bytes / (512 * D * 7408 / 2), 1, 1e-12);
      EXPECT_NEAR(p, 512.0 * 8 * 7168 * 2 / 2, 1e-6);  // the pairs in bf16
    }
    if (std::string_view(o.name) == "ep_combine") {
      ++seen;
      EXPECT_NEAR(o.cost.link_bytes / (512 * D * 14336 / 2), 1, 1e-12);
    }
  }
  EXPECT_EQ(seen, 4);  // both, in the MoE layers (one group, repeated 58 times) of both passes
  EXPECT_LT(prefill->ttft_s, pairs->ttft_s);
  // DeepEP's combine sums each token's k outputs itself: no moe_combine kernel of its own.
  auto has = [](const model::Graph& g, std::string_view name) {
    for (int i = 0; i < g.op_count; ++i) {
      if (std::string_view(g.ops[i].name) == name) return true;
    }
    return false;
  };
  EXPECT_FALSE(has(prefill->prefill_graph, "moe_combine"));
  EXPECT_TRUE(has(pairs->prefill_graph, "moe_combine"));
  // Experts computing in bf16 (Mixtral's bf16 checkpoint on 8 H100s, --ep 8, 4096 hidden,
  // top 2): DeepEP dispatches bf16, 4096·2 = 8192 B a pair; decode at 64 tokens a chip,
  // 128 pairs, 7/8 of them to the other chips over NVLink: 128·8192·7/8 = 917504 B.
  cfg.forward.ep = 8;
  cfg.batch = 512;
  cfg.prompt = 16;
  cfg.forward.moe_a2a = model::ForwardConfig::MoeA2A::deepep;
  auto bf16 = run("mixtral-8x7b", "h100-sxm", cfg);
  seen = 0;
  for (int i = 0; i < bf16->decode_graph.op_count; ++i) {
    const model::GraphOp& o = bf16->decode_graph.ops[i];
    if (std::string_view(o.name) == "ep_dispatch") {
      ++seen;
      EXPECT_NEAR(o.cost.link_bytes, 917504, 1e-6);
    }
  }
  EXPECT_EQ(seen, 1);
}

TEST(Inference, DeepEpNormalShareByHand) {
  // Mixtral (8 experts, top 2) over 8 chips of one expert each: a token's two experts are on
  // two chips, D = 2 = k (share 1). DeepSeek-V3 over one node of 8: a chip holds 32 experts
  // and misses a token with probability C(224, 8)/C(256, 8) = 0.338168: D = 8·0.661832 =
  // 5.29465 chips, share D/8 = 0.661832. Over 32 chips in 4 nodes: a node holds 64 and misses
  // with probability C(192, 8)/C(256, 8) = 0.0964464: D = 3.61421 nodes, share 0.451777.
  // Whole experts inside TP groups of 8 (--tp 8 --ep 2 --experts ep, one group a node): a
  // chip's column holds 256/8 = 32 experts, 16 on each node; a token sends 8/8 = 1 pair into
  // it on average and misses a node with probability C(240, 8)/C(256, 8) = 0.592295: D =
  // 2·0.407705 = 0.815410 nodes, share D/(8/8) = 0.815410.
  const model::ModelConfig mixtral = io::bundled_model("mixtral-8x7b"), ds = io::bundled_model("deepseek-v3");
  EXPECT_NEAR(model::deepep_normal_share(mixtral, {8, 8}), 1, 1e-12);
  EXPECT_NEAR(model::deepep_normal_share(ds, {8, 8}), 0.661832, 1e-6);
  EXPECT_NEAR(model::deepep_normal_share(ds, {32, 8}), 0.451777, 1e-6);
  EXPECT_NEAR(model::deepep_normal_share(ds, {2, 1}, 8), 0.815410, 1e-6);
  EXPECT_EQ(model::deepep_normal_share(ds, {1, 1}), 1);
  // DeepEP's normal kernels reach at most 8 GPUs over NVLink (NUM_MAX_NVL_PEERS): 32 chips of one
  // 72-chip domain (a GB200 NVL72) are 4 groups of 8 to them, as 4 nodes: the same 0.451777. Its
  // intranode kernels (and their class) only for a group of 8 or fewer in one domain.
  EXPECT_NEAR(model::deepep_normal_share(ds, {32, 72}), 0.451777, 1e-6);
  using hw::KernelClass;
  EXPECT_EQ(model::deepep_kernel(KernelClass::deepep_dispatch, {8, 8}, true), KernelClass::deepep_intranode_dispatch);
  EXPECT_EQ(model::deepep_kernel(KernelClass::deepep_combine, {8, 72}, true), KernelClass::deepep_intranode_combine);
  EXPECT_EQ(model::deepep_kernel(KernelClass::deepep_intranode_dispatch, {32, 72}, true), KernelClass::deepep_dispatch);
  EXPECT_EQ(model::deepep_kernel(KernelClass::deepep_dispatch, {16, 8}, true), KernelClass::deepep_dispatch);
  EXPECT_EQ(model::deepep_kernel(KernelClass::deepep_intranode_combine, {8, 8}, false), KernelClass::deepep_combine);
}

TEST(Inference, MlaWritesItsCacheInTheKvDtype) {
  // DeepSeek-V3 decode at batch 4, TP 8, fp8 KV cache: each layer writes the new tokens'
  // latent and RoPE key, 512 + 64 = 576 values per token (replicated on every TP rank),
  // read in bf16 (2 B) and stored in fp8 (1 B): 4 x 576 x 3 = 6912 B.
  InferenceConfig cfg;
  cfg.forward.tp = 8;
  cfg.batch = 4;
  cfg.prompt = 64;
  cfg.gen = 2;
  cfg.forward.precision.kv_cache = DType::fp8_e4m3;
  auto r = run("deepseek-v3", "h200", cfg);
  bool seen = false;
  for (int i = 0; i < r->decode_graph.op_count; ++i) {
    if (std::string_view(r->decode_graph.ops[i].name) != "kv_cache_write") continue;
    seen = true;
    EXPECT_DOUBLE_EQ(r->decode_graph.ops[i].cost.main_bytes, 4 * 576 * 3.0);
    EXPECT_DOUBLE_EQ(r->decode_graph.ops[i].cost.main_store_bytes, 4 * 576 * 1.0);
  }
  EXPECT_TRUE(seen);
}

TEST(Inference, GreedySamplingReadsTheWholeVocabularyTwice) {
  // Llama-3.1-8B (vocabulary 128256) at batch 8: the cast reads 8 x 128256 bf16 logits
  // (2 bytes) and writes them as fp32 (4): 6 x 1026048 = 6156288 bytes, 4104192 of them
  // stored; the argmax reads the fp32 logits: 4 x 1026048 = 4104192 bytes.
  InferenceConfig cfg;
  cfg.batch = 8;
  cfg.prompt = 32;
  cfg.gen = 4;
  auto r = run("llama-3.1-8b", "h100-sxm", cfg);
  int seen = 0;
  for (int i = 0; i < r->decode_graph.op_count; ++i) {
    const auto& op = r->decode_graph.ops[i];
    if (std::string_view(op.name) == "sample_cast") {
      ++seen;
      EXPECT_DOUBLE_EQ(op.cost.main_bytes, 6156288);
      EXPECT_DOUBLE_EQ(op.cost.main_store_bytes, 4104192);
    } else if (std::string_view(op.name) == "sample_argmax") {
      ++seen;
      EXPECT_DOUBLE_EQ(op.cost.main_bytes, 4104192);
      EXPECT_EQ(op.cost.main_store_bytes, 0);
    }
  }
  EXPECT_EQ(seen, 2);
}

// The sampling kernels of a decode step of Llama-3.1-8B at batch 8 (1026048 logits of its 128256-token
// vocabulary), by name: bytes read (stores among them), bytes stored, exponentials.
std::map<std::string, std::array<double, 3>> sampling_kernels(const model::ForwardConfig& f) {
  InferenceConfig cfg;
  cfg.batch = 8;
  cfg.prompt = 32;
  cfg.gen = 4;
  cfg.forward = f;
  auto r = run("llama-3.1-8b", "h100-sxm", cfg);
  std::map<std::string, std::array<double, 3>> out;
  for (int i = 0; i < r->decode_graph.op_count; ++i) {
    const auto& op = r->decode_graph.ops[i];
    if (std::string_view(op.name).rfind("sample_", 0) != 0) continue;
    EXPECT_EQ(op.cost.launches, 1) << op.name;
    EXPECT_EQ(out.count(op.name), 0u) << op.name;
    out[op.name] = {op.cost.main_bytes, op.cost.main_store_bytes, op.cost.special_ops};
  }
  return out;
}

TEST(Inference, VllmV0sSamplerAddsItsSoftmaxesOverTheVocabulary) {
  // The same batch with vLLM V0's sampler (ForwardConfig::Sampler::probs): 1026048 logits.
  // Besides the cast (6 bytes a logit) and the argmax (4): the temperature's in-place
  // division reads and writes fp32 in place (8 bytes: 8208384, none to new lines); the softmax reads a
  // row three times and writes it once (16: 16416768, 4104192 stored) with two exps a logit
  // (2052096 special-function ops); the log-softmax alike with one exp (1026048); the gather
  // of the sampled rows copies them (8: 8208384, 4104192 stored). Six kernels over the
  // vocabulary, 58 bytes a logit in all: 59510784 bytes.
  model::ForwardConfig f;
  f.sampler = model::ForwardConfig::Sampler::probs;
  const std::map<std::string, std::array<double, 3>> want = {
      {"sample_cast", {6156288, 4104192, 0}},           {"sample_temperature", {8208384, 0, 0}},
      {"sample_softmax", {16416768, 4104192, 2052096}}, {"sample_log_softmax", {16416768, 4104192, 1026048}},
      {"sample_gather", {8208384, 4104192, 0}},         {"sample_argmax", {4104192, 0, 0}}};
  const auto got = sampling_kernels(f);
  EXPECT_EQ(got, want);
  double total = 0;
  for (const auto& [name, k] : got) total += k[0];
  EXPECT_DOUBLE_EQ(total, 59510784);
}

TEST(Inference, SamplingAtATemperatureAddsTheDrawsKernels) {
  // 1026048 logits. Greedy (vLLM V1): the cast (read 2, write 4: 6156288, 4104192 stored) and
  // the argmax (read 4: 4104192). At a temperature, nothing cut (docs/serving.md#sampling):
  // the temperature's division in place (8 a logit: 8208384), the softmax (a row read three
  // times, written once: 16416768, 4104192 stored, two exps a logit: 2052096), then vLLM's
  // random_sample: the exponential noise written (4104192 stored, one log a logit: 1026048),
  // the probabilities divided by it in place (12: 12312576) and the argmax: six kernels, 50
  // bytes a logit, 51302400 bytes.
  model::ForwardConfig f;
  const auto greedy = sampling_kernels(f);
  ASSERT_EQ(greedy.size(), 2u);
  EXPECT_DOUBLE_EQ(greedy.at("sample_cast")[0], 6156288);
  EXPECT_DOUBLE_EQ(greedy.at("sample_argmax")[0], 4104192);
  f.sampling = model::ForwardConfig::Sampling::random;
  const std::map<std::string, std::array<double, 3>> v1 = {
      {"sample_cast", {6156288, 4104192, 0}},      {"sample_temperature", {8208384, 0, 0}},
      {"sample_softmax", {16416768, 4104192, 2052096}}, {"sample_noise", {4104192, 4104192, 1026048}},
      {"sample_divide", {12312576, 0, 0}},          {"sample_argmax", {4104192, 0, 0}}};
  EXPECT_EQ(sampling_kernels(f), v1);
  double total = 0;
  for (const auto& [name, k] : v1) total += k[0];
  EXPECT_DOUBLE_EQ(total, 51302400);
  // SGLang's draw: the softmax copied back over the logits (read 4, write 4: 8208384, 4104192
  // stored), then FlashInfer's kernel reading each row once (4: 4104192): five kernels, 42
  // bytes a logit, 43094016 bytes.
  f.draw = model::ForwardConfig::Draw::flashinfer;
  const std::map<std::string, std::array<double, 3>> sglang = {
      {"sample_cast", {6156288, 4104192, 0}}, {"sample_temperature", {8208384, 0, 0}},
      {"sample_softmax", {16416768, 4104192, 2052096}}, {"sample_copy", {8208384, 4104192, 0}},
      {"sample_draw", {4104192, 0, 0}}};
  EXPECT_EQ(sampling_kernels(f), sglang);
  // TensorRT-LLM's torch.multinomial: the probabilities' max, min and row sums (a read of 4
  // each: 4104192), then vLLM's noise, division and argmax: nine kernels, 62 bytes a logit,
  // 63614976 bytes.
  f.draw = model::ForwardConfig::Draw::multinomial;
  auto trt = v1;
  for (const char* check : {"sample_max", "sample_min", "sample_sum"}) trt[check] = {4104192, 0, 0};
  EXPECT_EQ(sampling_kernels(f), trt);
  total = 0;
  for (const auto& [name, k] : trt) total += k[0];
  EXPECT_DOUBLE_EQ(total, 63614976);
  // vLLM V0's sampler runs its temperature, softmax, log-softmax and gather at any temperature
  // (58 bytes a logit greedy); the draw adds the noise and the division: eight kernels, 74
  // bytes a logit, 75927552 bytes.
  f.draw = model::ForwardConfig::Draw::exponential;
  f.sampler = model::ForwardConfig::Sampler::probs;
  const auto v0 = sampling_kernels(f);
  ASSERT_EQ(v0.size(), 8u);
  total = 0;
  for (const auto& [name, k] : v0) total += k[0];
  EXPECT_DOUBLE_EQ(total, 75927552);
  EXPECT_DOUBLE_EQ(v0.at("sample_noise")[1], 4104192);
  EXPECT_DOUBLE_EQ(v0.at("sample_divide")[0], 12312576);
}

TEST(Inference, DecodeStepFloorByHand) {
  // Llama-3.1-8B on one H100 with CUDA graphs: a decode step runs 15 kernels per layer
  // (input norm, q, k, v, RoPE, KV write, attention, o, residual, post-attention norm, gate,
  // up, SiLU-mul, down, residual) x 32 layers, the embedding, the final norm, the LM head and
  // greedy sampling's cast and argmax: 485 kernels, each paying its class's fixed time on an
  // H100 (hardware file, efficiency: the fits of its kernel curves, or the chip's 1.3 us
  // boundary): per layer 7 GEMMs x 4.549 us, a decode attention 15.32 us, 2 norms x 0.8837 us
  // and 5 pointwise kernels (RoPE, KV write, 2 residuals, SiLU-mul) x 1.3 us = 55.4304 us;
  // x 32 = 1773.7728 us, and the embedding 1.3, the final norm 0.8837, the LM head 4.549 us
  // and the two sampling kernels 2 x 1.3 us: 1783.1055 us a step, whatever the batch. No
  // collective on one chip.
  InferenceConfig cfg;
  cfg.cuda_graphs = true;
  cfg.batch = 8;
  cfg.prompt = 32;
  cfg.gen = 16;
  auto r = run("llama-3.1-8b", "h100-sxm", cfg);
  const double step = 32 * (7 * 4.549e-6 + 15.32e-6 + 2 * 0.8837e-6 + 5 * 1.3e-6) + 1.3e-6 + 0.8837e-6 + 4.549e-6 + 2 * 1.3e-6;
  EXPECT_NEAR(r->decode_last.kernel_fixed_s, step, 1e-12);
  EXPECT_NEAR(r->decode_total.kernel_fixed_s, 15 * step, 1e-11);
  EXPECT_EQ(r->decode_last.link_latency_s, 0);
  // Llama-3.1-70B at TP 4: 2 ring all-reduces per layer x 80 and the embedding's of 16 KB,
  // in NCCL's LL protocol: 6.6 us per call and 2(4 - 1) = 6 steps of 0.6 us (NCCL's tuner):
  // 10.2 us; the logits all-gather's: 6.6 + 3 x 0.6 = 8.4 us. Fixed costs are not scaled
  // by the link's efficiency: 161 x 10.2 + 8.4 us of latency per step.
  cfg.forward.tp = 4;
  cfg.batch = 1;
  cfg.forward.algo = comm::Algo::ring;
  r = run("llama-3.1-70b", "h100-sxm", cfg);
  EXPECT_NEAR(r->decode_last.link_latency_s, 161 * 10.2e-6 + 8.4e-6, 1e-12);
  // By default the same: NVLS's 23.7 us fixed (9 + 1.5 x (64 x 20480 / 344.25e9 + 6) us at
  // TP 4) loses to the LL ring for so few bytes.
  cfg.forward.algo = comm::Algo::automatic;
  r = run("llama-3.1-70b", "h100-sxm", cfg);
  EXPECT_NEAR(r->decode_last.link_latency_s, 161 * 10.2e-6 + 8.4e-6, 1e-12);
  // The floor is a share of the step, never more than it.
  EXPECT_LT(r->decode_last.kernel_fixed_s + r->decode_last.link_latency_s, r->decode_last.t_realistic_s);
}

TEST(Inference, KernelBoundaryAddsToEveryKernelInAGraph) {
  // On the toy chip (no boundary) a decode step with graphs takes T; with a 2 us boundary it
  // takes T + 2 us x its kernels, the bounds unchanged (they are pure roofline).
  InferenceConfig cfg;
  cfg.cuda_graphs = true;
  cfg.batch = 4;
  cfg.prompt = 64;
  cfg.gen = 4;
  const auto m = io::bundled_model("llama-2-7b");
  hw::System sys = testing::toy_system();
  auto a = std::make_unique<InferenceResult>(), b = std::make_unique<InferenceResult>();
  infer(m, sys, cfg, *a);
  sys.chip.efficiency.overhead_s = 2e-6;
  infer(m, sys, cfg, *b);
  // Llama-2-7B: 15 kernels per layer x 32 + embedding, final norm, LM head and sampling's
  // cast and argmax = 485.
  EXPECT_NEAR(b->decode_last.t_realistic_s - a->decode_last.t_realistic_s, 485 * 2e-6, 1e-12);
  EXPECT_EQ(b->decode_last.t_lower_s, a->decode_last.t_lower_s);
  EXPECT_NEAR(b->decode_last.kernel_fixed_s, 485 * 2e-6, 1e-12);
}

// Speculative decoding with the target as its own draft, k = 1, α = 0: one token a step,
// gen - 1 = 63 steps; the draft's one pass after c cached is a plain one-token step at context
// c + 1, built as an engine step mix: at the first (c = prompt) and last (c = prompt + 62)
// steps it must equal the plain decode's first and last steps, built as a plain pass.
TEST(Inference, SpeculationsDraftPassIsThePlainDecodeStep) {
  const model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  InferenceConfig cfg;
  cfg.batch = 4;
  cfg.prompt = 512;
  cfg.gen = 64;
  cfg.spec.k = 1;
  cfg.spec.accept.fill(0);
  cfg.spec.draft = &m;
  auto r = std::make_unique<InferenceResult>();
  infer(m, chip("h100-sxm"), cfg, *r);
  EXPECT_DOUBLE_EQ(r->spec.steps, 63);
  EXPECT_NEAR(r->spec.draft_first_s, r->decode_first.t_realistic_s, 1e-12 * r->decode_first.t_realistic_s);
  EXPECT_NEAR(r->spec.draft_last_s, r->decode_last.t_realistic_s, 1e-12 * r->decode_last.t_realistic_s);
  // The draft's prefill is the target's; its weights and cache the target's own again.
  EXPECT_NEAR(r->spec.draft_prefill_s, r->prefill.t_realistic_s, 1e-12 * r->prefill.t_realistic_s);
  EXPECT_DOUBLE_EQ(r->spec.draft_weights_bytes, r->memory.weights_bytes);
  EXPECT_DOUBLE_EQ(r->spec.draft_kv_cache_bytes, r->memory.kv_cache_bytes);
  // No rate breaks even: a step costs a plain step and a verification of two tokens.
  EXPECT_LT(r->spec.speedup, 1);
}

TEST(Inference, SpeculationAtAcceptanceOneTakesGenOverKPlusOneSteps) {
  // α = 1, k = 3: 4 tokens a step, (101 - 1) / 4 = 25 steps; the last verifies after
  // 1000 + 24·4 = 1096 cached. An MTP layer on the same chip costs a layer of 32 (and the
  // head): the step of 4 tokens is about a plain step, so the speedup is near 4/(1 + small).
  const model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  const model::ModelConfig d = model::mtp_draft(m);
  InferenceConfig cfg;
  cfg.prompt = 1000;
  cfg.gen = 101;
  cfg.cuda_graphs = true;
  cfg.spec.k = 3;
  cfg.spec.accept.fill(1);
  cfg.spec.draft = &d;
  cfg.spec.mtp = true;
  auto r = std::make_unique<InferenceResult>();
  infer(m, chip("h100-sxm"), cfg, *r);
  EXPECT_DOUBLE_EQ(r->spec.tokens_per_step, 4);
  EXPECT_DOUBLE_EQ(r->spec.steps, 25);
  EXPECT_GT(r->spec.speedup, 2.5);
  EXPECT_LT(r->spec.speedup, 4);
  EXPECT_NEAR(r->spec.tpot_s, 25 * (r->spec.verify_first_s + r->spec.verify_last_s + r->spec.draft_first_s + r->spec.draft_last_s) / 2 / 100,
              1e-15);
  // The MTP layer's weights as in the serving test: 436,224,000 bytes.
  EXPECT_DOUBLE_EQ(r->spec.draft_weights_bytes, 436224000);
}

}  // namespace
}  // namespace ridgeline::analysis
