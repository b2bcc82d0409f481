// Speed of the evaluation path: one op's cost and estimate, one threshold solve.
// Allocations are counted with a replaced global operator new and reported as a counter.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <cstdio>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "ridgeline/analysis/inference.hpp"
#include "ridgeline/analysis/search.hpp"
#include "ridgeline/measure/host.hpp"
#include "ridgeline/measure/kernels.hpp"
#include "ridgeline/analysis/single_op.hpp"
#include "ridgeline/analysis/training.hpp"
#include "ridgeline/io/model_file.hpp"
#include "ridgeline/io/profile_file.hpp"
#include "ridgeline/analysis/threshold.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "ridgeline/model/routing.hpp"
#include "ridgeline/ops/estimate.hpp"

#include "allocations.hpp"

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

long ridgeline::bench::allocations() noexcept { return g_allocations.load(); }

void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

using namespace ridgeline;

using bench::h100;

// Times cost + estimate of `op` on an H100 and reports allocations per evaluation.
void run_estimate(benchmark::State& state, const analysis::OpConfig& op) {
  const hw::System sys = h100();
  long before = g_allocations.load();
  for (auto _ : state) {
    benchmark::DoNotOptimize(&op);
    ops::Estimate e = ops::estimate(analysis::op_cost(op, sys), sys.chip);
    benchmark::DoNotOptimize(e);
  }
  state.counters["allocs_per_iter"] =
      benchmark::Counter(static_cast<double>(g_allocations.load() - before), benchmark::Counter::kAvgIterations);
}

void BM_MatmulEstimate(benchmark::State& state) {
  run_estimate(state, {.kind = analysis::OpKind::matmul, .m = 256, .k = 4096, .n = 4096});
}
BENCHMARK(BM_MatmulEstimate);

void BM_AttentionEstimate(benchmark::State& state) {
  analysis::OpConfig op{.kind = analysis::OpKind::attention, .batch = 8, .heads = 64, .causal = true};
  op.q_len = op.kv_len = 4096;
  op.kv_heads = 8;
  run_estimate(state, op);
}
BENCHMARK(BM_AttentionEstimate);

void BM_ThresholdSolve(benchmark::State& state) {
  const hw::System sys = h100();
  analysis::OpConfig op{.kind = analysis::OpKind::matmul, .m = 1, .k = 4096, .n = 4096};
  for (auto _ : state) {
    auto r = analysis::solve_threshold(op, sys, analysis::SolveVar::m);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_ThresholdSolve);

// Llama-3.1-70B on 4 H100s: prefill at 2048 tokens and every decode step of 256 (summed exactly).
analysis::InferenceConfig infer70b() {
  analysis::InferenceConfig cfg;
  cfg.forward.tp = 4;
  cfg.batch = 16;
  cfg.prompt = 2048;
  cfg.gen = 256;
  return cfg;
}

// One full inference evaluation (the allocation-free core): phases, memory and fit.
void BM_Infer70B(benchmark::State& state) {
  const hw::System sys = h100();
  const model::ModelConfig m = io::bundled_model("llama-3.1-70b");
  const analysis::InferenceConfig cfg = infer70b();
  auto r = std::make_unique<analysis::InferenceResult>();
  long before = g_allocations.load();
  for (auto _ : state) {
    analysis::infer_core(m, sys, cfg, *r);
    benchmark::DoNotOptimize(r->e2e_s);
  }
  state.counters["allocs_per_iter"] =
      benchmark::Counter(static_cast<double>(g_allocations.load() - before), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_Infer70B);

// Building one decode graph of Llama-3.1-70B (no estimates).
void BM_BuildDecodeGraph70B(benchmark::State& state) {
  const hw::System sys = h100();
  const model::ModelConfig m = io::bundled_model("llama-3.1-70b");
  model::ForwardConfig f;
  f.tp = 4;
  auto g = std::make_unique<model::Graph>();
  for (auto _ : state) {
    model::build_forward(m, f, sys, {16, 1, 2048}, *g);
    benchmark::DoNotOptimize(g->op_count);
  }
}
BENCHMARK(BM_BuildDecodeGraph70B);

// The expert-parallel imbalance of one deployment (model::routing_imbalance), its EP size changing
// every call so no cached quadrature is reused: arg 0 a balanced router (Mixtral), 1 DeepSeek-V3's
// measured skew (its σ cached per model, F∞ one quadrature per deployment); then F at a step.
void BM_RoutingImbalance(benchmark::State& state) {
  const model::ModelConfig m = io::bundled_model(state.range(0) == 0 ? "mixtral-8x7b" : "deepseek-v3");
  model::ForwardConfig f;
  f.tp = 1;
  f.expert_imbalance = 0;
  const long before = g_allocations.load();
  int i = 0;
  for (auto _ : state) {
    f.ep = (++i & 1) ? 4 : 8;
    const model::RoutingImbalance r = model::routing_imbalance(m, f);
    benchmark::DoNotOptimize(r.at(64));
  }
  state.counters["allocs_per_iter"] =
      benchmark::Counter(static_cast<double>(g_allocations.load() - before), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_RoutingImbalance)->Arg(0)->Arg(1);

void BM_RoutingAtStep(benchmark::State& state) {
  const model::ModelConfig m = io::bundled_model("deepseek-v3");
  model::ForwardConfig f;
  f.tp = 1;
  f.ep = 32;
  f.expert_imbalance = 0;
  const model::RoutingImbalance r = model::routing_imbalance(m, f);
  double T = 1;
  for (auto _ : state) {
    T = T < 4096 ? T + 1 : 1;
    benchmark::DoNotOptimize(r.at(T));
  }
}
BENCHMARK(BM_RoutingAtStep);

// Pricing one collective on the topology with --algo auto: a TP-4 all-reduce of a decode
// step's 16 KB inside an H100 node (ring against NVLS), and a data-parallel all-reduce of
// 1 GB over 8 nodes (ring against tree); the wiring gathered once, as graph builds do.
void BM_PriceCollective(benchmark::State& state) {
  hw::System sys = h100();
  sys.chips = 64;
  const comm::Wiring w = comm::wiring(sys);
  const comm::Placement tp = comm::place(w, 4), dp = comm::place(w, 8, 8);
  const bool across = state.range(0) == 1;
  for (auto _ : state) {
    const comm::Priced p = comm::price(w, across ? dp : tp, comm::Collective::all_reduce, across ? 1e9 : 16384,
                                       DType::bf16, comm::Algo::automatic);
    benchmark::DoNotOptimize(p.time_s);
  }
}
BENCHMARK(BM_PriceCollective)->Arg(0)->Arg(1);

// One training-step evaluation of a 70B plan: 64 H100s, TP 8, PP 4, DP 2, interleaved,
// ZeRO-1, sequence parallelism, selective recomputation.
void BM_Train70B(benchmark::State& state) {
  const model::ModelConfig m = io::bundled_model("llama-3.1-70b");
  analysis::TrainConfig cfg;
  cfg.gpus = 64;
  cfg.tp = 8;
  cfg.pp = 4;
  cfg.vpp = 2;
  cfg.zero = 1;
  cfg.sequence_parallel = true;
  cfg.recompute = analysis::Recompute::selective;
  cfg.seq = 8192;
  cfg.global_batch = 64;
  const hw::System sys = analysis::training_system(h100(), cfg);
  auto r = std::make_unique<analysis::TrainResult>();
  long before = g_allocations.load();
  for (auto _ : state) {
    analysis::train_core(m, sys, cfg, *r);
    benchmark::DoNotOptimize(r->step_time_s);
  }
  state.counters["allocs_per_iter"] =
      benchmark::Counter(static_cast<double>(g_allocations.load() - before), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_Train70B);

// The recomputation planner's exact front for DeepSeek-V3 (MLA; 3 dense and 58 MoE layers,
// 13 and 18 saved tensors): every keep/recompute/offload choice, 3^31 of them, covered by the
// dynamic programme once per plan shape (train_shape). Arg: 0 keep/recompute, 1 with offload.
void BM_RecomputeFrontDeepSeekV3(benchmark::State& state) {
  const model::ModelConfig m = io::bundled_model("deepseek-v3");
  analysis::TrainConfig cfg;
  cfg.gpus = 256;
  cfg.tp = 8;
  cfg.ep = 4;
  cfg.seq = 4096;
  cfg.global_batch = 32;
  cfg.recompute = analysis::Recompute::automatic;
  cfg.offload = state.range(0) != 0;
  const hw::System sys = analysis::training_system(h100(), cfg);
  auto r = std::make_unique<analysis::TrainResult>();
  analysis::train(m, sys, cfg, *r);
  for (auto _ : state) {
    analysis::build_frontier(r->tensors, cfg.offload, r->frontier);
    benchmark::DoNotOptimize(r->frontier.count);
  }
  state.counters["front"] = r->frontier.count;
  state.counters["priced"] = static_cast<double>(r->frontier.priced);
}
BENCHMARK(BM_RecomputeFrontDeepSeekV3)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// The same with everything the CLI reports: parameter counts, critical batch, CUDA graphs.
void BM_Infer70BFull(benchmark::State& state) {
  const hw::System sys = h100();
  const model::ModelConfig m = io::bundled_model("llama-3.1-70b");
  const analysis::InferenceConfig cfg = infer70b();
  auto r = std::make_unique<analysis::InferenceResult>();
  for (auto _ : state) {
    analysis::infer(m, sys, cfg, *r);
    benchmark::DoNotOptimize(r->e2e_s);
  }
}
BENCHMARK(BM_Infer70BFull);

// Plan search (issue 8's target: >= 10 million plans/s on this 2-core machine). A 70B
// training search on 1024 H100 (every dimension free) and a serving search for the same
// model on up to 8 chips; plans/s counts every plan considered (feasible or rejected).
// Runs `search` per iteration; counts plans considered and plans timed, per second.
template <class Search>
void run_search(benchmark::State& state, Search search) {
  std::uint64_t plans = 0, timed = 0;
  std::size_t front = 0;
  for (auto _ : state) {
    auto r = search();
    plans += r.stats.evaluated;
    timed += r.stats.timed;
    front = r.pareto.size();
    benchmark::DoNotOptimize(r.best);
  }
  state.counters["pareto"] = static_cast<double>(front);
  state.counters["plans"] = benchmark::Counter(static_cast<double>(plans), benchmark::Counter::kAvgIterations);
  state.counters["plans_per_s"] = benchmark::Counter(static_cast<double>(plans), benchmark::Counter::kIsRate);
  state.counters["timed_per_s"] = benchmark::Counter(static_cast<double>(timed), benchmark::Counter::kIsRate);
}

void BM_SearchTrain70B(benchmark::State& state) {
  const model::ModelConfig m = io::bundled_model("llama-3.1-70b");
  analysis::TrainSearchSpace s;
  s.base.gpus = 1024;
  s.base.seq = 8192;
  s.base.global_batch = 1024;
  analysis::SearchControl c;
  c.threads = static_cast<int>(state.range(0));
  const hw::System sys = h100();
  run_search(state, [&] { return analysis::search_train(m, sys, s, c); });
}
BENCHMARK(BM_SearchTrain70B)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// Llama 3.1 405B on 16384 H100 at sequence 8192 and 16M tokens a step (Llama 3's scale), every
// dimension free.
void BM_SearchTrain405B(benchmark::State& state) {
  const model::ModelConfig m = io::bundled_model("llama-3.1-405b");
  analysis::TrainSearchSpace s;
  s.base.gpus = 16384;
  s.base.seq = 8192;
  s.base.global_batch = 2048;
  analysis::SearchControl c;
  c.threads = static_cast<int>(state.range(0));
  const hw::System sys = h100();
  run_search(state, [&] { return analysis::search_train(m, sys, s, c); });
}
BENCHMARK(BM_SearchTrain405B)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SearchInfer70B(benchmark::State& state) {
  const model::ModelConfig m = io::bundled_model("llama-3.1-70b");
  analysis::InferSearchSpace s;
  s.chips_max = 8;
  s.base.prompt = 1024;
  s.base.gen = 256;
  s.weight_dtypes = {DType::bf16, DType::fp8_e4m3};
  s.kv_dtypes = {DType::bf16, DType::fp8_e4m3};
  analysis::SearchControl c;
  c.threads = static_cast<int>(state.range(0));
  const hw::System sys = h100();
  run_search(state, [&] { return analysis::search_infer(m, sys, s, c); });
}
BENCHMARK(BM_SearchInfer70B)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// A serving search as wide as the flags allow for one model: up to 64 H100 (eight nodes,
// tensor parallelism across them), four weight and two KV dtypes, every batch that fits.
void BM_SearchInfer70BWide(benchmark::State& state) {
  const model::ModelConfig m = io::bundled_model("llama-3.1-70b");
  analysis::InferSearchSpace s;
  s.chips_max = 64;
  s.base.prompt = 1024;
  s.base.gen = 256;
  s.weight_dtypes = {DType::bf16, DType::fp8_e4m3, DType::int8, DType::int4};
  s.kv_dtypes = {DType::bf16, DType::fp8_e4m3};
  analysis::SearchControl c;
  c.threads = static_cast<int>(state.range(0));
  const hw::System sys = h100();
  run_search(state, [&] { return analysis::search_infer(m, sys, s, c); });
}
BENCHMARK(BM_SearchInfer70BWide)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// Streaming a PyTorch/Kineto trace (issue: >= 300 MB/s, memory that does not hold the file):
// a synthetic trace of `MB` megabytes written once to a temporary file, in pieces, with the
// events a real one has — CPU ops with their shapes, runtime calls, kernels with their
// launch arguments — read by the same function `ridgeline profile` uses.
std::string synthetic_trace(int megabytes) {
  const std::string path = fmt::format("/tmp/ridgeline_bench_trace_{}mb.json", megabytes);
  if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
    std::fseek(f, 0, SEEK_END);
    const long size = std::ftell(f);
    std::fclose(f);
    if (size >= static_cast<long>(megabytes) * 1000000) return path;
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  std::string chunk = R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85031714816}],
"traceEvents": [
)";
  const char* kernels[] = {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
                           "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)",
                           "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>, false, true, false, false, true, true, false>(Flash_fwd_params)"};
  const char* ops[] = {"aten::mm", "aten::add", "aten::_flash_attention_forward"};
  long long written = 0;
  double ts = 1e6;
  for (long long i = 0; written < static_cast<long long>(megabytes) * 1000000; ++i) {
    const int k = static_cast<int>(i % 3);
    chunk += fmt::format(
        R"({{"ph": "X", "cat": "cpu_op", "name": "{}", "pid": 4242, "tid": 4242, "ts": {:.3f}, "dur": 21.5, "args": {{"External id": {}, "Record function id": 0, "Input Dims": [[8, 4096, 4096], [4096, 4096]], "Input type": ["c10::BFloat16", "c10::BFloat16"], "Input Strides": [[16777216, 4096, 1], [1, 4096]], "Sequence number": {}, "Fwd thread id": 0}}}},
{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242, "ts": {:.3f}, "dur": 4.25, "args": {{"External id": {}, "cbid": 211, "correlation": {}}}}},
{{"ph": "X", "cat": "kernel", "name": "{}", "pid": 0, "tid": 7, "ts": {:.3f}, "dur": {:.3f}, "args": {{"External id": {}, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": {}, "registers per thread": 168, "shared memory": 213248, "blocks per SM": 0.9, "warps per SM": 3.6, "grid": [132, 1, 1], "block": [384, 1, 1], "est. achieved occupancy %": 6}}}},
)",
        ops[k], ts, i, i, ts + 5, i, i, kernels[k], ts + 10, 100.0 + k, i, i);
    ts += 150;
    if (chunk.size() > (1 << 20)) {
      written += static_cast<long long>(std::fwrite(chunk.data(), 1, chunk.size(), f));
      chunk.clear();
    }
  }
  chunk += R"({"ph": "i", "cat": "user", "name": "end", "ts": 0, "s": "g"}
], "traceName": "synthetic"}
)";
  std::fwrite(chunk.data(), 1, chunk.size(), f);
  std::fclose(f);
  return path;
}

long max_rss_kb() {
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

void BM_StreamTrace(benchmark::State& state) {
  const std::string path = synthetic_trace(static_cast<int>(state.range(0)));
  std::FILE* f = std::fopen(path.c_str(), "rb");
  std::fseek(f, 0, SEEK_END);
  const double bytes = static_cast<double>(std::ftell(f));
  std::fclose(f);
  const long before = max_rss_kb();
  double kernels = 0;
  for (auto _ : state) {
    auto p = io::read_torch_trace(path);
    kernels = 0;
    for (const auto& k : p.launches) kernels += k.count;  // one record per kernel name
    benchmark::DoNotOptimize(p.launches.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes * static_cast<double>(state.iterations())));
  state.counters["kernels"] = kernels;
  state.counters["trace_MB"] = bytes / 1e6;
  // Growth of the peak resident set while reading (the file text is never held).
  state.counters["rss_growth_MB"] = static_cast<double>(max_rss_kb() - before) / 1e3;
}
BENCHMARK(BM_StreamTrace)->Arg(100)->Arg(400)->Unit(benchmark::kMillisecond)->Iterations(2);

// The kernels `ridgeline validate` times, the same functions, one thread, at a working set
// given in KiB: bytes/s counts the op model's bytes (loads + stores, no write-allocate).
void BM_KernelTriad(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0)) * 1024 / 12;
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  for (auto _ : state) {
    measure::triad(a.data(), b.data(), c.data(), 1.5f, 0, n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * 12 * n));
}
BENCHMARK(BM_KernelTriad)->Arg(256)->Arg(65536);

void BM_KernelDot(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0)) * 1024 / 8;
  std::vector<float> x(n, 1.0f), y(n, 0.5f);
  for (auto _ : state) benchmark::DoNotOptimize(measure::dot(x.data(), y.data(), 0, n));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * 8 * n));
}
BENCHMARK(BM_KernelDot)->Arg(256)->Arg(65536);

void BM_KernelSwiglu(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0)) * 1024 / 12;
  std::vector<float> g(n, 0.5f), u(n, 1.0f), y(n);
  for (auto _ : state) {
    measure::swiglu(g.data(), u.data(), y.data(), 0, n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * 12 * n));
}
BENCHMARK(BM_KernelSwiglu)->Arg(256)->Arg(65536);

// The kernels `ridgeline measure` takes its ceilings from, the same code (peak_rate and
// stream_rate run measure_host's FMA and stream kernels): each iteration is one
// measurement, its result a counter.
void BM_MeasurePeak(benchmark::State& state) {
  static const measure::HostInfo host = measure::detect_host();
  const DType dtype = state.range(0) == 64 ? DType::fp64 : DType::fp32;
  double rate = 0;
  for (auto _ : state) rate = measure::peak_rate(host, dtype, 1, 0.05);
  state.counters["GFLOP/s"] = rate / 1e9;
  if (rate == 0) state.SkipWithError("no FMA kernel for this dtype on this CPU");
}
BENCHMARK(BM_MeasurePeak)->Arg(64)->Arg(32)->Iterations(3)->Unit(benchmark::kMillisecond);

void BM_MeasureTriad(benchmark::State& state) {
  static const measure::HostInfo host = measure::detect_host();
  measure::Sample bw;
  for (auto _ : state) bw = measure::stream_rate(host, measure::Stream::triad, static_cast<double>(state.range(0)) * 1024, 1, 3);
  state.counters["GB/s"] = bw.value / 1e9;
  state.counters["spread"] = bw.spread;
}
BENCHMARK(BM_MeasureTriad)->Arg(32)->Arg(65536)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
