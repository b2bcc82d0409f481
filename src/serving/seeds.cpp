// Several seeds of one serving run: each seed's run, the spread of a statistic over them, the
// run a fleet is sized on (docs/serving.md#seeds).
#include "ridgeline/serving/seeds.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace ridgeline::serving {

double seed_badness(const Slo& slo, const ServingResult& r) {
  const bool usable = !r.stopped_slo_missed && r.sustainable && r.rejected == 0 && r.unfinished == 0 && !r.horizon_reached && r.measured_requests > 0 &&
                      (!r.steady_state.window || r.steady_state.reached);
  if (!usable) return std::numeric_limits<double>::infinity();
  if (!slo.any()) return r.e2e.p99;
  double worst = 0;
  for (const SloTarget& g : slo.targets) worst = std::max(worst, statistic(summary_of(r, g.metric), g.q) / g.limit_s);
  return worst;
}

std::size_t seed_rank(const std::vector<double>& badness, double q) {
  if (badness.empty()) return 0;
  std::vector<std::size_t> order(badness.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return badness[a] < badness[b]; });
  const double n = static_cast<double>(badness.size());
  const auto rank = static_cast<std::size_t>(std::clamp(std::ceil(q * n - 1e-9), 1.0, n));
  return order[rank - 1];
}

SeedsResult run_seeds(const ServeConfig& cfg, const SeedsConfig& seeds, const std::function<ServingResult(const ServeConfig&)>& run) {
  SeedsResult out;
  ServeConfig c = cfg;
  for (int i = 0; i < std::max(1, seeds.count); ++i) {
    c.workload.seed = cfg.workload.seed + static_cast<std::uint64_t>(i);
    c.drawn = i == 0 ? cfg.drawn : nullptr;  // the requests drawn already are the first seed's
    out.runs.push_back(run(c));
    out.badness.push_back(seed_badness(cfg.slo, out.runs.back()));
  }
  out.chosen = seed_rank(out.badness, seeds.quantile);
  return out;
}

SeedSpread spread(const std::vector<ServingResult>& runs, const std::function<double(const ServingResult&)>& get) {
  std::vector<double> v;
  v.reserve(runs.size());
  for (const ServingResult& r : runs) v.push_back(get(r));
  std::sort(v.begin(), v.end());
  SeedSpread s;
  if (v.empty()) return s;
  const std::size_t n = v.size();
  s.min = v.front(), s.max = v.back();
  s.median = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return s;
}

}  // namespace ridgeline::serving
