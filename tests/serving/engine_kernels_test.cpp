// The kernels an engine preset runs a checkpoint's fp8 block-scaled GEMMs with (vLLM's Triton
// kernel or DeepGEMM's), and what each costs on the chip (docs/serving.md#engines,
// docs/cost-model.md#kernel-curves).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/core/error.hpp"
#include "ridgeline/io/model_file.hpp"
#include "ridgeline/model/graph.hpp"
#include "ridgeline/model/transformer.hpp"
#include "ridgeline/ops/estimate.hpp"
#include "ridgeline/serving/engine.hpp"
#include "toy_chip.hpp"

namespace ridgeline::serving {
namespace {

using hw::KernelClass;

// The index of the graph's first op named `name` (-1: none).
int op_index(const model::Graph& g, std::string_view name) {
  for (int i = 0; i < g.op_count; ++i) {
    if (name == g.ops[i].name) return i;
  }
  return -1;
}

const model::GraphOp* find_op(const model::Graph& g, std::string_view name) {
  const int i = op_index(g, name);
  return i < 0 ? nullptr : &g.ops[i];
}

// DeepSeek-V3's pass of `tokens` decode tokens (64 unless said) at 1024 of context, TP 8 on
// `sys`, as `engine`'s preset builds it; `split_a`: its q_a_proj and kv_a_proj apart whatever
// the engine (ForwardConfig::fused_qkv_a off).
void build_deepseek_tp8(const model::ModelConfig& m, const hw::System& sys, EngineRef engine, model::Graph& g,
                        double tokens = 64, bool split_a = false) {
  model::ForwardConfig f;
  f.tp = 8;
  f = engine_forward(f, engine_preset(engine, sys.chip, 8));
  if (split_a) f.fused_qkv_a = false;
  g.clear();
  model::build_forward(m, f, sys, {tokens, 1, 1024, nullptr}, g);
}

TEST(EngineKernels, EachPresetRunsBlockFp8GemmsWithTheKernelsItsReleaseCalls) {
  // DeepSeek-V3 (fp8 weights in 128x128 blocks) at TP 8 on H200s, 64 decode tokens.
  // TensorRT-LLM (DeepGEMM on by default, PR #3341), SGLang 0.4+ (PR #5628) and vLLM 0.11+
  // (PR #24462) run the dense block-fp8 GEMMs with DeepGEMM; vLLM 0.8-0.10 and SGLang 0.3 with
  // vLLM's Triton kernel. The experts: where the engine's kernel is Triton's, its fused MoE, which
  // scales each K block's product in its loop (gemm_expert_scaled), else DeepGEMM's grouped GEMMs
  // (gemm_expert_deepgemm; TensorRT-LLM's port of them, fp8_blockscale_gemm), but where the engine
  // keeps Triton's for experts split by width: vLLM 0.12+ over 8 or more, SGLang over any.
  const model::ModelConfig m = io::bundled_model("deepseek-v3");
  hw::System sys = testing::catalog_system("h200");
  sys.chips = 8;
  struct Case {
    EngineRef engine;
    KernelClass dense, experts;
  };
  // vLLM 0.12+ runs the experts in Triton's fused MoE at a MoE tensor-parallel size of 8 (PR
  // #29346): TP 8 here.
  const Case cases[] = {{{EngineKind::vllm, 10}, KernelClass::gemm_scaled, KernelClass::gemm_expert_scaled},
                        {{EngineKind::vllm, 13}, KernelClass::gemm_scaled_deepgemm, KernelClass::gemm_expert_scaled},
                        {{EngineKind::vllm, 0}, KernelClass::gemm_scaled_deepgemm, KernelClass::gemm_expert_scaled},
                        {{EngineKind::sglang, 3}, KernelClass::gemm_scaled, KernelClass::gemm_expert_scaled},
                        {{EngineKind::sglang, 0}, KernelClass::gemm_scaled_deepgemm, KernelClass::gemm_expert_scaled},
                        {{EngineKind::trtllm, 0}, KernelClass::gemm_scaled_deepgemm, KernelClass::gemm_expert_deepgemm},
                        {{EngineKind::static_batch, 0}, KernelClass::gemm_scaled, KernelClass::gemm_expert_scaled}};
  auto g = std::make_unique<model::Graph>();
  for (const Case& c : cases) {
    SCOPED_TRACE(name(c.engine));
    build_deepseek_tp8(m, sys, c.engine, *g);
    ASSERT_FALSE(g->overflow);
    // (The down-projections as one GEMM where the engine fuses them: EngineKernels.
    // TheEnginesRunMlasTwoDownProjectionsAsOneGemm.)
    const bool fused = engine_preset(c.engine, sys.chip, 8).fused_qkv_a;
    for (const char* dense : {fused ? "qkv_a_proj" : "q_a_proj", fused ? "qkv_a_proj" : "kv_a_proj", "o_proj"}) {
      const model::GraphOp* op = find_op(*g, dense);
      ASSERT_NE(op, nullptr) << dense;
      EXPECT_EQ(op->kernel, c.dense) << dense;
    }
    for (const char* experts : {"experts_gate_up", "experts_down"}) {
      const model::GraphOp* op = find_op(*g, experts);
      ASSERT_NE(op, nullptr) << experts;
      EXPECT_EQ(op->kernel, c.experts) << experts;
    }
  }
}

// On the MI300X, whose gemm_scaled class (AITER's CK block-scaled GEMM) has a K-loop time of
// 1.52 ns a column, DeepSeek-V3's block-fp8 projections carry their depth, one K loop a kernel:
// q_a_proj's 7168 (hidden) costs 7168 x 1.52 ns = 10.89536 us more than at the same figures
// without it, o_proj's 2048 (128 heads of 128 over 8 chips) 3.11296 us. The experts' grouped
// GEMMs carry none.
TEST(EngineKernels, BlockFp8GemmsOnTheMi300xPayTheirClassesKLoop) {
  const model::ModelConfig m = io::bundled_model("deepseek-v3");
  hw::System sys = testing::catalog_system("mi300x");
  sys.chips = 8;
  model::ForwardConfig f;
  f.tp = 8;
  auto g = std::make_unique<model::Graph>();
  model::build_forward(m, f, sys, {256, 1, 1024, nullptr}, *g);
  hw::ChipSpec without = sys.chip;
  without.efficiency.kernel[static_cast<int>(KernelClass::gemm_scaled)].k_loop_s = 0;
  const ops::Rates r(sys.chip), r0(without);
  for (const auto& [name, depth] : {std::pair{"q_a_proj", 7168.0}, std::pair{"o_proj", 2048.0}}) {
    SCOPED_TRACE(name);
    const model::GraphOp* op = find_op(*g, name);
    ASSERT_NE(op, nullptr);
    EXPECT_EQ(op->kernel, KernelClass::gemm_scaled);
    EXPECT_EQ(op->cost.loop_k, depth);
    const ops::TimeParts p = ops::time_parts(op->cost, r);
    EXPECT_NEAR(p.realistic(r, op->kernel) - p.realistic(r0, op->kernel), depth * 1.52e-9, 1e-15);
  }
  const model::GraphOp* experts = find_op(*g, "experts_gate_up");
  ASSERT_NE(experts, nullptr);
  EXPECT_EQ(experts->cost.loop_k, 0);
}

TEST(EngineKernels, VllmAndSglangKeepTritonsFusedMoeForExpertsSplitByWidthAsTheirReleasesDo) {
  // vLLM 0.12+ (PR #29346): DeepGEMM's MoE unless the MoE's tensor-parallel size is 8 or more;
  // with --enable-expert-parallel that size is 1 (whole experts on each GPU). SGLang 0.4+: its
  // DeepGEMM MoE runner under expert parallelism only, Triton's fused MoE for experts split by
  // width over any number of GPUs. DeepSeek-V3 on H200s, 64 decode tokens.
  const model::ModelConfig m = io::bundled_model("deepseek-v3");
  auto g = std::make_unique<model::Graph>();
  struct Case {
    EngineKind engine;
    int tp, ep;
    model::ForwardConfig::Experts experts;
    KernelClass want;
  };
  using X = model::ForwardConfig::Experts;
  for (const Case& c : {Case{EngineKind::vllm, 8, 1, X::tensor, KernelClass::gemm_expert_scaled},
                        Case{EngineKind::vllm, 8, 1, X::expert, KernelClass::gemm_expert_deepgemm},
                        Case{EngineKind::vllm, 4, 1, X::tensor, KernelClass::gemm_expert_deepgemm},
                        Case{EngineKind::vllm, 1, 8, X::tensor, KernelClass::gemm_expert_deepgemm},
                        Case{EngineKind::sglang, 8, 1, X::tensor, KernelClass::gemm_expert_scaled},
                        Case{EngineKind::sglang, 2, 1, X::tensor, KernelClass::gemm_expert_scaled},
                        Case{EngineKind::sglang, 8, 1, X::expert, KernelClass::gemm_expert_deepgemm},
                        Case{EngineKind::sglang, 1, 8, X::tensor, KernelClass::gemm_expert_deepgemm}}) {
    SCOPED_TRACE(fmt::format("{} tp {} ep {}", name(c.engine), c.tp, c.ep));
    hw::System sys = testing::catalog_system("h200");
    sys.chips = c.tp * c.ep;
    model::ForwardConfig f;
    f.tp = c.tp;
    f.ep = c.ep;
    f.experts = c.experts;
    f = engine_forward(f, engine_preset(EngineRef{c.engine, 0}, sys.chip, c.tp));
    g->clear();
    model::build_forward(m, f, sys, {64, 1, 1024, nullptr}, *g);
    const model::GraphOp* op = find_op(*g, "experts_down");
    ASSERT_NE(op, nullptr);
    EXPECT_EQ(op->kernel, c.want);
  }
}

TEST(EngineKernels, DeepGemmRunsOnHopperAndDatacenterBlackwellAloneAndTensorRtLlmOnNvidiaGpus) {
  // DeepGEMM's kernels need CUDA of compute capability 9.0 or 10.x (vLLM's is_deep_gemm_supported):
  // elsewhere vLLM and SGLang run DeepSeek-V3's block-fp8 GEMMs with Triton's kernel (on ROCm
  // with AITER's CK kernel under VLLM_ROCM_USE_AITER / SGLANG_USE_AITER): gemm_scaled, and their
  // experts, whole on each GPU (--experts ep), in the fused MoE: gemm_expert_scaled. TP 8, 64
  // decode tokens, vLLM's and SGLang's newest presets.
  const model::ModelConfig m = io::bundled_model("deepseek-v3");
  auto g = std::make_unique<model::Graph>();
  struct Case {
    const char* chip;
    const char* arch;  // replacing the catalog's ("-": as it is)
    bool deepgemm;
  };
  hw::System h200 = testing::catalog_system("h200");
  for (const Case& c : {Case{"h200", "-", true}, Case{"b200", "-", true}, Case{"h100-pcie", "-", true}, Case{"mi300x", "-", false},
                        Case{"a100-80gb", "-", false}, Case{"l40s", "-", false}, Case{"h200", "sm_89", false},
                        Case{"h200", "sm_103", true}, Case{"h200", "", true}, Case{"mi300x", "", false}}) {
    // (A file without `arch`: an nvidia GPU that multiplies fp8 is taken for one DeepGEMM runs on.)
    hw::System sys = testing::catalog_system(c.chip);
    if (std::string_view(c.arch) != "-") sys.chip.arch = c.arch;
    SCOPED_TRACE(fmt::format("{} arch '{}'", c.chip, sys.chip.arch));
    EXPECT_EQ(hw::runs_deepgemm(sys.chip), c.deepgemm);
    sys.chips = 8;
    for (const EngineKind engine : {EngineKind::vllm, EngineKind::sglang}) {
      model::ForwardConfig f;
      f.tp = 8;
      f.experts = model::ForwardConfig::Experts::expert;
      f = engine_forward(f, engine_preset(EngineRef{engine, 0}, sys.chip, 8));
      EXPECT_EQ(f.scaled_gemm, c.deepgemm ? model::ForwardConfig::ScaledGemm::deepgemm : model::ForwardConfig::ScaledGemm::triton);
      g->clear();
      model::build_forward(m, f, sys, {64, 1, 1024, nullptr}, *g);
      const model::GraphOp* dense = find_op(*g, "o_proj");
      const model::GraphOp* experts = find_op(*g, "experts_down");
      ASSERT_NE(dense, nullptr);
      ASSERT_NE(experts, nullptr);
      EXPECT_EQ(dense->kernel, c.deepgemm ? KernelClass::gemm_scaled_deepgemm : KernelClass::gemm_scaled);
      // (The A100 multiplies no fp8: its experts' weights widened to bf16 take the plain fused MoE's class.)
      const bool fp8 = sys.chip.peak(hw::Unit::matrix, DType::fp8_e4m3) > 0;
      EXPECT_EQ(experts->kernel, c.deepgemm ? KernelClass::gemm_expert_deepgemm
                                 : fp8      ? KernelClass::gemm_expert_scaled
                                            : KernelClass::gemm_expert);
    }
  }
  // A file without `arch` whose vendor is NVIDIA in capitals: DeepGEMM's and TensorRT-LLM's.
  hw::ChipSpec capitals = h200.chip;
  capitals.arch.clear();
  capitals.vendor = "NVIDIA";
  EXPECT_TRUE(hw::runs_deepgemm(capitals));
  EXPECT_TRUE(runs_on(EngineKind::trtllm, capitals));
  // TensorRT-LLM runs on NVIDIA GPUs alone: on others the preset is refused, naming both.
  EXPECT_TRUE(runs_on(EngineKind::trtllm, h200.chip));
  EXPECT_EQ(engine_preset(EngineKind::trtllm, h200.chip, 8).scaled_gemm, model::ForwardConfig::ScaledGemm::deepgemm);
  EXPECT_EQ(engine_preset(EngineKind::trtllm, testing::catalog_system("a100-80gb").chip, 8).scaled_gemm,
            model::ForwardConfig::ScaledGemm::triton);
  const hw::ChipSpec mi300x = testing::catalog_system("mi300x").chip;
  EXPECT_FALSE(runs_on(EngineKind::trtllm, mi300x));
  EXPECT_FALSE(runs_on(EngineRef{EngineKind::trtllm, kTrtllmEnginesVersion}, testing::catalog_system("tpu-v6e").chip));
  EXPECT_TRUE(runs_on(EngineKind::vllm, mi300x));
  EXPECT_TRUE(runs_on(EngineKind::static_batch, mi300x));
  // AITER's kernels on the MI300X from the releases that have its paths: vLLM's 0.9-0.10 preset
  // on (not 0.8's, not V0's), SGLang 0.4+ (not 0.3); never on a CUDA chip.
  EXPECT_TRUE(engine_preset(EngineKind::vllm, mi300x, 8).rocm_aiter);
  EXPECT_TRUE(engine_preset(EngineRef{EngineKind::vllm, 10}, mi300x, 8).rocm_aiter);
  EXPECT_FALSE(engine_preset(EngineRef{EngineKind::vllm, 8}, mi300x, 8).rocm_aiter);
  EXPECT_FALSE(engine_preset(EngineRef{EngineKind::vllm, kVllmV0Version}, mi300x, 8).rocm_aiter);
  EXPECT_TRUE(engine_preset(EngineKind::sglang, mi300x, 8).rocm_aiter);
  EXPECT_FALSE(engine_preset(EngineRef{EngineKind::sglang, kSglang03Version}, mi300x, 8).rocm_aiter);
  EXPECT_FALSE(engine_preset(EngineKind::sglang, h200.chip, 8).rocm_aiter);
  try {
    (void)engine_preset(EngineKind::trtllm, mi300x, 8);
    ADD_FAILURE() << "TensorRT-LLM on the MI300X was not refused";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--engine trtllm: TensorRT-LLM runs on NVIDIA GPUs, and mi300x is an amd gpu; expected --engine "
                                     "vllm or sglang there, or an NVIDIA GPU");
  }
}

// MLA's decode attention over its latent cache is AITER's asm kernel, a class of its own
// (attention_decode_mla), where the preset runs AITER (rocm_aiter: SGLang 0.4+ and vLLM's
// releases but 0.8 on gfx9); under the presets without it (sglang@0.3, vllm@0.8), on a CUDA chip,
// and in infer (no engine) it is the decode attention class; a GQA model's decode kernel is
// never MLA's.
TEST(EngineKernels, MlasDecodeUnderAiterIsItsAsmKernelsClass) {
  const model::ModelConfig ds = io::bundled_model("deepseek-r1"), llama = io::bundled_model("llama-3.1-70b");
  // The first attention op's class in a pass of 4 decode tokens at TP 8 on 8 of `chip`: as
  // `engine`'s preset builds it (build_deepseek_tp8), or with no engine (infer).
  const auto decode_class = [](const model::ModelConfig& m, const char* chip, std::optional<EngineRef> engine) {
    hw::System sys = testing::catalog_system(chip);
    sys.chips = 8;
    auto g = std::make_unique<model::Graph>();
    if (engine) {
      build_deepseek_tp8(m, sys, *engine, *g, 4);
    } else {
      model::ForwardConfig f;
      f.tp = 8;
      model::build_forward(m, f, sys, {4, 1, 1024, nullptr}, *g);
    }
    const model::GraphOp* op = find_op(*g, "attention");
    return op == nullptr ? hw::KernelClass::other : op->kernel;
  };
  EXPECT_EQ(decode_class(ds, "mi300x", EngineRef{EngineKind::sglang, 0}), hw::KernelClass::attention_decode_mla);
  EXPECT_EQ(decode_class(ds, "mi325x", EngineRef{EngineKind::vllm, 0}), hw::KernelClass::attention_decode_mla);
  EXPECT_EQ(decode_class(ds, "mi300x", EngineRef{EngineKind::sglang, kSglang03Version}), hw::KernelClass::attention_decode);
  EXPECT_EQ(decode_class(ds, "mi300x", EngineRef{EngineKind::vllm, 8}), hw::KernelClass::attention_decode);
  EXPECT_EQ(decode_class(ds, "h200", EngineRef{EngineKind::sglang, 0}), hw::KernelClass::attention_decode);
  EXPECT_EQ(decode_class(ds, "mi300x", std::nullopt), hw::KernelClass::attention_decode);
  EXPECT_EQ(decode_class(llama, "mi300x", EngineRef{EngineKind::sglang, 0}), hw::KernelClass::attention_decode);
}


// AITER's persistent MLA decode splits the keys over the CUs, and a reduce after it merges each
// output row's splits (ForwardConfig::mla_persistent, the class attention_combine): SGLang 0.4+
// over an fp8 cache (over a 16-bit one at 16 heads a GPU it runs the non-persistent kernel),
// vLLM's newest at 16 heads or more whatever the cache, none of vllm@0.13, the CUDA chips or
// infer. Priced at the CUs' splits: DeepSeek-R1 at TP 8 (16 heads, a latent of 512) on the
// MI300X's 304 CUs, 4 decode tokens: 304 partials x 16 heads x (512 + 1) x 4 B = 9980928 B
// read, 4 x 16 x 512 x 2 B = 65536 B written; per partial a head 2 x 512 + 2 FLOPs, per output
// value one: 304 x 16 x 1026 + 4 x 16 x 512 = 5023232 fp32 FLOPs.
TEST(EngineKernels, AitersPersistentMlaDecodeMergesItsSplitsInAReduce) {
  const model::ModelConfig ds = io::bundled_model("deepseek-r1");
  // The reduce op of a pass of 4 decode tokens at TP `tp` on `tp` of `chip` (nullptr: none),
  // `engine`'s preset over a `kv` cache, or with no engine (infer).
  const auto reduce = [&ds](const char* chip, std::optional<EngineRef> engine, DType kv, model::Graph& g, int tp = 8) {
    hw::System sys = testing::catalog_system(chip);
    sys.chips = tp;
    model::ForwardConfig f;
    f.tp = tp;
    if (engine) f = engine_forward(f, engine_preset(*engine, sys.chip, tp));
    f.precision.kv_cache = kv;
    g.clear();
    model::build_forward(ds, f, sys, {4, 1, 1024, nullptr}, g);
    return find_op(g, "attention_combine");
  };
  auto g = std::make_unique<model::Graph>();
  const model::GraphOp* op = reduce("mi300x", EngineRef{EngineKind::sglang, 0}, DType::fp8_e4m3, *g);
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->kernel, KernelClass::attention_combine);
  EXPECT_EQ(op->scale, model::Scale::decode_tokens);
  EXPECT_DOUBLE_EQ(op->cost.main_bytes, 9980928.0 + 65536.0);
  EXPECT_DOUBLE_EQ(op->cost.main_store_bytes, 65536.0);
  EXPECT_DOUBLE_EQ(op->cost.vector_flops, 5023232.0);
  // Right after the decode kernel (the absorbed output's GEMM follows it).
  EXPECT_EQ(op_index(*g, "attention_combine"), op_index(*g, "attention") + 1);
  EXPECT_NE(reduce("mi325x", EngineRef{EngineKind::sglang, 0}, DType::fp8_e4m3, *g), nullptr);
  EXPECT_EQ(reduce("mi300x", EngineRef{EngineKind::sglang, 0}, DType::bf16, *g), nullptr);
  // SGLang tests its cache against its fp8 dtype, e4m3: an e5m2 cache at 16 heads runs the
  // non-persistent kernel.
  EXPECT_EQ(reduce("mi300x", EngineRef{EngineKind::sglang, 0}, DType::fp8_e5m2, *g), nullptr);
  EXPECT_NE(reduce("mi300x", EngineRef{EngineKind::vllm, 0}, DType::bf16, *g), nullptr);
  // The vllm preset (0.14+) follows 0.19's persistent decode, 0.15 too.
  EXPECT_NE(reduce("mi300x", parse_engine("vllm@0.15"), DType::bf16, *g), nullptr);
  // At TP 4, 32 heads a GPU over a 16-bit cache: not a count gfx942's kernel runs natively, so
  // folded into two groups of 16 sharing the 304 splits: 304 x 16 x 513 x 4 = 9980928 B read,
  // the rows' 4 x 32 x 512 x 2 = 131072 B written.
  op = reduce("mi300x", EngineRef{EngineKind::vllm, 0}, DType::bf16, *g, 4);
  ASSERT_NE(op, nullptr);
  EXPECT_DOUBLE_EQ(op->cost.main_bytes, 9980928.0 + 131072.0);
  EXPECT_EQ(reduce("mi300x", EngineRef{EngineKind::vllm, 13}, DType::fp8_e4m3, *g), nullptr);
  EXPECT_EQ(reduce("mi300x", EngineRef{EngineKind::sglang, kSglang03Version}, DType::fp8_e4m3, *g), nullptr);
  EXPECT_EQ(reduce("h200", EngineRef{EngineKind::sglang, 0}, DType::fp8_e4m3, *g), nullptr);
  EXPECT_EQ(reduce("mi300x", std::nullopt, DType::fp8_e4m3, *g), nullptr);
}

TEST(EngineKernels, AitersOneStageMoeReadsEachExpertOncePerRowTile) {
  // DeepSeek-R1 at TP 8 on MI325Xs: AITER has no tuned row of its experts split by width, and
  // its default past 32 tokens is the one-stage kernel of 32-row tiles (ForwardConfig::
  // expert_reread_tile): one op, `experts`, of class gemm_expert_onestage. 64 decode tokens under
  // SGLang's preset (the shared expert fused in, 9 a token: 576 pairs). Each chip's slice of an
  // expert: gate-up 7168 x 512 and down 256 x 7168 in fp8 with a 4-byte scale a 128 x 128 block,
  // 3670912 + 1835456 = 5506368 B. An expert's rows x ~ Bin(64, 1/32) pass 32 with probability
  // under 1e-30: each touched routed expert read once, 256 (1 − (31/32)^64) = 222.44249 of them,
  // and the fixed one ⌈64/32⌉ = 2 times: 224.44249 reads, 1235862932.03 B. Besides, the pairs'
  // rows read, 576 x 7168 x 2 = 8257536 B, and the tokens' rows written once, 64 x 7168 x 2 =
  // 917504 B (the activated rows stay on chip): 1245037972.03 B. FLOPs 2 x 576 x 7168 x 512 + 2 x
  // 576 x 256 x 7168 = 6341787648; weights held 257 x 5506368 = 1415136576 B.
  const model::ModelConfig ds = io::bundled_model("deepseek-r1");
  const auto graph = [&ds](const char* chip, EngineRef engine, model::ForwardConfig::Experts experts, model::Graph& g) {
    hw::System sys = testing::catalog_system(chip);
    sys.chips = 8;
    model::ForwardConfig f;
    f.tp = 8;
    f.experts = experts;
    f = engine_forward(f, engine_preset(engine, sys.chip, 8, ds));
    g.clear();
    model::build_forward(ds, f, sys, {64, 1, 1024, nullptr}, g);
  };
  using Experts = model::ForwardConfig::Experts;
  auto g = std::make_unique<model::Graph>();
  graph("mi325x", EngineRef{EngineKind::sglang, 0}, Experts::tensor, *g);
  ASSERT_FALSE(g->overflow);
  const model::GraphOp* op = find_op(*g, "experts");
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->kernel, KernelClass::gemm_expert_onestage);
  EXPECT_EQ(find_op(*g, "experts_gate_up"), nullptr);
  EXPECT_EQ(find_op(*g, "experts_down"), nullptr);
  EXPECT_DOUBLE_EQ(op->expert_bytes, 5506368.0);
  EXPECT_NEAR(op->touched, 224.4424876855104, 1e-9);
  EXPECT_DOUBLE_EQ(op->touched_fixed, 0);
  EXPECT_DOUBLE_EQ(op->reread_tile, 32);
  EXPECT_TRUE(op->reread_fixed);
  EXPECT_NEAR(op->cost.main_bytes, 1245037972.0318885, 1e-3);
  EXPECT_DOUBLE_EQ(op->cost.matrix_flops, 6341787648.0);
  EXPECT_DOUBLE_EQ(op->weight_bytes, 1415136576.0);
  EXPECT_DOUBLE_EQ(op->cost.launches, 1);
  // vLLM's preset keeps the shared expert apart: 512 pairs, 222.44249 reads, 7340032 B of rows in.
  graph("mi325x", EngineRef{EngineKind::vllm, 0}, Experts::tensor, *g);
  op = find_op(*g, "experts");
  ASSERT_NE(op, nullptr);
  EXPECT_NEAR(op->touched, 222.4424876855104, 1e-9);
  EXPECT_FALSE(op->reread_fixed);
  EXPECT_NEAR(op->cost.main_bytes, 1224850196.0318885 + 7340032.0 + 917504.0, 1e-3);
  // Whole experts on each chip (expert parallelism inside the group: AITER's tuned two-stage
  // kernels of DeepSeek's EP-8 shape), the H200 (no AITER) and SGLang 0.3 (no AITER switch):
  // the two GEMMs of their classes.
  graph("mi325x", EngineRef{EngineKind::sglang, 0}, Experts::expert, *g);
  EXPECT_EQ(find_op(*g, "experts"), nullptr);
  ASSERT_NE(find_op(*g, "experts_gate_up"), nullptr);
  EXPECT_EQ(find_op(*g, "experts_gate_up")->kernel, KernelClass::gemm_expert_scaled);
  graph("h200", EngineRef{EngineKind::sglang, 0}, Experts::tensor, *g);
  EXPECT_EQ(find_op(*g, "experts"), nullptr);
  EXPECT_NE(find_op(*g, "experts_down"), nullptr);
  graph("mi325x", EngineRef{EngineKind::sglang, kSglang03Version}, Experts::tensor, *g);
  EXPECT_EQ(find_op(*g, "experts"), nullptr);
  // The rule is gfx942's: on gfx950 AITER's switch is on but its tables and rules differ.
  const hw::ChipSpec mi = testing::catalog_system("mi325x").chip;
  EXPECT_EQ(engine_preset(EngineRef{EngineKind::sglang, 0}, mi, 8, ds).aiter_moe_tile, 32);
  hw::ChipSpec gfx950 = mi;
  gfx950.arch = "gfx950";
  const EngineConfig e950 = engine_preset(EngineRef{EngineKind::sglang, 0}, gfx950, 8, ds);
  EXPECT_TRUE(e950.rocm_aiter);
  EXPECT_EQ(e950.aiter_moe_tile, 0);
}

TEST(EngineKernels, AitersFusedMoeCarriesTheActivationAndTheWeightedSumInItsTwoGemms) {
  // On the MI300X the presets run AITER's CK two-stage MoE (rocm_aiter, moe_fused_epilogues):
  // Qwen3-235B-A22B at TP 8, 64 decode tokens, top 8 of 128 experts of width 1536 / 8 = 192,
  // hidden 4096, bf16: 512 pairs. Stage 1 stores the activated 512 x 192 halves only, 512 x 192
  // x 2 = 196608 B fewer, and takes SiLU-and-mul's 6 x 512 x 192 = 589824 fp32 FLOPs; stage 2
  // adds each pair into its token's row, storing the 64 rows instead of the 512 pairs': (512 -
  // 64) x 4096 x 2 = 3670016 B fewer, with a multiply and an add an element, 2 x 512 x 4096 =
  // 4194304 FLOPs. No experts_act or moe_combine kernel is left.
  const model::ModelConfig m = io::bundled_model("qwen3-235b-a22b");
  hw::System sys = testing::catalog_system("mi300x");
  sys.chips = 8;
  model::ForwardConfig f;
  f.tp = 8;
  f = engine_forward(f, engine_preset(EngineKind::vllm, sys.chip, 8));
  ASSERT_TRUE(f.moe_fused_epilogues);
  auto fused = std::make_unique<model::Graph>(), apart = std::make_unique<model::Graph>();
  model::build_forward(m, f, sys, {64, 1, 1024, nullptr}, *fused);
  f.moe_fused_epilogues = false;
  model::build_forward(m, f, sys, {64, 1, 1024, nullptr}, *apart);
  EXPECT_EQ(find_op(*fused, "experts_act"), nullptr);
  EXPECT_EQ(find_op(*fused, "moe_combine"), nullptr);
  ASSERT_NE(find_op(*apart, "experts_act"), nullptr);
  ASSERT_NE(find_op(*apart, "moe_combine"), nullptr);
  struct Case {
    const char* op;
    double stores_saved, flops;
  };
  for (const Case& c : {Case{"experts_gate_up", 196608, 589824}, Case{"experts_down", 3670016, 4194304}}) {
    SCOPED_TRACE(c.op);
    const model::GraphOp* a = find_op(*fused, c.op);
    const model::GraphOp* b = find_op(*apart, c.op);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_DOUBLE_EQ(b->cost.main_store_bytes - a->cost.main_store_bytes, c.stores_saved);
    EXPECT_DOUBLE_EQ(b->cost.main_bytes - a->cost.main_bytes, c.stores_saved);
    EXPECT_EQ(a->cost.vector_dtype, DType::fp32);
    EXPECT_DOUBLE_EQ(a->cost.vector_flops - b->cost.vector_flops, c.flops);
    EXPECT_DOUBLE_EQ(a->cost.matrix_flops, b->cost.matrix_flops);
  }
  // Behind expert-parallel groups (--ep 2 at TP 4, the ranks' tokens gathered: vLLM's default)
  // the sum stays a kernel of its own; the activation is still stage 1's.
  model::ForwardConfig e;
  e.tp = 4;
  e.ep = 2;
  e = engine_forward(e, engine_preset(EngineKind::vllm, sys.chip, 4));
  auto ranks = std::make_unique<model::Graph>();
  model::build_forward(m, e, sys, {64, 1, 1024, nullptr}, *ranks);
  EXPECT_EQ(find_op(*ranks, "experts_act"), nullptr);
  EXPECT_NE(find_op(*ranks, "moe_combine"), nullptr);
  // On the H200 (CUDA) the presets keep both kernels.
  hw::System h200 = testing::catalog_system("h200");
  h200.chips = 8;
  model::ForwardConfig g;
  g.tp = 8;
  EXPECT_FALSE(engine_forward(g, engine_preset(EngineKind::vllm, h200.chip, 8)).moe_fused_epilogues);
}

TEST(EngineKernels, BlockFp8ExpertsInTritonsFusedMoeTakeTheBlockScaledLoopsMatrixRate) {
  // DeepSeek-V3's experts' gate-up GEMM at 4096 tokens, TP 8 on H200s (each expert split to 512
  // of its 2 x 2048 columns). Pairs 4096 x 8 = 32768; FLOPs 2 x 32768 x 7168 x 512 =
  // 240 518 168 576 in fp8: 121.541 us at 1978.9 TFLOP/s. Bytes: the bf16 rows 32768 x 7168 x 2
  // = 469 762 048 (the fused MoE gathers them itself), every expert touched (256 (1 -
  // (248/256)^4096) = 256 to double precision), each 7168 x 512 = 3 670 016 fp8 weights and a
  // 32-bit scale per 128 x 128 block (1/512 bit a weight, 896 B an expert): 256 x 3 670 912 =
  // 939 753 472, the bf16 out 32768 x 512 x 2 = 33 554 432: 1 443 069 952 B at 4.8 TB/s =
  // 300.639573 us. vLLM 0.8-0.10 runs it in Triton's fused_moe_kernel, whose K loop scales each
  // 128-wide block's product (accumulator += dot(a, b) * a_scale * b_scale): the class
  // gemm_expert_scaled, the H200's fit of that kernel's curves (vLLM PRs #36559 and #36554,
  // SGLang PR #29652: 13.31 us, matrix 0.1858, memory 0.9256, each tile 166 columns of K more
  // on its loads, hw::fill_reads). The fill's reads, 256 x 512 x 166 x (1 + 1/512/8) =
  // 21 763 264 B, are main-memory time beyond the bytes (Cost::main_pad_bytes: in the realistic
  // time, not the bytes counted nor the lower bound; 1 464 833 216 B in all: 329.703529 us at
  // 0.9256), under the FLOPs' 121.541 / 0.1858 = 654.151483 us: 13.31 + 654.151483 =
  // 667.461483 us.
  const model::ModelConfig m = io::bundled_model("deepseek-v3");
  hw::System sys = testing::catalog_system("h200");
  sys.chips = 8;
  const double flops = 2.0 * 32768 * 7168 * 512, matrix_s = flops / 1978.9e12;
  EXPECT_NEAR(matrix_s, 121.541e-6, 1e-9);
  auto g = std::make_unique<model::Graph>();
  model::ForwardConfig f;
  f.tp = 8;
  f = engine_forward(f, engine_preset(EngineRef{EngineKind::vllm, 10}, sys.chip, 8));
  model::build_forward(m, f, sys, {4096, 1, 1, nullptr}, *g);
  const model::GraphOp* op = find_op(*g, "experts_gate_up");
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->kernel, hw::KernelClass::gemm_expert_scaled);
  EXPECT_EQ(find_op(*g, "experts_quant"), nullptr);  // inside the fused MoE
  const ops::Estimate e = ops::estimate(op->cost.expand(), sys.chip, op->kernel);
  EXPECT_NEAR(e.main_bytes, 1443069952, 1);
  EXPECT_NEAR(op->cost.main_pad_bytes, 21763264, 1);
  EXPECT_NEAR(e.t_lower_s, 1443069952 / 4.8e12, 1e-12);
  const double want = 13.31e-6 + flops / (0.1858 * 1978.9e12);
  EXPECT_NEAR(want, 667.461483e-6, 1e-12);
  EXPECT_NEAR(e.t_realistic_s, want, want * 1e-5);
}

TEST(EngineKernels, BlockFp8ExpertsInDeepGemmsGroupedKernelsReadFp8RowsQuantisedBefore) {
  // The same gate-up GEMM under TensorRT-LLM, which runs it in its port of DeepGEMM's grouped
  // kernel (fp8_blockscale_gemm, GroupedWithOffset) after copying each token's row once per
  // routed expert (expandInputRowsKernel: 32768 rows of 7168 bf16 read and written, 2 x
  // 469 762 048 = 939 524 096 B) and quantising the expanded rows in 1x128 groups
  // (scale_1x128). The quantisation: read 32768 x 7168 x 2 = 469 762 048 B of bf16, write
  // 234 881 024 of fp8 and 32768 x 56 fp32 scales = 7 340 032: 711 983 104 B. The GEMM: the
  // fp8 rows 234 881 024, the weights and scales 939 753 472, the bf16 out 33 554 432:
  // 1 208 188 928 B at 4.8 TB/s = 251.706027 us; its FLOPs 121.541345 us at 1978.9 TFLOP/s,
  // and its tiles' fill (281 columns of K each) 2 x 32768 x 512 x 281 = 9 428 795 392 FLOPs
  // more, 4.764665 us. Each expert's rows run in whole tiles of 128 (model::kDeepGemmRowTile):
  // an expert's rows are Bin(4096, 8/256), mean 128, so it runs one tile, or two when it has
  // more than 128 rows (P = 0.476513, the binomial's tail summed below; three need more than
  // 256, P = 1e-24): 1.476513 rows computed a routed row, and 0.476513 x 32768 padded rows of
  // 2 x 512 x (7168 + 281) FLOPs, 119 102 875 482, 60.186 us more. gemm_expert_deepgemm on the
  // H200 (the H100's fit of DeepGEMM's grouped GEMMs, memory x 0.94: 5.485 us, matrix 0.7041,
  // memory 0.7901, overlap 0.71): 5.485 + max(186.492 / 0.7041 = 264.866, 251.706027 / 0.7901 =
  // 318.574898, 0.71 x 583.441 = 414.243) = 419.728 us; without the row tiles (as before them)
  // 5.485 + max(179.386466, 318.574898, 0.71 x 497.961364 = 353.552568) = 359.037568 us.
  const model::ModelConfig m = io::bundled_model("deepseek-v3");
  hw::System sys = testing::catalog_system("h200");
  sys.chips = 8;
  auto g = std::make_unique<model::Graph>();
  model::ForwardConfig f;
  f.tp = 8;
  f = engine_forward(f, engine_preset(EngineRef{EngineKind::trtllm, 0}, sys.chip, 8));
  model::build_forward(m, f, sys, {4096, 1, 1, nullptr}, *g);
  const int at = op_index(*g, "experts_gate_up");
  ASSERT_GT(at, 1);
  const model::GraphOp& permute = g->ops[at - 2];
  ASSERT_STREQ(permute.name, "experts_permute");
  EXPECT_EQ(permute.kernel, KernelClass::pointwise);
  EXPECT_NEAR(ops::estimate(permute.cost.expand(), sys.chip, permute.kernel).main_bytes, 939524096, 1);
  const model::GraphOp& q = g->ops[at - 1];
  ASSERT_STREQ(q.name, "experts_quant");
  EXPECT_EQ(q.kernel, KernelClass::quant);
  EXPECT_NEAR(ops::estimate(q.cost.expand(), sys.chip, q.kernel).main_bytes, 711983104, 1);
  const model::GraphOp& op = g->ops[at];
  EXPECT_EQ(op.kernel, KernelClass::gemm_expert_deepgemm);
  const ops::Estimate e = ops::estimate(op.cost.expand(), sys.chip, op.kernel);
  EXPECT_NEAR(e.main_bytes, 1208188928, 1);
  // P(m > 128) for m ~ Bin(4096, 1/32), its terms from their log-gammas.
  double tail = 0;
  for (int x = 129; x <= 4096; ++x) {
    tail += std::exp(std::lgamma(4097.0) - std::lgamma(x + 1.0) - std::lgamma(4097.0 - x) + x * std::log(1 / 32.0) +
                     (4096 - x) * std::log(31 / 32.0));
  }
  EXPECT_NEAR(tail, 0.476513, 1e-6);
  EXPECT_NEAR(op.row_tile_pad, 2.0 * 512 * (7168 + 281) * 32768 * tail, 1);
  EXPECT_NEAR(e.t_realistic_s, 5.485e-6 + 0.71 * ((121.541345e-6 + 4.764665e-6 + 2.0 * 512 * 7449 * 32768 * tail / 1978.9e12) / 0.7041 +
                                                  251.706027e-6 / 0.7901),
              1e-10);
  EXPECT_NEAR(e.t_realistic_s, 419.728e-6, 1e-9);
  // The down GEMM's K is each expert's 2048 columns over 8 chips, 256: the tiles' fill more
  // than doubles its matrix work, 2 x 32768 x 7168 x 256 = 120 259 084 288 FLOPs and 2 x 32768
  // x 7168 x 281 = 132 003 135 488 more; its padded rows 0.476513 x 32768 of 2 x 7168 x (256 +
  // 281) FLOPs, 120 206 124 027 more.
  const model::GraphOp* down = find_op(*g, "experts_down");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->kernel, KernelClass::gemm_expert_deepgemm);
  EXPECT_NEAR(down->cost.matrix_flops, 120259084288.0, 1);
  EXPECT_NEAR(down->cost.matrix_pad_flops, 132003135488.0 + 2.0 * 7168 * 537 * 32768 * tail, 1);
  EXPECT_NEAR(down->cost.matrix_pad_flops - 132003135488.0, 120206124027.0, 1);
}

TEST(EngineKernels, EachEnginesRuleForDeepGemmsRowTilesFollowsItsCode) {
  // docs/cost-model.md#row-tiles: vLLM calls DeepGEMM's MoE from 128 tokens a step; TensorRT-LLM's
  // port swaps below 32 tokens on a GPU of 132 SMs (64 on the H20's 78) and takes 64-row tiles up
  // to 64 tokens; its TensorRT engine flow has no DeepGEMM and SGLang's runner the contiguous
  // layout's rule (none). engine_forward hands the rule to the graph.
  const hw::ChipSpec h100 = testing::catalog_system("h100-sxm").chip;
  hw::ChipSpec h20 = h100;
  h20.sms = 78;
  const auto rule = [](const EngineConfig& e) { return engine_forward(model::ForwardConfig{}, e).expert_tiles; };
  const model::ForwardConfig::ExpertTiles vllm = rule(engine_preset(EngineRef{EngineKind::vllm, 0}, h100, 8));
  EXPECT_EQ(vllm.from_tokens, 128);
  EXPECT_EQ(vllm.swap_below, 0);
  EXPECT_EQ(vllm.small_upto, 0);
  const model::ForwardConfig::ExpertTiles port = rule(engine_preset(EngineRef{EngineKind::trtllm, 0}, h100, 8));
  EXPECT_EQ(port.from_tokens, 0);
  EXPECT_EQ(port.swap_below, 32);
  EXPECT_EQ(port.small_upto, 64);
  EXPECT_EQ(rule(engine_preset(EngineRef{EngineKind::trtllm, 0}, h20, 8)).swap_below, 64);
  for (const EngineRef none : {EngineRef{EngineKind::trtllm, 15}, EngineRef{EngineKind::sglang, 0}}) {
    const model::ForwardConfig::ExpertTiles t = rule(engine_preset(none, h100, 8));
    EXPECT_EQ(t.from_tokens + t.swap_below + t.small_upto, 0) << name(none);
  }
}

TEST(EngineKernels, DeepSeeksGroupedRouterRunsInTheKernelsOfEachEnginesRelease) {
  // After the router's GEMM, DeepSeek-V3's group-limited router (n_group 8, topk_group 4,
  // sigmoid with a correction bias) as each release runs it (docs/serving.md#routing-kernels).
  // Each op reads and writes the 4 tokens' 256 bf16 scores: 2 x 4 x 256 x 2 = 4096 B, at the
  // pointwise kernels' memory fraction on the H200 (0.7068 of 4.8 TB/s): 1.207319 ns. The
  // routing kernel: 7.084 us + 1.207319 ns = 7.085207 us; the compiled torch ops: 37.3 us +
  // 1.207319 ns = 37.301207 us; a pointwise kernel 1.222 us + 1.207319 ns = 1.223207 us.
  const model::ModelConfig m = io::bundled_model("deepseek-v3");
  hw::System sys = testing::catalog_system("h200");
  sys.chips = 8;
  struct Step {
    const char* name;
    KernelClass kernel;
    double seconds;
  };
  const Step fused{"router_topk", KernelClass::routing, 7.085207e-6};
  const Step compiled{"router_topk", KernelClass::routing_compiled, 37.301207e-6};
  const Step top2{"router_group_top2", KernelClass::pointwise, 1.223207e-6};
  const Step scores{"router_scores", KernelClass::pointwise, 1.223207e-6};
  const Step generic{"router_topk", KernelClass::pointwise, 1.223207e-6};
  struct Case {
    EngineRef engine;
    std::vector<Step> steps;
  };
  const Case cases[] = {
      {EngineRef{EngineKind::sglang, 0}, {fused}},
      {EngineRef{EngineKind::sglang, 3}, {compiled}},
      {EngineRef{EngineKind::vllm, 0}, {fused}},
      {EngineRef{EngineKind::vllm, 13}, {top2, fused}},
      {EngineRef{EngineKind::vllm, 10}, {compiled}},
      {EngineRef{EngineKind::vllm, 8}, {compiled}},
      {EngineRef{EngineKind::vllm, 6}, {compiled}},
      {EngineRef{EngineKind::trtllm, 0}, {scores, top2, fused}},
      {EngineRef{EngineKind::static_batch, 0}, {generic}},
  };
  const ops::Rates rates(sys.chip);
  auto g = std::make_unique<model::Graph>();
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(name(c.engine)));
    build_deepseek_tp8(m, sys, c.engine, *g, 4);
    const int router = op_index(*g, "router");
    ASSERT_GE(router, 0);
    for (std::size_t i = 0; i < c.steps.size(); ++i) {
      const model::GraphOp& op = g->ops[router + 1 + static_cast<int>(i)];
      EXPECT_STREQ(op.name, c.steps[i].name);
      EXPECT_EQ(op.kernel, c.steps[i].kernel);
      // Inside a graph: no host launch.
      ops::TimeParts t = ops::time_parts(op.cost.expand(), rates);
      t.launch = 0;
      EXPECT_NEAR(t.realistic(rates, op.kernel), c.steps[i].seconds, 1e-12);
    }
    // Then the experts' kernels (TensorRT-LLM's row copy and quantisation first).
    EXPECT_NE(std::string_view(g->ops[router + 1 + static_cast<int>(c.steps.size())].name).substr(0, 6), "router");
  }
  // A router without groups keeps the one top-k kernel in every engine: Mixtral's softmax top 2,
  // and gpt-oss's, which has a bias but no groups.
  for (const char* name : {"mixtral-8x7b", "gpt-oss-120b"}) {
    SCOPED_TRACE(name);
    for (const EngineRef engine : {EngineRef{EngineKind::sglang, 0}, EngineRef{EngineKind::vllm, 8}, EngineRef{EngineKind::trtllm, 0}}) {
      model::ForwardConfig f;
      f.tp = 2;
      f = engine_forward(f, engine_preset(engine, sys.chip, 2));
      g->clear();
      model::build_forward(io::bundled_model(name), f, sys, {4, 1, 1024, nullptr}, *g);
      const int router = op_index(*g, "router");
      ASSERT_GE(router, 0);
      EXPECT_STREQ(g->ops[router + 1].name, "router_topk");
      EXPECT_EQ(g->ops[router + 1].kernel, KernelClass::pointwise);
      EXPECT_EQ(find_op(*g, "router_group_top2"), nullptr);
    }
  }
}

TEST(EngineKernels, SglangMasksItsPaddingRowsOnItsDeepEpPathAlone) {
  // SGLang's forward_deepep passes num_token_non_padded to its top-k, which masks the padding's
  // ids (PR #6175): under DeepEP with experts spread over chips (the TP group's whole experts, or
  // the ranks'), for the models whose code does so (DeepSeek's, Qwen's MoE; not Mixtral's or
  // gpt-oss's). Its other MoE path, SGLang 0.3 (before it), vLLM and TensorRT-LLM route their padding.
  const hw::ChipSpec chip = testing::catalog_system("h200").chip;
  const model::ModelConfig deepseek = io::bundled_model("deepseek-v3"), qwen = io::bundled_model("qwen3-30b-a3b"),
                           mixtral = io::bundled_model("mixtral-8x7b"), gpt_oss = io::bundled_model("gpt-oss-120b");
  using X = model::ForwardConfig::Experts;
  using A2A = model::ForwardConfig::MoeA2A;
  auto masks = [&](EngineRef engine, const model::ModelConfig& m, std::int64_t tp, std::int64_t ep, X experts, A2A a2a = A2A::deepep) {
    EngineConfig e = engine_preset(engine, chip, tp, m);
    e.moe_a2a = a2a;
    model::ForwardConfig f;
    f.tp = tp;
    f.ep = ep;
    f.experts = experts;
    return engine_forward(f, e).graph_pad_masked;
  };
  EXPECT_TRUE(masks(EngineKind::sglang, deepseek, 8, 1, X::expert));
  EXPECT_TRUE(masks(EngineKind::sglang, deepseek, 1, 8, X::tensor));
  EXPECT_TRUE(masks(EngineKind::sglang, qwen, 1, 8, X::tensor));
  EXPECT_FALSE(masks(EngineKind::sglang, deepseek, 1, 8, X::tensor, A2A::pairs));
  EXPECT_FALSE(masks(EngineKind::sglang, deepseek, 8, 1, X::tensor));
  EXPECT_FALSE(masks(EngineKind::sglang, mixtral, 1, 8, X::tensor));
  EXPECT_FALSE(masks(EngineKind::sglang, gpt_oss, 1, 8, X::tensor));
  EXPECT_FALSE(masks(EngineRef{EngineKind::sglang, kSglang03Version}, deepseek, 8, 1, X::expert));
  EXPECT_FALSE(masks(EngineKind::vllm, deepseek, 1, 8, X::tensor));
  EXPECT_FALSE(masks(EngineKind::trtllm, deepseek, 1, 8, X::tensor));
}

TEST(EngineKernels, SglangRunsDeepSeeksSharedExpertAsOneMoreExpertOfItsFusedMoe) {
  // SGLang 0.4+ loads DeepSeek-V3's shared expert as expert 256 of the routed experts' fused MoE
  // (E = 257, top 9) on CUDA of compute capability 8.0+ (DeepseekV2ForCausalLM.
  // determine_num_fused_shared_experts): not SGLang 0.3, vLLM or TensorRT-LLM, not a model without
  // one shared expert of 256 routed, not a T4 (7.5: no bf16 matrix units), not a B200 (SM100,
  // where SGLang's FlashInfer TRTLLM MoE runner turns the fusion off).
  const hw::ChipSpec h200 = testing::catalog_system("h200").chip, t4 = testing::catalog_system("t4").chip;
  EXPECT_TRUE(engine_preset(EngineKind::sglang, testing::catalog_system("a100-80gb").chip, 8, io::bundled_model("deepseek-v3"))
                  .fuse_shared_experts);
  EXPECT_FALSE(engine_preset(EngineKind::sglang, testing::catalog_system("b200").chip, 8, io::bundled_model("deepseek-v3"))
                   .fuse_shared_experts);
  const model::ModelConfig m = io::bundled_model("deepseek-v3");
  EXPECT_TRUE(engine_preset(EngineKind::sglang, h200, 8, m).fuse_shared_experts);
  EXPECT_TRUE(engine_preset(EngineKind::sglang, h200, 8, io::bundled_model("deepseek-r1")).fuse_shared_experts);
  EXPECT_FALSE(engine_preset(EngineKind::sglang, t4, 8, m).fuse_shared_experts);
  EXPECT_FALSE(engine_preset(EngineRef{EngineKind::sglang, kSglang03Version}, h200, 8, m).fuse_shared_experts);
  EXPECT_FALSE(engine_preset(EngineKind::vllm, h200, 8, m).fuse_shared_experts);
  EXPECT_FALSE(engine_preset(EngineKind::trtllm, h200, 8, m).fuse_shared_experts);
  EXPECT_FALSE(engine_preset(EngineKind::sglang, h200, 8, io::bundled_model("qwen3-30b-a3b")).fuse_shared_experts);
  // On ROCm from torch's capability 9.4 (the MI300s' gfx942), not the MI250's gfx90a (9.0).
  hw::ChipSpec mi = testing::catalog_system("mi300x").chip;
  EXPECT_TRUE(engine_preset(EngineKind::sglang, mi, 8, m).fuse_shared_experts);
  mi.arch = "gfx90a";
  EXPECT_FALSE(engine_preset(EngineKind::sglang, mi, 8, m).fuse_shared_experts);
  // Its graph at TP 8 on H200s, 64 decode tokens: the fused MoE's pairs 64 x (8 + 1) = 576 where
  // the routed alone are 512; each chip holds 257 experts' slices of 7168 x 2 x 256 fp8 weights
  // and a 4-byte scale per 128 x 128 block (3670016 B and 224 x 4 B = 3670912 B each): 257 x
  // 3670912 = 943424384 B against 256 x 3670912 = 939753472; the shared expert touched beside the
  // routed ones; the parameters 257 x 7168 x 4096 = 7545552896, 9 x 29360128 = 264241152 active.
  // The combine reads 9 outputs of 7168 bf16 values a token, not 8, and writes one: 64 x 7168 x 10
  // x 2 = 9175040 B against 8257536. No shared GEMMs of their own, no add, the same parameters.
  hw::System sys = testing::catalog_system("h200");
  sys.chips = 8;
  auto graph = [&](bool fuse, model::ForwardConfig::Experts experts = model::ForwardConfig::Experts::tensor) {
    EngineConfig e = engine_preset(EngineKind::sglang, sys.chip, 8, m);
    e.fuse_shared_experts = fuse;
    model::ForwardConfig f;
    f.tp = 8;
    f.experts = experts;
    f = engine_forward(f, e);
    auto g = std::make_unique<model::Graph>();
    model::build_forward(m, f, sys, {64, 1, 1024, nullptr}, *g);
    return g;
  };
  const auto fused = graph(true), apart = graph(false);
  ASSERT_FALSE(fused->overflow || apart->overflow);
  const model::GraphOp* up = find_op(*fused, "experts_gate_up");
  const model::GraphOp* up0 = find_op(*apart, "experts_gate_up");
  ASSERT_NE(up, nullptr);
  ASSERT_NE(up0, nullptr);
  EXPECT_DOUBLE_EQ(up->gemm_m, 576);
  EXPECT_DOUBLE_EQ(up0->gemm_m, 512);
  EXPECT_DOUBLE_EQ(up->cost.matrix_flops, 2.0 * 576 * 7168 * 512);
  EXPECT_DOUBLE_EQ(up->weight_bytes, 943424384.0);
  EXPECT_DOUBLE_EQ(up0->weight_bytes, 939753472.0);
  EXPECT_DOUBLE_EQ(up->touched, up0->touched + 1);
  EXPECT_DOUBLE_EQ(up->params, 7545552896.0);
  EXPECT_DOUBLE_EQ(up->active_params, 264241152.0);
  EXPECT_DOUBLE_EQ(find_op(*fused, "experts_down")->gemm_m, 576);
  EXPECT_DOUBLE_EQ(find_op(*fused, "moe_combine")->cost.main_bytes, 9175040.0);
  EXPECT_DOUBLE_EQ(find_op(*apart, "moe_combine")->cost.main_bytes, 8257536.0);
  for (const char* n : {"shared_act", "shared_down", "shared_add"}) {
    EXPECT_EQ(find_op(*fused, n), nullptr) << n;
    EXPECT_NE(find_op(*apart, n), nullptr) << n;
  }
  const auto params = [](const model::Graph& g) {
    double p = 0, active = 0;
    for (int i = 0; i < g.op_count; ++i) {
      p += g.ops[i].params * g.repeat(i);
      active += g.ops[i].active_params * g.repeat(i);
    }
    return std::pair{p, active};
  };
  EXPECT_DOUBLE_EQ(params(*fused).first, params(*apart).first);
  EXPECT_DOUBLE_EQ(params(*fused).second, params(*apart).second);
  // Whole experts on each chip (SGLang's --ep-size): the fusion is off, the shared expert its own.
  EXPECT_NE(find_op(*graph(true, model::ForwardConfig::Experts::expert), "shared_down"), nullptr);
}

TEST(EngineKernels, EachPresetPadsItsAttentionDataParallelRanksAsItsCodeDoes) {
  // docs/serving.md#rank-padding: vLLM 0.8 nothing (its ranks run eagerly), 0.9.1-0.16 every
  // step while graphs are configured, 0.17+ graph steps alone; SGLang graph steps and balanced
  // eager decode steps (MAX_LEN), its graphs off too; SGLang 0.3 nothing (no attention data
  // parallelism); TensorRT-LLM graph steps with its padding on, nothing with it off (its default).
  const hw::ChipSpec chip = testing::catalog_system("h200").chip;
  using RankPad = model::ForwardConfig::RankPad;
  auto pad = [&](EngineRef r, bool graphs = true, bool trtllm_padding = false) {
    EngineConfig e = engine_preset(r, chip, 1);
    if (!graphs) e.decode_graphs = e.mixed_graphs = GraphMode::eager;
    if (trtllm_padding) e.graph_exact_sizes = false;
    return rank_padding(e);
  };
  EXPECT_EQ(pad({EngineKind::vllm, 8}), RankPad::none);
  EXPECT_EQ(pad({EngineKind::vllm, 13}), RankPad::always);
  EXPECT_EQ(pad({EngineKind::vllm, 13}, false), RankPad::none);
  EXPECT_EQ(pad(EngineKind::vllm), RankPad::graphs);
  EXPECT_EQ(pad(EngineKind::sglang), RankPad::max_len);
  EXPECT_EQ(pad(EngineKind::sglang, false), RankPad::max_len);
  EXPECT_EQ(pad({EngineKind::sglang, kSglang03Version}), RankPad::none);
  EXPECT_EQ(pad(EngineKind::trtllm), RankPad::none);
  EXPECT_EQ(pad(EngineKind::trtllm, true, true), RankPad::graphs);
}

TEST(EngineKernels, DeepEpsDispatchDeliversTheExpertsRowsInFp8) {
  // DeepSeek-V3 at EP 8 on H200s (tp 1, routing balanced), DeepGEMM's kernels and DeepEP's:
  // the dispatch sends each pair's row in fp8 with its scales, so no kernel quantises the
  // gate-up GEMM's rows; the down GEMM's (the activation's bf16 output) are quantised before it.
  // 64 decode tokens, attention data-parallel over the 8: 8 a GPU, 8 x 8 = 64 pairs, each expert
  // whole (2048 wide). The down GEMM's quantisation reads 64 x 2048 x 2 = 262 144 B, writes
  // 131 072 of fp8 and 64 x 16 fp32 scales = 4096: 397 312 B.
  const model::ModelConfig m = io::bundled_model("deepseek-v3");
  hw::System sys = testing::catalog_system("h200");
  sys.chips = 8;
  model::ForwardConfig f;
  f.ep = 8;
  f.scaled_gemm = model::ForwardConfig::ScaledGemm::deepgemm;
  f.moe_a2a = model::ForwardConfig::MoeA2A::deepep;
  auto g = std::make_unique<model::Graph>();
  model::build_forward(m, f, sys, {64, 1, 1024, nullptr}, *g);
  ASSERT_FALSE(g->overflow);
  std::string order;
  for (int i = 0; i < g->op_count; ++i) {
    const std::string_view n = g->ops[i].name;
    if (n == "ep_dispatch" || n == "experts_quant" || n == "experts_gate_up" || n == "experts_act" || n == "experts_down") {
      order += std::string(n) + " ";
    }
    if (n == "experts_down") break;
  }
  EXPECT_EQ(order, "ep_dispatch experts_gate_up experts_act experts_quant experts_down ");
  EXPECT_EQ(find_op(*g, "experts_permute"), nullptr);  // the dispatch lays the rows out
  const model::GraphOp* q = find_op(*g, "experts_quant");
  ASSERT_NE(q, nullptr);
  EXPECT_NEAR(ops::estimate(q->cost.expand(), sys.chip, q->kernel).main_bytes, 397312, 1);
  const model::GraphOp* up = find_op(*g, "experts_gate_up");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->kernel, KernelClass::gemm_expert_deepgemm);
}

TEST(EngineKernels, ABlockFp8GemmCostsTheCurveOfTheKernelItsEngineCalls) {
  // DeepSeek-V3's q_a_proj at 64 decode tokens on an H200 (TP 8 leaves it whole: 7168 -> 1536;
  // apart from kv_a_proj here, where both engines run the two as one GEMM, whose 2112 columns
  // fill their tiles unevenly):
  // bytes: fp8 activations (quantised by the act_quant kernel before it) 64·7168 = 458 752, fp8
  // weights 7168·1536 = 11 010 048, their fp32 scale per 128 x 128 block 11 010 048·32/16384/8 =
  // 2688, bf16 out 64·1536·2 = 196 608: 11 668 096 B at 4.8 TB/s = 2.430853 us. FLOPs
  // 2·64·1536·7168 = 1 409 286 144 in fp8, the 12 tiles of 64 x 128 covering it exactly (no
  // padding): 0.712156 us at 1978.9 TFLOP/s. TensorRT-LLM, DeepGEMM's curve (the H100's fit,
  // memory x 0.94: 3.421 us, matrix 0.7987, memory 0.7703, no overlap share, and each tile 500
  // columns of K more: 2 x 64 x 1536 x 500 = 98 304 000 FLOPs, 0.049676 us): 3.421 +
  // max(0.761832 / 0.7987 = 0.953840, 2.430853 / 0.7703 = 3.155723) = 6.576723 us. vLLM
  // 0.8-0.10, its Triton kernel's (20.32 us, matrix 0.2797, memory 0.94, overlap 0.8; no fill):
  // 20.32 + max(0.712156 / 0.2797 = 2.546143, 2.430853 / 0.94 = 2.586014, 0.8 x 5.132157 =
  // 4.105726) = 24.425726 us.
  const model::ModelConfig m = io::bundled_model("deepseek-v3");
  hw::System sys = testing::catalog_system("h200");
  sys.chips = 8;
  auto g = std::make_unique<model::Graph>();
  for (const auto& [engine, want] : {std::pair{EngineRef{EngineKind::trtllm, 0}, 6.576723e-6},
                                     std::pair{EngineRef{EngineKind::vllm, 10}, 24.425726e-6}}) {
    SCOPED_TRACE(name(engine));
    build_deepseek_tp8(m, sys, engine, *g, 64, true);
    const model::GraphOp* op = find_op(*g, "q_a_proj");
    ASSERT_NE(op, nullptr);
    const ops::Estimate e = ops::estimate(op->cost.expand(), sys.chip, op->kernel);
    EXPECT_NEAR(e.main_bytes, 11668096, 1);
    EXPECT_NEAR(e.t_realistic_s, want, 1e-11);
  }
}

TEST(EngineKernels, ABlockFp8GemmsActivationsAreQuantisedByAKernelOfTheirOwn) {
  // Before DeepSeek-V3's down-projections (qkv_a_proj: q_a_proj and kv_a_proj as one GEMM; 64
  // decode tokens, K 7168, H200 at TP 8), every engine quantises its input in 1x128 groups (vLLM per_token_group_quant_fp8, SGLang
  // sglang_per_token_group_quant_fp8, TensorRT-LLM fp8_quantize_1x128): read 64·7168·2 =
  // 917 504 B of bf16, write 64·7168 = 458 752 B of fp8 and 64·56 fp32 scales = 14 336 B:
  // 1 390 592 B at 4.8 TB/s = 0.289707 us. In the quant class (the H200's: 2.382 us, and the
  // norms' memory fraction, 0.5674): 2.382 + 0.289707 / 0.5674 = 2.892586 us (its
  // 3·458 752 + 3584 fp32 FLOPs take 0.026 us at 0.8 of 66.9 TFLOP/s: under the memory part).
  const model::ModelConfig m = io::bundled_model("deepseek-v3");
  hw::System sys = testing::catalog_system("h200");
  sys.chips = 8;
  auto g = std::make_unique<model::Graph>();
  for (EngineKind k : {EngineKind::vllm, EngineKind::sglang, EngineKind::trtllm}) {
    SCOPED_TRACE(name(k));
    build_deepseek_tp8(m, sys, k, *g);
    ASSERT_FALSE(g->overflow);
    const int at = op_index(*g, "qkv_a_proj");
    ASSERT_GT(at, 0);
    const model::GraphOp& q = g->ops[at - 1];
    ASSERT_STREQ(q.name, "act_quant");
    EXPECT_EQ(q.kernel, KernelClass::quant);
    const ops::Estimate e = ops::estimate(q.cost.expand(), sys.chip, q.kernel);
    EXPECT_NEAR(e.main_bytes, 1390592, 1);
    const ops::Rates r(sys.chip);
    ops::TimeParts p = ops::time_parts(q.cost.expand(), r);
    p.launch = 0;  // replayed in the decode step's graph: no host launch
    EXPECT_NEAR(p.realistic(r, q.kernel), 2.892586e-6, 1e-11);
  }
}

TEST(EngineKernels, TheEnginesRunMlasTwoDownProjectionsAsOneGemm) {
  // SGLang 0.4.6+ (fused_qkv_a_proj_with_mqa, PR #5619), vLLM 0.10+ (fused_qkv_a_proj, PR #21116;
  // the 0.9-0.10 preset takes 0.10's) and TensorRT-LLM's PyTorch backend (fused_a) run
  // DeepSeek-V3's q_a_proj (7168 -> 1536) and kv_a_proj (7168 -> 512 + 64) as one GEMM of 2112
  // columns after one quantisation of its input; vLLM 0.8, V0, SGLang 0.3, the TensorRT engine
  // flow and the static engine run two. At 64 decode tokens on an H200 at TP 8 (the projections
  // replicated, whole on each GPU), bytes of each GEMM (its fp8 activations, fp8 weights with a
  // fp32 scale a 128 x 128 block, bf16 out): q_a_proj 458 752 + 11 010 048 + 2688 + 196 608 =
  // 11 668 096; kv_a_proj 458 752 + 7168·576 = 4 128 768 + 4 128 768·4/16384 = 1008 + 64·576·2 =
  // 73 728: 4 662 256; qkv_a_proj 458 752 + 7168·2112 = 15 138 816 + 3696 + 64·2112·2 = 270 336:
  // 15 871 600, the pair's 16 330 352 less one read of the input. Its weights are the pair's, its
  // input's quantisation one kernel (before it), and a pass has two kernels fewer a layer: 122
  // over DeepSeek-V3's 61.
  const model::ModelConfig m = io::bundled_model("deepseek-v3");
  hw::System sys = testing::catalog_system("h200");
  sys.chips = 8;
  struct Case {
    EngineRef engine;
    bool fused;
  };
  const Case cases[] = {{{EngineKind::sglang, 0}, true},   {{EngineKind::sglang, kSglang03Version}, false},
                        {{EngineKind::vllm, 0}, true},     {{EngineKind::vllm, 13}, true},
                        {{EngineKind::vllm, 10}, true},    {{EngineKind::vllm, 8}, false},
                        {{EngineKind::vllm, kVllmV0Version}, false}, {{EngineKind::trtllm, 0}, true},
                        {{EngineKind::trtllm, kTrtllmEnginesVersion}, false}, {{EngineKind::static_batch, 0}, false}};
  auto g = std::make_unique<model::Graph>(), apart = std::make_unique<model::Graph>();
  const auto kernels = [](const model::Graph& x) {
    double n = 0;
    for (int i = 0; i < x.op_count; ++i) n += x.ops[i].cost.launches * x.repeat(i);
    return n;
  };
  const auto bytes = [&](const model::GraphOp& op) { return ops::estimate(op.cost.expand(), sys.chip, op.kernel).main_bytes; };
  for (const Case& c : cases) {
    SCOPED_TRACE(name(c.engine));
    EXPECT_EQ(engine_preset(c.engine, sys.chip, 8).fused_qkv_a, c.fused);
    build_deepseek_tp8(m, sys, c.engine, *g);
    ASSERT_FALSE(g->overflow);
    EXPECT_EQ(find_op(*g, "qkv_a_proj") != nullptr, c.fused);
    EXPECT_EQ(find_op(*g, "q_a_proj") == nullptr, c.fused);
    EXPECT_EQ(find_op(*g, "kv_a_proj") == nullptr, c.fused);
    if (!c.fused) continue;
    const int at = op_index(*g, "qkv_a_proj");
    const model::GraphOp& fused = g->ops[at];
    EXPECT_STREQ(g->ops[at - 1].name, "act_quant");
    EXPECT_EQ(fused.gemm_k, 7168);
    EXPECT_EQ(fused.gemm_n, 2112);
    EXPECT_NEAR(bytes(fused), 15871600, 1);
    build_deepseek_tp8(m, sys, c.engine, *apart, 64, true);
    const model::GraphOp* q = find_op(*apart, "q_a_proj");
    const model::GraphOp* kv = find_op(*apart, "kv_a_proj");
    ASSERT_TRUE(q != nullptr && kv != nullptr);
    EXPECT_NEAR(bytes(*q), 11668096, 1);
    EXPECT_NEAR(bytes(*kv), 4662256, 1);
    EXPECT_EQ(fused.weight_bytes, q->weight_bytes + kv->weight_bytes);
    EXPECT_EQ(fused.params, q->params + kv->params);
    EXPECT_EQ(kernels(*apart) - kernels(*g), 122);
  }
}

TEST(EngineKernels, RoutersAndVllmsAndSglangsAbsorbedMlaProjectionsRunOn16BitWeights) {
  // No engine quantises a MoE router (vLLM's ReplicatedLinear with quant_config=None, SGLang's
  // MoEGate, TensorRT-LLM's DeepseekV3Gate): DeepSeek-V3's 7168 x 256 gate reads bf16 weights,
  // 7168·256·2 = 3 670 016 B, in cuBLAS (the gemm class). vLLM and SGLang 0.4+ dequantise
  // kv_b_proj when the model loads and run the absorbed projections as bf16 torch.bmm:
  // q_absorb's 16 local heads of 128 x 512 read 16·128·512·2 = 2 097 152 B of weights, with no
  // quantisation kernel before them; TensorRT-LLM keeps them fp8 (1 B a weight and a fp32 scale
  // per 128 x 128 block: 16·(65 536 + 16) = 1 048 832 B) in its block-scaled kernel (DeepGEMM's
  // class, the block-fp8 GEMMs' kernel it calls), after their activations' act_quant.
  const model::ModelConfig m = io::bundled_model("deepseek-v3");
  hw::System sys = testing::catalog_system("h200");
  sys.chips = 8;
  auto g = std::make_unique<model::Graph>();
  struct Case {
    EngineKind engine;
    KernelClass absorb;
    double absorb_weight_bytes;
  };
  for (const Case& c : {Case{EngineKind::vllm, KernelClass::gemm, 2097152}, Case{EngineKind::sglang, KernelClass::gemm, 2097152},
                        Case{EngineKind::trtllm, KernelClass::gemm_scaled_deepgemm, 1048832}}) {
    SCOPED_TRACE(name(c.engine));
    build_deepseek_tp8(m, sys, c.engine, *g);
    const model::GraphOp* router = find_op(*g, "router");
    ASSERT_NE(router, nullptr);
    EXPECT_EQ(router->kernel, KernelClass::gemm);
    EXPECT_DOUBLE_EQ(router->weight_bytes, 3670016);
    const model::GraphOp* uk = find_op(*g, "q_absorb");
    ASSERT_NE(uk, nullptr);
    EXPECT_EQ(uk->kernel, c.absorb);
    EXPECT_DOUBLE_EQ(uk->weight_bytes, c.absorb_weight_bytes);
    const bool quantised = std::string_view((uk - 1)->name) == "act_quant";
    EXPECT_EQ(quantised, c.absorb != KernelClass::gemm);
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

TEST(EngineKernels, EachEnginesOwnAllReduceTakesMessagesUnderItsLimitAndNcclTheRest) {
  // Llama-3.1-70B on H100s: an all-reduce moves 8192 x 2 B = 16384 B a token, at any TP.
  // vLLM's custom all-reduce takes messages under 8 MiB (max_size 8192 x 1024): at TP 8, 511
  // tokens (8372224 B) run in it, 512 (8388608 B = 8 MiB) in NCCL, priced as NCCL's fastest
  // algorithm for the size. TensorRT-LLM's AUTO strategy takes them under 500 kB past TP 4: 30
  // tokens (491520 B) in its own kernel, 31 (507904 B) in NCCL; under 1 MB at TP 4: 61 tokens
  // (999424 B), not 62 (1015808 B); up to its 16 MB workspace at TP 2: 976 tokens (15990784 B),
  // not 977 (16007168 B). SGLang's NCCL runs without NVLS (NCCL_NVLS_ENABLE=0): at 8192 tokens
  // (128 MiB), where the switches' reduction is NCCL's fastest over these 8 H100s (vLLM's),
  // SGLang's is a ring.
  const model::ModelConfig m = io::bundled_model("llama-3.1-70b");
  hw::System sys = testing::catalog_system("h100-sxm");
  struct Case {
    EngineRef engine;
    int tp;
    double tokens;
    bool custom;
    comm::Algo nccl;  // the algorithm NCCL prices (automatic: not checked)
  };
  constexpr comm::Algo kAny = comm::Algo::automatic;
  const Case cases[] = {{{EngineKind::vllm, 10}, 8, 511, true, kAny},  {{EngineKind::vllm, 10}, 8, 512, false, kAny},
                        {{EngineKind::vllm, 0}, 8, 8192, false, comm::Algo::nvls},
                        {{EngineKind::trtllm, 0}, 8, 30, true, kAny},  {{EngineKind::trtllm, 0}, 8, 31, false, kAny},
                        {{EngineKind::trtllm, 0}, 4, 61, true, kAny},  {{EngineKind::trtllm, 0}, 4, 62, false, kAny},
                        {{EngineKind::trtllm, 0}, 2, 976, true, kAny}, {{EngineKind::trtllm, 0}, 2, 977, false, kAny},
                        {{EngineKind::sglang, 0}, 8, 511, true, kAny}, {{EngineKind::sglang, 0}, 8, 8192, false, comm::Algo::ring}};
  auto g = std::make_unique<model::Graph>();
  for (const Case& c : cases) {
    SCOPED_TRACE(name(c.engine) + " at TP " + std::to_string(c.tp) + ", " + std::to_string(static_cast<int>(c.tokens)) + " tokens");
    sys.chips = c.tp;
    model::ForwardConfig f;
    f.tp = c.tp;
    f = engine_forward(f, engine_preset(c.engine, sys.chip, c.tp));
    g->clear();
    model::build_forward(m, f, sys, {1, c.tokens, c.tokens, nullptr}, *g);
    ASSERT_FALSE(g->overflow);
    const model::GraphOp* op = find_op(*g, "attn_allreduce");
    ASSERT_NE(op, nullptr);
    ASSERT_GE(op->collective, 0);
    const model::CollectiveOp& ar = g->collectives[op->collective];
    EXPECT_EQ(ar.bytes, c.tokens * 16384);
    EXPECT_EQ(op->kernel, c.custom ? KernelClass::allreduce_custom : KernelClass::collective);
    EXPECT_EQ(ar.algo, c.custom ? comm::Algo::direct : comm::Algo::automatic);
    if (c.custom) continue;
    const comm::Wiring w = model::collective_wiring(sys, f);
    const comm::Priced p = comm::price(w, ar.group, comm::Collective::all_reduce, ar.bytes, DType::bf16, comm::Algo::automatic);
    if (c.nccl != kAny) {
      EXPECT_EQ(p.algo, c.nccl);
    }
    EXPECT_EQ(op->cost.total_link_bytes(), p.cost.total_link_bytes());
  }
}

// The main-memory bytes (read and written) of `name` in `g` (-1: no such op).
double op_bytes(const model::Graph& g, std::string_view name) {
  const model::GraphOp* op = find_op(g, name);
  return op == nullptr ? -1 : op->cost.main_bytes;
}

TEST(EngineKernels, MlaPrefillAssemblesItsKeysAndVllm08PadsV) {
  // DeepSeek-V3 at TP 8: 16 heads a GPU, keys of 128 nope columns and one 64-column RoPE key a
  // position that the heads share (qk 192), V of 128 columns, hidden 7168, bf16 activations.
  // A prompt of 1000 tokens (1000 positions).
  // - Every engine assembles the keys attention reads (vLLM's torch.cat in
  //   MLACommonImpl._forward_prefill, SGLang's copies in forward_normal): reads 16·128·2 + 64·2 =
  //   4224 B and writes 16·192·2 = 6144 B a position: 10 368 000 B.
  // - Each MoE layer adds its shared experts' output to the routed experts' sum: reads two
  //   1000 x 7168 bf16 tensors and writes one, 3·1000·7168·2 = 43 008 000 B.
  // - vLLM 0.8 (to 0.8.4's _forward_prefill) pads V to 192 columns: reads 16·128·2 = 4096 B,
  //   writes 6144 B a position, 10 240 000 B; attention's PV then runs 192 columns wide, its
  //   matrix FLOPs (QK 2·192 and PV 2·dv a pair and head) by (192 + 192) / (192 + 128) = 1.2 and
  //   its output 16·1000·192·2 = 6 144 000 B against 4 096 000; the output's 128 columns a head
  //   are copied out, 4096 B read and written a token, 8 192 000 B. Later releases (PR #13111)
  //   do neither on Hopper, where FA3 takes V's own width.
  const model::ModelConfig m = io::bundled_model("deepseek-v3");
  hw::System sys = testing::catalog_system("h200");
  sys.chips = 8;
  auto g08 = std::make_unique<model::Graph>(), g14 = std::make_unique<model::Graph>();
  for (auto [engine, g] : {std::pair{EngineRef{EngineKind::vllm, 8}, g08.get()}, std::pair{EngineRef{EngineKind::vllm, 0}, g14.get()}}) {
    model::ForwardConfig f;
    f.tp = 8;
    f = engine_forward(f, engine_preset(engine, sys.chip, 8));
    model::build_forward(m, f, sys, {1, 1000, 1000, nullptr}, *g);
  }
  for (const model::Graph* g : {g08.get(), g14.get()}) {
    EXPECT_DOUBLE_EQ(op_bytes(*g, "k_concat"), 10368000);
    EXPECT_DOUBLE_EQ(op_bytes(*g, "shared_add"), 43008000);
  }
  EXPECT_DOUBLE_EQ(op_bytes(*g08, "v_pad"), 10240000);
  EXPECT_DOUBLE_EQ(op_bytes(*g08, "attn_out_slice"), 8192000);
  EXPECT_DOUBLE_EQ(op_bytes(*g14, "v_pad"), -1);
  EXPECT_DOUBLE_EQ(op_bytes(*g14, "attn_out_slice"), -1);
  // The prefill attention: the first attention op after kv_b_proj.
  const auto prefill_attention = [](const model::Graph& g) -> const model::GraphOp& {
    return g.ops[op_index(g, "kv_b_proj") + 1 + (op_index(g, "v_pad") >= 0 ? 2 : 1)];
  };
  const model::GraphOp& a08 = prefill_attention(*g08);
  const model::GraphOp& a14 = prefill_attention(*g14);
  ASSERT_STREQ(a08.name, "attention");
  ASSERT_STREQ(a14.name, "attention");
  EXPECT_DOUBLE_EQ(a08.cost.matrix_flops / a14.cost.matrix_flops, 1.2);
  EXPECT_DOUBLE_EQ(a08.cost.main_store_bytes - a14.cost.main_store_bytes, 6144000 - 4096000);
}

TEST(EngineKernels, VllmsMlaOpCopiesAndRunsRopeAsItsCodeDoes) {
  // DeepSeek-V3 at TP 8 (16 heads a GPU, latent 512, RoPE 64, V 128, hidden 7168, bf16), 64
  // decode tokens. vLLM's attention op (MLACommonImpl.forward and FlashMLA's _forward_decode)
  // copies three times, one op of three kernels (mla_op_copies), each copy read and written:
  // FlashMLA's query, 16·(512 + 64) values a token; _v_up_proj's reshape, 16·128; the result
  // copied into the step's output, under 0.8 o_proj's reduced output (7168), later the heads'
  // (16·128). 0.8: 64·(9216 + 2048 + 7168)·2·2 = 4 718 592 B; later 64·(9216 + 2048 + 2048)·2·2
  // = 3 407 872 B.
  // Under 0.8, RoPE as PyTorch runs it (ops::rope_torch_cost, 16 kernels) in place of the fused
  // `rope`: 64 tokens, 65 536 query and 4096 key elements, a 4096-element table; reads
  // (7.5·65536 + 6.5·4096 + 6·4096)·2 + 8·64 = 1 085 952 B, writes (6.5·65536 + 5.5·4096 +
  // 3·4096)·2 = 921 600 B: 2 007 552 B.
  // SGLang's graph holds none of them.
  const model::ModelConfig m = io::bundled_model("deepseek-v3");
  hw::System sys = testing::catalog_system("h200");
  sys.chips = 8;
  auto g08 = std::make_unique<model::Graph>(), g14 = std::make_unique<model::Graph>(), sgl = std::make_unique<model::Graph>();
  build_deepseek_tp8(m, sys, EngineRef{EngineKind::vllm, 8}, *g08);
  build_deepseek_tp8(m, sys, EngineRef{EngineKind::vllm, 0}, *g14);
  build_deepseek_tp8(m, sys, EngineRef{EngineKind::sglang, 0}, *sgl);
  EXPECT_DOUBLE_EQ(op_bytes(*g08, "mla_op_copies"), 4718592);
  EXPECT_DOUBLE_EQ(op_bytes(*g14, "mla_op_copies"), 3407872);
  for (const model::Graph* g : {g08.get(), g14.get()}) {
    const model::GraphOp* copies = find_op(*g, "mla_op_copies");
    ASSERT_NE(copies, nullptr);
    EXPECT_DOUBLE_EQ(copies->cost.launches, 3);
    EXPECT_EQ(copies->attention_op, model::GraphOp::InAttentionOp::own);
    EXPECT_EQ(copies->scale, model::Scale::decode_tokens);
  }
  EXPECT_DOUBLE_EQ(op_bytes(*g08, "rope_decode"), 2007552);
  EXPECT_DOUBLE_EQ(find_op(*g08, "rope_decode")->cost.launches, 16);
  EXPECT_EQ(find_op(*g08, "rope_decode")->attention_op, model::GraphOp::InAttentionOp::own);
  EXPECT_EQ(find_op(*g08, "rope"), nullptr);
  EXPECT_EQ(find_op(*g14, "rope_decode"), nullptr);
  EXPECT_DOUBLE_EQ(find_op(*g14, "rope")->cost.launches, 1);
  for (const char* name : {"mla_op_copies", "rope_decode", "attn_out_prefill"}) EXPECT_EQ(find_op(*sgl, name), nullptr) << name;
  // A prompt of 1000 tokens: its path's output copied so too, 1000·7168·2·2 = 28 672 000 B under
  // 0.8, 1000·16·128·2·2 = 8 192 000 B later, and under 0.8 its own RoPE.
  for (auto [engine, g] : {std::pair{EngineRef{EngineKind::vllm, 8}, g08.get()}, std::pair{EngineRef{EngineKind::vllm, 0}, g14.get()}}) {
    model::ForwardConfig f;
    f.tp = 8;
    f = engine_forward(f, engine_preset(engine, sys.chip, 8));
    g->clear();
    model::build_forward(m, f, sys, {1, 1000, 1000, nullptr}, *g);
  }
  EXPECT_DOUBLE_EQ(op_bytes(*g08, "attn_out_prefill"), 28672000);
  EXPECT_DOUBLE_EQ(op_bytes(*g14, "attn_out_prefill"), 8192000);
  EXPECT_EQ(find_op(*g08, "attn_out_prefill")->scale, model::Scale::prefill_tokens);
  EXPECT_EQ(find_op(*g08, "attn_out_prefill")->attention_op, model::GraphOp::InAttentionOp::own);
  EXPECT_DOUBLE_EQ(find_op(*g08, "rope_prefill")->cost.launches, 16);
  EXPECT_EQ(find_op(*g08, "mla_op_copies"), nullptr);
}

TEST(EngineKernels, EveryBundledModelsGraphFitsItsOpsUnderEveryPreset) {
  // A graph holds at most Graph::kMaxOps ops; one that does not fit sets Graph::overflow and
  // drops ops, which would price a step short. Every bundled model, under each engine's preset
  // (vLLM 0.8 with MLA's padded V and its op's projections, vLLM 0.14+, SGLang, TensorRT-LLM:
  // merged kernels, routers, DeepGEMM's rows copied out), its experts split or whole over TP 2,
  // for a prompt's pass and for a step mixing decodes with a chunk after cached context: none
  // overflows.
  hw::System sys = testing::catalog_system("h200");
  sys.chips = 2;
  auto g = std::make_unique<model::Graph>();
  int built = 0;
  const std::vector<std::string> names = io::bundled_model_names();
  for (const std::string& name : names) {
    const model::ModelConfig m = io::bundled_model(name);
    const double window = static_cast<double>(m.sliding_window);
    model::StepMix mix;
    for (int i = 0; i < 4; ++i) mix.add_decode(1000, window);
    mix.add_prefill(512, 1536, window);
    for (const EngineRef engine : {EngineRef{EngineKind::vllm, 8}, EngineRef{EngineKind::vllm, 0}, EngineRef{EngineKind::sglang, 0},
                                   EngineRef{EngineKind::trtllm, 0}}) {
      for (const auto experts : {model::ForwardConfig::Experts::tensor, model::ForwardConfig::Experts::expert}) {
        if (experts == model::ForwardConfig::Experts::expert && !m.is_moe()) continue;
        SCOPED_TRACE(name + " " + std::string(serving::name(engine.kind)) + (experts == model::ForwardConfig::Experts::expert ? " ep" : ""));
        model::ForwardConfig f;
        f.tp = 2;
        f.experts = experts;
        f = engine_forward(f, engine_preset(engine, sys.chip, 2));
        for (const model::PassShape pass : {model::PassShape{1, 2048, 2048, nullptr}, model::PassShape{1, 1, 1, &mix}}) {
          g->clear();
          model::build_forward(m, f, sys, pass, *g);
          EXPECT_FALSE(g->overflow);
          EXPECT_LE(g->op_count, model::Graph::kMaxOps);
          ++built;
        }
      }
    }
  }
  // Every model was built, each preset, both passes (MoE models with both layouts too).
  EXPECT_GE(built, static_cast<int>(names.size()) * 4 * 2);
  // The most a plan can ask of DeepSeek-V3's graph, which the step model's fits build (its
  // StepModel.EqualsTheStepGraphBuiltOpByOp draws such plans): vLLM 0.8's op with its
  // projections, V padded, the absorbed projections on fp8 blocks with their activations'
  // quantisation, kernels unmerged, a step of both paths.
  const model::ModelConfig ds = io::bundled_model("deepseek-v3");
  model::StepMix both;
  for (int i = 0; i < 8; ++i) both.add_decode(200, 0), both.add_prefill(64, 128, 0);
  model::ForwardConfig f;
  f.tp = 2;
  f.mla_op = model::ForwardConfig::MlaOp::projections;
  f.mla_pad_v = true;
  g->clear();
  model::build_forward(ds, f, sys, {1, 1, 1, &both}, *g);
  EXPECT_FALSE(g->overflow);
  RecordProperty("deepseek_v3_most_ops", g->op_count);
  EXPECT_LE(g->op_count, model::Graph::kMaxOps - 8) << "keep room for a few ops more";
}

TEST(EngineKernels, Mxfp4ExpertsWithBf16RowsAreTheW4a16KernelsClassAndNvfp4ExpertsAreNot) {
  // gpt-oss-120b's experts (MXFP4, an 8-bit scale a 32) keep 16-bit rows (gemm_dtype's rule, as
  // vLLM runs them by default), their products in bf16: gemm_expert_w4a16 on every chip. On the
  // B200, whose file measures that kernel at a prefill's size (FlashInfer's trtllm-gen MXFP4 x
  // BF16, issue #2671), the class has its own matrix fraction, 0.1371, and vLLM's preset pads the
  // experts as that kernel takes them (2880 to 3072: mxfp4_expert_align 256); on the H200 neither,
  // the class taking gemm_expert's figures, so that its price is what it was. NVFP4 experts
  // (DeepSeek-V3 with --weight-dtype fp4) run W4A4 on the B200, in fp4: gemm_expert's.
  const model::ModelConfig oss = io::bundled_model("gpt-oss-120b");
  auto g = std::make_unique<model::Graph>();
  for (const char* chip : {"b200", "h200"}) {
    const hw::System sys = testing::catalog_system(chip);
    model::ForwardConfig f;
    f = engine_forward(f, engine_preset(EngineRef{EngineKind::vllm, 0}, sys.chip, 1));
    g->clear();
    model::build_forward(oss, f, sys, {2048, 1, 1, nullptr}, *g);
    const model::GraphOp* op = find_op(*g, "experts_gate_up");
    ASSERT_NE(op, nullptr) << chip;
    EXPECT_EQ(op->kernel, KernelClass::gemm_expert_w4a16) << chip;
    EXPECT_EQ(op->cost.matrix_dtype, DType::bf16) << chip;
    const ops::Estimate own = ops::estimate(op->cost.expand(), sys.chip, op->kernel);
    const ops::Estimate before = ops::estimate(op->cost.expand(), sys.chip, KernelClass::gemm_expert);
    if (std::string_view(chip) == "h200") {
      EXPECT_EQ(f.mxfp4_expert_align, 0);
      EXPECT_DOUBLE_EQ(op->cost.matrix_flops, 2.0 * 8192 * 2880 * 5760);  // unpadded
      EXPECT_DOUBLE_EQ(own.t_realistic_s, before.t_realistic_s);
      continue;
    }
    // The B200: 2048 x 4 = 8192 pairs through 3072 x 6144 (gate and up, padded): 2 x 8192 x
    // 3072 x 6144 = 309237645312 FLOPs at 0.1371 x 2.25 PFLOP/s = 1002.472308 us, over its bytes'
    // read (the rows 8192 x 3072 x 2 = 50331648 B, every expert's weights 128 x 3072 x 6144 x
    // 0.53125 = 1283457024, the out 8192 x 6144 x 2 = 100663296, the bias 6144 x 2 = 12288 (one
    // row, as the GEMM's shape counts it): 1434464256 B at 0.7841 x 8 TB/s = 228.680 us), with
    // gemm_expert's 17.86 us: 1020.332308 us, the measured kernel's gate-up at this shape
    // (KernelCurves.TheB200PricesMxfp4ExpertsWithBf16RowsAtTrtllmGensMeasuredPrefillRate). At
    // gemm_expert's figures (the NVFP4 kernel's matrix 0.1876, here of the bf16 peak: 422.1
    // TFLOP/s, 732.617023 us of products) its products bind too: 750.477023 us.
    EXPECT_EQ(f.mxfp4_expert_align, 256);
    EXPECT_DOUBLE_EQ(op->cost.matrix_flops, 309237645312.0);
    EXPECT_NEAR(own.t_realistic_s, 1020.332308e-6, 1020.332308e-6 * 1e-6);
    EXPECT_NEAR(before.t_realistic_s, 750.477023e-6, 0.001e-6);
    // The parameters counted stay the checkpoint's: 128 experts of 2880 x 5760 and their bias.
    EXPECT_DOUBLE_EQ(op->params, 128.0 * 2880 * 5760 + 128.0 * 5760);
  }
  // DeepSeek-V3 with NVFP4 weights on the B200: W4A4, fp4 products, gemm_expert.
  const model::ModelConfig ds = io::bundled_model("deepseek-v3");
  hw::System sys = testing::catalog_system("b200");
  sys.chips = 8;
  model::ForwardConfig f;
  f.tp = 8;
  f.precision.weight = DType::fp4;
  g->clear();
  model::build_forward(ds, f, sys, {2048, 1, 1, nullptr}, *g);
  const model::GraphOp* op = find_op(*g, "experts_gate_up");
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->cost.matrix_dtype, DType::fp4);
  EXPECT_EQ(op->kernel, KernelClass::gemm_expert);
}

}  // namespace
}  // namespace ridgeline::serving
