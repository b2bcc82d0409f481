// Continuous batching in steady state: one user by hand, and many against the simulator
// (docs/serving.md#steady-state).
#include "ridgeline/serving/steady_state.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>

#include "ridgeline/analysis/advice.hpp"
#include "ridgeline/core/units.hpp"
#include "ridgeline/io/model_file.hpp"
#include "toy_chip.hpp"

namespace ridgeline::serving {
namespace {

struct SteadyRun {
  model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  hw::System sys = testing::catalog_system("h100-sxm");
  EngineConfig e = engine_preset({EngineKind::vllm, 13}, sys.chip, 1);  // 0.13: the host between steps
  StepModel step;
  SteadyRun() {
    e.front_end_s = 0;  // the server's front end apart: SteadyState.TheFrontEnd*
    model::ForwardConfig f;
    step.prepare(m, sys, engine_forward(f, e));
  }
};

TEST(SteadyState, OneUserIsAPrefillStepThenDecodeStepsAlone) {
  // B = 1: no other user's prompt or decode shares a step. Its prompt of 1000 fits the
  // 8192-token budget: one prefill step (eager: past vLLM's 512-token graphs) and the host's 0.4 ms + 1.1 us;
  // each of its 99 decode steps one sequence at the mean context 1000 + 100/2 (one graph).
  SteadyRun x;
  const SteadyState s = steady_state(x.step, x.e, 1000, 100, 1, 0);
  model::StepMix p, d;
  p.add_prefill(1000, 1000, 0);
  p.fused_attention = true;
  d.add_decode(1050, 0);
  d.fused_attention = true;
  const double host = 0.4e-3 + 1.1e-6;
  const double ttft = x.step.time(p, GraphMode::eager) + host, tpot = x.step.time(d, GraphMode::graph) + host;
  EXPECT_DOUBLE_EQ(s.cycle_steps, 100);
  EXPECT_DOUBLE_EQ(s.prefill_steps, 1);
  EXPECT_NEAR(s.ttft_s, ttft, 1e-15);
  EXPECT_NEAR(s.tpot_s, tpot, 1e-15);
  EXPECT_NEAR(s.output_tokens_per_s, 100 / (ttft + 99 * tpot), 1e-9);
}

TEST(SteadyState, AnEngineThatDoesNotChunkRunsNoPromptOverItsBudget) {
  // TensorRT-LLM's preset runs each prompt whole in one step of at most 8192 tokens: a prompt
  // of 8193 never starts; one of 8192 does, alone in its step (B = 1: TTFT one prefill step).
  // vLLM's chunks the longer prompt.
  SteadyRun x;
  const EngineConfig trt = engine_preset(EngineKind::trtllm, x.sys.chip, 1);
  EXPECT_FALSE(steady_state(x.step, trt, 8193, 100, 1, 0).stable);
  const SteadyState fits = steady_state(x.step, trt, 8192, 100, 1, 0);
  EXPECT_TRUE(fits.stable);
  EXPECT_DOUBLE_EQ(fits.prefill_steps, 1);
  EXPECT_TRUE(steady_state(x.step, x.e, 8193, 100, 1, 0).stable);
  // The search's model says why a group cannot run: too_long, before any memory is sized.
  analysis::InferenceConfig cfg;
  cfg.prompt = 12000;
  cfg.gen = 100;
  ContinuousBatching t(EngineKind::trtllm), v(EngineKind::vllm);
  EXPECT_EQ(t.prepare(x.m, x.sys, cfg), analysis::Reject::too_long);
  EXPECT_EQ(v.prepare(x.m, x.sys, cfg), analysis::Reject::count);
  cfg.prompt = 8192;
  EXPECT_EQ(t.prepare(x.m, x.sys, cfg), analysis::Reject::count);
}

TEST(SteadyState, ACycleBoundByTheBudgetIsFoundWhereTheRoundsCircle) {
  // 7600 users of 100 + 1000 tokens in 8192-token steps: each needs 1000 steps a cycle at
  // least, and the cycle's 7600·(100 + 999) tokens take 7600·1099/8192 = 1019.580078125
  // steps of the budget. There the decodes, 7600·999/L = 7446.6 a step, leave c = 745.4
  // tokens: its prompt fits one step (999 + 1 = 1000 below L) and B·P/c = L. Iterated, the
  // rounds alternate between 1000 and 1267.5 and never settle.
  SteadyRun x;
  const SteadyState s = steady_state(x.step, x.e, 100, 1000, 7600, 0);
  EXPECT_TRUE(s.stable);
  EXPECT_NEAR(s.cycle_steps, 7600.0 * 1099 / 8192, 1e-6);
  EXPECT_NEAR(s.decode_seqs, 7600.0 * 999 / (7600.0 * 1099 / 8192), 1e-6);
}

TEST(SteadyState, DecodesFillingTheBudgetLeaveNoRoomForPrompts) {
  // 9000 users of 10 + 1000 tokens: B(G - 1)/L decodes alone exceed the 8192-token budget.
  SteadyRun x;
  EXPECT_FALSE(steady_state(x.step, x.e, 10, 1000, 9000, 0).stable);
}

// B users in the simulator's closed loop under the fixture's engine, their lengths uniform
// around P and G (so that they do not run in lock-step as fixed lengths make them), 40
// requests each, the first 10 each left out as warm-up.
ServingResult closed_loop(const SteadyRun& x, int P, int G, int B) {
  ServeConfig cfg;
  cfg.engine = x.e;
  cfg.workload.arrival = Arrival::closed;
  cfg.workload.concurrency = B;
  cfg.workload.requests = 40 * B;
  cfg.workload.warmup = 10 * B;
  cfg.workload.prompt = parse_length(fmt::format("uniform:{},{}", P / 2, 3 * P / 2), "--prompt");
  cfg.workload.gen = parse_length(fmt::format("uniform:{},{}", G / 2, 3 * G / 2), "--gen");
  return simulate(x.m, x.sys, cfg);
}

// The steady state against the simulator's closed loop of the same users (lengths uniform
// around the means), over five (prompt, generation, users) setups: TPOT within 7%, throughput
// within 10%, TTFT within `ttft_tolerance`.
void expect_agrees_with_closed_loop(const SteadyRun& x, double ttft_tolerance) {
  for (const auto& [P, G, B] : {std::tuple{1000, 100, 8}, {1000, 100, 64}, {200, 400, 128}, {3000, 200, 32}, {1000, 250, 256}}) {
    const ServingResult r = closed_loop(x, P, G, B);
    const SteadyState s = steady_state(x.step, x.e, P, G, B, 0);
    EXPECT_NEAR(s.tpot_s / r.tpot.mean, 1, 0.07) << P << "/" << G << " x " << B;
    EXPECT_NEAR(s.ttft_s / r.ttft.mean, 1, ttft_tolerance) << P << "/" << G << " x " << B;
    EXPECT_NEAR(s.output_tokens_per_s / r.output_tokens_per_s, 1, 0.10) << P << "/" << G << " x " << B;
  }
}

TEST(SteadyState, AgreesWithTheSimulatorsClosedLoop) {
  // The same users in the simulator: a closed loop whose lengths vary (uniform around the
  // means, so that the users do not run in lock-step as fixed lengths make them), warm-up
  // excluded. The steady state of the mean lengths agrees within 10% on TTFT and throughput
  // and 7% on TPOT (measured: TTFT within 3.3%, throughput 4.7%, TPOT 2.1%; it prices steps at
  // the mean context and the budget's queueing by its mean, and the H100's GEMM waves are a
  // step function of a step's tokens, which the mean step lands on one side of).
  SteadyRun x;
  expect_agrees_with_closed_loop(x, 0.10);
}

// SGLang's preset on the fixture's plan.
void use_sglang(SteadyRun& x) {
  x.e = engine_preset(EngineKind::sglang, x.sys.chip, 1);
  x.e.front_end_s = 0;
  model::ForwardConfig f;
  x.step.prepare(x.m, x.sys, engine_forward(f, x.e));
}

TEST(SteadyState, PrefillFirstByHand) {
  // SGLang, prompts of 1000 (within the 8192 budget: whole in one step). t(x): a prefill step
  // of x prompts (the engine's mixed-step graphs) or the host's 0.4 ms + 1.1 us a request,
  // whichever is longer (SGLang overlaps its scheduling with the device); d(n): a decode step
  // of n sequences at the mean context 1000 + G/2 (one graph), likewise.
  SteadyRun x;
  use_sglang(x);
  const double host = 0.4e-3, per_request = 1.1e-6;
  auto t = [&](double n) {
    model::StepMix p;
    p.add_prefill(1000, 1000, 0);
    p.scale(n);
    p.fused_attention = x.e.fused_attention;
    return std::max(x.step.time(p, x.e.mixed_graphs), host + n * per_request);
  };
  auto d = [&](double n, double kv) {
    model::StepMix m;
    m.add_decode(kv, 0);
    m.scale(n);
    m.fused_attention = x.e.fused_attention;
    return std::max(x.step.time(m, decode_step_graphs(x.e, n, n)), host + n * per_request);
  };
  // One user, 100 outputs: its prompt's step, then 99 decode steps alone (the simulator's lone
  // request).
  const SteadyState one = steady_state(x.step, x.e, 1000, 100, 1, 0);
  EXPECT_NEAR(one.ttft_s, t(1), 1e-15);
  EXPECT_NEAR(one.tpot_s, d(1, 1050), 1e-15);
  EXPECT_DOUBLE_EQ(one.cycle_steps, 100);
  // Two users, 3 outputs: D = 2 decode steps a cycle, each user ending in either at random.
  // Its own group is itself alone or both, 1/2 each: TTFT (t(1) + t(2))/2. The cycle's prefill
  // time: in each of the 2 steps, one user ends with probability 1/2 and both with 1/4:
  // 2(t(1)/2 + t(2)/4) = t(1) + t(2)/2, of which the others' is that less its own group's
  // (t(1) + t(2))/2: t(1)/2 over its 2 decode steps, TPOT d(2) + t(1)/4. Steps a cycle:
  // 2 + 2(1/2 + 1/4) = 3.5.
  const SteadyState two = steady_state(x.step, x.e, 1000, 3, 2, 0);
  EXPECT_NEAR(two.ttft_s, (t(1) + t(2)) / 2, 1e-15);
  EXPECT_NEAR(two.tpot_s, d(2, 1001.5) + t(1) / 4, 1e-15);
  EXPECT_NEAR(two.e2e_s, two.ttft_s + 2 * two.tpot_s, 1e-15);
  EXPECT_DOUBLE_EQ(two.cycle_steps, 3.5);
  // Two outputs: one decode step a cycle, so both users always end together: TTFT t(2), and
  // no other group's prompt pauses its decode: TPOT d(2).
  const SteadyState lock = steady_state(x.step, x.e, 1000, 2, 2, 0);
  EXPECT_NEAR(lock.ttft_s, t(2), 1e-15);
  EXPECT_NEAR(lock.tpot_s, d(2, 1001), 1e-15);
}

TEST(SteadyState, PrefillFirstAgreesWithTheSimulatorsClosedLoop) {
  // SGLang's prefill-first steps against the simulator, the same users and lengths as vLLM's
  // above. Measured: TTFT 2.6-9.1% below, TPOT 0.2-3.7% below, throughput 3.2-6.4% above. The
  // closed form prices the mean prompt, and on the H100 a 1000-token prefill sits just below
  // a GEMM wave (the simulator's prompts of 1000 to 1040 tokens take 21.6 to 27.1 ms).
  SteadyRun x;
  use_sglang(x);
  expect_agrees_with_closed_loop(x, 0.12);
}

TEST(SteadyState, TheFrontEndWaitsForTheStepItLandsIn) {
  // The preset's front end, F = 4 ms. One user finds the engine idle: TTFT = F + the prefill
  // step of the test above, TPOT unchanged, and its cycle F longer. Two users of 3 outputs
  // under SGLang (PrefillFirstByHand): a user's next prompt reaches the scheduler F after its
  // last token, inside a step of the cycle: 2 decode steps d = d(2) at context 1001.5 (device
  // or host, whichever is longer) and 1.5 prefill steps taking t(1) + t(2)/2, a mean step
  // s = (2d + t(1) + t(2)/2) / 3.5. It joins when the step it lands in ends, ceil(F/s)·s after
  // that last token, and a step later still on an engine that plans ahead (SGLang's overlap):
  // TTFT grows by (ceil(F/s) + 1)·s.
  SteadyRun x;
  const double F = 4e-3;
  const SteadyState none = steady_state(x.step, x.e, 1000, 100, 1, 0);
  x.e.front_end_s = F;
  const SteadyState one = steady_state(x.step, x.e, 1000, 100, 1, 0);
  EXPECT_NEAR(one.ttft_s, F + none.ttft_s, 1e-15);
  EXPECT_DOUBLE_EQ(one.tpot_s, none.tpot_s);
  EXPECT_NEAR(one.output_tokens_per_s, 100 / (F + none.e2e_s), 1e-9);
  use_sglang(x);
  const SteadyState two0 = steady_state(x.step, x.e, 1000, 3, 2, 0);
  x.e.front_end_s = F;
  const SteadyState two = steady_state(x.step, x.e, 1000, 3, 2, 0);
  model::StepMix m;
  m.add_decode(1001.5, 0);
  m.scale(2);
  m.fused_attention = x.e.fused_attention;
  const double d = std::max(x.step.time(m, decode_step_graphs(x.e, 2, 2)), 0.4e-3 + 2 * 1.1e-6);
  auto t = [&](double n) {
    model::StepMix p;
    p.add_prefill(1000, 1000, 0);
    p.scale(n);
    p.fused_attention = x.e.fused_attention;
    return std::max(x.step.time(p, x.e.mixed_graphs), 0.4e-3 + n * 1.1e-6);
  };
  const double mean = (2 * d + t(1) + t(2) / 2) / 3.5;
  ASSERT_TRUE(x.e.overlap_scheduling);
  EXPECT_NEAR(two.ttft_s, two0.ttft_s + (std::ceil(F / mean) + 1) * mean, 1e-15);
  EXPECT_DOUBLE_EQ(two.tpot_s, two0.tpot_s);
}

TEST(SteadyState, WithTheFrontEndItStillAgreesWithTheSimulatorsClosedLoop) {
  // The agreement tests above with the presets' front end of 4 ms, in both models.
  SteadyRun x;
  x.e.front_end_s = 4e-3;
  expect_agrees_with_closed_loop(x, 0.10);
  use_sglang(x);
  x.e.front_end_s = 4e-3;
  expect_agrees_with_closed_loop(x, 0.12);
}

TEST(SteadyState, TheSearchReturnsThePlansSteadyStateNumbers) {
  // search infer with continuous batching: every plan returned carries exactly what
  // ContinuousBatching prices at its batch (its group prepared alone), and fits its cache;
  // under vLLM's mixed steps and SGLang's prefill-first ones.
  SteadyRun x;
  for (const EngineKind kind : {EngineKind::vllm, EngineKind::sglang}) {
    analysis::InferSearchSpace s;
    s.chips_max = 2;
    s.base.prompt = 512;
    s.base.gen = 64;
    s.batch_max = 48;
    s.weight_dtypes = {DType::bf16};
    s.kv_dtypes = {DType::bf16};
    s.top = 3;
    s.batch_model = [kind] { return std::make_unique<ContinuousBatching>(kind); };
    const analysis::InferSearchResult r = analysis::search_infer(x.m, x.sys, s);
    ASSERT_FALSE(r.best.empty());
    for (const analysis::InferPlan& p : r.best) {
      ContinuousBatching cb(kind);
      ASSERT_EQ(cb.prepare(x.m, x.sys, analysis::infer_config(s.base, p)), analysis::Reject::count);
      const analysis::ServingPoint pt = cb.at(static_cast<double>(p.batch));
      EXPECT_TRUE(pt.fits);
      EXPECT_EQ(p.ttft_s, pt.ttft_s);
      EXPECT_EQ(p.tpot_s, pt.tpot_s);
      EXPECT_EQ(p.output_tokens_per_s, pt.output_tokens_per_s);
      EXPECT_LE(p.batch, cb.max_batch());
    }
  }
}

TEST(SteadyState, AdviceOnTheBatchIsSizedAsTheEngineServesIt) {
  // advise infer with vLLM serving the users: "serve a larger batch" names the batch (the
  // critical batch within what the static analysis and the engine's cache hold) and the
  // tokens/s, TTFT and TPOT that many users get in the steady state, its gain per request
  // batch (1/now - 1/then)·B·G from those numbers.
  SteadyRun x;
  analysis::InferenceConfig cfg;
  cfg.batch = 8;
  cfg.prompt = 1024;
  cfg.gen = 256;
  auto r = std::make_unique<analysis::InferenceResult>();
  analysis::infer(x.m, x.sys, cfg, *r);
  ContinuousBatching served(EngineKind::vllm);
  const std::vector<analysis::Advice> advice = analysis::advise_inference(x.m, x.sys, cfg, *r, &served);
  const auto it = std::find_if(advice.begin(), advice.end(), [](const analysis::Advice& a) { return a.rule == "batch-below-critical"; });
  ASSERT_NE(it, advice.end());
  ContinuousBatching cb(EngineKind::vllm);
  ASSERT_EQ(cb.prepare(x.m, x.sys, cfg), analysis::Reject::count);
  std::int64_t big = std::min<std::int64_t>(r->max_batch, static_cast<std::int64_t>(std::ceil(r->critical_batch)));
  big = std::min(big, cb.max_batch());
  const analysis::ServingPoint now = cb.at(8), then = cb.at(static_cast<double>(big));
  EXPECT_NEAR(it->gain_s, (1 / now.output_tokens_per_s - 1 / then.output_tokens_per_s) * 8 * 256, 1e-12);
  EXPECT_NE(it->fix.find(fmt::format("serve {} users continuously", big)), std::string::npos) << it->fix;
  EXPECT_NE(it->fix.find(format_quantity(then.ttft_s, Quantity::time)), std::string::npos) << it->fix;
  // TensorRT-LLM's preset never runs 12000-token prompts (whole, within 8192 tokens a step):
  // the advice says so, and sizes no batch for it.
  cfg.prompt = 12000;
  analysis::infer(x.m, x.sys, cfg, *r);
  ContinuousBatching trt(EngineKind::trtllm);
  const std::vector<analysis::Advice> none = analysis::advise_inference(x.m, x.sys, cfg, *r, &trt);
  auto rule = [&](const char* name) {
    return std::find_if(none.begin(), none.end(), [&](const analysis::Advice& a) { return a.rule == name; }) != none.end();
  };
  EXPECT_TRUE(rule("prompt-over-budget"));
  EXPECT_FALSE(rule("batch-below-critical"));
}

}  // namespace
}  // namespace ridgeline::serving
