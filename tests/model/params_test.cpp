// Parameter counts from the graph against the published totals (within 1%), and a few
// derived by hand exactly.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <string_view>

#include "ridgeline/io/model_file.hpp"
#include "ridgeline/model/transformer.hpp"
#include "toy_chip.hpp"

namespace ridgeline::model {
namespace {

struct Published {
  const char* name;
  double total;
  const char* source;
};

// Sources: Hugging Face safetensors totals (Llama 2 less the 2048 stored inv_freq values
// per ... counted as PyTorch parameters), model cards, papers.
constexpr Published kPublished[] = {
    {"llama-2-7b", 6738415616, "PyTorch parameter count of meta-llama/Llama-2-7b-hf"},
    {"llama-2-13b", 13015864320, "meta-llama/Llama-2-13b-hf"},
    {"llama-2-70b", 68976648192, "meta-llama/Llama-2-70b-hf"},
    {"llama-3.1-8b", 8030261248, "meta-llama/Llama-3.1-8B safetensors total"},
    {"llama-3.1-70b", 70553706496, "meta-llama/Llama-3.1-70B safetensors total"},
    {"llama-3.1-405b", 405853388800, "meta-llama/Llama-3.1-405B safetensors total"},
    // Tied embeddings: 128256·2048 once + 16 layers of (2·2048² + 2·2048·512 + 3·2048·8192 +
    // 2·2048) + 2048 = 1235814400, the model card's 1.24B.
    {"llama-3.2-1b", 1235814400, "meta-llama/Llama-3.2-1B (model card 1.24B)"},
    // 128256·3072 + 28·(2·3072² + 2·3072·1024 + 3·3072·8192 + 2·3072) + 3072 = 3212749824: 3.21B.
    {"llama-3.2-3b", 3212749824, "meta-llama/Llama-3.2-3B (model card 3.21B)"},
    {"mistral-7b", 7241732096, "Mistral-7B-v0.1 parameter count"},
    {"mixtral-8x7b", 46702792704, "Mixtral-8x7B safetensors total"},
    {"qwen2.5-7b", 7615616512, "Qwen2.5-7B (model card 7.61B)"},
    {"qwen2.5-72b", 72706203648, "Qwen2.5-72B (model card 72.7B)"},
    {"deepseek-v3", 671e9, "DeepSeek-V3 README: 671B main model (685B with the 14B MTP module)"},
    {"deepseek-r1", 671e9, "DeepSeek-R1 README: 671B total (DeepSeek-V3-Base's architecture)"},
    {"qwen3-235b-a22b", 235e9, "Qwen/Qwen3-235B-A22B model card: 235B in total"},
    {"qwen3-30b-a3b", 30.5e9, "Qwen/Qwen3-30B-A3B model card: 30.5B in total"},
    {"qwen3-32b", 32.8e9, "Qwen/Qwen3-32B model card: 32.8B"},
    {"gpt-oss-120b", 116829156672, "gpt-oss-120b parameter count (model card: 117B)"},
    {"gpt3-175b", 175.0e9, "Brown et al. 2020, Table 2.1: 175.0B"},
};

TEST(Params, EveryBundledModelMatchesItsPublishedTotal) {
  ASSERT_EQ(io::bundled_model_names().size(), std::size(kPublished));
  for (const auto& p : kPublished) {
    ParamCount c = count_params(io::bundled_model(p.name));
    EXPECT_NEAR(c.total / p.total, 1.0, 0.01) << p.name << ": " << c.total << " vs " << p.total << " (" << p.source << ")";
  }
}

TEST(Params, Llama2_7bExactly) {
  // Embeddings 32000·4096 twice (untied); per layer 4·4096² (q,k,v,o) + 3·4096·11008 (MLP)
  // + 2·4096 (norms); final norm 4096: 262144000 + 32·202383360 + 4096.
  EXPECT_EQ(count_params(io::bundled_model("llama-2-7b")).total, 6738415616.0);
}

TEST(Params, Qwen25_7bCountsTheQkvBiases) {
  // Per layer: q 3584² + 3584 bias, k and v 3584·512 + 512 each, o 3584², MLP 3·3584·18944,
  // norms 2·3584 = 233057792; ·28 + embeddings 2·152064·3584 + final norm 3584.
  EXPECT_EQ(count_params(io::bundled_model("qwen2.5-7b")).total, 28 * 233057792.0 + 2 * 152064.0 * 3584 + 3584);
}

TEST(Params, MoeActiveParameters) {
  // Mixtral: Mistral's "12.9B active" counts both embedding tables: per layer attention
  // 41943040 + 2 of 8 experts (2·176160768) + router 32768 + norms 8192; ·32 + 2·131072000.
  ParamCount mixtral = count_params(io::bundled_model("mixtral-8x7b"));
  EXPECT_EQ(mixtral.active_with_embedding, 32 * (41943040.0 + 2 * 176160768 + 32768 + 8192) + 2 * 131072000.0 + 4096);
  EXPECT_NEAR(mixtral.active_with_embedding / 12.9e9, 1.0, 0.01);
  // gpt-oss-120b: the model card's 5.1B active excludes the input embedding (4.55B in the
  // layers + 0.58B unembedding).
  EXPECT_NEAR(count_params(io::bundled_model("gpt-oss-120b")).active / 5.1e9, 1.0, 0.01);
  // Qwen3-30B-A3B (model card: 3.3B activated): per layer q 2048·4096 + k, v 2048·512 each + o
  // 4096·2048 = 18874368, q and k norms 2·128, 8 of 128 experts 8·3·2048·768 = 37748736, router
  // 2048·128, norms 2·2048: 56889600; ·48 + embeddings 2·151936·2048 + final norm 2048.
  EXPECT_EQ(count_params(io::bundled_model("qwen3-30b-a3b")).active_with_embedding, 48 * 56889600.0 + 2 * 151936.0 * 2048 + 2048);
  // DeepSeek-V3: "37B activated", a figure rounded to the billion: [36.5, 37.5).
  ParamCount ds = count_params(io::bundled_model("deepseek-v3"));
  EXPECT_GE(ds.active, 36.5e9);
  EXPECT_LT(ds.active, 37.5e9);
}

TEST(Params, DenseModelsAreAllActive) {
  ParamCount c = count_params(io::bundled_model("llama-3.1-8b"));
  EXPECT_EQ(c.active + c.embedding, c.total);  // untied: the LM head is active, the table is not
}

TEST(Graph, GemmaScalesItsEmbeddingAndNormsEachSublayersOutput) {
  // Gemma 2 (26 layers of hidden 2304) against the same file read as another type, one decode
  // token at a context of 100: one kernel more in the embedding group (the row times √h, 2304
  // values read and written in bf16: 2·2304·2 = 9216 bytes) and two norms more a layer (each
  // RMSNorm reads and writes the 2304 activations and reads its 2304 bf16 weights: 9216 + 4608 =
  // 13824 bytes), with merged kernels as the engines run them (the residual adds stay inside
  // the next norms).
  const std::string body = R"("hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 256000,
    "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": true})";
  const ModelConfig gemma = io::parse_model_config(R"({"model_type": "gemma2", )" + body, "gemma2.json");
  const ModelConfig other = io::parse_model_config(R"({"model_type": "other", )" + body, "other.json");
  ASSERT_TRUE(gemma.embed_scale && gemma.sandwich_norms);
  ASSERT_FALSE(other.embed_scale || other.sandwich_norms);
  hw::System sys;
  ForwardConfig f;
  f.merged_kernels = true;
  auto a = std::make_unique<Graph>(), b = std::make_unique<Graph>();
  build_forward(gemma, f, sys, {1, 1, 100}, *a);
  build_forward(other, f, sys, {1, 1, 100}, *b);
  auto totals = [](const Graph& g) {
    double k = 0, bytes = 0;
    for (int i = 0; i < g.op_count; ++i) k += g.repeat(i) * g.ops[i].cost.launches, bytes += g.repeat(i) * g.ops[i].cost.main_bytes;
    return std::array<double, 2>{k, bytes};
  };
  const auto x = totals(*a), y = totals(*b);
  EXPECT_EQ(x[0] - y[0], 1 + 2 * 26);
  EXPECT_NEAR(x[1] - y[1], 9216.0 + 2 * 26 * 13824.0, 1e-3);
}

// Instances of the ops named `name` in a graph (each op times its group's repeat).
double count_named(const Graph& g, std::string_view name) {
  double n = 0;
  for (int i = 0; i < g.op_count; ++i) n += g.ops[i].name == name ? g.repeat(i) : 0;
  return n;
}

TEST(Graph, SideBySideLayersAddEachResidualOnce) {
  // Cohere's layer: attention and MLP read one norm's output. Against the same file with the
  // layer made sequential: no post-attention norm; the attention's residual add is its own
  // kernel in every layer (merged kernels fold the MLP's into the next norm, as for any layer;
  // unmerged, each sublayer has its add). With sequence parallelism over 2 chips the MLP reads
  // the sequence the attention gathered: one all-gather a layer fewer.
  const ModelConfig par = io::parse_model_config(R"({"model_type": "cohere", "hidden_size": 256, "intermediate_size": 512,
    "num_hidden_layers": 3, "num_attention_heads": 4, "vocab_size": 1000})", "cohere.json");
  ASSERT_TRUE(par.parallel_block);
  ModelConfig seq = par;
  seq.parallel_block = false;
  const hw::System sys = testing::catalog_system("h100-sxm");
  for (const bool merged : {true, false}) {
    ForwardConfig f;
    f.merged_kernels = merged;
    auto a = std::make_unique<Graph>(), b = std::make_unique<Graph>();
    build_forward(par, f, sys, {1, 16, 16}, *a);
    build_forward(seq, f, sys, {1, 16, 16}, *b);
    EXPECT_EQ(count_named(*a, "post_attention_norm") + count_named(*a, "add_post_attention_norm"), 0) << merged;
    EXPECT_EQ(count_named(*b, merged ? "add_post_attention_norm" : "post_attention_norm"), 3) << merged;
    EXPECT_EQ(count_named(*a, "attn_residual"), 3) << merged;
    EXPECT_EQ(count_named(*a, "mlp_residual"), merged ? 0 : 3) << merged;
    EXPECT_EQ(count_named(*a, "mlp_residual"), count_named(*b, "mlp_residual")) << merged;
  }
  hw::System two = sys;
  two.chips = 2;
  ForwardConfig sp;
  sp.tp = 2;
  sp.sequence_parallel = true;
  auto a = std::make_unique<Graph>(), b = std::make_unique<Graph>();
  build_forward(par, sp, two, {1, 16, 16}, *a);
  build_forward(seq, sp, two, {1, 16, 16}, *b);
  EXPECT_EQ(count_named(*a, "attn_allgather"), 3);
  EXPECT_EQ(count_named(*a, "mlp_allgather"), 0);
  EXPECT_EQ(count_named(*b, "mlp_allgather"), 3);
}

TEST(Graph, OlmoGathersQAndKToNormThem) {
  // OLMo 2 32B's attention (40 heads and 8 KV heads of 128) at tp 2, one decode token: q and k
  // are gathered over the two chips (an all-gather of 40·128 and of 8·128 bf16 values a layer)
  // and each chip norms all of them with every weight, 40·128·2 = 10240 and 8·128·2 = 2048
  // bytes of bf16 weights; at tp 1 nothing is gathered.
  const ModelConfig olmo = io::parse_model_config(R"({"model_type": "olmo2", "hidden_size": 5120, "intermediate_size": 27648,
    "num_hidden_layers": 64, "num_attention_heads": 40, "num_key_value_heads": 8, "vocab_size": 100352})", "olmo2.json");
  ASSERT_TRUE(olmo.qk_norm_whole);
  hw::System two = testing::catalog_system("h100-sxm");
  two.chips = 2;
  ForwardConfig f;
  f.tp = 2;
  auto g = std::make_unique<Graph>();
  build_forward(olmo, f, two, {1, 1, 100}, *g);
  EXPECT_EQ(count_named(*g, "q_norm_allgather"), 64);
  EXPECT_EQ(count_named(*g, "k_norm_allgather"), 64);
  for (int i = 0; i < g->op_count; ++i) {
    const std::string_view n = g->ops[i].name;
    if (n == "q_norm") {
      EXPECT_EQ(g->ops[i].weight_bytes, 40 * 128 * 2);
    }
    if (n == "k_norm") {
      EXPECT_EQ(g->ops[i].weight_bytes, 8 * 128 * 2);
    }
  }
  ForwardConfig one;
  build_forward(olmo, one, testing::catalog_system("h100-sxm"), {1, 1, 100}, *g);
  EXPECT_EQ(count_named(*g, "q_norm_allgather"), 0);
  EXPECT_EQ(count_named(*g, "q_norm"), 64);
}

TEST(Graph, AnAllReduceThatNormalisesRunsTheNormInItsKernel) {
  // Llama-3.1-70B at TP 4 on H100s, 8 tokens, merged kernels, the engine's own all-reduce under
  // 1 MB (TensorRT-LLM's rule at TP 3-4). Each layer's all-reduce carries the norm after it
  // (ForwardConfig::allreduce_norm): the 80 layers' two norms run inside them, 160 kernels
  // fewer, the same weights (the norms' gamma held by the fused ops). A fused op costs the
  // all-reduce and the norm: the norm reads the sum and the residual and writes both, 4 x 8 x
  // 8192 x 2 B = 524288 B, and its weights, 8192 x 2 = 16384 B: 540672 B.
  const ModelConfig m = io::bundled_model("llama-3.1-70b");
  const hw::System sys = testing::catalog_system("h100-sxm");
  ForwardConfig f;
  f.tp = 4;
  f.merged_kernels = true;
  f.algo = comm::Algo::direct;
  f.custom_allreduce_max_bytes = 1e6;
  auto plain = std::make_unique<Graph>(), fused = std::make_unique<Graph>(), past = std::make_unique<Graph>();
  build_forward(m, f, sys, {8, 1, 100}, *plain);
  f.allreduce_norm = true;
  build_forward(m, f, sys, {8, 1, 100}, *fused);
  EXPECT_EQ(plain->kernels() - fused->kernels(), 160);
  auto weights = [](const Graph& g) {
    double p = 0, w = 0;
    for (int i = 0; i < g.op_count; ++i) p += g.repeat(i) * g.ops[i].params, w += g.repeat(i) * g.ops[i].weight_bytes;
    return std::array<double, 2>{p, w};
  };
  EXPECT_EQ(weights(*plain), weights(*fused));
  EXPECT_EQ(count_named(*fused, "add_input_norm") + count_named(*fused, "add_post_attention_norm"), 0);
  EXPECT_EQ(count_named(*fused, "attn_allreduce_norm"), 80);
  EXPECT_EQ(count_named(*fused, "mlp_allreduce_norm"), 80);
  EXPECT_EQ(count_named(*fused, "add_final_norm"), 1);  // after the last all-reduce, apart (the embedding's is too)
  const auto op = [](const Graph& g, std::string_view name) -> const GraphOp& {
    for (int i = 0; i < g.op_count; ++i)
      if (g.ops[i].name == name) return g.ops[i];
    return g.ops[0];
  };
  const GraphOp& ar = op(*plain, "attn_allreduce");
  const GraphOp& fa = op(*fused, "attn_allreduce_norm");
  EXPECT_EQ(ar.kernel, hw::KernelClass::allreduce_custom);
  EXPECT_EQ(fa.kernel, hw::KernelClass::allreduce_norm);
  EXPECT_NEAR(fa.cost.main_bytes - ar.cost.main_bytes, 540672, 1e-6);
  EXPECT_EQ(fa.cost.launches, ar.cost.launches);
  EXPECT_EQ(fa.cost.link_bytes, ar.cost.link_bytes);
  EXPECT_EQ(fa.weight_bytes, 16384);
  // 64 tokens move 64 x 8192 x 2 = 1048576 B, past the 1 MB limit: NCCL's all-reduce, the norms
  // kernels of their own again, as unfused.
  build_forward(m, f, sys, {64, 1, 100}, *past);
  auto unfused = std::make_unique<Graph>();
  f.allreduce_norm = false;
  build_forward(m, f, sys, {64, 1, 100}, *unfused);
  EXPECT_EQ(past->kernels(), unfused->kernels());
  EXPECT_EQ(count_named(*past, "add_post_attention_norm"), 80);
  EXPECT_EQ(count_named(*past, "attn_allreduce_norm"), 0);
  // SGLang's fused kernel takes up to 2048 tokens whatever its all-reduce's limit: 64 fuse.
  f.allreduce_norm = true;
  f.allreduce_norm_max_tokens = 2048;
  build_forward(m, f, sys, {64, 1, 100}, *past);
  EXPECT_EQ(unfused->kernels() - past->kernels(), 160);
  EXPECT_EQ(op(*past, "mlp_allreduce_norm").kernel, hw::KernelClass::allreduce_norm);
  // No fusion without merged kernels (no add + norm kernel to fold) or past one chip.
  f.merged_kernels = false;
  build_forward(m, f, sys, {8, 1, 100}, *past);
  EXPECT_EQ(count_named(*past, "attn_allreduce_norm"), 0);
}

}  // namespace
}  // namespace ridgeline::model

namespace ridgeline::model {
namespace {

TEST(Graph, MergedKernelsHaveTheSameWeightsFewerKernelsAndBytes) {
  // Llama-3.1-8B decoding one token. Unfused, a layer runs 15 kernels; merged, 10: add+norm,
  // qkv, RoPE, KV write, attention, o, add+norm, gate-up, SiLU-mul, down (q, k, v and gate,
  // up as one GEMM each; both residual adds inside the norm that follows, the last layer's
  // inside the final norm). The weights are the same.
  const ModelConfig m = io::bundled_model("llama-3.1-8b");
  hw::System sys;
  ForwardConfig f;
  auto plain = std::make_unique<Graph>(), merged = std::make_unique<Graph>();
  build_forward(m, f, sys, {1, 1, 100}, *plain);
  f.merged_kernels = true;
  build_forward(m, f, sys, {1, 1, 100}, *merged);
  auto kernels = [](const Graph& g) {
    double k = 0, w = 0, b = 0;
    for (int i = 0; i < g.op_count; ++i) k += g.repeat(i) * g.ops[i].cost.launches, w += g.repeat(i) * g.ops[i].weight_bytes,
                                           b += g.repeat(i) * g.ops[i].cost.main_bytes;
    return std::array<double, 3>{k, w, b};
  };
  const auto p = kernels(*plain), q = kernels(*merged);
  // 15 (10 merged) kernels a layer, the embedding, the final norm, the LM head and greedy
  // sampling's two (the logits cast to fp32, their argmax).
  EXPECT_EQ(p[0], 15 * 32 + 5);
  EXPECT_EQ(q[0], 10 * 32 + 5);
  EXPECT_EQ(p[1], q[1]);
  // Bytes: an add on its own reads two tensors and writes one (3·4096·2 = 24576 bytes); inside
  // a norm it adds one read and one write (2·4096·2 = 16384): two adds per layer, and the
  // final norm gains one. The merged GEMMs read their input once instead of three times (q,
  // k, v) and twice (gate, up): 3·4096·2 = 24576 bytes less per layer.
  // 32·(2·24576 - 2·16384 + 24576) - 16384 = 1294336 bytes less.
  EXPECT_NEAR(p[2] - q[2], 32 * (2 * 24576.0 - 2 * 16384.0 + 24576.0) - 16384.0, 1e-3);
}

}  // namespace
}  // namespace ridgeline::model
