// The serving simulator: hand-derived runs (one client, a lone request, static batching equal
// to `infer`, a cache that fills at a known step), laws every run obeys, property tests.
#include "ridgeline/serving/simulator.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <memory>

#include "ridgeline/analysis/inference.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/io/model_file.hpp"
#include "ridgeline/serving/step_model.hpp"
#include "toy_chip.hpp"

namespace ridgeline::serving {
namespace {

constexpr double kPs = 1e-12;      // simulated time is kept in whole picoseconds
constexpr double kExact = 1e-9;    // relative, for sums of step times rounded to picoseconds

hw::System h100() { return testing::catalog_system("h100-sxm"); }

// vLLM 0.9-0.13: its host time between device steps, not hidden behind them (async
// scheduling off), so that a lone request's times are its steps plus the host's, one by one.
constexpr EngineRef kVllmSerialHost{EngineKind::vllm, 13};

ServeConfig base(EngineRef kind, const hw::System& sys, std::int64_t tp = 1) {
  ServeConfig cfg;
  cfg.forward.tp = tp;
  cfg.engine = engine_preset(kind, sys.chip, tp);
  cfg.workload.prompt.a = 1000;
  cfg.workload.gen.a = 100;
  cfg.workload.prompt.text = "1000";
  cfg.workload.gen.text = "100";
  cfg.engine.front_end_s = 0;  // the server's front end apart (its own test)
  return cfg;
}

// vLLM's TTFT of a lone request of `prompt` tokens: one step of the whole prompt (one fused
// attention kernel, piecewise graphs) and the host's 0.4 ms + 1.1 us for one request.
double lone_prefill_s(const StepModel& step, double prompt) {
  model::StepMix prefill;
  prefill.add_prefill(prompt, prompt, 0);
  prefill.fused_attention = true;
  return step.time(prefill, GraphMode::piecewise) + 0.4e-3 + 1.1e-6;
}

model::StepMix decode_mix(double n, double context) {
  model::StepMix mix;
  for (int i = 0; i < n; ++i) mix.add_decode(context, 0);
  return mix;
}

TEST(Simulator, OneClientIsOnePrefillThenOneDecodeStepPerToken) {
  // vLLM (0.13: the host between steps), one client at a time: a request arrives when the last ends, is admitted at once
  // (queue 0), its 1000-token prompt fits the 8192-token budget: TTFT is one step of a
  // 1000-token chunk (piecewise graphs) plus the host's 0.4 ms + 1.1 us for one request.
  // Each of the 99 decode steps is one token at context 1001..1099 as one graph, plus the
  // same host time: TPOT is their mean, E2E = TTFT + 99 x TPOT.
  const model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  const hw::System sys = h100();
  ServeConfig cfg = base(kVllmSerialHost, sys);
  cfg.workload.arrival = Arrival::closed;
  cfg.workload.concurrency = 1;
  cfg.workload.requests = 3;
  const ServingResult r = simulate(m, sys, cfg);
  StepModel step;
  model::ForwardConfig f = cfg.forward;  // one chip: no all-reduce, whichever the engine runs
  f.merged_kernels = true;               // vLLM's kernels: QKV and gate-up merged, residuals in the norms
  step.prepare(m, sys, f);
  const double host = 0.4e-3 + 1.1e-6;
  const double ttft = lone_prefill_s(step, 1000);
  double decode = 0;
  for (int c = 1001; c <= 1099; ++c) decode += step.time(decode_mix(1, c), GraphMode::graph) + host;
  EXPECT_EQ(r.measured_requests, 3);
  EXPECT_NEAR(r.queue.max, 0, kPs);
  EXPECT_NEAR(r.ttft.mean, ttft, 200 * kPs);
  EXPECT_NEAR(r.ttft.p99, ttft, 200 * kPs);
  EXPECT_NEAR(r.tpot.mean, decode / 99, 200 * kPs);
  EXPECT_NEAR(r.e2e.mean, ttft + decode, 200 * kPs);
  EXPECT_EQ(r.steps, 3 * 100);
  EXPECT_EQ(r.preemptions, 0);
  EXPECT_TRUE(r.sustainable);
}

TEST(Simulator, TheFrontEndDelaysEachRequestBeforeTheSchedulerSeesIt) {
  // As the test above, with the server's front end of F = 4 ms (the preset's): a client sends
  // at the end of its last request, the scheduler sees the request F later, and its steps are
  // the same. TTFT = F + the prefill step, E2E = F + TTFT's step + the 99 decode steps, the
  // queue (admitted less seen) still 0, and the three requests end at 3 x (F + their steps).
  const model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  const hw::System sys = h100();
  ServeConfig cfg = base(kVllmSerialHost, sys);
  EXPECT_EQ(engine_preset(kVllmSerialHost, sys.chip).front_end_s, 4e-3);  // tt-inference-server issue #190
  cfg.engine.front_end_s = 4e-3;
  cfg.workload.arrival = Arrival::closed;
  cfg.workload.concurrency = 1;
  cfg.workload.requests = 3;
  const ServingResult r = simulate(m, sys, cfg);
  StepModel step;
  model::ForwardConfig f = cfg.forward;
  f.merged_kernels = true;
  step.prepare(m, sys, f);
  const double host = 0.4e-3 + 1.1e-6, F = 4e-3;
  const double prefill = lone_prefill_s(step, 1000);
  double decode = 0;
  for (int c = 1001; c <= 1099; ++c) decode += step.time(decode_mix(1, c), GraphMode::graph) + host;
  EXPECT_NEAR(r.queue.max, 0, kPs);
  EXPECT_NEAR(r.ttft.mean, F + prefill, 200 * kPs);
  EXPECT_NEAR(r.e2e.mean, F + prefill + decode, 300 * kPs);
  EXPECT_NEAR(r.tpot.mean, decode / 99, 200 * kPs);
  EXPECT_NEAR(r.makespan_s, 3 * (F + prefill + decode), 1000 * kPs);
  EXPECT_EQ(r.steps, 3 * 100);
}

TEST(Simulator, AnEngineThatSchedulesAheadHidesItsHostAndLagsANewRequestByAStep) {
  // vLLM 0.14+ (async scheduling): step n+1 is planned while step n runs. Request A arrives at
  // 0 on an idle engine: its prefill step could not be planned ahead, so it takes the device's
  // P plus the host's h = 0.4 ms + 1.1 us; its decode steps follow back to back, each the
  // device's (d1 at context 1001, d2 at 1002; the host, 0.4 ms, hides behind them). Request B
  // arrives halfway through A's first decode step, at t_B = P + h + d1/2: the next step was
  // fixed when that one started, so B's prompt runs in the step after it, beside A's token at
  // context 1003: B's TTFT is that mixed step's end less t_B, (P + h + d1 + d2 + m) - t_B =
  // d1/2 + d2 + m, where m is the mixed step's device time (the host hides behind it too).
  // Without the lag it would be d1/2 + m.
  const model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  const hw::System sys = h100();
  ServeConfig cfg = base(EngineKind::vllm, sys);
  ASSERT_TRUE(cfg.engine.overlap_scheduling);
  StepModel step;
  model::ForwardConfig f = cfg.forward;
  f.merged_kernels = true;
  step.prepare(m, sys, f);
  const double h = 0.4e-3 + 1.1e-6;
  const double P = lone_prefill_s(step, 1000) - h;  // the device's time of the prefill step
  const double d = step.time(decode_mix(1, 1001), GraphMode::graph), d2 = step.time(decode_mix(1, 1002), GraphMode::graph);
  model::StepMix mixed = decode_mix(1, 1003);
  mixed.add_prefill(1000, 1000, 0);
  mixed.fused_attention = true;
  const double mx = step.time(mixed, GraphMode::piecewise);
  const double t_b = P + h + d / 2;
  cfg.workload.arrival = Arrival::constant;
  cfg.workload.qps = 1 / t_b;
  cfg.workload.requests = 2;
  cfg.workload.gen.a = 10;
  cfg.workload.gen.text = "10";
  std::vector<RequestRecord> seen;
  simulate(m, sys, cfg, [&](const RequestRecord& q) { seen.push_back(q); });
  ASSERT_EQ(seen.size(), 2u);
  std::sort(seen.begin(), seen.end(), [](const RequestRecord& a, const RequestRecord& b) { return a.id < b.id; });
  EXPECT_NEAR(seen[0].ttft_s, P + h, 200 * kPs);
  EXPECT_NEAR(seen[1].ttft_s, d / 2 + d2 + mx, 400 * kPs);
}

TEST(Engine, ReleasesMapToThePresetCoveringThem) {
  // vLLM 0.9-0.13: the 0.13 preset (async scheduling off); 0.14 and later: the newest (on).
  EXPECT_EQ(*parse_engine("vllm"), (EngineRef{EngineKind::vllm, 0}));
  EXPECT_EQ(*parse_engine("vllm@0.8.4"), (EngineRef{EngineKind::vllm, 13}));  // V1 the default from 0.8.0
  EXPECT_EQ(*parse_engine("vllm@0.9"), (EngineRef{EngineKind::vllm, 13}));
  EXPECT_EQ(*parse_engine("vllm@0.13.2"), (EngineRef{EngineKind::vllm, 13}));
  EXPECT_EQ(*parse_engine("vllm@0.14"), (EngineRef{EngineKind::vllm, 0}));
  EXPECT_EQ(*parse_engine("vllm@1.2"), (EngineRef{EngineKind::vllm, 0}));
  EXPECT_EQ(*parse_engine("sglang@0.5.4"), (EngineRef{EngineKind::sglang, 0}));
  EXPECT_EQ(*parse_engine("sglang@0.3.0"), (EngineRef{EngineKind::sglang, 3}));  // overlap scheduling opt-in
  EXPECT_FALSE(engine_preset(EngineRef{EngineKind::sglang, 3}, h100().chip).overlap_scheduling);
  EXPECT_EQ(*parse_engine("trtllm@1.1"), (EngineRef{EngineKind::trtllm, 0}));
  EXPECT_EQ(*parse_engine("trtllm@0.20"), (EngineRef{EngineKind::trtllm, 0}));  // the PyTorch backend, opt-in then
  EXPECT_EQ(name(EngineRef{EngineKind::vllm, 13}), "vllm@0.13");
  EXPECT_FALSE(engine_preset(EngineRef{EngineKind::vllm, 13}, h100().chip).overlap_scheduling);
  EXPECT_TRUE(engine_preset(EngineKind::vllm, h100().chip).overlap_scheduling);
  for (const char* bad : {"vllm@", "vllm@0", "vllm@x.1", "vllm@0.13x", "static@1.0", "vllm0.13"}) {
    EXPECT_FALSE(parse_engine(bad).has_value()) << bad;
  }
  for (const char* old : {"vllm@0.6.3", "sglang@0.2", "trtllm@0.17"}) EXPECT_THROW(parse_engine(old), InputError) << old;
}

TEST(Engine, TensorRtLlmCapturesExactDecodeBatchesOnly) {
  // cuda_graph_config's default sizes, no padding: 1-32, 64 and 128 as one graph; a decode
  // batch of 33, 100 or 129 runs as a mixed step does, eagerly.
  const EngineConfig e = engine_preset(EngineKind::trtllm, h100().chip);
  for (const double b : {1.0, 17.0, 32.0, 64.0, 128.0}) EXPECT_EQ(decode_step_graphs(e, b), GraphMode::graph) << b;
  for (const double b : {33.0, 100.0, 129.0, 256.0}) EXPECT_EQ(decode_step_graphs(e, b), GraphMode::eager) << b;
  // vLLM pads to its captured sizes: any batch up to 512 is one graph.
  const EngineConfig v = engine_preset(EngineKind::vllm, h100().chip);
  EXPECT_EQ(decode_step_graphs(v, 100), GraphMode::graph);
  // TensorRT-LLM's host: 0.58 ms shows every step even overlapped, on top of the device's
  // time or the host's 0.4 ms + 1.1 us per request, whichever is longer.
  EXPECT_DOUBLE_EQ(step_period(e, 5e-3, 10), 5e-3 + 0.58e-3);
  EXPECT_DOUBLE_EQ(step_period(e, 0.1e-3, 10), 0.4e-3 + 11e-6 + 0.58e-3);
  EXPECT_DOUBLE_EQ(step_period(e, 5e-3, 10, true), 5e-3 + 0.4e-3 + 11e-6 + 0.58e-3);  // after idle: nothing hid it
}

TEST(Simulator, ARequestInAReusedSlotKeepsItsOwnContext) {
  // Mistral-7B attends over a 4096-token window. One client, 120 requests of 100 + 50
  // tokens: each request takes the pool slot the last one left, and 49 decode steps. The
  // first request's window crossing (decode step 4096 - 100 = 3996 after it started) must
  // not fall on the request that holds its slot then (request 82): every request decodes at
  // contexts 101..149, so every TPOT is the same.
  const model::ModelConfig m = io::bundled_model("mistral-7b");
  const hw::System sys = h100();
  ServeConfig cfg = base(EngineKind::vllm, sys);
  cfg.workload.arrival = Arrival::closed;
  cfg.workload.concurrency = 1;
  cfg.workload.requests = 120;
  cfg.workload.prompt.a = 100;
  cfg.workload.gen.a = 50;
  const ServingResult r = simulate(m, sys, cfg);
  EXPECT_NEAR(r.tpot.max / r.tpot.min, 1, 1e-9);
}

TEST(Simulator, LoneRequestsAtAVanishingRateSeeOnlyTheirOwnPrefill) {
  // QPS -> 0: requests 1000 s apart never meet; TTFT is a lone prefill however many come.
  const model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  const hw::System sys = h100();
  ServeConfig cfg = base(kVllmSerialHost, sys);
  cfg.workload.arrival = Arrival::constant;
  cfg.workload.qps = 0.001;
  cfg.workload.requests = 5;
  const ServingResult r = simulate(m, sys, cfg);
  StepModel step;
  model::ForwardConfig f = cfg.forward;
  f.merged_kernels = true;
  step.prepare(m, sys, f);
  const double ttft = lone_prefill_s(step, 1000);
  EXPECT_NEAR(r.ttft.min, ttft, 200 * kPs);
  EXPECT_NEAR(r.ttft.max, ttft, 200 * kPs);
  EXPECT_NEAR(r.mean_decode_batch, 1, 1e-12);
}

TEST(Simulator, StaticBatchingEqualsInfer) {
  // `--engine static --concurrency B`: B requests arrive together, are prefilled in one step
  // and decoded together: TTFT, TPOT and E2E are infer's at batch B (no host time).
  for (const char* name : {"llama-3.1-70b", "mixtral-8x7b", "gpt-oss-120b"}) {
    const model::ModelConfig m = io::bundled_model(name);
    const hw::System sys = h100();
    for (const bool graphs : {false, true}) {
      ServeConfig cfg = base(EngineKind::static_batch, sys, 4);
      cfg.engine.max_num_seqs = 16;
      if (graphs) cfg.engine.decode_graphs = GraphMode::graph;
      cfg.workload.arrival = Arrival::closed;
      cfg.workload.concurrency = 16;
      cfg.workload.requests = 16;
      const ServingResult r = simulate(m, sys, cfg);
      analysis::InferenceConfig icfg;
      icfg.forward = cfg.forward;
      icfg.batch = 16;
      icfg.prompt = 1000;
      icfg.gen = 100;
      icfg.cuda_graphs = graphs;
      auto inf = std::make_unique<analysis::InferenceResult>();
      analysis::infer_core(m, sys, icfg, *inf);
      EXPECT_NEAR(r.ttft.mean / inf->ttft_s, 1, kExact) << name;
      EXPECT_NEAR(r.ttft.max / inf->ttft_s, 1, kExact) << name;
      EXPECT_NEAR(r.tpot.mean / inf->tpot_s, 1, kExact) << name;
      EXPECT_NEAR(r.e2e.max / inf->e2e_s, 1, kExact) << name;
      EXPECT_EQ(r.steps, 100);  // one prefill, 99 decode steps
    }
  }
}

TEST(Simulator, PreemptionExactlyWhenTheCacheIsFull) {
  // 10 blocks of 16 tokens; two clients with 64-token prompts and 64 output tokens. Step 0
  // prefills both (4 blocks each, 8 of 10). Decode step d (1-based) computes each one's token
  // at position 63 + d: the first needs a fifth block (positions 64..79), 10 of 10. At step
  // 17 both need a sixth: the cache is full, so the later request is preempted and its 5
  // blocks go to the first. It comes back when the first ends (its 8 blocks free): it
  // recomputes its prompt and the 17 tokens it had. Exactly one preemption; with 16 blocks,
  // none (each needs at most ceil(127/16) = 8).
  const model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  const hw::System sys = h100();
  for (const std::int64_t blocks : {10, 16}) {
    ServeConfig cfg = base(EngineKind::vllm, sys);
    cfg.engine.kv_blocks_override = blocks;
    cfg.engine.prefix_caching = false;
    cfg.workload.arrival = Arrival::closed;
    cfg.workload.concurrency = 2;
    cfg.workload.requests = 2;
    cfg.workload.prompt.a = 64;
    cfg.workload.gen.a = 64;
    std::map<std::int64_t, RequestRecord> seen;
    const ServingResult r = simulate(m, sys, cfg, [&](const RequestRecord& q) { seen[q.id] = q; });
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(r.preemptions, blocks == 10 ? 1 : 0);
    EXPECT_EQ(seen[0].preemptions, 0);
    EXPECT_EQ(seen[1].preemptions, blocks == 10 ? 1 : 0);
    EXPECT_LE(r.kv_utilisation_max, 1.0);
    if (blocks == 10) {
      EXPECT_DOUBLE_EQ(r.kv_utilisation_max, 1.0);
      // Request 1 finishes after request 0: 17 + 47 decode tokens and a recompute, in steps
      // that begin once request 0 (64 tokens: steps 0..63) has ended.
      EXPECT_GT(seen[1].e2e_s, seen[0].e2e_s);
    } else {
      EXPECT_NEAR(seen[1].e2e_s, seen[0].e2e_s, kPs);
    }
  }
}

// A random small run of any engine, with a cache small enough to fill now and then.
ServeConfig random_config(const hw::System& sys) {
  const auto kind = *rc::gen::element(EngineKind::vllm, EngineKind::sglang, EngineKind::trtllm, EngineKind::static_batch);
  ServeConfig cfg = base(kind, sys);
  WorkloadSpec& w = cfg.workload;
  w.requests = *rc::gen::inRange(1, 80);
  w.seed = *rc::gen::inRange<std::uint64_t>(1, 1000);
  w.prompt = parse_length(*rc::gen::element<std::string>("200", "uniform:1,600", "lognormal:300,1"), "--prompt");
  w.gen = parse_length(*rc::gen::element<std::string>("1", "40", "uniform:1,120"), "--gen");
  if (*rc::gen::arbitrary<bool>()) {
    w.arrival = Arrival::closed;
    w.concurrency = *rc::gen::inRange(1, 40);
  } else {
    w.arrival = *rc::gen::element(Arrival::poisson, Arrival::gamma, Arrival::constant);
    w.qps = *rc::gen::inRange(1, 400);
    w.cv = 2;
  }
  if (*rc::gen::arbitrary<bool>()) {
    w.prefix_groups = *rc::gen::inRange(1, 4);
    w.prefix_tokens = *rc::gen::inRange(1, 200);  // below every prompt distribution's mean (200, 300.5, 300)
  }
  w.warmup = *rc::gen::inRange<std::int64_t>(0, w.requests);
  cfg.engine.max_batched_tokens = *rc::gen::element<std::int64_t>(256, 2048, 8192);
  cfg.engine.max_num_seqs = std::min<std::int64_t>(cfg.engine.max_batched_tokens, *rc::gen::element<std::int64_t>(4, 64, 256));
  // 50 to 400 blocks of 16 tokens (800 to 6400 tokens) or the same in SGLang's 1-token pages.
  cfg.engine.kv_blocks_override = *rc::gen::inRange(50, 400) * 16 / cfg.engine.kv_block;
  cfg.replicas = *rc::gen::inRange(1, 3);
  cfg.router = *rc::gen::element(Router::round_robin, Router::least_loaded, Router::prefix);
  cfg.find_max_rate = false;
  return cfg;
}

RC_GTEST_PROP(Simulator, EveryRequestEndsOnceAndEveryTokenIsCounted, ()) {
  static const model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  const hw::System sys = h100();
  const ServeConfig cfg = random_config(sys);
  std::map<std::int64_t, int> ends;
  double outputs = 0;
  bool ordered = true;
  const ServingResult r = simulate(m, sys, cfg, [&](const RequestRecord& q) {
    ++ends[q.id];
    if (q.rejected) return;
    outputs += static_cast<double>(q.output);
    ordered = ordered && q.queue_s >= 0 && q.queue_s <= q.ttft_s && q.ttft_s <= q.e2e_s;
  });
  RC_ASSERT(static_cast<std::int64_t>(ends.size()) == cfg.workload.requests);
  for (const auto& [id, n] : ends) RC_ASSERT(n == 1);
  RC_ASSERT(r.unfinished == 0);
  RC_ASSERT(r.generated_tokens == outputs);
  RC_ASSERT(ordered);
  RC_ASSERT(r.kv_utilisation_max <= 1.0);
  RC_ASSERT(r.measured_requests + r.rejected >= cfg.workload.requests - cfg.workload.warmup);
}

RC_GTEST_PROP(Simulator, LittlesLaw, ()) {
  // Mean requests in the system (integrated over time) = arrival rate x mean time in it.
  static const model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  const hw::System sys = h100();
  ServeConfig cfg = random_config(sys);
  cfg.workload.warmup = 0;
  cfg.workload.requests = *rc::gen::inRange(20, 200);
  cfg.engine.kv_blocks_override = 0;  // nothing rejected: every request counts
  const ServingResult r = simulate(m, sys, cfg);
  RC_PRE(r.rejected == 0);
  const double lambda = static_cast<double>(r.simulated_requests) / r.makespan_s;
  RC_ASSERT(std::abs(r.mean_in_system / (lambda * r.e2e.mean) - 1) < 0.01);
  // A request in the system is running or waiting (vLLM's swapped ones wait too), on some replica.
  RC_ASSERT(std::abs(r.mean_running + r.mean_waiting - r.mean_in_system) <= 1e-9 * r.mean_in_system);
}

TEST(Simulator, SameSeedSameResultOtherSeedOther) {
  const model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  const hw::System sys = h100();
  ServeConfig cfg = base(EngineKind::vllm, sys);
  cfg.workload.qps = 20;
  cfg.workload.requests = 300;
  cfg.workload.prompt = parse_length("lognormal:800,0.8", "--prompt");
  cfg.workload.gen = parse_length("uniform:10,300", "--gen");
  const ServingResult a = simulate(m, sys, cfg), b = simulate(m, sys, cfg);
  EXPECT_EQ(a.ttft.p99, b.ttft.p99);
  EXPECT_EQ(a.e2e.mean, b.e2e.mean);
  EXPECT_EQ(a.steps, b.steps);
  cfg.workload.seed = 2;
  const ServingResult c = simulate(m, sys, cfg);
  EXPECT_NE(a.e2e.mean, c.e2e.mean);
}

TEST(Simulator, OverloadIsUnsustainableAndTheLargestSustainableRateIsBelowIt) {
  // Llama-3.1-8B on one H100 with 1000-token prompts: a 1000-token prefill alone is ~20 ms
  // (16 TFLOP at ~790 TFLOP/s), so 100 requests/s is 2 s of prefill per second: never served.
  const model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  const hw::System sys = h100();
  ServeConfig cfg = base(EngineKind::vllm, sys);
  cfg.workload.qps = 100;
  cfg.workload.requests = 400;
  const ServingResult r = simulate(m, sys, cfg);
  EXPECT_FALSE(r.sustainable);
  EXPECT_GT(r.max_sustainable_qps, 0);
  EXPECT_LT(r.max_sustainable_qps, 50);  // at most the prefill-bound rate, 1 / 20 ms
  cfg.workload.qps = r.max_sustainable_qps;
  EXPECT_TRUE(simulate(m, sys, cfg).sustainable);
}

TEST(Simulator, PrefixCachingSkipsTheSharedPrefix) {
  // One group, a 512-token prefix of 1000-token prompts, one client at a time: the first
  // request computes everything, every later one finds the prefix's 32 blocks of 16 cached
  // (512 tokens): hit rate (n - 1)·512 / (n·1000).
  const model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  const hw::System sys = h100();
  ServeConfig cfg = base(EngineKind::vllm, sys);
  cfg.workload.arrival = Arrival::closed;
  cfg.workload.concurrency = 1;
  cfg.workload.requests = 10;
  cfg.workload.prefix_groups = 1;
  cfg.workload.prefix_tokens = 512;
  const ServingResult r = simulate(m, sys, cfg);
  EXPECT_NEAR(r.prefix_hit_rate, 9.0 * 512 / (10 * 1000), 1e-12);
  EXPECT_LT(r.ttft.p50, r.ttft.max);  // the first request's prefill is the longest
  cfg.engine.prefix_caching = false;
  EXPECT_EQ(simulate(m, sys, cfg).prefix_hit_rate, 0);
}

TEST(Simulator, ReplicasShareTheLoad) {
  // Four replicas behind round-robin take four times the rate one takes at the same latency
  // scale: at a rate one replica cannot sustain, four can.
  const model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  const hw::System sys = h100();
  ServeConfig cfg = base(EngineKind::vllm, sys);
  cfg.workload.qps = 60;
  cfg.workload.requests = 600;
  cfg.find_max_rate = false;
  EXPECT_FALSE(simulate(m, sys, cfg).sustainable);
  cfg.replicas = 4;
  const ServingResult r = simulate(m, sys, cfg);
  EXPECT_TRUE(r.sustainable);
  EXPECT_EQ(r.gpus, 4);
}

TEST(Simulator, BadConfigurationsAreInputErrors) {
  const model::ModelConfig m = io::bundled_model("llama-3.1-70b");
  const hw::System sys = h100();
  ServeConfig cfg = base(EngineKind::vllm, sys);  // 70B in bf16 (141 GB) on one 80 GB chip
  EXPECT_THROW(simulate(m, sys, cfg), InputError);
  cfg = base(EngineKind::vllm, sys, 4);
  cfg.workload.qps = 0;
  EXPECT_THROW(simulate(m, sys, cfg), InputError);
  cfg.workload.qps = 1;
  cfg.engine.max_num_seqs = 100000;
  EXPECT_THROW(simulate(m, sys, cfg), InputError);
  cfg = base(EngineKind::vllm, sys, 4);
  cfg.replicas = 0;
  EXPECT_THROW(simulate(m, sys, cfg), InputError);
}

TEST(Simulator, RequestsThatCanNeverFitAreRejectedAndCounted) {
  // Llama-3.1-8B has 131072 positions: a 200000-token prompt is rejected, the others served.
  const model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  const hw::System sys = h100();
  ServeConfig cfg = base(EngineKind::vllm, sys);
  cfg.workload.arrival = Arrival::trace;
  cfg.workload.trace = {{0, 100, 10, -1, 0}, {0.1, 200000, 10, -1, 0}, {0.2, 100, 10, -1, 0}};
  cfg.workload.requests = 3;
  const ServingResult r = simulate(m, sys, cfg);
  EXPECT_EQ(r.rejected, 1);
  EXPECT_EQ(r.measured_requests, 2);
  EXPECT_EQ(r.unfinished, 0);
  // TensorRT-LLM does not chunk prompts: one longer than its 8192-token step never runs.
  cfg.engine = engine_preset(EngineKind::trtllm, sys.chip);
  cfg.workload.trace = {{0, 9000, 10, -1, 0}, {0.1, 8192, 10, -1, 0}};
  cfg.workload.requests = 2;
  const ServingResult t = simulate(m, sys, cfg);
  EXPECT_EQ(t.rejected, 1);
  EXPECT_EQ(t.measured_requests, 1);
}

}  // namespace
}  // namespace ridgeline::serving
