// Speed of the serving path: one engine step priced by the step model.
#include <benchmark/benchmark.h>

#include <memory>

#include "allocations.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "ridgeline/io/model_file.hpp"
#include "ridgeline/serving/simulator.hpp"
#include "ridgeline/serving/step_model.hpp"

namespace {

using namespace ridgeline;

using bench::h100;

// The step model of Llama 3.1 70B at TP 4 on H100.
std::unique_ptr<serving::StepModel> step_70b() {
  model::ForwardConfig f;
  f.tp = 4;
  auto step = std::make_unique<serving::StepModel>();
  static const model::ModelConfig m = io::bundled_model("llama-3.1-70b");
  step->prepare(m, h100(), f);
  return step;
}

// A step of 128 decode tokens at contexts 1000..2270 and one 512-token prefill chunk after
// 1024 cached, split attention kernels, piecewise graphs.
void BM_StepTime70B(benchmark::State& state) {
  const auto step = step_70b();
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
BENCHMARK(BM_StepTime70B);

// Preparing the step model of that plan (two step graphs, lines and envelopes).
void BM_StepPrepare70B(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(step_70b().get());
}
BENCHMARK(BM_StepPrepare70B)->Unit(benchmark::kMicrosecond);

// A million requests of Llama 3.1 70B at TP 4 on H100 through vLLM's scheduler: Poisson
// arrivals at 8 requests/s (the largest sustainable rate is about 11), prompts and outputs
// lognormal around 1000 and 250 tokens. Counter: simulated requests per second of wall time.
void BM_Serve70B(benchmark::State& state) {
  const model::ModelConfig m = io::bundled_model("llama-3.1-70b");
  const hw::System sys = h100();
  serving::ServeConfig cfg;
  cfg.forward.tp = 4;
  cfg.engine = serving::engine_preset(serving::EngineKind::vllm, sys.chip, 4);
  cfg.workload.qps = 8;
  cfg.workload.requests = state.range(0);
  cfg.workload.prompt = serving::parse_length("lognormal:1000,0.6", "--prompt");
  cfg.workload.gen = serving::parse_length("lognormal:250,0.6", "--gen");
  cfg.find_max_rate = false;
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

}  // namespace
