// `--seeds N` reported: which seed's run is shown, and the spread of every percentile.
#include "ridgeline/report/seeds.hpp"

#include <fmt/format.h>

#include <cmath>

#include "ridgeline/core/units.hpp"
#include "spellings.hpp"

namespace ridgeline::report {

namespace {

using nlohmann::json;
using serving::ServingResult;
using serving::Summary;

// The latencies and the statistics of each, as their JSON keys name them.
struct Latency {
  const char* key;
  const char* name;
  Summary ServingResult::*member;
};
constexpr Latency kLatencies[] = {{"ttft_s", "TTFT", &ServingResult::ttft},
                                  {"tpot_s", "TPOT", &ServingResult::tpot},
                                  {"itl_s", "ITL", &ServingResult::itl},
                                  {"e2e_s", "E2E", &ServingResult::e2e},
                                  {"queue_s", "queue", &ServingResult::queue}};
struct Stat {
  const char* key;
  double Summary::*member;
};
constexpr Stat kStats[] = {{"mean", &Summary::mean}, {"p50", &Summary::p50}, {"p90", &Summary::p90}, {"p95", &Summary::p95},
                           {"p99", &Summary::p99}};

json spread_json(const serving::SeedSpread& s) { return {{"min", s.min}, {"median", s.median}, {"max", s.max}}; }

std::string which(const serving::SeedsConfig& seeds, std::size_t n) {
  if (seeds.quantile >= 1) return "the worst";
  return fmt::format("quantile {:g}, the {} of {}", seeds.quantile,
                     static_cast<std::size_t>(std::fmax(1, std::ceil(seeds.quantile * static_cast<double>(n) - 1e-9))), n);
}

}  // namespace

json seeds_json(const serving::ServeConfig& cfg, const serving::SeedsConfig& seeds, const serving::SeedsResult& runs) {
  json spread;
  for (const Latency& l : kLatencies) {
    json& m = spread[l.key];
    for (const Stat& s : kStats) {
      m[s.key] = spread_json(serving::spread(runs.runs, [&](const ServingResult& r) { return (r.*l.member).*s.member; }));
    }
  }
  spread["requests_per_s"] = spread_json(serving::spread(runs.runs, [](const ServingResult& r) { return r.requests_per_s; }));
  spread["output_tokens_per_s"] = spread_json(serving::spread(runs.runs, [](const ServingResult& r) { return r.output_tokens_per_s; }));
  json badness = json::array();
  for (const double b : runs.badness) badness.push_back(std::isfinite(b) ? json(b) : json(nullptr));
  return {{"count", runs.runs.size()},
          {"first", cfg.workload.seed},
          {"quantile", seeds.quantile},
          {"chosen_seed", cfg.workload.seed + runs.chosen},
          {"badness", badness},
          {"spread", spread}};
}

std::string seeds_text(const serving::ServeConfig& cfg, const serving::SeedsConfig& seeds, const serving::SeedsResult& runs) {
  const std::size_t n = runs.runs.size();
  std::string s = fmt::format("\nseeds {} to {}: shown above is seed {}, {} by distance to {}; over the {} seeds, min / median / max:\n",
                              cfg.workload.seed, cfg.workload.seed + n - 1, cfg.workload.seed + runs.chosen, which(seeds, n),
                              cfg.slo.any() ? "the targets" : "its E2E p99", n);
  for (const Latency& l : kLatencies) {
    s += fmt::format("  {:<6}", l.name);
    for (const Stat& st : kStats) {
      if (std::string(st.key) == "p90" || std::string(st.key) == "p95") continue;
      const serving::SeedSpread v = serving::spread(runs.runs, [&](const ServingResult& r) { return (r.*l.member).*st.member; });
      s += fmt::format("  {} {} / {} / {}", st.key, t(v.min), t(v.median), t(v.max));
    }
    s += "\n";
  }
  const serving::SeedSpread out = serving::spread(runs.runs, [](const ServingResult& r) { return r.output_tokens_per_s; });
  s += fmt::format("  output tok/s  {:.4g} / {:.4g} / {:.4g}\n", out.min, out.median, out.max);
  return s;
}

}  // namespace ridgeline::report
