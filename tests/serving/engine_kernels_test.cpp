// The kernels an engine preset runs a checkpoint's fp8 block-scaled GEMMs with (vLLM's Triton
// kernel or DeepGEMM's), and what each costs on the chip (docs/serving.md#engines,
// docs/cost-model.md#kernel-curves).
#include <gtest/gtest.h>

#include <memory>
#include <string_view>

#include "ridgeline/io/model_file.hpp"
#include "ridgeline/model/graph.hpp"
#include "ridgeline/model/transformer.hpp"
#include "ridgeline/ops/estimate.hpp"
#include "ridgeline/serving/engine.hpp"
#include "toy_chip.hpp"

namespace ridgeline::serving {
namespace {

using hw::KernelClass;

const model::GraphOp* find_op(const model::Graph& g, std::string_view name) {
  for (int i = 0; i < g.op_count; ++i) {
    if (name == g.ops[i].name) return &g.ops[i];
  }
  return nullptr;
}

TEST(EngineKernels, EachPresetRunsBlockFp8GemmsWithTheKernelsItsReleaseCalls) {
  // DeepSeek-V3 (fp8 weights in 128x128 blocks) at TP 8 on H200s, 64 decode tokens.
  // TensorRT-LLM (DeepGEMM on by default, PR #3341), SGLang 0.4+ (PR #5628) and vLLM 0.14+
  // (PR #24462) run the dense block-fp8 GEMMs with DeepGEMM; vLLM 0.8-0.13 (as 0.8-0.10) and
  // SGLang 0.3 with vLLM's Triton kernel. The experts stay with the fused MoE class whatever
  // the engine.
  const model::ModelConfig m = io::bundled_model("deepseek-v3");
  hw::System sys = testing::catalog_system("h200");
  sys.chips = 8;
  struct Case {
    EngineRef engine;
    KernelClass dense;
  };
  const Case cases[] = {{{EngineKind::vllm, 13}, KernelClass::gemm_scaled},
                        {{EngineKind::vllm, 0}, KernelClass::gemm_scaled_deepgemm},
                        {{EngineKind::sglang, 3}, KernelClass::gemm_scaled},
                        {{EngineKind::sglang, 0}, KernelClass::gemm_scaled_deepgemm},
                        {{EngineKind::trtllm, 0}, KernelClass::gemm_scaled_deepgemm},
                        {{EngineKind::static_batch, 0}, KernelClass::gemm_scaled}};
  auto g = std::make_unique<model::Graph>();
  for (const Case& c : cases) {
    SCOPED_TRACE(name(c.engine));
    model::ForwardConfig f;
    f.tp = 8;
    f = engine_forward(f, engine_preset(c.engine, sys.chip, 8));
    g->clear();
    model::build_forward(m, f, sys, {64, 1, 1024, nullptr}, *g);
    ASSERT_FALSE(g->overflow);
    for (const char* dense : {"q_a_proj", "kv_a_proj", "o_proj"}) {
      const model::GraphOp* op = find_op(*g, dense);
      ASSERT_NE(op, nullptr) << dense;
      EXPECT_EQ(op->kernel, c.dense) << dense;
    }
    const model::GraphOp* experts = find_op(*g, "experts_gate_up");
    ASSERT_NE(experts, nullptr);
    EXPECT_EQ(experts->kernel, KernelClass::gemm_expert);
  }
}

TEST(EngineKernels, ABlockFp8GemmCostsTheCurveOfTheKernelItsEngineCalls) {
  // DeepSeek-V3's q_a_proj at 64 decode tokens on an H200 (TP 8 leaves it whole: 7168 -> 1536):
  // bytes: bf16 activations 64·7168·2 = 917 504, fp8 weights 7168·1536 = 11 010 048, their
  // fp32 scale per 128 x 128 block 11 010 048·32/16384/8 = 2688, bf16 out 64·1536·2 = 196 608:
  // 12 126 848 B at 4.8 TB/s = 2.526427 us. FLOPs 2·64·1536·7168 = 1 409 286 144 in fp8, the
  // 12 tiles of 64 x 128 covering it exactly (no padding): 0.712156 us at 1978.9 TFLOP/s.
  // TensorRT-LLM, DeepGEMM's curve (the H100's fit, memory x 0.94: 3.396 us, matrix 0.7738,
  // memory 0.94, overlap 0.9): 3.396 + max(0.712156 / 0.7738 = 0.920336, 2.526427 / 0.94 =
  // 2.687688, 0.9 x (0.920336 + 2.687688) = 3.247222) = 6.643222 us. vLLM, its Triton
  // kernel's (20.32 us, matrix 0.2797, memory 0.94, overlap 0.8): 20.32 + max(0.712156 /
  // 0.2797 = 2.546142, 2.687688, 0.8 x 5.233830 = 4.187064) = 24.507064 us.
  const model::ModelConfig m = io::bundled_model("deepseek-v3");
  hw::System sys = testing::catalog_system("h200");
  sys.chips = 8;
  auto g = std::make_unique<model::Graph>();
  for (const auto& [engine, want] : {std::pair{EngineRef{EngineKind::trtllm, 0}, 6.643222e-6},
                                     std::pair{EngineRef{EngineKind::vllm, 13}, 24.507064e-6}}) {
    SCOPED_TRACE(name(engine));
    model::ForwardConfig f;
    f.tp = 8;
    f = engine_forward(f, engine_preset(engine, sys.chip, 8));
    g->clear();
    model::build_forward(m, f, sys, {64, 1, 1024, nullptr}, *g);
    const model::GraphOp* op = find_op(*g, "q_a_proj");
    ASSERT_NE(op, nullptr);
    const ops::Estimate e = ops::estimate(op->cost.expand(), sys.chip, op->kernel);
    EXPECT_NEAR(e.main_bytes, 12126848, 1);
    EXPECT_NEAR(e.t_realistic_s, want, 1e-11);
  }
}

TEST(EngineKernels, Fp4BlocksKeepTheirOwnClassUnderDeepGemmEngines) {
  // DeepGEMM runs fp8 blocks only: an NVFP4 checkpoint's GEMMs (e4m3 scales per 16) stay
  // gemm_scaled (on the B200, the CUTLASS NVFP4 curve) under TensorRT-LLM too.
  const model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  const hw::System sys = testing::catalog_system("b200");
  model::ForwardConfig f;
  f.precision.weight = DType::fp4;
  f = engine_forward(f, engine_preset(EngineKind::trtllm, sys.chip, 1));
  ASSERT_EQ(f.scaled_gemm, model::ForwardConfig::ScaledGemm::deepgemm);
  auto g = std::make_unique<model::Graph>();
  model::build_forward(m, f, sys, {8, 1, 1024, nullptr}, *g);
  const model::GraphOp* op = find_op(*g, "qkv_proj");
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->kernel, KernelClass::gemm_scaled);
}

}  // namespace
}  // namespace ridgeline::serving
