// Expert-parallel load imbalance of a balanced router (model/routing.hpp): hand-derived values.
#include "ridgeline/model/routing.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "ridgeline/io/model_file.hpp"

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
  // DeepSeek-V3 (E 256, top 8) over 2 GPUs (--tp 1 --ep 2): e_2 = 1/√π, so one token gives
  // F = 1 + √(2·248/(255·8))/√π = 1 + 0.4930891·0.5641896 = 1.2781960 (cap 2·min(8, 128)/8 = 2).
  const ModelConfig m = io::bundled_model("deepseek-v3");
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

}  // namespace
}  // namespace ridgeline::model
