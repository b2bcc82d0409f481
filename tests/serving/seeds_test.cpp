// Several seeds of one run: the run chosen by its distance to the targets, the spread of a
// statistic, each seed's workload (values by hand).
#include "ridgeline/serving/seeds.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "ridgeline/io/model_file.hpp"
#include "toy_chip.hpp"

namespace ridgeline::serving {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Seeds, TheRunAtAQuantileOfTheBadnessAscending) {
  // Badness 3, 1, inf, 2, 5 (seeds 0..4) ascending: 1 (seed 1), 2 (3), 3 (0), 5 (4), inf (2).
  // Rank ceil(q x 5): q = 1 the 5th (seed 2), 0.6 the 3rd (seed 0), 0.5 ceil(2.5) = 3 (seed 0),
  // 0.2 the 1st (seed 1), 0.01 ceil(0.05) = 1 (seed 1). Ties keep seed order.
  const std::vector<double> b{3, 1, kInf, 2, 5};
  EXPECT_EQ(seed_rank(b, 1), 2u);
  EXPECT_EQ(seed_rank(b, 0.6), 0u);
  EXPECT_EQ(seed_rank(b, 0.5), 0u);
  EXPECT_EQ(seed_rank(b, 0.2), 1u);
  EXPECT_EQ(seed_rank(b, 0.01), 1u);
  EXPECT_EQ(seed_rank({1, 1}, 0.5), 0u);
  EXPECT_EQ(seed_rank({1, 1}, 1), 1u);
}

TEST(Seeds, BadnessIsTheLargestStatisticOverItsTarget) {
  // TTFT p99 0.5 s against 1 s: 0.5; TPOT p99 60 ms against 50 ms: 1.2; E2E mean 8 s against
  // 10 s: 0.8. The run is 1.2 from its targets. A run a fleet cannot be sized on is infinitely
  // far; without targets, its E2E p99 (20 s).
  ServingResult r;
  r.measured_requests = 10;
  r.ttft.p99 = 0.5, r.tpot.p99 = 0.06, r.e2e.mean = 8, r.e2e.p99 = 20;
  Slo slo;
  slo.set(SloMetric::ttft, 1).set(SloMetric::tpot, 0.05).set(SloMetric::e2e, 10, -1);
  EXPECT_DOUBLE_EQ(seed_badness(slo, r), 1.2);
  EXPECT_DOUBLE_EQ(seed_badness(Slo{}, r), 20);
  ServingResult bad = r;
  bad.sustainable = false;
  EXPECT_EQ(seed_badness(slo, bad), kInf);
  bad = r, bad.stopped_slo_missed = true;
  EXPECT_EQ(seed_badness(slo, bad), kInf);
  bad = r, bad.steady_state.window = true, bad.steady_state.reached = false;
  EXPECT_EQ(seed_badness(slo, bad), kInf);
}

TEST(Seeds, SpreadIsTheLeastTheMedianAndTheLargest) {
  // 3, 1, 2: 1 / 2 / 3; 4, 1, 3, 2: the middle two averaged, 2.5.
  std::vector<ServingResult> runs(3);
  runs[0].tpot.p99 = 3, runs[1].tpot.p99 = 1, runs[2].tpot.p99 = 2;
  auto tpot = [](const ServingResult& r) { return r.tpot.p99; };
  SeedSpread s = spread(runs, tpot);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.median, 2);
  EXPECT_EQ(s.max, 3);
  runs.emplace_back().tpot.p99 = 4;
  EXPECT_EQ(spread(runs, tpot).median, 2.5);
}

TEST(Seeds, EachRunDrawsItsOwnSeedAndOnlyTheFirstReadsTheRequestsDrawn) {
  // Seeds 7, 8, 9; the requests drawn already (of seed 7) go to the first run only.
  ServeConfig cfg;
  cfg.workload.seed = 7;
  const std::vector<Request> drawn(3);
  cfg.drawn = &drawn;
  std::vector<std::uint64_t> seen;
  std::vector<const std::vector<Request>*> given;
  const SeedsResult r = run_seeds(cfg, {3, 1}, [&](const ServeConfig& c) {
    seen.push_back(c.workload.seed);
    given.push_back(c.drawn);
    ServingResult out;
    out.measured_requests = 1;
    out.e2e.p99 = c.workload.seed == 8 ? 30 : 10;  // seed 8 the slowest
    return out;
  });
  EXPECT_EQ(seen, (std::vector<std::uint64_t>{7, 8, 9}));
  EXPECT_EQ(given, (std::vector<const std::vector<Request>*>{&drawn, nullptr, nullptr}));
  EXPECT_EQ(r.chosen, 1u);  // no targets: the worst E2E p99
}

TEST(Seeds, OneClientOfFixedLengthsIsTheSameRunOnEverySeed) {
  // A closed loop of one client with fixed lengths draws nothing the seed changes: three seeds
  // give the same percentiles, a spread of zero, and equal badness: ascending in seed order
  // (ties keep it), the worst, rank 3 of 3, is the last.
  const model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  const hw::System sys = testing::catalog_system("h100-sxm");
  ServeConfig cfg;
  cfg.engine = engine_preset(EngineKind::vllm, sys.chip, 1);
  cfg.workload.arrival = Arrival::closed;
  cfg.workload.requests = 5;
  cfg.workload.prompt.a = 512, cfg.workload.gen.a = 64;
  const SeedsResult r = run_seeds(cfg, {3, 1}, [&](const ServeConfig& c) { return simulate(m, sys, c); });
  ASSERT_EQ(r.runs.size(), 3u);
  const SeedSpread s = spread(r.runs, [](const ServingResult& x) { return x.ttft.p99; });
  EXPECT_GT(s.min, 0);
  EXPECT_EQ(s.min, s.max);
  EXPECT_EQ(r.badness[0], r.badness[2]);
  EXPECT_EQ(r.chosen, 2u);
}

}  // namespace
}  // namespace ridgeline::serving
