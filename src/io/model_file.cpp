#include "ridgeline/io/model_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ridgeline/core/error.hpp"
#include "ridgeline/core/text.hpp"
#include "ridgeline/io/embedded.hpp"

namespace ridgeline::io {

namespace {

using nlohmann::json;
using i64 = std::int64_t;
constexpr size_t kMaxConfigBytes = 4 << 20;
constexpr i64 kMaxDim = i64{1} << 24;  // 16.7M: no real dimension comes near

class ConfigReader {
 public:
  ConfigReader(const json& j, std::string_view source) : j_(j), source_(source) {}

  [[noreturn]] void fail(std::string_view key, const std::string& why) const {
    throw InputError(fmt::format("{}: {}: {}", source_, key, why));
  }
  bool has(std::string_view key) const { return j_.contains(key) && !j_.at(std::string(key)).is_null(); }

  // The first present key of `keys`, as a positive integer.
  std::optional<i64> integer(std::initializer_list<std::string_view> keys, i64 max = kMaxDim) const {
    for (auto k : keys) {
      if (!has(k)) continue;
      const json& v = j_.at(std::string(k));
      double d = 0;
      if (v.is_number_integer() || v.is_number_unsigned()) {
        d = v.get<double>();
      } else if (v.is_number_float() && std::isfinite(v.get<double>()) && std::floor(v.get<double>()) == v.get<double>()) {
        d = v.get<double>();  // 4096.0; the range check below bounds it before any cast
      } else {
        fail(k, fmt::format("expected a positive integer, got {}", v.dump()));
      }
      if (!(d >= 0) || d > static_cast<double>(max)) fail(k, fmt::format("{} is out of range: expected 0 to {}", v.dump(), max));
      return static_cast<i64>(d);
    }
    return std::nullopt;
  }
  i64 required(std::initializer_list<std::string_view> keys) const {
    auto v = integer(keys);
    if (!v) fail(*keys.begin(), "required key is missing");
    if (*v <= 0) fail(*keys.begin(), "must be at least 1");
    return *v;
  }
  bool boolean(std::string_view key, bool fallback) const {
    if (!has(key)) return fallback;
    const json& v = j_.at(std::string(key));
    if (!v.is_boolean()) fail(key, fmt::format("expected true or false, got {}", v.dump()));
    return v.get<bool>();
  }
  std::string string(std::string_view key, std::string fallback) const {
    if (!has(key)) return fallback;
    const json& v = j_.at(std::string(key));
    if (!v.is_string()) fail(key, fmt::format("expected a string, got {}", v.dump()));
    return v.get<std::string>();
  }
  // A finite number in [lo, hi].
  double number(std::string_view key, double lo, double hi, std::string_view expected) const {
    if (!has(key)) fail(key, "required key is missing");
    const json& v = j_.at(std::string(key));
    if (!v.is_number() || !(v.get<double>() >= lo && v.get<double>() <= hi)) fail(key, fmt::format("{}: expected {}", v.dump(), expected));
    return v.get<double>();
  }
  const json& at(std::string_view key) const { return j_.at(std::string(key)); }

 private:
  const json& j_;
  std::string source_;
};

DType torch_dtype(const ConfigReader& r) {
  std::string t = r.string("torch_dtype", r.string("dtype", "bfloat16"));
  if (t == "bfloat16") return DType::bf16;
  if (t == "float16") return DType::fp16;
  if (t == "float32") return DType::fp32;
  r.fail("torch_dtype", fmt::format("'{}' is not supported: expected bfloat16, float16 or float32", t));
}

void read_quantization(const ConfigReader& r, model::ModelConfig& m) {
  if (!r.has("quantization_config")) return;
  const json& q = r.at("quantization_config");
  if (!q.is_object()) r.fail("quantization_config", "expected an object");
  std::string method = q.value("quant_method", std::string());
  if (method == "mxfp4") {
    // OCP microscaling: 4-bit elements, one 8-bit shared exponent per 32.
    m.quantized = true;
    m.quant = {true, DType::fp4, 8.0 / 32};
  } else if (method == "fp8") {
    m.quantized = true;
    m.quant = {false, DType::fp8_e4m3, 0};
    if (q.contains("fmt") && q["fmt"].is_string() && q["fmt"] == "e5m2") m.quant.dtype = DType::fp8_e5m2;
    // One fp32 scale per weight block (deepseek: 128 x 128).
    if (q.contains("weight_block_size")) {
      const json& wb = q["weight_block_size"];
      const bool ok = wb.is_array() && wb.size() == 2 && wb[0].is_number_integer() && wb[1].is_number_integer() &&
                      wb[0].get<double>() >= 1 && wb[1].get<double>() >= 1 && wb[0].get<double>() <= 65536 && wb[1].get<double>() <= 65536;
      if (!ok) r.fail("quantization_config.weight_block_size", fmt::format("{}: expected two positive integers", wb.dump()));
      m.quant.scale_bits_per_weight = 32.0 / (wb[0].get<double>() * wb[1].get<double>());
    }
  } else if (method == "gptq" || method == "awq") {
    // Group-quantised integer weights (AutoGPTQ, AutoAWQ): `bits` per weight and, per group of
    // `group_size` input rows of a column, an fp16 scale and a zero point of `bits` bits
    // (stored packed even for symmetric GPTQ). group_size -1: one group per column, whose
    // scale is negligible against the column's weights.
    const std::string where = "quantization_config";
    const json bits = q.value("bits", json(4)), group = q.value("group_size", q.value("q_group_size", json(128)));
    if (!bits.is_number_integer() || (bits.get<long long>() != 4 && bits.get<long long>() != 8)) {
      r.fail(where + ".bits", fmt::format("{}: expected 4 or 8 for {}", bits.dump(), method));
    }
    if (!group.is_number_integer() || (group.get<long long>() < 1 && group.get<long long>() != -1) || group.get<long long>() > 65536) {
      r.fail(where + ".group_size", fmt::format("{}: expected a positive group size or -1", group.dump()));
    }
    const double b = static_cast<double>(bits.get<long long>()), g = static_cast<double>(group.get<long long>());
    m.quantized = true;
    m.quant = {false, b == 4 ? DType::int4 : DType::int8, g > 0 ? (16 + b) / g : 0};
  } else {
    r.fail("quantization_config.quant_method", fmt::format("'{}' is not supported: expected fp8, mxfp4, gptq or awq (or leave "
                                                           "quantization_config out and give --weight-dtype)", method));
  }
}

// "ORG/NAME": a Hugging Face repository id (one slash, no spaces, not a path).
bool repo_id(std::string_view s) {
  const std::size_t slash = s.find('/');
  if (slash == 0 || slash == std::string_view::npos || slash + 1 == s.size() || s.find('/', slash + 1) != std::string_view::npos) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("-_./").find(c) != std::string_view::npos; }) &&
         s.find("..") == std::string_view::npos && s.front() != '.';
}

// `_routing`: a published measurement of the router's expert-parallel load (model::RoutingMeasurement,
// docs/serving.md#moe-layouts): {"gpus", "tokens_per_step", "imbalance", "balancer": "none", "source"}.
void read_routing(const json& j, std::string_view source, model::ModelConfig& m) {
  const auto it = j.find("_routing");
  if (it == j.end() || it->is_null()) return;
  const std::string where = fmt::format("{}: _routing", source);
  if (!m.is_moe()) throw InputError(fmt::format("{}: a routing measurement on a model without experts: expected none", where));
  if (!it->is_object()) throw InputError(fmt::format("{}: {}: expected an object", where, it->dump()));
  const ConfigReader r(*it, where);
  model::RoutingMeasurement& g = m.moe.routing;
  const auto gpus = r.integer({"gpus"});
  if (!gpus || *gpus < 2 || *gpus > m.moe.experts || m.moe.experts % *gpus != 0) {
    r.fail("gpus", fmt::format("{}: expected the expert-parallel GPUs of the measurement, 2 to the {} experts and dividing them",
                               r.has("gpus") ? r.at("gpus").dump() : "missing", m.moe.experts));
  }
  g.gpus = *gpus;
  g.tokens_per_step = r.number("tokens_per_step", 1, 1e9, "the tokens routed per step over the GPUs, 1 to 1e9");
  const double G = static_cast<double>(g.gpus), k = static_cast<double>(m.moe.experts_per_token);
  const double cap = G * std::min(k, static_cast<double>(m.moe.experts) / G) / k;
  g.imbalance = r.number("imbalance", 1, cap, fmt::format("the busiest GPU's pairs over the mean, 1 to {:g} (every token's pairs on one GPU)", cap));
  if (r.string("balancer", "") != "none") {
    r.fail("balancer", fmt::format("{}: expected \"none\" (a measurement without a load balancer: the router's own skew)",
                                   r.has("balancer") ? r.at("balancer").dump() : "missing"));
  }
  g.source = r.string("source", "");
  if (g.source.empty()) r.fail("source", "required: where the measurement was published");
}

// The repository a config comes from: `_source` of a bundled file ("ORG/NAME config.json",
// alone or before a colon and a note), else `_name_or_path` when it is a repository id.
std::string hf_repo(const json& j) {
  constexpr std::string_view kSuffix = " config.json";
  if (const auto it = j.find("_source"); it != j.end() && it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    const std::size_t at = s.find(kSuffix);
    const std::size_t end = at == std::string::npos ? at : at + kSuffix.size();
    if (at != std::string::npos && (end == s.size() || s[end] == ':')) {
      const std::string id = s.substr(0, at);
      if (repo_id(id)) return id;
    }
  }
  if (const auto it = j.find("_name_or_path"); it != j.end() && it->is_string() && repo_id(it->get_ref<const std::string&>())) return it->get<std::string>();
  return "";
}

// Layers ridgeline does not price: a config that has them is refused by name, never priced
// as if its every layer were attention (docs/models.md#what-a-config-may-hold).
void refuse_unmodelled_layers(const ConfigReader& r, const std::string& type) {
  // Linear attention (Qwen3-Next's Gated DeltaNet, Kimi Linear, MiniMax-Text-01's lightning
  // attention) and recurrent or state-space layers (Mamba in Jamba, Nemotron-H, Falcon-H1, Zamba;
  // RecurrentGemma; RWKV) keep a fixed state, not a KV cache.
  if (r.has("layer_types") && r.at("layer_types").is_array()) {
    for (const auto& lt : r.at("layer_types")) {
      if (!lt.is_string() || (lt != "full_attention" && lt != "sliding_attention")) {
        r.fail("layer_types", fmt::format("a layer of type {}: only full_attention and sliding_attention layers are modelled", lt.dump()));
      }
    }
  }
  for (const char* key : {"full_attention_interval", "linear_num_value_heads", "linear_attn_config"}) {
    if (r.has(key)) r.fail(key, fmt::format("model_type '{}' mixes linear-attention layers with attention: not modelled", type));
  }
  // MiniMax's per-layer kinds: 0 lightning (linear) attention, 1 softmax attention (MiniMax-M2's
  // every layer, modelled).
  if (r.has("attn_type_list") && r.at("attn_type_list").is_array()) {
    for (const auto& a : r.at("attn_type_list")) {
      if (!(a.is_number_integer() && a.get<long long>() == 1)) {
        r.fail("attn_type_list", fmt::format("a layer of type {} (0: linear attention): only softmax attention (1) is modelled", a.dump()));
      }
    }
  }
  for (const char* key : {"hybrid_override_pattern", "layers_block_type", "attn_layer_period", "mamba_d_state", "ssm_cfg", "block_types"}) {
    if (r.has(key)) r.fail(key, fmt::format("model_type '{}' has recurrent or state-space layers: not modelled", type));
  }
  // Llama 3.2 Vision's cross-attention layers attend to the image's tokens, not the text's.
  if (r.has("cross_attention_layers")) r.fail("cross_attention_layers", "cross-attention layers (to an image's tokens) are not modelled");
  // Gemma 3n (AltUp, per-layer embeddings, a sparse MLP) and Gemma 4 (global layers of their
  // own shape) by type too: a file of theirs that leaves those keys to the class is still them.
  if (type.rfind("gemma3n", 0) == 0 || type.rfind("gemma4", 0) == 0) {
    r.fail("model_type", fmt::format("'{}' has layers of shapes ridgeline does not model (Gemma 3n's AltUp and per-layer "
                                     "embeddings, Gemma 4's global layers)", type));
  }
  if (type.find("mamba") != std::string::npos || type.rfind("rwkv", 0) == 0 || type == "qwen3_next") {
    r.fail("model_type", fmt::format("'{}' is not a transformer of attention layers: not modelled", type));
  }
  // Llama 4's chunked attention (each position sees its chunk of attention_chunk_size only) is
  // neither full nor a sliding window.
  if (r.has("attention_chunk_size")) r.fail("attention_chunk_size", "chunked attention (Llama 4) is not modelled");
  // Gemma 4's global layers keep KV heads and a head width of their own.
  for (const char* key : {"num_global_key_value_heads", "global_head_dim"}) {
    if (r.has(key)) r.fail(key, "layers with KV heads or a head width of their own (Gemma 4's global layers) are not modelled");
  }
  // DeepSeek's sparse attention (V3.2: an indexer picks index_topk keys of each query's context).
  if (r.has("index_topk")) r.fail("index_topk", "DeepSeek's sparse attention (an indexer's top-k keys) is not modelled");
}

// What Transformers' config class fills in for a key its checkpoint's file leaves out, for the
// model types whose published files rely on it: Transformers saves a nested config (a multimodal
// checkpoint's text_config) with only the keys that differ from the class's defaults, so
// google/gemma-3-4b-it and -12b-it state neither their heads' width nor their vocabulary.
// Gemma3TextConfig.__init__ (huggingface/transformers src/transformers/models/gemma3/
// configuration_gemma3.py): vocab_size 262208, head_dim 256, 8 heads and 4 KV heads,
// hidden_activation gelu_pytorch_tanh, max_position_embeddings 131072, tied embeddings, a
// 4096-token window on five layers in six (sliding_window_pattern 6); and, for a file that
// leaves even its size out, the class's own 2304 x 26 layers with a 9216-wide MLP.
// The same for a default that differs from what ridgeline assumes of any config, where a
// file leaving the key out would be priced as another model: Starcoder2Config's tied embeddings
// (configuration_starcoder2.py: tie_word_embeddings True); Ernie4_5_MoeConfig's tied embeddings,
// first expert layer and two shared experts (configuration_ernie4_5_moe.py: tie_word_embeddings
// True, moe_layer_start_index 1, moe_num_shared_experts 2); CohereConfig's and Cohere2Config's
// tied embeddings and Cohere2's 4096-token window on three layers in four
// (configuration_cohere.py, configuration_cohere2.py: sliding_window 4096, sliding_window_pattern
// 4); GPTBigCodeConfig's multi-query attention (configuration_gpt_bigcode.py: multi_query True,
// one KV head); GlmConfig's and Glm4Config's biased q, k and v (attention_bias True).
const json* class_defaults(std::string_view type) {
  static const std::pair<std::string_view, json> table[] = {
      {"gemma3_text", {{"vocab_size", 262208}, {"hidden_size", 2304}, {"intermediate_size", 9216},
                       {"num_hidden_layers", 26}, {"num_attention_heads", 8}, {"num_key_value_heads", 4},
                       {"head_dim", 256}, {"hidden_activation", "gelu_pytorch_tanh"},
                       {"max_position_embeddings", 131072}, {"tie_word_embeddings", true},
                       {"sliding_window", 4096}, {"sliding_window_pattern", 6}}},
      {"starcoder2", {{"tie_word_embeddings", true}}},
      {"ernie4_5_moe", {{"tie_word_embeddings", true}, {"moe_layer_start_index", 1}, {"moe_num_shared_experts", 2}}},
      {"cohere", {{"tie_word_embeddings", true}}},
      {"cohere2", {{"tie_word_embeddings", true}, {"sliding_window", 4096}, {"sliding_window_pattern", 4}}},
      {"gpt_bigcode", {{"multi_query", true}}},
      {"glm", {{"attention_bias", true}}},
      {"glm4", {{"attention_bias", true}}},
  };
  for (const auto& [name, defaults] : table) {
    if (name == type) return &defaults;
  }
  return nullptr;
}

model::ModelConfig parse(const json& j, std::string_view source, bool nested = false);

// A config with its model type's class defaults under the keys it leaves out (a key present as
// null stays null: Transformers passes it to the class, which keeps it, so a null
// sliding_window is no window).
model::ModelConfig parse_with_defaults(const json& j, std::string_view source, bool nested) {
  const auto type = j.is_object() ? j.find("model_type") : j.end();
  const json* defaults = type != j.end() && type->is_string() ? class_defaults(type->get_ref<const std::string&>()) : nullptr;
  if (defaults == nullptr) return parse(j, source, nested);
  json filled = j;
  for (const auto& [key, value] : defaults->items()) {
    if (!filled.contains(key)) filled[key] = value;
  }
  return parse(filled, source, nested);
}

model::ModelConfig parse(const json& j, std::string_view source, bool nested) {
  if (!j.is_object()) throw InputError(fmt::format("{}: expected a JSON object (a Hugging Face config.json)", source));
  // A multimodal checkpoint (Gemma 3, Llama 4, Llama 3.2 Vision) nests its language model under
  // text_config: that model is read, with the file's own quantisation, dtype and name where
  // text_config leaves them out (and refused as any config is: Llama 4's chunked attention,
  // 3.2 Vision's cross-attention). The vision tower is not priced. InternVL names that object
  // llm_config, DeepSeek-VL2 language_config.
  const char* lm_key = nullptr;
  for (const char* key : {"text_config", "llm_config", "language_config"}) {
    if (lm_key == nullptr && j.contains(key) && j.at(key).is_object()) lm_key = key;
  }
  if (!nested && !j.contains("hidden_size") && !j.contains("n_embd") && !j.contains("d_model") && lm_key != nullptr) {
    json text = j.at(lm_key);
    for (const char* key : {"quantization_config", "_name_or_path", "_source", "tie_word_embeddings", "_routing"}) {
      if (j.contains(key) && !text.contains(key)) text[key] = j.at(key);
    }
    if (!text.contains("torch_dtype") && !text.contains("dtype")) {  // (either key names it: the text's own first)
      for (const char* key : {"torch_dtype", "dtype"}) {
        if (j.contains(key)) text[key] = j.at(key);
      }
    }
    model::ModelConfig m = parse_with_defaults(text, fmt::format("{}: {}", source, lm_key), true);
    m.name = std::string(source);
    return m;
  }
  ConfigReader r(j, source);
  model::ModelConfig m;
  m.name = std::string(source);
  m.model_type = r.string("model_type", "unknown");
  const std::string& t = m.model_type;
  refuse_unmodelled_layers(r, t);
  const bool gpt2 = t == "gpt2" || r.has("n_embd");

  m.hidden = r.required({"hidden_size", "n_embd", "d_model"});
  m.layers = r.required({"num_hidden_layers", "n_layer", "num_layers"});
  if (m.layers > 65536) r.fail("num_hidden_layers", fmt::format("{} layers: expected at most 65536", m.layers));
  m.heads = r.required({"num_attention_heads", "n_head"});
  m.kv_heads = r.integer({"num_key_value_heads"}).value_or(m.heads);
  // GPT-BigCode (StarCoder, SantaCoder) names multi-query attention by a flag: one KV head.
  if (t == "gpt_bigcode" && !r.has("num_key_value_heads") && r.boolean("multi_query", false)) m.kv_heads = 1;
  if (m.kv_heads <= 0) r.fail("num_key_value_heads", "must be at least 1");
  if (m.heads % m.kv_heads != 0) {
    r.fail("num_key_value_heads", fmt::format("{} does not divide num_attention_heads {}", m.kv_heads, m.heads));
  }
  m.vocab = r.required({"vocab_size"});
  m.max_positions = r.integer({"max_position_embeddings", "n_positions", "n_ctx"}).value_or(0);
  // Present and 0 would switch the context check off: not a context length.
  if (m.max_positions == 0 && (r.has("max_position_embeddings") || r.has("n_positions") || r.has("n_ctx"))) {
    r.fail("max_position_embeddings", "0 tokens: expected the model's context length (or leave the key out)");
  }
  if (auto hd = r.integer({"head_dim"}); hd && *hd > 0) {
    m.head_dim = *hd;
  } else {
    if (m.hidden % m.heads != 0) {
      r.fail("num_attention_heads", fmt::format("{} does not divide the hidden size {} and no head_dim is given", m.heads, m.hidden));
    }
    m.head_dim = m.hidden / m.heads;
  }

  if (gpt2) {
    m.mlp = model::MlpKind::gelu;
    m.norm = model::NormKind::layernorm;
    m.positions = model::PositionKind::learned;
    m.intermediate = r.integer({"n_inner"}).value_or(0);
    if (m.intermediate == 0) m.intermediate = 4 * m.hidden;
    m.qkv_bias = m.o_bias = m.mlp_bias = true;
    m.tie_embeddings = r.boolean("tie_word_embeddings", true);
    if (m.max_positions == 0) r.fail("n_positions", "required key is missing (learned positions need a table size)");
  } else {
    // Experts in place of the MLP may leave intermediate_size out; an expert count of 0 is a dense
    // model, whose MLP needs its width (a Phi file with num_local_experts 0 and intermediate_size 0
    // loaded with NaN parameters while a present key was enough).
    const bool moe_only = r.integer({"num_local_experts", "n_routed_experts", "num_experts"}).value_or(0) > 0;
    auto inter = r.integer({"intermediate_size"});
    if (!inter && !moe_only) r.fail("intermediate_size", "required key is missing");
    if (inter && *inter == 0 && !moe_only) r.fail("intermediate_size", "0: a dense model's MLP needs a width");
    m.intermediate = inter.value_or(0);
    std::string act = r.string("hidden_activation", r.string("hidden_act", "silu"));
    if (act == "silu" || act == "swish") m.mlp = model::MlpKind::gated_silu;
    else if (act.rfind("gelu", 0) == 0) m.mlp = model::MlpKind::gated_gelu;
    else r.fail("hidden_act", fmt::format("'{}' is not supported: expected silu or gelu", act));
    // GPT-NeoX (Pythia), StarCoder 2 and Phi-1/1.5/2: one GELU between two projections (fc,
    // proj: not gated), LayerNorm, and biases on every projection unless the file says not
    // (Transformers' GPTNeoXMLP and GPTNeoXAttention's attention_bias, Starcoder2's use_bias,
    // PhiMLP and PhiAttention).
    const bool plain_gelu = t == "gpt_neox" || t == "starcoder2" || t == "phi";
    if (plain_gelu) {
      if (m.mlp != model::MlpKind::gated_gelu) {
        r.fail("hidden_act", fmt::format("'{}' for model_type '{}': expected a GELU (its MLP is fc, GELU, proj)", act, t));
      }
      m.mlp = model::MlpKind::gelu;
      m.norm = model::NormKind::layernorm;
      // Phi-1/1.5/2: one LayerNorm feeds attention and MLP side by side (PhiDecoderLayer), and
      // the LM head has a bias (PhiForCausalLM).
      m.parallel_block = m.head_bias = t == "phi";
    }
    const bool biased = plain_gelu && r.boolean("use_bias", true);
    const bool gemma = t.rfind("gemma", 0) == 0;
    m.tie_embeddings = r.boolean("tie_word_embeddings", gemma);
    // The Qwen families by prefix, their vision-language models' text types too (qwen2_5_vl,
    // qwen2_5_vl_text, qwen3_vl_text, qwen3_vl_moe_text): Qwen 2's attention has q, k and v
    // biases (Transformers' Qwen2Attention, Qwen2MoeAttention, Qwen2_5_VLAttention: bias=True),
    // Qwen 3's an RMSNorm over each head's q and k (Qwen3Attention, Qwen3VLTextAttention), as
    // Gemma 3's.
    const bool qwen2 = t.rfind("qwen2", 0) == 0, qwen3 = t.rfind("qwen3", 0) == 0;
    m.qkv_bias = r.boolean("attention_bias", qwen2 || biased);
    m.o_bias = r.boolean("attention_bias", biased);
    m.mlp_bias = r.boolean("mlp_bias", biased);
    m.qk_norm = qwen3 || t == "gemma3" || t == "gemma3_text";
    // Gemma 2 and 3 normalise each sublayer's output before the residual add (Gemma2DecoderLayer,
    // Gemma3DecoderLayer: post_attention_layernorm after attention, pre_ and
    // post_feedforward_layernorm around the MLP); Gemma 1 does not.
    m.sandwich_norms = t == "gemma2" || t == "gemma3" || t == "gemma3_text";
    // Every Gemma scales its embedding by √hidden (GemmaModel: hidden_states * normalizer).
    m.embed_scale = gemma;
    m.attention_sinks = t == "gpt_oss";
    // Cohere (Command R, R+, A): attention and MLP side by side on one LayerNorm's output
    // (CohereDecoderLayer), a LayerNorm without bias (CohereLayerNorm), and with use_qk_norm a
    // LayerNorm on q and k whose weights are each head's own ([heads, head_dim]).
    if (t == "cohere" || t == "cohere2") {
      m.parallel_block = true;
      m.norm = model::NormKind::layernorm;
      m.norm_bias = false;
      m.qk_norm = m.qk_norm_per_head = r.boolean("use_qk_norm", false);
    }
    // The GLM family's attention output projection has no bias whatever attention_bias says
    // (GlmAttention, Glm4MoeAttention: o_proj bias=False); GLM-4-0414 (glm4) normalises each
    // sublayer's output before its residual add, as Gemma 2 (Glm4DecoderLayer:
    // post_self_attn_layernorm, post_mlp_layernorm).
    if (t.rfind("glm", 0) == 0) m.o_bias = false;
    if (t == "glm4" || t == "glm4v" || t == "glm4v_text") m.sandwich_norms = true;
    // OLMo 2 and 3, OLMoE: an RMSNorm over the whole q projection and one over k (Olmo2Attention:
    // q_norm of heads·head_dim weights, k_norm of kv_heads·head_dim).
    if (t == "olmo2" || t == "olmo3" || t == "olmoe") m.qk_norm = m.qk_norm_whole = true;
    // Phi-3.5-MoE: LayerNorm with bias (PhimoeDecoderLayer), the LM head's bias by lm_head_bias.
    if (t == "phimoe") {
      m.norm = model::NormKind::layernorm;
      m.head_bias = r.boolean("lm_head_bias", false);
    }
    // StableLM: LayerNorm with bias, q/k/v biases by use_qkv_bias, and with use_parallel_residual
    // one norm whose output attention and MLP read side by side (StableLmDecoderLayer). (StableLM
    // 2 12B's qk_layernorm, bias-free per-head norms of q and k, is not counted.)
    if (t == "stablelm") {
      m.norm = model::NormKind::layernorm;
      if (!r.has("attention_bias")) m.qkv_bias = r.boolean("use_qkv_bias", false);
      m.o_bias = false;  // (StableLmAttention's o_proj: bias=False)
      m.parallel_block = r.boolean("use_parallel_residual", false);
    }
  }

  // Sliding-window attention: which layers use it.
  auto window = r.integer({"sliding_window"}, i64{1} << 40);
  bool use_window = window && *window > 0 && r.boolean("use_sliding_window", true);
  if (use_window && m.max_positions > 0 && *window >= m.max_positions) use_window = false;
  if (use_window) {
    m.sliding_window = *window;
    if (r.has("layer_types") && r.at("layer_types").is_array()) {
      if (static_cast<i64>(r.at("layer_types").size()) != m.layers) {
        r.fail("layer_types", fmt::format("{} entries for {} layers: expected one per layer", r.at("layer_types").size(), m.layers));
      }
      for (const auto& lt : r.at("layer_types")) m.sliding_layers += (lt.is_string() && lt == "sliding_attention") ? 1 : 0;
    } else if (t == "gemma2") {
      m.sliding_layers = m.layers / 2;
    } else if (auto pattern = r.integer({"sliding_window_pattern"}); pattern && *pattern > 0) {
      m.sliding_layers = m.layers - m.layers / *pattern;
    } else if (t.rfind("qwen2", 0) == 0 || t.rfind("qwen3", 0) == 0) {
      m.sliding_layers = m.layers - r.integer({"max_window_layers"}).value_or(m.layers);
    } else {
      m.sliding_layers = m.layers;
    }
    if (m.sliding_layers <= 0) m.sliding_window = m.sliding_layers = 0;
  }

  // Mixture of experts.
  // (ERNIE 4.5 names its experts' keys moe_*: moe_num_experts, moe_k, moe_num_shared_experts,
  // moe_layer_start_index, moe_layer_interval.)
  m.moe.experts = r.integer({"num_local_experts", "n_routed_experts", "num_experts", "moe_num_experts"}).value_or(0);
  if (m.moe.experts > 65536) r.fail("num_local_experts", fmt::format("{} experts: expected at most 65536", m.moe.experts));
  if (m.moe.experts == 0 && r.integer({"moe_intermediate_size"}).value_or(0) > 0) {
    r.fail("moe_intermediate_size", "an expert width but no expert count (num_local_experts, n_routed_experts, num_experts or "
                                    "moe_num_experts): expected both or neither");
  }
  if (m.moe.experts == 0 && r.integer({"num_experts_per_tok", "experts_per_token", "moe_k"}).value_or(0) > 0) {
    r.fail("num_local_experts", "0 experts but num_experts_per_tok routes tokens to some: expected at least 1 (or leave both out)");
  }
  if (m.moe.experts > 0) {
    m.moe.experts_per_token = r.integer({"num_experts_per_tok", "experts_per_token", "moe_k"}).value_or(0);
    if (m.moe.experts_per_token <= 0) r.fail("num_experts_per_tok", "required for a mixture of experts");
    if (m.moe.experts_per_token > m.moe.experts) {
      r.fail("num_experts_per_tok", fmt::format("{} exceeds the {} experts", m.moe.experts_per_token, m.moe.experts));
    }
    m.moe.intermediate = r.integer({"moe_intermediate_size"}).value_or(m.intermediate);
    if (m.moe.intermediate <= 0) r.fail("moe_intermediate_size", "required for a mixture of experts");
    m.moe.shared_experts = r.integer({"n_shared_experts", "moe_num_shared_experts"}).value_or(0);
    m.moe.shared_intermediate = r.integer({"shared_expert_intermediate_size"}).value_or(m.moe.shared_experts * m.moe.intermediate);
    if (m.moe.shared_intermediate > 0 && m.moe.shared_experts == 0) m.moe.shared_experts = 1;
    m.moe.first_dense_layers = r.integer({"first_k_dense_replace", "moe_layer_start_index"}).value_or(0);
    if (m.moe.first_dense_layers > m.layers) {
      r.fail("first_k_dense_replace", fmt::format("{} dense layers of {}: expected at most the layers", m.moe.first_dense_layers, m.layers));
    }
    const i64 freq = r.integer({"moe_layer_freq", "decoder_sparse_step", "moe_layer_interval"}).value_or(1);
    // ERNIE's last expert layer: dense layers after it are not modelled (its files end the
    // experts at the last layer).
    // (-1, Transformers' default, is the last layer.)
    const bool to_last = r.has("moe_layer_end_index") && r.at("moe_layer_end_index").is_number_integer() &&
                         r.at("moe_layer_end_index").get<long long>() == -1;
    if (const auto end = to_last ? std::nullopt : r.integer({"moe_layer_end_index"}); end && *end < m.layers - 1) {
      r.fail("moe_layer_end_index", fmt::format("{} of {} layers: dense layers after the last expert layer are not modelled", *end, m.layers));
    }
    if (freq == 0) r.fail("moe_layer_freq", "0: expected an expert layer every N >= 1 layers");
    m.moe.layer_freq = freq;
    m.moe.freq_from_one = r.has("decoder_sparse_step") || r.has("moe_layer_interval");
    // Qwen's dense layers by index (mlp_only_layers): not modelled, refused rather than priced as
    // expert layers.
    if (r.has("mlp_only_layers") && !(r.at("mlp_only_layers").is_array() && r.at("mlp_only_layers").empty())) {
      r.fail("mlp_only_layers", fmt::format("{}: dense layers by index are not modelled; expected [] (every layer by decoder_sparse_step)",
                                            r.at("mlp_only_layers").dump()));
    }
    if (m.moe_layer_count() < m.layers && m.intermediate <= 0) r.fail("intermediate_size", "required for the dense layers");
    m.moe.router_bias = t == "gpt_oss" || t == "deepseek_v3";
    m.moe.expert_bias = t == "gpt_oss";
    // Group-limited routing (DeepSeek's n_group, topk_group): the experts in equal groups, a
    // token's top-k taken from its best topk_group groups.
    m.moe.groups = r.integer({"n_group"}).value_or(1);
    if (m.moe.groups < 1 || m.moe.experts % m.moe.groups != 0) {
      r.fail("n_group", fmt::format("{} groups of {} experts: expected a divisor of the experts, at least 1", m.moe.groups, m.moe.experts));
    }
    m.moe.group_topk = r.integer({"topk_group"}).value_or(m.moe.groups);
    if (m.moe.group_topk < 1 || m.moe.group_topk > m.moe.groups) {
      r.fail("topk_group", fmt::format("{} of {} groups: expected 1 to the groups", m.moe.group_topk, m.moe.groups));
    }
    // A token's experts come from its best groups: they must hold at least its top k.
    if (m.moe.group_topk * (m.moe.experts / m.moe.groups) < m.moe.experts_per_token) {
      r.fail("topk_group", fmt::format("{} groups of {} experts hold fewer than the {} a token routes to (num_experts_per_tok)",
                                       m.moe.group_topk, m.moe.experts / m.moe.groups, m.moe.experts_per_token));
    }
  }

  // Multi-head latent attention.
  m.mla.kv_lora_rank = r.integer({"kv_lora_rank"}).value_or(0);
  if (r.has("kv_lora_rank") && m.mla.kv_lora_rank == 0) {
    r.fail("kv_lora_rank", "0: a latent attention needs a rank (null or no key: standard attention)");
  }
  if (m.mla.kv_lora_rank > 0) {
    m.mla.q_lora_rank = r.integer({"q_lora_rank"}).value_or(0);
    m.mla.qk_rope_head_dim = r.required({"qk_rope_head_dim"});
    m.mla.qk_nope_head_dim = r.required({"qk_nope_head_dim"});
    m.mla.v_head_dim = r.required({"v_head_dim"});
    m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
  }
  m.mtp_layers = r.integer({"num_nextn_predict_layers"}).value_or(0);
  m.hf_repo = hf_repo(j);
  m.weight_dtype = torch_dtype(r);
  read_quantization(r, m);
  read_routing(j, source, m);
  return m;
}

bool is_model(const EmbeddedFile& f) { return f.path.rfind("models/", 0) == 0; }

std::string stem_of(std::string_view path) {
  auto slash = path.rfind('/');
  std::string_view s = path.substr(slash + 1);
  return std::string(s.substr(0, s.rfind('.')));
}

}  // namespace

model::ModelConfig parse_model_config(std::string_view text, std::string_view source) {
  if (text.size() > kMaxConfigBytes) {
    throw InputError(fmt::format("{}: file is {} bytes: expected a config.json under 4 MiB", source, text.size()));
  }
  json j;
  try {
    j = json::parse(text, nullptr, true, false);
  } catch (const json::parse_error& e) {
    throw InputError(fmt::format("{}: malformed JSON at byte {}: expected a Hugging Face config.json", source, e.byte));
  } catch (const json::exception& e) {
    // A number beyond a double: the JSON library names the token ("... parsing '1e400'").
    const std::string what = e.what();
    const std::size_t q = what.find("parsing '");
    const std::string token = q == std::string::npos ? std::string() : what.substr(q + 8, what.size() - q - 8);
    throw InputError(fmt::format("{}: a number too large for a double{}: expected a Hugging Face config.json", source,
                                 token.empty() ? "" : fmt::format(" ({})", token.substr(0, 40))));
  }
  try {
    return parse_with_defaults(j, source, false);
  } catch (const json::exception& e) {
    // A value of an unexpected type deep inside (e.g. in quantization_config): the library's
    // reason without its "[json.exception.type_error.302]" tag.
    std::string why = e.what();
    if (const std::size_t tag = why.find("] "); why.rfind("[json.exception", 0) == 0 && tag != std::string::npos) why = why.substr(tag + 2);
    throw InputError(fmt::format("{}: unexpected value: {}", source, why));
  }
}

model::ModelConfig load_model_file(const std::string& path) {
  return parse_model_config(read_text_file(path, "a Hugging Face config.json"), path);
}

std::vector<std::string> bundled_model_names() {
  std::vector<std::string> names;
  for (const auto& f : embedded_files()) {
    if (is_model(f)) names.push_back(stem_of(f.path));
  }
  std::sort(names.begin(), names.end());
  return names;
}

model::ModelConfig bundled_model(std::string_view name) {
  std::string want = ascii_lower(name);
  for (const auto& f : embedded_files()) {
    if (is_model(f) && stem_of(f.path) == want) {
      model::ModelConfig m = parse_model_config(f.text, f.path);
      m.name = want;
      return m;
    }
  }
  std::string names;
  for (const auto& n : bundled_model_names()) names += (names.empty() ? "" : ", ") + n;
  throw InputError(fmt::format("--model: unknown model '{}': expected a bundled name ({}) or a config.json path", name, names));
}

model::ModelConfig resolve_model(std::string_view model) {
  std::error_code ec;
  const std::string text(model);
  const bool json = model.size() > 5 && model.substr(model.size() - 5) == ".json";
  // A Hugging Face repository named as its page names it ("meta-llama/Llama-3.1-8B": repo_id, no
  // file of that name) is the bundled model whose config.json came from it (`_source`,
  // ModelConfig::hf_repo), whatever its case; another repository is an error that says so, and
  // names the bundled one whose repository it extends ("...-Instruct" of the same architecture
  // is the user's to confirm: a suffix may name another quantisation).
  // (As a browser shows it, too: its page's address, or the name with a slash after it.)
  std::string_view asked = model;
  if (!std::filesystem::exists(text, ec)) {
    for (const std::string_view site : {"https://huggingface.co/", "http://huggingface.co/", "huggingface.co/"}) {
      if (asked.rfind(site, 0) == 0) asked.remove_prefix(site.size());
    }
    if (!asked.empty() && asked.back() == '/') asked.remove_suffix(1);
  }
  if (!json && repo_id(asked) && !std::filesystem::exists(text, ec)) {
    const std::string want = ascii_lower(asked);
    std::string extends;
    for (const auto& f : embedded_files()) {
      if (!is_model(f)) continue;
      model::ModelConfig m = parse_model_config(f.text, f.path);
      const std::string repo = ascii_lower(m.hf_repo);
      if (repo.empty()) continue;
      if (repo == want) {
        m.name = stem_of(f.path);
        return m;
      }
      // (extends: its name and then a word of its own, as "-Instruct"; "V3.2" does not extend "V3")
      if (want.size() > repo.size() && want.rfind(repo, 0) == 0 && (want[repo.size()] == '-' || want[repo.size()] == '_')) {
        extends = stem_of(f.path) + " (" + m.hf_repo + ")";
      }
    }
    throw InputError(fmt::format("--model: '{}' is neither a file nor the repository of a bundled model{}: give the repository's config.json, "
                                 "or a bundled name (`ridgeline models --json` gives each one's repository)",
                                 model, extends.empty() ? "" : fmt::format("; it extends the repository of the bundled {}", extends)));
  }
  const bool file = json || model.find('/') != std::string_view::npos || std::filesystem::exists(text, ec);
  return file ? load_model_file(text) : bundled_model(model);
}

}  // namespace ridgeline::io
