// Speed of the serving path: one engine step priced by the step model.
#include <benchmark/benchmark.h>

#include <memory>

#include "allocations.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "ridgeline/io/model_file.hpp"
#include "ridgeline/planning/fleet.hpp"
#include "ridgeline/serving/simulator.hpp"
#include "ridgeline/serving/step_model.hpp"

namespace {

using namespace ridgeline;

using bench::h100;

// The step model of Llama 3.1 70B at TP 4 on H100 with `sms` multiprocessors (its GEMMs
// tiled over them, docs/cost-model.md#gemm-shape; the catalog's 132; 0: untiled).
std::unique_ptr<serving::StepModel> step_70b(int sms = 132) {
  model::ForwardConfig f;
  f.tp = 4;
  auto step = std::make_unique<serving::StepModel>();
  static const model::ModelConfig m = io::bundled_model("llama-3.1-70b");
  hw::System sys = h100();
  sys.chip.sms = sms;
  step->prepare(m, sys, f);
  return step;
}

// A step of 128 decode tokens at contexts 1000..2270 and one 512-token prefill chunk after
// 1024 cached, split attention kernels, piecewise graphs; Arg: multiprocessors.
void BM_StepTime70B(benchmark::State& state) {
  const auto step = step_70b(static_cast<int>(state.range(0)));
  model::StepMix mix;
  for (int i = 0; i < 128; ++i) mix.add_decode(1000 + 10 * i, 0);
  mix.add_prefill(512, 1536, 0);
  const long before = bench::allocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(&mix);
    double t = step->time(mix, serving::GraphMode::piecewise);
    benchmark::DoNotOptimize(t);
  }
  state.counters["allocs_per_iter"] =
      benchmark::Counter(static_cast<double>(bench::allocations() - before), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_StepTime70B)->Arg(0)->Arg(132);

// Preparing the step model of that plan (two step graphs, lines and envelopes).
void BM_StepPrepare70B(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(step_70b(static_cast<int>(state.range(0))).get());
}
BENCHMARK(BM_StepPrepare70B)->Arg(0)->Arg(132)->Unit(benchmark::kMicrosecond);

// A million requests of Llama 3.1 70B at TP 4 on H100 through vLLM's scheduler: Poisson
// arrivals at 8 requests/s (the largest sustainable rate is about 11), prompts and outputs
// lognormal around 1000 and 250 tokens. Counter: simulated requests per second of wall time.
// `spec_tokens`: the draft tokens a step its graphs are settled for (vLLM rounds its sizes to 1 + k).
serving::ServeConfig serve_70b(const hw::System& sys, std::int64_t requests, int spec_tokens = 0) {
  serving::ServeConfig cfg;
  cfg.forward.tp = 4;
  cfg.engine = serving::engine_preset(serving::EngineKind::vllm, sys.chip, 4);
  serving::settle_graphs(cfg.engine, spec_tokens);  // the largest graph and the list serve pads a step to
  cfg.workload.qps = 8;
  cfg.workload.requests = requests;
  cfg.workload.prompt = serving::parse_length("lognormal:1000,0.6", "--prompt");
  cfg.workload.gen = serving::parse_length("lognormal:250,0.6", "--gen");
  cfg.find_max_rate = false;
  return cfg;
}

void BM_Serve70B(benchmark::State& state) {
  const model::ModelConfig m = io::bundled_model("llama-3.1-70b");
  const hw::System sys = h100();
  const serving::ServeConfig cfg = serve_70b(sys, state.range(0));
  double requests = 0, steps = 0;
  const long before = bench::allocations();
  for (auto _ : state) {
    const serving::ServingResult r = serving::simulate(m, sys, cfg);
    requests += static_cast<double>(r.simulated_requests);
    steps += r.steps;
    benchmark::DoNotOptimize(r.ttft.p99);
  }
  state.counters["requests_per_s"] = benchmark::Counter(requests, benchmark::Counter::kIsRate);
  state.counters["steps_per_s"] = benchmark::Counter(steps, benchmark::Counter::kIsRate);
  state.counters["allocs_per_request"] = static_cast<double>(bench::allocations() - before) / requests;
}
BENCHMARK(BM_Serve70B)->Arg(10000)->Arg(1000000)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same load with speculative decoding (Llama 3.1 8B drafting 4 tokens, acceptance 0.8,
// 0.7, 0.6, 0.5: three step-model prices a step instead of one) when state.range(1) is 1,
// or disaggregated over 2 prefill and 2 decode instances (KV transfers, hand-overs) when 2.
void BM_Serve70BVariants(benchmark::State& state) {
  const model::ModelConfig m = io::bundled_model("llama-3.1-70b");
  static const model::ModelConfig draft = io::bundled_model("llama-3.1-8b");
  const hw::System sys = h100();
  serving::ServeConfig cfg = serve_70b(sys, state.range(0), state.range(1) == 1 ? 4 : 0);
  if (state.range(1) == 1) {
    cfg.spec.k = 4;
    cfg.spec.accept = {0.8, 0.7, 0.6, 0.5};
    cfg.spec.draft = &draft;
  } else {
    cfg.disagg.prefill = cfg.disagg.decode = 2;
    cfg.workload.qps = 16;
  }
  double requests = 0;
  const long before = bench::allocations();
  for (auto _ : state) {
    const serving::ServingResult r = serving::simulate(m, sys, cfg);
    requests += static_cast<double>(r.simulated_requests);
    benchmark::DoNotOptimize(r.ttft.p99);
  }
  state.counters["requests_per_s"] = benchmark::Counter(requests, benchmark::Counter::kIsRate);
  state.counters["allocs_per_request"] = static_cast<double>(bench::allocations() - before) / requests;
}
BENCHMARK(BM_Serve70BVariants)->Args({100000, 1})->Args({100000, 2})->Unit(benchmark::kMillisecond)->UseRealTime();

// The capacity planner over a space of Llama 3.1 70B deployments: five chips (A100 80GB,
// H100, H200, B200, MI300X), TP 1 to 8, bf16 or fp8 weights and KV cache, vLLM, SGLang and
// TensorRT-LLM, the engine's sequence limit and those from 512 down to 16 below it: 1648
// deployments, 10^4 requests each (Poisson at 20 req/s, lognormal 1000 / 250 tokens),
// P99 TTFT 1 s and TPOT 50 ms, each feasible one's largest rate too. Counters: deployments
// per second (those rejected before simulating included), deployments simulated, runs and
// simulated requests per second.
void BM_SearchServe70B(benchmark::State& state) {
  const model::ModelConfig m = io::bundled_model("llama-3.1-70b");
  planning::FleetSpace s;
  for (const char* name : {"a100-80gb", "h100-sxm", "h200", "b200", "mi300x"}) {
    planning::ChipChoice c;
    c.sys.chip = io::catalog_chip(name);
    c.sys.chips_per_node = c.sys.chip.chips_per_node;
    c.arg = name;
    s.chips.push_back(std::move(c));
  }
  s.tp = {1, 2, 4, 8};
  s.weight_dtypes = {DType::bf16, DType::fp8_e4m3};
  s.kv_dtypes = {DType::bf16, DType::fp8_e4m3};
  s.engines = {serving::EngineKind::vllm, serving::EngineKind::sglang, serving::EngineKind::trtllm};
  s.max_rate = state.range(1) != 0;
  serving::WorkloadSpec& w = s.base.workload;
  w.qps = 20;
  w.requests = state.range(0);
  w.prompt = serving::parse_length("lognormal:1000,0.6", "--prompt");
  w.gen = serving::parse_length("lognormal:250,0.6", "--gen");
  s.base.slo.set(serving::SloMetric::ttft, 1);
  s.base.slo.set(serving::SloMetric::tpot, 0.05);
  analysis::SearchControl control;
  control.threads = 2;
  double evaluated = 0, simulated = 0, runs = 0, requests = 0;
  for (auto _ : state) {
    const planning::FleetSearchResult r = planning::search_fleet(m, s, control);
    evaluated += static_cast<double>(r.evaluated);
    for (int i = 0; i < static_cast<int>(planning::Reject::count); ++i) {
      const auto why = static_cast<planning::Reject>(i);
      if (why == planning::Reject::fleet_size || why == planning::Reject::too_long) simulated += static_cast<double>(r.rejected[static_cast<std::size_t>(i)]);
    }
    simulated += static_cast<double>(r.feasible_count);
    runs += static_cast<double>(r.simulations);
    requests += r.simulated_requests;
    benchmark::DoNotOptimize(r.best);
  }
  state.counters["deployments_per_s"] = benchmark::Counter(evaluated, benchmark::Counter::kIsRate);
  state.counters["simulated_deployments"] = benchmark::Counter(simulated, benchmark::Counter::kAvgIterations);
  state.counters["runs"] = benchmark::Counter(runs, benchmark::Counter::kAvgIterations);
  state.counters["requests_per_s"] = benchmark::Counter(requests, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SearchServe70B)->Args({10000, 0})->Args({10000, 1})->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

}  // namespace
