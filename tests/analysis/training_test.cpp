// Training: hand-derived values for every term.
#include "ridgeline/analysis/training.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <string>
#include <string_view>

#include "ridgeline/comm/collective.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "toy_chip.hpp"
#include "ridgeline/io/model_file.hpp"

namespace ridgeline::analysis {
namespace {

using testing::chip;

std::unique_ptr<TrainResult> run(const model::ModelConfig& m, const char* hw, const TrainConfig& cfg) {
  auto r = std::make_unique<TrainResult>();
  train(m, chip(hw), cfg, *r);
  return r;
}

// A GPT-style model (4h GELU MLP, MHA, LayerNorm) of the sizes Korthikanti et al. use.
model::ModelConfig gpt(std::int64_t h, std::int64_t heads, std::int64_t layers) {
  return io::parse_model_config(fmt::format(R"({{"model_type": "gpt2", "n_embd": {}, "n_head": {}, "n_layer": {},
    "vocab_size": 51200, "n_positions": 2048}})", h, heads, layers), "gpt.json");
}

TEST(Training, KorthikantiActivationMemory) {
  // Korthikanti et al. 2022: per layer s·b·h·(34 + 5·a·s/h) bytes with 16-bit activations and
  // dropout; with tensor parallelism t: s·b·h·(10 + 24/t + 5·a·s/(h·t)); with sequence
  // parallelism s·b·h·(34/t + 5·a·s/(h·t)); selective recomputation drops the 5·a·s/h term;
  // full recomputation keeps 2·s·b·h.
  const auto m = gpt(12288, 96, 96);
  TrainConfig c;
  c.seq = 2048;
  c.micro_batch = 1;
  c.dropout = true;
  c.attention = ops::AttentionImpl::naive;
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, c), s * b * h * (34 + 5 * a * s / h));
  c.tp = 8;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, c), s * b * h * (10 + 24 / t + 5 * a * s / (h * t)));
  c.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, c), s * b * h * (34 / t + 5 * a * s / (h * t)));
  c.recompute = Recompute::selective;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, c), s * b * h * 34 / t);
  c.recompute = Recompute::full;
  c.sequence_parallel = false;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, c), 2 * s * b * h);
  // FlashAttention keeps the fp32 log-sum-exp instead of the s x s scores (and no dropout here).
  c.recompute = Recompute::none;
  c.dropout = false;
  c.attention = ops::AttentionImpl::flash;
  c.tp = 1;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, c), s * b * h * 32 + 4 * a * s * b);
}

// `more` keeps `extra` bytes of activations a layer more than `fewer` at seq x micro_batch, in
// the formula (layer_activation_bytes) and in the accounting a plan uses (its saved tensors, by
// name: one GPU, no recomputation). Returns the plan of `more` (null if it failed).
std::unique_ptr<TrainResult> expect_extra_activations(const model::ModelConfig& more, const model::ModelConfig& fewer,
                                                      std::int64_t seq, std::int64_t micro_batch, double extra) {
  TrainConfig c;
  c.seq = seq;
  c.micro_batch = micro_batch;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(more, c) - layer_activation_bytes(fewer, c), extra);
  c.gpus = 1;
  c.global_batch = micro_batch;
  auto a = run(more, "h100-sxm", c), b = run(fewer, "h100-sxm", c);
  EXPECT_TRUE(a && b);
  if (a && b) {
    EXPECT_DOUBLE_EQ(a->memory.activation_bytes_per_layer - b->memory.activation_bytes_per_layer, extra);
  }
  return a;
}

TEST(Training, SandwichNormsKeepTheirInputs) {
  // Gemma 2's norms on each sublayer's output need their inputs in the backward: the attention's
  // output after o_proj and the MLP's after down_proj, two more 16-bit tensors of s·b·h a layer
  // than the same layer without them (4·s·b·h bytes), the rest unchanged.
  const auto gemma = io::parse_model_config(R"({"model_type": "gemma2", "hidden_size": 2304, "intermediate_size": 9216,
    "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
    "vocab_size": 256000, "hidden_activation": "gelu_pytorch_tanh"})", "gemma2.json");
  ASSERT_TRUE(gemma.sandwich_norms);
  auto plain = gemma;
  plain.sandwich_norms = false;
  const double s = 4096, b = 2, h = 2304;
  const auto with = expect_extra_activations(gemma, plain, 4096, 2, 4 * s * b * h);
  ASSERT_TRUE(with);
  const LayerTensors& t = with->tensors;
  int found = 0;
  for (int i = 0; i < t.kinds[0].first + t.kinds[0].count; ++i) {
    if (t.tensors[i].name == std::string_view("attn_proj_out") || t.tensors[i].name == std::string_view("mlp_proj_out")) {
      EXPECT_DOUBLE_EQ(t.tensors[i].bytes, 2 * s * b * h) << t.tensors[i].name;
      ++found;
    }
  }
  EXPECT_EQ(found, 2);
}

TEST(Training, PhisOneNormAFewerTensors) {
  // Phi's attention and MLP both read the one input norm's output: no post-attention norm, so
  // neither its input (the residual after attention) nor its output (the MLP's input) is kept,
  // two 16-bit tensors of s·b·h a layer (4·s·b·h bytes) fewer than a sequential layer.
  const auto phi = io::parse_model_config(R"({"model_type": "phi", "hidden_act": "gelu_new", "hidden_size": 2560,
    "intermediate_size": 10240, "num_attention_heads": 32, "num_hidden_layers": 32, "vocab_size": 51200})", "phi-2.json");
  ASSERT_TRUE(phi.parallel_block);
  auto sequential = phi;
  sequential.parallel_block = false;
  const double s = 2048, b = 2, h = 2560;
  EXPECT_TRUE(expect_extra_activations(sequential, phi, 2048, 2, 4 * s * b * h));
}

TEST(Training, ZeroStagesShardStatesOverDataParallelism) {
  // Llama-2-7B on 8 GPUs, dp 8: P = 6738415616 bf16 parameters on every GPU; bf16 weights
  // (2 B), fp32 gradients (4 B), Adam's fp32 master weights and two moments (12 B).
  const auto m = io::bundled_model("llama-2-7b");
  const double P = 6738415616.0;
  TrainConfig c;
  c.gpus = 8;
  c.seq = 1024;
  for (int zero = 0; zero <= 3; ++zero) {
    c.zero = zero;
    auto r = run(m, "h100-sxm", c);
    EXPECT_DOUBLE_EQ(r->memory.params_bytes, 2 * P / (zero >= 3 ? 8 : 1)) << zero;
    EXPECT_DOUBLE_EQ(r->memory.grads_bytes, 4 * P / (zero >= 2 ? 8 : 1)) << zero;
    EXPECT_DOUBLE_EQ(r->memory.optimizer_bytes, 12 * P / (zero >= 1 ? 8 : 1)) << zero;
  }
}

TEST(Training, ExpertStatesShardOverTheExpertDataParallelGroup) {
  // Mixtral-8x7B, tp 1: per layer 8 experts of 3 x 4096 x 14336 = 176160768 parameters; at
  // ep 8 each GPU holds one expert per layer: 32 x 176160768 = 5637144576. The rest on
  // every GPU: attention 32 x (2 x 4096² + 2 x 4096 x 1024) = 1342177280, routers
  // 32 x 4096 x 8 = 1048576, norms (2 x 32 + 1) x 4096 = 266240, embedding and head
  // 2 x 32000 x 4096 = 262144000: 1605636096. ZeRO shards the dense states over dp and the
  // experts' over the dp/ep ranks that hold the same experts.
  const auto m = io::bundled_model("mixtral-8x7b");
  const double E = 5637144576.0, D = 1605636096.0;
  TrainConfig c;
  c.ep = 8;
  c.seq = 1024;
  for (std::int64_t gpus : {8, 16}) {
    c.gpus = gpus;
    const double dp = static_cast<double>(gpus), edp = dp / 8;
    for (int zero = 0; zero <= 3; ++zero) {
      c.zero = zero;
      auto r = run(m, "h100-sxm", c);
      // Held (ZeRO-3 shards them, as the memory counts them) and computed with (gathered).
      EXPECT_DOUBLE_EQ(r->params_per_gpu, zero >= 3 ? D / dp + E / edp : D + E) << gpus << " " << zero;
      EXPECT_DOUBLE_EQ(r->params_computed_per_gpu, D + E);
      EXPECT_DOUBLE_EQ(r->memory.params_bytes, 2 * r->params_per_gpu);
      EXPECT_DOUBLE_EQ(r->memory.params_bytes, 2 * (zero >= 3 ? D / dp + E / edp : D + E)) << gpus << " " << zero;
      EXPECT_DOUBLE_EQ(r->memory.grads_bytes, 4 * (zero >= 2 ? D / dp + E / edp : D + E)) << gpus << " " << zero;
      EXPECT_DOUBLE_EQ(r->memory.optimizer_bytes, 12 * (zero >= 1 ? D / dp + E / edp : D + E)) << gpus << " " << zero;
    }
  }
  // ZeRO-1 on 8 GPUs at ep 8: 70.05 GB of optimizer states, not 10.86 (every expert is held
  // by one GPU only); Adam reads and writes 30 B for each of its D/8 + E parameters.
  c.gpus = 8;
  c.zero = 1;
  auto r = run(m, "h100-sxm", c);
  EXPECT_DOUBLE_EQ(r->memory.optimizer_bytes, 12 * (D / 8 + E));
  EXPECT_NEAR(r->optimizer.lower_s, 30 * (D / 8 + E) / 3.35e12, 1e-15);
}

TEST(Training, MfuInBothConventions) {
  // Llama-2-7B, seq 1024: causal attention computes s(s+1)/2 = 524800 pairs per head, 4·128
  // FLOPs each (QKᵀ and PV), 32 heads: 8598323200 FLOPs per layer and sequence; PaLM and
  // Megatron-LM count all s² pairs: 17179869184. Model FLOPs add 3 x 32 layers x the
  // difference, 823828414464 per sequence.
  const auto m = io::bundled_model("llama-2-7b");
  TrainConfig c;
  c.gpus = 8;
  c.seq = 1024;
  c.global_batch = 16;
  auto r = run(m, "h100-sxm", c);
  const double extra = 3 * 32 * (17179869184.0 - 8598323200.0);
  EXPECT_NEAR(r->model_flops_full_attention_per_step - r->model_flops_per_step, 16 * extra, 1e-6 * 16 * extra);
  EXPECT_NEAR(r->mfu_full_attention / r->mfu, r->model_flops_full_attention_per_step / r->model_flops_per_step, 1e-12);
}

TEST(Training, FrameworkOverlapFlags) {
  // Llama-2-7B on 16 H100s, dp 16, ZeRO 0. With buckets the all-reduce of the fp32 gradients
  // hides behind the backward (all but the last bucket) at the interference it causes; without
  // overlap (--dp-overlap off) the whole all-reduce is exposed after the backward and costs
  // the compute nothing.
  const auto m = io::bundled_model("llama-2-7b");
  TrainConfig c;
  c.gpus = 16;
  c.seq = 1024;
  auto on = run(m, "h100-sxm", c);
  c.dp_overlap = false;
  auto off = run(m, "h100-sxm", c);
  EXPECT_DOUBLE_EQ(off->dp_comm.realistic_s, on->dp_comm.realistic_s);
  EXPECT_DOUBLE_EQ(off->exposed_dp_comm.realistic_s, off->dp_comm.realistic_s);
  EXPECT_DOUBLE_EQ(off->hidden_comm_s, 0);
  EXPECT_DOUBLE_EQ(off->interference_s, 0);
  EXPECT_LT(on->exposed_dp_comm.realistic_s, on->dp_comm.realistic_s);
  EXPECT_NEAR(on->hidden_comm_s, on->dp_comm.realistic_s - on->exposed_dp_comm.realistic_s, 1e-12);
  EXPECT_GT(on->interference_s, 0);
  EXPECT_NEAR(off->step_time_s - on->step_time_s,
              off->dp_comm.realistic_s - on->exposed_dp_comm.realistic_s - on->interference_s, 1e-12);
  EXPECT_GT(on->interference_s, 0);
  // --overlap-efficiency 0.5: half of what hid hides (the window is not the limit at either).
  c.dp_overlap = true;
  c.overlap_efficiency = 0.5;
  auto half = run(m, "h100-sxm", c);
  EXPECT_NEAR(half->hidden_comm_s, on->hidden_comm_s / 2, 1e-12);
  EXPECT_NEAR(half->interference_s, on->interference_s / 2, 1e-12);
  // TP 8 with sequence parallelism: --tp-overlap hides each pass's TP gathers and scatters
  // under its GEMMs. The bounds hide min(TP communication, GEMMs); the realistic time hides
  // what Transformer Engine's schedule can: in forward the gathers (ring exchange) and 3/4 of
  // the reduce-scatters (the last of their 4 pipelined splits waits for the GEMM's end), in
  // backward all of both (ring exchange, and bulk beside the weight gradients), and the GEMMs
  // lose the SMs the overlap kernels hold: 1 of 132 for a ring exchange (copy engines), 16
  // for the others.
  TrainConfig t;
  t.gpus = 8;
  t.tp = 8;
  t.sequence_parallel = true;
  t.seq = 4096;
  const hw::System sys = training_system(chip("h100-sxm"), t);
  auto out = std::make_unique<TrainResult>();
  auto plain = std::make_unique<TrainShape>(), overlap = std::make_unique<TrainShape>();
  train_shape(m, sys, t, *out, *plain);
  t.tp_overlap = true;
  train_shape(m, sys, t, *out, *overlap);
  EXPECT_GT(plain->f_layers_tp.realistic_s, 0);
  EXPECT_NEAR(plain->f_layers.lower_s - overlap->f_layers.lower_s, std::min(plain->f_layers_tp.lower_s, plain->f_layers_gemm.lower_s),
              1e-12);
  // The layers' gathers and scatters from the graph (realistic, every layer), the main-memory
  // bytes they move, and the GEMMs' bytes. A gather's backward runs two kernels (the
  // gradient's reduce-scatter, the input gathered again), each paying the class's fixed time.
  double ag_f = 0, rs_f = 0, ag_b = 0, rs_b = 0, hbm_ag_f = 0, hbm_rs_f = 0, hbm_ag_b = 0, hbm_rs_b = 0, gemm_f = 0, gemm_b = 0;
  const model::Graph& g = out->graph;
  const double o = plain->rates.achievable[static_cast<int>(hw::KernelClass::collective)].overhead_s;
  for (int i = 0; i < g.op_count; ++i) {
    const std::string_view n = g.ops[i].name;
    const double rep = g.repeat(i);
    if (g.ops[i].cls == model::OpClass::gemm) {
      gemm_f += out->fwd[i].bytes * rep;
      gemm_b += out->bwd[i].bytes * rep;
    }
    const bool ag = n == "attn_allgather" || n == "mlp_allgather", rs = n == "attn_reducescatter" || n == "mlp_reducescatter";
    if (!ag && !rs) continue;
    const double f = part_of(out->fwd[i].parts, plain->rates, g.ops[i].kernel).realistic_s * rep;
    const double b = (part_of(out->bwd[i].parts, plain->rates, g.ops[i].kernel).realistic_s + (ag ? o : 0)) * rep;
    (ag ? ag_f : rs_f) += f;
    (ag ? ag_b : rs_b) += b;
    (ag ? hbm_ag_f : hbm_rs_f) += out->fwd[i].bytes * rep;
    (ag ? hbm_ag_b : hbm_rs_b) += out->bwd[i].bytes * rep;
  }
  // Each gather's backward also gathers the input again for the weight gradient: two kernels.
  EXPECT_NEAR(ag_b, 2 * ag_f, 1e-12 * ag_f);
  // The ring exchanges hide first, the others in what the GEMMs have left (at TP 8 the forward's
  // communication outlasts its GEMMs).
  const double gf = plain->f_layers_gemm.realistic_s, gb = plain->b_layers_gemm.realistic_s;
  const double ring_f = std::min(ag_f, gf), pipe_f = std::min(0.75 * rs_f, gf - ring_f);
  const double ring_b = std::min(rs_b, gb), bulk_b = std::min(ag_b, gb - ring_b);
  const double hidden = ring_f + pipe_f + ring_b + bulk_b;
  EXPECT_NEAR(overlap->tp_overlap.hidden_s, hidden, 1e-12 * hidden);
  // The GEMMs lose the SMs of the kernels beside them, or the memory bandwidth both need beyond
  // what there is (analysis::interference_rate): the gathers' forward and the scatters'
  // backward run by ring exchange (1 SM), the rest on 16; each hides in the GEMMs' time the
  // one before left.
  const hw::ChipSpec& h100 = sys.chip;
  auto charge = [&](double hid, double time, double hbm, double sms, double window, double bytes_) {
    const ComputeWindow w{window, 0, window, bytes_, 0, 0};
    return hid * interference_rate({time, hbm, sms, false}, w, h100);
  };
  const double cost = charge(ring_f, ag_f, hbm_ag_f, 1, gf, gemm_f) +
                      charge(pipe_f, rs_f, hbm_rs_f, 16, gf - ring_f, gemm_f * (gf - ring_f) / gf) +
                      charge(ring_b, rs_b, hbm_rs_b, 1, gb, gemm_b) +
                      charge(bulk_b, ag_b, hbm_ag_b, 16, gb - ring_b, gemm_b * (gb - ring_b) / gb);
  const double sm = (ring_f + ring_b) / 132 + (pipe_f + bulk_b) * 16 / 132;
  EXPECT_GE(cost, sm);  // never less than the SMs' share
  EXPECT_NEAR(overlap->tp_overlap.interference_s, cost, 1e-9 * cost);
  EXPECT_NEAR((plain->f_layers.realistic_s + plain->b_layers.realistic_s) - (overlap->f_layers.realistic_s + overlap->b_layers.realistic_s),
              hidden - cost, 1e-9 * hidden);
}

TEST(Training, Fp8TrainingAsTransformerEngineRunsIt) {
  // --dtype fp8: the layers' GEMMs in fp8; attention and the LM head stay in bf16
  // (Transformer Engine's recipe: fp8 linear layers, the output layer and dot-product
  // attention in the higher precision).
  const auto m = io::bundled_model("llama-2-7b");
  TrainConfig c;
  c.gpus = 1;
  c.seq = 1024;
  c.dtype = DType::fp8_e4m3;
  auto r = run(m, "h100-sxm", c);
  const model::Graph& g = r->graph;
  int checked = 0;
  for (int i = 0; i < g.op_count; ++i) {
    const auto& op = g.ops[i];
    if (op.cls == model::OpClass::attention || std::string_view(op.name) == "lm_head") {
      EXPECT_EQ(op.cost.matrix_dtype, DType::bf16) << op.name;
      ++checked;
    } else if (op.cls == model::OpClass::gemm) {
      EXPECT_EQ(op.cost.matrix_dtype, DType::fp8_e4m3) << op.name;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 9);  // q, k, v, o, gate, up, down, attention, lm_head
}

TEST(Training, SelectiveRecomputationRerunsTheAttentionCoreOnly) {
  // Megatron's selective recomputation drops the attention core's saved tensors (memory,
  // above) and runs the attention kernel again in backward: the backward grows by the 32
  // layers' attention forwards, and nothing else (no norm, no elementwise op).
  const auto m = io::bundled_model("llama-2-7b");
  TrainConfig c;
  c.gpus = 1;
  c.seq = 1024;
  const hw::System sys = training_system(chip("h100-sxm"), c);
  auto out = std::make_unique<TrainResult>();
  auto none = std::make_unique<TrainShape>(), sel = std::make_unique<TrainShape>();
  train_shape(m, sys, c, *out, *none);
  c.recompute = Recompute::selective;
  train_shape(m, sys, c, *out, *sel);
  double attention = 0;
  int kinds = 0;
  for (int i = 0; i < out->graph.op_count; ++i) {
    if (out->graph.ops[i].cls != model::OpClass::attention) continue;
    attention += out->graph.repeat(i) * out->fwd[i].parts.lower();
    ++kinds;
  }
  EXPECT_EQ(kinds, 1);
  EXPECT_NEAR(sel->b_layers.lower_s - none->b_layers.lower_s, attention, 1e-12);
  EXPECT_EQ(sel->f_layers.lower_s, none->f_layers.lower_s);
}

TEST(Training, EmbeddingAndLossCollectivesFollowMegatronsConjugates) {
  // Llama-2-7B, tp 2, pp 2, micro-batch 1, seq 1024, no sequence parallelism. The
  // vocab-parallel embedding all-reduces 1024 x 4096 x 2 = 8388608 B: over 2 GPUs NCCL's
  // Simple ring (8.4 + 2 x 3.4 = 15.2 us fixed; LL128 17.8 us at 0.92 of the bandwidth and
  // LL 7.8 us at 0.5 are slower for 8 MiB) at 450 GB/s: 18.64 + 15.2 = 33.84 us at the
  // peak. Its backward has no all-reduce (Megatron's g operator); the LM head's input
  // gradient is all-reduced instead, the same bytes, on the last stage. The loss's
  // all-reduces of two fp32 scalars per token have no backward.
  const auto m = io::bundled_model("llama-2-7b");
  TrainConfig c;
  c.gpus = 4;
  c.tp = 2;
  c.pp = 2;
  c.seq = 1024;
  const hw::System sys = training_system(chip("h100-sxm"), c);
  auto out = std::make_unique<TrainResult>();
  auto sh = std::make_unique<TrainShape>();
  train_shape(m, sys, c, *out, *sh);
  const model::Graph& g = out->graph;
  int lookup = -1, ar = -1, loss = -1;
  double head_bwd = 0;
  for (int i = 0; i < g.op_count; ++i) {
    const std::string_view n = g.ops[i].name;
    if (n == "embedding") lookup = i;
    if (n == "embedding_allreduce") ar = i;
    if (n == "loss_allreduce") loss = i;
    if (g.ops[i].block == model::Block::head) head_bwd += g.repeat(i) * out->bwd[i].parts.lower();
  }
  ASSERT_GE(lookup, 0);
  ASSERT_GE(ar, 0);
  ASSERT_GE(loss, 0);
  EXPECT_NEAR(out->fwd[ar].parts.comm, 8388608 / 450e9 + 15.2e-6, 1e-15);
  EXPECT_EQ(out->bwd[loss].parts.comm, 0);
  EXPECT_DOUBLE_EQ(sh->b_embed.lower_s, out->bwd[lookup].parts.lower());
  EXPECT_NEAR(sh->b_head.lower_s, head_bwd + out->fwd[ar].parts.lower(), 1e-15);
  // With sequence parallelism the embedding reduce-scatters (half the all-reduce's bytes)
  // and its backward all-gathers on the first stage.
  c.sequence_parallel = true;
  train_shape(m, sys, c, *out, *sh);
  bool scatter = false;
  for (int i = 0; i < out->graph.op_count; ++i) {
    if (std::string_view(out->graph.ops[i].name) == "embedding_reducescatter") {
      scatter = true;
      EXPECT_DOUBLE_EQ(out->bwd[i].link_bytes, 4194304);
    }
  }
  EXPECT_TRUE(scatter);
}

// Adam per parameter: read the fp32 master weight, both moments and the fp32 gradient
// (16 B), write the three back in place (12 B) and a bf16 copy (2 B): 30 B, 3.35 TB/s.
// Where stores allocate, only the bf16 copy's lines are read first (the others were just
// read): 32 B. Llama-2-7B, dp 8 without ZeRO: every GPU updates all P parameters.
TEST(Training, AdamStoresOnlyItsBf16CopyToUnreadLines) {
  const auto m = io::bundled_model("llama-2-7b");
  const double P = 6738415616.0;
  TrainConfig c;
  c.gpus = 8;
  c.seq = 1024;
  auto r = run(m, "h100-sxm", c);
  EXPECT_DOUBLE_EQ(r->optimizer.lower_s, 30 * P / 3.35e12);
  hw::System wa = chip("h100-sxm");
  wa.chip.write_allocate = true;
  auto w = std::make_unique<TrainResult>();
  train(m, wa, c, *w);
  EXPECT_DOUBLE_EQ(w->optimizer.lower_s, 32 * P / 3.35e12);
  EXPECT_GT(w->step_time_lower_s, r->step_time_lower_s);
}

// One sequence of 8192 tokens a step on 8 GPUs at TP 8.
TrainConfig one_sequence_at_tp8() {
  TrainConfig c;
  c.gpus = 8;
  c.tp = 8;
  c.seq = 8192;
  c.global_batch = 1;
  return c;
}

TEST(Training, AttentionBackwardRunsAtItsOwnMeasuredRate) {
  // H100: FlashAttention-3's forward at 0.718 of the matrix peak (efficiency.attention,
  // its curve's fit), its backward at 0.455 (efficiency.attention_backward). Without the
  // backward's own figure it takes the forward's fraction (not its tile work, nor its overlap
  // share: a refining class takes neither). At sequence 8192 every attention kernel is compute-bound, so the backward
  // of one micro-batch differs by each attention op's backward matrix time (2.5x its
  // forward's, less its tiles) x (1/0.455 - 1/0.718), repeated over its layers; nothing
  // else changes.
  const auto m = io::bundled_model("llama-3.1-8b");
  TrainConfig c = one_sequence_at_tp8();
  hw::System sys = chip("h100-sxm");
  auto with = std::make_unique<TrainResult>();
  train(m, sys, c, *with);
  sys.chip.efficiency.kernel[static_cast<int>(hw::KernelClass::attention_backward)] = {};
  auto without = std::make_unique<TrainResult>();
  train(m, sys, c, *without);
  double expected = 0;
  int attention_ops = 0;
  const model::Graph& g = with->graph;
  for (int i = 0; i < g.op_count; ++i) {
    if (g.ops[i].cls != model::OpClass::attention) continue;
    const ops::TimeParts& b = with->bwd[i].parts;
    ASSERT_DOUBLE_EQ(b.matrix, 2.5 * with->fwd[i].parts.matrix);
    ASSERT_GT(b.matrix, b.vector);  // compute-bound on the matrix unit
    ASSERT_EQ(b.matrix_pad, 0);
    ASSERT_GT(b.matrix / 0.718, b.memory / 0.9);
    expected += g.repeat(i) * b.matrix * (1 / 0.455 - 1 / 0.718);
    ++attention_ops;
  }
  EXPECT_GT(attention_ops, 0);
  EXPECT_NEAR(with->backward.realistic_s - without->backward.realistic_s, expected, 1e-12);
  EXPECT_DOUBLE_EQ(with->forward.realistic_s, without->forward.realistic_s);
}

double sum(const std::array<double, hw::kKernelClassCount>& by) {
  double s = 0;
  for (double x : by) s += x;
  return s;
}

double of(const std::array<double, hw::kKernelClassCount>& by, hw::KernelClass k) { return by[static_cast<int>(k)]; }

TEST(Training, TheStepsComputeIsSplitByTheKernelClassEachKernelRunsAs) {
  // Llama 3.1 8B at TP 8, one sequence of 8192 per step on one pipeline stage: the split is
  // every op's forward and backward realistic time by its kernel's class, before any overlap,
  // so with nothing hidden its classes add up to the micro-batch's forward and backward.
  const auto m = io::bundled_model("llama-3.1-8b");
  TrainConfig c = one_sequence_at_tp8();
  hw::System sys = chip("h100-sxm");
  auto r = std::make_unique<TrainResult>();
  train(m, sys, c, *r);
  const auto& by = r->time_by_kernel_class_s;
  ASSERT_EQ(r->micro_batches, 1);
  EXPECT_NEAR(sum(by), r->forward.realistic_s + r->backward.realistic_s, 1e-12);
  EXPECT_GT(of(by, hw::KernelClass::gemm), 0);
  EXPECT_GT(of(by, hw::KernelClass::attention), 0);
  EXPECT_GT(of(by, hw::KernelClass::attention_backward), 0);
  EXPECT_GT(of(by, hw::KernelClass::collective), 0);  // the TP all-reduces, forward and backward
  // The backward's attention kernels are attention_backward's: without the H100's figure for
  // it (0.455 of the matrix peak) they take the forward's fraction (0.718), and that class
  // alone moves, by each attention op's compute-bound backward matrix time (2.5x its
  // forward's) x (1/0.455 - 1/0.718), as AttentionBackwardRunsAtItsOwnMeasuredRate derives.
  double expected = 0;
  const model::Graph& g = r->graph;
  for (int i = 0; i < g.op_count; ++i) {
    if (g.ops[i].cls == model::OpClass::attention) expected += g.repeat(i) * r->bwd[i].parts.matrix * (1 / 0.455 - 1 / 0.718);
  }
  sys.chip.efficiency.kernel[static_cast<int>(hw::KernelClass::attention_backward)] = {};
  auto without = std::make_unique<TrainResult>();
  train(m, sys, c, *without);
  const auto& wby = without->time_by_kernel_class_s;
  EXPECT_NEAR(of(by, hw::KernelClass::attention_backward) - of(wby, hw::KernelClass::attention_backward), expected, 1e-12);
  for (int k = 0; k < hw::kKernelClassCount; ++k) {
    if (k != static_cast<int>(hw::KernelClass::attention_backward)) {
      EXPECT_DOUBLE_EQ(by[k], wby[k]) << hw::name(static_cast<hw::KernelClass>(k));
    }
  }
  // Four micro-batches a step: every class four times.
  c.global_batch = 4;
  auto four = std::make_unique<TrainResult>();
  train(m, chip("h100-sxm"), c, *four);
  for (int k = 0; k < hw::kKernelClassCount; ++k) EXPECT_NEAR(four->time_by_kernel_class_s[k], 4 * by[k], 1e-12 * (1 + by[k]));
  // Full recomputation runs every layer's forward again inside the backward: the classes grow
  // by the backward's growth, none of it attention_backward's (a recomputed forward's
  // attention is the forward kernel).
  c.global_batch = 1;
  c.recompute = Recompute::full;
  auto full = std::make_unique<TrainResult>();
  train(m, chip("h100-sxm"), c, *full);
  EXPECT_NEAR(sum(full->time_by_kernel_class_s) - sum(by), full->backward.realistic_s - r->backward.realistic_s, 1e-12);
  EXPECT_DOUBLE_EQ(of(full->time_by_kernel_class_s, hw::KernelClass::attention_backward), of(by, hw::KernelClass::attention_backward));
  EXPECT_GT(of(full->time_by_kernel_class_s, hw::KernelClass::attention), of(by, hw::KernelClass::attention));
  // Two pipeline stages: the slowest stage's 16 of 32 layers and its end of the model (the
  // head, whose vocabulary-wide GEMM outlasts the embedding's lookup), the same stage whose
  // forward and backward the step takes: the classes still add up to them.
  c.recompute = Recompute::none;
  c.gpus = 16;
  c.pp = 2;
  c.global_batch = 1;
  auto two = std::make_unique<TrainResult>();
  train(m, chip("h100-sxm"), c, *two);
  ASSERT_EQ(two->micro_batches, 1);
  EXPECT_TRUE(two->slowest_holds_head);
  EXPECT_NEAR(sum(two->time_by_kernel_class_s), two->forward.realistic_s + two->backward.realistic_s, 1e-12);
  // Compute by kind counts that stage too: the embedding's lookup is the first stage's, in the
  // one-stage run's kinds and not in these.
  const int lookup = static_cast<int>(model::OpClass::embedding);
  EXPECT_GT(r->time_by_kind_s[lookup], 0);
  EXPECT_EQ(two->time_by_kind_s[lookup], 0);
}

TEST(Training, AutoRecomputationsChoiceIsInTheSplit) {
  // --recompute auto under a tight budget recomputes some tensors: the classes grow by the
  // choice's recomputed forwards (its recompute_s a layer, every layer of the stage, every
  // micro-batch), its offloads (none without --offload) in no class.
  const auto m = io::bundled_model("llama-3.1-70b");
  TrainConfig c;
  c.gpus = 64;
  c.tp = 8;
  c.pp = 4;
  c.seq = 8192;
  c.global_batch = 64;
  auto none = std::make_unique<TrainResult>();
  train(m, chip("h100-sxm"), c, *none);
  c.recompute = Recompute::automatic;
  auto autom = std::make_unique<TrainResult>();
  train(m, chip("h100-sxm"), c, *autom);
  ASSERT_GT(autom->recompute_choice.changes, 0);
  ASSERT_EQ(autom->recompute_choice.offload_exposed_s, 0);
  // 80 layers over 4 stages: 20 on the slowest; 64 sequences over dp 2: 32 micro-batches.
  ASSERT_EQ(autom->micro_batches, 32);
  EXPECT_NEAR(sum(autom->time_by_kernel_class_s) - sum(none->time_by_kernel_class_s), autom->recompute_choice.recompute_s * 20 * 32,
              1e-9 * sum(none->time_by_kernel_class_s));
}

TEST(Training, GemmBackwardTilesItsTwoGemmsOnTheirOwn) {
  // GPT h 4096 (MLP 16384) on an A100 with its 108 multiprocessors, one sequence of 2048
  // tokens, TP 1. down_proj is [2048, 16384] x [16384, 4096] (F = 2 x 2048 x 16384 x 4096).
  //  forward, out [2048, 4096]: 256x128 and 128x256 make 256 tiles in 3 waves (256/324);
  //    128x128 makes 16 x 32 = 512 in 5 waves: useful 512/540 = 128/135, the best.
  //  input gradient [2048, 4096] x [4096, 16384], out [2048, 16384]: 1024 large tiles in 10
  //    waves (128/135); 2048 of 128x128 in 19 (2048/2052 = 512/513), the best.
  //  weight gradient [16384, 2048] x [2048, 4096], out [16384, 4096]: 2048 large tiles in 19
  //    waves (512/513), as good as 4096 of 128x128 in 38.
  // Padding = F (1/useful - 1): forward F x 7/128; backward F x 2/512 = F/256: backward /
  // forward = 1/14 (a backward priced as twice the forward's GEMM would say 2). Forward
  // seconds in the parts: F x 7/128 at the 312 TFLOP/s bf16 peak (the realistic time scales
  // them to the achievable rate, as the GEMM's own work).
  const auto m = gpt(4096, 32, 2);
  TrainConfig c;
  c.gpus = 1;
  c.seq = 2048;
  c.global_batch = 1;
  hw::System sys = chip("a100-80gb");
  sys.chip.sms = 108;
  auto r = std::make_unique<TrainResult>();
  train(m, sys, c, *r);
  const model::Graph& g = r->graph;
  int down = -1;
  for (int i = 0; i < g.op_count; ++i) {
    if (std::string_view(g.ops[i].name) == "down_proj") down = i;
  }
  ASSERT_GE(down, 0);
  ASSERT_TRUE(g.ops[down].quantised);
  const double F = 2.0 * 2048 * 16384 * 4096;
  EXPECT_NEAR(r->fwd[down].parts.matrix_pad, F * 7 / 128 / 312e12, 1e-15);
  EXPECT_NEAR(r->bwd[down].parts.matrix_pad / r->fwd[down].parts.matrix_pad, 1.0 / 14, 1e-12);
  // Without the multiprocessors nothing is padded, in either direction.
  sys.chip.sms = 0;
  auto flat = std::make_unique<TrainResult>();
  train(m, sys, c, *flat);
  EXPECT_EQ(flat->fwd[down].parts.matrix_pad, 0);
  EXPECT_EQ(flat->bwd[down].parts.matrix_pad, 0);
}

TEST(Training, PipelineBubble) {
  // 1F1B: the step runs m micro-batches plus (p - 1)/v of them as the bubble.
  const auto m = io::bundled_model("llama-2-13b");
  TrainConfig c;
  c.gpus = 16;
  c.tp = 2;
  c.pp = 4;
  c.global_batch = 32;  // dp 2 -> 16 micro-batches
  for (std::int64_t vpp : {1, 2}) {
    c.vpp = vpp;
    auto r = run(m, "h100-sxm", c);
    const double per_mb = r->forward.realistic_s + r->backward.realistic_s + r->p2p.realistic_s;
    EXPECT_EQ(r->micro_batches, 16);
    EXPECT_NEAR(r->bubble.realistic_s, 3.0 / static_cast<double>(vpp) * per_mb, 1e-12);
    EXPECT_NEAR(r->pipeline.realistic_s, (16 + 3.0 / static_cast<double>(vpp)) * per_mb, 1e-12);
  }
}

TEST(Training, TheStepWaitsForTheSlowestGpu) {
  // Data parallelism only: every GPU runs the same micro-batches (global batch 4 per GPU), so
  // the compute-bound kernels' time on one GPU is the same at 1, 8 and 64 GPUs, and what the
  // slowest GPU adds scales with straggler_slowdown (docs/training.md#the-slowest-gpu).
  const auto m = gpt(1024, 16, 4);
  TrainConfig c;
  c.seq = 1024;
  c.gpus = 1;
  c.global_batch = 4;
  EXPECT_EQ(run(m, "h100-sxm", c)->straggler_s, 0);  // one GPU waits for none
  c.gpus = 8;
  c.global_batch = 32;
  auto r8 = run(m, "h100-sxm", c);
  c.gpus = 64;
  c.global_batch = 256;
  auto r64 = run(m, "h100-sxm", c);
  EXPECT_EQ(r8->micro_batches, 4);
  EXPECT_EQ(r64->micro_batches, 4);
  // 0.0429285 / 0.0256429 = 1.674089 (tests/analysis/stragglers_test.cpp derives both).
  EXPECT_NEAR(r64->straggler_s / r8->straggler_s, 1.674089, 1e-5);
  // Only compute-bound kernels wait: at most 0.0256429 of the pipeline, and part of the step.
  EXPECT_GT(r8->straggler_s, 0);
  EXPECT_LT(r8->straggler_s, 0.0256429 * r8->pipeline.realistic_s);
  EXPECT_GE(r8->step_time_s, r8->pipeline.realistic_s + r8->straggler_s);
}

TEST(Training, ModelFlopsAreThreeForwardPasses) {
  // Llama-2-7B, 8 sequences of 2048: forward GEMMs 2 FLOPs per weight per token (the
  // embedding table is a lookup, the 65 norms no GEMM), attention 4·d per causal pair per
  // head per layer; model FLOPs = 3x.
  const auto m = io::bundled_model("llama-2-7b");
  TrainConfig c;
  c.gpus = 8;
  c.seq = 2048;
  auto r = run(m, "h100-sxm", c);
  const double tokens = 8 * 2048.0;
  const double gemm_weights = 6738415616.0 - 32000.0 * 4096 - 65 * 4096.0;
  const double attention = 32 * 4 * 32 * 128 * (2048.0 * 2049 / 2) * 8;
  EXPECT_NEAR(r->model_flops_per_step / (3 * (2 * tokens * gemm_weights + attention)), 1.0, 1e-12);
  EXPECT_NEAR(r->mfu, r->model_flops_per_step / (r->step_time_s * 8 * 989.4e12), 1e-12);
  // No recomputation: hardware FLOPs add only FlashAttention's extra half forward in backward.
  EXPECT_NEAR(r->hardware_flops_per_step - r->model_flops_per_step, 0.5 * 3 * attention / 3, 1e-3 * attention);
}

// A data-parallel collective's realistic time over the dp·cp ranks of a plan (tp apart), as
// comm::price prices it.
double dp_time(const hw::System& sys, comm::Collective kind, double bytes_, double ranks, double stride) {
  const comm::Wiring w = comm::wiring(sys);
  const ops::Rates r(sys.chip);
  const ops::Cost c = comm::price(w, comm::place(w, ranks, stride), kind, bytes_, DType::bf16, comm::Algo::automatic).cost;
  return part_of(ops::time_parts(c, r), r, hw::KernelClass::collective).realistic_s;
}

TEST(Training, MegatronLmSplitsPipelineSendsOverTensorParallelRanks) {
  // GPT-3 175B (h 12288) on 64 A100s, TP 8 PP 8, seq 2048, micro-batch
  // 1, no sequence parallelism: a stage boundary carries 2048 x 12288 bf16 = 50331648 bytes each
  // way. Megatron-Core sends all of it from every TP rank to its peer 8 ranks on (tp·cp·dp = 8);
  // Megatron-LM (--framework megatron-lm) sends 1/8 and all-gathers the 8 pieces over the
  // node's 8 ranks (stride 1) on arrival. Forward and backward: twice per micro-batch.
  const auto m = io::bundled_model("gpt3-175b");
  TrainConfig c;
  c.gpus = 64;
  c.tp = 8;
  c.pp = 8;
  c.seq = 2048;
  c.global_batch = 8;
  const hw::System sys = training_system(chip("a100-80gb"), c);
  const double act = 2048.0 * 12288 * 2;
  auto core = run(m, "a100-80gb", c);
  EXPECT_NEAR(core->p2p.realistic_s, 2 * dp_time(sys, comm::Collective::send_recv, act, 2, 8), 1e-15);
  c.framework = Framework::megatron_lm;
  auto lm = run(m, "a100-80gb", c);
  const double split = dp_time(sys, comm::Collective::send_recv, act / 8, 2, 8) + dp_time(sys, comm::Collective::all_gather, act, 8, 1);
  EXPECT_NEAR(lm->p2p.realistic_s, 2 * split, 1e-15);
  EXPECT_LT(lm->p2p.realistic_s, core->p2p.realistic_s);  // the node's links are 12x one NIC
  EXPECT_EQ(lm->forward.realistic_s, core->forward.realistic_s);
  // With sequence parallelism both send the sequence shard, 1/8 of it, whole.
  c.sequence_parallel = true;
  auto sp = run(m, "a100-80gb", c);
  EXPECT_NEAR(sp->p2p.realistic_s, 2 * dp_time(sys, comm::Collective::send_recv, act / 8, 2, 8), 1e-15);
}

TEST(Training, DataParallelOverlap) {
  const auto m = io::bundled_model("llama-2-7b");
  const double params = 6738415616.0;
  TrainConfig c;
  c.gpus = 8;
  c.seq = 4096;
  c.micro_batch = 4;
  const hw::System sys = training_system(chip("h100-sxm"), c);
  // ZeRO-1, Megatron's buckets of max(40M, 1M x 8) = 40M parameters: ceil(6738415616 / 40e6)
  // = 169 buckets. The gradients' reduce-scatter hides behind the long backward but for its
  // last bucket, the parameters' all-gather behind the next forward but for its first.
  c.zero = 1;
  auto z1 = run(m, "h100-sxm", c);
  const double rs1 = dp_time(sys, comm::Collective::reduce_scatter, params * 4 / 169, 8, 1);
  const double ag1 = dp_time(sys, comm::Collective::all_gather, params * 2 / 169, 8, 1);
  EXPECT_NEAR(z1->dp_comm.realistic_s, 169 * (rs1 + ag1), 1e-9 * z1->dp_comm.realistic_s);
  EXPECT_LT(z1->dp_comm.realistic_s, z1->backward.realistic_s);
  EXPECT_NEAR(z1->exposed_dp_comm.realistic_s, rs1 + ag1, 1e-12);
  // Plain DDP: the last of the 169 buckets of fp32 gradients runs after the backward ends.
  c.zero = 0;
  auto z0 = run(m, "h100-sxm", c);
  EXPECT_NEAR(z0->exposed_dp_comm.realistic_s, z0->dp_comm.realistic_s / 169, 1e-15);
  // PyTorch DDP's 25 MB buckets: ceil(6738415616 x 4 / 25e6) = 1079.
  c.framework = Framework::fsdp2;
  auto ddp = run(m, "h100-sxm", c);
  EXPECT_NEAR(ddp->exposed_dp_comm.realistic_s, ddp->dp_comm.realistic_s / 1079, 1e-15);
}

TEST(Training, Zero3GathersALayerAtATime) {
  // Llama-2-7B on one node of 8 H100s, ZeRO-3 over the 8, 2 micro-batches of 4096 tokens.
  // A layer holds 4·4096² + 3·4096·11008 + 2·4096 = 202383360 parameters; each micro-batch
  // gathers each layer (bf16, 404.8 MB gathered) for the forward and again for the backward,
  // and reduce-scatters its fp32 gradients (809.5 MB). The first gather of the forward and the
  // last reduce-scatter of the backward wait; the others hide beside the layers (here each
  // layer's compute outlasts them), the embedding and head's beside their own compute.
  const auto m = io::bundled_model("llama-2-7b");
  const double layer = 4 * 4096.0 * 4096 + 3 * 4096.0 * 11008 + 2 * 4096.0;
  TrainConfig c;
  c.gpus = 8;
  c.seq = 4096;
  c.global_batch = 16;
  c.zero = 3;
  const hw::System sys = training_system(chip("h100-sxm"), c);
  auto r = run(m, "h100-sxm", c);
  ASSERT_EQ(r->micro_batches, 2);
  const double ag = dp_time(sys, comm::Collective::all_gather, layer * 2, 8, 1);
  const double rs = dp_time(sys, comm::Collective::reduce_scatter, layer * 4, 8, 1);
  const double other = 2 * 32000.0 * 4096 + 4096;  // the embedding, the head, the final norm
  const double ag_o = dp_time(sys, comm::Collective::all_gather, other * 2, 8, 1);
  const double rs_o = dp_time(sys, comm::Collective::reduce_scatter, other * 4, 8, 1);
  EXPECT_NEAR(r->dp_comm.realistic_s, 2 * (32 * (2 * ag + rs) + 2 * ag_o + rs_o), 1e-9 * r->dp_comm.realistic_s);
  EXPECT_GE(r->exposed_dp_comm.realistic_s, 2 * (ag + rs) - 1e-12);
  EXPECT_LE(r->exposed_dp_comm.realistic_s, 2 * (ag + rs + 2 * ag_o + rs_o));
  // Memory: the layer computing and one prefetched in bf16, one layer's fp32 gradients.
  EXPECT_DOUBLE_EQ(r->memory.buffers_bytes, (2 * 2 + 4) * layer);
  c.prefetch = 2;
  EXPECT_DOUBLE_EQ(run(m, "h100-sxm", c)->memory.buffers_bytes, (3 * 2 + 4) * layer);
}

TEST(Training, ContextParallelRanksShareTheDataParallelGroup) {
  // Llama-3.1-8B on 8 GPUs, cp 2, dp 4: the two cp ranks hold the same weights, so ZeRO-1
  // shards the 12 bytes of optimizer states per parameter over dp·cp = 8 (Megatron's
  // data-parallel group with context parallelism).
  const auto m = io::bundled_model("llama-3.1-8b");
  TrainConfig c;
  c.gpus = 8;
  c.cp = 2;
  c.seq = 8192;
  c.global_batch = 8;
  c.zero = 1;
  auto r = run(m, "h100-sxm", c);
  EXPECT_EQ(r->dp, 4);
  EXPECT_NEAR(r->memory.optimizer_bytes, 12 * r->params_per_gpu / 8, 1e-6 * r->memory.optimizer_bytes);
}

TEST(Training, DropoutLossAndSequenceParallelKernels) {
  // Llama-2-7B, one sequence of 1024 on one GPU, naive attention with dropout: the dropout of
  // the 32 x 1024 x 1024 probabilities reads them (2 bytes each) and writes them (2) and a
  // 1-byte mask: 5 x 33554432 = 167772160 bytes, as many again in backward.
  const auto m = io::bundled_model("llama-2-7b");
  TrainConfig c;
  c.gpus = 1;
  c.seq = 1024;
  c.attention = ops::AttentionImpl::naive;
  c.dropout = true;
  auto r = run(m, "h100-sxm", c);
  const model::Graph& g = r->graph;
  bool seen_dropout = false, seen_loss = false;
  for (int i = 0; i < g.op_count; ++i) {
    const std::string_view n = g.ops[i].name;
    if (n == "attn_dropout") {
      seen_dropout = true;
      EXPECT_DOUBLE_EQ(r->fwd[i].bytes, 5 * 33554432.0);
      EXPECT_DOUBLE_EQ(r->bwd[i].bytes, r->fwd[i].bytes);
    }
    if (n == "cross_entropy") {
      // Megatron's vocab-parallel cross-entropy: 38 bytes per logit forward, 14 backward;
      // 1024 x 32000 logits.
      seen_loss = true;
      EXPECT_DOUBLE_EQ(r->fwd[i].bytes, 38 * 1024 * 32000.0);
      EXPECT_NEAR(r->bwd[i].bytes, 14 * 1024 * 32000.0, 1e-3);
    }
    if (n == "attn_residual") {
      // Megatron's fused bias-dropout-add: reads two 2-byte tensors, writes one and a 1-byte mask.
      EXPECT_DOUBLE_EQ(r->fwd[i].bytes, (2 * 2 + 2 + 1) * 1024 * 4096.0);
    }
  }
  EXPECT_TRUE(seen_dropout);
  EXPECT_TRUE(seen_loss);
  // TP 2 with sequence parallelism: a gather's backward moves twice its bytes (the gradient's
  // reduce-scatter and the input gathered again).
  c.gpus = 2;
  c.tp = 2;
  c.sequence_parallel = true;
  c.dropout = false;
  c.attention = ops::AttentionImpl::flash;
  auto sp = run(m, "h100-sxm", c);
  for (int i = 0; i < sp->graph.op_count; ++i) {
    const std::string_view n = sp->graph.ops[i].name;
    if (n == "attn_allgather") {
      EXPECT_DOUBLE_EQ(sp->bwd[i].link_bytes, 2 * sp->fwd[i].link_bytes);
    }
    if (n == "attn_reducescatter") {
      EXPECT_DOUBLE_EQ(sp->bwd[i].link_bytes, sp->fwd[i].link_bytes);
    }
  }
}

TEST(Training, ContextParallelismSharesTheSameWork) {
  // The same step on 4 GPUs (tp 4) or 16 (tp 4, cp 4): the model FLOPs are the same work.
  const auto m = io::bundled_model("llama-3.1-8b");
  TrainConfig a, b;
  a.gpus = 4;
  a.tp = 4;
  a.seq = b.seq = 16384;
  a.global_batch = b.global_batch = 1;
  b.gpus = 16;
  b.tp = 4;
  b.cp = 4;
  auto ra = run(m, "h100-sxm", a);
  auto rb = run(m, "h100-sxm", b);
  EXPECT_NEAR(rb->model_flops_per_step / ra->model_flops_per_step, 1.0, 1e-12);
  // Ulysses: Q, K, V (8 + 2 + 2 heads of 128 per tp rank) and the output (8 heads) exchanged
  // by all-to-all over 4 GPUs 4 ranks apart (tp 4 innermost): two of them share each 8-GPU
  // node, so of each chip's 3/4 sent, 1/4 stays on NVLink and 2/4 leaves over the network,
  // the link that bounds the exchange and carries it in the graph.
  double a2a = 0;
  for (int i = 0; i < rb->graph.op_count; ++i) {
    const std::string n = rb->graph.ops[i].name;
    if (n.rfind("cp_alltoall", 0) == 0) a2a += rb->graph.ops[i].cost.total_link_bytes();
  }
  EXPECT_DOUBLE_EQ(a2a, 0.5 * 4096 * (12 + 8) * 128 * 2.0);
  EXPECT_LT(rb->step_time_s, ra->step_time_s);
}

TEST(Training, PowerSgdAndFp8) {
  const auto m = io::bundled_model("llama-2-7b");
  // GEMM weights (k x n) of Llama-2-7B: per layer 4 of 4096², 2 of 4096x11008, 1 of
  // 11008x4096; the LM head 4096x32000.
  const double MW = 32 * (4 * 4096.0 * 4096 + 3 * 4096.0 * 11008) + 4096.0 * 32000;
  TrainConfig c;
  c.gpus = 64;
  c.seq = 4096;
  c.global_batch = 64;
  c.powersgd_rank = 32;
  auto r = run(m, "a100-80gb", c);
  // Each matrix travels as its rank-32 factors (k + n)·32, in fp32; the rest (embedding
  // table, norms) uncompressed.
  const double factors = 32 * 32 * (4 * 8192.0 + 3 * (4096 + 11008.0)) + 32 * (4096 + 32000.0);
  EXPECT_DOUBLE_EQ(r->grad_bytes_uncompressed, 6738415616.0 * 4);
  EXPECT_DOUBLE_EQ(r->grad_bytes, (6738415616.0 - MW + factors) * 4);
  EXPECT_GT(r->compression.realistic_s, 0);

  // fp8 GEMMs: casts of each GEMM's input and weight in forward (3 bytes per element: read
  // bf16, write fp8) and of its output gradient in backward; T = 4096 tokens.
  TrainConfig f;
  f.gpus = 8;
  f.seq = 4096;
  auto bf16 = run(m, "h100-sxm", f);
  f.dtype = DType::fp8_e4m3;
  auto fp8 = run(m, "h100-sxm", f);
  const double T = 4096;
  auto cast = [&](double k, double n) { return 3 * (T * k + k * n) + 3 * T * n; };
  EXPECT_DOUBLE_EQ(fp8->fp8_cast_bytes,
                   32 * (4 * cast(4096, 4096) + 2 * cast(4096, 11008) + cast(11008, 4096)) + cast(4096, 32000));
  EXPECT_LT(fp8->step_time_s, bf16->step_time_s);
  EXPECT_GT(fp8->step_time_s, bf16->step_time_s / 2);  // not the 2x of the peaks: casts, attention, memory-bound ops
}

// --recompute auto: the tensor-by-tensor accounting equals Korthikanti et al.'s when all is
// kept (flash and naive attention, with and without dropout and sequence parallelism), so
// with room to spare auto is `none` exactly.
TEST(Training, AutoRecomputeKeepsEverythingWhenItFits) {
  const auto m = gpt(4096, 32, 8);
  for (bool naive : {false, true}) {
    for (bool dropout : {false, true}) {
      for (bool sp : {false, true}) {
        TrainConfig c;
        c.gpus = 8;
        c.tp = 4;
        c.seq = 1024;
        c.micro_batch = 1;
        c.global_batch = 4;
        c.attention = naive ? ops::AttentionImpl::naive : ops::AttentionImpl::flash;
        c.dropout = dropout;
        c.sequence_parallel = sp;
        auto none = run(m, "h100-sxm", c);
        c.recompute = Recompute::automatic;
        auto autor = run(m, "h100-sxm", c);
        const std::string where = fmt::format("naive {} dropout {} sp {}", naive, dropout, sp);
        EXPECT_NEAR(autor->memory.activation_bytes_per_layer, none->memory.activation_bytes_per_layer,
                    1e-12 * none->memory.activation_bytes_per_layer) << where;
        for (int i = 0; i < autor->tensors.count; ++i) EXPECT_EQ(autor->recompute_choice.action[i], TensorAction::keep) << where;
        EXPECT_DOUBLE_EQ(autor->step_time_s, none->step_time_s) << where;
        EXPECT_DOUBLE_EQ(autor->hardware_flops_per_step, none->hardware_flops_per_step) << where;
      }
    }
  }
}

// Under a budget the choice is the exact best: every keep/recompute combination of the
// layer's tensors, priced one by one, finds no faster one within the budget.
TEST(Training, AutoRecomputeIsTheExactBestUnderTheBudget) {
  const auto m = io::bundled_model("llama-3.1-70b");
  TrainConfig c;
  c.gpus = 64;
  c.tp = 8;
  c.pp = 4;
  c.seq = 8192;
  c.global_batch = 64;
  c.recompute = Recompute::automatic;
  auto r = run(m, "h100-sxm", c);
  const LayerTensors& t = r->tensors;
  ASSERT_EQ(t.count, 9);
  EXPECT_EQ(r->frontier.combinations, 512);  // 2^9 without --offload
  for (double budget : {0.0, 50e6, 150e6, 250e6, r->activation_budget_bytes, 1e12}) {
    const RecomputeChoice& got = r->frontier.best_within(budget);
    double best = 1e30;
    double smallest = 1e30;
    for (int code = 0; code < 512; ++code) {
      std::array<TensorAction, LayerTensors::kMax> a{};
      for (int i = 0; i < 9; ++i) a[i] = (code >> i) & 1 ? TensorAction::recompute : TensorAction::keep;
      const RecomputeChoice x = evaluate_choice(t, a);
      smallest = std::min(smallest, x.kept_bytes);
      if (x.kept_bytes <= budget) best = std::min(best, x.added.realistic_s);
    }
    if (best < 1e30) {
      EXPECT_LE(got.kept_bytes, budget);
      EXPECT_DOUBLE_EQ(got.added.realistic_s, best) << budget;
    } else {
      EXPECT_DOUBLE_EQ(got.kept_bytes, smallest);  // nothing fits: the smallest
    }
  }
  // Within an H100's 81559 MiB: the plan fits where none and selective do not, faster than full.
  EXPECT_TRUE(r->memory.fits);
  EXPECT_LE(r->memory.total_bytes, 81559.0 * 1048576);
  c.recompute = Recompute::full;
  auto full = run(m, "h100-sxm", c);
  c.recompute = Recompute::none;
  auto none = run(m, "h100-sxm", c);
  EXPECT_FALSE(none->memory.fits);
  EXPECT_LT(r->step_time_s, full->step_time_s);
  EXPECT_GT(r->step_time_s, none->step_time_s);
  // With offload the choices are 3^9 and the result is at least as fast.
  c.recompute = Recompute::automatic;
  c.offload = true;
  auto off = run(m, "h100-sxm", c);
  EXPECT_EQ(off->frontier.combinations, 19683);
  EXPECT_LE(off->step_time_s, r->step_time_s);
  EXPECT_TRUE(off->memory.fits);
}

// DeepSeek-V3 (MLA attention; 3 dense layers, then 58 MoE layers with one shared expert) on
// tp 8, ep 4, seq 4096, micro-batch 1: the tensors each kind of layer saves, by hand.
// T = 4096 tokens; h = 7168; 128 heads / tp 8 = 16; q_lora 1536; kv_lora 512; qk head dim
// 128 + 64 rope = 192; v head dim 128; dense MLP 18432 / 8 = 2304; 256 experts, k = 8,
// expert width 2048 / 8 = 256; shared expert width 2048 / 8 = 256; 2-byte activations.
TEST(Training, MlaAndMoeTensorsByHand) {
  const auto m = io::bundled_model("deepseek-v3");
  TrainConfig c;
  c.gpus = 256;
  c.tp = 8;
  c.pp = 1;
  c.ep = 4;
  c.seq = 4096;
  c.global_batch = 32;
  auto r = run(m, "h100-sxm", c);
  const LayerTensors& t = r->tensors;
  ASSERT_EQ(t.kind_count, 2);
  EXPECT_EQ(t.kinds[0].layers, 3);
  EXPECT_EQ(t.kinds[1].layers, 58);
  const double T = 4096;
  auto bytes = [&](int kind, std::string_view name) {
    for (int i = t.kinds[kind].first; i < t.kinds[kind].first + t.kinds[kind].count; ++i) {
      if (t.tensors[i].name == name) return t.tensors[i].bytes;
    }
    ADD_FAILURE() << "no " << name << " in kind " << kind;
    return 0.0;
  };
  const double attention[][2] = {
      {2 * T * 7168, 58720256},               // attn_norm_out (and attn_residual_out, mlp_norm_out)
      {2 * T * 1536, 12582912},               // q_a_out, q_a_norm_out
      {2 * T * 16 * 192, 25165824},           // q_rotated
      {2 * T * 512, 4194304},                 // kv_a_out, kv_a_norm_out
      {2 * T * 16 * (192 + 128), 41943040},   // k_v: decompressed K (192 per head) and V (128)
      {2 * T * 16 * 128 + 4 * T * 16, 17039360},  // attn_out + fp32 log-sum-exp per row and head
  };
  for (const auto& row : attention) EXPECT_DOUBLE_EQ(row[0], row[1]);  // the arithmetic above
  for (int kind : {0, 1}) {
    EXPECT_DOUBLE_EQ(bytes(kind, "attn_norm_out"), 58720256);
    EXPECT_DOUBLE_EQ(bytes(kind, "q_a_out"), 12582912);
    EXPECT_DOUBLE_EQ(bytes(kind, "q_a_norm_out"), 12582912);
    EXPECT_DOUBLE_EQ(bytes(kind, "q_rotated"), 25165824);
    EXPECT_DOUBLE_EQ(bytes(kind, "kv_a_out"), 4194304);
    EXPECT_DOUBLE_EQ(bytes(kind, "kv_a_norm_out"), 4194304);
    EXPECT_DOUBLE_EQ(bytes(kind, "k_v"), 41943040);
    EXPECT_DOUBLE_EQ(bytes(kind, "attn_out"), 17039360);
    EXPECT_DOUBLE_EQ(bytes(kind, "attn_residual_out"), 58720256);
    EXPECT_DOUBLE_EQ(bytes(kind, "mlp_norm_out"), 58720256);
  }
  // Dense MLP: gate, up, act of 2 * T * 2304 = 18874368 each.
  EXPECT_EQ(t.kinds[0].count, 13);
  for (const char* n : {"gate_out", "up_out", "act_out"}) EXPECT_DOUBLE_EQ(bytes(0, n), 18874368) << n;
  // MoE: router softmax 2 * T * 256 plus gates (bf16) and indices (int32) 6 * T * 8 = 2293760;
  // the k * T = 32768 pairs as dispatched and as the experts return them, 2 * 32768 * 7168 =
  // 469762048 each; gate-up 2 * 32768 * 512 = 33554432; act 2 * 32768 * 256 = 16777216;
  // shared expert gate, up, act 2 * T * 256 = 2097152 each.
  EXPECT_EQ(t.kinds[1].count, 18);
  EXPECT_DOUBLE_EQ(bytes(1, "router_probs"), 2293760);
  EXPECT_DOUBLE_EQ(bytes(1, "dispatched"), 469762048);
  EXPECT_DOUBLE_EQ(bytes(1, "experts_gate_up_out"), 33554432);
  EXPECT_DOUBLE_EQ(bytes(1, "experts_act_out"), 16777216);
  EXPECT_DOUBLE_EQ(bytes(1, "experts_out"), 469762048);
  for (const char* n : {"shared_gate_out", "shared_up_out", "shared_act_out"}) EXPECT_DOUBLE_EQ(bytes(1, n), 2097152) << n;
  // Sums: attention side 3 x 58720256 + 2 x 12582912 + 25165824 + 2 x 4194304 + 41943040 +
  // 17039360 = 293863424; dense layer + 3 x 18874368 = 350486528; MoE layer + 2293760 +
  // 2 x 469762048 + 33554432 + 16777216 + 3 x 2097152 = 1292304384. Per layer, averaged over
  // 3 dense and 58 MoE layers, plus the layer input 2 * T * 7168.
  EXPECT_DOUBLE_EQ(t.kinds[0].saved_bytes, 350486528);
  EXPECT_DOUBLE_EQ(t.kinds[1].saved_bytes, 1292304384);
  EXPECT_NEAR(r->memory.activation_bytes_per_layer, (3 * 350486528.0 + 58 * 1292304384.0) / 61 + 58720256,
              1e-12 * r->memory.activation_bytes_per_layer);
  // Without expert parallelism the experts gather their pairs from the norm's output: no
  // dispatched tensor.
  c.ep = 1;
  auto r1 = run(m, "h100-sxm", c);
  EXPECT_EQ(r1->tensors.kinds[1].count, 17);
}

// The front is exact: no choice of keep/recompute(/offload) per tensor, over every kind of
// layer, is faster than the front's best within that choice's own kept bytes. All 2^n
// choices where n is small, random ones (and every single-tensor change from the front's
// plans) where 3^n is not.
TEST(Training, AutoRecomputeFrontIsExactForEveryKindOfModel) {
  struct Case {
    const char* model;
    std::int64_t gpus, tp, ep, seq;
    bool uneven;
  };
  const Case cases[] = {{"mixtral-8x7b", 64, 2, 4, 4096, false},   // MoE, one kind
                        {"gpt-oss-120b", 16, 2, 1, 8192, false},    // MoE, sliding and full layers
                        {"deepseek-v3", 256, 8, 4, 4096, true}};    // MLA; dense and MoE layers
  std::uint64_t rng = 12345;
  auto next = [&] {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
  };
  for (const Case& k : cases) {
    for (bool offload : {false, true}) {
      TrainConfig c;
      c.gpus = k.gpus;
      c.tp = k.tp;
      c.ep = k.ep;
      c.seq = k.seq;
      c.global_batch = k.gpus / k.tp;
      c.uneven_stages = k.uneven;
      c.recompute = Recompute::automatic;
      c.offload = offload;
      auto r = run(io::bundled_model(k.model), "h100-sxm", c);
      const LayerTensors& t = r->tensors;
      const RecomputeFrontier& f = r->frontier;
      const std::string where = fmt::format("{} offload {}", k.model, offload);
      ASSERT_GT(f.count, 1) << where;
      // The front is ordered: more kept, faster (or as fast with fewer tensors changed: no
      // offload that buys nothing).
      for (int i = 1; i < f.count; ++i) {
        const RecomputeChoice &p = f.plans[i], &q = f.plans[i - 1];
        EXPECT_GT(p.kept_bytes, q.kept_bytes) << where;
        EXPECT_TRUE(p.added.realistic_s < q.added.realistic_s || (p.added.realistic_s == q.added.realistic_s && p.changes < q.changes))
            << where;
      }
      auto check = [&](const std::array<TensorAction, LayerTensors::kMax>& a) {
        const RecomputeChoice x = evaluate_choice(t, a);
        const RecomputeChoice& best = f.best_within(x.kept_bytes * (1 + 1e-12));
        EXPECT_LE(best.added.realistic_s, x.added.realistic_s * (1 + 1e-12) + 1e-18) << where;
        return x;
      };
      std::array<TensorAction, LayerTensors::kMax> a{};
      const bool exhaustive = !offload && t.count <= 22;
      const std::int64_t n = exhaustive ? (std::int64_t{1} << t.count) : 200000;
      for (std::int64_t code = 0; code < n; ++code) {
        for (int i = 0; i < t.count; ++i) {
          a[i] = exhaustive ? static_cast<TensorAction>((code >> i) & 1) : static_cast<TensorAction>(next() % (offload ? 3 : 2));
        }
        check(a);
      }
      for (int p = 0; p < f.count; ++p) {
        for (int i = 0; i < t.count; ++i) {
          a = f.plans[p].action;
          for (int v = 0; v < (offload ? 3 : 2); ++v) {
            a[i] = static_cast<TensorAction>(v);
            check(a);
          }
        }
      }
      // The combinations covered: 2^n or 3^n.
      EXPECT_DOUBLE_EQ(f.combinations, std::pow(offload ? 3.0 : 2.0, t.count)) << where;
    }
  }
}

TEST(Training, BadPlans) {
  const auto m = io::bundled_model("llama-2-7b");
  TrainConfig c;
  c.gpus = 8;
  c.tp = 3;
  EXPECT_THROW(run(m, "h100-sxm", c), InputError);  // 8 / 3
  c.tp = 1;
  c.pp = 3;
  c.gpus = 9;
  EXPECT_THROW(run(m, "h100-sxm", c), InputError);  // 32 layers / 3
  c.pp = 1;
  c.gpus = 8;
  c.global_batch = 12;
  EXPECT_THROW(run(m, "h100-sxm", c), InputError);  // 12 over dp 8
  c.global_batch = 0;
  c.ep = 2;
  EXPECT_THROW(run(m, "h100-sxm", c), InputError);  // not MoE
  c.ep = 1;
  c.offload = true;
  EXPECT_THROW(run(m, "h100-sxm", c), InputError);  // --offload without --recompute auto
}

}  // namespace
}  // namespace ridgeline::analysis
