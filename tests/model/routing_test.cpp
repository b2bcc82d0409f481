// Expert-parallel load imbalance, balanced and measured routers (model/routing.hpp): hand-derived values.
#include "ridgeline/model/routing.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "ridgeline/io/model_file.hpp"
#include "ridgeline/model/transformer.hpp"

namespace ridgeline::model {
namespace {

TEST(Routing, ExpectedMaximumOfNormalsInClosedForm) {
  // E[max of n standard normals]: 0 for one draw; 1/√π for two (E|Z1 − Z2|/2, Z1 − Z2 ~ N(0, 2));
  // 3/(2√π) for three; (3/√π)·(1/2 + arcsin(1/3)/π) for four (the orthant probability of
  // three pairwise differences).
  const double pi = 3.14159265358979323846;
  EXPECT_EQ(expected_max_normal(1), 0);
  EXPECT_NEAR(expected_max_normal(2), 1 / std::sqrt(pi), 1e-12);                                 // 0.5641895835
  EXPECT_NEAR(expected_max_normal(3), 3 / (2 * std::sqrt(pi)), 1e-12);                           // 0.8462843753
  EXPECT_NEAR(expected_max_normal(4), 3 / std::sqrt(pi) * (0.5 + std::asin(1.0 / 3) / pi), 1e-12);  // 1.0293753730
}

TEST(Routing, BusiestChipsTouchedExpertsByHand) {
  // Two chips of n = 2 experts, each touched with probability p = 1/4: a chip's count is
  // Bin(2, 1/4), pmf 9/16, 6/16, 1/16, CDF F(0) = 9/16, F(1) = 15/16. E[max of two] =
  // (1 − F(0)²) + (1 − F(1)²) = (1 − 81/256) + (1 − 225/256) = 175/256 + 31/256 = 206/256.
  EXPECT_DOUBLE_EQ(busiest_of_binomials(2, 0.25, 2), 206.0 / 256);
  // p = 3/4 (past one half, counted by the untouched, Bin(2, 1/4)): E[max touched] = 2 −
  // E[min untouched] = 2 − ((1 − G(0))² + (1 − G(1))²) = 2 − (49/256 + 1/256) = 462/256.
  EXPECT_DOUBLE_EQ(busiest_of_binomials(2, 0.75, 2), 462.0 / 256);
  // At one half both ways agree: E[max] of two Bin(2, 1/2) = (1 − (1/4)²) + (1 − (3/4)²) =
  // 15/16 + 7/16 = 22/16.
  EXPECT_DOUBLE_EQ(busiest_of_binomials(2, 0.5, 2), 22.0 / 16);
  // A count whose first probability underflows a double: 32768 experts a chip at p = 0.05,
  // (0.95)^32768 = 10^−730. The sum starts 12 deviations below the mean; the binomial is
  // near normal there, mean 1638.4 and σ = √(32768·0.05·0.95) = 39.454, and the larger of
  // two normals is σ/√π above the mean: 1638.4 + 22.259 = 1660.66.
  EXPECT_NEAR(busiest_of_binomials(32768, 0.05, 2), 1638.4 + std::sqrt(32768 * 0.05 * 0.95) / std::sqrt(3.14159265358979), 0.1);
  // Past one half likewise (p = 0.95: 32768 − the lesser of two Bin(32768, 0.05)).
  EXPECT_NEAR(busiest_of_binomials(32768, 0.95, 2), 32768 - 1638.4 + std::sqrt(32768 * 0.05 * 0.95) / std::sqrt(3.14159265358979), 0.1);
  // A count that is not whole is floored (the chips divide the experts in every layout).
  EXPECT_DOUBLE_EQ(busiest_of_binomials(2.5, 0.25, 2), 206.0 / 256);
  // One chip: its mean; certain touch: all of them.
  EXPECT_DOUBLE_EQ(busiest_of_binomials(32, 0.25, 1), 8);
  EXPECT_DOUBLE_EQ(busiest_of_binomials(32, 1, 8), 32);
  // A toy MoE of E = 4 experts, top 2, over 2 chips: two tokens touch an expert with
  // p = 1 − (1 − 2/4)² = 3/4, so the busiest chip reads 462/256 = 1.8046875 experts where the
  // mean is 1.5. One token of top 1 (p = 1/4): 206/256 from the binomials, but one expert is
  // surely read somewhere: min(1, E·p) = 1.
  ModelConfig m = io::bundled_model("mixtral-8x7b");
  m.moe.experts = 4;
  m.moe.experts_per_token = 2;
  EXPECT_DOUBLE_EQ(touched_experts(m, 2, 2), 462.0 / 256);
  EXPECT_DOUBLE_EQ(touched_experts(m, 1, 2), 3);  // no expert parallelism: the mean of all 4
  m.moe.experts_per_token = 1;
  EXPECT_DOUBLE_EQ(touched_experts(m, 2, 1), 1);
}

TEST(Routing, MixtralOverFourGpusAtFortyEightTokens) {
  // Mixtral-8x7B (E 8, top 2) at --tp 1 --ep 4: G 4 GPUs of 2 experts. A step of 48 tokens
  // routes 96 pairs, 24 per GPU on average; F = 1 + e_4·√(G·(E − k)/((E − 1)·k·T))
  // = 1 + 1.0293753730·√(4·6/(7·2·48)) = 1 + 1.0293753730·0.1889822 = 1.1945337.
  // One token: 1 + 1.0293753730·√(12/7) = 2.3477687, below the cap G·min(k, E/G)/k = 4.
  const ModelConfig m = io::bundled_model("mixtral-8x7b");
  ForwardConfig f;
  f.tp = 1;
  f.ep = 4;
  f.expert_imbalance = 0;
  const RoutingImbalance r = routing_imbalance(m, f);
  EXPECT_TRUE(r.model());
  EXPECT_NEAR(r.at(48), 1.1945337, 1e-7);
  EXPECT_NEAR(r.at(1), 2.3477687, 1e-7);
  EXPECT_EQ(r.cap, 4);
  EXPECT_EQ(r.at(0), 1);  // nothing routed
  // More tokens, less imbalance: F − 1 falls as 1/√T (a quarter at 16 times the tokens).
  EXPECT_NEAR(r.at(16 * 48) - 1, (r.at(48) - 1) / 4, 1e-12);
}

TEST(Routing, DeepSeekOverTwoGpusOneToken) {
  // DeepSeek-V3's shape (E 256, top 8) with a balanced router (its measurement taken out) over
  // 2 GPUs (--tp 1 --ep 2): e_2 = 1/√π, so one token gives
  // F = 1 + √(2·248/(255·8))/√π = 1 + 0.4930891·0.5641896 = 1.2781960 (cap 2·min(8, 128)/8 = 2).
  ModelConfig m = io::bundled_model("deepseek-v3");
  m.moe.routing = {};
  ForwardConfig f;
  f.tp = 1;
  f.ep = 2;
  f.expert_imbalance = 0;
  const RoutingImbalance r = routing_imbalance(m, f);
  EXPECT_NEAR(r.at(1), 1.2781960, 1e-7);
  EXPECT_EQ(r.cap, 2);
  // Whole experts over a TP group (--tp 2 --experts ep): the same 2 GPUs, the same F.
  f.ep = 1;
  f.tp = 2;
  f.experts = ForwardConfig::Experts::expert;
  EXPECT_NEAR(routing_imbalance(m, f).at(1), 1.2781960, 1e-7);
}

TEST(Routing, OneExpertPerGpuCapsTheBusiestAtOnePairPerToken) {
  // Four experts, top 2, on 4 GPUs of one expert: a token's 2 pairs land on 2 different GPUs,
  // so one token gives max 1 over a mean 2/4: F = 2 exactly, the cap G·min(k, E/G)/k = 4·1/2;
  // the central limit alone would say 1 + e_4·√(4·2/(3·2)) = 2.1886.
  ModelConfig m = io::bundled_model("mixtral-8x7b");
  m.moe.experts = 4;
  ForwardConfig f;
  f.tp = 1;
  f.ep = 4;
  f.expert_imbalance = 0;
  const RoutingImbalance r = routing_imbalance(m, f);
  EXPECT_EQ(r.cap, 2);
  EXPECT_EQ(r.at(1), 2);
}

TEST(Routing, CentralLimitAgainstTheExactBinomial) {
  // Two experts, top 1, one per GPU (G 2): a GPU's load of 16 tokens is Binomial(16, 1/2), and
  // E[max] = 8 + E|L − 8| = 8 + 8·C(16, 8)/2^16 = 8 + 8·12870/65536 = 9.5710449: F = 1.1963806.
  // The model: 1 + e_2·√(2·1/(1·1·16)) = 1 + 0.5641896·0.3535534 = 1.1994711, 0.26% above.
  ModelConfig m = io::bundled_model("mixtral-8x7b");
  m.moe.experts = 2;
  m.moe.experts_per_token = 1;
  ForwardConfig f;
  f.tp = 1;
  f.ep = 2;
  f.expert_imbalance = 0;
  const RoutingImbalance r = routing_imbalance(m, f);
  EXPECT_NEAR(r.at(16), 1.1994711, 1e-7);
  EXPECT_NEAR(r.at(16), 1.1963806, 0.0035);
}

TEST(Routing, ExpectedMaximumOfLogNormalsInClosedForm) {
  // Two log-normals of mean 1, X_i = e^(s·Z_i − s²/2): E[max] = 2·E[X_1·1{Z_1 > Z_2}] and under
  // the tilt by e^(s·Z_1) Z_1 is N(s, 1), so E[max] = 2·P(N(s, 2) > 0) = 2·Φ(s/√2):
  // 2·Φ(0.7071068) = 1.5204999 at s = 1; 2·Φ(2.1213203) = 1.9661051 at s = 3.
  EXPECT_NEAR(expected_max_lognormal(2, 1), 1.5204999, 1e-7);
  EXPECT_NEAR(expected_max_lognormal(2, 3), 1.9661051, 1e-7);
  EXPECT_EQ(expected_max_lognormal(1, 1), 1);  // one draw: its mean
  EXPECT_EQ(expected_max_lognormal(8, 0), 1);  // no spread
  // Small s: e^(s·x − s²/2) = 1 + s·x + O(s²), so E[max] = 1 + s·e_n + O(s²).
  EXPECT_NEAR((expected_max_lognormal(4, 1e-4) - 1) / 1e-4, expected_max_normal(4), 1e-3);
}

TEST(Routing, SkewOfASumOfExpertsByFentonWilkinson) {
  // E 256 experts over 2 GPUs of 128 at σ 1: a GPU's log-spread s = √(ln(1 + (e − 1)/128))
  // = √ln(1.0134241) = 0.1154763, and the busier of 2 takes 2·Φ(s/√2) = 2·Φ(0.0816546) =
  // 1.0650782 of the mean: excess 0.0650782. One GPU: nothing to be busier than; σ 0: none.
  EXPECT_NEAR(routing_skew_excess(256, 2, 1), 0.0650782, 1e-7);
  EXPECT_EQ(routing_skew_excess(256, 1, 1), 0);
  EXPECT_EQ(routing_skew_excess(256, 32, 0), 0);
}

TEST(Routing, DeepSeekReproducesItsMeasurementAndExtrapolates) {
  // deepseek-v3's `_routing`: TensorRT-LLM tech blog 4 Table 1, DeepSeek-R1 over G 32 GPUs at
  // T 4096 tokens a step without a balancer, F 2.564. At --tp 1 --ep 32 the model gives F 2.564
  // at 4096 tokens. Its chance part there: e_32·√(32·248/(255·8))/√4096 = 0.0637832, so the
  // persistent skew is √(1.564² − 0.0637832²) = 1.5626989 (what many tokens tend to).
  const ModelConfig m = io::bundled_model("deepseek-v3");
  ForwardConfig f;
  f.tp = 1;
  f.ep = 32;
  f.expert_imbalance = 0;
  const RoutingImbalance r = routing_imbalance(m, f);
  EXPECT_TRUE(r.measured);
  EXPECT_NEAR(r.at(4096), 2.564, 1e-9);
  EXPECT_NEAR(r.scale / 64, 0.0637832, 1e-7);
  EXPECT_NEAR(r.skew, std::sqrt(1.564 * 1.564 - (r.scale / 64) * (r.scale / 64)), 1e-9);
  EXPECT_NEAR(r.at(1e12), 1 + r.skew, 1e-9);
  // σ and the extrapolation, from an independent Python transcription of the model (the same
  // quadrature, bisection and Fenton–Wilkinson sum): σ 1.0884214; over 8 GPUs F∞ 1.421101 and
  // F 1.456205 at 64 tokens; over 64 GPUs F∞ 4.036319. A Monte-Carlo of 4000 layers of 256
  // log-normal experts at this σ gives F∞ 1.420 over 8 GPUs and 2.606 over 32 (docs).
  EXPECT_NEAR(routing_skew_sigma(m), 1.0884214, 1e-7);
  f.ep = 8;
  const RoutingImbalance r8 = routing_imbalance(m, f);
  EXPECT_NEAR(1 + r8.skew, 1.421101, 1e-6);
  EXPECT_NEAR(r8.at(64), 1.456205, 1e-6);
  f.ep = 64;
  EXPECT_NEAR(1 + routing_imbalance(m, f).skew, 4.036319, 1e-6);
}

TEST(Routing, AMeasurementAtChanceIsTheBalancedRouter) {
  // σ → 0: a figure at or below a balanced router's at the measured point (1.0637832 at G 32,
  // T 4096) leaves no skew, and F is the balanced router's, bit for bit.
  ModelConfig m = io::bundled_model("deepseek-v3");
  m.moe.routing.imbalance = 1.05;
  ForwardConfig f;
  f.tp = 1;
  f.ep = 16;
  f.expert_imbalance = 0;
  EXPECT_EQ(routing_skew_sigma(m), 0);
  const RoutingImbalance r = routing_imbalance(m, f);
  ModelConfig balanced = m;
  balanced.moe.routing = {};
  const RoutingImbalance b = routing_imbalance(balanced, f);
  EXPECT_TRUE(r.measured);
  EXPECT_FALSE(b.measured);
  EXPECT_EQ(r.skew, 0);
  for (const double T : {1.0, 7.0, 64.0, 4096.0}) EXPECT_EQ(r.at(T), b.at(T));
}

TEST(Routing, GivenFactorsAndNoExpertParallelism) {
  const ModelConfig m = io::bundled_model("mixtral-8x7b");
  ForwardConfig f;
  f.tp = 1;
  f.ep = 8;
  f.expert_imbalance = 1.5;  // --expert-imbalance 1.5: every step, whatever its tokens
  EXPECT_FALSE(routing_imbalance(m, f).model());
  EXPECT_EQ(routing_imbalance(m, f).at(3), 1.5);
  f.expert_imbalance = 0;
  f.ep = 1;  // experts tensor-parallel on one GPU group: nothing to imbalance
  EXPECT_EQ(routing_imbalance(m, f).at(3), 1);
  const ModelConfig dense = io::bundled_model("llama-3.1-8b");
  EXPECT_EQ(routing_imbalance(dense, f).at(3), 1);
  // The layout check takes 0 (the routing model) and refuses other factors below 1.
  f.ep = 8;
  EXPECT_EQ(check(m, f), LayoutFault::none);
  f.expert_imbalance = 0.5;
  EXPECT_EQ(check(m, f), LayoutFault::ep_imbalance);
}

TEST(Routing, ExpertRowTilesByHand) {
  // DeepSeek-V3: 256 experts, 8 a token, q = 1/32 (model::expert_row_tiles, tiles of 128 rows).
  const ModelConfig m = io::bundled_model("deepseek-v3");
  // One token: an expert has a row with probability q and then runs a whole tile: 128 q / q.
  EXPECT_NEAR(expert_row_tiles(m, 1, 128), 128, 1e-12);
  // Two: a tile when it has one row or two, 128 (1 − (31/32)²) over 2/32 rows: 128 (1 − q/2) = 126.
  EXPECT_NEAR(expert_row_tiles(m, 2, 128), 126, 1e-12);
  // No tiles, no tokens: the rows as routed; under a token, a whole tile a row (the limit).
  EXPECT_EQ(expert_row_tiles(m, 4096, 1), 1);
  EXPECT_EQ(expert_row_tiles(m, 0, 128), 1);
  EXPECT_EQ(expert_row_tiles(m, 0.5, 128), 128);
  // DeepGEMM's contiguous layout (no engine rule): tiles of 128 at any size, at the busiest
  // chip's rows (its share F times the tokens).
  EXPECT_EQ(expert_row_tiles(m, 7, 1, ForwardConfig::ExpertTiles{}), expert_row_tiles(m, 7, 128));
  EXPECT_EQ(expert_row_tiles(m, 1000, 1.5, ForwardConfig::ExpertTiles{}), expert_row_tiles(m, 1500, 128));
  // TensorRT-LLM's port, by the MoE call's tokens (its expected_m): swapped below 32 (not
  // priced), tiles of 64 rows up to 64 tokens, of 128 past them.
  const ForwardConfig::ExpertTiles port{0, 32, 64};
  EXPECT_EQ(expert_row_tiles(m, 31, 1, port), 1);
  EXPECT_EQ(expert_row_tiles(m, 32, 1, port), expert_row_tiles(m, 32, 64));
  EXPECT_EQ(expert_row_tiles(m, 64, 1, port), expert_row_tiles(m, 64, 64));
  EXPECT_EQ(expert_row_tiles(m, 65, 1, port), expert_row_tiles(m, 65, 128));
  // Its 1600 tokens: 50 rows an expert in tiles of 128, one unless past 128 rows (P = 1e-21):
  // 128/50 = 2.56 rows a routed row; in tiles of 64 it would be one unless past 64 rows
  // (P(m > 64) for Bin(1600, 1/32), σ = 6.96: 0.021812), 64·1.021812/50 = 1.307920.
  EXPECT_NEAR(expert_row_tiles(m, 1600, 1, port), 2.56, 1e-6);
  EXPECT_NEAR(expert_row_tiles(m, 1600, 64), 1.307920, 1e-6);
  // vLLM's DeepGEMM MoE from 128 tokens (Triton's below).
  const ForwardConfig::ExpertTiles vllm{128, 0, 0};
  EXPECT_EQ(expert_row_tiles(m, 127, 1, vllm), 1);
  EXPECT_EQ(expert_row_tiles(m, 128, 1, vllm), expert_row_tiles(m, 128, 128));
  // Spread wider than a tile (σ = √(65536·31/32) = 252 at 2^21 tokens): the remainder is
  // uniform over 0..127 rows, (128 − 1)/2 padded rows an expert on a mean of 65536.
  EXPECT_NEAR(expert_row_tiles(m, 2097152, 128), 1 + 127.0 / 131072, 1e-15);
  // Just inside the walk (σ = √16368 = 127.94 at 540 672 tokens, mean 16 896): the summed terms
  // agree with the uniform remainder to the e^(−2π²σ²/128²) ≈ 3e-9 of its amplitude.
  EXPECT_NEAR(expert_row_tiles(m, 540672, 128), 1 + 127.0 / (2 * 16896), 1e-9);
  // Every expert takes every token (k = E): 100 rows each in one tile of 128.
  ModelConfig all = m;
  all.moe.experts = all.moe.experts_per_token = 8;
  EXPECT_NEAR(expert_row_tiles(all, 100, 128), 1.28, 1e-15);
}

TEST(Routing, OneStageExpertReadsByHand) {
  // AITER's one-stage fused MoE reads an expert's weights once per tile of its rows
  // (model::expert_weight_reads): E·E[⌈x/tile⌉] for x ~ Bin(tokens, k/E).
  ModelConfig m = io::bundled_model("deepseek-v3");
  // Two experts, one a token, three tokens, tiles of 2: x is 0, 1, 2, 3 with 1/8, 3/8, 3/8, 1/8,
  // ⌈x/2⌉ 0, 1, 1, 2: 3/8 + 3/8 + 2/8 = 1 an expert, 2 reads; the fixed expert, every token's,
  // ⌈3/2⌉ = 2 more.
  m.moe.experts = 2;
  m.moe.experts_per_token = 1;
  EXPECT_NEAR(expert_weight_reads(m, 1, 3, {2, false}), 2, 1e-12);
  EXPECT_NEAR(expert_weight_reads(m, 1, 3, {2, true}), 4, 1e-12);
  EXPECT_EQ(expert_weight_reads(m, 1, 0, {2, true}), 0);
  // Every expert takes every token (k = E = 4): 70 rows each, ⌈70/32⌉ = 3 tiles, 12 reads.
  m.moe.experts = m.moe.experts_per_token = 4;
  EXPECT_NEAR(expert_weight_reads(m, 1, 70, {32, false}), 12, 1e-12);
  // DeepSeek-V3 (8 of 256, q = 1/32), 64 tokens in tiles of 32: an expert's rows pass 32 with
  // probability under 1e-30, so one read an expert touched: 256 (1 − (31/32)^64) = 222.44249.
  const ModelConfig ds = io::bundled_model("deepseek-v3");
  EXPECT_NEAR(expert_weight_reads(ds, 1, 64, {32, false}), 222.44248768551, 1e-8);
  // No tile: the touched experts.
  EXPECT_EQ(expert_weight_reads(ds, 1, 64, {}), touched_experts(ds, 1, 64));
}

}  // namespace
}  // namespace ridgeline::model
