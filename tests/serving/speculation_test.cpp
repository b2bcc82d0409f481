// Speculative decoding: expected tokens per step and the break-even rate by hand, and the
// simulator's verification steps against step-by-step sums (docs/serving.md#speculative-decoding).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cmath>

#include "ridgeline/core/error.hpp"
#include "ridgeline/io/model_file.hpp"
#include "ridgeline/model/speculation.hpp"
#include "ridgeline/serving/simulator.hpp"
#include "ridgeline/serving/step_model.hpp"
#include "toy_chip.hpp"

namespace ridgeline::serving {
namespace {

using testing::kPs;

model::Speculation spec(const model::ModelConfig& draft, int k, std::initializer_list<double> rates, bool mtp) {
  model::Speculation s;
  s.k = k;
  std::size_t i = 0;
  for (const double a : rates) s.accept[i++] = a;
  if (rates.size() == 1) s.accept.fill(*rates.begin());
  s.draft = &draft;
  s.mtp = mtp;
  return s;
}

TEST(Speculation, TokensPerStepByHand) {
  // One rate: 1 + α + ... + α^k = (1 - α^(k+1)) / (1 - α). α = 0.5, k = 2: 1.75; α = 0.8,
  // k = 4: (1 - 0.8^5) / 0.2 = (1 - 0.32768) / 0.2 = 3.3616. α = 0: 1; α = 1: k + 1.
  EXPECT_DOUBLE_EQ(model::tokens_per_step(0.5, 2), 1.75);
  EXPECT_NEAR(model::tokens_per_step(0.8, 4), 3.3616, 1e-12);
  EXPECT_DOUBLE_EQ(model::tokens_per_step(0.0, 5), 1);
  EXPECT_DOUBLE_EQ(model::tokens_per_step(1.0, 5), 6);
  // Per position: 1 + 0.9 + 0.9·0.8 + 0.9·0.8·0.5 = 1 + 0.9 + 0.72 + 0.36 = 2.98.
  const model::ModelConfig none;
  EXPECT_NEAR(model::tokens_per_step(spec(none, 3, {0.9, 0.8, 0.5}, false)), 2.98, 1e-12);
}

TEST(Speculation, BreakEvenRateSolvesTokensPerStepEqualsCostRatio) {
  // k = 2 and a step costing 1.75 plain steps: 1 + α + α² = 1.75 at α = 0.5.
  EXPECT_NEAR(*model::break_even_accept(2, 1.75), 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(*model::break_even_accept(2, 0.9), 0);  // cheaper than a plain step: any rate
  EXPECT_NEAR(*model::break_even_accept(2, 3), 1, 1e-12);   // k + 1 tokens needed: only α = 1
  EXPECT_FALSE(model::break_even_accept(2, 3.01).has_value());
}

TEST(Speculation, AcceptRatesParseAndBadOnesAreRefused) {
  // A list is vLLM's per-position rates, P(positions 1..i accepted): each position given the
  // ones before is r_i / r_{i-1}: 0.9, 0.8/0.9, 0.6/0.8 = 0.75.
  model::Speculation s;
  model::parse_accept("0.9,0.8,0.6", s);
  EXPECT_EQ(s.k, 3);
  EXPECT_EQ(s.form, model::AcceptForm::vllm);
  EXPECT_DOUBLE_EQ(s.accept[0], 0.9);
  EXPECT_DOUBLE_EQ(s.accept[1], 0.8 / 0.9);
  EXPECT_DOUBLE_EQ(s.accept[2], 0.75);
  EXPECT_EQ(model::accept_arg(s, 2), "0.9,0.8");
  // The conditional form is taken as it is.
  model::Speculation c;
  model::parse_accept("conditional:0.9,0.8,0.6", c);
  EXPECT_EQ(c.form, model::AcceptForm::conditional);
  EXPECT_DOUBLE_EQ(c.accept[2], 0.6);
  EXPECT_EQ(model::accept_arg(c, 3), "conditional:0.9,0.8,0.6");
  // docs/serving.md's example, 0.8,0.7,0.6,0.5: vLLM's mean acceptance length 1 + their sum = 3.6;
  // read as conditional rates it would be 1 + 0.8 + 0.56 + 0.336 + 0.168 = 2.864.
  model::Speculation v, k;
  model::parse_accept("0.8,0.7,0.6,0.5", v);
  model::parse_accept("conditional:0.8,0.7,0.6,0.5", k);
  EXPECT_NEAR(model::tokens_per_step(v), 3.6, 1e-12);
  EXPECT_NEAR(model::tokens_per_step(k), 2.864, 1e-12);
  // vLLM's rates cannot rise; one vLLM rate covers one position only.
  model::Speculation rise;
  EXPECT_THROW(model::parse_accept("0.6,0.7", rise), InputError);
  model::Speculation vone;
  vone.k = 2;
  EXPECT_THROW(model::parse_accept("vllm:0.7", vone), InputError);
  model::Speculation one;
  one.k = 4;
  model::parse_accept("0.7", one);
  EXPECT_DOUBLE_EQ(one.accept[3], 0.7);
  for (const char* bad : {"1.5", "-0.1", "x", "0.7,", "nan"}) {
    model::Speculation b;
    EXPECT_THROW(model::parse_accept(bad, b), InputError) << bad;
  }
  model::Speculation two;
  two.k = 3;
  EXPECT_THROW(model::parse_accept("0.9,0.8", two), InputError);
}

TEST(Speculation, ADraftOfAnotherVocabularyIsRefused) {
  const model::ModelConfig llama = io::bundled_model("llama-3.1-8b"), qwen = io::bundled_model("qwen2.5-7b");
  EXPECT_THROW(model::validate(llama, spec(qwen, 2, {0.7}, false)), InputError);
  EXPECT_NO_THROW(model::validate(llama, spec(llama, 2, {0.7}, false)));
}

// vLLM, one client, prompt 1000, gen `gen`, on one H100, llama-3.1-8b with an MTP layer.
struct LoneDrafting {
  model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  model::ModelConfig draft = model::mtp_draft(m);
  hw::System sys = testing::catalog_system("h100-sxm");
  ServeConfig cfg;
  StepModel target, drafter;
  static constexpr double kHost = 0.4e-3 + 1.1e-6;  // vLLM's host time for a step of one request
  explicit LoneDrafting(std::int64_t gen) {
    cfg.engine = engine_preset({EngineKind::vllm, 13}, sys.chip, 1);  // 0.13: the host between steps
    cfg.engine.front_end_s = 0;  // the steps alone
    cfg.accept_spread = 0;       // every request at the rates given (per-request classes: their own tests)
    cfg.workload.arrival = Arrival::closed;
    cfg.workload.concurrency = 1;
    cfg.workload.requests = 2;
    cfg.workload.prompt.a = 1000;
    cfg.workload.gen.a = static_cast<double>(gen);
    cfg.workload.prompt.text = "1000";
    cfg.workload.gen.text = std::to_string(gen);
    model::ForwardConfig f = cfg.forward;
    f.merged_kernels = true;  // the engine's kernels (one chip: no all-reduce)
    target.prepare(m, sys, f);
    drafter.prepare(draft, sys, f);
  }
  // One decode step of q tokens after `c` cached: the target's verification (one graph), the
  // draft's first pass at c + 1 and its k - 1 further passes at c + 1 + k/2, and the host.
  double spec_step(double c, int k) const {
    model::StepMix verify, first, rest;
    verify.add_decode(c + k + 1, 0, k + 1);
    first.add_decode(c + 1, 0);
    rest.add_decode(c + 1 + k / 2.0, 0);
    return target.time(verify, GraphMode::graph) + drafter.time(first, GraphMode::graph) +
           (k - 1) * drafter.time(rest, GraphMode::graph) + kHost;
  }
  double plain_step(double c) const {
    model::StepMix mix;
    mix.add_decode(c + 1, 0);
    return target.time(mix, GraphMode::graph) + kHost;
  }
  // The prefill step: the target's and the draft's over the 1000-token prompt (eager: past
  // vLLM's largest graph, 512 tokens).
  double prefill(bool with_draft) const {
    model::StepMix p;
    p.add_prefill(1000, 1000, 0);
    p.fused_attention = true;
    return target.time(p, GraphMode::eager) + (with_draft ? drafter.time(p, GraphMode::eager) : 0) + kHost;
  }
};

TEST(Speculation, AtAcceptanceOneEachStepEmitsKPlusOneTokens) {
  // α = 1, k = 3: every step emits 4 tokens. After the prefill's first token, 99 remain: 24
  // steps of 4 and a last of 3, 25 decode steps; step j verifies after 1000 + 4j cached.
  LoneDrafting x(100);
  x.cfg.spec = spec(x.draft, 3, {1.0}, true);
  const ServingResult r = simulate(x.m, x.sys, x.cfg);
  double decode = 0;
  for (int j = 0; j < 25; ++j) decode += x.spec_step(1000 + 4 * j, 3);
  EXPECT_EQ(r.steps, 2 * 26);
  EXPECT_EQ(r.decode_steps, 2 * 25);
  EXPECT_DOUBLE_EQ(r.generated_tokens, 200);
  EXPECT_NEAR(r.ttft.mean, x.prefill(true), 200 * kPs);
  EXPECT_NEAR(r.e2e.mean, x.prefill(true) + decode, 200 * kPs);
}

TEST(Speculation, AtAcceptanceZeroItCostsExactlyTheDraftAndVerificationOverhead) {
  // α = 0, k = 2: one token a step, as plain decoding, 99 steps at 1000 + j cached; each
  // costs the 3-token verification and the draft's passes instead of a one-token step, and
  // the prefill the draft's too.
  LoneDrafting plain(100), specd(100);
  specd.cfg.spec = spec(specd.draft, 2, {0.0}, true);
  const ServingResult a = simulate(plain.m, plain.sys, plain.cfg), b = simulate(specd.m, specd.sys, specd.cfg);
  double overhead = specd.prefill(true) - plain.prefill(false);
  for (int j = 0; j < 99; ++j) overhead += specd.spec_step(1000 + j, 2) - plain.plain_step(1000 + j);
  EXPECT_EQ(a.decode_steps, b.decode_steps);
  EXPECT_GT(overhead, 0);
  EXPECT_NEAR(b.e2e.mean - a.e2e.mean, overhead, 400 * kPs);
}

TEST(Speculation, FractionalTokensPerStepAlternate) {
  // Rates 1 and 0.5 over k = 2: 2.5 tokens a step, emitted as 2, 3, 2, 3 (G(d) = floor(2.5 d)).
  // 10 tokens after the prefill's: 4 decode steps, after 1000, 1002, 1005, 1007 cached.
  LoneDrafting x(11);
  x.cfg.spec = spec(x.draft, 2, {1.0, 0.5}, true);
  const ServingResult r = simulate(x.m, x.sys, x.cfg);
  EXPECT_EQ(r.decode_steps, 2 * 4);
  double decode = 0;
  for (const int c : {1000, 1002, 1005, 1007}) decode += x.spec_step(c, 2);
  EXPECT_NEAR(r.e2e.mean, x.prefill(true) + decode, 200 * kPs);
}

TEST(Speculation, AcceptanceClassesShiftTheRatesByNormalQuantiles) {
  // k = 1, α = 0.5, spread 0.2: class c accepts 0.5 + 0.2·z_c, z_c = Φ⁻¹((c + 1/2)/8) =
  // ±0.157311, ±0.488776, ±0.887147, ±1.534121, and emits 1 + α_c a step. Spread 1 clamps:
  // 0.5 - 1.534121 < 0 gives 1 token a step, 0.5 + 0.887147 > 1 gives 2.
  const model::ModelConfig llama = io::bundled_model("llama-3.1-8b");
  const model::Speculation s = spec(llama, 1, {0.5}, false);
  const auto t = model::tokens_per_step_classes(s, 0.2);
  const double z[] = {-1.534121, -0.887147, -0.488776, -0.157311, 0.157311, 0.488776, 0.887147, 1.534121};
  for (int c = 0; c < 8; ++c) EXPECT_NEAR(t[static_cast<std::size_t>(c)], 1.5 + 0.2 * z[c], 1e-12) << c;
  const auto wide = model::tokens_per_step_classes(s, 1.0);
  EXPECT_DOUBLE_EQ(wide[0], 1);
  EXPECT_DOUBLE_EQ(wide[1], 1);
  EXPECT_DOUBLE_EQ(wide[6], 2);
  EXPECT_DOUBLE_EQ(wide[7], 2);
  const auto none = model::tokens_per_step_classes(s, 0);
  for (const double x : none) EXPECT_DOUBLE_EQ(x, 1.5);
}

TEST(Speculation, SlowAcceptingRequestsHaveTheirOwnTpot) {
  // One client, 40 requests of 1000 + 101 tokens, k = 1, α = 0.5. Without spread every request
  // emits 1.5 tokens a step: TPOTs alike (max/min 1 within the context's drift over the
  // same steps). With spread 1 the classes at z <= -0.887 accept nothing (1 token a step: 100
  // steps for the 100 tokens after the first) and those at z >= 0.887 everything (2 a step: 50
  // steps), both over contexts 1000..1100 with steps of the same cost (a 2-token
  // verification and one draft pass, within the context's drift): their TPOTs differ by 2x
  // (within 1%), the p99 is the slow class's. 40 requests: the 8 classes all drawn.
  LoneDrafting x(101);
  x.cfg.workload.requests = 40;
  x.cfg.spec = spec(x.draft, 1, {0.5}, true);
  const ServingResult same = simulate(x.m, x.sys, x.cfg);
  EXPECT_NEAR(same.tpot.max / same.tpot.min, 1, 1e-3);
  x.cfg.accept_spread = 1;
  const ServingResult spread = simulate(x.m, x.sys, x.cfg);
  EXPECT_NEAR(spread.tpot.max / spread.tpot.min, 2, 0.02);
  EXPECT_NEAR(spread.tpot.p99, spread.tpot.max, 1e-3 * spread.tpot.max);
  EXPECT_GT(spread.tpot.p99, 1.2 * same.tpot.p99);
}

TEST(Speculation, EachAttentionDataParallelRankDraftsItsOwnSequences) {
  // Mixtral-8x7B at --tp 1 --ep 2 under vLLM 0.13 (its host between steps: 0.4 ms + 1.1 us per
  // request) with an MTP draft, k = 1 at acceptance 0 (one token a step). Request 0 (8000
  // prompt tokens) on rank 0, request 1 (100) on rank 1 (vLLM's front end: 4 x waiting +
  // running, 0 against 4), both at t = 0 with 2 outputs. Step 1 prefills both: the target's
  // and the draft's pass each on the slower rank (StepModel::slowest: rank 0's chunk, rank 1's
  // padded to its 8000 as vLLM 0.9.1-0.16 pads eager steps, docs/serving.md#rank-padding: the
  // expert part over 16000 tokens); it gives both first tokens. Step 2: the target verifies 2
  // tokens a sequence (rank 0's after 8000 cached, rank 1's after 100) and the draft's pass
  // drafts one token a sequence (rank 0's at 8001, rank 1's at 101), each on the slower rank:
  // E2E - TTFT. Spread evenly over the ranks (at the mean context), the draft's pass is shorter.
  const model::ModelConfig m = io::bundled_model("mixtral-8x7b");
  const model::ModelConfig draft = model::mtp_draft(m);
  const hw::System sys = testing::catalog_system("h100-sxm");
  ServeConfig cfg;
  cfg.engine = engine_preset({EngineKind::vllm, 13}, sys.chip, 1);
  cfg.engine.front_end_s = 0;
  cfg.accept_spread = 0;
  cfg.spec = spec(draft, 1, {0.0}, true);
  cfg.forward.ep = 2;
  cfg.workload.arrival = Arrival::trace;
  cfg.workload.trace = {{0, 8000, 2, -1, 0}, {0, 100, 2, -1, 0}};
  cfg.workload.requests = 2;
  const ServingResult r = simulate(m, sys, cfg);
  model::ForwardConfig f;
  f.ep = 2;
  f.merged_kernels = true;
  f.moe_a2a = model::ForwardConfig::MoeA2A::gather;  // the serving engines' (engine_preset): the ranks' tokens gathered
  StepModel target, drafter;
  target.prepare(m, sys, f);
  drafter.prepare(draft, sys, f);
  const double host = 0.4e-3 + 2 * 1.1e-6;
  model::StepMix prompts[2], both;
  prompts[0].add_prefill(8000, 8000, 0);
  prompts[1].add_prefill(100, 100, 0);
  both.add_prefill(8000, 8000, 0);
  both.add_prefill(100, 100, 0);
  for (model::StepMix* x : {&prompts[0], &prompts[1], &both}) x->fused_attention = true;
  prompts[1].prefill_tokens += 7900;  // rank 1's 100 padded to rank 0's 8000
  both.prefill_tokens += 7900;
  // Rank 0's 8000 tokens are past vLLM's 512-token graphs: the step runs eagerly.
  const double prefill = target.slowest(prompts, 2, both, GraphMode::eager) + drafter.slowest(prompts, 2, both, GraphMode::eager);
  model::StepMix verify[2], verify_both, first[2], first_both;
  verify[0].add_decode(8002, 0, 2);
  verify[1].add_decode(102, 0, 2);
  verify_both.add_decode(8002, 0, 2);
  verify_both.add_decode(102, 0, 2);
  first[0].add_decode(8001, 0);
  first[1].add_decode(101, 0);
  first_both.add_decode(8001, 0);
  first_both.add_decode(101, 0);
  const double decode = target.slowest(verify, 2, verify_both, GraphMode::graph) + drafter.slowest(first, 2, first_both, GraphMode::graph);
  EXPECT_EQ(r.measured_requests, 2);
  EXPECT_NEAR(r.ttft.max, prefill + host, 400 * kPs);
  EXPECT_NEAR(r.ttft.min, prefill + host, 400 * kPs);
  EXPECT_NEAR(r.e2e.max - r.ttft.max, decode + host, 800 * kPs);
  EXPECT_GT(drafter.slowest(first, 2, first_both, GraphMode::graph), drafter.time(first_both, GraphMode::graph) + 1e-6);
}

TEST(Speculation, TheDraftsWeightsAndCacheTakeMemory) {
  // llama-3.1-8b's MTP layer, bf16: q 4096² = 16,777,216, k and v 2·4096·1024 = 8,388,608,
  // o 16,777,216, gate/up/down 3·4096·14336 = 176,160,768, two norms 2·4096 = 8,192:
  // 218,112,000 weights, 436,224,000 bytes (embedding, final norm and head shared with the target). Its KV: 2 (K, V) · 1 layer · 8 heads
  // · 128 · 2 bytes = 4096 bytes a token, beside the target's 2·32·8·128·2 = 131,072.
  LoneDrafting x(100);
  x.cfg.spec = spec(x.draft, 2, {0.7}, true);
  const ServeMemory mem = serve_memory(x.m, x.sys, x.cfg);
  EXPECT_DOUBLE_EQ(mem.draft_weights_bytes, 436224000);
  EXPECT_DOUBLE_EQ(mem.draft_kv_bytes_per_token, 4096);
  EXPECT_DOUBLE_EQ(mem.kv_bytes_per_token, 131072 + 4096);
}

TEST(Speculation, LoadedEnginesPreemptAndStillReturnEveryBlock) {
  // A cache too small for the load: engines preempt (recompute, swap) or retract; every
  // request ends with all its output, and the simulator's end check finds every block back.
  const model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  const model::ModelConfig draft = model::mtp_draft(m);
  const hw::System sys = testing::catalog_system("h100-sxm");
  for (const EngineKind kind : {EngineKind::vllm, EngineKind::sglang, EngineKind::trtllm, EngineKind::static_batch}) {
    for (const bool swap : {false, true}) {
      if (swap && kind != EngineKind::vllm) continue;
      ServeConfig cfg;
      cfg.engine = engine_preset(kind, sys.chip, 1);
      cfg.engine.kv_blocks_override = 6400 / cfg.engine.kv_block;  // 6400 tokens
      if (swap) cfg.engine.preemption = Preemption::swap;
      cfg.workload.arrival = Arrival::closed;
      cfg.workload.concurrency = 32;
      cfg.workload.requests = 300;
      cfg.workload.prompt = parse_length("uniform:100,400", "--prompt");
      cfg.workload.gen = parse_length("uniform:50,600", "--gen");
      cfg.spec = spec(draft, 3, {0.8, 0.6, 0.4}, true);
      ServingResult r;
      ASSERT_NO_THROW(r = simulate(m, sys, cfg)) << name(kind) << (swap ? " swap" : "");
      EXPECT_EQ(r.unfinished, 0) << name(kind);
      EXPECT_EQ(r.rejected, 0) << name(kind);
      EXPECT_GT(r.output_tokens_per_s, 0);
      const double outputs = r.output_tokens_per_s * r.measured_span_s;
      EXPECT_NEAR(r.generated_tokens, outputs, 1e-6 * outputs) << name(kind);
      if (kind == EngineKind::vllm) {
        EXPECT_GT(r.preemptions, 0);
      }
    }
  }
}

RC_GTEST_PROP(Speculation, AnyRunReturnsEveryBlockAndEmitsEveryToken, ()) {
  // Random engines, block sizes, draft lengths and rates, on a sliding-window model with
  // prompts crossing its window, under a cache that forces preemption: every request ends
  // with its whole output (the simulator throws on a block not returned).
  static const model::ModelConfig m = io::bundled_model("mistral-7b");
  static const model::ModelConfig draft = model::mtp_draft(m);
  static const hw::System sys = testing::catalog_system("h100-sxm");
  const auto kind = *rc::gen::element(EngineKind::vllm, EngineKind::sglang, EngineKind::trtllm, EngineKind::static_batch);
  ServeConfig cfg;
  cfg.engine = engine_preset(kind, sys.chip, 1);
  cfg.engine.kv_block = *rc::gen::element<std::int64_t>(1, 16, 32);
  cfg.engine.kv_blocks_override = *rc::gen::inRange<std::int64_t>(9000, 40000) / cfg.engine.kv_block;
  if (kind == EngineKind::vllm && *rc::gen::arbitrary<bool>()) cfg.engine.preemption = Preemption::swap;
  cfg.workload.arrival = Arrival::closed;
  cfg.workload.concurrency = *rc::gen::inRange(1, 24);
  cfg.workload.requests = 60;
  cfg.workload.seed = *rc::gen::inRange(1, 1000);
  cfg.workload.prompt = parse_length("uniform:100,5000", "--prompt");
  cfg.workload.gen = parse_length("uniform:1,300", "--gen");
  const int k = *rc::gen::inRange(1, 6);
  cfg.spec = spec(draft, k, {0.5}, true);
  for (int i = 0; i < k; ++i) cfg.spec.accept[static_cast<std::size_t>(i)] = *rc::gen::inRange(0, 101) / 100.0;
  const ServingResult r = simulate(m, sys, cfg);
  RC_ASSERT(r.unfinished == 0);
  RC_ASSERT(r.rejected == 0);
  const double outputs = r.output_tokens_per_s * r.measured_span_s;
  RC_ASSERT(std::abs(r.generated_tokens - outputs) <= 1e-6 * outputs);
}

}  // namespace
}  // namespace ridgeline::serving
