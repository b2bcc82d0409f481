#include "ridgeline/io/model_file.hpp"

#include <gtest/gtest.h>

#include "ridgeline/core/error.hpp"
#include "ridgeline/model/transformer.hpp"

namespace ridgeline::io {
namespace {

std::string model_error_of(const std::string& text) {
  try {
    parse_model_config(text, "config.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ModelFile, ABundledConfigNamesTheRepositoryItCameFrom) {
  // `_source` "ORG/NAME config.json", alone or before a colon and a note (DeepSeek-R1's says
  // whose architecture it is): the repository an engine's launch loads (--emit). GPT-3's cites
  // a paper: none.
  EXPECT_EQ(bundled_model("deepseek-r1").hf_repo, "deepseek-ai/DeepSeek-R1");
  EXPECT_EQ(bundled_model("deepseek-v3").hf_repo, "deepseek-ai/DeepSeek-V3");
  EXPECT_EQ(bundled_model("llama-3.1-8b").hf_repo, "meta-llama/Llama-3.1-8B");
  EXPECT_EQ(bundled_model("gpt3-175b").hf_repo, "");
  const std::string cfg = R"("model_type": "llama", "hidden_size": 1024, "intermediate_size": 2816, "num_hidden_layers": 4,
    "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000, "max_position_embeddings": 4096})";
  EXPECT_EQ(parse_model_config(R"({"_source": "org/name config.json: a note", )" + cfg, "m.json").hf_repo, "org/name");
  EXPECT_EQ(parse_model_config(R"({"_source": "org/name config.json and more", )" + cfg, "m.json").hf_repo, "");
  EXPECT_EQ(parse_model_config(R"({"_source": "not a repo config.json", )" + cfg, "m.json").hf_repo, "");
}

TEST(ModelFile, Gemma2SlidesEveryOtherLayerAndTiesEmbeddings) {
  auto m = parse_model_config(R"({"model_type": "gemma2", "hidden_size": 2304, "intermediate_size": 9216,
    "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
    "vocab_size": 256000, "max_position_embeddings": 8192, "sliding_window": 4096,
    "hidden_activation": "gelu_pytorch_tanh"})", "gemma2.json");
  EXPECT_EQ(m.head_dim, 256);
  EXPECT_EQ(m.mlp, model::MlpKind::gated_gelu);
  EXPECT_TRUE(m.tie_embeddings);
  EXPECT_EQ(m.sliding_window, 4096);
  EXPECT_EQ(m.sliding_layers, 13);
  // Gemma 2 2B's 2,614,341,888 parameters (the Hugging Face model's count): per layer q and o
  // 2304·2048 each, k and v 2304·1024 each, the MLP 3·2304·9216, and four norms of 2304 (input,
  // post-attention, pre- and post-feedforward: the sandwich); 26 such layers, the tied
  // embedding 256000·2304 and the final norm 2304.
  EXPECT_TRUE(m.sandwich_norms);
  const double layer = 2 * 2304.0 * 2048 + 2 * 2304.0 * 1024 + 3 * 2304.0 * 9216 + 4 * 2304;
  EXPECT_EQ(model::count_params(m).total, 26 * layer + 256000.0 * 2304 + 2304);
  EXPECT_EQ(26 * layer + 256000.0 * 2304 + 2304, 2614341888.0);
}

TEST(ModelFile, Qwen3HasQkNorm) {
  auto m = parse_model_config(R"({"model_type": "qwen3", "hidden_size": 1024, "intermediate_size": 3072,
    "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
    "vocab_size": 151936, "tie_word_embeddings": true})", "qwen3.json");
  EXPECT_TRUE(m.qk_norm);
  // Per layer: q 1024·2048, k and v 1024·1024 each, o 2048·1024, MLP 3·1024·3072, norms
  // 2·1024, q/k norms 2·128; tied embeddings 151936·1024; final norm 1024.
  const double layer = 1024.0 * 2048 * 2 + 1024.0 * 1024 * 2 + 3 * 1024.0 * 3072 + 2048 + 256;
  EXPECT_EQ(model::count_params(m).total, 28 * layer + 151936.0 * 1024 + 1024);
}

TEST(ModelFile, QwenFamiliesByPrefix) {
  // A vision-language model's text type keeps its family's attention: Qwen2.5-VL's q, k and v
  // biases (Qwen/Qwen2.5-VL-7B-Instruct's file states no attention_bias), Qwen3-VL's q/k norms;
  // Llama's neither. The window stays off where use_sliding_window is false (Qwen2.5-VL).
  const std::string body = R"("hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000, "sliding_window": 32768,
    "max_position_embeddings": 128000, "use_sliding_window": false, "max_window_layers": 2)";
  const auto of = [&](const std::string& type) { return parse_model_config("{\"model_type\": \"" + type + "\", " + body + "}", type); };
  for (const char* t : {"qwen2", "qwen2_moe", "qwen2_5_vl", "qwen2_5_vl_text"}) {
    EXPECT_TRUE(of(t).qkv_bias) << t;
    EXPECT_FALSE(of(t).qk_norm) << t;
  }
  for (const char* t : {"qwen3", "qwen3_moe", "qwen3_vl_text", "qwen3_vl_moe_text"}) {
    EXPECT_TRUE(of(t).qk_norm) << t;
    EXPECT_FALSE(of(t).qkv_bias) << t;
  }
  EXPECT_FALSE(of("llama").qkv_bias);
  EXPECT_FALSE(of("llama").qk_norm);
  EXPECT_EQ(of("qwen2_5_vl").sliding_layers, 0);
  // With the window on, the layers from max_window_layers up slide: 4 - 2 of them.
  auto on = parse_model_config(R"({"model_type": "qwen2_vl_text", "hidden_size": 256, "intermediate_size": 512,
    "num_hidden_layers": 4, "num_attention_heads": 4, "vocab_size": 1000, "sliding_window": 4096,
    "max_position_embeddings": 128000, "use_sliding_window": true, "max_window_layers": 2})", "vl.json");
  EXPECT_EQ(on.sliding_layers, 2);
}

TEST(ModelFile, NonGatedGeluFamilies) {
  // EleutherAI/pythia-1.4b's config.json (gpt_neox): 1,414,647,808 parameters (the Pythia
  // paper's table). Per layer: the fused q/k/v 2048·6144 + 6144 biases, the output 2048·2048 +
  // 2048, the MLP 2048·8192 + 8192 and 8192·2048 + 2048 (one GELU, not gated), two LayerNorms
  // of 2·2048; 24 layers, the final LayerNorm 2·2048, and untied embeddings in and out of
  // 50304·2048 each.
  auto m = parse_model_config(R"({"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox",
    "hidden_act": "gelu", "hidden_size": 2048, "intermediate_size": 8192, "num_attention_heads": 16,
    "num_hidden_layers": 24, "max_position_embeddings": 2048, "rotary_pct": 0.25, "tie_word_embeddings": false,
    "use_parallel_residual": true, "vocab_size": 50304, "torch_dtype": "float16"})", "pythia.json");
  EXPECT_EQ(m.mlp, model::MlpKind::gelu);
  EXPECT_EQ(m.norm, model::NormKind::layernorm);
  EXPECT_TRUE(m.qkv_bias && m.o_bias && m.mlp_bias);
  const double layer = 2048.0 * 6144 + 6144 + 2048.0 * 2048 + 2048 + 2048.0 * 8192 + 8192 + 8192.0 * 2048 + 2048 + 2 * 2 * 2048;
  EXPECT_EQ(model::count_params(m).total, 24 * layer + 2 * 2048 + 2 * 50304.0 * 2048);
  EXPECT_EQ(24 * layer + 2 * 2048 + 2 * 50304.0 * 2048, 1414647808.0);
  // StarCoder 2's use_bias false drops them; a gated activation is an error naming the type.
  auto nobias = parse_model_config(R"({"model_type": "starcoder2", "hidden_act": "gelu_pytorch_tanh", "hidden_size": 256,
    "intermediate_size": 1024, "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 1000, "use_bias": false})", "sc2.json");
  EXPECT_EQ(nobias.mlp, model::MlpKind::gelu);
  EXPECT_FALSE(nobias.qkv_bias || nobias.o_bias || nobias.mlp_bias);
  EXPECT_NE(model_error_of(R"({"model_type": "phi", "hidden_act": "silu", "hidden_size": 256, "intermediate_size": 1024,
    "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 1000})").find("hidden_act: 'silu' for model_type 'phi'"),
            std::string::npos);
}

TEST(ModelFile, PhiAndStarCoder2AsPublished) {
  // microsoft/phi-2's config.json: 2,779,683,840 parameters (the "2.78B" Hugging Face counts).
  // Per layer: q, k, v and dense 2560·2560 + 2560 each (biased), fc1 2560·10240 + 10240, fc2
  // 10240·2560 + 2560, and ONE LayerNorm of 2·2560 (attention and MLP read the same norm's
  // output): 78,671,360; 32 layers, the embedding 51200·2560, the final LayerNorm 2·2560 and an
  // untied, biased LM head 2560·51200 + 51200.
  auto phi = parse_model_config(R"({"architectures": ["PhiForCausalLM"], "model_type": "phi", "hidden_act": "gelu_new",
    "hidden_size": 2560, "intermediate_size": 10240, "num_attention_heads": 32, "num_hidden_layers": 32,
    "max_position_embeddings": 2048, "partial_rotary_factor": 0.4, "tie_word_embeddings": false,
    "vocab_size": 51200, "torch_dtype": "float16"})", "phi-2.json");
  EXPECT_TRUE(phi.parallel_block);
  EXPECT_TRUE(phi.head_bias);
  const double layer = 4 * (2560.0 * 2560 + 2560) + 2560.0 * 10240 + 10240 + 10240.0 * 2560 + 2560 + 2 * 2560;
  EXPECT_EQ(layer, 78671360.0);
  EXPECT_EQ(model::count_params(phi).total, 32 * layer + 51200.0 * 2560 + 2 * 2560 + 2560.0 * 51200 + 51200);
  EXPECT_EQ(32 * layer + 51200.0 * 2560 + 2 * 2560 + 2560.0 * 51200 + 51200, 2779683840.0);
  // bigcode/starcoder2-3b's config.json states no tie_word_embeddings: Starcoder2Config's default
  // ties them. 3,030,371,328 parameters: per layer q and o 3072·3072 + 3072 each, k and v
  // 3072·256 + 256 each (2 KV heads of 128), c_fc 3072·12288 + 12288, c_proj 12288·3072 + 3072,
  // two LayerNorms of 2·3072; 30 layers, the tied embedding 49152·3072 and the final LayerNorm.
  auto sc = parse_model_config(R"({"architectures": ["Starcoder2ForCausalLM"], "model_type": "starcoder2",
    "hidden_act": "gelu_pytorch_tanh", "hidden_size": 3072, "intermediate_size": 12288, "num_attention_heads": 24,
    "num_key_value_heads": 2, "num_hidden_layers": 30, "max_position_embeddings": 16384, "sliding_window": 4096,
    "use_bias": true, "vocab_size": 49152, "torch_dtype": "bfloat16"})", "starcoder2-3b.json");
  EXPECT_TRUE(sc.tie_embeddings);
  EXPECT_FALSE(sc.parallel_block || sc.head_bias);
  const double sc_layer = 2 * (3072.0 * 3072 + 3072) + 2 * (3072.0 * 256 + 256) + 3072.0 * 12288 + 12288 +
                          12288.0 * 3072 + 3072 + 2 * 2 * 3072;
  EXPECT_EQ(model::count_params(sc).total, 30 * sc_layer + 49152.0 * 3072 + 2 * 3072);
  EXPECT_EQ(30 * sc_layer + 49152.0 * 3072 + 2 * 3072, 3030371328.0);
}

TEST(ModelFile, CohereSideBySideTiedAndBiasFree) {
  // CohereForAI/c4ai-command-r-v01's shape: 64 heads of 128 with as many KV heads, an MLP of
  // 22528, no tie key (CohereConfig ties). One LayerNorm a layer without bias (8192 weights), its
  // output read by attention and MLP side by side: per layer 4·8192² + 3·8192·22528 + 8192 =
  // 822,091,776; 40 layers, the tied embedding 256000·8192 and the final norm's 8192:
  // 34,980,831,232, the "35B" of its card.
  auto r = parse_model_config(R"({"model_type": "cohere", "hidden_size": 8192, "intermediate_size": 22528,
    "num_hidden_layers": 40, "num_attention_heads": 64, "num_key_value_heads": 64, "vocab_size": 256000,
    "max_position_embeddings": 8192, "logit_scale": 0.0625, "hidden_act": "silu"})", "command-r.json");
  EXPECT_TRUE(r.parallel_block && r.tie_embeddings);
  EXPECT_EQ(r.norm, model::NormKind::layernorm);
  EXPECT_FALSE(r.norm_bias || r.qk_norm);
  const double layer = 4 * 8192.0 * 8192 + 3 * 8192.0 * 22528 + 8192;
  EXPECT_EQ(model::count_params(r).total, 40 * layer + 256000.0 * 8192 + 8192);
  EXPECT_EQ(40 * layer + 256000.0 * 8192 + 8192, 34980831232.0);
  // c4ai-command-r-plus: use_qk_norm, each head's own q and k weights (96·128 and 8·128 a layer):
  // per layer 2·12288² + 2·12288·1024 + 3·12288·33792 + 12288 + 96·128 + 8·128; 64 layers, the
  // tied embedding 256000·12288 and the final norm: 103,810,674,688, its "104B".
  auto plus = parse_model_config(R"({"model_type": "cohere", "hidden_size": 12288, "intermediate_size": 33792,
    "num_hidden_layers": 64, "num_attention_heads": 96, "num_key_value_heads": 8, "vocab_size": 256000,
    "use_qk_norm": true, "tie_word_embeddings": true})", "command-r-plus.json");
  EXPECT_TRUE(plus.qk_norm && plus.qk_norm_per_head);
  const double plus_layer = 2 * 12288.0 * 12288 + 2 * 12288.0 * 1024 + 3 * 12288.0 * 33792 + 12288 + 96 * 128 + 8 * 128;
  EXPECT_EQ(model::count_params(plus).total, 64 * plus_layer + 256000.0 * 12288 + 12288);
  EXPECT_EQ(64 * plus_layer + 256000.0 * 12288 + 12288, 103810674688.0);
  // Cohere2Config's window: 4096 tokens on three layers in four where the file leaves it out.
  auto r7b = parse_model_config(R"({"model_type": "cohere2", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 256000,
    "max_position_embeddings": 132096})", "command-r7b.json");
  EXPECT_EQ(r7b.sliding_window, 4096);
  EXPECT_EQ(r7b.sliding_layers, 24);
  EXPECT_TRUE(r7b.tie_embeddings && r7b.parallel_block);
}

TEST(ModelFile, StarCoderHasOneKvHead) {
  // bigcode/starcoder's config.json (gpt_bigcode, multi_query true): 48 query heads of 128 and one
  // KV head, so c_attn is 6144·(6144 + 2·128) + 6400; c_proj 6144² + 6144; the MLP 6144·24576 +
  // 24576 and 24576·6144 + 6144; two LayerNorms of 2·6144; 40 layers, the tied embedding
  // 49152·6144, 8192 learned positions of 6144 and the final LayerNorm: 15,517,456,384 (15.5B).
  const std::string body = R"("model_type": "gpt_bigcode", "n_embd": 6144, "n_head": 48, "n_layer": 40, "n_inner": 24576,
    "n_positions": 8192, "vocab_size": 49152, "activation_function": "gelu_pytorch_tanh")";
  auto sc = parse_model_config("{" + body + R"(, "multi_query": true})", "starcoder.json");
  EXPECT_EQ(sc.kv_heads, 1);
  const double layer = 6144.0 * 6400 + 6400 + 6144.0 * 6144 + 6144 + 6144.0 * 24576 + 24576 + 24576.0 * 6144 + 6144 + 4 * 6144;
  EXPECT_EQ(model::count_params(sc).total, 40 * layer + 49152.0 * 6144 + 8192.0 * 6144 + 2 * 6144);
  EXPECT_EQ(40 * layer + 49152.0 * 6144 + 8192.0 * 6144 + 2 * 6144, 15517456384.0);
  // Only GPT-BigCode's flag is read so (Falcon's multi_query means one KV head only together with
  // new_decoder_architecture false: another type's flag is not taken for GPT-BigCode's).
  EXPECT_EQ(parse_model_config(R"({"model_type": "other", "hidden_size": 256, "intermediate_size": 1024,
    "num_hidden_layers": 2, "num_attention_heads": 8, "vocab_size": 1000, "multi_query": true})", "other.json").kv_heads, 8);
  // The class's default is multi-query too; a file that says false has a KV head per head.
  EXPECT_EQ(parse_model_config("{" + body + "}", "sc.json").kv_heads, 1);
  EXPECT_EQ(parse_model_config("{" + body + R"(, "multi_query": false})", "sc.json").kv_heads, 48);
}

TEST(ModelFile, Glm4NormsEachSublayersOutput) {
  // THUDM/GLM-4-9B-0414's shape: q, k and v biased (attention_bias), the output projection not
  // (GlmAttention), four RMSNorms a layer (Glm4DecoderLayer). Per layer q 4096·4096 + 4096, k and
  // v 4096·256 + 256 each, o 4096·4096, the MLP 3·4096·13696, norms 4·4096; 40 layers, untied
  // embeddings 2·151552·4096 and the final norm: 9,400,279,040 (its card's 9.4B).
  auto g = parse_model_config(R"({"model_type": "glm4", "hidden_size": 4096, "intermediate_size": 13696,
    "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128,
    "vocab_size": 151552, "attention_bias": true, "partial_rotary_factor": 0.5, "tie_word_embeddings": false})", "glm4.json");
  EXPECT_TRUE(g.qkv_bias && g.sandwich_norms);
  EXPECT_FALSE(g.o_bias);
  const double layer = 4096.0 * 4096 + 4096 + 2 * (4096.0 * 256 + 256) + 4096.0 * 4096 + 3 * 4096.0 * 13696 + 4 * 4096;
  EXPECT_EQ(model::count_params(g).total, 40 * layer + 2 * 151552.0 * 4096 + 4096);
  EXPECT_EQ(40 * layer + 2 * 151552.0 * 4096 + 4096, 9400279040.0);
  // Glm4Config's q/k/v biases where the file leaves attention_bias out.
  auto bare = parse_model_config(R"({"model_type": "glm4", "hidden_size": 256, "intermediate_size": 512,
    "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000})", "glm4-bare.json");
  EXPECT_TRUE(bare.qkv_bias && bare.sandwich_norms);
  EXPECT_FALSE(bare.o_bias);
}

TEST(ModelFile, OlmoPhiMoeStableLmNormsAndBiases) {
  // allenai/OLMo-2-0325-32B's shape: an RMSNorm over the whole q projection (40 heads of 128:
  // 5120 weights) and one over k (8 KV heads: 1024) besides the layer's two norms. Per layer
  // 2·5120² + 2·5120·1024 + 3·5120·27648 + 2·5120 + 5120 + 1024; 64 layers, untied embeddings
  // 2·100352·5120 and the final norm: 32,234,279,936 (its card's 32B).
  auto olmo = parse_model_config(R"({"model_type": "olmo2", "hidden_size": 5120, "intermediate_size": 27648,
    "num_hidden_layers": 64, "num_attention_heads": 40, "num_key_value_heads": 8, "vocab_size": 100352,
    "tie_word_embeddings": false})", "olmo2.json");
  EXPECT_TRUE(olmo.qk_norm && olmo.qk_norm_whole);
  const double ol = 2 * 5120.0 * 5120 + 2 * 5120.0 * 1024 + 3 * 5120.0 * 27648 + 2 * 5120 + 5120 + 1024;
  EXPECT_EQ(model::count_params(olmo).total, 64 * ol + 2 * 100352.0 * 5120 + 5120);
  EXPECT_EQ(64 * ol + 2 * 100352.0 * 5120 + 5120, 32234279936.0);
  // microsoft/Phi-3.5-MoE-instruct's shape: LayerNorms with bias, q/k/v/o biased, a biased LM
  // head (lm_head_bias). Per layer q and o 4096² + 4096 each, k and v 4096·1024 + 1024 each, the
  // router 4096·16, 16 experts of 3·4096·6400, two LayerNorms of 2·4096; 32 layers, untied
  // embeddings 2·32064·4096, the final LayerNorm 2·4096 and the head's 32064 biases:
  // 41,873,153,344 (its card's 41.9B).
  auto pm = parse_model_config(R"({"model_type": "phimoe", "hidden_size": 4096, "intermediate_size": 6400,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "num_local_experts": 16,
    "num_experts_per_tok": 2, "vocab_size": 32064, "attention_bias": true, "lm_head_bias": true,
    "tie_word_embeddings": false})", "phimoe.json");
  EXPECT_EQ(pm.norm, model::NormKind::layernorm);
  EXPECT_TRUE(pm.head_bias && pm.qkv_bias && pm.o_bias);
  const double pl = 2 * (4096.0 * 4096 + 4096) + 2 * (4096.0 * 1024 + 1024) + 4096.0 * 16 + 16 * 3 * 4096.0 * 6400 + 4 * 4096;
  EXPECT_EQ(model::count_params(pm).total, 32 * pl + 2 * 32064.0 * 4096 + 2 * 4096 + 32064);
  EXPECT_EQ(32 * pl + 2 * 32064.0 * 4096 + 2 * 4096 + 32064, 41873153344.0);
  // stabilityai/stablelm-2-1_6b's shape: LayerNorms with bias and q/k/v biases by use_qkv_bias.
  // Per layer q, k, v 2048² + 2048 each, o 2048², the MLP 3·2048·5632, two LayerNorms of 2·2048;
  // 24 layers, untied embeddings 2·100352·2048 and the final LayerNorm: 1,644,515,328 (1.6B).
  auto st = parse_model_config(R"({"model_type": "stablelm", "hidden_size": 2048, "intermediate_size": 5632,
    "num_hidden_layers": 24, "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 100352,
    "use_qkv_bias": true, "use_parallel_residual": false, "tie_word_embeddings": false})", "stablelm.json");
  EXPECT_TRUE(st.qkv_bias);
  EXPECT_FALSE(st.o_bias || st.parallel_block);
  // StableLM 2 12B's use_parallel_residual: one norm a layer read side by side.
  EXPECT_TRUE(parse_model_config(R"({"model_type": "stablelm", "hidden_size": 256, "intermediate_size": 512,
    "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000, "use_parallel_residual": true})", "st12.json").parallel_block);
  const double sl = 3 * (2048.0 * 2048 + 2048) + 2048.0 * 2048 + 3 * 2048.0 * 5632 + 4 * 2048;
  EXPECT_EQ(model::count_params(st).total, 24 * sl + 2 * 100352.0 * 2048 + 2 * 2048);
  EXPECT_EQ(24 * sl + 2 * 100352.0 * 2048 + 2 * 2048, 1644515328.0);
}

TEST(ModelFile, InternVlAndDeepSeekVl2NameTheirLanguageModelsOtherwise) {
  // InternVL's config nests its language model as llm_config, DeepSeek-VL2's as language_config:
  // read as text_config is, with the top level's dtype; errors name the object.
  const std::string lm = R"({"model_type": "qwen2", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000})";
  for (const char* key : {"llm_config", "language_config"}) {
    auto m = parse_model_config(std::string("{\"torch_dtype\": \"float16\", \"vision_config\": {}, \"") + key + "\": " + lm + "}", "vl.json");
    EXPECT_EQ(m.hidden, 256) << key;
    EXPECT_TRUE(m.qkv_bias) << key;
    EXPECT_EQ(m.weight_dtype, DType::fp16) << key;
  }
  EXPECT_NE(model_error_of(R"({"llm_config": {"num_hidden_layers": 2}})").find("config.json: llm_config: hidden_size: required"),
            std::string::npos);
}

TEST(ModelFile, ErnieNamesItsExpertsKeysItsOwnWay) {
  // baidu/ERNIE-4.5-21B-A3B's config.json: 64 experts of 1536, 6 a token, 2 shared, layer 0 dense
  // (moe_layer_start_index 1), the experts to the last layer (27 of 28). By hand: attention per
  // layer q and o 2560·2560 each, k and v 2560·512 each (15,728,640) and two norms of 2560; the
  // dense layer's MLP 3·2560·12288; an expert layer's router 2560·64, experts 64·3·2560·1536 and
  // shared experts 3·2560·3072; the tied embedding 103424·2560 and the final norm: 21.83B, the
  // "21B" of its name (the routers' correction biases, 64 a layer, are not counted).
  auto m = parse_model_config(R"({"model_type": "ernie4_5_moe", "hidden_size": 2560, "intermediate_size": 12288,
    "moe_intermediate_size": 1536, "num_hidden_layers": 28, "num_attention_heads": 20, "num_key_value_heads": 4,
    "head_dim": 128, "moe_num_experts": 64, "moe_num_shared_experts": 2, "moe_k": 6, "moe_layer_start_index": 1,
    "moe_layer_end_index": 27, "moe_layer_interval": 1, "vocab_size": 103424, "tie_word_embeddings": true,
    "hidden_act": "silu", "use_bias": false})", "ernie.json");
  EXPECT_EQ(m.moe.experts, 64);
  EXPECT_EQ(m.moe.experts_per_token, 6);
  EXPECT_EQ(m.moe.shared_intermediate, 3072);
  EXPECT_EQ(m.moe_layer_count(), 27);
  const double attn = 2 * 2560.0 * 2560 + 2 * 2560.0 * 512 + 2 * 2560;
  const double dense = attn + 3 * 2560.0 * 12288, expert = attn + 2560.0 * 64 + 64 * 3 * 2560.0 * 1536 + 3 * 2560.0 * 3072;
  EXPECT_EQ(model::count_params(m).total, dense + 27 * expert + 103424.0 * 2560 + 2560);
  EXPECT_EQ(dense + 27 * expert + 103424.0 * 2560 + 2560, 21825436160.0);
  // Ernie4_5_MoeConfig's defaults: a file leaving out the tie and the first expert layer still
  // ties its embedding and keeps layer 0 dense.
  auto bare = parse_model_config(R"({"model_type": "ernie4_5_moe", "hidden_size": 256, "intermediate_size": 1024,
    "moe_intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4, "moe_num_experts": 8, "moe_k": 2,
    "vocab_size": 1000})", "ernie-bare.json");
  EXPECT_TRUE(bare.tie_embeddings);
  EXPECT_EQ(bare.moe_layer_count(), 3);
  EXPECT_EQ(bare.moe.shared_experts, 2);  // moe_num_shared_experts 2
  EXPECT_EQ(bare.moe.shared_intermediate, 2 * 128);
  // Dense layers after the last expert layer are refused, as is an expert width without experts
  // (a file whose experts' keys ridgeline does not know is not priced as a dense model).
  EXPECT_NE(model_error_of(R"({"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
    "vocab_size": 100, "moe_num_experts": 8, "moe_k": 2, "moe_layer_end_index": 2})").find("moe_layer_end_index: 2 of 4 layers"),
            std::string::npos);
  EXPECT_NE(model_error_of(R"({"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
    "vocab_size": 100, "n_experts": 8, "moe_intermediate_size": 32})").find("moe_intermediate_size: an expert width but no expert count"),
            std::string::npos);
  EXPECT_NO_THROW(parse_model_config(R"({"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
    "num_attention_heads": 4, "vocab_size": 100, "moe_num_experts": 8, "moe_k": 2, "moe_layer_end_index": -1})", "e.json"));
}

TEST(ModelFile, QwenMoeSharedExpertWidth) {
  auto m = parse_model_config(R"({"model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632,
    "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632, "num_experts": 60,
    "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_attention_heads": 16, "vocab_size": 151936})",
                              "qwen_moe.json");
  EXPECT_EQ(m.moe.experts, 60);
  EXPECT_EQ(m.moe.shared_intermediate, 5632);
  EXPECT_EQ(m.moe.shared_experts, 1);
  EXPECT_EQ(m.moe_layer_count(), 24);
  // Qwen's decoder_sparse_step: layer i has experts when (i + 1) % step == 0
  // (Qwen3MoeDecoderLayer): of 5 layers at step 2, layers 1 and 3, two (every other layer from
  // layer 0 would be three); the others dense at intermediate_size.
  auto sparse = parse_model_config(R"({"model_type": "qwen3_moe", "hidden_size": 256, "intermediate_size": 512,
    "moe_intermediate_size": 128, "num_experts": 8, "num_experts_per_tok": 2, "num_hidden_layers": 5,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1000, "decoder_sparse_step": 2,
    "mlp_only_layers": []})", "qwen3_moe.json");
  EXPECT_EQ(sparse.moe_layer_count(), 2);
  EXPECT_FALSE(sparse.moe_layer(0));
  EXPECT_TRUE(sparse.moe_layer(1));
  EXPECT_TRUE(sparse.moe_layer(3));
  // Its dense layers need their width: a file at step 2 without intermediate_size is refused.
  EXPECT_NE(model_error_of(R"({"model_type": "qwen3_moe", "hidden_size": 64, "moe_intermediate_size": 32, "num_experts": 8,
    "num_experts_per_tok": 2, "num_hidden_layers": 4, "num_attention_heads": 4, "vocab_size": 100, "decoder_sparse_step": 2})")
                .find("intermediate_size: required for the dense layers"),
            std::string::npos);
  // DeepSeek's moe_layer_freq counts from layer 0 (DeepseekV3DecoderLayer: layer_idx >=
  // first_k_dense_replace and layer_idx % moe_layer_freq == 0): of 6 layers, the first dense,
  // every second, layers 2 and 4 (not 1, 3, 5).
  auto ds = parse_model_config(R"({"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 6, "num_attention_heads": 4,
    "vocab_size": 100, "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "first_k_dense_replace": 1,
    "moe_layer_freq": 2})", "ds.json");
  EXPECT_EQ(ds.moe_layer_count(), 2);
  EXPECT_TRUE(ds.moe_layer(2));
  EXPECT_FALSE(ds.moe_layer(1));
  // Dense layers by index are refused, not priced as expert layers.
  EXPECT_NE(model_error_of(R"({"model_type": "qwen3_moe", "hidden_size": 64, "intermediate_size": 128, "moe_intermediate_size": 32,
    "num_experts": 8, "num_experts_per_tok": 2, "num_hidden_layers": 4, "num_attention_heads": 4, "vocab_size": 100,
    "mlp_only_layers": [0, 2]})").find("mlp_only_layers: [0,2]: dense layers by index are not modelled"),
            std::string::npos);
}

TEST(ModelFile, Gpt2Style) {
  auto m = parse_model_config(R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12,
    "n_inner": null, "vocab_size": 50257, "n_positions": 1024})", "gpt2.json");
  EXPECT_EQ(m.intermediate, 3072);
  EXPECT_EQ(m.positions, model::PositionKind::learned);
  // GPT-2 small: 124,439,808 parameters (the Hugging Face model's count).
  EXPECT_EQ(model::count_params(m).total, 124439808.0);
}

TEST(ModelFile, ErrorsNameTheKey) {
  EXPECT_NE(model_error_of(R"({"hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 10, "intermediate_size": 8})")
                .find("num_attention_heads: required"),
            std::string::npos);
  EXPECT_NE(model_error_of(R"({"hidden_size": "big", "num_hidden_layers": 2})").find("hidden_size"), std::string::npos);
  EXPECT_NE(model_error_of(R"({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 3,
    "vocab_size": 10, "intermediate_size": 8})").find("num_key_value_heads"), std::string::npos);
  EXPECT_NE(model_error_of(R"({"hidden_size": 64, "num_hidden_layers": -2})").find("num_hidden_layers"), std::string::npos);
  EXPECT_NE(model_error_of("{not json").find("malformed JSON"), std::string::npos);
  EXPECT_NE(model_error_of("[1, 2]").find("expected a JSON object"), std::string::npos);
  EXPECT_NE(model_error_of(R"({"hidden_size": 1e400})").find("config.json"), std::string::npos);
  EXPECT_NE(model_error_of(R"({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10,
    "num_local_experts": 8, "intermediate_size": 8})").find("num_experts_per_tok"), std::string::npos);
}

TEST(ModelFile, MultimodalCheckpointsReadTheirLanguageModel) {
  // google/gemma-3-4b-it's config.json as published (Gemma3ForConditionalGeneration): the language
  // model nests under text_config, torch_dtype stays at the top (float32 here, to tell it from
  // the default), and text_config states only what differs from Gemma3TextConfig's defaults.
  // Those fill the rest: 8 heads of 256 and 4 KV heads, a vocabulary of 262208, 131072 positions,
  // gated GELU, tied embeddings and five sliding layers in six (34 - floor(34/6) = 29 of the 1024
  // tokens the file gives). The name is the file's path.
  auto m = parse_model_config(R"({"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
    "torch_dtype": "float32", "text_config": {"hidden_size": 2560, "intermediate_size": 10240,
    "model_type": "gemma3_text", "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
    "sliding_window": 1024}, "vision_config": {"hidden_size": 1152, "num_hidden_layers": 27}})", "gemma3.json");
  EXPECT_EQ(m.name, "gemma3.json");
  EXPECT_EQ(m.hidden, 2560);
  EXPECT_EQ(m.layers, 34);
  EXPECT_EQ(m.heads, 8);
  EXPECT_EQ(m.kv_heads, 4);
  EXPECT_EQ(m.head_dim, 256);
  EXPECT_EQ(m.vocab, 262208);
  EXPECT_EQ(m.max_positions, 131072);
  EXPECT_EQ(m.mlp, model::MlpKind::gated_gelu);
  EXPECT_EQ(m.weight_dtype, DType::fp32);
  EXPECT_TRUE(m.qk_norm);
  EXPECT_TRUE(m.tie_embeddings);
  EXPECT_EQ(m.sliding_window, 1024);
  EXPECT_EQ(m.sliding_layers, 34 - 34 / 6);
  // What the file states wins over a default, and a null window is no window (Transformers keeps
  // an explicit None).
  auto small = parse_model_config(R"({"model_type": "gemma3_text", "hidden_size": 1152, "num_hidden_layers": 26,
    "intermediate_size": 6912, "num_attention_heads": 4, "num_key_value_heads": 1, "vocab_size": 262144,
    "sliding_window": null})", "gemma-3-1b.json");
  EXPECT_EQ(small.heads, 4);
  EXPECT_EQ(small.kv_heads, 1);
  EXPECT_EQ(small.head_dim, 256);  // not stated: the default
  EXPECT_EQ(small.vocab, 262144);
  EXPECT_EQ(small.sliding_window, 0);
  EXPECT_EQ(small.sliding_layers, 0);
  // A routing measurement beside text_config (ridgeline's own key) is the text model's.
  auto routed = parse_model_config(R"({"_routing": {"gpus": 2, "tokens_per_step": 100, "imbalance": 1.5,
    "balancer": "none", "source": "a test"}, "text_config": {"hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "vocab_size": 100, "num_local_experts": 4, "num_experts_per_tok": 2,
    "intermediate_size": 32}})", "moe.json");
  EXPECT_EQ(routed.moe.routing.gpus, 2);
  EXPECT_EQ(routed.moe.routing.imbalance, 1.5);
  // No other model type gets defaults: a llama text_config without heads is still an error.
  EXPECT_NE(model_error_of(R"({"text_config": {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 2, "vocab_size": 100}})").find("text_config: num_attention_heads: required key is missing"),
            std::string::npos);
  // The text model's own dtype (either key) comes before the file's.
  auto own = parse_model_config(R"({"torch_dtype": "float32", "text_config": {"dtype": "float16", "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100}})", "own.json");
  EXPECT_EQ(own.weight_dtype, DType::fp16);
  // Its errors name the nested object; only one level is read (no text_config inside it).
  EXPECT_NE(model_error_of(R"({"text_config": {"num_hidden_layers": 2}})").find("config.json: text_config: hidden_size: required"),
            std::string::npos);
  EXPECT_NE(model_error_of(R"({"text_config": {"text_config": {"hidden_size": 8}}})").find("text_config: hidden_size: required"),
            std::string::npos);
}

TEST(ModelFile, LayersNotModelledAreRefusedByName) {
  // A config whose layers are not all attention (linear attention, Mamba), or whose attention is
  // chunked or sparse, is an error naming what, never priced as full attention in every layer.
  const std::string base = R"("hidden_size": 2048, "num_hidden_layers": 4, "num_attention_heads": 16,
    "num_key_value_heads": 2, "vocab_size": 1000, "intermediate_size": 4096)";
  const std::pair<std::string, std::string> cases[] = {
      {R"("model_type": "qwen3_next", "full_attention_interval": 4)", "full_attention_interval"},
      {R"("layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"])",
       "layer_types: a layer of type \"linear_attention\""},
      {R"("model_type": "nemotron_h", "hybrid_override_pattern": "M-M*")", "hybrid_override_pattern"},
      {R"("model_type": "jamba", "attn_layer_period": 8)", "attn_layer_period"},
      {R"("model_type": "mamba2")", "model_type: 'mamba2'"},
      {R"("model_type": "llama4_text", "attention_chunk_size": 8192)", "attention_chunk_size: chunked attention"},
      {R"("model_type": "deepseek_v32", "index_topk": 2048)", "index_topk"},
      {R"("model_type": "minimax", "attn_type_list": [0, 0, 0, 1])", "attn_type_list: a layer of type 0"},
      {R"("model_type": "mllama_text_model", "cross_attention_layers": [3])", "cross_attention_layers"},
      {R"("model_type": "kimi_linear", "linear_attn_config": {"kda_layers": [1, 2, 3]})", "linear_attn_config"},
      {R"("model_type": "recurrent_gemma", "block_types": ["recurrent", "recurrent", "attention"])", "block_types"},
      {R"("model_type": "rwkv7")", "model_type: 'rwkv7'"},
      {R"("model_type": "llama", "num_global_key_value_heads": 1, "global_head_dim": 512)", "num_global_key_value_heads"},
      {R"("model_type": "gemma4_text")", "model_type: 'gemma4_text'"},
      {R"("model_type": "gemma3n_text")", "model_type: 'gemma3n_text'"},
  };
  for (const auto& [extra, want] : cases) {
    const std::string e = model_error_of("{" + base + ", " + extra + "}");
    EXPECT_NE(e.find("config.json: " + want), std::string::npos) << extra << ": " << e;
  }
  // Sliding and full attention layers stay modelled, and so do MiniMax-M2's layers, every one of
  // type 1 (softmax attention).
  EXPECT_NO_THROW(parse_model_config("{" + base + R"(, "model_type": "minimax_m2", "attn_type_list": [1, 1, 1, 1]})", "m2.json"));
  EXPECT_NO_THROW(parse_model_config("{" + base + R"(, "sliding_window": 128, "max_position_embeddings": 4096,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]})", "ok.json"));
}

TEST(ModelFile, CheckpointFormats) {
  auto ds = bundled_model("deepseek-v3");
  EXPECT_TRUE(ds.quantized);
  EXPECT_FALSE(ds.quant.experts_only);
  EXPECT_EQ(ds.quant.dtype, DType::fp8_e4m3);
  EXPECT_DOUBLE_EQ(ds.quant.scale_bits_per_weight, 32.0 / (128 * 128));
  auto oss = bundled_model("gpt-oss-120b");
  EXPECT_TRUE(oss.quant.experts_only);
  EXPECT_EQ(oss.quant.dtype, DType::fp4);
  EXPECT_DOUBLE_EQ(oss.quant.scale_bits_per_weight, 0.25);  // one 8-bit scale per 32
  EXPECT_EQ(oss.sliding_layers, 18);
  EXPECT_EQ(bundled_model("llama-2-7b").weight_dtype, DType::fp16);
}

// Values that used to change the model silently (an adversarial run) name their key.
TEST(ModelFile, NonsenseValuesAreErrors) {
  const std::string base = R"("hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4, "vocab_size": 10)";
  auto err = [&](const std::string& extra) { return model_error_of("{" + base + ", " + extra + "}"); };
  EXPECT_NE(err(R"("intermediate_size": 8, "num_local_experts": 0, "num_experts_per_tok": 2)").find("num_local_experts"), std::string::npos);
  EXPECT_NE(err(R"("intermediate_size": 0)").find("intermediate_size"), std::string::npos);
  // An expert count of 0 is a dense model: the fuzzer's Phi file with num_local_experts 0 and
  // intermediate_size 0 loaded with NaN parameters (its MLP of no width).
  const std::string phi = err(R"("model_type": "phi", "hidden_act": "gelu_new", "intermediate_size": 0, "num_local_experts": 0)");
  EXPECT_NE(phi.find("intermediate_size: 0: a dense model's MLP needs a width"), std::string::npos) << phi;
  const std::string none = err(R"("num_experts": 0)");
  EXPECT_NE(none.find("intermediate_size"), std::string::npos) << none;
  EXPECT_NE(err(R"("intermediate_size": 8, "kv_lora_rank": 0)").find("kv_lora_rank"), std::string::npos);
  EXPECT_NE(err(R"("intermediate_size": 8, "max_position_embeddings": 0)").find("max_position_embeddings"), std::string::npos);
  EXPECT_NE(err(R"("intermediate_size": 8, "sliding_window": 2, "layer_types": ["sliding_attention"])").find("layer_types: 1 entries for 4"),
            std::string::npos);
  const std::string moe = R"("intermediate_size": 8, "num_local_experts": 4, "num_experts_per_tok": 2, )";
  EXPECT_NE(err(moe + R"("first_k_dense_replace": 1000)").find("first_k_dense_replace"), std::string::npos);
  EXPECT_NE(err(moe + R"("moe_layer_freq": 0)").find("moe_layer_freq"), std::string::npos);
  // Expert groups must divide the experts; a token's groups are 1 to the groups.
  EXPECT_NE(err(moe + R"("n_group": 3)").find("n_group: 3 groups of 4 experts"), std::string::npos);
  EXPECT_NE(err(moe + R"("n_group": 0)").find("n_group"), std::string::npos);
  EXPECT_NE(err(moe + R"("n_group": 2, "topk_group": 3)").find("topk_group: 3 of 2 groups"), std::string::npos);
  // 4 experts in 4 groups, a token's 2 from its best 1 group of 1 expert: not enough.
  EXPECT_NE(err(moe + R"("n_group": 4, "topk_group": 1)").find("topk_group: 1 groups of 1 experts hold fewer than the 2"),
            std::string::npos);
  EXPECT_NE(err(R"("intermediate_size": 8, "quantization_config": {"quant_method": "fp8", "weight_block_size": [0, 0]})")
                .find("weight_block_size"),
            std::string::npos);
  EXPECT_NE(err(R"("intermediate_size": 8, "quantization_config": {"quant_method": "bitsandbytes"})").find("'bitsandbytes' is not supported"),
            std::string::npos);
  EXPECT_NE(err(R"("intermediate_size": 8, "quantization_config": {"quant_method": "gptq", "bits": 3})").find("bits"), std::string::npos);
}

// `_routing`: a published routing measurement (docs/serving.md#moe-layouts), read and checked.
TEST(ModelFile, RoutingMeasurement) {
  const model::ModelConfig ds = bundled_model("deepseek-v3");
  // DeepSeek-V3's router: 8 groups of 32 experts, a token's 8 from its best 4 groups, with the
  // correction bias: grouped and biased. Mixtral's has neither.
  EXPECT_EQ(ds.moe.groups, 8);
  EXPECT_EQ(ds.moe.group_topk, 4);
  EXPECT_TRUE(ds.moe.grouped_biased());
  EXPECT_FALSE(bundled_model("mixtral-8x7b").moe.grouped_biased());
  EXPECT_FALSE(bundled_model("gpt-oss-120b").moe.grouped_biased());  // a router bias, no groups
  EXPECT_EQ(ds.moe.routing.gpus, 32);
  EXPECT_EQ(ds.moe.routing.tokens_per_step, 4096);
  EXPECT_EQ(ds.moe.routing.imbalance, 2.564);
  EXPECT_NE(ds.moe.routing.source.find("TensorRT-LLM"), std::string::npos);
  EXPECT_EQ(bundled_model("mixtral-8x7b").moe.routing.gpus, 0);  // none: a balanced router
  const std::string base = R"("hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4, "vocab_size": 10, "intermediate_size": 8)";
  const std::string moe = base + R"(, "num_local_experts": 8, "num_experts_per_tok": 2)";
  auto err = [&](const std::string& fields, const std::string& routing) {
    return model_error_of("{" + fields + R"(, "_routing": )" + routing + "}");
  };
  const std::string ok = R"("tokens_per_step": 64, "imbalance": 1.5, "balancer": "none", "source": "a paper")";
  EXPECT_EQ(err(moe, R"({"gpus": 4, )" + ok + "}"), "");
  EXPECT_NE(err(base, R"({"gpus": 4, )" + ok + "}").find("_routing: a routing measurement on a model without experts"), std::string::npos);
  EXPECT_NE(err(moe, "[4]").find("_routing: [4]: expected an object"), std::string::npos);
  EXPECT_NE(err(moe, R"({"gpus": 3, )" + ok + "}").find("_routing: gpus: 3: expected"), std::string::npos);  // 3 does not divide 8
  EXPECT_NE(err(moe, R"({)" + ok + "}").find("_routing: gpus: missing"), std::string::npos);
  EXPECT_NE(err(moe, R"({"gpus": 4, "tokens_per_step": 0, "imbalance": 1.5, "balancer": "none", "source": "x"})").find("tokens_per_step: 0"),
            std::string::npos);
  // Over 4 GPUs of 2 experts a token puts at most 2 pairs on one: F at most 4·2/2 = 4.
  EXPECT_NE(err(moe, R"({"gpus": 4, "tokens_per_step": 64, "imbalance": 4.5, "balancer": "none", "source": "x"})").find("imbalance: 4.5: expected"),
            std::string::npos);
  EXPECT_NE(err(moe, R"({"gpus": 4, "tokens_per_step": 64, "imbalance": 1.5, "balancer": "eplb", "source": "x"})").find("balancer: \"eplb\""),
            std::string::npos);
  EXPECT_NE(err(moe, R"({"gpus": 4, "tokens_per_step": 64, "imbalance": 1.5, "balancer": "none"})").find("source: required"), std::string::npos);
}

// GPTQ and AWQ checkpoints: int4 (or int8) weights and, per group of 128 input rows of a
// column, an fp16 scale and a 4-bit zero point: (16 + 4) / 128 bits more per weight.
TEST(ModelFile, GroupQuantisedCheckpoints) {
  const std::string base = R"({"hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4, "vocab_size": 10, "intermediate_size": 8, )";
  const model::ModelConfig g = parse_model_config(base + R"("quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}})", "g.json");
  EXPECT_TRUE(g.quantized);
  EXPECT_EQ(g.quant.dtype, DType::int4);
  EXPECT_DOUBLE_EQ(g.quant.scale_bits_per_weight, 20.0 / 128);
  const model::ModelConfig a = parse_model_config(base + R"("quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 64}})", "a.json");
  EXPECT_DOUBLE_EQ(a.quant.scale_bits_per_weight, 20.0 / 64);
  const model::ModelConfig c = parse_model_config(base + R"("quantization_config": {"quant_method": "gptq", "bits": 8, "group_size": -1}})", "c.json");
  EXPECT_EQ(c.quant.dtype, DType::int8);
  EXPECT_EQ(c.quant.scale_bits_per_weight, 0);
}

}  // namespace
}  // namespace ridgeline::io
