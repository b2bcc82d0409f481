#pragma once
/// Back-ends for `train`: JSON and a terminal summary.
#include <nlohmann/json.hpp>
#include <string>

#include "ridgeline/analysis/recompute.hpp"
#include "ridgeline/analysis/run_totals.hpp"
#include "ridgeline/analysis/training.hpp"

namespace ridgeline::report {


/// A whole run (train --tokens / --days): `goal` as asked, `r` as computed, the price's source.
struct RunReport {
  analysis::RunGoal goal;
  analysis::RunTotals totals;
  std::string price_source;  ///< "--price", "price_per_hour" (the chip file's); "" without a price
};
/// JSON `run`: tokens, steps, seconds, days, gpu_hours, within_days (with both goals), and
/// with a price usd_per_gpu_hour, price_source, usd_per_hour, usd, usd_per_million_tokens.
nlohmann::json run_json(const RunReport& run);
/// Two lines from "run": the tokens, steps and days on `gpus`, the GPU-hours and the cost.
std::string run_text(const RunReport& run, double gpus);

/// `train`'s output; `run` adds the whole run (JSON `run`, a text paragraph after the MFU).
nlohmann::json training_json(const model::ModelConfig& m, const hw::System& sys, const analysis::TrainConfig& cfg,
                             const analysis::TrainResult& r, const RunReport* run = nullptr);
std::string training_text(const model::ModelConfig& m, const hw::System& sys, const analysis::TrainConfig& cfg,
                          const analysis::TrainResult& r, const RunReport* run = nullptr);

nlohmann::json recompute_json(const analysis::RecomputeResult& r);
std::string recompute_text(const model::ModelConfig& m, const analysis::RecomputeResult& r);

}  // namespace ridgeline::report
