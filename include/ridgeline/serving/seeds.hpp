#pragma once
/// Several seeds of one serving run (docs/serving.md#seeds): the same deployment and load with
/// the workload drawn from seeds S, S + 1, ..., S + N - 1; the spread of every percentile over
/// them, and the run a fleet is sized on: the worst seed, or the q-quantile of the seeds
/// ordered by how far each is from its targets.
#include <cstdint>
#include <functional>
#include <vector>

#include "ridgeline/serving/simulator.hpp"

namespace ridgeline::serving {

/// How many seeds, and which of them sizes a fleet.
struct SeedsConfig {
  int count = 1;          ///< runs, seeds S .. S + count - 1 (S: workload.seed); at most kMaxSeeds
  double quantile = 1;    ///< the run at this quantile of the seeds ordered by badness (1: the worst)
};
inline constexpr int kMaxSeeds = 64;

/// A statistic over the seeds: its least, median (numpy's: the middle two averaged) and largest.
struct SeedSpread {
  double min = 0, median = 0, max = 0;
};

/// The runs of every seed and the one chosen.
struct SeedsResult {
  std::vector<ServingResult> runs;  ///< one per seed, in seed order
  std::size_t chosen = 0;           ///< the run sized on (SeedsConfig::quantile of badness)
  std::vector<double> badness;      ///< each run's (seed_badness)
};

/// How far a run is from meeting `slo`: the largest of each target's statistic over its target
/// (a run meeting every target is at most 1); +infinity for a run a fleet cannot be sized on
/// (not sustainable, requests rejected or unfinished, stopped once a target was missed, a
/// window that did not reach steady state); without targets, its E2E p99 (a request's whole time).
double seed_badness(const Slo& slo, const ServingResult& r);

/// The index of the run at quantile q of `badness` ascending: rank ceil(q N) (1-based; ties
/// to the earlier seed), so q = 1 is the worst and q = 0.5 of 5 seeds the third.
std::size_t seed_rank(const std::vector<double>& badness, double q);

/// `run(cfg)` for each seed (cfg.workload.seed + i; cfg.drawn kept only for the first, whose
/// requests they are), and the run chosen.
SeedsResult run_seeds(const ServeConfig& cfg, const SeedsConfig& seeds, const std::function<ServingResult(const ServeConfig&)>& run);

/// The spread of one statistic over the runs, `get` reading it from each.
SeedSpread spread(const std::vector<ServingResult>& runs, const std::function<double(const ServingResult&)>& get);

}  // namespace ridgeline::serving
